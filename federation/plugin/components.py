"""Base classes of the components that plugins contribute.

A component class carries ``name`` (what files write as ``kind:`` or ``algorithm:``) and a nested
``Params`` model (a :class:`federation.models.base.Params` subclass) that validates its parameters,
so a third-party component gets the same checking and error messages as a built-in one.

The contracts are deliberately *data* contracts: a topology returns a
:class:`~federation.network.Network` (flat arrays), a routing returns :class:`RouteTables`
(flat arrays plus a VC rule), a workload returns :class:`Messages` (flat arrays).  The native
engine's compiled loop consumes only arrays, which is why plugins written in plain Python run at
full engine speed.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from federation.models.base import Params
from federation.network.tables import VC_COUNTER as VC_COUNTER  # the routing contract
from federation.network.tables import VC_DATELINE as VC_DATELINE
from federation.network.tables import ClassPlan as ClassPlan  # a compiled routing's VC plan
from federation.network.tables import RouteTables
from federation.network.tables import TablePlan as TablePlan

if TYPE_CHECKING:
    from federation.models.experiment import Experiment
    from federation.models.machine import Machine
    from federation.network import Network
    from federation.programs.model import RankPrograms


class Component:
    """Common part of every pluggable component."""

    #: Name used in files (``kind: <name>`` / ``algorithm: <name>``).
    name: ClassVar[str] = ""
    #: Parameter model; subclasses override with their own nested ``class Params(Params)``.
    Params: ClassVar[type[Params]] = Params

    def __init__(self, params: Params) -> None:
        self.params = params

    @classmethod
    def describe(cls) -> str:
        doc = (cls.__doc__ or "").strip().splitlines()
        return doc[0] if doc else ""


# --------------------------------------------------------------------------- topology


@dataclass(frozen=True)
class LinkDefaults:
    """A topology's suggested figures for one link class (overridden by the machine file)."""

    bandwidth: float | None = None  # bytes/s
    latency: float | None = None  # s
    buffer: float | None = None  # bytes per VC


@dataclass(frozen=True)
class TopologySize:
    """What a topology will build, known from its parameters alone.

    The runner estimates a point's memory from these counts *before* building anything, so a
    slip such as ``a: 100000`` is refused with an estimate instead of exhausting memory.
    """

    routers: int
    nodes: int
    cables: int  #: router-to-router cables (parallel cables counted each)
    groups: int  #: routing groups (``routers`` on topologies without groups)


class Topology(Component):
    """Builds the router graph.  Subclasses implement :meth:`build`.

    ``link_defaults`` maps each link class the topology emits to its default figures; a machine
    file overrides any of them under ``links:``.
    """

    link_defaults: ClassVar[dict[str, LinkDefaults]] = {}

    def build(self) -> Network:
        raise NotImplementedError

    def size(self) -> TopologySize | None:
        """Counts :meth:`build` will produce, computed from the parameters without building.

        ``None`` (the default) means unknown: the runner then builds the network first and
        checks the memory of the rest of the run afterwards.  Built-ins return exact counts.
        """
        return None

    def minimal_routes(self, network: Network) -> RouteTables:
        """Minimal routing tables for this topology.

        The default is shortest paths over the router graph (BFS tables; equal-cost next hops
        shared by a deterministic hash of the destination, see
        :mod:`federation.network.routes`) with VC = hop index, which is deadlock-free on any graph
        given
        ``diameter`` VCs.  Topologies with structure (dragonfly, torus, fat tree) override this
        with their own minimal paths and cheaper VC rules.
        """
        from federation.network.routes import shortest_path_routes

        return shortest_path_routes(network)


# --------------------------------------------------------------------------- routing

