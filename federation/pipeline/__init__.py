"""One experiment point from file to result, a stage at a time.

``load`` (file -> resolved points) -> ``preflight`` (every check that needs no allocation, for
every point) -> ``build`` (network, link figures, route tables, routing program; the checks of
what it built) -> ``traffic`` (open-loop messages or rank programs: the engine's one
``NativeRun``) -> engine (:mod:`federation.engine`, or an adapter) -> ``summary`` (figures and
tables) -> outputs (:mod:`federation.results`).  ``run`` drives the stages over a sweep, serially
or on Dask (``distributed``).

May import: everything below it (:mod:`federation.engine`, :mod:`federation.plugin`,
:mod:`federation.network`, :mod:`federation.programs`, :mod:`federation.results`,
:mod:`federation.models`, :mod:`federation.errors`).  A stage never imports a later stage.
"""
