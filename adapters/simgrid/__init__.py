"""SimGrid adapter: the ``simgrid`` engine (flow-level cross-validation of the native engine).

* :mod:`.locate` finds SimGrid's Python module (Debian's ``python3-simgrid`` or pip's) without
  putting a system ``dist-packages`` folder on the path;
* :mod:`.platform` turns a built machine and our route tables into a SimGrid platform (XML);
* :mod:`.worker` runs the messages as SimGrid actors, in a child process;
* :mod:`.engine` is the plugin (``engine: {kind: simgrid}``): checks, run, results mapping.

See ``docs/crossval.md`` for the model and how its figures differ from the native engine's.
"""
