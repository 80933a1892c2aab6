"""Resolved point -> everything an engine needs: network, link figures, route tables, packets.

Split in two, because a sweep usually runs many points on one machine:

* :func:`build` makes the network, its link figures and the routing's tables for one
  (machine, routing) pair, after the checks that need no allocation (clock range, the memory
  the topology's counts imply; :mod:`federation.pipeline.preflight`).  :class:`BuildCache` keeps the last
  one, so a sweep over loads builds the machine once.
* :func:`prepare` generates the point's traffic with the run's seeded generator, refuses a
  point that would generate no measured packet or too many to hold, packetizes it and draws the
  routing's per-packet choices.

:func:`preflight` runs the build checks (including the routing's VC needs) and, for rank
programs, builds and checks the programs (:mod:`federation.pipeline.rank_programs`) for *every* point
of an experiment before the first point is simulated, so a sweep never dies half-way on an
input error that could have been seen at the start.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from federation.pipeline.preflight import (
    PER_ROW,
    MemoryEstimate,
    check_clock,
    check_machine_memory,
    check_memory,
    check_network_memory,
    figure_origin,
    link_figure,
    machine_prefix,
    packets_memory,
)
from federation.plugin.components import (
    Messages,
    RouteTables,
    RoutingProgram,
)
from federation.engine.native import LinkFigures, NativeRun, check_vcs
from federation.engine.program_arrays import ProgramTraffic, build_traffic
from federation.pipeline.tables_check import check_point_tables
from federation.engine.traffic import OpenTraffic
from federation.errors import ConfigError, FederationError, RoutingError, located
from federation.models.limits import CLOCK_LIMIT, TIME_LIMIT_PS
from federation.pipeline.load import LoadedExperiment, ResolvedPoint
from federation.pipeline.messages import (
    Batches,
    check_messages,
    check_traffic,
    generate_n_messages,
    no_messages,
    streamed,
    streams,
    whole_batches,
    workload_context,
)
from federation.models.machine import Machine
from federation.network import Network
from federation.pipeline.rank_programs import PROGRAM_BYTES_PER_OP, ProgramCache, program_figures
from federation.models.units import seconds_to_ps


@dataclass
class PreparedPoint:
    point: ResolvedPoint
    network: Network
    job: NativeRun
    #: measurement window [start, end) in ps; ``None``: the whole run (rank programs)
    window: tuple[int, int] | None

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


@dataclass
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


def resolve_links(machine: Machine, topology: Any, network: Network, source: str,
                  prefix: str = "") -> dict[str, LinkFigures]:
    """Per link class: machine file value, else the topology's default, else the global one."""
    out = {}
    for cls in network.link_classes:
        fig = LinkFigures(*(link_figure(machine, topology, cls, a)[0]
                            for a in ("bandwidth", "latency", "buffer")))
        if fig.buffer < machine.packet_size:
            raise ConfigError(
                f"buffer of link class {cls!r} ({fig.buffer:g} B) is smaller than packet_size "
                f"({machine.packet_size:g} B)", source=source, path=f"{prefix}links.{cls}.buffer")
        out[cls] = fig
    for name in machine.links:
        if name not in network.link_classes:
            raise ConfigError(
                f"the network has no link class {name!r} (it has: "
                f"{', '.join(network.link_classes)})", source=source, path=f"{prefix}links.{name}")
    return out


def build_network(point: ResolvedPoint) -> Network:
    net = point.machine.topology.build()
    net.validate()
    return net


def build_key(point: ResolvedPoint) -> str:
    """What the network and tables depend on: the machine and the routing, nothing else."""
    return json.dumps([point.machine.machine.model_dump(mode="json"),
                       point.experiment.routing.model_dump(mode="json")], sort_keys=True)


