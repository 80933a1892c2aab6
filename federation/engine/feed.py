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

import ctypes
from functools import cache
from typing import Any, NamedTuple

import numpy as np

from federation.engine import api as A
from federation.engine import events as E
from federation.engine.credits import returns_then
from federation.engine.events import EV_NIC, S_FREE, S_REC, S_WAKES, push
from federation.engine.iq import grown_rows
from federation.engine.jit import part
from federation.engine.qos import CLASS_MASK, reset_nic_ptrs, settle_nics
from federation.engine.queue import grown
from federation.engine.state import Sim
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
#: -1: an open-loop packet; else a rank program's packet of this flow (message = flow // 3;
#: its REC_ID is -1, the driver numbers them in delivery order): only when the run keeps
#: their rows (``Prog.keep``)
REC_FLOW = 11
REC_CLASS = 12  #: traffic class (QoS)
REC_COLS = 13

#: records the loop buffers before the driver drains them (104 B each: 0.85 MB; the helper
#: folds up to three more, :data:`federation.engine.feeder.RECORD_BUFFERS`); each drain is a
#: stop of the loop and a vectorised pass in Python (about 120 per million packets)
REC_CAPACITY = 1 << 13

# columns of a waiting packet (Sim.feed): one cache line per packet, read when the packet
# reaches the head of its NIC
F_TIME = 0  #: creation time, ps
F_ID = 1  #: packet number
F_MSG = 2  #: message number
F_DST = 3
F_SIZE = 4
F_VIA = 5
F_VC = 6
F_CLS = 7  #: traffic class (with QoS classes at injection, links above: qos.LINK_SHIFT)
F_COLS = 8


@part
def end_nic_stall(sim, node, now):
    """Node ``node``'s NIC starts to send at ``now``: end its stall if its packet had waited
    for credit (the NIC port's ``stall_start``), in its port's counter and (``counters``) its
    NIC counter, before the routing's NIC hook runs, so that the hook reads the stall once."""
    o = sim.nic_port[node]
    start = sim.stall_start[o]
    if start >= 0:
        sim.nic_ctr[node, A.NC_STALL] += now - start
        sim.port_stall[o] += now - start
        sim.stall_start[o] = -1


@part
def count_request(sim, node, row):
    """Node ``node``'s NIC starts to send the packet in ``row``: count a request packet and
    its flits (a loop with NIC counters only).  Aries counts flits as they leave; a packet's
    flits count here all at once, so a reading during its serialisation is ahead by its
    rest."""
    ctr = sim.nic_ctr
    size = np.int64(sim.ps[row, A.P_SIZE])
    ctr[node, A.NC_REQ_PKTS] += 1
    ctr[node, A.NC_REQ_FLITS] += (size + sim.nic_flit - 1) // sim.nic_flit


@part
def count_response(sim, row, now):
    """The packet in ``row`` is delivered at ``now``: its source NIC's cumulative latency
    grows by its network latency (leaving its NIC to delivery: what Aries' request-to-response
    latency measures but the response's way back, which this model does not send).  A loop
    with NIC counters calls it before the delivery frees the row."""
    sim.nic_ctr[sim.ps[row, A.P_SRC], A.NC_RSP_LAT] += now - sim.pm[row, A.M_INJECT]


@part
def record(sim, pg, row, now):
    """Open-loop packet in ``row`` reached its destination NIC: write its record for the
    driver and give its row back."""
    sc = sim.sc
    i = write_record(sim, row, now)
    rec = sim.rec
    pm = sim.pm
    rec[i, REC_ID] = pm[row, A.M_ID]
    rec[i, REC_MSG] = pm[row, A.M_MSG]
    rec[i, REC_FLOW] = -1
    pm[row, A.M_ID] = -1
    pg.free[sc[S_FREE]] = row
    sc[S_FREE] += 1


@part
def record_program(sim, row, f, now):
    """Rank-program packet of flow ``f`` in ``row`` reached its destination NIC and the run
    keeps its packets' rows (``Prog.keep``): write its record (the caller frees the row)."""
    i = write_record(sim, row, now)
    rec = sim.rec
    rec[i, REC_ID] = -1
    rec[i, REC_MSG] = f // 3
    rec[i, REC_FLOW] = f


