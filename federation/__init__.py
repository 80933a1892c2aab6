"""hpc-federation: typed machine files, plugins and a fast packet-level engine for HPC networks.

Public API::

    from federation import hookimpl, Params, load_experiment, run_experiment
"""

from __future__ import annotations

import pluggy

__version__ = "0.1.0"

#: Marker for hook implementations in plugins: ``@federation.hookimpl``.
hookimpl = pluggy.HookimplMarker("federation")

from federation.components import (  # noqa: E402
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
from federation.errors import FederationError  # noqa: E402
from federation.models.base import DocumentPath, Params  # noqa: E402
from federation.network import Network, NetworkBuilder  # noqa: E402

__all__ = [
    "DocumentPath",
    "Engine",
    "FederationError",
    "LinkDefaults",
    "Messages",
    "Network",
    "NetworkBuilder",
    "Params",
    "QosPolicy",
    "RouteTables",
    "Routing",
    "Topology",
    "Workload",
    "WorkloadContext",
    "__version__",
    "hookimpl",
    "load_experiment",
    "run_experiment",
]


def __getattr__(name: str):  # noqa: ANN202 - lazy imports keep `import federation` cheap
    if name == "load_experiment":
        from federation.loader import load_experiment

        return load_experiment
    if name == "run_experiment":
        from federation.runner import run_experiment

        return run_experiment
    raise AttributeError(name)
