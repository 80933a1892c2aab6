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

from dataclasses import replace
from typing import Any

import numpy as np

from federation.engine.native import NativeRun
from federation.engine.program_arrays import ProgramTraffic, build_traffic
from federation.engine.traffic import OpenTraffic
from federation.errors import ConfigError
from federation.models.limits import CLOCK_LIMIT, TIME_LIMIT_PS
from federation.models.units import PS_PER_S, format_time, seconds_to_ps
from federation.pipeline.bounds import PER_ROW, MemoryEstimate, packets_memory
from federation.pipeline.messages import (
    Batches,
    WindowJob,
    check_given_window,
    check_messages,
    check_traffic,
    check_window,
    class_names,
    generate_n_messages,
    job_class,
    join,
    merged_batches,
    on_machine,
    relocate,
    streamed,
    streams,
    whole_batches,
    whole_horizon,
    window_draw,
    workload_context,
)
from federation.pipeline.points import (
    Built,
    JobLayout,
    Placed,
    PreparedPoint,
    ResolvedJob,
    ResolvedPoint,
    everywhere,
    job_traffic_stream,
    known_length_ps,
    no_messages,
    point_jobs,
)
from federation.pipeline.rank_programs import (
    PROGRAM_BYTES_PER_OP,
    check_programs_memory,
    job_nodes,
    program_figures,
)
from federation.pipeline.routing_modes import controller_state, with_modes
from federation.pipeline.traffic_memory import (
    check_packets_memory,
    expected_packets,
    listed_packets,
    stop_field,
)
from federation.plugin.components import Engine, Messages
from federation.programs.model import SEND, RankPrograms, joined_modes, with_jobs


def prepare_traffic(point: ResolvedPoint, built: Built, max_memory: int,
                    programs: dict[int, RankPrograms] | RankPrograms | None = None,
                    placed: Placed | None = None) -> PreparedPoint:
    """The point's traffic on its built machine, its jobs on their nodes (``placed``, the
    *jobs* stage's value; default: every job on every node, the old form): the closed-loop
    jobs' rank programs (``programs``, by job, as built and checked by
    :func:`~federation.pipeline.rank_programs.build_programs`) merged onto the machine's
    ranks and nodes, beside the open-loop jobs' messages; or, without closed-loop jobs, the
    open-loop jobs' messages merged into one stream."""
    exp = point.experiment
    net = built.network
    jobs = point_jobs(point)
    placed = placed or everywhere(point, net.n_nodes)
    closed = [j for j in jobs if j.closed_loop]
    if isinstance(programs, RankPrograms):  # the one-workload form's call
        programs = {closed[0].index: programs} if closed else {}
    seeds = np.random.SeedSequence(exp.seed)
    rng_traffic, rng_route = (np.random.default_rng(s) for s in seeds.spawn(2))
    if closed:
        if programs is None or any(j.index not in programs for j in closed):
            raise ValueError("a closed-loop point's traffic needs its rank programs")
        by_index = {j.index: j for j in closed}
        merged, layout = merge_programs(placed, {i: with_modes(point, by_index[i], p)
                                                 for i, p in programs.items()})
        return _prepare_programs(point, built, max_memory, rng_route, merged, placed, layout,
                                 programs)
    if len(jobs) > 1:
        return _prepare_open_jobs(point, built, max_memory, rng_route, placed)
    job = jobs[0]
    nodes = job_nodes(placed, job)
    m = net.n_nodes if nodes is None else int(nodes.shape[0])
    warm = seconds_to_ps(exp.stop.warmup)
    outputs = exp.outputs
    kept = bool(outputs.packets or outputs.messages)
    packet = int(point.machine.machine.packet_size)
    if exp.stop.measure is not None and streams(job.workload):
        horizon = warm + seconds_to_ps(exp.stop.measure)
        window = (warm, horizon)
        batches, expected = streamed(point, built, horizon, window, rng_traffic, max_memory,
                                      kept, job, nodes)
        whole = 0  # drawn a chunk at a time: no message is held beyond its chunk
    else:
        if exp.stop.measure is not None:
            horizon = warm + seconds_to_ps(exp.stop.measure)
            msgs = _generated(point, built, job, nodes, horizon, rng_traffic)
            window = (warm, horizon)
        else:
            start = job.start_ps  # the job's messages are in its own time, from its start
            try:
                msgs, (_, end) = generate_n_messages(
                    point, net, built.nic_bandwidth, max(0, warm - start),
                    exp.stop.messages or 0, rng_traffic, job, nodes)
                check_messages(point, m, msgs, job.workload)
            except ConfigError as exc:
                raise relocate(exc, point, job, m) from None
            window = (warm, start + end)  # on the machine's clock, as the messages
            msgs = on_machine(msgs, nodes, start, job_class(point, job))
        expected = check_traffic(point, built, msgs, window, max_memory, kept)
        batches = whole_batches(msgs, packet)
        whole = expected
    traffic, n_classes = open_traffic(point, built, batches, expected, rng_route)
    job_run = _job(point, built, traffic, window, rng_route, n_classes,
                   _max_rows(replace(built.memory, packets=packets_memory(expected, kept, whole)),
                             max_memory))
    return PreparedPoint(point, net, job_run, window, built, placed)


