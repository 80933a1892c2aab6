"""Plugin manager: loads built-in and third-party plugins the same way and keeps the registry.

Plugins are modules named in the ``federation`` entry-point group.  The built-in ones are listed
there by hpc-federation's own ``pyproject.toml``; :data:`BUILTIN_PLUGINS` repeats them so that a
source checkout without installed metadata still works (a module is never registered twice).

Environment switches (as in pytest, datasette and llm):

* ``FEDERATION_DISABLE_PLUGINS=a,b``: do not load these entry points (essential ones excepted);
* ``FEDERATION_LOAD_PLUGINS=a,b``: load only these third-party entry points;
* ``FEDERATION_DISABLE_PLUGIN_AUTOLOAD=1``: load no third-party entry point at all.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from importlib import metadata
from types import ModuleType
from typing import Any, Generic, TypeVar

import pluggy

from federation import _gc
from federation.errors import PluginError
from federation.models.base import Params
from federation.plugin import hookspecs
from federation.plugin.components import (
    Arbiter,
    Component,
    Controller,
    Engine,
    QosPolicy,
    Routing,
    Topology,
    Workload,
)
from federation.plugin.jobs import InjectionProcess, Placement, TrafficPattern

GROUP = "federation"

#: entry-point name -> module of the plugins that ship with hpc-federation
BUILTIN_PLUGINS: dict[str, str] = {
    "dragonfly": "federation.plugins.topologies.dragonfly",
    "aries": "federation.plugins.topologies.aries",
    "megafly": "federation.plugins.topologies.megafly",
    "circulant": "federation.plugins.topologies.circulant",
    "random_shortcut": "federation.plugins.topologies.random_shortcut",
    "torus": "federation.plugins.topologies.torus",
    "fattree": "federation.plugins.topologies.fattree",
    "graph_file": "federation.plugins.topologies.graph_file",
    "minimal": "federation.plugins.routings.minimal",
    "valiant": "federation.plugins.routings.valiant",
    "ugal": "federation.plugins.routings.ugal",
    "par": "federation.plugins.routings.par",
    "ugal_global": "federation.plugins.routings.ugal_global",
    "aries_routing": "federation.plugins.routings.aries",
    "prog_adaptive": "federation.plugins.routings.prog_adaptive",
    "synthetic": "federation.plugins.workloads.synthetic",
    "messages": "federation.plugins.workloads.messages",
    "rank_programs": "federation.plugins.workloads.programs",
    "program_file": "federation.plugins.workloads.program_file",
    "collective": "federation.plugins.workloads.collective",
    "nearest_neighbor": "federation.plugins.workloads.nearest_neighbor",
    "sweep3d": "federation.plugins.workloads.sweep3d",
    "snap": "federation.plugins.workloads.snap",
    "fft3d": "federation.plugins.workloads.fft3d",
    "fft2d": "federation.plugins.workloads.fft2d",
    "lammps": "federation.plugins.workloads.lammps",
    "nekbone": "federation.plugins.workloads.nekbone",
    "milc": "federation.plugins.workloads.milc",
    "hpcg": "federation.plugins.workloads.hpcg",
    "caffe": "federation.plugins.workloads.caffe",
    "npb_cg": "federation.plugins.workloads.npb_cg",
    "npb_mg": "federation.plugins.workloads.npb_mg",
    "npb_ft": "federation.plugins.workloads.npb_ft",
    "placements": "federation.plugins.placements",
    "patterns": "federation.plugins.patterns",
    "injections": "federation.plugins.injections",
    "qos_none": "federation.plugins.qos.none",
    "qos_bandwidth_caps": "federation.plugins.qos.bandwidth_caps",
    "qos_strict_priority": "federation.plugins.qos.strict_priority",
    "qos_weighted_round_robin": "federation.plugins.qos.weighted_round_robin",
    "arbiters": "federation.plugins.arbiters",
    "controllers": "federation.plugins.controllers",
    "native": "federation.plugins.engines.native",
    "sst": "federation.plugins.engines.sst",
    "simgrid": "federation.plugins.engines.simgrid",
}
#: plugins that cannot be disabled: without them nothing runs
ESSENTIAL_PLUGINS = ("native",)

T = TypeVar("T", bound=Component)


@dataclass
class Registered(Generic[T]):
    cls: type[T]
    plugin: str


@dataclass
class ComponentRegistry(Generic[T]):
    """``name -> class`` for one component kind, remembering the plugin that supplied each."""

    what: str
    base: type[T]
    items: dict[str, Registered[T]] = field(default_factory=dict)

    def register(self, cls: Any, plugin: str) -> None:
        if not isinstance(cls, type) or not issubclass(cls, self.base):
            raise PluginError(
                f"registered {cls!r} as a {self.what}, but it is not a subclass of "
                f"federation.plugin.components.{self.base.__name__}",
                plugin,
            )
        name = getattr(cls, "name", "")
        if not isinstance(name, str) or not name:
            raise PluginError(f"{self.what} class {cls.__name__} has no 'name'", plugin)
        params = getattr(cls, "Params", None)
        if not (isinstance(params, type) and issubclass(params, Params)):
            raise PluginError(
                f"{self.what} {name!r}: Params must subclass federation.Params", plugin
            )
        if name in self.items:
            other = self.items[name]
            raise PluginError(
                f"{self.what} {name!r} ({cls.__module__}.{cls.__qualname__}) is already "
                f"registered by plugin {other.plugin!r} ({other.cls.__module__}."
                f"{other.cls.__qualname__})",
                plugin,
            )
        self.items[name] = Registered(cls, plugin)

    def get(self, name: str) -> type[T]:
        try:
            return self.items[name].cls
        except KeyError:
            known = ", ".join(sorted(self.items)) or "none"
            raise KeyError(f"unknown {self.what} {name!r} (installed: {known})") from None

    def names(self) -> list[str]:
        return sorted(self.items)


@dataclass
class PluginInfo:
    name: str
    module: str
    source: str  # "builtin" or the distribution "name version"
    hooks: list[str]


class FederationPlugins:
    """Typed facade over the pluggy manager (host code never calls ``pm.hook.*`` directly)."""

    def __init__(self, load_entrypoints: bool = True) -> None:
        self.pm = pluggy.PluginManager(GROUP)
        self.pm.add_hookspecs(hookspecs)
        self.topologies: ComponentRegistry[Topology] = ComponentRegistry("topology", Topology)
        self.routings: ComponentRegistry[Routing] = ComponentRegistry("routing", Routing)
        self.qos: ComponentRegistry[QosPolicy] = ComponentRegistry("QoS policy", QosPolicy)
        self.arbiters: ComponentRegistry[Arbiter] = ComponentRegistry("arbiter", Arbiter)
        self.controllers: ComponentRegistry[Controller] = ComponentRegistry(
            "routing controller", Controller)
        self.workloads: ComponentRegistry[Workload] = ComponentRegistry("workload", Workload)
        self.engines: ComponentRegistry[Engine] = ComponentRegistry("engine", Engine)
        self.placements: ComponentRegistry[Placement] = ComponentRegistry("placement",
                                                                          Placement)
        self.patterns: ComponentRegistry[TrafficPattern] = ComponentRegistry(
            "traffic pattern", TrafficPattern)
        self.injections: ComponentRegistry[InjectionProcess] = ComponentRegistry(
            "injection process", InjectionProcess)
        self.info: dict[str, PluginInfo] = {}
        with _gc.paused():  # importing plugins makes objects, not garbage (federation._gc)
            self._load(load_entrypoints)

    # ------------------------------------------------------------------ loading
    def _load(self, load_entrypoints: bool) -> None:
        disabled = _env_list("FEDERATION_DISABLE_PLUGINS")
        allow = _env_list("FEDERATION_LOAD_PLUGINS")
        no_auto = os.environ.get("FEDERATION_DISABLE_PLUGIN_AUTOLOAD", "") not in ("", "0")
        for name in disabled & set(ESSENTIAL_PLUGINS):
            raise PluginError(f"plugin {name} is essential and cannot be disabled")
        eps = sorted(_entry_points(), key=lambda e: e.name) if load_entrypoints else []
        by_name = {ep.name: ep for ep in eps}
        # built-ins first (through their entry points when installed), so that a third-party
        # plugin that reuses a built-in name is the one blamed for the duplicate
        for name, modname in BUILTIN_PLUGINS.items():
            if name in disabled:
                continue
            ep = by_name.get(name)
            if ep is not None and ep.value == modname:
                self.add(_load_entry_point(ep), name, "builtin")
            else:
                self.add(importlib.import_module(modname), name, "builtin")
        for ep in eps:
            if BUILTIN_PLUGINS.get(ep.name) == ep.value or ep.name in disabled:
                continue
            if no_auto or (allow and ep.name not in allow):
                continue
            dist = getattr(ep, "dist", None)
            source = f"{dist.name} {dist.version}" if dist is not None else "entry point"
            self.add(_load_entry_point(ep), ep.name, source)

    def add(self, plugin: ModuleType | object, name: str, source: str = "local") -> None:
        """Register ``plugin`` (a module or object with hookimpls) and collect its components."""
        try:
            self.pm.register(plugin, name=name)
            self.pm.check_pending()
        except pluggy.PluginValidationError as exc:
            self.pm.unregister(name=name)
            raise PluginError(str(exc), name) from None
        except ValueError as exc:
            raise PluginError(str(exc), name) from None
        hooks = sorted(h.name for h in self.pm.get_hookcallers(plugin) or [])
        self.info[name] = PluginInfo(name, getattr(plugin, "__name__", repr(plugin)), source, hooks)
        self._collect(plugin, name)

    def _collect(self, plugin: object, name: str) -> None:
        for kind, registry in self._registries().items():
            hook = f"federation_register_{kind}"
            fn: Callable[..., Any] | None = getattr(plugin, hook, None)
            if fn is None or not hasattr(fn, f"{GROUP}_impl"):
                continue  # only functions marked @federation.hookimpl are hooks

            def register(cls: Any, _registry: ComponentRegistry[Any] = registry) -> None:
                _registry.register(cls, name)

            try:
                fn(register=register)
            except PluginError:
                raise
            except Exception as exc:  # noqa: BLE001
                raise PluginError(f"{hook} failed: {type(exc).__name__}: {exc}", name) from None

    def failing_plugin(self, exc: BaseException) -> tuple[str, str] | None:
        """``(plugin, "file:line")`` of the innermost frame of ``exc``'s traceback in a
        third-party plugin's code, if any: a plugin that raised, not a bug of ours (what
        ``main`` says in one line, docs/plugins.md)."""
        packages: dict[str, str] = {}
        for name, info in self.info.items():
            top = info.module.split(".")[0]
            if info.source != "builtin" and top.isidentifier():
                packages[top] = name
        for registry in self._registries().values():
            for item in registry.items.values():
                if self.info.get(item.plugin) and self.info[item.plugin].source != "builtin":
                    packages.setdefault(item.cls.__module__.split(".")[0], item.plugin)
        found = None
        tb = exc.__traceback__
        while tb is not None:
            module = str(tb.tb_frame.f_globals.get("__name__", ""))
            top = module.split(".")[0]
            if top in packages and top != "federation":
                found = (packages[top], f"{tb.tb_frame.f_code.co_filename}:{tb.tb_lineno}")
            tb = tb.tb_next
        return found

    def _registries(self) -> dict[str, ComponentRegistry[Any]]:
        """Each component kind's registry by its attribute's name, which is also its hook's
        (``federation_register_<kind>``) and its key in ``federation plugins``' listing."""
        return {"topologies": self.topologies, "routings": self.routings, "qos": self.qos,
                "arbiters": self.arbiters, "controllers": self.controllers,
                "workloads": self.workloads, "engines": self.engines,
                "placements": self.placements, "patterns": self.patterns,
                "injections": self.injections}

    def add_commands(self, app: Any) -> None:
        self.pm.hook.federation_add_commands(app=app)

    # ------------------------------------------------------------------ listing
    def listing(self) -> list[dict[str, Any]]:
        """What ``federation plugins`` prints: each plugin, where it came from, what it adds."""
        out = []
        regs = self._registries()
        for name, info in sorted(self.info.items()):
            provides = {
                kind: sorted(n for n, r in reg.items.items() if r.plugin == name)
                for kind, reg in regs.items()
            }
            out.append({
                "name": name,
                "module": info.module,
                "source": info.source,
                "hooks": info.hooks,
                "provides": {k: v for k, v in provides.items() if v},
            })
        return out