def build(point: ResolvedPoint, max_memory: int) -> Built:
    """Check, then build the network, link figures and route tables of ``point``."""
    machine = point.machine.machine
    msrc = point.machine.source
    prefix = machine_prefix(point)
    check_clock(point)
    est = check_machine_memory(point.machine, max_memory, prefix)
    net = build_network(point)
    if est is None:  # the topology could not tell before building: check what it built
        est = check_network_memory(net, machine.router.vcs, max_memory, msrc, f"{prefix}topology")
    check_clock(point, net)
    links = resolve_links(machine, point.machine.topology, net, msrc, prefix)
    nic_bw = float(machine.nic.bandwidth or links["terminal"].bandwidth)
    tables = point.routing.tables(net, point.machine.topology, machine)
    check_point_tables(point, net, tables)
    owner = component_owner(point)
    try:
        program = point.routing.program(net, point.machine.topology, machine, tables)
    except RoutingError as exc:  # the routing cannot serve this machine with these options
        raise ConfigError(str(exc), source=point.source, path="routing") from None
    try:
        check_vcs(tables, machine.router.vcs, point.routing.name)
        if program is not None:
            check_program(program, machine.router.vcs, owner)
    except RoutingError as exc:
        o = figure_origin(point, "router.vcs")
        raise ConfigError(str(exc), source=o.source, path=o.path) from None
    return Built(build_key(point), net, links, nic_bw, tables, est, program, owner)


def component_owner(point: ResolvedPoint) -> str:
    """``routing 'x' (plugin p) with arbiter 'y' (plugin q)``: who messages about compiled
    routing or arbitration code blame."""
    from federation.plugin.registry import get_plugins

    plugins = get_plugins()
    r, a = point.routing.name, point.machine.arbiter.name
    rp = plugins.routings.items[r].plugin if r in plugins.routings.items else "?"
    ap = plugins.arbiters.items[a].plugin if a in plugins.arbiters.items else "?"
    return f"routing {r!r} (plugin {rp}) with arbiter {a!r} (plugin {ap})"


def check_program(program: RoutingProgram, n_vcs: int, owner: str) -> None:
    """A compiled routing's declared VC count against ``router.vcs``."""
    if program.vcs_required > n_vcs:
        raise RoutingError(
            f"{owner} needs {program.vcs_required} virtual channels "
            f"({program.description or 'its declared vcs_required'}) but the machine has "
            f"router.vcs = {n_vcs}; set router.vcs: {program.vcs_required} or more")


class BuildCache:
    """Keeps the last :class:`Built` (a sweep over loads reuses one machine), and the rank
    programs the preflight built (:class:`~federation.pipeline.rank_programs.ProgramCache`)."""

    def __init__(self, max_memory: int) -> None:
        self.max_memory = max_memory
        self._last: Built | None = None
        self.programs = ProgramCache(max_memory)

    def get(self, point: ResolvedPoint) -> Built:
        key = build_key(point)
        if self._last is None or self._last.key != key:
            self._last = None  # free the previous machine before building the next
            self._last = build(point, self.max_memory)
        return self._last


def preflight(loaded: LoadedExperiment, max_memory: int) -> BuildCache:
    """Every check that needs no traffic, for every point, before any point runs: the
    machine's build checks, the engine's own (:meth:`federation.plugin.components.Engine.check`:
    what an external engine cannot represent), and a closed-loop point's rank programs, built
    and checked against its machine and the clock (kept for the run)."""
    cache = BuildCache(max_memory)
    for i, point in enumerate(loaded.points):
        try:
            built = cache.get(point)
            point.engine.check(point, built)
            if point.workload.closed_loop:
                cache.programs.check(point, built)
        except FederationError as exc:
            raise _in_point(exc, point, i, len(loaded.points)) from None
    return cache


def _in_point(exc: FederationError, point: ResolvedPoint, i: int, n: int) -> FederationError:
    """Say which sweep point an error belongs to when there are several."""
    if n == 1 or not point.sweep:
        return located(exc, point.source) if isinstance(exc, ConfigError) else exc
    label = ", ".join(f"{k}={v}" for k, v in point.sweep.items())
    if isinstance(exc, ConfigError):
        exc = located(exc, point.source)
        return ConfigError(f"{exc.message} (sweep point {i}: {label})", source=exc.source,
                           path=exc.path)
    return type(exc)(f"{exc} (sweep point {i}: {label})")