@part
def write_record(sim, row, now):
    """The next delivery record (returned) with the figures of the packet in ``row``, which
    arrived ``now``; the caller fills in who it is."""
    sc = sim.sc
    i = sc[S_REC]
    sc[S_REC] = i + 1
    rec = sim.rec
    ps = sim.ps
    pm = sim.pm
    rec[i, REC_SRC] = ps[row, A.P_SRC]
    rec[i, REC_DST] = ps[row, A.P_DST]
    rec[i, REC_SIZE] = ps[row, A.P_SIZE]
    rec[i, REC_CREATED] = pm[row, A.M_TIME]
    rec[i, REC_INJECT] = pm[row, A.M_INJECT]
    rec[i, REC_DELIVER] = now
    rec[i, REC_HOPS] = ps[row, A.P_HOPS]
    rec[i, REC_MINIMAL] = ps[row, A.P_MINIMAL]
    rec[i, REC_VIA] = ps[row, A.P_VIA]
    rec[i, REC_CLASS] = ps[row, A.P_CLASS]
    return i


@part
def wake_nics(sim):
    """Wake the NICs :func:`load_chunk` listed (``sim.wakes[:sc[S_WAKES]]``: node, time), each
    unless a wake-up at or before then is pending (the loop's NIC handler looks at both its
    queues whenever it wakes).  The loop does it first thing, in list order; the driver has
    made room in the queue for them."""
    sc = sim.sc
    for i in range(sc[S_WAKES]):
        n = sim.wakes[i, 0]
        t = sim.wakes[i, 1]
        w = sim.nic_wake[n]
        if w < 0 or w > t:
            sim.nic_wake[n] = t
            sim.nic_wake_key[n] = push(sim, t, EV_NIC, n, 0, 0)
            returns_then(sim, sim.nic_port[n], t, sim.nic_wake_key[n])
    sc[S_WAKES] = 0


def aligned_rows(rows: int, cols: int, dtype: type = np.int32) -> np.ndarray:
    """Zeroed ``rows x cols`` matrix whose rows start on 64-byte boundaries (NumPy only
    promises 16), so that a 64-byte row (16 int32 or 8 int64) is exactly one cache line."""
    size = np.dtype(dtype).itemsize
    raw = np.zeros(rows * cols + 64 // size, dtype=dtype)
    skip = (-raw.ctypes.data % 64) // size
    return raw[skip:skip + rows * cols].reshape(rows, cols)


def grow_queue(sim: Sim, extra: int = 0) -> Sim:
    """``sim`` with room in its event queue for ``extra`` events pushed from outside the loop,
    or for what the loop ran short of (:func:`~federation.engine.queue.grown`), and in its
    pool of credit returns (:mod:`federation.engine.credits`)."""
    sim = sim._replace(q=grown(sim.q, extra))
    free = int(sim.sc[E.S_CRFREE])
    if free < 8:
        old = sim.cr_free.shape[0]
        cr = np.zeros((2 * old, 4), dtype=np.int64)
        cr[:old] = sim.cr
        stack = np.empty(2 * old, dtype=np.int64)
        stack[:free] = sim.cr_free[:free]
        stack[free:free + old] = np.arange(2 * old - 1, old - 1, -1)
        sim.sc[E.S_CRFREE] = free + old
        sim = sim._replace(cr=cr, cr_free=stack)
    return sim


def credit_pool(rows: int) -> tuple[np.ndarray, np.ndarray]:
    """An empty pool of ``rows`` credit returns and its free stack."""
    return (np.zeros((rows, 4), dtype=np.int64),
            np.arange(rows - 1, -1, -1, dtype=np.int64))


def backlog(sim: Sim) -> tuple[np.ndarray, np.ndarray]:
    """``(feed slots, their nodes)`` of the packets each NIC has not sent yet, NIC by NIC
    in order (less the slots a NIC with QoS classes at injection sent out of turn)."""
    left = sim.nic_first[1:] - sim.nic_ptr
    slots = np.repeat(sim.nic_ptr - np.cumsum(left) + left, left) + np.arange(int(left.sum()))
    node = np.repeat(np.arange(left.shape[0]), left)
    if sent_out_of_turn(sim):
        keep = sim.feed[slots, F_ID] >= 0
        slots, node = slots[keep], node[keep]
    return slots, node


def sent_out_of_turn(sim: Sim) -> int:
    """Slots behind some NIC's pointer already sent (QoS classes at injection)."""
    return int(sim.feed[sim.feed.shape[0] - 1, 0])


def grow_pool(sim: Sim, pg: Any, need: int = 0) -> tuple[Sim, Any]:
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
        ps=ps, pm=more_meta(sim.pm, rows), iq=grown_rows(sim.iq, rows),
        pkt_tail=longer(sim.pkt_tail, 0) if sim.cut_through else sim.pkt_tail)
    return sim, pg._replace(row_flow=longer(pg.row_flow, -1), free=free)