def _generated(point: ResolvedPoint, built: Built, job: ResolvedJob, nodes: np.ndarray | None,
               horizon: int, rng: np.random.Generator) -> Messages:
    """A job's messages generated whole before ``horizon`` (from its ``start``), checked on
    its nodes and put on the machine's."""
    m = built.network.n_nodes if nodes is None else int(nodes.shape[0])
    start = job.start_ps
    if start >= horizon:
        raise ConfigError(f"job {job.name!r} starts at {format_time(start / PS_PER_S)}, when "
                          "the open-loop traffic ends (stop.warmup + stop.measure); start it "
                          "earlier or lengthen stop.measure", source=point.source,
                          path=job.at("start"))
    try:
        msgs = job.workload.generate(workload_context(point, built.network, horizon - start,
                                                      built.nic_bandwidth, rng, job, nodes))
        check_messages(point, m, msgs, job.workload)
    except ConfigError as exc:
        raise relocate(exc, point, job, m) from None
    return on_machine(msgs, nodes, start, job_class(point, job))


def _prepare_open_jobs(point: ResolvedPoint, built: Built, max_memory: int,
                       rng_route: np.random.Generator, placed: Placed) -> PreparedPoint:
    """Several open-loop jobs: each job's messages from its own stream on its own nodes
    (streamed when its workload streams), merged into one time-ordered stream; the run
    measures ``[stop.warmup, stop.warmup + stop.measure)``."""
    exp = point.experiment
    warm = seconds_to_ps(exp.stop.warmup)
    horizon = warm + seconds_to_ps(exp.stop.measure or 0)
    window = (warm, horizon)
    if horizon >= TIME_LIMIT_PS:
        raise ConfigError(f"stop.warmup + stop.measure reach past {CLOCK_LIMIT}",
                          source=point.source, path=stop_field(point))
    kept = bool(exp.outputs.packets or exp.outputs.messages)
    packet = int(point.machine.machine.packet_size)
    parts: list[Batches] = []
    expected = whole = 0
    seen: list[WindowJob] = []  # what each job creates, for the window check
    for pj in placed.jobs:
        job, nodes = pj.job, job_nodes(placed, pj.job)
        rng = job_traffic_stream(point, job.index)
        if streams(job.workload):
            batches, n = streamed(point, built, horizon, window, rng, max_memory, kept, job,
                                  nodes, alone=False)
            m = int(pj.nodes.shape[0])
            seen.append((job, m, window_draw(point, built, window, job, m, batches)))
        else:
            msgs = _generated(point, built, job, nodes, horizon, rng)
            n = int(((msgs.size + packet - 1) // packet).sum())
            whole += n
            seen.append((job, int(pj.nodes.shape[0]), msgs.time_ps))
            batches = whole_batches(msgs, packet)
        parts.append(batches)
        expected += n
    check_window(point, built, window, seen)
    check_packets_memory(point, built, expected, max_memory, kept, whole=False)
    traffic, n_classes = open_traffic(point, built, merged_batches(parts), expected, rng_route)
    job_run = _job(point, built, traffic, window, rng_route, n_classes,
                   _max_rows(replace(built.memory, packets=packets_memory(expected, kept, whole)),
                             max_memory))
    return PreparedPoint(point, built.network, job_run, window, built, placed)


def _check_first_generation(point: ResolvedPoint, built: Built, placed: Placed,
                            max_memory: int) -> None:
    """``stop.messages``: the packets of the run's first generation (its first horizon, at
    the workload's offered load) against ``max_memory``, before it is made: validate
    accepted 1e7 messages under 100 MiB, and the run generated them all (846 MB) before its
    own check refused them."""
    pj = placed.jobs[0]
    m = int(pj.nodes.shape[0])
    horizon = whole_horizon(point, built, pj.job, m)
    if horizon is None:
        return
    n = expected_packets(point, built, horizon + pj.job.start_ps, pj.job, m)
    kept = bool(point.experiment.outputs.packets or point.experiment.outputs.messages)
    check_packets_memory(point, built, n, max_memory, kept, whole=True)


def check_given_traffic(point: ResolvedPoint, built: Built, placed: Placed,
                        max_memory: int) -> None:
    """The run's refusals of open-loop traffic before any point runs, in the run's order and
    words: a window that measures nothing or a ``stop.messages`` the messages do not reach
    (:func:`~federation.pipeline.messages.check_given_window`), and packets that do not fit
    ``max_memory`` beside the machine's estimate (its QoS rings included), held whole or kept
    for ``outputs.packets`` and ``outputs.messages``
    (:func:`~federation.pipeline.traffic_memory.check_packets_memory`) wherever their count
    is known without generating: a streamed job's expected count from its offered load over
    its horizon, the run's own
    (:func:`~federation.pipeline.traffic_memory.expected_packets`), and the messages a file
    lists (:func:`~federation.pipeline.traffic_memory.listed_packets`).  A job that only
    generating tells of (a workload generated whole, ``stop.messages``, a background beside
    rank programs), or an engine that draws its traffic its own way, leaves its packets to
    the run."""
    stop = point.experiment.stop
    jobs = point_jobs(point)
    own_draws = type(point.engine).run_point is not Engine.run_point
    closed = any(j.closed_loop for j in jobs)
    if stop.measure is None or own_draws or closed:
        check_given_window(point, built, placed)
        if not (own_draws or closed):  # stop.messages: what its first generation holds
            _check_first_generation(point, built, placed, max_memory)
        return
    kept = bool(point.experiment.outputs.packets or point.experiment.outputs.messages)
    horizon = seconds_to_ps(stop.warmup) + seconds_to_ps(stop.measure)
    packet = int(point.machine.machine.packet_size)
    counts: list[int | None] = []
    for pj in placed.jobs:
        if streams(pj.job.workload):
            n = expected_packets(point, built, horizon, pj.job, int(pj.nodes.shape[0]))
            if len(placed.jobs) > 1:  # the run checks each streamed job as it draws it
                check_packets_memory(point, built, n, max_memory, kept, whole=False)
            counts.append(n)
        else:
            counts.append(listed_packets(pj.job.workload, packet))
    check_given_window(point, built, placed)
    if any(n is None for n in counts):
        return
    whole = len(jobs) == 1 and not streams(jobs[0].workload)  # check_traffic's messages
    check_packets_memory(point, built, sum(n or 0 for n in counts), max_memory, kept,
                         whole=whole)


def open_traffic(point: ResolvedPoint, built: Built, batches: Batches, expected: int,
                 rng_route: np.random.Generator) -> tuple[OpenTraffic, int]:
    """Open-loop messages as the engine takes them (it packetizes them batch by batch and
    draws the routing's intermediates, then the injection VCs, from ``rng_route``:
    :mod:`federation.engine.traffic`), with each message's QoS class; also the class count."""
    machine = point.machine.machine
    qos = point.machine.qos
    n_classes = int(qos.n_classes())

    def classes(msgs: Messages) -> np.ndarray:
        """Each message's class: its own or its job's (``Messages.cls``), else the policy's;
        class 0 on a machine of one class, whatever the jobs name."""
        if n_classes <= 1:
            return np.zeros(msgs.count, dtype=np.int16)
        mclass = policy_classes(point, msgs)
        if msgs.cls is not None:
            mclass = np.where(msgs.cls >= 0, msgs.cls, mclass)
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
         max_rows: int, programs: ProgramTraffic | None = None,
         controller: Any = None) -> NativeRun:
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
                     keep_packets=bool(outputs.packets or outputs.messages),
                     keep_program_packets=bool(outputs.packets), max_rows=max_rows,
                     router=machine.router, controller=controller,
                     nic_flit=int(machine.nic.flit),
                     sample_ps=(seconds_to_ps(outputs.link_series.interval)
                                if outputs.link_series is not None else None),
                     sample_known_ps=known_length_ps(point))


