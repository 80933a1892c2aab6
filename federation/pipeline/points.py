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

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any

import numpy as np

from federation.errors import ConfigError, FederationError, located
from federation.models.machine import DEFAULT_BANDWIDTH, DEFAULT_BUFFER, DEFAULT_LATENCY
from federation.plugin.components import Messages
from federation.plugin.jobs import Placement, PlacementContext

if TYPE_CHECKING:
    from federation.engine.native import LinkFigures, NativeRun
    from federation.models.experiment import Experiment, RankOrder
    from federation.models.machine import Machine
    from federation.network import Network
    from federation.network.deadlock import DeadlockProof
    from federation.network.tables import RouteTables
    from federation.plugin.components import (
        Arbiter,
        Controller,
        Engine,
        QosPolicy,
        Routing,
        RoutingProgram,
        Topology,
        Workload,
    )
    from federation.programs.model import RankPrograms


@dataclass(frozen=True)
class ResolvedMachine:
    machine: Machine
    source: str
    topology: Topology
    qos: QosPolicy
    arbiter: Arbiter


@dataclass(frozen=True)
class ResolvedJob:
    """One job of a point: its workload, placement and rank order, resolved.

    The old form (``workload`` and ``background``) is jobs too: ``workload`` on every node,
    and ``background`` on every node beside it (``shared``), their fields named as the user
    wrote them (``workload.x``, ``background.x``)."""

    name: str
    index: int  #: position among the point's jobs (its random streams depend on it)
    workload: Workload
    placement: Placement
    order: RankOrder
    start_ps: int = 0
    shared: bool = False
    #: where the job is in the file (``jobs[1]``; ``workload`` or ``background`` in the old
    #: form), and where its workload is (``jobs[1].workload``)
    field: str = "workload"
    workload_field: str = "workload"

    @property
    def closed_loop(self) -> bool:
        return bool(self.workload.closed_loop)

    def at(self, sub: str) -> str:
        """The dotted path of ``sub`` (``placement.count``) in the file."""
        return f"{self.field}.{sub}" if sub else self.field


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
    #: the point's jobs (the loader fills them for both forms; empty: derived from
    #: ``workload`` and ``background``, see :func:`point_jobs`)
    jobs: tuple[ResolvedJob, ...] = ()
    #: the fields ``--set`` gave (dotted, jobs by position): a refusal under one of them is
    #: the override's, not that of a sweep entry above it (:func:`sweep_entry`)
    overridden: tuple[str, ...] = ()
    #: the routing controller (``routing_controller``), resolved with the other components
    #: from the manager that loaded the file (``None``: none)
    controller: Controller | None = None

    @property
    def given_jobs(self) -> bool:
        """Whether the file gave ``jobs:`` (the summary then reports them)."""
        return self.experiment.jobs is not None or self.experiment.slowdown


def old_form_jobs(workload: Workload, background: Workload | None) -> tuple[ResolvedJob, ...]:
    """``workload`` (and ``background``) as jobs: each on every node, in node order."""
    from federation.models.experiment import RankOrder

    everywhere = _every_node()
    jobs = [ResolvedJob("workload", 0, workload, everywhere, RankOrder(), shared=True)]
    if background is not None:
        jobs.append(ResolvedJob("background", 1, background, everywhere, RankOrder(),
                                shared=True, field="background", workload_field="background"))
    return tuple(jobs)


class _EveryNode(Placement):
    """Every node of the machine, in node order: where a file without ``jobs:`` runs its
    workload (and background).  The pipeline's own, not the registry's ``all`` (the same
    rule): a file that names no placement runs with the placements plugin disabled
    (``FEDERATION_DISABLE_PLUGINS=placements`` raised a KeyError), and does not depend on
    which manager made the first such point in the process."""

    name = "all"

    def place(self, ctx: PlacementContext) -> np.ndarray:
        return np.arange(ctx.network.n_nodes, dtype=np.int64)


@cache
def _every_node() -> Placement:
    """The one :class:`_EveryNode` (it holds nothing of a run)."""
    return _EveryNode(_EveryNode.Params())