@part
def fill_row(sim, row, node, dst, size, via, vc, cls, mode, created):
    """Packet row ``row``'s state and metadata as a packet from ``node`` leaves with them: the
    row cleared (over the constant ``PS_COLS``: a count LLVM does not know makes the loop of
    stores a call to ``memset``), not queued, on no dimension, minimal, not injected yet."""
    ps = sim.ps
    for c in range(A.PS_COLS):
        ps[row, c] = 0
    ps[row, A.P_NEXT] = -1
    ps[row, A.P_DIM] = -1
    ps[row, A.P_MINIMAL] = 1
    ps[row, A.P_MODE] = mode
    ps[row, A.P_DST] = dst
    ps[row, A.P_SIZE] = size
    ps[row, A.P_VIA] = via
    ps[row, A.P_SRC] = node
    ps[row, A.P_VC] = vc
    ps[row, A.P_CLASS] = cls
    sim.pm[row, A.M_TIME] = created
    sim.pm[row, A.M_INJECT] = -1


@part
def born(sim, pg, node, slot):
    """The open-loop packet in feed ``slot`` (at the head of ``node``'s NIC) takes a free
    row; returns the row."""
    sc = sim.sc
    sc[S_FREE] -= 1
    row = pg.free[sc[S_FREE]]
    pg.row_flow[row] = -1
    f = sim.feed
    fill_row(sim, row, node, f[slot, F_DST], f[slot, F_SIZE], f[slot, F_VIA], f[slot, F_VC],
             f[slot, F_CLS], -1, f[slot, F_TIME])  # int32 class: links dropped
    sim.pm[row, A.M_ID] = f[slot, F_ID]
    sim.pm[row, A.M_MSG] = f[slot, F_MSG]
    return row


def row_meta(rows: int) -> np.ndarray:
    """The per-row metadata of ``rows`` free rows (time 0, not injected, no packet)."""
    pm = aligned_rows(rows, A.PM_COLS, np.int64)
    pm[:, A.M_INJECT] = -1
    pm[:, A.M_ID] = -1
    pm[:, A.M_MSG] = -1
    return pm


def more_meta(pm: np.ndarray, rows: int) -> np.ndarray:
    """``pm`` grown to ``rows`` rows, the new ones free."""
    out = row_meta(rows)
    out[:pm.shape[0]] = pm
    return out


@cache
def return_freed_memory() -> None:
    """Keep glibc from holding on to freed arrays.  Its malloc raises the size above which a
    block gets its own mapping to the size of each such block freed (up to 32 MB), so after
    the first chunk load the next chunks' temporaries come from the heap and stay with the
    process when freed: 20-25 MB more peak memory on BookSim's p=4 scenario.  A fixed
    threshold (glibc's initial 128 KiB) maps every large array and unmaps it when freed.
    Elsewhere (no ``mallopt``) nothing changes."""
    try:
        ctypes.CDLL(None).mallopt(-3, 128 * 1024)  # M_MMAP_THRESHOLD
    except (OSError, AttributeError, TypeError):
        pass


