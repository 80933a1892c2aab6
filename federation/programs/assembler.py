"""Vectorised assembly of rank programs under MPI sequential semantics (Schedgen's convention).

Workloads and the collectives (:mod:`federation.programs.collectives`) describe each rank's
program as *steps*: one call adds one operation to each of a set of ranks, so a step of a
1,024-rank collective costs a few NumPy calls instead of 1,024 Python iterations.  The
assembler keeps, per rank, what the next operation must wait for:

* a blocking operation X depends (``FINISH``) on the previous blocking point and becomes the
  new one: the next operation depends (``FINISH``) on X;
* a non-blocking operation Y (``isend``/``irecv``) depends on the same things, but the next
  operation depends only on Y's *start* (``START``);
* :meth:`ProgramAssembler.wait` creates no operation: the next operation also depends
  (``FINISH``) on each waited handle.

Dependencies implied transitively are left out (after a non-blocking Y, the previous blocking
point is implied through Y; a ``START`` on an operation also waited on is implied by the
``FINISH``), so every edge the workloads emit is one the semantics require.  These are the
rules :class:`~federation.programs.builder.RankBuilder` applies one call at a time: a program
written either way has the same operations and the same set of edges.
Operations are numbered in the order they are added and renumbered rank by rank at the end
(each rank's program order kept); edges are listed in the order the steps created them.
"""

from __future__ import annotations

import numpy as np

from federation.programs.model import FINISH, START, RankPrograms

__all__ = ["ProgramAssembler"]


class ProgramAssembler:
    """Builds a :class:`RankPrograms` one vectorised program step at a time."""

    def __init__(self, n_ranks: int) -> None:
        self.n_ranks = int(n_ranks)
        # per rank, ops whose finish the next op waits for (-1: none); one array per source
        self._finish: list[np.ndarray] = []
        self._live: list[int] = []  # entries (>= 0) of each column of _finish
        # per rank, the last op if it was non-blocking (-1: none)
        self._start = np.full(self.n_ranks, -1, dtype=np.int64)
        self._chunks: list[tuple[np.ndarray, ...]] = []
        self._edges: list[tuple[np.ndarray, np.ndarray, int]] = []
        self._n = 0
        self._count = np.zeros(self.n_ranks, dtype=np.int64)  # ops per rank so far
        #: (ranks, first, end) rank-local spans of the operations collectives made
        self._coll: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        #: after :meth:`build`: the global operation number of each provisional id
        self.global_ids: np.ndarray | None = None

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
        for i, col in enumerate(self._finish):
            before = col[ranks]
            has = before >= 0
            used = int(np.count_nonzero(has))
            if used:
                self._edges.append((before[has], ids[has], FINISH))
                implied |= has & (before == start)
                col[ranks] = -1
                self._live[i] -= used
        has = (start >= 0) & ~implied
        if has.any():
            self._edges.append((start[has], ids[has], START))
        if 0 in self._live:  # drop the columns nobody waits on any more (order kept)
            keep = [i for i, v in enumerate(self._live) if v]
            self._finish = [self._finish[i] for i in keep]
            self._live = [self._live[i] for i in keep]
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
        self._live.append(int(ranks.shape[0]))

    def begin_collective(self, ranks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """A collective starts writing into ``ranks``: where each rank's operations stand."""
        ranks = np.asarray(ranks, dtype=np.int64).reshape(-1)
        return ranks, self._count[ranks].copy()

    def end_collective(self, token: tuple[np.ndarray, np.ndarray]) -> None:
        """The collective of ``token`` is written: its operations are marked collective."""
        ranks, first = token
        self._coll.append((ranks, first, self._count[ranks].copy()))

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
        self.global_ids = new_id
        mark = np.zeros(self._n + 1, dtype=np.int64)
        for ranks, a, b in self._coll:
            some = b > a
            np.add.at(mark, first[ranks[some]] + a[some], 1)
            np.add.at(mark, first[ranks[some]] + b[some], -1)
        coll = (np.cumsum(mark[:self._n]) > 0).astype(np.int8)
        return RankPrograms(first, kind, peer, nbytes, tag, time_ps, before, after, dkind,
                            rank_node=rank_node, source=source, meta=dict(meta or {}),
                            op_coll=coll)
