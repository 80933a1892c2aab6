"""Native engine driver: turns a prepared run into flat arrays, runs the compiled kernel, and
hands back raw per-packet and per-port arrays.

The kernel runs in slices of ``budget`` events so that a caller can show progress and so that the
event heap can grow without the kernel allocating; state lives in the arrays created here.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from federation.components import RouteTables
from federation.engine import kernel as K
from federation.errors import RoutingError, SimulationError
from federation.network import Network
from federation.units import PS_PER_S


@dataclass
class LinkFigures:
    """Resolved per-class figures (bytes/s, seconds, bytes)."""

    bandwidth: float
    latency: float
    buffer: float


@dataclass
class Packets:
    """Packets of a run (creation time sorted), built from messages by :func:`packetize`."""

    time_ps: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    size: np.ndarray
    msg: np.ndarray
    via: np.ndarray

    @property
    def count(self) -> int:
        return int(self.time_ps.shape[0])


@dataclass
class NativeRun:
    """Everything the kernel needs, already resolved (see :func:`federation.runner.prepare`)."""

    network: Network
    links: dict[str, LinkFigures]
    nic_bandwidth: float
    router_delay_s: float
    n_vcs: int
    tables: RouteTables
    packets: Packets


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


def packetize(time_ps: np.ndarray, src: np.ndarray, dst: np.ndarray, size: np.ndarray,
              packet_size: int) -> tuple[np.ndarray, ...]:
    """Split messages into packets of ``packet_size`` bytes (the last one shorter)."""
    size = np.maximum(size.astype(np.int64), 1)
    npk = (size + packet_size - 1) // packet_size
    msg = np.repeat(np.arange(size.shape[0], dtype=np.int64), npk)
    first = np.repeat(np.cumsum(npk) - npk, npk)
    idx = np.arange(msg.shape[0]) - first
    psize = np.minimum(packet_size, size[msg] - idx * packet_size)
    return time_ps[msg], src[msg], dst[msg], psize.astype(np.int64), msg


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
    """Run the kernel to completion; raise :class:`SimulationError` on deadlock."""
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
    port_lat = np.round(lat[pt.port_class] * PS_PER_S).astype(np.int64)
    port_buf = np.floor(buf[pt.port_class]).astype(np.int64)
    router_delay = np.int64(round(job.router_delay_s * PS_PER_S))

    credits = np.repeat(port_buf[pt.port_peer], V).astype(np.int64)
    to_nic = pt.port_router[pt.port_peer] < 0
    credits.reshape(P, V)[to_nic, :] = K.INF_CREDIT

    # ---- packets per NIC, in creation order
    order = np.lexsort((np.arange(Kc), pk.time_ps, pk.src))
    nic_pkts = order.astype(np.int32)
    nic_first = np.zeros(N + 1, dtype=np.int64)
    np.cumsum(np.bincount(pk.src, minlength=N), out=nic_first[1:])

    t = job.tables
    vc_bump = t.port_vc_bump if t.port_vc_bump is not None else np.zeros(P, np.uint8)
    port_dim = t.port_dim if t.port_dim is not None else np.full(P, -1, np.int16)
    dateline = t.port_dateline if t.port_dateline is not None else np.zeros(P, np.uint8)

    # ---- state
    sc = np.zeros(K.N_SCALARS, dtype=np.int64)
    cap = max(1024, 4 * (P * V + N))
    hk = np.full(cap, K.KEY_MAX, dtype=np.int64)
    ha = np.zeros(cap, dtype=np.int64)
    hb = np.zeros(cap, dtype=np.int64)
    # initial events: each NIC wakes at its first packet; a sorted array is a valid heap
    has = nic_first[1:] > nic_first[:-1]
    nodes = np.nonzero(has)[0]
    first_t = pk.time_ps[nic_pkts[nic_first[nodes]]]
    o = np.lexsort((nodes, first_t))
    n0 = nodes.shape[0]
    if n0 and first_t.max() >= K.TIME_LIMIT_PS:
        raise SimulationError("traffic extends beyond the engine's 8.8 s of simulated time")
    hk[:n0] = (first_t[o] << K.SEQ_BITS) | np.arange(n0)
    ha[:n0] = nodes[o] * 8 + K.EV_NIC
    sc[K.S_HEAP] = n0
    sc[K.S_SEQ] = n0
    nic_wake = np.full(N, -1, dtype=np.int64)
    nic_wake[nodes[o]] = first_t[o]

    ps = _cache_aligned_rows(Kc, K.PS_COLS)
    ps[:, K.P_NEXT] = -1
    ps[:, K.P_DIM] = -1
    ps[:, K.P_MINIMAL] = 1
    ps[:, K.P_DST] = pk.dst
    ps[:, K.P_SIZE] = pk.size
    ps[:, K.P_VIA] = pk.via
    ps[:, K.P_SRC] = pk.src
    q_head = np.full(P * V, -1, dtype=np.int32)
    q_tail = np.full(P * V, -1, dtype=np.int32)
    occ = np.zeros(P, dtype=np.int64)
    busy_until = np.zeros(P, dtype=np.int64)
    wake = np.zeros(P, dtype=np.int8)
    req_head = np.full(P, -1, dtype=np.int64)
    req_tail = np.full(P, -1, dtype=np.int64)
    req_next = np.full(P * V, -1, dtype=np.int64)
    stall_start = np.full(P, -1, dtype=np.int64)
    nic_ptr = nic_first[:-1].copy()

    pkt_inject = np.full(Kc, -1, dtype=np.int64)
    pkt_deliver = np.full(Kc, -1, dtype=np.int64)
    port_bytes = np.zeros(P, dtype=np.int64)
    port_pkts = np.zeros(P, dtype=np.int64)
    port_busy = np.zeros(P, dtype=np.int64)
    port_stall = np.zeros(P, dtype=np.int64)
    port_peak = np.zeros(P, dtype=np.int64)

    node_router = net.node_router.astype(np.int32)
    node_port = pt.node_port.astype(np.int32)
    nic_port = pt.nic_port.astype(np.int32)
    gnext = np.ascontiguousarray(t.gnext, dtype=np.int32)
    lnext = np.ascontiguousarray(t.lnext, dtype=np.int32)
    rgroup = t.router_group.astype(np.int32)
    rlocal = t.router_local.astype(np.int32)
    vc_bump = vc_bump.astype(np.uint8)
    port_dim = port_dim.astype(np.int32)
    dateline = dateline.astype(np.uint8)

    def step(n: int) -> int:
        return K.run_kernel(
            n,
            V, router_delay, pt.port_peer, pt.port_router, port_ser, port_lat, port_buf,
            node_router, node_port, nic_port,
            gnext, lnext, rgroup, rlocal, t.vc_mode, vc_bump, port_dim, dateline,
            bool(t.adaptive), np.int64(t.adaptive_bias),
            np.int64(t.phase_vc_offset),
            pk.time_ps, nic_first, nic_pkts,
            sc, hk, ha, hb,
            ps,
            q_head, q_tail, occ, credits, busy_until, wake, req_head, req_tail, req_next,
            stall_start,
            nic_ptr, nic_wake,
            pkt_inject, pkt_deliver,
            port_bytes, port_pkts, port_busy, port_stall, port_peak,
        )

    step(0)  # compiles on first use (or loads numba's cache); not part of the timed run
    wall0 = time.perf_counter()
    while True:
        status = step(budget)
        if status == K.ST_BUDGET:
            if progress is not None:
                progress(int(sc[K.S_DELIVERED]), Kc)
            continue
        if status == K.ST_HEAP_FULL:
            n = hk.shape[0]
            hk = np.concatenate([hk, np.full(n, K.KEY_MAX, dtype=np.int64)])
            ha = np.resize(ha, 2 * n)
            hb = np.resize(hb, 2 * n)
            continue
        break
    wall = time.perf_counter() - wall0
    if progress is not None:
        progress(int(sc[K.S_DELIVERED]), Kc)
    if status == K.ST_BAD_VC:
        p = int(sc[K.S_BADPKT])
        raise RoutingError(
            f"packet {p} (node {int(pk.src[p])} -> {int(pk.dst[p])}) needed a VC beyond "
            f"router.vcs = {V} or found no route; the routing's declared VC count is wrong"
        )
    if status == K.ST_TIME_LIMIT:
        raise SimulationError("the run passed the engine's 8.8 s of simulated time")
    if status == K.ST_DEADLOCK:
        raise SimulationError(_deadlock_report(net, V, q_head, req_head, credits, sc, Kc))
    return RawResult(
        pkt_inject=pkt_inject, pkt_deliver=pkt_deliver, pkt_hops=ps[:, K.P_HOPS].copy(),
        pkt_minimal=ps[:, K.P_MINIMAL].astype(np.int8), pkt_via=ps[:, K.P_VIA].copy(),
        port_bytes=port_bytes, port_pkts=port_pkts,
        port_busy=port_busy, port_stall=port_stall, port_peak=port_peak,
        end_ps=int(sc[K.S_NOW]), events=int(sc[K.S_EVENTS]), packet_hops=int(sc[K.S_HOPS]),
        wall_s=wall,
    )


def _deadlock_report(net: Network, V: int, q_head: np.ndarray, req_head: np.ndarray,
                     credits: np.ndarray, sc: np.ndarray, total: int) -> str:
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
        f"deadlock at t={int(sc[K.S_NOW])}ps: {total - int(sc[K.S_DELIVERED])} of {total} packets "
        f"undelivered; {stuck_in.size} input ports hold packets, {stuck_out.size} output ports "
        f"wait for credits. Stuck ports: " + "; ".join(names)
    )
