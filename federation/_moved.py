"""Import paths of release 0.1 that moved, kept working for one release with a warning.

The package was reorganised by pipeline stage (``docs/architecture.md``).  A plugin written
against 0.1 may still say ``from federation.components import Routing`` or
``import federation.plugins.routing_valiant``: a finder on ``sys.meta_path`` maps each old
dotted name to the module that replaced it, emits one :class:`DeprecationWarning` naming the
new path, and returns *the same module object*, so classes, ``isinstance`` checks and
``mock.patch`` targets are identical under both names.  No file is kept at the old path, so the
tree shows only the new layout.

Remove this module (and its registration in ``federation/__init__.py``) in release 0.3.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from types import ModuleType

#: old dotted name -> new dotted name (release 0.1 -> 0.2)
MOVED: dict[str, str] = {
    "federation.units": "federation.models.units",
    "federation.limits": "federation.models.limits",
    "federation.models.results": "federation.results.model",
    "federation.spool": "federation.results.spool",
    "federation.outputs": "federation.results.outputs",
    "federation.routing_tables": "federation.network.routes",
    "federation.equal_cost": "federation.network.equal_cost",
    "federation.metrics": "federation.network.metrics",
    "federation.hookspecs": "federation.plugin.hookspecs",
    "federation.components": "federation.plugin.components",
    "federation.manager": "federation.plugin.registry",
    "federation.jsonschema": "federation.plugin.jsonschema",
    "federation.packet_stats": "federation.engine.packet_stats",
    "federation.engine.tables_check": "federation.pipeline.tables_check",
    "federation.loader": "federation.pipeline.load",
    "federation.checks": "federation.pipeline.bounds",
    "federation.prepare": "federation.pipeline.point",
    "federation.messages": "federation.pipeline.messages",
    "federation.summary": "federation.pipeline.summary",
    "federation.runner": "federation.pipeline.run",
    "federation.distributed": "federation.pipeline.distributed",
    "federation.plugins.topology_dragonfly": "federation.plugins.topologies.dragonfly",
    "federation.plugins.topology_aries": "federation.plugins.topologies.aries",
    "federation.plugins.topology_megafly": "federation.plugins.topologies.megafly",
    "federation.plugins.topology_circulant": "federation.plugins.topologies.circulant",
    "federation.plugins.topology_random_shortcut":
        "federation.plugins.topologies.random_shortcut",
    "federation.plugins.topology_torus": "federation.plugins.topologies.torus",
    "federation.plugins.topology_fattree": "federation.plugins.topologies.fattree",
    "federation.plugins.topology_graph_file": "federation.plugins.topologies.graph_file",
    "federation.plugins.routing_minimal": "federation.plugins.routings.minimal",
    "federation.plugins.routing_valiant": "federation.plugins.routings.valiant",
    "federation.plugins.routing_ugal": "federation.plugins.routings.ugal",
    "federation.plugins.routing_par": "federation.plugins.routings.par",
    "federation.plugins.routing_ugal_global": "federation.plugins.routings.ugal_global",
    "federation.plugins.routing_aries": "federation.plugins.routings.aries",
    "federation.plugins.routing_prog_adaptive": "federation.plugins.routings.prog_adaptive",
    "federation.plugins.workload_synthetic": "federation.plugins.workloads.synthetic",
    "federation.plugins.workload_messages": "federation.plugins.workloads.messages",
    "federation.plugins.workload_programs": "federation.plugins.workloads.programs",
    "federation.plugins.workload_programs_build": "federation.plugins.workloads.programs_build",
    "federation.plugins.workload_program_file": "federation.plugins.workloads.program_file",
    "federation.plugins.qos_none": "federation.plugins.qos.none",
    "federation.plugins.engine_native": "federation.plugins.engines.native",
    "federation.plugins.engine_sst": "federation.plugins.engines.sst",
    "federation.plugins.engine_simgrid": "federation.plugins.engines.simgrid",
}


class _Alias(importlib.abc.Loader):
    """Loads an old name as the module that replaced it."""

    def __init__(self, new: str) -> None:
        self.new = new

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        warnings.warn(f"{spec.name} moved to {self.new}; the old import path is removed in "
                      "hpc-federation 0.3", DeprecationWarning, stacklevel=_caller_depth())
        return importlib.import_module(self.new)

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the module was executed under its new name."""


class MovedFinder(importlib.abc.MetaPathFinder):
    """Finds the old names of :data:`MOVED` (before the path finder, which would not)."""

    def find_spec(self, fullname: str, path: object = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        new = MOVED.get(fullname)
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Alias(new),
                                              is_package=False)


def _caller_depth() -> int:
    """Stack level of the first frame outside the import machinery and this module, so that
    the warning points at the plugin's own import line."""
    frame = sys._getframe(1)
    depth = 1
    while frame is not None and (frame.f_code.co_filename.startswith("<frozen")
                                 or frame.f_code.co_filename == __file__):
        frame = frame.f_back
        depth += 1
    return depth


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, MovedFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, MovedFinder())
