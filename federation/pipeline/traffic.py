"""Stage *traffic*: a built point's messages or rank programs as the one description an engine
runs (:class:`~federation.engine.native.NativeRun`), with every check that needs the traffic.

Open-loop messages come from :mod:`.messages` (generated whole or streamed in batches; the
engine packetizes them and draws the routing's choices itself, :mod:`federation.engine.traffic`);
a closed-loop point's rank programs come built and checked from :mod:`.rank_programs`.  One
``np.random.SeedSequence(seed)`` is split into a traffic and a routing generator, so the same
experiment and seed give the same packets whichever engine asks.

May import: :mod:`.points`, :mod:`.bounds`, the other traffic modules (:mod:`.messages`,
:mod:`.rank_programs`) and the layers below the pipeline.  Never another stage.
"""

from __future__ import annotations

import numpy as np

from federation.engine.native import NativeRun
from federation.engine.program_arrays import ProgramTraffic, build_traffic
from federation.engine.traffic import OpenTraffic
from federation.errors import ConfigError
from federation.models.limits import CLOCK_LIMIT, TIME_LIMIT_PS
from federation.models.units import seconds_to_ps
from federation.pipeline.bounds import PER_ROW, MemoryEstimate, check_memory, packets_memory
from federation.pipeline.messages import (
    Batches,
    check_messages,
    check_traffic,
    generate_n_messages,
    streamed,
    streams,
    whole_batches,
    workload_context,
)
from federation.pipeline.points import Built, PreparedPoint, ResolvedPoint
from federation.pipeline.rank_programs import PROGRAM_BYTES_PER_OP, program_figures
from federation.plugin.components import Messages
from federation.programs.model import RankPrograms


def prepare_traffic(point: ResolvedPoint, built: Built, max_memory: int,
                    programs: RankPrograms | None = None) -> PreparedPoint:
    """The point's traffic on its built machine: open-loop messages, or (a closed-loop
    workload) ``programs``, its rank programs as built and checked by
    :func:`~federation.pipeline.rank_programs.build_programs`."""
    exp = point.experiment
    net = built.network
    seeds = np.random.SeedSequence(exp.seed)
    rng_traffic, rng_route = (np.random.default_rng(s) for s in seeds.spawn(2))
    warm = seconds_to_ps(exp.stop.warmup)
    if point.workload.closed_loop:
        if programs is None:
            raise ValueError("a closed-loop point's traffic needs its rank programs")
        return _prepare_programs(point, built, max_memory, rng_route, programs)
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
    return PreparedPoint(point, net, job, window, built)


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
                      rng_route: np.random.Generator, progs: RankPrograms) -> PreparedPoint:
    """A closed-loop point: the workload's rank programs, checked
    (:func:`~federation.pipeline.rank_programs.build_programs`), and their packets (known
    before the run; only their times are not).  The run lasts until the programs finish, so its
    window is the whole run.  The programs draw from the run's traffic stream (child 0 of the
    seed's sequence), as :func:`~federation.pipeline.rank_programs.build_programs` gives it."""
    machine = point.machine.machine
    net = built.network
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
    return PreparedPoint(point, net, job, None, built)


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