def _max_rows(memory: MemoryEstimate, max_memory: int) -> int:
    """Packet rows a run may hold at once within ``max_memory`` beyond ``memory`` (the
    network, the tables, a sliding QoS window's rings and what else the point holds, as its
    ``packets``): the engine stops a saturated run that needs more."""
    spare = max_memory - memory.total
    return max(1 << 16, spare // PER_ROW)


def _prepare_programs(point: ResolvedPoint, built: Built, max_memory: int,
                      rng_route: np.random.Generator, progs: RankPrograms, placed: Placed,
                      layout: JobLayout, programs_by_job: dict[int, RankPrograms]
                      ) -> PreparedPoint:
    """A closed-loop point: the jobs' rank programs, checked
    (:func:`~federation.pipeline.rank_programs.build_programs`) and merged, and their packets
    (known before the run; only their times are not), beside the open-loop jobs' messages.
    The run lasts until the programs finish, so its window is the whole run.  The programs
    draw from the jobs' traffic streams (child 0 of the seed's sequence for the first), as
    :func:`~federation.pipeline.rank_programs.build_programs` gives them."""
    machine = point.machine.machine
    net = built.network
    fig = program_figures(point, built)
    background = open_messages(point, built, placed)
    packet = int(machine.packet_size)
    n_bg = int(((background.size + packet - 1) // packet).sum())
    outputs = point.experiment.outputs
    bg_memory = packets_memory(n_bg, bool(outputs.packets or outputs.messages))
    what = f"{progs.n_ops} operations" + (f", {n_bg} background packets" if n_bg else "")
    first = next(j for j in point_jobs(point) if j.closed_loop)
    est = check_programs_memory(point, built, progs, max_memory,
                                PROGRAM_BYTES_PER_OP * progs.n_ops + bg_memory,
                                f"this point ({what})",
                                "stop.measure" if bg_memory > PROGRAM_BYTES_PER_OP * progs.n_ops
                                else first.workload_field)
    opened, n_classes = None, int(point.machine.qos.n_classes())
    if any(not j.closed_loop for j in point_jobs(point)):
        opened, n_classes = open_traffic(point, built, whole_batches(background, packet), n_bg,
                                         background_rngs(point)[1])
    traffic = build_traffic(progs, net.n_nodes, fig, built.tables.router_group,
                            program_classes(point, progs, layout))
    control = controller_state(point, net.n_nodes, packet)
    if control is not None:  # the controller's arrays ride in the programs' state
        traffic.prog = traffic.prog._replace(ctl_on=np.int64(1), ctl=control[1])
    job = _job(point, built, opened, None, rng_route, n_classes, _max_rows(est, max_memory),
               traffic,
               control[0] if control is not None else None)
    return PreparedPoint(point, net, job, None, built, placed, layout, programs_by_job)


def policy_classes(point: ResolvedPoint, msgs: Messages) -> np.ndarray:
    """The QoS policy's ``traffic_class`` of ``msgs``, checked: one class per message, each
    one of the policy's (refused naming ``machine.qos`` otherwise)."""
    qos = point.machine.qos
    n_classes = int(qos.n_classes())
    mclass = np.asarray(qos.traffic_class(msgs))
    if mclass.shape != (msgs.count,) or (msgs.count and not 0 <= int(mclass.min())
                                         <= int(mclass.max()) < n_classes):
        raise ConfigError(f"QoS policy {qos.name!r} returned traffic classes outside 0.."
                          f"{n_classes - 1} or not one per message", source=point.source,
                          path="machine.qos")
    return mclass


def program_classes(point: ResolvedPoint, progs: RankPrograms,
                    layout: JobLayout) -> np.ndarray | None:
    """The traffic class of each message (send) of the merged programs ``progs``: its job's
    ``class``, or by ``class_by`` the class of collectives' sends and of the others
    (``RankPrograms.op_coll``), else the policy's ``traffic_class`` of the sends as messages
    (source and destination nodes, size; time 0: a closed loop's times are not known before
    the run); ``None`` (all class 0) on a machine of one class."""
    names = class_names(point)
    if len(names) <= 1:
        return None
    sends = progs.op_kind == SEND
    rank = progs.op_rank[sends]
    coll = progs.collective_sends()
    node = progs.nodes()
    n = int(sends.sum())
    out = policy_classes(point, Messages(
        np.zeros(n, dtype=np.int64), node[rank].astype(np.int32),
        node[progs.op_peer[sends]].astype(np.int32), progs.op_bytes[sends].astype(np.int64)
    )).astype(np.int64)
    for job in point_jobs(point):
        if job.index not in layout.ranks:
            continue
        r0, r1 = layout.ranks[job.index]
        mine = (rank >= r0) & (rank < r1)
        cls, by, _ = point.experiment.class_fields(job.field)
        if cls is not None:
            out[mine] = names.index(cls)
        elif by is not None:
            out[mine & coll] = names.index(by.collective)
            out[mine & ~coll] = names.index(by.point_to_point)
    return out


def background_rngs(point: ResolvedPoint) -> tuple[np.random.Generator, np.random.Generator]:
    """The background's traffic and routing streams: children 2 and 3 of the seed's sequence
    (children 0 and 1 are the run's traffic and routing streams, as without a background), so
    adding or changing a background leaves the programs' own draws (the loop's seed, a
    random workload's choices) exactly as they were."""
    seeds = np.random.SeedSequence(point.experiment.seed).spawn(4)
    return np.random.default_rng(seeds[2]), np.random.default_rng(seeds[3])


def background_messages(point: ResolvedPoint, built: Built) -> Messages:
    """The open-loop messages beside a closed-loop point's programs (see
    :func:`open_messages`), every job on every node."""
    return open_messages(point, built, everywhere(point, built.network.n_nodes))


def open_messages(point: ResolvedPoint, built: Built, placed: Placed) -> Messages:
    """The open-loop jobs' messages over ``[0, stop.warmup + stop.measure)`` beside a
    closed-loop point's programs (no messages without open-loop jobs), each job's from its
    own stream (the old form's ``background``: child 2 of the seed's sequence) on its nodes,
    merged in time order.

    They are the open-loop packets of a rank-program run: the run ends when the programs
    finish, so whatever of them is still in flight then is left undelivered.  Errors a
    workload raises about its own fields (``workload.x``) are reported where the user wrote
    them (``background.x``, ``jobs[1].workload.x``)."""
    jobs = [j for j in point_jobs(point) if not j.closed_loop]
    if not jobs:
        return no_messages()
    stop = point.experiment.stop
    if stop.measure is None:
        raise ConfigError("background traffic needs a horizon: give stop.measure (it is "
                          "generated over stop.warmup + stop.measure)", source=point.source,
                          path="stop.measure")
    horizon = seconds_to_ps(stop.warmup) + seconds_to_ps(stop.measure)
    if horizon >= TIME_LIMIT_PS:
        raise ConfigError(f"stop.warmup + stop.measure reach past {CLOCK_LIMIT}",
                          source=point.source, path="stop.measure")
    parts = [_generated(point, built, j, job_nodes(placed, j), horizon,
                        job_traffic_stream(point, j.index)) for j in jobs]
    return parts[0] if len(parts) == 1 else join(parts).sorted()


def merge_programs(placed: Placed, programs: dict[int, RankPrograms]
                   ) -> tuple[RankPrograms, JobLayout]:
    """The closed-loop jobs' programs as one set on the machine's nodes: ranks one job after
    the other (in job order), each rank on its job's node, and a job that starts later
    delayed by a compute of its ``start`` before each rank's first operations.  One job on
    every node, from 0, is passed as it is."""
    parts = [(pj, programs[pj.job.index]) for pj in placed.jobs if pj.job.index in programs]
    ranks: dict[int, tuple[int, int]] = {}
    if len(parts) == 1 and parts[0][0].whole and parts[0][0].job.start_ps == 0:
        pj, progs = parts[0]
        ranks[pj.job.index] = (0, progs.n_ranks)
        return progs, JobLayout(ranks, {})
    pieces = []
    delays: dict[int, int] = {}
    r0 = 0
    for pj, progs in parts:
        on = pj.nodes[progs.nodes()]
        if pj.job.start_ps:
            progs = delayed(progs, pj.job.start_ps)
            delays[pj.job.index] = pj.job.start_ps
        pieces.append((progs, on))
        ranks[pj.job.index] = (r0, r0 + progs.n_ranks)
        r0 += progs.n_ranks
    named = [(pj.job.name, progs) for pj, progs in parts]  # messages name the job and file
    return with_jobs(concatenated(pieces), named), JobLayout(ranks, delays)


def delayed(p: RankPrograms, start_ps: int) -> RankPrograms:
    """``p`` with each rank's first operations waiting for a compute of ``start_ps`` (its
    first operation, so rank ``r``'s operations move up by ``r + 1``)."""
    R, n = p.n_ranks, p.n_ops
    shift = np.arange(1, R + 1, dtype=np.int64)
    new_of = np.arange(n, dtype=np.int64) + shift[p.op_rank] if n else np.zeros(0, np.int64)
    delay_op = p.rank_first[:-1] + np.arange(R, dtype=np.int64)
    first = p.rank_first + np.arange(R + 1, dtype=np.int64)
    total = n + R

    def spread(col: np.ndarray, fill: int) -> np.ndarray:
        out = np.full(total, fill, dtype=col.dtype)
        out[new_of] = col
        return out

    kind = spread(p.op_kind, 2)  # COMPUTE
    time = spread(p.op_time_ps, 0)
    time[delay_op] = start_ps
    has_before = np.zeros(n, dtype=bool)
    has_before[p.dep_after] = True
    roots = np.nonzero(~has_before)[0]
    before = np.concatenate([new_of[p.dep_before], delay_op[p.op_rank[roots]]])
    after = np.concatenate([new_of[p.dep_after], new_of[roots]])
    dkind = np.concatenate([p.dep_kind, np.zeros(roots.shape[0], np.int8)])  # FINISH
    label = None
    if p.op_label is not None:
        label = [""] * total
        for i, x in zip(new_of.tolist(), p.op_label, strict=True):
            label[i] = x
    return RankPrograms(first, kind, spread(p.op_peer, -1), spread(p.op_bytes, 0),
                        spread(p.op_tag, 0), time, before, after, dkind, p.rank_node, label,
                        spread(p.op_line, 0) if p.op_line is not None else None, p.source,
                        dict(p.meta),
                        op_mode=spread(p.op_mode, -1) if p.op_mode is not None else None,
                        mode_names=p.mode_names, op_coll=spread(p.op_coll, 0),
                        rank_source=p.rank_source)


def concatenated(pieces: list[tuple[RankPrograms, np.ndarray]]) -> RankPrograms:
    """Several jobs' programs as one: ranks and operations numbered one job after the other,
    peers and dependencies shifted with them, rank ``i`` of each on the given machine node."""
    firsts, deps, nodes = [], [], []
    cols: dict[str, list[np.ndarray]] = {k: [] for k in ("kind", "peer", "bytes", "tag", "time",
                                                         "coll")}
    labels: list[str] | None = [] if all(p.op_label is not None for p, _ in pieces) else None
    lines = [] if all(p.op_line is not None for p, _ in pieces) else None
    r0 = o0 = 0
    for p, on in pieces:
        firsts.append(p.rank_first[:-1] + o0)
        peer = np.where(p.op_peer >= 0, p.op_peer + r0, p.op_peer)
        for k, v in (("kind", p.op_kind), ("peer", peer), ("bytes", p.op_bytes),
                     ("tag", p.op_tag), ("time", p.op_time_ps), ("coll", p.op_coll)):
            cols[k].append(v)
        deps.append((p.dep_before + o0, p.dep_after + o0, p.dep_kind))
        nodes.append(on)
        if labels is not None:
            labels.extend(p.op_label or [])
        if lines is not None:
            lines.append(p.op_line)
        r0 += p.n_ranks
        o0 += p.n_ops
    firsts.append(np.array([o0], dtype=np.int64))
    cat = np.concatenate
    return RankPrograms(cat(firsts), cat(cols["kind"]), cat(cols["peer"]), cat(cols["bytes"]),
                        cat(cols["tag"]), cat(cols["time"]), cat([d[0] for d in deps]),
                        cat([d[1] for d in deps]), cat([d[2] for d in deps]),
                        cat(nodes).astype(np.int64), labels,
                        cat(lines) if lines is not None else None,
                        pieces[0][0].source if len(pieces) == 1 else None, {},
                        op_coll=cat(cols["coll"]),
                        **dict(zip(("op_mode", "mode_names"),
                                   joined_modes([p for p, _ in pieces]), strict=True)))


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
