"""Engine ``simgrid``: the same files on SimGrid's flow model (see docs/crossval.md).

The adapter lives in :mod:`federation.adapters.simgrid`; this module registers its engine like
every built-in component, so ``federation plugins`` lists it beside ``native`` and ``sst``.
"""

from __future__ import annotations

from federation import hookimpl
from federation.adapters.simgrid.engine import SimGrid


@hookimpl
def federation_register_engines(register) -> None:  # noqa: ANN001
    register(SimGrid)
