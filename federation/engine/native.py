"""Native engine driver: turns a prepared run into flat arrays, runs the compiled loop, and
hands back raw per-packet and per-port arrays.

The loop runs in slices of ``budget`` events so that a caller can show progress and so that the
event heap can grow without the loop allocating; state lives in the arrays created here.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numba.core.errors import NumbaError

from federation.components import RouteTables, RoutingProgram
from federation.engine import api as A
from federation.engine import events as E
from federation.engine.arbiters import oldest_first
from federation.engine.compile import loop_for
from federation.engine.program_arrays import ProgramTraffic, no_programs
from federation.engine.state import Prog, Sim
from federation.engine.tables_route import inject as table_inject
from federation.engine.tables_route import program_tables
from federation.engine.tables_route import route as table_route
from federation.engine.traffic import OpenTraffic, Packets, packetize_traffic
from federation.errors import RoutingError, SimulationError
from federation.limits import MAX_PACKET_BYTES, TIME_LIMIT_PS
from federation.network import Network
from federation.units import PS_PER_S, format_time

#: the clock range as messages state it
CLOCK_RANGE = f"the engine's clock range [0, {format_time(TIME_LIMIT_PS / PS_PER_S)}) (2^43 ps)"


@dataclass
class LinkFigures:
    """Resolved per-class figures (bytes/s, seconds, bytes)."""

    bandwidth: float
    latency: float
    buffer: float


@dataclass
class NativeRun:
    """What the runner hands an engine for one point (see :func:`federation.prepare.prepare`):
    the network and its figures, the routing, the arbiter, the rank programs and the
    open-loop traffic.  The open-loop packets are made on the engine side
    (:mod:`federation.engine.traffic`) when :attr:`packets` is first read, and the loop's
    random stream is drawn after them from the same routing stream (:attr:`seed_stream`)."""

    network: Network
    links: dict[str, LinkFigures]
    nic_bandwidth: float
    router_delay_s: float
    n_vcs: int
    tables: RouteTables
    #: the open-loop packets when given whole (tests, other drivers); else made from
    #: :attr:`traffic`
    given_packets: Packets | None = None
    #: measurement window ``[start, end)`` in ps; the per-port ``*_window`` counters cover it.
    #: ``None``: the whole run, ``[0, end of the run]``
    window: tuple[int, int] | None = None
    #: ``router.switching``: virtual cut-through instead of store-and-forward
    cut_through: bool = False
    #: a compiled routing (``None``: follow ``tables`` with the built-in table routing)
    program: RoutingProgram | None = None
    #: ``(arbitrate function, its state tuple)``; ``None``: oldest first
    arbiter: tuple[Any, tuple] | None = None
    #: who the routing and arbiter are, for messages ("routing 'x' (plugin y)")
    owner: str = ""
    #: seed of the loop's own random stream (routings and arbiters draw from it); ``None``:
    #: drawn from ``seed_rng`` once the packets are made
    given_seed: int | None = 0x9E3779B97F4A7C15 & 0x7FFFFFFFFFFFFFFF
    #: hops after which a packet is deemed in a routing loop (``None``: 4 x routers + 8)
    max_hops: int | None = None
    #: traffic classes (the QoS policy's); per-port bytes are counted per class
    n_classes: int = 1
    #: rank programs (closed loop); their packets are born in the loop
    programs: ProgramTraffic | None = None
    #: open-loop messages, packetized by the engine side (:func:`packetize_traffic`)
    traffic: OpenTraffic | None = None
    #: the routing stream the loop's seed is drawn from, after the packets' draws
    seed_rng: np.random.Generator | None = None

    @property
    def packets(self) -> Packets:
        """The open-loop packets (made from :attr:`traffic` on first use)."""
        if self.given_packets is None:
            if self.traffic is None:
                none = np.zeros(0, dtype=np.int64)
                self.given_packets = Packets(none, none, none, none, none, none)
            else:
                self.given_packets = packetize_traffic(self.traffic)
        return self.given_packets

    @property
    def seed_stream(self) -> int:
        """Seed of the loop's random stream, drawn after the packets' own draws."""
        if self.given_seed is None:
            _ = self.packets
            rng = self.seed_rng if self.seed_rng is not None else np.random.default_rng(0)
            self.given_seed = int(rng.integers(1, 2**62))
        return self.given_seed


@dataclass
class PortCounters:
    """Per-port counters over a span of time (index = global port id).

    ``busy`` is the time the port spent serialising within the span (a transmission that
    straddles an edge counts only its part inside); ``bytes`` and ``packets`` count the
    transmissions that started in it; ``stall`` the time requests waited for credit in it.
    """

    busy: np.ndarray
    bytes: np.ndarray
    packets: np.ndarray
    stall: np.ndarray

    def __sub__(self, other: PortCounters) -> PortCounters:
        return PortCounters(self.busy - other.busy, self.bytes - other.bytes,
                            self.packets - other.packets, self.stall - other.stall)


@dataclass
class RawResult:
    pkt_inject: np.ndarray
    pkt_deliver: np.ndarray
    pkt_hops: np.ndarray
    pkt_minimal: np.ndarray
    pkt_via: np.ndarray
    port_bytes: np.ndarray
    port_pkts: np.ndarray
    port_busy: np.ndarray
    port_stall: np.ndarray
    port_peak: np.ndarray
    end_ps: int
    events: int
    packet_hops: int
    wall_s: float
    #: the span ``window_ports`` covers: the job's window, or ``(0, end_ps)`` without one
    window: tuple[int, int]
    #: the per-port counters within ``window`` (the fields above are whole-run totals)
    window_ports: PortCounters
    #: whole-run bytes per port and traffic class (ports x classes); ``None``: not counted
    port_class_bytes: np.ndarray | None = None
    #: the rank programs' state at the end (``None``: an open-loop run)
    programs: Prog | None = None
    #: per packet, its creation time (program packets: when their flow reached the NIC)
    pkt_created: np.ndarray | None = None
    #: processor time of the loop (``wall_s`` counts time the process waited for a core)
    cpu_s: float = 0.0


def _cache_aligned_rows(rows: int, cols: int) -> np.ndarray:
    """Zeroed int32 ``rows x cols`` matrix whose rows start on 64-byte boundaries (NumPy only
    promises 16), so that a 16-column row is exactly one cache line."""
    raw = np.zeros(rows * cols + 16, dtype=np.int32)
    skip = (-raw.ctypes.data % 64) // 4
    return raw[skip:skip + rows * cols].reshape(rows, cols)


def check_vcs(tables: RouteTables, n_vcs: int, routing_name: str) -> None:
    if tables.vcs_required > n_vcs:
        raise RoutingError(
            f"routing {routing_name!r} ({tables.description}) needs {tables.vcs_required} virtual "
            f"channels for deadlock freedom but the machine has router.vcs = {n_vcs}; set "
            f"router.vcs: {tables.vcs_required} or more"
        )


def run_native(job: NativeRun, progress: Callable[[int, int], None] | None = None,
               budget: int = 2_000_000) -> RawResult:
    """Run the loop to completion; raise :class:`SimulationError` on deadlock."""
    net = job.network
    pt = net.ports
    P = pt.n_ports
    V = job.n_vcs
    N = net.n_nodes
    pk = job.packets
    Kc = pk.count

    # ---- per-port figures (outgoing direction of each port)
    cls_names = net.link_classes
    bw = np.array([job.links[c].bandwidth for c in cls_names], dtype=np.float64)
    lat = np.array([job.links[c].latency for c in cls_names], dtype=np.float64)
    buf = np.array([job.links[c].buffer for c in cls_names], dtype=np.float64)
    port_bw = bw[pt.port_class]
    port_bw[pt.nic_port] = job.nic_bandwidth
    port_ser = (PS_PER_S / port_bw).astype(np.float64)  # ps per byte
    check_engine_figures(net, port_ser, lat[pt.port_class] * PS_PER_S,
                         job.router_delay_s * PS_PER_S, pk,
                         int(job.programs.prog.packet_size) if job.programs is not None else 0)
    port_lat = np.round(lat[pt.port_class] * PS_PER_S).astype(np.int64)
    port_buf = np.floor(buf[pt.port_class]).astype(np.int64)
    router_delay = np.int64(round(job.router_delay_s * PS_PER_S))

    credits = np.repeat(port_buf[pt.port_peer], V).astype(np.int64)
    to_nic = pt.port_router[pt.port_peer] < 0
    credits.reshape(P, V)[to_nic, :] = E.INF_CREDIT

    # ---- open-loop packets per NIC, in creation order
    order = np.lexsort((np.arange(Kc), pk.time_ps, pk.src))
    nic_pkts = order.astype(np.int32)
    nic_first = np.zeros(N + 1, dtype=np.int64)
    np.cumsum(np.bincount(pk.src, minlength=N), out=nic_first[1:])

    # ---- the event heap: each NIC wakes at its first open-loop packet, each operation
    # without dependencies begins at 0; a sorted array is a valid heap
    pg = job.programs.prog if job.programs is not None else no_programs(N, Kc)
    roots = job.programs.roots if job.programs is not None else np.zeros(0, dtype=np.int64)
    pool = pg.row_flow.shape[0] if job.programs is not None else 0  # rows for program packets
    total = Kc + (job.programs.n_packets if job.programs is not None else 0)
    sc = np.zeros(E.N_SCALARS, dtype=np.int64)
    sc[E.S_RNG] = job.seed_stream
    sc[E.S_FREE] = pool
    cap = max(1024, 4 * (P * V + N) + 2 * roots.shape[0])
    hk = np.full(cap, E.KEY_MAX, dtype=np.int64)
    ha = np.zeros(cap, dtype=np.int64)
    hb = np.zeros(cap, dtype=np.int64)
    has = nic_first[1:] > nic_first[:-1]
    nodes = np.nonzero(has)[0]
    first_t = pk.time_ps[nic_pkts[nic_first[nodes]]]
    o = np.lexsort((nodes, first_t))
    times = np.concatenate([first_t[o], np.zeros(roots.shape[0], dtype=np.int64)])
    payload = np.concatenate([nodes[o] * 8 + E.EV_NIC, roots * 8 + E.EV_OP])
    o = np.argsort(times, kind="stable")
    n0 = times.shape[0]
    hk[:n0] = (times[o] << E.SEQ_BITS) | np.arange(n0)
    ha[:n0] = payload[o]  # hb: 0 (OP_BEGIN for the operations)
    sc[E.S_HEAP] = n0
    sc[E.S_SEQ] = n0
    nic_wake = np.full(N, -1, dtype=np.int64)
    nic_wake[nodes] = first_t

    ps = _cache_aligned_rows(Kc + pool, A.PS_COLS)
    head = ps[:Kc]
    head[:, A.P_NEXT] = -1
    head[:, A.P_DIM] = -1
    head[:, A.P_MINIMAL] = 1
    head[:, A.P_DST] = pk.dst
    head[:, A.P_SIZE] = pk.size
    head[:, A.P_VIA] = pk.via
    head[:, A.P_SRC] = pk.src
    if pk.vc is not None:
        if pk.vc.shape[0] and not 0 <= int(pk.vc.min()) <= int(pk.vc.max()) < V:
            raise SimulationError(f"an injection VC is outside 0..{V - 1} (router.vcs = {V})")
        head[:, A.P_VC] = pk.vc
    C = max(1, int(job.n_classes))
    if pk.cls is not None:
        if pk.cls.shape[0] and not 0 <= int(pk.cls.min()) <= int(pk.cls.max()) < C:
            raise SimulationError(f"a traffic class is outside 0..{C - 1}")
        head[:, A.P_CLASS] = pk.cls

    i64 = np.int64
    sim = Sim(
        n_vcs=i64(V), router_delay=router_delay, cut_through=bool(job.cut_through),
        n_router_ports=i64(pt.n_router_ports), max_hops=i64(job.max_hops or 4 * net.n_routers + 8),
        port_peer=pt.port_peer.astype(i64), port_router=pt.port_router.astype(i64),
        port_ser=port_ser, port_lat=port_lat, port_buf=port_buf,
        router_port_start=pt.router_port_start.astype(i64),
        node_router=net.node_router.astype(i64), node_port=pt.node_port.astype(i64),
        nic_port=pt.nic_port.astype(i64),
        pkt_time=np.concatenate([pk.time_ps.astype(i64), np.zeros(pool, dtype=i64)]),
        nic_first=nic_first, nic_pkts=nic_pkts,
        sc=sc, hk=hk, ha=ha, hb=hb, ps=ps,
        q_head=np.full(P * V, -1, dtype=np.int32), q_tail=np.full(P * V, -1, dtype=np.int32),
        occ=np.zeros(P, dtype=i64), credits=credits, busy_until=np.zeros(P, dtype=i64),
        wake=np.full(P, -1, dtype=i64),  # time of the pending FREE event, -1: none
        req_head=np.full(P, -1, dtype=i64), req_tail=np.full(P, -1, dtype=i64),
        req_next=np.full(P * V, -1, dtype=i64), req_count=np.zeros(P, dtype=i64),
        stall_start=np.full(P, -1, dtype=i64), nic_ptr=nic_first[:-1].copy(),
        nic_wake=nic_wake,
        pkt_inject=np.full(Kc + pool, -1, dtype=i64),
        pkt_deliver=np.full(Kc + pool, -1, dtype=i64),
        # cut-through: when each packet's tail reaches the router it is in (unused otherwise)
        pkt_tail=np.zeros(Kc + pool if job.cut_through else 1, dtype=i64),
        port_bytes=np.zeros(P, dtype=i64), port_pkts=np.zeros(P, dtype=i64),
        port_busy=np.zeros(P, dtype=i64), port_stall=np.zeros(P, dtype=i64),
        port_peak=np.zeros(P, dtype=i64),
        n_classes=i64(C), port_class_bytes=np.zeros(P * C, dtype=i64),
    )
    prog = job.program or RoutingProgram(table_route, program_tables(job.tables, P),
                                         job.tables.vcs_required, job.tables.description)
    arb_fn, arb_state = job.arbiter or (oldest_first, (np.zeros(1, dtype=i64),))
    owner = job.owner or "the routing"
    run_loop = loop_for(prog.route, prog.inject or table_inject, arb_fn, owner)
    rt = prog.tables
    cur = np.zeros(5, dtype=np.int64)  # the event being handled (the loop allocates nothing)
    pools = [pg]  # the program state, replaced when its pool grows

    def step(n: int, until: int) -> int:
        try:
            return int(run_loop(n, until, sim, pools[0], rt, arb_state, cur))
        except NumbaError as exc:
            lines = [x.strip() for x in str(exc).splitlines() if x.strip()]
            what = "; ".join(lines[:2]) if lines else type(exc).__name__  # kind, then detail
            raise RoutingError(f"{owner}: its compiled functions do not compile inside the "
                               f"engine's loop: {what}") from None

    def counters(at: int) -> PortCounters:
        return counters_at(at, sim.port_busy, sim.busy_until, sim.port_bytes, sim.port_pkts,
                           sim.port_stall, sim.stall_start)

    # the loop stops before the first event at or after each edge of the window, so that the
    # per-port counters can be read as they stand at exactly that time
    edges = [int(t) for t in job.window] if job.window is not None else []
    if edges and not 0 <= edges[0] <= edges[1] <= E.TIME_LIMIT_PS:
        raise SimulationError(f"measurement window [{edges[0]}, {edges[1]}) ps is not inside "
                              f"{CLOCK_RANGE}")
    snaps: list[PortCounters] = []

    step(0, E.TIME_LIMIT_PS)  # compiles on first use (or loads numba's cache); untimed
    wall0, cpu0 = time.perf_counter(), time.process_time()
    while True:
        status = step(budget, edges[len(snaps)] if len(snaps) < len(edges) else E.TIME_LIMIT_PS)
        if status == E.ST_UNTIL:
            snaps.append(counters(edges[len(snaps)]))
            continue
        if status == E.ST_BUDGET:
            if progress is not None:
                progress(int(sim.sc[E.S_DELIVERED]), total)
            continue
        if status == E.ST_POOL_FULL:
            sim, pools[0] = grow_pool(sim, pools[0])
            continue
        if status == E.ST_HEAP_FULL:
            n = sim.hk.shape[0]
            sim = sim._replace(hk=np.concatenate([sim.hk, np.full(n, E.KEY_MAX, np.int64)]),
                               ha=np.resize(sim.ha, 2 * n), hb=np.resize(sim.hb, 2 * n))
            continue
        break
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    if progress is not None:
        progress(int(sim.sc[E.S_DELIVERED]), total)
    sc, ps, pg = sim.sc, sim.ps[:Kc], pools[0]
    if status in (E.ST_BAD_VC, E.ST_BAD_PORT, E.ST_NO_ROUTE, E.ST_HOP_LIMIT):
        raise RoutingError(_routing_report(net, job, sim, status, owner))
    if status == E.ST_TIME_LIMIT:
        raise SimulationError(_time_limit_report(net, sc, job.programs))
    if status == E.ST_DEADLOCK:
        raise SimulationError(_deadlock_report(net, V, sim.q_head, sim.req_head, sc,
                                               Kc + int(sc[E.S_QUEUED])))
    if status == E.ST_PROGRAM_STUCK:
        raise SimulationError(stuck_report(job, pg, int(sc[E.S_NOW])))
    end = int(sc[E.S_NOW])
    if edges:
        while len(snaps) < 2:  # an edge after the last event: the counters are final there
            snaps.append(counters(edges[len(snaps)]))
        window, in_window = (edges[0], edges[1]), snaps[1] - snaps[0]
    else:
        window, in_window = (0, end), counters(end)
    return RawResult(
        pkt_inject=sim.pkt_inject[:Kc], pkt_deliver=sim.pkt_deliver[:Kc],
        pkt_hops=ps[:, A.P_HOPS].copy(), pkt_minimal=ps[:, A.P_MINIMAL].astype(np.int8),
        pkt_via=ps[:, A.P_VIA].copy(),
        port_bytes=sim.port_bytes, port_pkts=sim.port_pkts,
        port_busy=sim.port_busy, port_stall=sim.port_stall, port_peak=sim.port_peak,
        end_ps=end, events=int(sc[E.S_EVENTS]), packet_hops=int(sc[E.S_HOPS]),
        wall_s=wall, cpu_s=cpu, window=window, window_ports=in_window,
        port_class_bytes=sim.port_class_bytes.reshape(P, C),
        programs=pg if job.programs is not None else None, pkt_created=sim.pkt_time[:Kc],
    )


def grow_pool(sim: Sim, pg: Prog) -> tuple[Sim, Prog]:
    """Double the rows for program packets: the packet arrays grow at their end, and the new
    rows join the free stack (lowest popped first), so a run's memory follows its peak of
    packets in flight."""
    k_open = int(pg.k_open)
    old = pg.row_flow.shape[0]
    rows = k_open + 2 * old
    ps = _cache_aligned_rows(rows, A.PS_COLS)
    ps[:k_open + old] = sim.ps

    def longer(a: np.ndarray, fill: int) -> np.ndarray:
        return np.concatenate([a, np.full(rows - a.shape[0], fill, dtype=a.dtype)])

    n_free = int(sim.sc[E.S_FREE])
    free = np.empty(2 * old, dtype=np.int64)
    free[:old] = np.arange(rows - 1, k_open + old - 1, -1)
    free[old:old + n_free] = pg.free[:n_free]
    sim.sc[E.S_FREE] = old + n_free
    sim = sim._replace(
        ps=ps, pkt_time=longer(sim.pkt_time, 0), pkt_inject=longer(sim.pkt_inject, -1),
        pkt_deliver=longer(sim.pkt_deliver, -1),
        pkt_tail=longer(sim.pkt_tail, 0) if sim.cut_through else sim.pkt_tail)
    return sim, pg._replace(row_flow=np.concatenate([pg.row_flow, np.full(old, -1, np.int64)]),
                            free=free)


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


def check_engine_figures(net: Network, port_ser: np.ndarray, port_lat_ps: np.ndarray,
                         router_delay_ps: float, packets: Packets,
                         program_packet: int = 0) -> None:
    """Refuse figures whose engine arithmetic could leave the clock range or wrap.

    The loop adds serialisations (``size * ps_per_byte``, rounded to int64), latencies and
    the router delay to the current time and checks the *sum* where it makes the event key.
    That check is only sound if no operand has wrapped already, so each operand must be a
    finite number of picoseconds below ``TIME_LIMIT_PS`` (a sum of a few of them then stays
    far inside int64), and packet sizes must fit the int32 column of the packet state.  The
    preflight (:func:`federation.checks.check_clock`) refuses such inputs naming the file;
    this is the engine's own guard for callers that bypass it.
    """
    pt = net.ports
    if packets.count == 0 and program_packet == 0:
        return
    # rank programs' packets are at most ``program_packet`` bytes, born inside the loop
    size = np.concatenate([packets.size, [program_packet] if program_packet else []])
    if int(size.min()) < 1 or int(size.max()) > MAX_PACKET_BYTES:
        bad = int(np.nonzero((size < 1) | (size > MAX_PACKET_BYTES))[0][0])
        raise SimulationError(
            f"packet {bad} has {int(size[bad])} bytes; the engine holds sizes of 1 to "
            f"{MAX_PACKET_BYTES} bytes")
    t = packets.time_ps
    if t.shape[0] and (int(t.min()) < 0 or int(t.max()) >= TIME_LIMIT_PS):
        bad = int(np.nonzero((t < 0) | (t >= TIME_LIMIT_PS))[0][0])
        raise SimulationError(
            f"packet {bad} is created at {format_time(int(t[bad]) / PS_PER_S)}, outside "
            f"{CLOCK_RANGE}")
    largest = float(size.max())
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


_EVENT_KINDS = {E.EV_ARRIVE: "ARRIVE", E.EV_READY: "READY", E.EV_FREE: "FREE",
                E.EV_CREDIT: "CREDIT", E.EV_NIC: "NIC", E.EV_OP: "OP"}
#: what an ``EV_OP`` event does to its operation (events.OP_*)
_OP_WHAT = {E.OP_BEGIN: "beginning", E.OP_FINISH: "finishing",
            E.OP_HAND: "handing its message to the NIC"}


def _port_name(net: Network, p: int) -> str:
    """``router R port L`` for a router port, ``node N's NIC`` for a NIC port."""
    pt = net.ports
    r = int(pt.port_router[p])
    if r < 0:
        return f"node {int(pt.port_node[p])}'s NIC"
    return f"router {r} port {int(p - pt.router_port_start[r])}"


