"""Native engine driver: turns a prepared run into flat arrays, runs the compiled loop, and
hands back per-port arrays and the packets' figures.

The loop runs in slices of ``budget`` events so that a caller can show progress and so that the
event heap can grow without the loop allocating; state lives in the arrays created here.  It
also stops at the start of each chunk of open-loop traffic, which the driver then loads into
free packet rows (:mod:`federation.engine.feed`), at the end of the loaded batch while the next
chunk is still being drawn (:mod:`federation.engine.feeder`), and whenever its buffer of
delivery records is full, which the driver drains into a
:class:`~federation.engine.packet_stats.PacketSink`: memory follows the packets in flight, not
the run's total.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from federation.engine import api as A
from federation.engine import events as E
from federation.engine.arbiters import oldest_first
from federation.engine.compile import loop_for
from federation.engine.feed import (
    REC_CAPACITY,
    REC_COLS,
    aligned_rows,
    credit_pool,
    feed_rows,
    grow_pool,
    grow_queue,
    load_chunk,
    return_freed_memory,
    row_meta,
    undelivered,
    waiting,
)
from federation.engine.feeder import Feeder
from federation.engine.iq import C_QUIET as IQ_QUIET
from federation.engine.iq import default_cycle, iq_margins, new_iq, no_iq
from federation.engine.link_series import Sampler
from federation.engine.packet_stats import PacketSink
from federation.engine.program_arrays import no_programs, open_pool
from federation.engine.qos import (
    ST_QOS_RING,
    grow_rings,
    inactive_time,
    run_state,
    settle_nics,
)
from federation.engine.queue import Q_SIDE, bucket_shift, new_queue
from federation.engine.reports import (
    CLOCK_RANGE,
    arbiter_report,
    deadlock_report,
    routing_report,
    stuck_report,
    time_limit_report,
)
from federation.engine.run_types import LinkFigures, NativeRun, PortCounters, RawResult
from federation.engine.state import OpenPool, Prog, Sim
from federation.engine.tables_route import inject as table_inject
from federation.engine.tables_route import program_tables
from federation.engine.tables_route import route as table_route
from federation.engine.traffic import (
    PacketChunk,
    Packets,
)
from federation.errors import RoutingError, SimulationError
from federation.models.limits import MAX_PACKET_BYTES, TIME_LIMIT_PS
from federation.models.units import PS_PER_S, format_time
from federation.network import Network
from federation.plugin.components import RoutingProgram

__all__ = ["CLOCK_RANGE", "LinkFigures", "NativeRun", "Packets", "PortCounters", "RawResult",
           "run_native"]



def run_native(job: NativeRun, progress: Callable[[int, int], None] | None = None,
               budget: int = 2_000_000, check_arbiter: bool = True,
               nic_counters: bool = True) -> RawResult:
    """Run the loop to completion; raise :class:`SimulationError` on deadlock.
    ``check_arbiter=False`` (the engine's explicit switch) runs a loop that trusts the
    arbiter's answers (:mod:`federation.engine.arbiter_check`); ``nic_counters=False`` one
    without the NIC counters (unless a routing controller reads them), whose result has
    none."""
    nics_on = nic_counters or job.controller is not None
    return_freed_memory()
    net = job.network
    pt = net.ports
    P, N = pt.n_ports, net.n_nodes
    port_ser, port_lat, port_buf, router_delay = _port_figures(job)
    arb_fn, arb_state = job.arbiter or (oldest_first, (np.zeros(1, dtype=np.int64),))
    arb_state, qos_state = run_state(arb_state, port_ser, job.n_vcs)
    qos_nic = qos_state and bool(arb_state.nic)
    keep_programs = job.programs is not None and job.keep_packets and job.keep_program_packets
    pg: Prog | OpenPool
    if job.programs is not None:
        # with several classes the programs' packets' records come too, for per-class figures
        pg = job.programs.prog._replace(keep=np.int64(keep_programs or job.n_classes > 1))
    elif qos_nic:  # the NICs' class heads read the (empty) flow queues of the programs too
        pg = no_programs(N)
    else:
        pg = open_pool(N)
    sim = _initial_state(job, port_ser, port_lat, port_buf, router_delay, pg)
    prog = job.program or RoutingProgram(table_route, program_tables(job.tables, P),
                                         job.tables.vcs_required, job.tables.description)
    if job.iq and job.n_classes > 1:
        raise SimulationError("router.model booksim_iq allocates VCs itself: QoS traffic "
                              "classes need the default router model")
    owner = job.owner or "the routing"
    rt = prog.tables
    cur = np.zeros(8, dtype=np.int64)  # the event being handled (the loop allocates nothing)
    # compiled (or loaded, already compiled) for these arguments' types: untimed
    run_loop = loop_for(prog.route, prog.inject or table_inject, arb_fn, owner,
                        (0, 0, sim, pg, rt, arb_state, cur), programs=job.programs is not None,
                        iq=job.iq, control=job.controller, check_arbiter=check_arbiter,
                        qos=job.n_classes > 1, rings=qos_state and bool(arb_state.sliding),
                        qos_nic=qos_nic, counters=nics_on)
    state = [sim, pg, arb_state]  # replaced when the heap, the pool or a QoS ring grows
    sink = PacketSink(job.window, keep=job.keep_packets, keep_programs=keep_programs,
                      n_classes=job.n_classes)
    # the next chunks and the records, on a helper thread
    feeder = Feeder(job.chunks(), sink, N, lambda c: _check_chunk(c, job.n_vcs, job.n_classes),
                    int(sim.vc_need) if job.n_classes > 1 else 0)
    with feeder:
        return _drive(job, feeder, sink, state, run_loop, rt, cur, progress, budget, owner,
                      qos_state, nics_on)


def _drive(job: NativeRun, feeder: Feeder, sink: PacketSink, state: list, run_loop: Any,
           rt: Any, cur: np.ndarray, progress: Callable[[int, int], None] | None,
           budget: int, owner: str, qos_state: bool, nics_on: bool) -> RawResult:
    """Run the loop slice by slice to its end (loading chunks, folding records, growing
    arrays, reading counters at the window's edges) and gather the result."""
    net = job.network
    P, V = net.ports.n_ports, job.n_vcs
    sim = state[0]
    total = (job.programs.n_packets if job.programs is not None else 0) + (
        job.traffic.expected_packets if job.traffic is not None else
        job.given_packets.count if job.given_packets is not None else 0)
    peak_waiting = 0  # the most packets waiting in the feed at a slice's end

    spent = [0.0, 0.0]  # wall and processor seconds inside the compiled loop
    # what one event may need beyond the loop's usual margins: a booksim_iq router's cycle
    queue_margin, pool_margin = iq_margins(sim.iq)

    def step(n: int, until: int) -> int:
        w, c = time.perf_counter(), time.thread_time()
        try:
            return run_loop(n, until, state[0], state[1], rt, state[2], cur)
        finally:
            spent[0] += time.perf_counter() - w
            spent[1] += time.thread_time() - c

    def load() -> None:
        """Load the ready chunk (the loop stands at its start); the feeder readies the next."""
        state[0] = load_chunk(state[0], feeder.take(), state[2])
        feeder.resume()
        _check_rows(state[0], job.max_rows)

    def drain() -> None:
        """The records buffer is full: the feeder folds it, the loop gets an empty one."""
        sim = state[0]
        spare = feeder.fold(sim.rec, int(sim.sc[E.S_REC]))
        sim.sc[E.S_REC] = 0
        state[0] = sim._replace(rec=spare)

    def counters(at: int) -> PortCounters:
        s = state[0]
        ports = counters_at(at, s.port_busy, s.busy_until, port_bytes(s), s.port_pkts,
                            s.port_stall, s.stall_start)
        if nics_on:
            ports.nics = nic_counters_at(at, s.nic_ctr, s.stall_start[s.nic_port])
        return ports

    # the loop stops before the first event at or after each edge of the window, so that the
    # per-port counters can be read as they stand at exactly that time
    edges = [int(t) for t in job.window] if job.window is not None else []
    if edges and not 0 <= edges[0] <= edges[1] <= E.TIME_LIMIT_PS:
        raise SimulationError(f"measurement window [{edges[0]}, {edges[1]}) ps is not inside "
                              f"{CLOCK_RANGE}")
    snaps: list[PortCounters] = []
    sampler = (Sampler(int(job.sample_ps), P, int(state[0].n_classes), job.sample_known_ps)
               if job.sample_ps else None)

    spent[:] = [0.0, 0.0]
    wall0 = time.perf_counter()
    while True:
        edge = edges[len(snaps)] if len(snaps) < len(edges) else E.TIME_LIMIT_PS
        stop = feeder.stop  # a chunk to load, or a batch end to learn the next start at
        sample = sampler.next if sampler is not None else E.TIME_LIMIT_PS
        # bound before the slice, not after: a state replaced since (a chunk load's new feed,
        # a grown pool or queue) lets go of the old arrays while the loop runs
        sim = state[0]
        status = step(budget, min(edge, stop, sample))
        peak_waiting = max(peak_waiting, waiting(sim))
        if status == E.ST_UNTIL and sampler is not None and sample < min(edge, stop):
            sampler.tick(class_bytes(sim))
            continue
        if status == E.ST_UNTIL or (status == E.ST_DONE and feeder.more):
            if status == E.ST_UNTIL and edge <= stop:
                snaps.append(counters(edge))
            elif feeder.ready is not None:
                load()
            else:  # at the loaded chunk's end: the next one's start is needed now
                feeder.settle()
            continue
        if status == E.ST_RECORDS_FULL:
            drain()
            continue
        if status == E.ST_BUDGET:
            if progress is not None:
                progress(int(sim.sc[E.S_DELIVERED]), max(total, int(sim.sc[E.S_DELIVERED])))
            continue
        if status == E.ST_POOL_FULL:
            state[0], state[1] = grow_pool(sim, state[1], pool_margin)
            _check_rows(state[0], job.max_rows)
            continue
        if status == E.ST_HEAP_FULL:
            state[0] = grow_queue(sim, queue_margin)
            continue
        if status == ST_QOS_RING:
            state[2] = grow_rings(state[2])
            continue
        break
    wall, cpu = spent
    feed_s = time.perf_counter() - wall0 - wall
    sim, pg, arb_state = state
    settle_nics(arb_state, class_bytes(sim), sim.nic_port)  # the final state exact (tests)
    sc = sim.sc
    if progress is not None:
        progress(int(sc[E.S_DELIVERED]), max(total, int(sc[E.S_DELIVERED])))
    if status in (E.ST_BAD_VC, E.ST_BAD_PORT, E.ST_NO_ROUTE, E.ST_HOP_LIMIT):
        raise RoutingError(routing_report(net, job, sim, status, owner))
    if status == E.ST_BAD_ARBITER:
        raise RoutingError(arbiter_report(net, sim, owner))
    if status == E.ST_TIME_LIMIT:
        raise SimulationError(time_limit_report(net, sc, job.programs))
    if status == E.ST_DEADLOCK:
        held = (np.nonzero((sim.iq.ovc_owner.reshape(-1, V) >= 0).any(axis=1))[0]
                if job.iq else None)  # an output VC is held until its packet crosses
        text = deadlock_report(net, V, sim.q_head, sim.req_head, sc,
                               int(sc[E.S_LOADED] + sc[E.S_QUEUED]), sim, owner, held)
        if job.iq:  # its routers turn cycles: the sign is a long quiet (federation.engine.iq)
            text += (f" (router.model booksim_iq: nothing moved or landed after cycle "
                     f"{int(sc[E.S_IQ_BUSY])}, and routers still held packets "
                     f"{int(sim.iq.cfg[IQ_QUIET])} cycles later)")
        raise SimulationError(text)
    if status == E.ST_PROGRAM_STUCK:
        raise SimulationError(stuck_report(job, pg, int(sc[E.S_NOW])))
    feeder.close()  # every record handed over is folded: the sink is this thread's again
    sink.add(sim.rec[:int(sc[E.S_REC])])
    sc[E.S_REC] = 0
    end = int(sc[E.S_NOW])
    if status == E.ST_DONE:  # the last credit returns ended the run (credits.py)
        end = max(end, last_credit_return(sim))
    sink.ended(undelivered(sim), end)  # a background still in flight when programs finished
    at_end = counters(end)
    if edges:
        while len(snaps) < 2:  # an edge after the last event: the counters are final there
            snaps.append(counters(edges[len(snaps)]))
        window, in_window = (edges[0], edges[1]), snaps[1] - snaps[0]
    else:
        window, in_window = (0, end), at_end
    C = int(sim.n_classes)
    if sampler is not None:
        sampler.take(end, class_bytes(sim))
    return RawResult(
        packets=sink.finish(),
        port_bytes=port_bytes(sim), port_pkts=sim.port_pkts,
        # a transmission or stall still going at the end (rank programs finished with
        # open-loop packets in flight) counts up to the end, as in the window's counters
        port_busy=at_end.busy, port_stall=at_end.stall, port_peak=sim.port_peak,
        end_ps=end, events=int(sc[E.S_EVENTS]), packet_hops=int(sc[E.S_HOPS]),
        wall_s=wall, cpu_s=cpu, feed_s=feed_s, window=window, window_ports=in_window,
        port_class_bytes=class_bytes(sim).reshape(P, C),
        port_class_inactive=inactive_time(arb_state, end) if qos_state else None,
        programs=pg if job.programs is not None else None, peak_rows=sim.ps.shape[0],
        peak_waiting=peak_waiting,
        nic_ctr=at_end.nics if nics_on else None,
        link_series=sampler.result() if sampler is not None else None,
    )


def port_bytes(sim: Sim) -> np.ndarray:
    """Bytes sent per port: with classes the loop counts them per class only (one counter
    to update per hop, not two), so they are summed here."""
    C = int(sim.n_classes)
    if C == 1:
        return sim.port_bytes
    return sim.port_class_bytes.reshape(-1, C).sum(axis=1)


def class_bytes(sim: Sim) -> np.ndarray:
    """Bytes sent per port and class (ports x classes, flat): with one class the loop counts
    only each port's bytes, which are that."""
    return sim.port_class_bytes if int(sim.n_classes) > 1 else sim.port_bytes


def last_credit_return(sim: Sim) -> int:
    """Time of the latest credit return still pending (-1: none): the run's last event was
    there when credits were events of their own, and its end still is (figures per simulated
    time depend on it)."""
    used = np.ones(sim.cr.shape[0], dtype=bool)
    used[sim.cr_free[:int(sim.sc[E.S_CRFREE])]] = False
    if not used.any():
        return -1
    return int((sim.cr[used, 0] >> E.SEQ_BITS).max())


def _check_chunk(chunk: PacketChunk, n_vcs: int, n_classes: int) -> None:
    """Packet sizes the packet state can hold, times inside the clock, in time order,
    injection VCs and traffic classes the run has."""
    pk = chunk.packets
    if not pk.count:
        return
    if not 0 <= int(pk.vc.min()) <= int(pk.vc.max()) < n_vcs:
        raise SimulationError(f"an injection VC is outside 0..{n_vcs - 1} (router.vcs = "
                              f"{n_vcs})")
    C = max(1, int(n_classes))
    if not 0 <= int(pk.cls.min()) <= int(pk.cls.max()) < C:
        raise SimulationError(f"a traffic class is outside 0..{C - 1}")
    if int(pk.size.min()) < 1 or int(pk.size.max()) > MAX_PACKET_BYTES:
        bad = int(np.nonzero((pk.size < 1) | (pk.size > MAX_PACKET_BYTES))[0][0])
        raise SimulationError(
            f"packet {chunk.first_packet + bad} has {int(pk.size[bad])} bytes; the engine "
            f"holds sizes of 1 to {MAX_PACKET_BYTES} bytes")
    t = pk.time_ps
    if int(t.min()) < 0 or int(t.max()) >= TIME_LIMIT_PS:
        bad = int(np.nonzero((t < 0) | (t >= TIME_LIMIT_PS))[0][0])
        raise SimulationError(
            f"packet {chunk.first_packet + bad} is created at "
            f"{format_time(int(t[bad]) / PS_PER_S)}, outside {CLOCK_RANGE}")
    if pk.count > 1 and bool((np.diff(t) < 0).any()):
        raise SimulationError("the open-loop packets are not in creation order")


def _check_rows(sim: Sim, max_rows: int) -> None:
    """Stop a run whose packets in existence (waiting at NICs, or in rows) outgrow the memory
    it may use."""
    held = waiting(sim) + sim.ps.shape[0] - int(sim.sc[E.S_FREE])
    if held > max_rows:
        raise SimulationError(
            f"{held} packets exist at once at t={format_time(int(sim.sc[E.S_NOW]) / PS_PER_S)} "
            f"(waiting at NICs or in flight), past the {max_rows} this run's memory limit "
            "allows: the network is saturated; lower the load, shorten stop.measure or raise "
            "--max-memory")


def _port_figures(job: NativeRun) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.int64]:
    """Per port (outgoing direction): ps per byte, latency ps, input buffer bytes; and the
    router delay, checked against what the loop's arithmetic can hold."""
    net = job.network
    pt = net.ports
    cls_names = net.link_classes
    bw = np.array([job.links[c].bandwidth for c in cls_names], dtype=np.float64)
    lat = np.array([job.links[c].latency for c in cls_names], dtype=np.float64)
    buf = np.array([job.links[c].buffer for c in cls_names], dtype=np.float64)
    port_bw = bw[pt.port_class]
    port_bw[pt.nic_port] = job.nic_bandwidth
    port_ser = (PS_PER_S / port_bw).astype(np.float64)  # ps per byte
    program_packet = int(job.programs.prog.packet_size) if job.programs is not None else 0
    check_engine_figures(net, port_ser, lat[pt.port_class] * PS_PER_S,
                         job.router_delay_s * PS_PER_S,
                         max(job.largest_packet, program_packet))
    port_lat = np.round(lat[pt.port_class] * PS_PER_S).astype(np.int64)
    port_buf = np.floor(buf[pt.port_class]).astype(np.int64)
    return port_ser, port_lat, port_buf, np.int64(round(job.router_delay_s * PS_PER_S))


def _credit_delay(job: NativeRun) -> np.int64:
    """``router.credit_delay`` of the default router model in ps (booksim_iq applies its own
    in its clocked credit pipeline)."""
    if job.iq or job.router is None:
        return np.int64(0)
    return np.int64(round(float(job.router.credit_delay) * PS_PER_S))


def _initial_state(job: NativeRun, port_ser: np.ndarray, port_lat: np.ndarray,
                   port_buf: np.ndarray, router_delay: np.int64, pg: Prog | OpenPool) -> Sim:
    """The loop's state before any packet is loaded: empty queues and NICs, the operations
    without dependencies due at time 0, and the pool of rows ``pg`` brings."""
    net = job.network
    pt = net.ports
    P, V, N = pt.n_ports, job.n_vcs, net.n_nodes
    credits = np.repeat(port_buf[pt.port_peer], V).astype(np.int64)
    to_nic = pt.port_router[pt.port_peer] < 0
    credits.reshape(P, V)[to_nic, :] = E.INF_CREDIT
    roots = job.programs.roots if job.programs is not None else np.zeros(0, dtype=np.int64)
    rows = pg.row_flow.shape[0]
    sc = np.zeros(E.N_SCALARS, dtype=np.int64)
    sc[E.S_RNG] = job.seed_stream
    sc[E.S_FREE] = rows
    n0 = roots.shape[0]  # operations without dependencies begin at time 0
    q = new_queue(bucket_shift(_shortest_serialisation(job, port_ser)),
                  heap=max(1024, 2 * n0 + 16))
    q.sk[:n0] = np.arange(n0)  # keys (time 0, scheduling order): a sorted array is a heap
    q.sp[:n0, 0] = roots * 8 + E.EV_OP  # word b: 0 (OP_BEGIN)
    q.qs[Q_SIDE] = n0
    sc[E.S_SEQ] = n0
    i64 = np.int64
    C = max(1, int(job.n_classes))
    if not 1 <= job.nic_flit <= MAX_PACKET_BYTES:  # the loop divides by it (nic.flit checks it)
        raise SimulationError(f"nic.flit {job.nic_flit} B is outside 1 .. {MAX_PACKET_BYTES}")
    cr, cr_free = credit_pool(4096)
    sc[E.S_CRFREE] = cr_free.shape[0]
    iq = no_iq()
    if job.iq:
        if job.programs is not None:
            raise SimulationError("router.model booksim_iq clocks NICs of open-loop traffic "
                                  "only; rank programs need the default router model")
        router = job.router
        assert router is not None
        cycle = (float(router.cycle) * PS_PER_S if router.cycle is not None
                 else default_cycle(port_ser, job.largest_packet or 1))
        if not 1 <= cycle < TIME_LIMIT_PS:
            raise SimulationError(f"router.cycle {format_time(cycle / PS_PER_S)} is outside "
                                  f"1 ps .. {CLOCK_RANGE}")
        iq = new_iq(int(round(cycle)), float(router.speedup),
                    float(router.credit_delay) * PS_PER_S, port_lat, port_ser, V,
                    pt.router_port_start, net.node_router, rows, net_random_vc(job))
    return Sim(
        n_vcs=i64(V), router_delay=router_delay, credit_delay=_credit_delay(job),
        cut_through=bool(job.cut_through),
        n_router_ports=i64(pt.n_router_ports), max_hops=i64(job.max_hops or 4 * net.n_routers + 8),
        port_peer=pt.port_peer.astype(i64), port_router=pt.port_router.astype(i64),
        port_ser=port_ser, port_lat=port_lat, port_buf=port_buf,
        router_port_start=pt.router_port_start.astype(i64),
        node_router=net.node_router.astype(i64), node_port=pt.node_port.astype(i64),
        nic_port=pt.nic_port.astype(i64),
        pm=row_meta(rows),
        nic_first=np.zeros(N + 1, dtype=i64), nic_orow=np.full(N, -1, dtype=i64),
        feed=feed_rows(1),
        sc=sc, q=q, ps=aligned_rows(rows, A.PS_COLS),
        q_head=np.full(P * V, -1, dtype=np.int32), q_tail=np.full(P * V, -1, dtype=np.int32),
        occ=np.zeros(P, dtype=i64), credits=credits, cr=cr, cr_free=cr_free,
        cr_head=np.full(P, -1, dtype=i64), cr_tail=np.full(P, -1, dtype=i64),
        cwait=np.zeros(P, dtype=i64), cwake=np.full(P, -1, dtype=i64),
        busy_until=np.zeros(P, dtype=i64),
        wake=np.full(P, -1, dtype=i64),  # time of the pending FREE event, -1: none
        wake_key=np.full(P, -1, dtype=i64),
        req_head=np.full(P, -1, dtype=i64), req_tail=np.full(P, -1, dtype=i64),
        req_next=np.full(P * V, -1, dtype=i64), req_count=np.zeros(P, dtype=i64),
        stall_start=np.full(P, -1, dtype=i64), nic_ptr=np.zeros(N, dtype=i64),
        nic_wake=np.full(N, -1, dtype=i64), nic_wake_key=np.full(N, -1, dtype=i64),
        wakes=np.zeros((N, 2), dtype=i64),
        # cut-through: when each packet's tail reaches the router it is in (unused otherwise)
        pkt_tail=np.zeros(rows if job.cut_through else 1, dtype=i64),
        rec=np.zeros((REC_CAPACITY, REC_COLS), dtype=i64),
        port_bytes=np.zeros(P, dtype=i64), port_pkts=np.zeros(P, dtype=i64),
        port_busy=np.zeros(P, dtype=i64), port_stall=np.zeros(P, dtype=i64),
        port_peak=np.zeros(P, dtype=i64),
        n_classes=i64(C), vc_need=i64(V // C),
        port_class_bytes=np.zeros(P * C if C > 1 else 1, dtype=i64),
        nic_ctr=np.zeros((N, A.NC_COLS), dtype=i64), nic_flit=i64(job.nic_flit), iq=iq,
    )


def net_random_vc(job: NativeRun) -> bool:
    """``router.injection_vc: random``: a booksim_iq NIC draws the VC in each cycle it tries."""
    return job.router is not None and job.router.injection_vc == "random"


def _shortest_serialisation(job: NativeRun, port_ser: np.ndarray) -> float:
    """ps a packet of the run's usual size takes on the fastest port: the calendar's bucket
    width follows it (:func:`~federation.engine.queue.bucket_shift`)."""
    size = job.largest_packet or (int(job.programs.prog.packet_size)
                                  if job.programs is not None else 0)
    if size <= 0 or port_ser.size == 0:
        return 1e6
    return float(size * port_ser.min())


def counters_at(t: int, port_busy: np.ndarray, busy_until: np.ndarray, port_bytes: np.ndarray,
                port_pkts: np.ndarray, port_stall: np.ndarray,
                stall_start: np.ndarray) -> PortCounters:
    """The per-port counters as they stand at time ``t``, read when every event before ``t``
    and none at or after it has been processed (the loop's ``until`` stop).

    The loop adds a transmission's whole serialisation to ``port_busy`` when it starts, and
    a stall's length when it ends.  A port serialises one packet at a time, so at most its
    latest transmission (ending at ``busy_until``) runs past ``t``: its part after ``t`` is
    taken off.  A stall still open at ``t`` (``stall_start >= 0``) has lasted ``t -
    stall_start`` so far.
    """
    busy = port_busy - np.maximum(busy_until - t, 0)
    stall = port_stall + np.where(stall_start >= 0, t - stall_start, 0)
    return PortCounters(busy, port_bytes.copy(), port_pkts.copy(), stall)


def nic_counters_at(t: int, nic_ctr: np.ndarray, stall_start: np.ndarray) -> np.ndarray:
    """The per-NIC counters as they stand at time ``t`` (read as :func:`counters_at` is).

    Request flits and packets count when a packet starts to leave its NIC, the latency when it
    is delivered, so only the stall needs a correction: a NIC whose ready packet waits for
    credit at ``t`` (its port's ``stall_start >= 0``) has stalled ``t - stall_start`` more
    than its column says (the loop adds a stall when it ends; :func:`api.nic_counter` adds the
    open part the same way during the run).
    """
    out = nic_ctr.copy()
    out[:, A.NC_STALL] += np.where(stall_start >= 0, t - stall_start, 0)
    return out


def check_engine_figures(net: Network, port_ser: np.ndarray, port_lat_ps: np.ndarray,
                         router_delay_ps: float, largest_packet: int) -> None:
    """Refuse figures whose engine arithmetic could leave the clock range or wrap.

    The loop adds serialisations (``size * ps_per_byte``, rounded to int64), latencies and
    the router delay to the current time and checks the *sum* where it makes the event key.
    That check is only sound if no operand has wrapped already, so each operand must be a
    finite number of picoseconds below ``TIME_LIMIT_PS`` (a sum of a few of them then stays
    far inside int64).  Packet sizes and creation times are checked as each chunk of
    packets is loaded.  The preflight (:func:`federation.pipeline.bounds.check_clock`) refuses
    such inputs naming the file; this is the engine's own guard for callers that bypass it.
    """
    pt = net.ports
    if largest_packet <= 0:
        return
    largest = float(largest_packet)
    with np.errstate(invalid="ignore", over="ignore"):
        worst = largest * port_ser
    for what, value in (("serialisation of a packet", worst), ("latency", port_lat_ps)):
        bad_ports = np.nonzero(~((value >= 0) & (value < TIME_LIMIT_PS)))[0]
        if bad_ports.size:
            p = int(bad_ports[0])
            cls = "NIC" if pt.port_router[p] < 0 else f"{net.link_classes[pt.port_class[p]]!r}"
            detail = (f"{largest:.0f} B at {PS_PER_S / port_ser[p]:g} B/s"
                      if what.startswith("ser") else "")
            raise SimulationError(
                f"{what} on port {p} ({cls} link{', ' + detail if detail else ''}) takes "
                f"{format_time(float(value[p]) / PS_PER_S)}, outside {CLOCK_RANGE}")
    if not 0 <= router_delay_ps < TIME_LIMIT_PS:
        raise SimulationError(f"the router delay {format_time(router_delay_ps / PS_PER_S)} is "
                              f"outside {CLOCK_RANGE}")


