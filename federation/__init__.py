"""hpc-federation: typed machine files, plugins and a fast packet-level engine for HPC networks.

Public API::

    from federation import hookimpl, Params, load_experiment, run_experiment
"""

from __future__ import annotations

import pluggy

from federation._version import __version__

#: Marker for hook implementations in plugins: ``@federation.hookimpl``.
hookimpl = pluggy.HookimplMarker("federation")

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
        from federation.pipeline.load import load_experiment

        return load_experiment
    if name == "run_experiment":
        from federation.pipeline.run import run_experiment

        return run_experiment
    raise AttributeError(name)
