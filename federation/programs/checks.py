"""Static checks of rank programs, before an engine reads them.

The engine's compiled loop does not bounds-check, and a program that cannot finish (a cycle,
a receive nothing sends, two blocking receives head to head) would otherwise show up as a
deadlock after minutes of simulation, or only when a sweep reaches it.  So everything that
can be decided from the arrays (and the machine's figures) alone is decided here, vectorised
(a million operations take a fraction of a second), and the first fault is reported as one
:class:`~federation.errors.ConfigError` naming the rank, the operation and, when the program
was read from a file, its line (:meth:`RankPrograms.describe`).

:func:`check_programs` is the one set of checks every caller uses: ``federation validate``
and ``run`` both reach it through :func:`federation.pipeline.point.preflight` for every sweep
point, and a point built elsewhere (a Dask worker) goes through it in
:func:`federation.pipeline.point.prepare`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from federation.errors import ConfigError
from federation.models.limits import CLOCK_LIMIT, TIME_LIMIT_PS
from federation.models.units import PS_PER_S, format_count, format_rate, format_time
from federation.programs.matching import (
    Pairs,
    blocked,
    describe_block,
    pair_channels,
    truncation,
)
from federation.programs.model import COMPUTE, KIND_NAMES, RECV, SEND, RankPrograms

#: largest message (exclusive): sizes are int64 and byte counts times 8 bits must not overflow
MAX_MESSAGE_BYTES = 2**40


@dataclass(frozen=True)
class MachineFigures:
    """What the machine tells about programs before they run (see :func:`check_programs`).

    ``eager_threshold`` decides which sends wait for their receive (deadlocks); the NIC and
    terminal-link bandwidths (bytes/s) bound how long a node needs to send and receive its
    messages, packet by packet as the engine rounds each packet's time; ``where`` names the
    machine fields for messages (``nic.bandwidth`` may be the terminal link's).
    """

    n_nodes: int
    packet_size: int
    eager_threshold: int
    nic_bandwidth: float
    terminal_bandwidth: float
    nic_field: str = "nic.bandwidth"
    terminal_field: str = "links.terminal.bandwidth"
    #: the job's ``start`` (ps): its ranks begin then, so the bounds below count from it
    start_ps: int = 0
    start_field: str = "start"


def check_programs(progs: RankPrograms, n_nodes: int, source: str | None = None,
                   path: str = "workload", machine: MachineFigures | None = None) -> None:
    """Raise :class:`ConfigError` on the first fault of ``progs`` (see the module docstring).

    Checked in order: array shapes; operation kinds, peers, sizes, compute times and the sum
    of each rank's compute times against the engine's clock; dependency edges (in range, same
    rank, no self edge, kind 0/1); ranks placed on existing nodes; at least one rank (ranks
    without operations are fine: a one-rank allreduce has none, and finishes at 0); no
    dependency cycle; every (source, destination, tag) channel has as many
    receives as sends; no send larger than the receive it meets
    (:mod:`federation.programs.matching`); no deadlock when the pairs are certain (with
    ``machine``, sends above its eager threshold wait for their receive; without, every
    send is eager, which finds the deadlocks every threshold has); and with ``machine``,
    the bytes each node sends and receives against the clock at its NIC's and terminal
    link's bandwidth.
    """
    src = source if source is not None else progs.source

    def fail(message: str) -> None:
        raise ConfigError(message, source=src, path=path)

    _check_shapes(progs, fail)
    rank = progs.op_rank
    _check_ops(progs, rank, fail)
    if machine is None:
        _check_compute_sums(progs, fail)
    else:  # from the job's start
        _check_compute_sums(progs, fail, machine.start_ps, _after_start(machine))
    _check_deps(progs, rank, fail)
    _check_nodes(progs, n_nodes, fail)
    if progs.n_ranks == 0:
        fail("the programs have no ranks (num_ranks 0, or an empty trace): nothing to "
             "simulate")
    op = find_cycle(progs)
    if op is not None:
        fail(f"dependency cycle: {progs.describe(op)} (transitively) depends on itself, so "
             "it can never start")
    pairs = _check_channels(progs, rank, fail)
    if pairs is None:
        return
    _check_pairs(progs, pairs, machine, fail)
    if machine is not None:
        _check_machine(progs, rank, machine, fail)


def message_pairs(progs: RankPrograms) -> Pairs | None:
    """Which receive each send meets, as far as the program alone decides it
    (:class:`~federation.programs.matching.Pairs`; None without messages).  For programs that
    pass :func:`check_programs`'s channel check."""
    def fail(message: str) -> None:
        raise ConfigError(message, source=progs.source, path="workload")

    return _check_channels(progs, progs.op_rank, fail)


def _check_shapes(p: RankPrograms, fail) -> None:  # noqa: ANN001
    rf = p.rank_first
    if rf.ndim != 1 or rf.shape[0] < 1:
        fail("rank_first must be a 1-D array of n_ranks + 1 offsets")
    if rf[0] != 0 or rf[-1] != p.n_ops or np.any(np.diff(rf) < 0):
        fail(f"rank_first must rise from 0 to the number of operations ({p.n_ops}), got "
             f"{rf[0]} .. {rf[-1]}" + (" (decreasing)" if np.any(np.diff(rf) < 0) else ""))
    for name in ("op_peer", "op_bytes", "op_tag", "op_time_ps"):
        if getattr(p, name).shape != (p.n_ops,):
            fail(f"{name} has {getattr(p, name).shape[0]} entries, op_kind {p.n_ops}")
    for name in ("dep_after", "dep_kind"):
        if getattr(p, name).shape != (p.n_deps,):
            fail(f"{name} has {getattr(p, name).shape[0]} entries, dep_before {p.n_deps}")
    if p.op_label is not None and len(p.op_label) != p.n_ops:
        fail(f"op_label has {len(p.op_label)} entries for {p.n_ops} operations")
    if p.op_line is not None and p.op_line.shape != (p.n_ops,):
        fail(f"op_line has {p.op_line.shape[0]} entries for {p.n_ops} operations")
    if p.rank_node is not None and p.rank_node.shape != (p.n_ranks,):
        fail(f"rank_node has {p.rank_node.shape[0]} entries for {p.n_ranks} ranks")


def _first(mask: np.ndarray) -> int | None:
    idx = np.flatnonzero(mask)
    return int(idx[0]) if idx.size else None


def _check_ops(p: RankPrograms, rank: np.ndarray, fail) -> None:  # noqa: ANN001
    kind = p.op_kind
    if (op := _first((kind < 0) | (kind > 2))) is not None:
        fail(f"rank {int(rank[op])} operation {op - int(p.rank_first[rank[op]])}: "
             f"kind {int(kind[op])} is not one of 0 (send), 1 (recv), 2 (compute)")
    comm = kind != COMPUTE
    peer = p.op_peer
    if (op := _first(comm & ((peer < 0) | (peer >= p.n_ranks)))) is not None:
        fail(f"{p.describe(op)}: unknown rank {int(peer[op])} (the program has {p.n_ranks} "
             f"ranks, 0 to {p.n_ranks - 1})")
    if (op := _first(~comm & (peer != -1))) is not None:
        fail(f"{p.describe(op)}: a compute operation has peer {int(peer[op])}, expected -1")
    size = p.op_bytes
    if (op := _first((size < 0) | (size >= MAX_MESSAGE_BYTES))) is not None:
        fail(f"{p.describe(op)}: size {int(size[op])} B is outside 0 .. 2**40 - 1 B")
    t = p.op_time_ps
    if (op := _first((t < 0) | (t >= TIME_LIMIT_PS))) is not None:
        fail(f"{p.describe(op)}: compute time {int(t[op])} ps is negative or beyond "
             f"{CLOCK_LIMIT}")


def _check_compute_sums(p: RankPrograms, fail, start_ps: int = 0,  # noqa: ANN001
                        after: str = ",") -> None:
    """Each rank's compute times summed from ``start_ps`` (its job's start) against the
    clock range: a rank's computes run one at a time.  A float pass finds candidate ranks,
    an exact pass confirms (int64 sums of a million values below 2**43 could overflow)."""
    t = p.op_time_ps
    limit = TIME_LIMIT_PS - start_ps
    cs = np.concatenate([[0.0], np.cumsum(t, dtype=np.float64)])
    per_rank = cs[p.rank_first[1:]] - cs[p.rank_first[:-1]]
    for r in np.flatnonzero(per_rank >= limit * (1 - 1e-9)):
        a, b = int(p.rank_first[r]), int(p.rank_first[r + 1])
        running = 0
        for i, v in enumerate(t[a:b].tolist()):
            running += v
            if running >= limit:
                fail(f"{p.describe(a + i)}: rank {int(r)}'s compute times add up to "
                     f"{running} ps here{after} beyond {CLOCK_LIMIT}")


def _check_deps(p: RankPrograms, rank: np.ndarray, fail) -> None:  # noqa: ANN001
    db, da, dk = p.dep_before, p.dep_after, p.dep_kind
    bad = (db < 0) | (db >= p.n_ops) | (da < 0) | (da >= p.n_ops)
    if (e := _first(bad)) is not None:
        fail(f"dependency {e} ({int(db[e])} -> {int(da[e])}) names an operation outside 0 .. "
             f"{p.n_ops - 1}")
    if (e := _first((dk != 0) & (dk != 1))) is not None:
        fail(f"dependency {e}: kind {int(dk[e])} is not 0 (finish) or 1 (start), "
             f"for {p.describe(int(da[e]))}")
    if (e := _first(rank[db] != rank[da])) is not None:
        fail(f"{p.describe(int(da[e]))} depends on {p.describe(int(db[e]))}: dependencies join "
             "operations of one rank (other ranks are reached by messages)")
    if (e := _first(db == da)) is not None:
        fail(f"{p.describe(int(da[e]))} depends on itself")


def _check_nodes(p: RankPrograms, n_nodes: int, fail) -> None:  # noqa: ANN001
    if p.rank_node is None:
        if p.n_ranks > n_nodes:
            fail(f"{p.n_ranks} ranks but the machine has {n_nodes} nodes (rank i runs on node "
                 f"i unless rank_node places it)")
        return
    rn = p.rank_node
    if (r := _first((rn < 0) | (rn >= n_nodes))) is not None:
        fail(f"rank {r} is placed on node {int(rn[r])}, but the machine has {n_nodes} nodes "
             f"(0 to {n_nodes - 1})")


def find_cycle(p: RankPrograms) -> int | None:
    """An operation on a dependency cycle, or None.

    When every edge runs forward in operation order (what the builder writes) there is none.
    Otherwise the strongly connected components of the edge graph (scipy, linear time) tell:
    self edges aside, an operation is on a cycle exactly when its component has two or more
    members.  Assumes the edges are in range (:func:`check_programs` checks that first).
    """
    if p.n_deps == 0 or bool(np.all(p.dep_before < p.dep_after)):
        return None
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    n = p.n_ops
    graph = coo_matrix((np.ones(p.n_deps, dtype=np.int8), (p.dep_before, p.dep_after)),
                       shape=(n, n)).tocsr()
    _, labels = connected_components(graph, directed=True, connection="strong")
    sizes = np.bincount(labels)
    on_cycle = sizes[labels] > 1
    return _first(on_cycle)


def _check_channels(p: RankPrograms, rank: np.ndarray, fail) -> Pairs | None:  # noqa: ANN001
    """Every (src, dst, tag) channel has as many receives as sends; otherwise name the first
    operation (in operation order) left without a partner.  Returns the pairs (None: no
    message at all)."""
    kind = p.op_kind
    comm = np.flatnonzero(kind != COMPUTE)
    if comm.size == 0:
        return None
    is_send = kind[comm] == SEND
    src = np.where(is_send, rank[comm], p.op_peer[comm])
    dst = np.where(is_send, p.op_peer[comm], rank[comm])
    tag = p.op_tag[comm]
    order = _channel_order(src, dst, tag, p.n_ranks)
    side = is_send[order]
    s_sorted, d_sorted, t_sorted = src[order], dst[order], tag[order]
    new = np.ones(order.size, dtype=bool)
    new[1:] = ((s_sorted[1:] != s_sorted[:-1]) | (d_sorted[1:] != d_sorted[:-1])
               | (t_sorted[1:] != t_sorted[:-1]))
    group = np.cumsum(new) - 1
    starts = np.flatnonzero(new)
    n_send = np.bincount(group, weights=side, minlength=starts.size).astype(np.int64)
    n_recv = np.bincount(group, minlength=starts.size) - n_send
    if np.array_equal(n_send, n_recv):
        return pair_channels(p, order, comm, side, group, s_sorted[starts], d_sorted[starts],
                             n_send, n_recv)
    # occurrence number of each op among its channel's sends (or receives), in op order
    cs_send = np.cumsum(side) - side
    cs_recv = np.cumsum(~side) - (~side)
    occ = np.where(side, cs_send - cs_send[starts][group], cs_recv - cs_recv[starts][group])
    other = np.where(side, n_recv[group], n_send[group])
    unmatched = occ >= other
    op = int(comm[order][unmatched].min())
    g = int(group[np.flatnonzero(comm[order] == op)[0]])
    ns, nr = int(n_send[g]), int(n_recv[g])
    i = int(order[starts[g]])
    a, b, tg = int(src[i]), int(dst[i]), int(tag[i])
    counts = (f"rank {a} sends {ns} message(s) to rank {b} with tag {tg} and rank {b} posts "
              f"{nr} receive(s) for them")
    if kind[op] == RECV:
        fail(f"{p.describe(op)}: no send matches this receive ({counts})")
    fail(f"{p.describe(op)}: no receive takes this send ({counts})")
    return None


def _channel_order(src: np.ndarray, dst: np.ndarray, tag: np.ndarray,
                   n_ranks: int) -> np.ndarray:
    """The communication operations sorted by (source, destination, tag), operation order
    kept within each: one stable sort of one int64 key when the three fit in it (a quarter
    of the time of a four-key lexsort), else the lexsort."""
    lo = int(tag.min())
    width = int(tag.max()) - lo + 1
    n = max(n_ranks, 1)
    if n * n * width < 2**62:
        key = (src.astype(np.int64) * n + dst) * width + (tag.astype(np.int64) - lo)
        return np.argsort(key, kind="stable")
    return np.lexsort((np.arange(src.size), tag, dst, src))


def _check_pairs(p: RankPrograms, pairs: Pairs, machine: MachineFigures | None,
                 fail) -> None:  # noqa: ANN001
    """Truncation and deadlock (:mod:`federation.programs.matching`)."""
    cut = truncation(p, pairs)
    if cut is not None:
        s, r, certain = cut
        how = "meets" if certain else "may meet (the pairs on this channel depend on timing)"
        fail(f"{p.describe(s)} {how} {p.describe(r)}: a send larger than its receive (MPI "
             f"would truncate it: MPI_ERR_TRUNCATE); make the receive at least "
             f"{int(p.op_bytes[s])} B")
    if not bool(pairs.forced.all()):
        return
    threshold = machine.eager_threshold if machine is not None else None
    stuck = blocked(p, pairs, threshold)
    if stuck is not None:
        fail(describe_block(p, *stuck, threshold, pairs))


def serialisation_ps(size: np.ndarray, packet: int, bandwidth: float) -> np.ndarray:
    """float64 ps each message's packets take through a port at ``bandwidth``, rounded per
    packet as the engine rounds them (``int(size * ps_per_byte + 0.5)``)."""
    per_byte = PS_PER_S / bandwidth
    size = np.maximum(size, 1)
    full = (size - 1) // packet
    last = size - full * packet
    return (full.astype(np.float64) * np.floor(packet * per_byte + 0.5)
            + np.floor(last * per_byte + 0.5))


def _check_machine(p: RankPrograms, rank: np.ndarray, m: MachineFigures,
                   fail) -> None:  # noqa: ANN001
    """A node's NIC sends its ranks' messages one packet at a time, and its terminal link
    delivers theirs likewise: those sums, after the job's start, are lower bounds of the
    run's length, as is each rank's compute after it.  One beyond the clock range would end
    in the engine's clock guard after the whole simulation up to it (a halo exchange of 80 GB
    faces ran 116 s to get there)."""
    limit = TIME_LIMIT_PS * (1 - 1e-12) - m.start_ps
    after = _after_start(m)
    sends = np.flatnonzero(p.op_kind == SEND)
    if not sends.size:
        return
    node = p.nodes()
    size = p.op_bytes[sends]
    for side, who, bw, field in (
            ("leave", node[rank[sends]], m.nic_bandwidth, m.nic_field),
            ("reach", node[p.op_peer[sends]], m.terminal_bandwidth, m.terminal_field)):
        t = serialisation_ps(size, m.packet_size, bw)
        total = np.bincount(who, weights=t, minlength=m.n_nodes)
        if float(total.max()) < limit:
            continue
        n = int(np.argmax(total))
        mine = np.flatnonzero(who == n)
        running = np.cumsum(t[mine])
        i = int(np.searchsorted(running, limit))
        op = int(sends[mine[i]])
        if i == 0:
            what = f"this one message of {int(size[mine[0]])} B takes"
        else:
            what = (f"node {n}'s {'outgoing' if side == 'leave' else 'incoming'} messages add "
                    f"up to {int(size[mine[:i + 1]].sum())} B here, which take")
        fail(f"{p.describe(op)}: {what} at least {format_time(float(running[i]) / PS_PER_S)} "
             f"to {side} its node at {format_rate(bw)} ({field}){after} beyond {CLOCK_LIMIT}")


def _after_start(m: MachineFigures) -> str:
    """How a refusal of :func:`_check_machine` counts its figure: from the job's start."""
    if not m.start_ps:
        return ","
    return (f", which after the job's start at {format_time(m.start_ps / PS_PER_S)} "
            f"({m.start_field}) is")


def check_message_size(nbytes: int, packet: int, bandwidth: float, what: str,
                       path: str) -> None:
    """One message of ``nbytes`` against the largest size and, at a NIC of ``bandwidth``
    (bytes/s, packets of ``packet`` bytes), against the clock range: for workloads that know
    their sizes before they build anything (``what`` says which size, ``path`` its field)."""
    if nbytes >= MAX_MESSAGE_BYTES:
        raise ConfigError(f"{what} is {format_count(nbytes)} B, beyond the largest message "
                          f"({MAX_MESSAGE_BYTES - 1} B)", path=path)
    t = float(serialisation_ps(np.array([nbytes], dtype=np.int64), packet, bandwidth)[0])
    if t >= TIME_LIMIT_PS * (1 - 1e-12):
        raise ConfigError(f"{what} is {nbytes} B, which takes at least "
                          f"{format_time(t / PS_PER_S)} to leave a NIC at {format_rate(bandwidth)}"
                          f", beyond {CLOCK_LIMIT}", path=path)


__all__ = ["MAX_MESSAGE_BYTES", "KIND_NAMES", "MachineFigures", "check_message_size",
           "check_programs", "find_cycle", "message_pairs", "serialisation_ps"]