# --------------------------------------------------------------------------- traffic


def prepare(point: ResolvedPoint, cache: BuildCache | None = None,
            max_memory: int | None = None) -> PreparedPoint:
    """Build (or reuse) the machine and generate the point's traffic."""
    from federation.pipeline.preflight import default_max_memory

    limit = max_memory or (cache.max_memory if cache else default_max_memory())
    try:
        cache = cache or BuildCache(limit)
        return _prepare(point, cache.get(point), limit, cache)
    except ConfigError as exc:
        raise located(exc, point.source) from None


def _prepare(point: ResolvedPoint, built: Built, max_memory: int,
             cache: BuildCache) -> PreparedPoint:
    exp = point.experiment
    net = built.network
    seeds = np.random.SeedSequence(exp.seed)
    rng_traffic, rng_route = (np.random.default_rng(s) for s in seeds.spawn(2))
    warm = seconds_to_ps(exp.stop.warmup)
    if point.workload.closed_loop:
        return _prepare_programs(point, built, max_memory, rng_route, cache)
    outputs = exp.outputs
    kept = bool(outputs.packets or outputs.messages)
    packet = int(point.machine.machine.packet_size)
    if exp.stop.measure is not None and streams(point.workload):
        horizon = warm + seconds_to_ps(exp.stop.measure)
        window = (warm, horizon)
        batches, expected = streamed(point, built, horizon, window, rng_traffic, max_memory,
                                      kept)
    else:
        if exp.stop.measure is not None:
            horizon = warm + seconds_to_ps(exp.stop.measure)
            msgs = point.workload.generate(workload_context(point, net, horizon,
                                                            built.nic_bandwidth, rng_traffic))
            window = (warm, horizon)
        else:
            msgs, window = generate_n_messages(point, net, built.nic_bandwidth, warm,
                                                exp.stop.messages or 0, rng_traffic)
        expected = check_traffic(point, built, msgs, window, max_memory, kept)
        batches = whole_batches(msgs, packet)
    traffic, n_classes = open_traffic(point, built, batches, expected, rng_route)
    job = _job(point, built, traffic, window, rng_route, n_classes,
               _max_rows(built, max_memory, packets_memory(expected, kept)))
    return PreparedPoint(point, net, job, window)


def open_traffic(point: ResolvedPoint, built: Built, batches: Batches, expected: int,
                 rng_route: np.random.Generator) -> tuple[OpenTraffic, int]:
    """Open-loop messages as the engine takes them (it packetizes them batch by batch and
    draws the routing's intermediates, then the injection VCs, from ``rng_route``:
    :mod:`federation.engine.traffic`), with each message's QoS class; also the class count."""
    machine = point.machine.machine
    qos = point.machine.qos
    n_classes = int(qos.n_classes())

    def classes(msgs: Messages) -> np.ndarray:
        mclass = np.asarray(qos.traffic_class(msgs))
        if mclass.shape != (msgs.count,) or (msgs.count and not 0 <= int(mclass.min())
                                             <= int(mclass.max()) < n_classes):
            raise ConfigError(f"QoS policy {qos.name!r} returned traffic classes outside 0.."
                              f"{n_classes - 1} or not one per message", source=point.source,
                              path="machine.qos")
        return mclass

    tables = built.tables

    def intermediates(src_r: np.ndarray, dst_r: np.ndarray,
                      rng: np.random.Generator) -> np.ndarray:
        return point.routing.intermediates(tables, src_r, dst_r, rng)

    def check(via: np.ndarray, count: int) -> None:
        check_intermediates(point, built, via, count)  # names the file and the routing

    return OpenTraffic(batches, classes, int(machine.packet_size), built.network.node_router,
                       intermediates, check, machine.router.injection_vc, machine.router.vcs,
                       rng_route, expected), n_classes