def _event_meaning(net: Network, ev: int, a: int, b: int,
                   programs: ProgramTraffic | None = None) -> str:
    """What an event of kind ``ev`` with payload ``a, b`` is about (see events.EV_*)."""
    if ev == E.EV_ARRIVE:
        node = int(net.ports.port_node[b]) if net.ports.port_router[b] < 0 else -1
        return f"packet {a} reaching " + (f"node {node}" if node >= 0 else _port_name(net, b))
    if ev == E.EV_READY:
        return f"the head packet of {_port_name(net, a)} VC {b} routed"
    if ev == E.EV_FREE:
        return f"{_port_name(net, a)} free again"
    if ev == E.EV_CREDIT:
        return f"a credit reaching {_port_name(net, a)} VC {b}"
    if ev == E.EV_NIC:
        return f"node {a}'s next packet leaving its NIC"
    if ev == E.EV_OP:
        name = programs.programs.describe(a) if programs is not None else f"operation {a}"
        return f"{name} {_OP_WHAT.get(b, str(b))}"
    return f"payload {a}, {b}"


def _time_limit_report(net: Network, sc: np.ndarray,
                       programs: ProgramTraffic | None = None) -> str:
    """Which event the loop refused to schedule, when, and the limit."""
    t = int(sc[E.S_BAD_TIME])
    now = format_time(int(sc[E.S_NOW]) / PS_PER_S)
    if t == 0:  # not expected: every start time is checked before the run
        return f"the run left {CLOCK_RANGE} at t={now}"
    ev, a, b = (int(sc[i]) for i in (E.S_BAD_EV, E.S_BAD_A, E.S_BAD_B))
    kind = _EVENT_KINDS.get(ev, str(ev))
    article = "an" if kind[0] in "AEIOU" else "a"
    return (f"the engine refused to schedule {article} {kind} event "
            f"({_event_meaning(net, ev, a, b, programs)}) at {format_time(t / PS_PER_S)}, while at "
            f"t={now}: outside {CLOCK_RANGE}; shorten the run, the link latencies or the "
            "router delay")


