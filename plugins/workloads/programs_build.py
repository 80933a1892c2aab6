"""Vectorised assembly of rank programs under MPI sequential semantics (Schedgen's convention).

The built-in program workloads (:mod:`federation.plugins.workloads.programs`) describe each
rank's program as *steps*: one call per program step adds one operation to each of a set of
ranks, so a step of a 1,024-rank collective costs a few NumPy calls instead of 1,024 Python
iterations.  The assembler keeps, per rank, what the next operation must wait for:

* a blocking operation X depends (``FINISH``) on the previous blocking point and becomes the
  new one: the next operation depends (``FINISH``) on X;
* a non-blocking operation Y (``isend``/``irecv``) depends on the same things, but the next
  operation depends only on Y's *start* (``START``);
* :meth:`ProgramAssembler.wait` creates no operation: the next operation also depends
  (``FINISH``) on each waited handle.

Dependencies implied transitively are left out (after a non-blocking Y, the previous blocking
point is implied through Y; a ``START`` on an operation also waited on is implied by the
``FINISH``), so every edge the workloads emit is one the semantics require.
Operations are numbered in the order they are added and renumbered rank by rank at the end
(each rank's program order kept); edges are listed in the order the steps created them.
"""

from __future__ import annotations

import numpy as np

from federation.programs.model import FINISH, RECV, SEND, START, RankPrograms

__all__ = ["ProgramAssembler", "ember_decomposition", "recursive_doubling",
           "recursive_doubling_ops"]


class ProgramAssembler:
    """Builds a :class:`RankPrograms` one vectorised program step at a time."""

    def __init__(self, n_ranks: int) -> None:
        self.n_ranks = int(n_ranks)
        # per rank, ops whose finish the next op waits for (-1: none); one array per source
        self._finish: list[np.ndarray] = []
        # per rank, the last op if it was non-blocking (-1: none)
        self._start = np.full(self.n_ranks, -1, dtype=np.int64)
        self._chunks: list[tuple[np.ndarray, ...]] = []
        self._edges: list[tuple[np.ndarray, np.ndarray, int]] = []
        self._n = 0
        self._count = np.zeros(self.n_ranks, dtype=np.int64)  # ops per rank so far

    def op(self, ranks: np.ndarray, kind: int, peer: np.ndarray | int = -1,
           nbytes: np.ndarray | int = 0, tag: np.ndarray | int = 0,
           time_ps: np.ndarray | int = 0, *, blocking: bool = True) -> np.ndarray:
        """Append one operation to each rank of ``ranks`` (distinct ranks); return their ids.

        The ids are provisional (order of addition) and only good for :meth:`wait`.
        """
        ranks = np.asarray(ranks, dtype=np.int64)
        k = ranks.shape[0]
        ids = np.arange(self._n, self._n + k, dtype=np.int64)
        self._n += k
        seq = self._count[ranks]
        self._count[ranks] += 1
        self._chunks.append((ranks, seq, np.full(k, kind, np.int8),
                             np.broadcast_to(np.asarray(peer, np.int32), (k,)),
                             np.broadcast_to(np.asarray(nbytes, np.int64), (k,)),
                             np.broadcast_to(np.asarray(tag, np.int32), (k,)),
                             np.broadcast_to(np.asarray(time_ps, np.int64), (k,))))
        if k == 0:
            return ids
        start = self._start[ranks]
        implied = np.zeros(k, dtype=bool)
        for col in self._finish:
            before = col[ranks]
            has = before >= 0
            if has.any():
                self._edges.append((before[has], ids[has], FINISH))
                implied |= has & (before == start)
            col[ranks] = -1
        has = (start >= 0) & ~implied
        if has.any():
            self._edges.append((start[has], ids[has], START))
        self._finish = [c for c in self._finish if (c >= 0).any()]
        if blocking:
            self._start[ranks] = -1
            self._add_finish(ranks, ids)
        else:
            self._start[ranks] = ids
        return ids

    def wait(self, ranks: np.ndarray, handles: np.ndarray) -> None:
        """``MPI_Wait``: the next operation of ``ranks[i]`` waits for ``handles[i]`` to finish."""
        ranks = np.asarray(ranks, dtype=np.int64)
        if ranks.shape[0]:
            self._add_finish(ranks, np.asarray(handles, dtype=np.int64))

    def _add_finish(self, ranks: np.ndarray, ids: np.ndarray) -> None:
        col = np.full(self.n_ranks, -1, dtype=np.int64)
        col[ranks] = ids
        self._finish.append(col)

    @property
    def n_ops(self) -> int:
        return self._n

    def build(self, rank_node: np.ndarray | None = None, meta: dict | None = None,
              source: str | None = None) -> RankPrograms:
        """The programs, operations renumbered rank by rank (program order kept)."""
        dtypes = (np.int64, np.int64, np.int8, np.int32, np.int64, np.int32, np.int64)
        cols = list(zip(*self._chunks, strict=True)) if self._chunks else [()] * 7
        rank, seq, *fields = [np.concatenate(c) if c else np.zeros(0, dt)
                              for c, dt in zip(cols, dtypes, strict=True)]
        first = np.zeros(self.n_ranks + 1, dtype=np.int64)
        np.cumsum(self._count, out=first[1:])
        new_id = first[rank] + seq  # rank by rank, each rank's ops in the order added
        kind, peer, nbytes, tag, time_ps = (np.empty_like(f) for f in fields)
        for out, f in zip((kind, peer, nbytes, tag, time_ps), fields, strict=True):
            out[new_id] = f
        if self._edges:
            before = new_id[np.concatenate([e[0] for e in self._edges])]
            after = new_id[np.concatenate([e[1] for e in self._edges])]
            dkind = np.concatenate([np.full(e[0].shape[0], e[2], np.int8) for e in self._edges])
        else:
            before = after = np.zeros(0, np.int64)
            dkind = np.zeros(0, np.int8)
        return RankPrograms(first, kind, peer, nbytes, tag, time_ps, before, after, dkind,
                            rank_node=rank_node, source=source, meta=dict(meta or {}))


