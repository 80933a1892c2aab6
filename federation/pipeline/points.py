"""The values that pass from one stage of a point's pipeline to the next, and where a figure of
a point came from.

Stage results are plain dataclasses made once and only read after: ``load`` makes
:class:`LoadedExperiment` (its :class:`ResolvedPoint` s), ``build`` a :class:`Built`, ``traffic``
a :class:`PreparedPoint`.  They live here, below every stage, so that a stage imports the value
it receives without importing the stage that made it (the rule ``tests/test_layout.py`` checks).

:func:`figure_origin` answers "which file and field set this figure?" for every stage's
refusals: a link figure may be written in the machine file, swept by the experiment
(``sweep: {machine.links.global.latency: [...]}``), or be the topology's default.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from federation.errors import ConfigError, FederationError, located
from federation.models.machine import DEFAULT_BANDWIDTH, DEFAULT_BUFFER, DEFAULT_LATENCY
from federation.plugin.components import Messages

if TYPE_CHECKING:
    from federation.engine.native import LinkFigures, NativeRun
    from federation.models.experiment import Experiment
    from federation.models.machine import Machine
    from federation.network import Network
    from federation.network.deadlock import DeadlockProof
    from federation.network.tables import RouteTables
    from federation.plugin.components import (
        Arbiter,
        Engine,
        QosPolicy,
        Routing,
        RoutingProgram,
        Topology,
        Workload,
    )


@dataclass(frozen=True)
class ResolvedMachine:
    machine: Machine
    source: str
    topology: Topology
    qos: QosPolicy
    arbiter: Arbiter


@dataclass(frozen=True)
class ResolvedPoint:
    """One runnable point of an experiment (one combination of its sweep)."""

    experiment: Experiment
    source: str
    machine: ResolvedMachine
    routing: Routing
    workload: Workload
    engine: Engine
    sweep: dict[str, Any] = field(default_factory=dict)
    #: open-loop traffic beside the rank programs of a closed-loop ``workload`` (``None``: none)
    background: Workload | None = None


@dataclass(frozen=True)
class LoadedExperiment:
    experiment: Experiment
    source: str
    points: list[ResolvedPoint]
    #: what the user should know about how the file was read, e.g. a sweep axis an override
    #: replaced (the CLI prints each as a ``note:`` line)
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Origin:
    """The file and dotted field a resolved figure came from (for error messages)."""

    source: str
    path: str


def figure_origin(point: ResolvedPoint, machine_path: str) -> Origin:
    """Where ``machine_path`` (e.g. ``links.global.latency``) of ``point``'s machine was set.

    A swept value blames the experiment's sweep entry; otherwise the machine file (or the
    experiment's inline ``machine:`` block)."""
    key = f"machine.{machine_path}"
    for swept in point.sweep:
        if key == swept or key.startswith(swept + "."):
            return Origin(point.source, f"sweep.{swept}")
    return Origin(point.machine.source, machine_prefix(point) + machine_path)


def refuse_figure(point: ResolvedPoint, machine_path: str, message: str) -> ConfigError:
    o = figure_origin(point, machine_path)
    return ConfigError(message, source=o.source, path=o.path)


def link_figure(machine: Any, topology: Any, cls: str, attr: str) -> tuple[float, bool]:
    """One figure of a link class: the machine file's value, else the topology's default, else
    the global default.  Returns ``(value, set_in_machine_file)``."""
    user = machine.links.get(cls)
    v = getattr(user, attr) if user is not None else None
    if v is not None:
        return float(v), True
    tdef = topology.link_defaults.get(cls)
    v = getattr(tdef, attr) if tdef is not None else None
    if v is not None:
        return float(v), False
    default = {"bandwidth": DEFAULT_BANDWIDTH, "latency": DEFAULT_LATENCY,
               "buffer": DEFAULT_BUFFER}[attr]
    return float(default), False


def known_link_classes(point: ResolvedPoint, network: Network | None = None) -> list[str]:
    """Link classes of the point's machine: the network's when built, else what the machine
    file and the topology's defaults name."""
    if network is not None:
        return list(network.link_classes)
    topo = point.machine.topology
    names = ["terminal", *topo.link_defaults, *point.machine.machine.links]
    return list(dict.fromkeys(names))


def stop_path(point: ResolvedPoint, name: str) -> str:
    key = f"stop.{name}"
    return f"sweep.{key}" if key in point.sweep else key


@dataclass(frozen=True)
class MemoryEstimate:
    network: int
    tables: int
    packets: int = 0

    @property
    def total(self) -> int:
        return self.network + self.tables + self.packets

    def describe(self) -> str:
        parts = [f"network {gib(self.network)}", f"route tables {gib(self.tables)}"]
        if self.packets:
            parts.append(f"packets {gib(self.packets)}")
        return ", ".join(parts)


def gib(n: float) -> str:
    return f"{n / 2**30:.3g} GiB"


def machine_prefix(point: ResolvedPoint) -> str:
    """``machine.`` when the point's machine is inline in the experiment file, else ``''``."""
    return "machine." if point.machine.source == point.source else ""


@dataclass(frozen=True)
class PreparedPoint:
    point: ResolvedPoint
    network: Network
    job: NativeRun
    #: measurement window [start, end) in ps; ``None``: the whole run (rank programs)
    window: tuple[int, int] | None
    #: the build stage's value the traffic was made on
    built: Built

    @property
    def messages(self) -> Messages:
        """Every open-loop message at once (with rank programs: the background's; the
        programs' own messages are ``job.programs``).  The engine takes them in batches and
        never asks for this; it is for small runs and tests."""
        t = self.job.traffic
        parts = [m for _, m in t.batches()] if t is not None else []
        if not parts:
            return no_messages()
        return Messages(*(np.concatenate([getattr(m, f) for m in parts])
                          for f in ("time_ps", "src", "dst", "size")))


@dataclass(frozen=True)
class Built:
    """The network, link figures and route tables of one (machine, routing) pair."""

    key: str
    network: Network
    links: dict[str, LinkFigures]
    nic_bandwidth: float
    tables: RouteTables
    memory: MemoryEstimate
    program: RoutingProgram | None = None
    owner: str = ""
    #: the proof that the routing cannot deadlock (``None``: not checked,
    #: ``--no-deadlock-check``)
    deadlock: DeadlockProof | None = None


def in_point(exc: FederationError, point: ResolvedPoint, i: int, n: int) -> FederationError:
    """Say which sweep point an error belongs to when there are several."""
    if n == 1 or not point.sweep:
        return located(exc, point.source) if isinstance(exc, ConfigError) else exc
    label = ", ".join(f"{k}={v}" for k, v in point.sweep.items())
    if isinstance(exc, ConfigError):
        exc = located(exc, point.source)
        return ConfigError(f"{exc.message} (sweep point {i}: {label})", source=exc.source,
                           path=exc.path)
    return type(exc)(f"{exc} (sweep point {i}: {label})")


def no_messages() -> Messages:
    return Messages(np.zeros(0, np.int64), np.zeros(0, np.int32), np.zeros(0, np.int32),
                    np.zeros(0, np.int64))


def point_label(point: ResolvedPoint) -> str:
    """``workload.load=0.3, seed=2`` (or ``run`` for an experiment without a sweep)."""
    return ", ".join(f"{k}={v}" for k, v in point.sweep.items()) or "run"
