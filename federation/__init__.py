"""hpc-federation: typed machine files, plugins and a fast packet-level engine for HPC networks.

Public API::

    from federation import hookimpl, Params, load_experiment, run_experiment
"""

from __future__ import annotations

import pluggy

from federation import _gc
from federation._version import __version__

#: Marker for hook implementations in plugins: ``@federation.hookimpl``.
hookimpl = pluggy.HookimplMarker("federation")

# the collector off while the package imports (federation._gc: start-up makes objects, not
# garbage)
with _gc.paused():
    from federation import _moved  # noqa: E402

    _moved.install()  # the import paths of release 0.1, for one release (see federation._moved)

    from federation.errors import FederationError  # noqa: E402
    from federation.models.base import DocumentPath, Params  # noqa: E402
    from federation.network import Network, NetworkBuilder  # noqa: E402
    from federation.plugin.components import (  # noqa: E402
        Engine,
        LinkDefaults,
        Messages,
        QosPolicy,
        RouteTables,
        Routing,
        Topology,
        Workload,
        WorkloadContext,
    )
    from federation.plugin.jobs import (  # noqa: E402
        InjectionContext,
        InjectionProcess,
        PatternContext,
        Placement,
        PlacementContext,
        TrafficPattern,
    )

__all__ = [
    "DocumentPath",
    "Engine",
    "FederationError",
    "InjectionContext",
    "InjectionProcess",
    "LinkDefaults",
    "Messages",
    "Network",
    "NetworkBuilder",
    "Params",
    "PatternContext",
    "Placement",
    "PlacementContext",
    "QosPolicy",
    "RouteTables",
    "Routing",
    "Topology",
    "TrafficPattern",
    "Workload",
    "WorkloadContext",
    "__version__",
    "hookimpl",
    "load_experiment",
    "resolve_nested",
    "run_experiment",
]


def __getattr__(name: str):  # noqa: ANN202 - lazy imports keep `import federation` cheap
    if name == "load_experiment":
        from federation.pipeline.load import load_experiment

        return load_experiment
    if name == "resolve_nested":
        from federation.plugin.registry import resolve_nested

        return resolve_nested
    if name == "run_experiment":
        from federation.pipeline.run import run_experiment

        return run_experiment
    raise AttributeError(name)