@dataclass
class RoutingProgram:
    """A routing compiled into the engine's loop (see :mod:`federation.engine.api`).

    ``route(sim, tables, r, ip, pk) -> (port, vc)`` runs at every router when packet ``pk``
    reaches the head of its input queue on port ``ip`` of router ``r`` (not its destination
    router: the loop ejects packets itself); ``inject(sim, tables, node, pk)`` runs when the
    NIC of ``node`` sends ``pk`` (decisions at the source, e.g. an intermediate router in a
    routing field).  Both are numba ``@njit`` functions defined at module level.  ``tables``
    is any tuple of NumPy arrays and numbers, built once per run in ordinary Python.

    ``vc_plan`` declares every move ``route`` may make, for the deadlock proof before the run
    (:mod:`federation.network.deadlock`): a :class:`TablePlan` (the route tables' paths with
    their VC rule, plus declared liberties: Valiant phases, where minimal or Valiant is
    decided, equal-cost ports, VC levels added) or a :class:`ClassPlan` (transitions between
    (link class, VC) pairs).  The proof is about the plan, not the code: a routing that
    leaves its plan is not caught.  Without a plan the run is refused unless
    ``--no-deadlock-check``.
    """

    route: Any
    tables: tuple
    vcs_required: int
    description: str = ""
    inject: Any = None  #: default: decide nothing at the NIC
    #: bound of the routing's ``intermediates`` (checked before the run); ``None``: the
    #: tables' group count
    via_limit: int | None = None
    #: the moves ``route`` may make (see above); ``None``: undeclared, cannot be proved
    vc_plan: TablePlan | ClassPlan | None = None


class Routing(Component):
    """Chooses output port and VC per hop.

    Two ways to write one.  The table contract: :meth:`tables` returns :class:`RouteTables`
    (hierarchical next-hop tables and a VC rule) and :meth:`intermediates` draws per-packet
    random choices with the run's seeded generator; the engine's built-in table routing
    follows them.  The compiled contract: :meth:`program` returns a :class:`RoutingProgram`
    whose ``route`` function the engine calls at every hop, with the router's credits and
    queues in view; :meth:`tables` then still supplies the minimal tables the checks and
    summaries use (the default: the topology's).
    """

    def tables(self, network: Network, topology: Topology, machine: Machine) -> RouteTables:
        raise NotImplementedError

    def program(self, network: Network, topology: Topology, machine: Machine,
                tables: RouteTables) -> RoutingProgram | None:
        """A compiled per-hop routing, or ``None`` (the default) to follow :meth:`tables`."""
        return None

    @classmethod
    def modes(cls) -> list[str]:
        """Names of the routing's modes, in the order a packet's mode (``pkt_mode``, a
        message's per-message routing mode) numbers them; ``[]``: the routing has no modes
        and ignores a packet's."""
        return []

    def intermediates(self, tables: RouteTables, src_router: np.ndarray, dst_router: np.ndarray,
                      rng: np.random.Generator) -> np.ndarray:
        """Per-packet intermediate group, -1 for none.  Minimal routings return all -1."""
        return np.full(src_router.shape[0], -1, dtype=np.int32)

    def intermediate_rule(self, tables: RouteTables) -> str:
        """What :meth:`intermediates` draws, for packets born inside the compiled loop (rank
        programs), where Python cannot run: ``"none"`` (all -1), ``"group"`` (a uniform group
        other than the source's and destination's) or ``"router"`` (a uniform router of such
        a group).  A routing that overrides :meth:`intermediates` must override this too, or
        rank programs are refused with it (the engine will not route them without)."""
        return "none"


# --------------------------------------------------------------------------- arbitration


class Arbiter(Component):
    """Chooses which waiting packet an idle output port sends next (see
    :mod:`federation.engine.arbiters` for the compiled function's contract)."""

    #: ``arbitrate(sim, state, o) -> (qi, prev)``, a module-level numba ``@njit`` function
    function: ClassVar[Any] = None

    def state(self, network: Network, n_vcs: int) -> tuple:
        """The arbiter's own arrays, built once per run (default: none)."""
        return (np.zeros(1, dtype=np.int64),)


