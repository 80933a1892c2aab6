"""Which send meets which receive, and what follows from it before any run: truncation and
deadlock.

The engine pairs the k-th send *started* on a channel (source rank, destination rank, tag)
with the k-th receive *posted* on it (:mod:`federation.engine.programs`).  When are those the
k-th in *operation order*?  When every operation of the rank has an edge from the operation
before it (a *chained* rank: what ProgramBuilder, the built-in workloads and every TI trace
write), an operation begins only after the one before it has begun, so the rank's sends and
receives start in operation order, whatever the timing.  On other ranks two operations of a
channel still begin in operation order when an edge joins them, or when the later one waits
for everything the earlier one waits for (:func:`_in_order`).  A channel is *forced* when
both its sends and its receives begin in operation order: then its pairs are known now, and
so are

* **truncation**: a send larger than the receive it meets (MPI_ERR_TRUNCATE in MPI; the
  engine would deliver the whole message).  A receive larger than its send is legal MPI (a
  receive's count is an upper bound) and runs: the message is the send's size.  On a channel
  whose pairs depend on timing, any send larger than any receive is refused (some timing
  truncates);
* **deadlock** (:func:`blocked`): with the pairs known, the run is a fixed graph of *begin*
  and *finish* events (an operation begins once its dependencies have; a receive finishes
  once its send has begun, a send above ``nic.eager_threshold`` once its receive has begun,
  everything else once it has begun itself), and operations that never finish are exactly
  those the graph never reaches.  Two blocking receives head to head, or two rendezvous
  sends, are refused naming them, before a sweep reaches them.

A program with an unforced channel is not refused for a deadlock here (whether it deadlocks
may depend on timing); the engine still reports one if it happens
(``ST_PROGRAM_STUCK``: the operations that started and never finished).
``tests/test_program_preflight.py`` checks the verdicts and the pairs against the engine on
random programs, chained and free-form.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from federation.programs.model import COMPUTE, RECV, SEND, RankPrograms


@dataclass
class Pairs:
    """Every send with the receive it meets when the pairs are forced (both in op numbers),
    the channel-level data the checks need, and whether each pair is certain."""

    send: np.ndarray  #: int64[m] send operations, by (channel, occurrence)
    recv: np.ndarray  #: int64[m] the receive each meets in operation order
    channel: np.ndarray  #: int64[m] their channel (0 ..)
    forced: np.ndarray  #: bool[m] whether the pairing is certain (the channel is forced)


def chained_ranks(p: RankPrograms) -> np.ndarray:
    """bool[n_ranks]: ranks whose every operation but the first has an edge from the one
    before it (their operations begin in operation order)."""
    has_prev = np.zeros(p.n_ops, dtype=bool)
    has_prev[p.dep_after[p.dep_after == p.dep_before + 1]] = True
    counts = np.diff(p.rank_first)
    has_prev[p.rank_first[:-1][counts > 0]] = True
    loose = np.bincount(p.op_rank[~has_prev], minlength=p.n_ranks)
    return loose == 0


def pair_channels(p: RankPrograms, order: np.ndarray, comm: np.ndarray, side: np.ndarray,
                  group: np.ndarray, src: np.ndarray, dst: np.ndarray, n_send: np.ndarray,
                  n_recv: np.ndarray) -> Pairs:
    """The pairs of a program whose channels each hold as many receives as sends.

    Takes the channel sort of :func:`federation.programs.checks.check_programs` (``order``
    sorts the communication operations ``comm`` by source, destination, tag and operation;
    ``side`` says which of them, in that order, are sends; ``group`` numbers their channels),
    so nothing is sorted twice: within a channel the sends, and the receives, are already in
    operation order, and the i-th send in that order meets the i-th receive.
    """
    ops = comm[order]
    send, recv = ops[side], ops[~side]
    channel = group[side]
    chained = chained_ranks(p)
    ok = np.ones(n_send.shape[0], dtype=bool)
    for these, ranks, counts in ((send, src, n_send), (recv, dst, n_recv)):
        loose = ~chained[ranks] & (counts > 1)
        if loose.any():
            ok &= _in_order(p, these, channel, loose)
    return Pairs(send, recv, channel, ok[channel])


def _in_order(p: RankPrograms, ops: np.ndarray, channel: np.ndarray,
              loose: np.ndarray) -> np.ndarray:
    """bool[channels]: False where two consecutive operations ``i < j`` of a ``loose``
    channel (``ops`` grouped by channel, in operation order) might begin out of operation
    order.  They begin in order when an edge joins them, or when ``j`` waits for everything
    ``i`` waits for (the event that makes ``j`` ready then finds ``i`` ready already, or
    readies both in operation order), unless ``i`` waits for nothing and ``j`` for something:
    operations without dependencies begin from time-0 events, one by one, and a START
    successor of an earlier one may begin in between."""
    ok = np.ones(loose.shape[0], dtype=bool)
    ch = channel  # the receives' channels are the sends': each channel has as many of both
    pick = np.flatnonzero(loose[ch[1:]] & (ch[1:] == ch[:-1]))
    if not pick.size:
        return ok
    first, second = ops[pick], ops[pick + 1]
    n = np.int64(p.n_ops)
    edge = (p.dep_before.astype(np.int64) * 2 + p.dep_kind) * n + p.dep_after
    keys = np.sort(edge)

    def has(k: np.ndarray) -> np.ndarray:
        if not keys.shape[0]:
            return np.zeros(k.shape[0], dtype=bool)
        at = np.searchsorted(keys, k)
        return (at < keys.shape[0]) & (keys[np.minimum(at, keys.shape[0] - 1)] == k)

    joined = has((first * 2) * n + second) | has((first * 2 + 1) * n + second)
    by_after = np.argsort(p.dep_after, kind="stable")
    start = np.searchsorted(p.dep_after[by_after], first, side="left")
    stop = np.searchsorted(p.dep_after[by_after], first, side="right")
    count = stop - start
    owner = np.repeat(np.arange(first.shape[0]), count)
    edges = by_after[np.repeat(start, count) + (np.arange(owner.shape[0])
                                                - np.repeat(np.cumsum(count) - count, count))]
    theirs = has((p.dep_before[edges].astype(np.int64) * 2 + p.dep_kind[edges]) * n
                 + second[owner])
    missing = np.bincount(owner[~theirs], minlength=first.shape[0]) > 0
    waits = np.bincount(p.dep_after, minlength=p.n_ops) > 0
    root_first = ~waits[first] & waits[second]
    bad = ~joined & (missing | root_first)
    ok[np.unique(ch[pick[bad]])] = False
    return ok


def truncation(p: RankPrograms, pairs: Pairs) -> tuple[int, int, bool] | None:
    """The first (send, receive, certain) pair where a send is larger than its receive, or
    None.  On a forced channel the pair itself; on another, the largest send and smallest
    receive of the first channel where the largest send exceeds the smallest receive."""
    size = p.op_bytes
    sb, rb = size[pairs.send], size[pairs.recv]
    bad = pairs.forced & (sb > rb)
    first = int(np.flatnonzero(bad)[0]) if bad.any() else None
    loose = ~pairs.forced
    if loose.any():
        ch = pairs.channel[loose]
        n = int(ch.max()) + 1
        big = np.full(n, -1, dtype=np.int64)
        small = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
        np.maximum.at(big, ch, sb[loose])
        np.minimum.at(small, ch, rb[loose])
        worse = np.flatnonzero(big > small)
        if worse.size:
            c = int(worse[0])
            idx = np.flatnonzero(loose & (pairs.channel == c))
            s = int(pairs.send[idx[np.argmax(sb[idx])]])
            r = int(pairs.recv[idx[np.argmin(rb[idx])]])
            if first is None or min(s, r) < min(int(pairs.send[first]), int(pairs.recv[first])):
                return s, r, False
    if first is None:
        return None
    return int(pairs.send[first]), int(pairs.recv[first]), True


def blocked(p: RankPrograms, pairs: Pairs, eager_threshold: int | None
            ) -> tuple[np.ndarray, np.ndarray] | None:
    """Operations that can never finish, given the pairs: ``(begun, finished)`` bool arrays
    over the operations, or None when every operation finishes.  Only for programs whose
    every pair is forced (the caller checks).  ``eager_threshold`` None: every send eager
    (the deadlocks every threshold has)."""
    if eager_threshold is None:
        rdv = np.zeros(pairs.send.shape[0], dtype=np.bool_)
    else:
        rdv = p.op_bytes[pairs.send] > eager_threshold
    from federation.programs.replay import replay

    done = replay(p.n_ops, p.dep_before, p.dep_after, p.dep_kind, pairs.send, pairs.recv, rdv)
    if done is None:
        return None
    return done[0::2].copy(), done[1::2].copy()


def describe_block(p: RankPrograms, begun: np.ndarray, finished: np.ndarray,
                   eager_threshold: int | None, pairs: Pairs) -> str:
    """One message: how many operations never finish, and the first that begins and waits
    forever, with what it waits for."""
    stuck = ~finished
    n = int(stuck.sum())
    ranks = np.unique(p.op_rank[stuck])
    partner = np.full(p.n_ops, -1, dtype=np.int64)
    partner[pairs.send] = pairs.recv
    partner[pairs.recv] = pairs.send
    waiting = np.flatnonzero(begun & ~finished & (p.op_kind != COMPUTE))
    head = (f"the rank programs cannot finish (a deadlock, before any run): {n} operation(s) "
            f"on {ranks.size} rank(s) would never finish")
    if not waiting.size:
        return head
    why = []
    for op in waiting[:2].tolist():
        other = int(partner[op])
        if p.op_kind[op] == RECV:
            why.append(f"{p.describe(op)} waits for {p.describe(other)}, which never begins")
        else:
            why.append(f"{p.describe(op)} is above nic.eager_threshold "
                       f"({eager_threshold} B), so it waits for its receive to be posted: "
                       f"{p.describe(other)}, which never begins")
    return head + "; " + "; ".join(why)


__all__ = ["Pairs", "SEND", "blocked", "chained_ranks", "describe_block", "pair_channels",
           "truncation"]