def _routing_report(net: Network, job: NativeRun, sim: Any, status: int, owner: str) -> str:
    """What was wrong with the routing's answer for the packet the loop stopped at."""
    sc, pk = sim.sc, job.packets
    p, r = int(sc[E.S_BADPKT]), int(sc[E.S_BAD_ROUTER])
    o, vc = int(sc[E.S_BAD_A]), int(sc[E.S_BAD_B])
    who = f"packet {p} (node {int(pk.src[p])} -> {int(pk.dst[p])}) at router {r}"
    if status == E.ST_HOP_LIMIT:
        return (f"{owner}: {who} has made {int(sim.max_hops)} router-to-router hops without "
                "arriving: the routing sends packets in circles")
    if status == E.ST_NO_ROUTE:
        if job.program is None:
            return _no_route_report(net, job.tables, sim.ps, pk, p, r)
        return f"{owner}: {who} got no output port (-1)"
    if status == E.ST_BAD_VC:
        return (f"{owner}: {who} was given VC {vc}, outside 0..{job.n_vcs - 1} (router.vcs = "
                f"{job.n_vcs}); the routing's declared VC count (vcs_required) is wrong")
    first, end = (int(x) for x in net.ports.router_port_start[r:r + 2])
    if first <= o < end:
        return (f"{owner}: {who} was given port {o}, which leads to a node that is not its "
                "destination")
    return (f"{owner}: {who} was given port {o}, which is not one of router {r}'s ports "
            f"({first}..{end - 1})")