# --------------------------------------------------------------------------- controllers


class Controller(Component):
    """Chooses each rank-program message's routing mode as the message is sent, inside the
    engine's loop (``routing_controller:`` of an experiment): an application-aware routing
    library such as the one of De Sensi et al. (SC'19), which intercepts each send and picks
    its mode from the NIC counters.

    ``function`` is ``decide(sim, state, node, size, mode) -> mode``, a module-level numba
    ``@njit`` function the loop calls once per message, when the send hands it to the NIC of
    ``node``: ``size`` is its bytes, ``mode`` the mode it carries (its own, its collective's,
    its job's; -1: the routing's configured one), and the answer is the mode it is sent with
    (an index of the routing's :meth:`Routing.modes`, or -1).  It may read the NIC counters
    (``federation.engine.api.nic_counter``) and the clock (``sim.sc[S_NOW]``), and keeps what
    it learns in ``state``, its own arrays (:meth:`state`).  An answer outside the routing's
    modes is refused by the loop's routing like any bad mode: return only indices of
    ``modes``."""

    #: ``decide(sim, state, node, size, mode) -> mode``, a module-level numba ``@njit`` function
    function: ClassVar[Any] = None

    def check(self, modes: list[str]) -> None:
        """Refuse (``ValueError`` with the reason; the caller names the field) a routing whose
        modes (``modes``) this controller cannot use.  Default: it needs at least one."""
        if not modes:
            raise ValueError("the routing has no modes to choose from")

    def state(self, n_nodes: int, modes: list[str], packet_size: int) -> tuple:
        """The controller's own arrays, built once per run (default: none).  ``modes`` are
        the routing's, ``packet_size`` the machine's bytes per packet."""
        return (np.zeros(1, dtype=np.int64),)


# --------------------------------------------------------------------------- QoS


class QosPolicy(Component):
    """Maps traffic to classes and VCs.  The foundation ships only ``none`` (one class)."""

    def traffic_class(self, messages: Messages) -> np.ndarray:
        """The class of each message (int16, ``0 .. n_classes() - 1``); packets inherit it.
        ``strict_priority`` arbitration serves class 0 first, and the ports table counts bytes
        per class when there are several."""
        return np.zeros(messages.count, dtype=np.int16)

    def class_names(self) -> list[str]:
        """The traffic classes by name; a class's number is its index (0: served first by
        priority policies).  Jobs, operation kinds and workloads name classes from this list."""
        return ["default"]

    def n_classes(self) -> int:
        return len(self.class_names())

    def port_problem(self, links: dict[str, float], nic_bandwidth: float,
                     packet_size: int) -> tuple[str, str] | None:
        """Why this policy's parameters cannot work on ports of these figures, as ``(its
        field, the reason)`` (``"window"``: refused as ``machine.qos.window``), or ``None``.

        ``links``: each link class's bandwidth (B/s), the classes of the built network (a
        router's output ports); ``nic_bandwidth``: the NICs' ports.  Checked before the run,
        by ``validate`` (a machine file alone too) as by ``run``, because a parameter that is
        in range on its own can still make the policy do nothing on some machines
        (``bandwidth_caps``: a window whose caps hold less than a packet)."""
        return None


# --------------------------------------------------------------------------- workload