def resolve_nested(what: str, spec: Any, path: str) -> tuple[Any, Any]:
    """A component named inside another's parameters (``synthetic``'s ``pattern``), from the
    registry ``what`` (``patterns``, ``injections``, ``placements``, ...): the instance, and
    ``spec`` with its validated parameters (so the resolved document shows them).  Errors are
    :class:`~federation.errors.ConfigError` s whose path starts with ``path``.  Relative
    paths among the parameters (``DocumentPath``) are resolved against the folder of the file
    ``spec`` was read from (:attr:`~federation.models.machine.ComponentSpec.base_dir`), as a
    top-level component's are, whatever the working directory."""
    from federation.errors import ConfigError
    from federation.models.base import validate_model

    registry: ComponentRegistry[Any] = getattr(active_plugins(), what)
    try:
        cls = registry.get(spec.kind)
    except KeyError as exc:
        raise ConfigError(exc.args[0], path=f"{path}.kind") from None
    params = spec.params if isinstance(spec.params, cls.Params) else validate_model(
        cls.Params, spec.params, None, prefix=path, base_dir=getattr(spec, "base_dir", None))
    try:
        component = cls(params)
    except ConfigError as exc:  # its own refusal (a file it reads): under ``path`` too
        if exc.source is not None:
            raise
        raise ConfigError(exc.message, path=f"{path}.{exc.path}" if exc.path else path) from None
    return component, spec.model_copy(update={"params": params})


