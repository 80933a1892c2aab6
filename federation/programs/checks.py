"""Static checks of rank programs, before an engine reads them.

The engine's compiled loop does not bounds-check, and a program that cannot finish (a cycle,
a receive nothing sends) would otherwise show up as a deadlock after minutes of simulation.
So everything that can be decided from the arrays alone is decided here, vectorised (a million
operations take well under a second), and the first fault is reported as one
:class:`~federation.errors.ConfigError` naming the rank, the operation and, when the program
was read from a file, its line (:meth:`RankPrograms.describe`).
"""

from __future__ import annotations

import numpy as np

from federation.errors import ConfigError
from federation.models.limits import CLOCK_LIMIT, TIME_LIMIT_PS
from federation.programs.model import COMPUTE, KIND_NAMES, RECV, SEND, RankPrograms

#: largest message (exclusive): sizes are int64 and byte counts times 8 bits must not overflow
MAX_MESSAGE_BYTES = 2**40


def check_programs(progs: RankPrograms, n_nodes: int, source: str | None = None,
                   path: str = "workload") -> None:
    """Raise :class:`ConfigError` on the first fault of ``progs`` (see the module docstring).

    Checked in order: array shapes; operation kinds, peers, sizes, compute times and the sum
    of each rank's compute times against the engine's clock; dependency edges (in range, same
    rank, no self edge, kind 0/1); ranks placed on existing nodes; no dependency cycle; every
    (source, destination, tag) channel has as many receives as sends.
    """
    src = source if source is not None else progs.source

    def fail(message: str) -> None:
        raise ConfigError(message, source=src, path=path)

    _check_shapes(progs, fail)
    _check_ops(progs, fail)
    _check_deps(progs, fail)
    _check_nodes(progs, n_nodes, fail)
    op = find_cycle(progs)
    if op is not None:
        fail(f"dependency cycle: {progs.describe(op)} (transitively) depends on itself, so "
             "it can never start")
    _check_channels(progs, fail)


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


def _check_ops(p: RankPrograms, fail) -> None:  # noqa: ANN001
    kind = p.op_kind
    if (op := _first((kind < 0) | (kind > 2))) is not None:
        fail(f"rank {int(p.op_rank[op])} operation {op - int(p.rank_first[p.op_rank[op]])}: "
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
    # per-rank sums: a float pass finds candidate ranks, an exact pass confirms (int64 sums of
    # a million values below 2**43 could overflow)
    cs = np.concatenate([[0.0], np.cumsum(t, dtype=np.float64)])
    per_rank = cs[p.rank_first[1:]] - cs[p.rank_first[:-1]]
    for r in np.flatnonzero(per_rank >= TIME_LIMIT_PS * (1 - 1e-9)):
        a, b = int(p.rank_first[r]), int(p.rank_first[r + 1])
        running = 0
        for i, v in enumerate(t[a:b].tolist()):
            running += v
            if running >= TIME_LIMIT_PS:
                fail(f"{p.describe(a + i)}: rank {int(r)}'s compute times add up to "
                     f"{running} ps here, beyond {CLOCK_LIMIT}")


def _check_deps(p: RankPrograms, fail) -> None:  # noqa: ANN001
    db, da, dk = p.dep_before, p.dep_after, p.dep_kind
    bad = (db < 0) | (db >= p.n_ops) | (da < 0) | (da >= p.n_ops)
    if (e := _first(bad)) is not None:
        fail(f"dependency {e} ({int(db[e])} -> {int(da[e])}) names an operation outside 0 .. "
             f"{p.n_ops - 1}")
    if (e := _first((dk != 0) & (dk != 1))) is not None:
        fail(f"dependency {e}: kind {int(dk[e])} is not 0 (finish) or 1 (start), "
             f"for {p.describe(int(da[e]))}")
    rank = p.op_rank
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


def _check_channels(p: RankPrograms, fail) -> None:  # noqa: ANN001
    """Every (src, dst, tag) channel has as many receives as sends; otherwise name the first
    operation (in operation order) left without a partner."""
    rank = p.op_rank
    kind = p.op_kind
    comm = np.flatnonzero(kind != COMPUTE)
    if comm.size == 0:
        return
    is_send = kind[comm] == SEND
    src = np.where(is_send, rank[comm], p.op_peer[comm])
    dst = np.where(is_send, p.op_peer[comm], rank[comm])
    tag = p.op_tag[comm]
    order = np.lexsort((comm, tag, dst, src))
    s, d, t, side = src[order], dst[order], tag[order], is_send[order]
    new = np.ones(order.size, dtype=bool)
    new[1:] = (s[1:] != s[:-1]) | (d[1:] != d[:-1]) | (t[1:] != t[:-1])
    group = np.cumsum(new) - 1
    starts = np.flatnonzero(new)
    n_send = np.bincount(group, weights=side, minlength=starts.size).astype(np.int64)
    n_recv = np.bincount(group, minlength=starts.size) - n_send
    # occurrence number of each op among its channel's sends (or receives), in op order
    cs_send = np.cumsum(side) - side
    cs_recv = np.cumsum(~side) - (~side)
    occ = np.where(side, cs_send - cs_send[starts][group], cs_recv - cs_recv[starts][group])
    other = np.where(side, n_recv[group], n_send[group])
    unmatched = occ >= other
    if not unmatched.any():
        return
    op = int(comm[order][unmatched].min())
    g = int(group[np.flatnonzero(comm[order] == op)[0]])
    ns, nr = int(n_send[g]), int(n_recv[g])
    a, b, tg = int(s[starts[g]]), int(d[starts[g]]), int(t[starts[g]])
    counts = (f"rank {a} sends {ns} message(s) to rank {b} with tag {tg} and rank {b} posts "
              f"{nr} receive(s) for them")
    if kind[op] == RECV:
        fail(f"{p.describe(op)}: no send matches this receive ({counts})")
    fail(f"{p.describe(op)}: no receive takes this send ({counts})")


__all__ = ["MAX_MESSAGE_BYTES", "check_programs", "find_cycle", "KIND_NAMES"]