def node_order(node: np.ndarray, n_nodes: int) -> np.ndarray:
    """``np.argsort(node, kind="stable")``, as a radix sort when node numbers fit 16 bits
    (NumPy sorts 16-bit integers by radix: several times faster than its merge sort on the
    chunk-sized arrays every chunk load sorts twice); the same order either way."""
    if n_nodes <= 1 << 16:
        return np.argsort(node.astype(np.uint16), kind="stable")
    return np.argsort(node, kind="stable")


def feed_rows(n: int) -> np.ndarray:
    """A zeroed feed of ``n`` rows, one cache line per waiting packet, and a spare last row:
    its column 0 counts the slots sent out of turn still in the feed (QoS classes at
    injection, :mod:`federation.engine.nic_qos`; zero otherwise)."""
    return aligned_rows(n + 1, F_COLS, np.int64)


class ChunkRows(NamedTuple):
    """A chunk's packets as feed rows, node by node (each node's in creation order)."""

    rows: np.ndarray  #: int64[k, F_COLS]
    node: np.ndarray  #: int64[k] the node of each row (non-decreasing)


def chunk_rows(chunk: PacketChunk, n_nodes: int, vc_need: int = 0) -> ChunkRows:
    """The feed rows of ``chunk``'s packets, sorted by node: what loading the chunk copies
    in; independent of the loop's state, so the driver's helper thread makes them while the
    loop runs (:mod:`federation.engine.feeder`).  With ``vc_need`` (QoS classes: the VCs of
    each) an injection VC is taken modulo it here, so that the loop only adds its class's
    base (the same VC: ``need`` divides ``router.vcs``)."""
    pk = chunk.packets
    k = pk.count
    order = node_order(pk.src, n_nodes)  # by node, each in creation order (checked)
    rows = np.empty((k, F_COLS), dtype=np.int64)
    vc = pk.vc % vc_need if vc_need else pk.vc
    rows[:, F_ID] = order  # packet i of the chunk is number first_packet + i
    rows[:, F_ID] += chunk.first_packet
    for col, x in ((F_TIME, pk.time_ps), (F_MSG, pk.msg), (F_DST, pk.dst), (F_SIZE, pk.size),
                   (F_VIA, pk.via), (F_VC, vc), (F_CLS, pk.cls)):
        rows[:, col] = x[order]
    rows[:, F_MSG] += chunk.first_message
    return ChunkRows(rows, pk.src[order].astype(np.int64))


def _places(node: np.ndarray, count: np.ndarray, start: np.ndarray) -> np.ndarray:
    """Where the items of a node-sorted list go: node ``v``'s ``count[v]`` items, in their
    order, from ``start[v]`` on."""
    before = np.cumsum(count) - count  # the list's items of the nodes before each
    return start[node] + np.arange(node.shape[0]) - before[node]