def _job(point: ResolvedPoint, built: Built, traffic: OpenTraffic | None,
         window: tuple[int, int] | None, rng_route: np.random.Generator, n_classes: int,
         max_rows: int, programs: ProgramTraffic | None = None) -> NativeRun:
    """The one description the engine gets: network, routing, arbiter, programs, traffic."""
    machine = point.machine.machine
    arbiter = point.machine.arbiter
    outputs = point.experiment.outputs
    return NativeRun(built.network, built.links, built.nic_bandwidth, machine.router.delay,
                     machine.router.vcs, built.tables, None, window,
                     cut_through=machine.router.switching == "cut_through",
                     program=built.program,
                     arbiter=(type(arbiter).function,
                              arbiter.state(built.network, machine.router.vcs)),
                     owner=built.owner, given_seed=None, n_classes=n_classes,
                     programs=programs, traffic=traffic, seed_rng=rng_route,
                     keep_packets=bool(outputs.packets or outputs.messages), max_rows=max_rows)


def _max_rows(built: Built, max_memory: int, other: int) -> int:
    """Packet rows a run may hold at once within ``max_memory`` (beyond the network, the
    tables and ``other`` bytes): the engine stops a saturated run that needs more."""
    spare = max_memory - built.memory.network - built.memory.tables - other
    return max(1 << 16, spare // PER_ROW)


def _prepare_programs(point: ResolvedPoint, built: Built, max_memory: int,
                      rng_route: np.random.Generator, cache: BuildCache) -> PreparedPoint:
    """A closed-loop point: the workload's rank programs, checked (by the preflight, or now:
    :class:`~federation.pipeline.rank_programs.ProgramCache`), and their packets (known before the
    run; only their times are not).  The run lasts until the programs finish, so its window
    is the whole run.  The programs draw from the run's traffic stream (child 0 of the
    seed's sequence), as :func:`~federation.pipeline.rank_programs.build_programs` gives it."""
    machine = point.machine.machine
    net = built.network
    progs = cache.programs.get(point, built)
    fig = program_figures(point, built)
    background = background_messages(point, built)
    packet = int(machine.packet_size)
    n_bg = int(((background.size + packet - 1) // packet).sum())
    outputs = point.experiment.outputs
    bg_memory = packets_memory(n_bg, bool(outputs.packets or outputs.messages))
    est = MemoryEstimate(built.memory.network, built.memory.tables,
                         PROGRAM_BYTES_PER_OP * progs.n_ops + bg_memory)
    what = f"{progs.n_ops} operations" + (f", {n_bg} background packets" if n_bg else "")
    check_memory(est, max_memory, f"this point ({what})", point.source,
                 "stop.measure" if bg_memory > PROGRAM_BYTES_PER_OP * progs.n_ops
                 else "workload")
    opened, n_classes = None, 1
    if point.background is not None:
        opened, n_classes = open_traffic(point, built, whole_batches(background, packet), n_bg,
                                         background_rngs(point)[1])
    traffic = build_traffic(progs, net.n_nodes, fig, built.tables.router_group)
    job = _job(point, built, opened, None, rng_route, n_classes,
               _max_rows(built, max_memory, est.packets), traffic)
    return PreparedPoint(point, net, job, None)


def background_rngs(point: ResolvedPoint) -> tuple[np.random.Generator, np.random.Generator]:
    """The background's traffic and routing streams: children 2 and 3 of the seed's sequence
    (children 0 and 1 are the run's traffic and routing streams, as without a background), so
    adding or changing a background leaves the programs' own draws (the loop's seed, a
    random workload's choices) exactly as they were."""
    seeds = np.random.SeedSequence(point.experiment.seed).spawn(4)
    return np.random.default_rng(seeds[2]), np.random.default_rng(seeds[3])


def background_messages(point: ResolvedPoint, built: Built) -> Messages:
    """The ``background`` workload's messages over ``[0, stop.warmup + stop.measure)``
    (no messages without a background).

    They are the open-loop packets of a rank-program run: the run ends when the programs
    finish, so whatever of them is still in flight then is left undelivered.  The loader
    already refused a background without ``stop.measure``; it is checked again here for
    points built by hand.  Errors a workload raises about its own fields (``workload.x``)
    are reported at ``background.x``, where the user wrote them."""
    empty = Messages(np.zeros(0, np.int64), np.zeros(0, np.int32), np.zeros(0, np.int32),
                     np.zeros(0, np.int64))
    bg = point.background
    if bg is None:
        return empty
    stop = point.experiment.stop
    if stop.measure is None:
        raise ConfigError("background traffic needs a horizon: give stop.measure (it is "
                          "generated over stop.warmup + stop.measure)", source=point.source,
                          path="stop.measure")
    horizon = seconds_to_ps(stop.warmup) + seconds_to_ps(stop.measure)
    if horizon >= TIME_LIMIT_PS:
        raise ConfigError(f"stop.warmup + stop.measure reach past {CLOCK_LIMIT}",
                          source=point.source, path="stop.measure")
    rng = background_rngs(point)[0]
    try:
        msgs = bg.generate(workload_context(point, built.network, horizon,
                                            built.nic_bandwidth, rng))
        check_messages(point, built.network.n_nodes, msgs, bg)
    except ConfigError as exc:
        raise as_background(exc) from None
    return msgs


def as_background(exc: ConfigError) -> ConfigError:
    """``exc`` with a ``workload`` field path moved to ``background``."""
    path = exc.path or ""
    if path != "workload" and not path.startswith("workload."):
        return exc
    return ConfigError(exc.message, source=exc.source,
                       path="background" + path[len("workload"):])


def intermediate_rule(point: ResolvedPoint, built: Built) -> str:
    """How program packets get their intermediates: they are born inside the loop, where a
    routing's Python ``intermediates`` cannot run, so the loop draws by the routing's
    ``intermediate_rule``.  A routing that overrides ``intermediates`` without saying its
    rule (defined in the same class or below) is refused, naming it, rather than run
    without its intermediates."""
    routing = point.routing
    mro = type(routing).__mro__
    draws = next(c for c in mro if "intermediates" in c.__dict__)
    says = next(c for c in mro if "intermediate_rule" in c.__dict__)
    rule = routing.intermediate_rule(built.tables) if issubclass(says, draws) else None
    if rule in ("none", "group", "router"):
        return rule
    raise ConfigError(
        f"{built.owner or f'routing {routing.name!r}'}: the routing draws its packets' "
        "intermediates in Python (Routing.intermediates) with no intermediate_rule for "
        "packets born inside the compiled loop, as rank programs' are: give the rule, or "
        "draw them in the routing program's inject function (docs/plugins.md)",
        source=point.source, path="routing")


def check_intermediates(point: ResolvedPoint, built: Built, via: np.ndarray,
                        n_packets: int) -> None:
    """The routing's per-packet intermediates: one per packet, each -1 or one of its groups
    (the table routing indexes ``gnext`` by it without bounds checks), or of the bound its
    compiled program declares (``RoutingProgram.via_limit``, e.g. routers)."""
    program = built.program
    groups = (program.via_limit if program is not None and program.via_limit is not None
              else built.tables.gnext.shape[1])
    via = np.asarray(via)
    if via.shape != (n_packets,):
        raise ConfigError(f"routing {point.routing.name!r}: intermediates returned "
                          f"{via.shape} values for {n_packets} packets", source=point.source,
                          path="routing")
    bad = np.nonzero((via < -1) | (via >= groups))[0] if n_packets else []
    if len(bad):
        raise ConfigError(f"routing {point.routing.name!r}: intermediates gave packet "
                          f"{int(bad[0])} intermediate {int(via[bad[0]])}, outside 0 to "
                          f"{groups - 1} (-1: none)", source=point.source, path="routing")
