def point_jobs(point: ResolvedPoint) -> tuple[ResolvedJob, ...]:
    """The point's jobs: those of ``jobs:``, else ``workload`` (and ``background``) as jobs
    (made from the fields each time, so a point whose workload was replaced stays whole)."""
    if point.jobs:
        return point.jobs
    return old_form_jobs(point.workload, point.background)


def known_length_ps(point: ResolvedPoint) -> int | None:
    """The part of the run its stop rule gives the length of before it starts:
    ``stop.warmup + stop.measure`` when every job is open loop (the open-loop traffic ends
    there; the drain after it, until the measured packets are delivered, only the run
    tells); ``None`` with rank programs or ``stop.messages``, which end when they end.  The
    loader bounds ``outputs.link_series``'s samples over it, and the engine's sampler
    (:class:`~federation.engine.link_series.Sampler`) relies on that."""
    from federation.models.units import seconds_to_ps

    stop = point.experiment.stop
    if stop.measure is None or any(j.closed_loop for j in point_jobs(point)):
        return None
    return seconds_to_ps(stop.warmup) + seconds_to_ps(stop.measure)


@dataclass(frozen=True)
class LoadedExperiment:
    experiment: Experiment
    source: str
    points: list[ResolvedPoint]
    #: what the user should know about how the file was read, e.g. a sweep axis an override
    #: replaced (the CLI prints each as a ``note:`` line: :meth:`print_notes`)
    notes: list[str] = field(default_factory=list)
    #: the ``--set`` overrides it was read with, and the file as read (for
    #: :func:`federation.pipeline.point.point_error` to say which override gave a value a
    #: later check refuses)
    overrides: list[Any] = field(default_factory=list)
    doc: dict[str, Any] | None = None
    #: the plugin manager it was loaded with (``plugins=`` of ``load_experiment``), active
    #: while it is checked and run (:func:`~federation.plugin.registry.active_plugins`)
    plugins: Any = None

    def print_notes(self) -> None:
        """Each note as a ``note:`` line on stderr; commands call it once the file has
        passed its checks, so that a refusal stays one line.  Here, not in the CLI, because
        the engine plugins' commands (``federation sst``) print them too."""
        import sys

        for note in self.notes:
            print(f"note: {note}", file=sys.stderr)


@dataclass(frozen=True)
class Origin:
    """The file and dotted field a resolved figure came from (for error messages)."""

    source: str
    path: str


def figure_origin(point: ResolvedPoint, machine_path: str) -> Origin:
    """Where ``machine_path`` (e.g. ``links.global.latency``) of ``point``'s machine was set.

    A swept value blames the experiment's sweep entry; otherwise the machine file (or the
    experiment's inline ``machine:`` block)."""
    entry = point_entry(point, f"machine.{machine_path}")
    if entry is not None:
        return Origin(point.source, entry)
    return Origin(point.machine.source, machine_prefix(point) + machine_path)


def sweep_entry(axes: Iterable[str], path: str, names: Sequence[str | None] | None = None,
                overridden: Sequence[str] = ()) -> str | None:
    """``sweep.AXIS`` for the first of ``axes`` (a sweep's keys) that sets ``path`` of the
    experiment (the path itself or an ancestor of it), else None: where a refusal of a swept
    value points.  A list position is the same written ``jobs[0]`` (as refusals write it) or
    ``jobs.0``, and with ``names`` (the jobs' names, in order) a job is the
    same by position or by name (``jobs.fg``).  A field of ``overridden`` (``--set``) below
    an axis that reaches ``path`` or a part of it gave the value, not the axis (``--set
    machine.topology.h=1`` beside ``sweep: {machine: [...]}``)."""
    want = _canonical(path, names)
    for axis in axes:
        key = _canonical(axis, names)
        if want == key or want.startswith(key + "."):
            if any(len(k) > len(key) and (want == k or want.startswith(k + ".")
                                          or k.startswith(want + "."))
                   for k in overridden):
                continue
            return f"sweep.{axis}"
    return None


#: ``[3]`` after a field name: a list position as error messages write it (``jobs[0]``)
_POSITION = re.compile(r"(?<=[^.\[])\[(\d+)\](?=[.\[]|$)")


