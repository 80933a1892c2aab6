"""The event queue: near-future events in time buckets, the rest in small heaps.

Events are ordered by one int64 *key*, ``time << SEQ_BITS | (seq mod 2**SEQ_BITS)``: by time in
integer picoseconds, then by scheduling order, so runs are deterministic.  The payload of an
event is two int64 words (``a * 8 + kind`` and ``b + c << 32``).  Equal keys (two events at one
time scheduled exactly ``2**SEQ_BITS`` pushes apart) pop in an unspecified order.

A binary or 4-ary heap of all pending events (the engine's queue until this one) costs a chain of
dependent cache misses per pop: on BookSim's dragonfly it held ~10^5 events and was two thirds
of the loop's time.  Nearly every event is scheduled a little ahead of ``now`` (a serialisation,
a cable, a credit's way back), so this queue is a *calendar*:

* Time is cut into buckets of ``2**shift`` ps (``shift`` per run, from the shortest packet
  serialisation); the ``NB`` buckets after the *current* one form a ring.  A push into the ring
  appends the event to its bucket (a chain of blocks of ``BS`` events): one sequential write.
* When the current bucket is used up, the next non-empty one (a bitmap finds it) is *opened*:
  its events are copied into the *run*, and sorted by key unless the copy found them in order
  (:mod:`federation.engine.queue_sort`).  Pops then read the run in order.
* Events for the current bucket or earlier (a READY at ``now``, an event the clock guard keyed
  at time -1) go to the *side* heap, events past the ring's horizon to the *overflow* heap
  (both 4-ary heaps of keys with their payload beside).  A pop takes the least of the run's
  next event and the two heaps' tops, so the order is exactly the keys' order (:func:`pop`:
  the run's next event directly when the heaps hold none before it).

Invariants: ring buckets hold events of buckets ``cur + 1 .. cur + NB - 1`` only; the run and
the side heap hold events of bucket ``cur`` or earlier; every event in the overflow heap is of
bucket ``cur`` or later.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from federation.engine.jit import part
from federation.engine.queue_sort import sort_unsorted
from federation.models.limits import HEAP_SEQ_BITS
from federation.models.limits import TIME_LIMIT_PS as _TIME_LIMIT_PS

SEQ_BITS = HEAP_SEQ_BITS
SEQ_MASK = (1 << SEQ_BITS) - 1
TIME_LIMIT_PS = _TIME_LIMIT_PS  # 8.8 simulated seconds (see federation.models.limits)
KEY_MAX = np.int64(0x7FFFFFFFFFFFFFFF)

NB = 4096  #: buckets in the ring (a power of two)
BS = 32  #: events per block of a bucket's chain
#: room the loop keeps before each event: no event schedules more than this many (but a
#: booksim_iq router's cycle may: the loop keeps room for ``iq.cycle_bounds`` before each)
ROOM = 8

# queue scalars (Queue.qs)
Q_SPARE = 0  #: unused
Q_CUR = 1  #: the current bucket
Q_POS = 2  #: next event of the run
Q_LEN = 3  #: events in the run
Q_SIDE = 4  #: events in the side heap
Q_OVER = 5  #: events in the overflow heap
Q_RING = 6  #: non-empty ring buckets
Q_FREE = 7  #: free blocks (Queue.free[:n])
Q_SHIFT = 8  #: bucket width is 2**shift ps
Q_BIG = 9  #: 1: a ring bucket nearly outgrew the run (the driver grows it)
N_QS = 10


class Queue(NamedTuple):
    qs: np.ndarray  #: int64[N_QS] the scalars above
    ring: np.ndarray  #: int64[blocks * BS, 3] events (key, word a, word b) in bucket chains
    nxt: np.ndarray  #: int64[blocks] next block of the same bucket, -1 last
    free: np.ndarray  #: int64[blocks] free blocks (a stack of qs[Q_FREE])
    bucket: np.ndarray  #: int64[NB, 3] first block, last block, events of each ring bucket
    bits: np.ndarray  #: uint64[NB // 64] non-empty ring buckets
    run: np.ndarray  #: int64[cap, 3] the current bucket's events, sorted (ROOM more than the
    #: largest ring bucket: ``Q_BIG`` asks for more)
    tmp: np.ndarray  #: int64[cap, 3] the sort's other buffer
    hist: np.ndarray  #: int64[2048] the radix sort's counts
    sk: np.ndarray  #: int64[cap] side heap keys (KEY_MAX past the last)
    sp: np.ndarray  #: int64[cap, 2] their payload
    ok: np.ndarray  #: int64[cap] overflow heap keys
    op: np.ndarray  #: int64[cap, 2] their payload


def new_queue(shift: int, blocks: int = 256, heap: int = 1024, run: int = 4096) -> Queue:
    """An empty queue with buckets of ``2**shift`` ps."""
    qs = np.zeros(N_QS, dtype=np.int64)
    qs[Q_SHIFT] = shift
    qs[Q_FREE] = blocks
    bucket = np.zeros((NB, 3), dtype=np.int64)
    bucket[:, :2] = -1
    return Queue(
        qs=qs, ring=np.zeros((blocks * BS, 3), dtype=np.int64),
        nxt=np.full(blocks, -1, dtype=np.int64), free=np.arange(blocks - 1, -1, -1),
        bucket=bucket, bits=np.zeros(NB // 64, dtype=np.uint64),
        run=np.zeros((run, 3), dtype=np.int64), tmp=np.zeros((run, 3), dtype=np.int64),
        hist=np.zeros(2048, dtype=np.int64),
        sk=np.full(heap, KEY_MAX, dtype=np.int64), sp=np.zeros((heap, 2), dtype=np.int64),
        ok=np.full(heap, KEY_MAX, dtype=np.int64), op=np.zeros((heap, 2), dtype=np.int64))


def bucket_shift(shortest_ps: float) -> int:
    """Bucket width for a run whose shortest serialisation of a packet is ``shortest_ps``: the
    largest power of two not above it (at most one distinct time per bucket when times are
    multiples of it), from 64 ps to 2**20 ps."""
    if not np.isfinite(shortest_ps) or shortest_ps < 64:
        return 6
    return int(min(20, np.floor(np.log2(shortest_ps))))


def grown(q: Queue, extra: int = 0) -> Queue:
    """``q`` with room for ``extra`` + :data:`ROOM` more events in every part (the loop
    returned for room, or a caller outside the loop is about to push ``extra`` events), and a
    run that holds the largest ring bucket; what grows at least doubles."""
    qs = q.qs
    need = extra + ROOM
    out = q
    if qs[Q_SIDE] + need > q.sk.shape[0]:
        size = _doubled(q.sk.shape[0], int(qs[Q_SIDE]) + need)
        out = out._replace(sk=_longer(q.sk, size, KEY_MAX), sp=_longer(q.sp, size, 0))
    if qs[Q_OVER] + need > q.ok.shape[0]:
        size = _doubled(q.ok.shape[0], int(qs[Q_OVER]) + need)
        out = out._replace(ok=_longer(q.ok, size, KEY_MAX), op=_longer(q.op, size, 0))
    if qs[Q_FREE] < need:
        old = q.nxt.shape[0]
        blocks = _doubled(old, old + need)
        free = np.empty(blocks, dtype=np.int64)
        n = int(qs[Q_FREE])
        free[:n] = q.free[:n]
        free[n:n + blocks - old] = np.arange(blocks - 1, old - 1, -1)
        qs[Q_FREE] = n + blocks - old
        out = out._replace(ring=_longer(q.ring, blocks * BS, 0), nxt=_longer(q.nxt, blocks, -1),
                           free=free)
    largest = int(q.bucket[:, 2].max()) + need
    if qs[Q_BIG] or largest > q.run.shape[0]:
        size = _doubled(q.run.shape[0], largest + ROOM)
        # the current bucket's events are being popped: they move along
        out = out._replace(run=_longer(q.run, size, 0), tmp=np.zeros((size, 3), np.int64))
        qs[Q_BIG] = 0
    return out


def _doubled(size: int, need: int) -> int:
    size = max(2 * size, 1)
    while size < need:
        size *= 2
    return size


def _longer(a: np.ndarray, size: int, fill: int) -> np.ndarray:
    b = np.full((size,) + a.shape[1:], fill, dtype=a.dtype)
    b[:a.shape[0]] = a
    return b


# ------------------------------------------------------------------ 4-ary heaps (side, overflow)


@part
def heap_push(hk, hp, n, key, wa, wb):
    """Insert into the heap of ``n`` events (``hk`` keys, ``hp`` payload)."""
    i = n
    while i > 0:
        parent = (i - 1) >> 2
        pk = hk[parent]
        if key < pk:
            hk[i] = pk
            hp[i, 0] = hp[parent, 0]
            hp[i, 1] = hp[parent, 1]
            i = parent
        else:
            break
    hk[i] = key
    hp[i, 0] = wa
    hp[i, 1] = wb


@part
def heap_pop(hk, hp, n, out):
    """Remove the least of the heap's ``n`` events; writes its payload words into ``out[6:8]``
    (slots ``n .. n + 3`` hold ``KEY_MAX``: the sink needs no bounds test).  Floyd's variant:
    the hole sinks to a leaf along the least children, then the last event is lifted into
    it."""
    out[6] = hp[0, 0]
    out[7] = hp[0, 1]
    m = n - 1
    lk = hk[m]
    la = hp[m, 0]
    lb = hp[m, 1]
    hk[m] = KEY_MAX
    i = 0
    c = 1
    while c < m:
        k0 = hk[c]
        k1 = hk[c + 1]
        k2 = hk[c + 2]
        k3 = hk[c + 3]
        m01 = c + (k1 < k0)
        m23 = c + 2 + (k3 < k2)
        j = m23 if min(k2, k3) < min(k0, k1) else m01
        hk[i] = hk[j]
        hp[i, 0] = hp[j, 0]
        hp[i, 1] = hp[j, 1]
        i = j
        c = 4 * i + 1
    if i < m:
        heap_push(hk, hp, i, lk, la, lb)  # lift the former last event from the hole


# ------------------------------------------------------------------ push


@part
def push_key(q, key, wa, wb):
    """Queue an event by its key."""
    qs = q.qs
    shift = qs[Q_SHIFT] + SEQ_BITS
    bk = key >> shift
    cur = qs[Q_CUR]
    if bk <= cur:
        heap_push(q.sk, q.sp, qs[Q_SIDE], key, wa, wb)
        qs[Q_SIDE] += 1
    elif bk - cur < NB:
        ring_append(q, bk & (NB - 1), key, wa, wb)
    else:
        heap_push(q.ok, q.op, qs[Q_OVER], key, wa, wb)
        qs[Q_OVER] += 1


@part
def ring_append(q, slot, key, wa, wb):
    qs = q.qs
    bucket = q.bucket
    n = bucket[slot, 2]
    if n & (BS - 1) == 0:  # the bucket's last block is full (or it has none)
        qs[Q_FREE] -= 1
        blk = q.free[qs[Q_FREE]]
        q.nxt[blk] = -1
        if n == 0:
            bucket[slot, 0] = blk
            q.bits[slot >> 6] |= np.uint64(1) << np.uint64(slot & 63)
            qs[Q_RING] += 1
        else:
            q.nxt[bucket[slot, 1]] = blk
        bucket[slot, 1] = blk
    else:
        blk = bucket[slot, 1]
    i = blk * BS + (n & (BS - 1))
    ring = q.ring
    ring[i, 0] = key
    ring[i, 1] = wa
    ring[i, 2] = wb
    bucket[slot, 2] = n + 1
    if n + 1 + ROOM > q.run.shape[0]:
        qs[Q_BIG] = 1  # the run must hold the bucket when it opens


# ------------------------------------------------------------------ pop


@part
def next_source(q):
    """Where the least pending event is: 0 the run, 1 the side heap, 2 the overflow heap, -1
    none.  Opens the next bucket when the run and the side heap are used up."""
    qs = q.qs
    while True:
        rk = q.run[qs[Q_POS], 0] if qs[Q_POS] < qs[Q_LEN] else KEY_MAX
        sk = q.sk[0] if qs[Q_SIDE] > 0 else KEY_MAX
        ok = q.ok[0] if qs[Q_OVER] > 0 else KEY_MAX
        if qs[Q_POS] < qs[Q_LEN] or qs[Q_SIDE] > 0:
            if rk <= sk and rk <= ok:
                return 0
            if sk <= ok:
                return 1
            return 2
        if qs[Q_RING] == 0 and qs[Q_OVER] == 0:
            return -1
        shift = qs[Q_SHIFT] + SEQ_BITS
        b = KEY_MAX
        if qs[Q_RING] > 0:
            b = next_bucket(q, qs[Q_CUR])
        if qs[Q_OVER] > 0 and (ok >> shift) < b:
            qs[Q_CUR] = ok >> shift  # nothing pending before it: the ring may move on
            return 2
        open_bucket(q, b)


@part
def next_bucket(q, cur):
    """The first non-empty ring bucket after ``cur`` (the ring holds some event)."""
    bits = q.bits
    s = (cur + 1) & (NB - 1)
    w = s >> 6
    word = bits[w] & (~np.uint64(0) << np.uint64(s & 63))
    nw = NB >> 6
    for _ in range(nw + 1):
        if word != 0:
            slot = (w << 6) + _trailing_zeros(word)
            return cur + ((slot - cur) & (NB - 1))
        w = (w + 1) & (nw - 1)
        word = bits[w]
    return cur + NB  # unreachable while the ring holds an event


@part
def _trailing_zeros(x):
    n = 0
    if x & np.uint64(0xFFFFFFFF) == 0:
        n += 32
        x >>= np.uint64(32)
    if x & np.uint64(0xFFFF) == 0:
        n += 16
        x >>= np.uint64(16)
    if x & np.uint64(0xFF) == 0:
        n += 8
        x >>= np.uint64(8)
    if x & np.uint64(0xF) == 0:
        n += 4
        x >>= np.uint64(4)
    if x & np.uint64(0x3) == 0:
        n += 2
        x >>= np.uint64(2)
    if x & np.uint64(0x1) == 0:
        n += 1
    return n


@part
def open_bucket(q, b):
    """Make ring bucket ``b`` the current one: its events, sorted, become the run."""
    qs = q.qs
    slot = b & (NB - 1)
    bucket = q.bucket
    n = bucket[slot, 2]
    blk = bucket[slot, 0]
    run = q.run
    ring = q.ring
    i = 0
    descents = 0  # counted on the way: a sorted bucket (most of BookSim's) is not sorted again
    last = np.int64(-1)  # ring keys are of buckets after the current one: not negative
    while i < n:
        base = blk * BS
        k = min(BS, n - i)
        for j in range(k):
            key = ring[base + j, 0]
            descents += key < last
            last = key
            run[i + j, 0] = key
            run[i + j, 1] = ring[base + j, 1]
            run[i + j, 2] = ring[base + j, 2]
        i += k
        q.free[qs[Q_FREE]] = blk
        qs[Q_FREE] += 1
        blk = q.nxt[blk]
    bucket[slot, 0] = -1
    bucket[slot, 1] = -1
    bucket[slot, 2] = 0
    q.bits[slot >> 6] &= ~(np.uint64(1) << np.uint64(slot & 63))
    qs[Q_RING] -= 1
    if descents != 0:
        sort_unsorted(run, q.tmp, q.hist, n, qs[Q_SHIFT])
    qs[Q_POS] = 0
    qs[Q_LEN] = n
    qs[Q_CUR] = b


@part
def source_key(q, s):
    """Key of the least event of source ``s`` (:func:`next_source`)."""
    if s == 0:
        return q.run[q.qs[Q_POS], 0]
    if s == 1:
        return q.sk[0]
    return q.ok[0]


@part
def take(q, s, out):
    """Remove the least event of source ``s`` (:func:`next_source`): writes its key and
    payload words into ``out[5:8]``."""
    qs = q.qs
    if s == 0:
        i = qs[Q_POS]
        out[5] = q.run[i, 0]
        out[6] = q.run[i, 1]
        out[7] = q.run[i, 2]
        qs[Q_POS] = i + 1
    elif s == 1:
        out[5] = q.sk[0]
        heap_pop(q.sk, q.sp, qs[Q_SIDE], out)
        qs[Q_SIDE] -= 1
    else:
        out[5] = q.ok[0]
        heap_pop(q.ok, q.op, qs[Q_OVER], out)
        qs[Q_OVER] -= 1


@part
def pop(q, until_key, out):
    """Take the least pending event: returns ``(1, key, word a, word b)``, or status 0 when
    nothing is pending, or 2 when the least is at or after ``until_key`` (left pending).  The
    run's next event, when the overflow heap is empty and the side heap's top is not before it
    (most pops), is taken on a path of its own, without the three sources' comparison of
    :func:`next_source`; the order is the same.  ``out`` is scratch for the heaps' path
    (:func:`take`).  The event comes back as values, not through an array, so that the loop
    keeps its fields in registers."""
    qs = q.qs
    pos = qs[Q_POS]
    if pos < qs[Q_LEN] and qs[Q_OVER] == 0:
        k = q.run[pos, 0]
        if qs[Q_SIDE] == 0 or k <= q.sk[0]:
            if k >= until_key:
                return 2, k, np.int64(0), np.int64(0)
            qs[Q_POS] = pos + 1
            return 1, k, q.run[pos, 1], q.run[pos, 2]
    s = next_source(q)
    if s < 0:
        return 0, KEY_MAX, np.int64(0), np.int64(0)
    k = source_key(q, s)
    if k >= until_key:
        return 2, k, np.int64(0), np.int64(0)
    take(q, s, out)
    return 1, out[5], out[6], out[7]


@part
def ahead(q, d):
    """Payload word a (``a * 8 + kind``) of the event ``d`` places ahead in the run, -1 past
    its end: the loop prefetches what that event will touch."""
    i = q.qs[Q_POS] + d
    if i < q.qs[Q_LEN]:
        return q.run[i, 1]
    return np.int64(-1)


@part
def room(q):
    """True while every part of the queue can take ``ROOM`` more events (the rank programs'
    settling asks before each step: :func:`room_events` is the one statement of the bound)."""
    return room_events(q) > 0


@part
def room_events(q):
    """How many events in a row the loop may handle before it asks again (0: the queue must
    grow first): each pushes ``ROOM`` events at most, so every part keeps room for the last
    of them.  A ring bucket that grows near the run's size raises ``Q_BIG`` at any push,
    which the loop tests before every event (:func:`big`)."""
    qs = q.qs
    if qs[Q_BIG] != 0:
        return np.int64(0)
    k = (q.sk.shape[0] - qs[Q_SIDE]) // ROOM
    k = min(k, (q.ok.shape[0] - qs[Q_OVER]) // ROOM)
    return min(k, qs[Q_FREE] // ROOM)


@part
def big(q):
    """True when a ring bucket has grown near the run's size (the driver grows the run)."""
    return q.qs[Q_BIG] != 0