@dataclass
class Messages:
    """Messages to inject, sorted by creation time (picoseconds)."""

    time_ps: np.ndarray  # int64
    src: np.ndarray  # int32 node
    dst: np.ndarray  # int32 node
    size: np.ndarray  # int64 bytes
    #: traffic class of each message (int16; -1: the QoS policy's ``traffic_class``), when a
    #: workload or the message's job gives one; ``None``: none given
    cls: np.ndarray | None = None

    @property
    def count(self) -> int:
        return int(self.time_ps.shape[0])

    def sorted(self) -> Messages:
        """In creation order, ties by source node; stable (messages of one time and source
        keep their order).  One int64 key ``time * (max src + 1) + src`` sorted by timsort
        when it fits (it merges the sorted runs of joined batches, e.g. two jobs', in linear
        time: 5x faster than ``lexsort``), else ``lexsort``; the same order either way."""
        t, s = self.time_ps, self.src
        o = None
        if t.size > 1:
            t_min, t_max, s_min, s_max = int(t.min()), int(t.max()), int(s.min()), int(s.max())
            if t_min >= 0 and s_min >= 0 and t_max < ((1 << 63) - 1 - s_max) // (s_max + 1):
                key = t.astype(np.int64) * (s_max + 1) + s.astype(np.int64)
                o = np.argsort(key, kind="stable")
        if o is None:
            o = np.lexsort((s, t))
        return Messages(t[o], s[o], self.dst[o], self.size[o],
                        self.cls[o] if self.cls is not None else None)


@dataclass(frozen=True)
class WorkloadContext:
    """What a workload may read to generate traffic."""

    network: Network
    machine: Machine
    experiment: Experiment
    horizon_ps: int  # generate messages created before this time
    nic_bandwidth: float  # bytes/s
    rng: np.random.Generator
    #: the machine node of each of the job's nodes (``network`` is then the job's view: the
    #: machine's routers and cables with the job's nodes only, node ``i`` = ``nodes[i]``);
    #: ``None``: the workload has the whole machine
    nodes: np.ndarray | None = None
    #: the whole machine when ``network`` is a job's view (``None``: ``network`` is it)
    machine_network: Network | None = None
    #: the job's name (``None``: the experiment's one workload)
    job: str | None = None
    #: ``machine.qos``'s class names (a workload's own per-message class names one of them)
    class_names: tuple[str, ...] = ("default",)

    @property
    def whole_network(self) -> Network:
        """The whole machine, whether or not the workload runs as a job."""
        return self.machine_network if self.machine_network is not None else self.network


class Workload(Component):
    """Generates the traffic of a run: open-loop messages (:meth:`generate`), or MPI-style
    rank programs that run closed-loop in the engine (:meth:`programs`, with
    ``closed_loop = True``)."""

    #: True: the workload gives rank programs (:meth:`programs`), not messages
    closed_loop: ClassVar[bool] = False

    def generate(self, ctx: WorkloadContext) -> Messages:
        raise NotImplementedError

    def batches(self, ctx: WorkloadContext,
                target_packets: int) -> Iterator[tuple[int, Messages]]:
        """Optional: the messages in time order, a batch at a time, for runs too long to hold
        whole.  Yield ``(end_ps, messages)``: the batch's messages sorted by creation time,
        all before ``end_ps``, and every later batch's at or after it; about
        ``target_packets`` packets per batch.  The engine draws a batch while it runs the one
        before it (it needs it by ``end_ps``), so memory follows two batches, not the run; a
        batch may be empty.  A workload
        that does not override this gives :meth:`generate` whole.  Called again, it must
        give the same batches (``ctx.rng`` is reset each time)."""
        raise NotImplementedError

    def programs(self, ctx: WorkloadContext) -> RankPrograms:
        """The rank programs of a closed-loop workload (see :mod:`federation.programs`).

        Called once per (workload, machine, seed): the preflight builds and checks the
        programs of every point before any runs, and keeps them for the run
        (:mod:`federation.pipeline.rank_programs`), so they may depend on nothing else;
        ``ctx.horizon_ps`` is meaningless here (a program runs until
        it finishes).  Rank i runs on node i unless ``RankPrograms.rank_node`` says otherwise.
        """
        raise NotImplementedError

    def offered_load(self) -> float | None:
        """Offered load as a fraction of NIC bandwidth, when the workload defines one."""
        return None

    def message_times(self, ctx: WorkloadContext) -> np.ndarray | None:
        """Optional: the creation times (int64 ps from the job's start) of the messages
        :meth:`generate` would return, when they are known without generating anything
        (the ``messages`` workload's list in the file); ``None``, the default, when only
        generating tells.  The preflight refuses with them, in ``validate`` as in ``run``, a
        measurement window none of them falls in and a ``stop.messages`` they do not reach,
        which the run would otherwise find only once the machine is built and the messages
        generated.  A workload that streams (:meth:`batches`, the ``synthetic`` workload)
        needs no times for that: with ``stop.measure`` the preflight draws its batches from
        the point's seed as the run draws them
        (:func:`federation.pipeline.messages.window_draw`, the run's own check), so its empty
        window is refused by ``validate`` too.  Only a workload generated whole that gives no
        times (``None``) leaves the check to the run."""
        return None

    def check(self, ctx: WorkloadContext) -> None:
        """Optional: refuse, before any point runs, what this open-loop workload cannot do on
        ``ctx.network`` (a job's nodes, or the whole machine), raising a
        :class:`~federation.errors.ConfigError` whose path starts with ``workload.``.  The
        preflight calls it for every open-loop workload (``federation validate`` too), with
        ``ctx.horizon_ps`` the horizon over which the run will generate the messages whole
        (:meth:`generate`: ``stop.messages``, a background beside rank programs, a workload
        without :meth:`batches`), or 1 when it streams them, so that what :meth:`generate`
        would refuse of that horizon can be refused here; the default checks nothing."""