def dotted(path: str) -> str:
    """``jobs[0].workload`` as a dotted key, ``jobs.0.workload``: how error messages write a
    list position, turned into the form ``--set`` keys and sweep axes take (and
    :func:`federation.pipeline.overrides.set_path` walks)."""
    return _POSITION.sub(r".\1", path)


def _canonical(key: str, names: Sequence[str | None] | None) -> str:
    parts = dotted(key).split(".")
    if names and len(parts) > 1 and parts[0] == "jobs" and not parts[1].isdigit() \
            and list(names).count(parts[1]) == 1:
        parts[1] = str(list(names).index(parts[1]))
    return ".".join(parts)


def point_entry(point: ResolvedPoint, path: str) -> str | None:
    """:func:`sweep_entry` of ``path`` in ``point``'s sweep: its jobs named as the file
    names them, the fields ``--set`` gave below an axis not the axis's (a point made in
    code, without an experiment or overrides, has neither)."""
    jobs = getattr(getattr(point, "experiment", None), "jobs", None)
    names = [j.name for j in jobs] if jobs is not None else None
    return sweep_entry(point.sweep, path, names, getattr(point, "overridden", ()))


def swept_message(entry: str, path: str, message: str) -> str:
    """``message`` of a refusal at ``path`` blamed on the sweep ``entry`` that set it: prefixed
    with ``path`` when the axis is an ancestor of it (``sweep.workload: workload.load: ...``),
    so that the field stays named."""
    return message if entry == f"sweep.{path}" else f"{path}: {message}"


def experiment_field(point: ResolvedPoint, path: str) -> str:
    """``path`` of the experiment file, or the ``sweep`` entry that set it for this point."""
    return point_entry(point, path) or path


def refuse_figure(point: ResolvedPoint, machine_path: str, message: str) -> ConfigError:
    """A refusal of a machine figure, at :func:`figure_origin`; blamed on a sweep entry that
    set an ancestor of it (``sweep.machine``), the message names the figure's field."""
    o = figure_origin(point, machine_path)
    if o.source == point.source and (o.path or "").startswith("sweep."):
        message = swept_message(o.path or "", f"machine.{machine_path}", message)
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


def window_field(point: ResolvedPoint) -> str:
    """The field(s) a refusal of ``point``'s measurement window names: the window is
    ``[stop.warmup, stop.warmup + stop.measure)`` (or up to the ``stop.messages``-th message),
    so the sweep entry that varies one of the two for this point (``sweep.stop.warmup``), both
    when the sweep varies both, else the window's length (``stop.measure``), as a file with
    no such axis gives it."""
    length = "stop.measure" if point.experiment.stop.measure is not None else "stop.messages"
    fields = ("stop.warmup", length)
    entries = list(dict.fromkeys(e for e in (point_entry(point, f) for f in fields)
                                 if e is not None))
    return ", ".join(entries) if entries else length


@dataclass(frozen=True)
class MemoryEstimate:
    network: int
    tables: int
    packets: int = 0
    #: a sliding QoS window's rings of sends at their largest (``bounds.ring_memory``)
    rings: int = 0

    @property
    def total(self) -> int:
        return self.network + self.tables + self.packets + self.rings

    def describe(self) -> str:
        parts = [f"network {gib(self.network)}", f"route tables {gib(self.tables)}"]
        if self.rings:
            parts.append(f"QoS rings {gib(self.rings)}")
        if self.packets:
            parts.append(f"packets {gib(self.packets)}")
        return ", ".join(parts)


def gib(n: float) -> str:
    """``n`` bytes in GiB to 3 significant figures; any size: an integer too large for a float
    is scaled in integers (``1e+200 GiB``) instead of raising ``OverflowError``."""
    try:
        return f"{n / 2**30:.3g} GiB"
    except OverflowError:
        q = abs(int(n)) >> 30
        exp = int(math.log10(q))  # math.log10 takes any int; its rounding is corrected below
        exp += (q >= 10 ** (exp + 1)) - (q < 10**exp)
        lead = q // 10 ** (exp - 2)  # the three leading digits
        sign = "-" if n < 0 else ""
        return f"{sign}{lead / 100:.3g}e+{exp} GiB"


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
    #: the jobs on their nodes (``None``: the old form's one workload on every node)
    placed: Placed | None = None
    #: where each closed-loop job's ranks are among the run's (``None``: no rank programs)
    layout: JobLayout | None = None
    #: each closed-loop job's own programs (its ranks and nodes), by job index
    job_programs: dict[int, RankPrograms] | None = None

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