def _no_route_report(net: Network, t: RouteTables, ps: np.ndarray, pk: Packets, p: int,
                     r: int) -> str:
    """Which -1 entry of the tables packet ``p`` needed at router ``r`` (the table routing's
    choice of table, replayed from the packet's state)."""
    dr = int(net.node_router[int(pk.dst[p])])
    via, phase = int(ps[p, A.P_VIA]), int(ps[p, A.P_PHASE])
    if via >= 0 and phase == 0:
        entry = f"gnext[{r}, {via}] (towards intermediate group {via})"
    elif t.router_group[r] != t.router_group[dr]:
        entry = f"gnext[{r}, {int(t.router_group[dr])}] (towards router {dr}'s group)"
    else:
        entry = f"lnext[{r}, {int(t.router_local[dr])}] (towards router {dr})"
    return (f"packet {p} (node {int(pk.src[p])} -> {int(pk.dst[p])}) has no route at router "
            f"{r}: the route table entry {entry} is -1; the routing's tables are incomplete")


def stuck_report(job: NativeRun, pg: Prog, now: int) -> str:
    """Why rank programs cannot finish: the operations that started and never finished (a
    receive nothing sent to, a rendezvous whose receive was never posted), else the first
    one that never began (its dependencies never finished)."""
    progs = job.programs
    assert progs is not None
    left = np.nonzero(pg.op_finish[:int(pg.n_ops)] < 0)[0]
    ranks = np.unique(pg.op_rank[left])
    head = (f"the rank programs cannot finish: at t={format_time(now / PS_PER_S)} nothing is "
            f"left to happen, and {left.size} operations on {ranks.size} ranks never finished")
    started = left[pg.op_start[left] >= 0]
    why = []
    for op in started[:3].tolist():
        kind = int(pg.op_kind[op])
        if kind == 1:  # a receive
            reason = ("no send on its channel started" if pg.op_msg[op] < 0 else
                      "its message never arrived")
        else:
            m = int(pg.op_msg[op])
            reason = ("its rendezvous request was never answered: the receive was never posted"
                      if pg.msg_rdv[m] and pg.msg_recv[m] < 0 else "its message never left")
        why.append(f"{_op_name(job, op)} started at "
                   f"{format_time(int(pg.op_start[op]) / PS_PER_S)}: {reason}")
    if not why:
        why.append(f"{_op_name(job, int(left[0]))} never began: an operation it depends on "
                   "never finished")
    return head + "; " + "; ".join(why)


def _op_name(job: NativeRun, op: int) -> str:
    assert job.programs is not None
    return job.programs.programs.describe(op)


def _deadlock_report(net: Network, V: int, q_head: np.ndarray, req_head: np.ndarray,
                     sc: np.ndarray, total: int) -> str:
    pt = net.ports
    stuck_in = np.nonzero((q_head.reshape(-1, V) >= 0).any(axis=1))[0]
    stuck_out = np.nonzero(req_head >= 0)[0]

    def name(p: int, what: str) -> str:
        r = int(pt.port_router[p])
        local = int(p - pt.router_port_start[r])
        return f"router {r} port {local} ({what}, {net.link_classes[pt.port_class[p]]})"

    names = [name(p, "input") for p in stuck_in[:8]]
    names += [name(p, "output waiting for credit") for p in stuck_out[:8]]
    return (
        f"deadlock at t={int(sc[E.S_NOW])}ps: {total - int(sc[E.S_DELIVERED])} of {total} packets "
        f"undelivered; {stuck_in.size} input ports hold packets, {stuck_out.size} output ports "
        f"wait for credits. Stuck ports: " + "; ".join(names)
    )