# --------------------------------------------------------------------------- engine


class Engine(Component):
    """Runs a prepared experiment point and returns raw results (see
    :mod:`federation.pipeline.run`)."""

    #: how to install what the engine drives, for messages when :meth:`found` is false
    install_hint: ClassVar[str | None] = None

    #: True when the engine can run here (library importable, program on PATH).
    @classmethod
    def found(cls) -> bool:
        return True

    def check(self, point: Any, built: Any) -> None:
        """Refuse, before any point runs, what this engine cannot represent.

        Called by :func:`federation.pipeline.point.preflight` for every point with its
        :class:`~federation.pipeline.load.ResolvedPoint` and
        :class:`~federation.pipeline.points.Built` (network, link figures, route tables).  Raise a
        :class:`~federation.errors.ConfigError` naming the file and field (e.g. an external
        engine without a QoS model refusing ``qos``), so a sweep never stops half-way on
        something visible at the start.  The native engine represents everything: no check.
        """

    def program(self) -> str | None:
        """The external program or library this engine drives and its version (e.g.
        ``'SimGrid 3.32.0'``), recorded in ``results.json``; ``None`` for in-process engines."""
        return None

    def run(self, job: Any, progress: Any = None) -> Any:
        """Run ``job``; call ``progress(done, total)`` now and then if it is given."""
        raise NotImplementedError

    def run_point(self, index: int, point: Any, built: Any, placed: Any,
                  folder: Any) -> EnginePoint | None:
        """Optional: run a whole point the engine's own way, for an engine whose output is
        not the native engine's per-packet arrays (SST reports window statistics).  Return
        an :class:`EnginePoint` (its summary, with ``null`` for what the engine does not
        report, its tables and the files it kept in ``folder``, the run's output folder or
        ``None``), or ``None`` (the default) to have the runner prepare the traffic, call
        :meth:`run` and summarise its result.  ``placed``: the point's jobs on their
        nodes."""
        return None


@dataclass
class EnginePoint:
    """What :meth:`Engine.run_point` reports of a point it ran itself."""

    summary: Any  #: a :class:`~federation.results.model.PointSummary`
    tables: dict[str, Any] = field(default_factory=dict)  #: written as ``<name>-<index>``
    files: dict[str, str] = field(default_factory=dict)  #: kept in the folder, by role
    routing_description: str = ""
    wall_seconds: float = 0.0