def in_point(exc: FederationError, point: ResolvedPoint, i: int, n: int,
             swept: bool = True) -> FederationError:
    """Say which sweep point an error belongs to when there are several, and blame a refused
    field of the experiment file on the sweep entry that set it (``sweep.workload.calc_unit``,
    not the file's ``workload.calc_unit``), unless ``swept`` is false (a ``--set`` gave the
    value: :func:`federation.pipeline.point.point_error` says which)."""
    label = f" (sweep point {i}: {sweep_label(point.sweep)})" if n > 1 and point.sweep else ""
    if not isinstance(exc, ConfigError):
        return type(exc)(f"{exc}{label}") if label else exc
    exc = located(exc, point.source)
    entry = point_entry(point, exc.path) if swept and exc.path and exc.source == point.source \
        else None
    if entry is None:
        return ConfigError(exc.message + label, source=exc.source, path=exc.path) if label \
            else exc
    return ConfigError(swept_message(entry, exc.path or "", exc.message) + label,
                       source=exc.source, path=entry)


def no_messages() -> Messages:
    return Messages(np.zeros(0, np.int64), np.zeros(0, np.int32), np.zeros(0, np.int32),
                    np.zeros(0, np.int64))


def sweep_label(sweep: dict[str, Any]) -> str:
    """``workload.load=0.3, seed=2``: a point's sweep values, as error messages name them."""
    return ", ".join(f"{k}={v}" for k, v in sweep.items())


def point_label(point: ResolvedPoint) -> str:
    """``workload.load=0.3, seed=2`` (or ``run`` for an experiment without a sweep)."""
    return sweep_label(point.sweep) or "run"


# --------------------------------------------------------------------------- jobs

#: spawn keys of the jobs' own random streams (beside the run's children 0 to 3)
PLACEMENT_STREAM = 1 << 20
ORDER_STREAM = (1 << 20) + 1


def job_traffic_stream(point: ResolvedPoint, index: int) -> np.random.Generator:
    """Job ``index``'s traffic (or program-building) stream: child 0 of the seed's sequence for
    the first job, ``2 x index`` for the others.  So the first job draws what the one workload
    of the old form drew, and the second what its ``background`` drew (child 2); children 1
    and 3 stay the routing streams of the run and of its open-loop packets."""
    return np.random.default_rng(np.random.SeedSequence(
        point.experiment.seed, spawn_key=(0 if index == 0 else 2 * index,)))


def job_stream(point: ResolvedPoint, index: int, purpose: int,
               seed: int | None = None) -> np.random.Generator:
    """Job ``index``'s stream for a ``purpose`` (:data:`PLACEMENT_STREAM`,
    :data:`ORDER_STREAM`), from the experiment's seed (or ``seed``, a job's own)."""
    base = point.experiment.seed if seed is None else seed
    return np.random.default_rng(np.random.SeedSequence(base, spawn_key=(purpose, index)))


@dataclass(frozen=True)
class TwoOptFigures:
    """What a job's two-opt search did (``ranks: {order: two_opt}``)."""

    objective: str
    iterations: int
    before: int  #: the objective of the starting order
    after: int  #: and of the order found
    accepted: int  #: swaps kept


@dataclass(frozen=True)
class PlacedJob:
    """A job on its nodes: ``nodes[i]`` is the machine node of the job's node ``i`` (where its
    workload's node ``i``, or rank ``i``, runs), after the rank order; ``placed`` the nodes in
    the placement's own order."""

    job: ResolvedJob
    nodes: np.ndarray
    placed: np.ndarray
    n_machine_nodes: int
    two_opt: TwoOptFigures | None = None

    @property
    def whole(self) -> bool:
        """The job is every node of the machine in node order (the old form): its node
        numbers are the machine's."""
        n = self.nodes.shape[0]
        return n == self.n_machine_nodes and bool((self.nodes == np.arange(n)).all())


