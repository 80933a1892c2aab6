"""Open-loop packets in and out of the packet rows, a chunk of time at a time.

Every packet lives in a row of the packet state only while it exists, so a run's memory
follows what is queued and in flight, not its total packet count (issue: a 1 ms megafly or a
10^8-packet sweep point must fit).  The driver (:mod:`federation.engine.native`) stops the
loop at the start of each chunk of open-loop traffic (:class:`~federation.engine.traffic.
PacketChunk`) and :func:`load_chunk` queues the chunk's packets in the *feed* (one 64-byte
row each) behind each NIC's backlog.  A packet takes a row of the packet state when it
reaches the head of its NIC (:func:`born`); when it is delivered the loop writes one record
of it into ``Sim.rec`` (:func:`record`) and frees its row, and the driver drains the records
into a :class:`~federation.engine.packet_stats.PacketSink` when the buffer fills or the run ends.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from federation.engine import api as A
from federation.engine import events as E
from federation.engine.events import EV_NIC, S_FREE, S_REC, _push
from federation.engine.state import Prog, Sim
from federation.engine.traffic import PacketChunk

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
REC_CAPACITY = 1 << 12

# columns of a waiting packet (Sim.feed): one cache line per packet, read when the packet
# reaches the head of its NIC
F_TIME = 0  #: creation time, ps
F_ID = 1  #: packet number
F_MSG = 2  #: message number
F_DST = 3
F_SIZE = 4
F_VIA = 5
F_VC = 6
F_CLS = 7
F_COLS = 8


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


def aligned_rows(rows: int, cols: int, dtype: type = np.int32) -> np.ndarray:
    """Zeroed ``rows x cols`` matrix whose rows start on 64-byte boundaries (NumPy only
    promises 16), so that a 64-byte row (16 int32 or 8 int64) is exactly one cache line."""
    size = np.dtype(dtype).itemsize
    raw = np.zeros(rows * cols + 64 // size, dtype=dtype)
    skip = (-raw.ctypes.data % 64) // size
    return raw[skip:skip + rows * cols].reshape(rows, cols)


def grow_heap(sim: Sim, need: int) -> Sim:
    """The event heap with room for ``need`` events (at least doubled)."""
    n = sim.hk.shape[0]
    if need <= n:
        return sim
    m = max(need, 2 * n)
    return sim._replace(hk=np.concatenate([sim.hk, np.full(m - n, E.KEY_MAX, np.int64)]),
                        ha=np.resize(sim.ha, m), hb=np.resize(sim.hb, m))


def backlog(sim: Sim) -> tuple[np.ndarray, np.ndarray]:
    """``(feed slots, their nodes)`` of the packets each NIC has not sent yet, NIC by NIC
    in order."""
    left = sim.nic_first[1:] - sim.nic_ptr
    slots = np.repeat(sim.nic_ptr - np.cumsum(left) + left, left) + np.arange(int(left.sum()))
    return slots, np.repeat(np.arange(left.shape[0]), left)


def grow_pool(sim: Sim, pg: Prog, need: int = 0) -> tuple[Sim, Prog]:
    """Double the packet rows (until ``need`` of them are free): the row arrays grow at their
    end and the new rows join the free stack, lowest popped first."""
    old = pg.row_flow.shape[0]
    n_free = int(sim.sc[S_FREE])
    rows = 2 * old
    while rows - old + n_free < need:
        rows *= 2
    ps = aligned_rows(rows, A.PS_COLS)
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


@njit(cache=True, inline="always")
def born(sim, pg, node, slot):
    """The open-loop packet in feed ``slot`` (at the head of ``node``'s NIC) takes a free
    row; returns the row."""
    sc = sim.sc
    sc[S_FREE] -= 1
    row = pg.free[sc[S_FREE]]
    pg.row_flow[row] = -1
    ps = sim.ps
    for c in range(ps.shape[1]):
        ps[row, c] = 0
    ps[row, A.P_NEXT] = -1
    ps[row, A.P_DIM] = -1
    ps[row, A.P_MINIMAL] = 1
    f = sim.feed
    ps[row, A.P_DST] = f[slot, F_DST]
    ps[row, A.P_SIZE] = f[slot, F_SIZE]
    ps[row, A.P_VIA] = f[slot, F_VIA]
    ps[row, A.P_SRC] = node
    ps[row, A.P_VC] = f[slot, F_VC]
    ps[row, A.P_CLASS] = f[slot, F_CLS]
    sim.pkt_time[row] = f[slot, F_TIME]
    sim.pkt_inject[row] = -1
    sim.row_id[row] = f[slot, F_ID]
    sim.row_msg[row] = f[slot, F_MSG]
    return row


def feed_rows(n: int) -> np.ndarray:
    """A zeroed feed of ``n`` rows (at least one), one cache line per waiting packet."""
    return aligned_rows(max(n, 1), F_COLS, np.int64)


def load_chunk(sim: Sim, chunk: PacketChunk) -> Sim:
    """Queue ``chunk``'s packets in the feed, each NIC's behind the packets it has not sent
    yet, and wake the NICs that had none.  Every event before the chunk's first creation
    time has been handled (the loop stopped there).  Rows are taken later, one packet at a
    time as each reaches the head of its NIC (:func:`born`)."""
    pk = chunk.packets
    k = pk.count
    N = sim.nic_ptr.shape[0]
    sim.sc[E.S_LOADED] += k
    # what each NIC has not sent yet (its head may already have a row), then the chunk's
    # packets in creation order
    back, back_node = backlog(sim)
    order = np.lexsort((np.arange(k), pk.time_ps, pk.src))
    src = np.concatenate([back_node, pk.src[order]])
    by_node = np.argsort(src, kind="stable")
    feed = feed_rows(src.shape[0])
    nb = back.shape[0]
    both = feed[:src.shape[0]]
    both[:nb] = sim.feed[back]
    for col, x in ((F_TIME, pk.time_ps), (F_ID, chunk.first_packet + np.arange(k)),
                   (F_MSG, chunk.first_message + pk.msg), (F_DST, pk.dst), (F_SIZE, pk.size),
                   (F_VIA, pk.via), (F_VC, pk.vc), (F_CLS, pk.cls)):
        both[nb:, col] = x[order]
    feed[:src.shape[0]] = both[by_node]
    nic_first = np.zeros(N + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=N), out=nic_first[1:])
    had = sim.nic_first[1:] > sim.nic_ptr
    sim = sim._replace(nic_first=nic_first, nic_ptr=nic_first[:-1].copy(), feed=feed)

    idle = np.nonzero(~had & (np.bincount(pk.src, minlength=N) > 0))[0]
    if idle.size:
        sim = grow_heap(sim, int(sim.sc[E.S_HEAP]) + idle.size + 8)
        wake_nics(sim, idle.astype(np.int64), feed[nic_first[idle], F_TIME].copy())
    return sim


def waiting(sim: Sim) -> int:
    """Open-loop packets in the feed not yet sent (the NICs' backlog)."""
    return int((sim.nic_first[1:] - sim.nic_ptr).sum())


def undelivered(sim: Sim) -> np.ndarray:
    """Records of the open-loop packets the run ended with (delivery -1): those in rows (in
    the network, or at the head of their NIC), then those still waiting in the feed.  A
    background still there when the rank programs finished."""
    rows = np.nonzero(sim.row_id >= 0)[0]
    ps = sim.ps
    out = np.zeros((rows.size, REC_COLS), dtype=np.int64)
    out[:, REC_ID] = sim.row_id[rows]
    out[:, REC_MSG] = sim.row_msg[rows]
    out[:, REC_SRC] = ps[rows, A.P_SRC]
    out[:, REC_DST] = ps[rows, A.P_DST]
    out[:, REC_SIZE] = ps[rows, A.P_SIZE]
    out[:, REC_CREATED] = sim.pkt_time[rows]
    out[:, REC_INJECT] = sim.pkt_inject[rows]
    out[:, REC_HOPS] = ps[rows, A.P_HOPS]
    out[:, REC_MINIMAL] = ps[rows, A.P_MINIMAL]
    out[:, REC_VIA] = ps[rows, A.P_VIA]
    # the feed past each NIC's pointer, less the heads that already have rows
    slots, node = backlog(sim)
    head_born = (sim.nic_orow[node] >= 0) & (slots == sim.nic_ptr[node])
    slots, node = slots[~head_born], node[~head_born]
    f = sim.feed[slots]
    wait = np.zeros((slots.size, REC_COLS), dtype=np.int64)
    for rc, fc in ((REC_ID, F_ID), (REC_MSG, F_MSG), (REC_DST, F_DST), (REC_SIZE, F_SIZE),
                   (REC_CREATED, F_TIME), (REC_VIA, F_VIA)):
        wait[:, rc] = f[:, fc]
    wait[:, REC_SRC] = node
    wait[:, REC_INJECT] = -1
    wait[:, REC_MINIMAL] = 1
    out = np.concatenate([out, wait])
    out[:, REC_DELIVER] = -1
    return out
