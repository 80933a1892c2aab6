"""Open-loop packets in and out of the packet rows, a chunk of time at a time.

Every packet lives in a row of the packet state only while it exists, so a run's memory
follows what is queued and in flight, not its total packet count (issue: a 1 ms megafly or a
10^8-packet sweep point must fit).  The driver (:mod:`federation.engine.native`) stops the
loop at the start of each chunk of open-loop traffic (:class:`~federation.engine.traffic.
PacketChunk`) and :func:`load_chunk` puts the chunk's packets into free rows behind each
NIC's backlog.  When a packet is delivered the loop writes one record of it into ``Sim.rec``
(:func:`record`) and frees its row; the driver drains the records into a
:class:`~federation.packet_stats.PacketSink` when the buffer fills or the run ends.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from federation.engine import api as A
from federation.engine import events as E
from federation.engine.events import EV_NIC, S_FREE, S_REC, _push
from federation.engine.state import Prog, Sim
from federation.engine.traffic import PacketChunk
from federation.errors import SimulationError

# columns of a delivery record (Sim.rec)
REC_ID = 0  #: the packet's number (creation order over the run)
REC_MSG = 1  #: its message's number
REC_SRC = 2
REC_DST = 3
REC_SIZE = 4
REC_CREATED = 5  #: ps
REC_INJECT = 6  #: ps, when it left its NIC (-1: it never did)
REC_DELIVER = 7  #: ps (-1: still in the network when the run ended)
REC_HOPS = 8  #: router-to-router hops
REC_MINIMAL = 9  #: 1 unless the routing marked it non-minimal
REC_VIA = 10  #: the routing's intermediate (group or router, -1 none)
REC_COLS = 11

#: records the loop buffers before the driver drains them (88 B each)
REC_CAPACITY = 1 << 16


@njit(cache=True, inline="always")
def record(sim, pg, row, now):
    """Open-loop packet in ``row`` reached its destination NIC: write its record for the
    driver and give its row back."""
    sc = sim.sc
    i = sc[S_REC]
    sc[S_REC] = i + 1
    rec = sim.rec
    ps = sim.ps
    rec[i, REC_ID] = sim.row_id[row]
    rec[i, REC_MSG] = sim.row_msg[row]
    rec[i, REC_SRC] = ps[row, A.P_SRC]
    rec[i, REC_DST] = ps[row, A.P_DST]
    rec[i, REC_SIZE] = ps[row, A.P_SIZE]
    rec[i, REC_CREATED] = sim.pkt_time[row]
    rec[i, REC_INJECT] = sim.pkt_inject[row]
    rec[i, REC_DELIVER] = now
    rec[i, REC_HOPS] = ps[row, A.P_HOPS]
    rec[i, REC_MINIMAL] = ps[row, A.P_MINIMAL]
    rec[i, REC_VIA] = ps[row, A.P_VIA]
    sim.row_id[row] = -1
    pg.free[sc[S_FREE]] = row
    sc[S_FREE] += 1


@njit(cache=True)
def wake_nics(sim, nodes, times):
    """Wake each of ``nodes`` at ``times`` unless a wake-up at or before then is pending
    (the loop's NIC handler looks at both its queues whenever it wakes)."""
    for i in range(nodes.shape[0]):
        n = nodes[i]
        t = times[i]
        w = sim.nic_wake[n]
        if w < 0 or w > t:
            sim.nic_wake[n] = t
            _push(sim.hk, sim.ha, sim.hb, sim.sc, t, EV_NIC, n, 0, 0)


def cache_aligned_rows(rows: int, cols: int) -> np.ndarray:
    """Zeroed int32 ``rows x cols`` matrix whose rows start on 64-byte boundaries (NumPy only
    promises 16), so that a 16-column row is exactly one cache line."""
    raw = np.zeros(rows * cols + 16, dtype=np.int32)
    skip = (-raw.ctypes.data % 64) // 4
    return raw[skip:skip + rows * cols].reshape(rows, cols)


def grow_pool(sim: Sim, pg: Prog, need: int = 0) -> tuple[Sim, Prog]:
    """Double the packet rows (until ``need`` of them are free): the row arrays grow at their
    end and the new rows join the free stack, lowest popped first."""
    old = pg.row_flow.shape[0]
    n_free = int(sim.sc[S_FREE])
    rows = 2 * old
    while rows - old + n_free < need:
        rows *= 2
    ps = cache_aligned_rows(rows, A.PS_COLS)
    ps[:old] = sim.ps

    def longer(a: np.ndarray, fill: int) -> np.ndarray:
        return np.concatenate([a, np.full(rows - a.shape[0], fill, dtype=a.dtype)])

    free = np.empty(rows, dtype=np.int64)
    added = rows - old
    free[:added] = np.arange(rows - 1, old - 1, -1)
    free[added:added + n_free] = pg.free[:n_free]
    sim.sc[S_FREE] = added + n_free
    sim = sim._replace(
        ps=ps, pkt_time=longer(sim.pkt_time, 0), pkt_inject=longer(sim.pkt_inject, -1),
        row_id=longer(sim.row_id, -1), row_msg=longer(sim.row_msg, -1),
        pkt_tail=longer(sim.pkt_tail, 0) if sim.cut_through else sim.pkt_tail)
    return sim, pg._replace(row_flow=longer(pg.row_flow, -1), free=free)


def load_chunk(sim: Sim, pg: Prog, chunk: PacketChunk) -> tuple[Sim, Prog]:
    """Put ``chunk``'s packets into free rows, queued at each NIC behind the packets it has
    not sent yet, and wake the NICs that had none.  Every event before the chunk's first
    creation time has been handled (the loop stopped there)."""
    pk = chunk.packets
    k = pk.count
    V, N = int(sim.n_vcs), sim.nic_ptr.shape[0]
    if k and not 0 <= int(pk.vc.min()) <= int(pk.vc.max()) < V:
        raise SimulationError(f"an injection VC is outside 0..{V - 1} (router.vcs = {V})")
    C = int(sim.n_classes)
    if k and not 0 <= int(pk.cls.min()) <= int(pk.cls.max()) < C:
        raise SimulationError(f"a traffic class is outside 0..{C - 1}")
    reserve = 4 if int(pg.n_ops) > 0 else 0  # the loop's births need a few free rows
    if int(sim.sc[S_FREE]) < k + reserve:
        sim, pg = grow_pool(sim, pg, k + reserve)
    top = int(sim.sc[S_FREE])
    rows = pg.free[top - k:top][::-1].copy()  # pop: the stack's top first
    sim.sc[S_FREE] = top - k
    ps = sim.ps
    ps[rows] = 0
    ps[rows, A.P_NEXT] = -1
    ps[rows, A.P_DIM] = -1
    ps[rows, A.P_MINIMAL] = 1
    ps[rows, A.P_DST] = pk.dst
    ps[rows, A.P_SIZE] = pk.size
    ps[rows, A.P_VIA] = pk.via
    ps[rows, A.P_SRC] = pk.src
    ps[rows, A.P_VC] = pk.vc
    ps[rows, A.P_CLASS] = pk.cls
    sim.pkt_time[rows] = pk.time_ps
    sim.pkt_inject[rows] = -1
    sim.row_id[rows] = chunk.first_packet + np.arange(k, dtype=np.int64)
    sim.row_msg[rows] = chunk.first_message + pk.msg
    pg.row_flow[rows] = -1
    sim.sc[E.S_LOADED] += k

    # each NIC's queue: what it has not sent yet, then the chunk's packets in creation order
    left = sim.nic_first[1:] - sim.nic_ptr
    starts = np.repeat(sim.nic_ptr - np.cumsum(left) + left, left)
    backlog = sim.nic_pkts[np.arange(int(left.sum()), dtype=np.int64) + starts]
    new_order = np.lexsort((np.arange(k), pk.time_ps, pk.src))
    src = np.concatenate([np.repeat(np.arange(N), left), pk.src[new_order]])
    queue = np.concatenate([backlog, rows[new_order]]).astype(np.int32)
    nic_first = np.zeros(N + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=N), out=nic_first[1:])
    nic_pkts = queue[np.argsort(src, kind="stable")] if queue.size else np.zeros(1, np.int32)
    sim = sim._replace(nic_first=nic_first, nic_pkts=nic_pkts, nic_ptr=nic_first[:-1].copy())

    idle = np.nonzero((left == 0) & (np.bincount(pk.src, minlength=N) > 0))[0]
    if idle.size:
        need = int(sim.sc[E.S_HEAP]) + idle.size + 8
        if need > sim.hk.shape[0]:
            n = max(need, 2 * sim.hk.shape[0])
            sim = sim._replace(
                hk=np.concatenate([sim.hk, np.full(n - sim.hk.shape[0], E.KEY_MAX, np.int64)]),
                ha=np.resize(sim.ha, n), hb=np.resize(sim.hb, n))
        first = sim.pkt_time[nic_pkts[nic_first[idle]]]
        wake_nics(sim, idle.astype(np.int64), first.astype(np.int64))
    return sim, pg


def undelivered(sim: Sim) -> np.ndarray:
    """Records of the open-loop packets still in rows when the run ended (delivery -1): a
    background still in flight when the rank programs finished."""
    rows = np.nonzero(sim.row_id >= 0)[0]
    out = np.zeros((rows.size, REC_COLS), dtype=np.int64)
    ps = sim.ps
    out[:, REC_ID] = sim.row_id[rows]
    out[:, REC_MSG] = sim.row_msg[rows]
    out[:, REC_SRC] = ps[rows, A.P_SRC]
    out[:, REC_DST] = ps[rows, A.P_DST]
    out[:, REC_SIZE] = ps[rows, A.P_SIZE]
    out[:, REC_CREATED] = sim.pkt_time[rows]
    out[:, REC_INJECT] = sim.pkt_inject[rows]
    out[:, REC_DELIVER] = -1
    out[:, REC_HOPS] = ps[rows, A.P_HOPS]
    out[:, REC_MINIMAL] = ps[rows, A.P_MINIMAL]
    out[:, REC_VIA] = ps[rows, A.P_VIA]
    return out