@dataclass(frozen=True)
class Placed:
    """Every job of a point on its nodes (the value of the *jobs* stage)."""

    jobs: tuple[PlacedJob, ...]

    def of(self, job: ResolvedJob) -> PlacedJob:
        """The placed job of ``job`` (by its position among the point's jobs)."""
        for pj in self.jobs:
            if pj.job.index == job.index:
                return pj
        raise KeyError(f"job {job.name!r} is not placed")


def job_view(network: Network, nodes: np.ndarray) -> Network:
    """The machine as a job sees it: every router and cable, only the job's nodes (node ``i``
    is machine node ``nodes[i]``)."""
    import dataclasses

    return dataclasses.replace(network, node_router=network.node_router[nodes])


#: a refusal about node numbers or counts of nodes or ranks: a node number (``node 5``,
#: ``node 3's``) or a plural (``4 nodes``, ``nodes 0 to 3``, ``the 8 ranks``); not ``rank 0
#: operation 3 (send 8 B to rank 1 ...)``, which only says where a fault of another kind is
ABOUT_NODES = re.compile(r"\bnode \d|\bnodes\b|\branks\b")


def in_job(exc: ConfigError, point: ResolvedPoint, job: ResolvedJob,
           n_nodes: int | None = None) -> ConfigError:
    """A workload's refusal (paths ``workload.x``) where the user wrote the workload:
    ``jobs[1].workload.x`` or ``background.x``.  In the ``jobs:`` form, a refusal about node
    numbers or counts (:data:`ABOUT_NODES`; "the machine has 4 nodes" is the job's share)
    says so: ``(job 'b' has 4 nodes; its workload's node numbers are the job's)``.  Any other
    one (a message size) says nothing of nodes, which would send the user to the wrong
    field, unless its path is outside the job (``stop.messages``): then ``(job 'b' has 4
    nodes)`` names the job, whose node count the figure refused is made of."""
    path = exc.path or ""
    if path == "workload" or path.startswith("workload."):
        path = job.workload_field + path[len("workload"):]
    message = exc.message
    if point.experiment.jobs is not None and n_nodes is not None:
        if ABOUT_NODES.search(message):
            message += (f" (job {job.name!r} has {n_nodes} nodes; its workload's node "
                        "numbers are the job's)")
        elif not (path == job.field or path.startswith(f"{job.field}.")):
            message += f" (job {job.name!r} has {n_nodes} nodes)"
    return ConfigError(message, source=exc.source or point.source, path=path or None)


@dataclass(frozen=True)
class JobLayout:
    """Where each closed-loop job is in the merged rank programs of a run: its ranks
    ``[first, last)`` by job index, and the ``start`` (ps) of the jobs whose ranks begin with
    a delay (a compute of that length, each rank's first operation)."""

    ranks: dict[int, tuple[int, int]]
    delays: dict[int, int]


def everywhere(point: ResolvedPoint, n_nodes: int) -> Placed:
    """Every job of the point on every node, in node order (the old form)."""
    nodes = np.arange(n_nodes, dtype=np.int64)
    return Placed(tuple(PlacedJob(j, nodes, nodes, n_nodes) for j in point_jobs(point)))


# --------------------------------------------------------------------------- components

#: the built-in components' package
BUILTIN_COMPONENTS = "federation.plugins."


def plugin_of(component: Any, kind: str) -> str:
    """The registered plugin (entry-point name) behind ``component``, else its module."""
    from federation.plugin.registry import active_plugins

    reg = getattr(active_plugins(), kind).items.get(component.name)
    if reg is not None and reg.cls is type(component):
        return reg.plugin
    return type(component).__module__


def builtin(component: Any) -> bool:
    """Whether ``component`` is one of the program's own (``federation.plugins``)."""
    return type(component).__module__.startswith(BUILTIN_COMPONENTS)


def topology_owner(topology: Any) -> str:
    """``topology 'x'``, with ``(plugin 'p')`` for a third-party topology (built-ins are
    the program's own: their plugin name adds nothing)."""
    if builtin(topology):
        return f"topology {topology.name!r}"
    return f"topology {topology.name!r} (plugin {plugin_of(topology, 'topologies')!r})"