def load_chunk(sim: Sim, rows: ChunkRows, arb_state: tuple = ()) -> Sim:
    """Queue a chunk's packets (its :func:`chunk_rows`) in the feed, each NIC's behind the
    packets it has not sent yet, and wake the NICs that had none.  Every event before the
    chunk's first creation time has been handled (the loop stopped there).  Packet rows are
    taken later, one packet at a time as each reaches the head of its NIC (:func:`born`).
    A QoS policy's state at injection points into the new feed
    (:func:`federation.engine.qos.reset_nic_ptrs`)."""
    k = rows.rows.shape[0]
    N = sim.nic_ptr.shape[0]
    sim.sc[E.S_LOADED] += k
    # what each NIC has not sent yet (its head may already have a row), then the chunk's
    # packets: node by node, the backlog first, each part in its own order (a stable merge
    # of two node-sorted lists, placed by counting)
    back, back_node = backlog(sim)
    n_back = np.bincount(back_node, minlength=N)
    n_new = np.bincount(rows.node, minlength=N)
    nic_first = np.zeros(N + 1, dtype=np.int64)
    np.cumsum(n_back + n_new, out=nic_first[1:])
    feed = feed_rows(back.shape[0] + k)
    feed[_places(back_node, n_back, nic_first[:-1])] = sim.feed[back]
    feed[_places(rows.node, n_new, nic_first[:-1] + n_back)] = rows.rows
    had = sim.nic_first[1:] > sim.nic_ptr
    sim = sim._replace(nic_first=nic_first, nic_ptr=nic_first[:-1].copy(), feed=feed)
    settle_nics(arb_state, sim.port_class_bytes if int(sim.n_classes) > 1 else sim.port_bytes,
                sim.nic_port)  # before the one-class marks change
    reset_nic_ptrs(arb_state, nic_first, feed[:-1, F_CLS])

    idle = np.nonzero(~had & (n_new > 0))[0]
    if idle.size:
        sim = grow_queue(sim, idle.size)
        k = int(sim.sc[E.S_WAKES])  # the loop wakes them when it resumes (wake_nics)
        sim.wakes[k:k + idle.size, 0] = idle
        sim.wakes[k:k + idle.size, 1] = feed[nic_first[idle], F_TIME]
        sim.sc[E.S_WAKES] = k + idle.size
    return sim


def waiting(sim: Sim) -> int:
    """Open-loop packets in the feed not yet sent (the NICs' backlog)."""
    return int((sim.nic_first[1:] - sim.nic_ptr).sum()) - sent_out_of_turn(sim)


def undelivered(sim: Sim) -> np.ndarray:
    """Records of the open-loop packets the run ended with (delivery -1): those in rows (in
    the network, or at the head of their NIC), then those still waiting in the feed.  A
    background still there when the rank programs finished."""
    pm = sim.pm
    rows = np.nonzero(pm[:, A.M_ID] >= 0)[0]
    ps = sim.ps
    out = np.zeros((rows.size, REC_COLS), dtype=np.int64)
    out[:, REC_ID] = pm[rows, A.M_ID]
    out[:, REC_MSG] = pm[rows, A.M_MSG]
    out[:, REC_SRC] = ps[rows, A.P_SRC]
    out[:, REC_DST] = ps[rows, A.P_DST]
    out[:, REC_SIZE] = ps[rows, A.P_SIZE]
    out[:, REC_CREATED] = pm[rows, A.M_TIME]
    out[:, REC_INJECT] = pm[rows, A.M_INJECT]
    out[:, REC_HOPS] = ps[rows, A.P_HOPS]
    out[:, REC_MINIMAL] = ps[rows, A.P_MINIMAL]
    out[:, REC_VIA] = ps[rows, A.P_VIA]
    out[:, REC_CLASS] = ps[rows, A.P_CLASS]
    out[:, REC_FLOW] = -1
    out[out[:, REC_INJECT] < 0, REC_VIA] = -1  # a NIC's head not yet sent: no route taken
    # the feed past each NIC's pointer, less the heads that already have rows
    slots, node = backlog(sim)
    head_born = (sim.nic_orow[node] >= 0) & (slots == sim.nic_ptr[node])
    slots, node = slots[~head_born], node[~head_born]
    f = sim.feed[slots]
    wait = np.zeros((slots.size, REC_COLS), dtype=np.int64)
    for rc, fc in ((REC_ID, F_ID), (REC_MSG, F_MSG), (REC_DST, F_DST), (REC_SIZE, F_SIZE),
                   (REC_CREATED, F_TIME), (REC_CLASS, F_CLS)):
        wait[:, rc] = f[:, fc]
    wait[:, REC_CLASS] &= CLASS_MASK  # without the links of classes at injection
    wait[:, REC_SRC] = node
    wait[:, REC_INJECT] = -1
    # never injected: no route taken, so no intermediate (the feed's drawn one, F_VIA, would
    # read as a detour in the packets table), and minimal as every unrouted packet is
    wait[:, REC_VIA] = -1
    wait[:, REC_MINIMAL] = 1
    wait[:, REC_FLOW] = -1
    out = np.concatenate([out, wait])
    out[:, REC_DELIVER] = -1
    return out