def _load_entry_point(ep: metadata.EntryPoint) -> Any:
    try:
        return ep.load()
    except Exception as exc:  # noqa: BLE001 - any import failure names the plugin
        raise PluginError(
            f"error importing {ep.value}: {type(exc).__name__}: {exc}", ep.name
        ) from None


def _entry_points() -> list[metadata.EntryPoint]:
    return list(metadata.entry_points(group=GROUP))


def _env_list(var: str) -> set[str]:
    return {x.strip() for x in os.environ.get(var, "").split(",") if x.strip()}


_MANAGER: FederationPlugins | None = None


def get_plugins(reload: bool = False) -> FederationPlugins:
    """The process-wide plugin manager, loaded on first use."""
    global _MANAGER
    if _MANAGER is None or reload:
        _MANAGER = FederationPlugins()
    return _MANAGER


#: the manager an experiment was loaded with, while it is loaded or run (see active_plugins)
_ACTIVE: ContextVar[FederationPlugins | None] = ContextVar("federation_plugins", default=None)


def active_plugins() -> FederationPlugins:
    """The plugin manager of the experiment being loaded or run in this thread: the one
    given to ``load_experiment(..., plugins=M)``, else the process-wide one.

    A component named inside another's parameters (``synthetic``'s ``pattern``), a routing
    controller, the origins ``results.json`` records: each is looked up here, so that they
    come from ``M`` as the top-level components do.  Read from the process-wide manager, a
    pattern registered on ``M`` only was unknown, one registered on the process-wide
    manager by an earlier run was found where ``M`` lacked it, and the same experiment run
    twice with the same ``M`` recorded other origins once a plugin was added to the
    process-wide manager."""
    plugins = _ACTIVE.get()
    return plugins if plugins is not None else get_plugins()


@contextmanager
def plugins_in_use(plugins: FederationPlugins | None) -> Iterator[None]:
    """Make ``plugins`` (``None``: the process-wide manager) :func:`active_plugins` in this
    thread (a context variable: another thread's run is not affected) until the block ends."""
    token = _ACTIVE.set(plugins)
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def reset_plugins() -> None:
    """Forget the loaded plugins (tests use this after installing a plugin distribution)."""
    global _MANAGER
    _MANAGER = None