def recursive_doubling_ops(n_ranks: int) -> np.ndarray:
    """Operations per rank of one :func:`recursive_doubling` allreduce (int64[n_ranks])."""
    p2 = 1 << (n_ranks.bit_length() - 1)
    rem = n_ranks - p2
    steps = p2.bit_length() - 1
    ops = np.full(n_ranks, 2 * steps, dtype=np.int64)
    if rem:
        ops[0:2 * rem:2] = 2  # sits the doubling out: pre-step send, post-step recv
        ops[1:2 * rem:2] += 2
    return ops


def recursive_doubling(asm: ProgramAssembler, n_ranks: int, nbytes: int,
                       tag_base: int = 0) -> None:
    """One allreduce of ``nbytes`` per rank over ranks ``0..n_ranks-1``, recursive doubling.

    Step k (``k = 0 .. log2(p)-1``): ``irecv`` from and ``isend`` to ``rank XOR 2**k``, then
    wait for both, so step k's operations depend on the finish of step k-1's.  Tag
    ``tag_base + k``.  When ``n_ranks`` is not a power of two (``p`` the largest power of two
    below it, ``rem = n_ranks - p``), MPICH's pre- and post-step (``MPIR_Allreduce_intra_
    recursive_doubling``): the even ranks below ``2 rem`` first send their data to the next
    odd rank (blocking, tag ``tag_base + log2(p)``) and sit the doubling out; the odd ones take
    part as rank ``r // 2``, the others as ``r - rem``; afterwards each odd rank below
    ``2 rem`` sends the result back to ``r - 1`` (tag ``tag_base + log2(p) + 1``).
    """
    p2 = 1 << (n_ranks.bit_length() - 1)
    rem = n_ranks - p2
    steps = p2.bit_length() - 1
    even = np.arange(0, 2 * rem, 2, dtype=np.int64)
    odd = even + 1
    if rem:
        asm.op(even, SEND, odd, nbytes, tag_base + steps)
        asm.op(odd, RECV, even, nbytes, tag_base + steps)
    new = np.arange(p2, dtype=np.int64)
    real = np.where(new < rem, 2 * new + 1, new + rem)
    for k in range(steps):
        partner = real[new ^ (1 << k)]
        hr = asm.op(real, RECV, partner, nbytes, tag_base + k, blocking=False)
        hs = asm.op(real, SEND, partner, nbytes, tag_base + k, blocking=False)
        asm.wait(real, hr)
        asm.wait(real, hs)
    if rem:
        asm.op(odd, SEND, even, nbytes, tag_base + steps + 1)
        asm.op(even, RECV, odd, nbytes, tag_base + steps + 1)


def ember_decomposition(world: int) -> tuple[int, int, int]:
    """The process grid ember's ``Halo3D`` picks when ``pex``, ``pey`` or ``pez`` is 0.

    Same choice as ``EmberHalo3DGenerator::configure`` (sst-elements
    ``src/sst/elements/ember/mpi/motifs/emberhalo3d.cc``): start from ``world x 1 x 1``, scan
    the triples ``i x j x k = world`` with every factor below ``world`` in lexicographic order,
    and keep the last whose integer "variance" ``(i²+j²+k²)//3 - ((i+j+k)//3)²`` is not above
    the best so far.  Divisor pairs replace ember's cubic scan (same triples, same order).
    """

    def var(i: int, j: int, k: int) -> int:
        mean = (i + j + k) // 3
        return (i * i + j * j + k * k) // 3 - mean * mean

    best = (world, 1, 1)
    best_var = var(*best)
    divisors = [d for d in range(1, world) if world % d == 0]
    for i in divisors:
        for j in divisors:
            if (world // i) % j:
                continue
            k = world // (i * j)
            if k >= world:
                continue
            v = var(i, j, k)
            if v <= best_var:
                best, best_var = (i, j, k), v
    return best
