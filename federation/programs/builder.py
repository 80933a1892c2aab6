"""Building :class:`~federation.programs.model.RankPrograms`: one operation at a time, or in blocks.

Two ways, for two kinds of callers:

* :class:`ProgramBuilder` writes programs the way an MPI code reads: ``b.rank(0).isend(1, 8)``,
  ``b.rank(0).waitall()``.  It keeps the sequential chain of Schedgen (what each call depends
  on) so that callers never write dependency edges by hand, and it has a low-level
  :meth:`RankBuilder.op` / :meth:`RankBuilder.depend` for graph formats such as GOAL that
  state every edge themselves.  Each call appends plain ints to Python lists; NumPy sees them
  once, in :meth:`ProgramBuilder.build`.
* :func:`programs_from_blocks` and :func:`concatenate` assemble NumPy arrays without a Python
  step per operation, for workloads with very many ranks that repeat one pattern.

Handles returned by the builder are *rank-local* operation numbers (0 for the rank's first
operation); the global number is ``progs.rank_first[r] + handle``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import chain

import numpy as np

from federation.errors import ConfigError
from federation.models.units import clock_ps
from federation.programs.model import (
    COMPUTE,
    FINISH,
    RECV,
    SEND,
    START,
    RankPrograms,
    joined_modes,
)


class RankBuilder:
    """The operations of one rank (obtained from :meth:`ProgramBuilder.rank`).

    Sequential state, as in Schedgen's MPI semantics: ``_fin`` holds the operations the next
    operation must wait to *finish* (the last blocking operation, and handles given to
    :meth:`wait`), ``_sta`` those it must wait to *start* (non-blocking operations issued since
    the last blocking one).  Transitively implied edges are not written: after ``isend`` X the
    next operation depends on X's start only, which already implies whatever X waited for.
    """

    __slots__ = ("rank", "kind", "peer", "nbytes", "tag", "time_ps", "dep_before",
                 "dep_after", "dep_kind", "labels", "lines", "modes", "coll", "_fin", "_sta",
                 "_pending")

    def __init__(self, rank: int) -> None:
        self.rank = rank
        self.kind: list[int] = []
        self.peer: list[int] = []
        self.nbytes: list[int] = []
        self.tag: list[int] = []
        self.time_ps: list[int] = []
        self.dep_before: list[int] = []
        self.dep_after: list[int] = []
        self.dep_kind: list[int] = []
        self.labels: list[str] | None = None
        self.lines: list[int] | None = None
        self.modes: dict[int, str] | None = None  #: a send's routing mode by handle
        #: spans of operations collectives made: (first, end) handle pairs, flattened
        self.coll: list[int] = []
        self._fin: list[int] = []
        self._sta: list[int] = []
        self._pending: dict[int, None] = {}  # outstanding non-blocking ops, in issue order

    def __len__(self) -> int:
        return len(self.kind)

    # ------------------------------------------------------------------ low level

    def op(self, kind: int, peer: int, nbytes: int, tag: int, time_ps: int,
           requires: Iterable[int] = (), irequires: Iterable[int] = (),
           label: str | None = None, line: int = 0) -> int:
        """Append one operation with explicit dependencies (rank-local handles) and return its
        handle.  Ignores and does not change the sequential chain; for graph formats."""
        h = len(self.kind)
        self.kind.append(kind)
        self.peer.append(peer)
        self.nbytes.append(nbytes)
        self.tag.append(tag)
        self.time_ps.append(time_ps)
        for b in requires:
            self.dep_before.append(b)
            self.dep_after.append(h)
            self.dep_kind.append(FINISH)
        for b in irequires:
            self.dep_before.append(b)
            self.dep_after.append(h)
            self.dep_kind.append(START)
        if label is not None or line:
            labels = self.labels
            if labels is not None and len(labels) == h:  # every operation annotated (GOAL)
                labels.append(label or "")
                self.lines.append(line)  # type: ignore[union-attr]
            else:
                self._annotate(h, label, line)
        return h

    def depend(self, before: int, after: int, kind: int = FINISH) -> None:
        """Add the edge "``after`` may start once ``before`` finished (``FINISH``) / started
        (``START``)" between two existing operations of this rank."""
        self.dep_before.append(before)
        self.dep_after.append(after)
        self.dep_kind.append(kind)

    def _annotate(self, h: int, label: str | None, line: int) -> None:
        # labels and lines are kept only once someone gives one, so plain builds pay nothing
        if self.labels is None:
            self.labels = [""] * h
            self.lines = [0] * h
        assert self.lines is not None
        self.labels.extend([""] * (h + 1 - len(self.labels)))
        self.lines.extend([0] * (h + 1 - len(self.lines)))
        self.labels[h] = label or ""
        self.lines[h] = line

    def begin_collective(self) -> int:
        """A collective starts writing into this rank: the handle its first operation gets."""
        return len(self.kind)

    def end_collective(self, first: int) -> None:
        """The collective begun at ``first`` is written: its operations are marked."""
        if len(self.kind) > first:
            self.coll.extend((first, len(self.kind)))

    # ------------------------------------------------------------------ MPI-style calls

    def _seq(self, kind: int, peer: int, nbytes: int, tag: int, time_ps: int,
             blocking: bool) -> int:
        h = len(self.kind)
        self.kind.append(kind)
        self.peer.append(peer)
        self.nbytes.append(nbytes)
        self.tag.append(tag)
        self.time_ps.append(time_ps)
        for b in self._fin:
            self.dep_before.append(b)
            self.dep_after.append(h)
            self.dep_kind.append(FINISH)
        for b in self._sta:
            self.dep_before.append(b)
            self.dep_after.append(h)
            self.dep_kind.append(START)
        if blocking:
            self._fin = [h]
            self._sta = []
        else:
            self._fin = []
            self._sta = [h]
            self._pending[h] = None
        return h

    def send(self, dst: int, nbytes: int, tag: int = 0, mode: str | None = None) -> int:
        """Blocking send: the next operation waits for its last packet to leave the NIC.
        ``mode``: the message's routing mode (a name of the routing's ``modes()``)."""
        return self._mode(self._seq(SEND, dst, nbytes, tag, 0, True), mode)

    def _mode(self, h: int, mode: str | None) -> int:
        if mode is not None:
            if self.modes is None:
                self.modes = {}
            self.modes[h] = str(mode)
        return h

    def recv(self, src: int, nbytes: int, tag: int = 0) -> int:
        """Blocking receive of a message from ``src`` with ``tag``."""
        return self._seq(RECV, src, nbytes, tag, 0, True)

    def isend(self, dst: int, nbytes: int, tag: int = 0, mode: str | None = None) -> int:
        """Non-blocking send; finish it with :meth:`wait` or :meth:`waitall`."""
        return self._mode(self._seq(SEND, dst, nbytes, tag, 0, False), mode)

    def irecv(self, src: int, nbytes: int, tag: int = 0) -> int:
        """Non-blocking receive; finish it with :meth:`wait` or :meth:`waitall`."""
        return self._seq(RECV, src, nbytes, tag, 0, False)

    def compute_ps(self, time_ps: int) -> int:
        """Compute for ``time_ps`` integer picoseconds (the engine's clock unit)."""
        return self._seq(COMPUTE, -1, 0, 0, int(time_ps), True)

    def compute(self, seconds: float, what: str = "compute time") -> int:
        """Compute for ``seconds`` (rounded to whole picoseconds).  A duration the engine's
        clock cannot hold is refused (:func:`~federation.models.units.clock_ps`), ``what`` naming it
        in the message."""
        return self._seq(COMPUTE, -1, 0, 0, clock_ps(seconds, what, path="workload"), True)

    def wait(self, *handles: int) -> None:
        """The next operation also waits for each handle to finish (creates no operation)."""
        for h in handles:
            self._fin.append(h)
            self._pending.pop(h, None)
        if self._sta:  # waiting for X to finish implies X started: no START edge as well
            self._sta = [h for h in self._sta if h not in handles]

    def waitall(self) -> None:
        """:meth:`wait` on every non-blocking operation of this rank not yet waited for."""
        self._fin.extend(self._pending)
        if self._sta:
            self._sta = [h for h in self._sta if h not in self._pending]
        self._pending.clear()

    @property
    def pending(self) -> list[int]:
        """Non-blocking operations not yet waited for, oldest first."""
        return list(self._pending)


class ProgramBuilder:
    """Rank programs for ``n_ranks`` ranks, written call by call (see the module docstring)::

        b = ProgramBuilder(2)
        b.rank(0).send(1, 1024)
        b.rank(1).recv(0, 1024)
        progs = b.build()
    """

    def __init__(self, n_ranks: int) -> None:
        if n_ranks < 0:
            raise ValueError(f"n_ranks must be >= 0, got {n_ranks}")
        self.n_ranks = n_ranks
        # made up front: a rank made while others grow is young when the collector runs, and
        # its lists were traversed again and again (a lazy dict cost 15 % of a build).
        # Readers bound n_ranks by the machine's nodes before they get here.
        self._ranks = [RankBuilder(r) for r in range(n_ranks)]

    def rank(self, r: int) -> RankBuilder:
        if r < 0:  # a list would wrap -1 to the last rank without a word
            raise IndexError(f"rank {r} outside 0 .. {self.n_ranks - 1}")
        return self._ranks[r]

    def __getitem__(self, r: int) -> RankBuilder:
        return self.rank(r)

    def begin_collective(self, ranks: Iterable[int]) -> list[tuple[RankBuilder, int]]:
        """A collective starts writing into ``ranks`` (see
        :func:`~federation.programs.collective_ctx.collective_ops`)."""
        rbs = [self.rank(int(r)) for r in np.asarray(ranks).reshape(-1).tolist()]
        return [(rb, rb.begin_collective()) for rb in rbs]

    def end_collective(self, token: list[tuple[RankBuilder, int]]) -> None:
        """The collective begun with ``token`` is written: its operations are marked."""
        for rb, first in token:
            rb.end_collective(first)

    def adopt(self, rb: RankBuilder) -> None:
        """Use ``rb``, written elsewhere, as rank ``rb.rank``'s operations (a reader that
        learns the rank count only at the end writes ranks before the builder exists)."""
        self.rank(rb.rank)  # range check
        self._ranks[rb.rank] = rb

    def build(self, rank_node: Sequence[int] | np.ndarray | None = None,
              source: str | None = None) -> RankPrograms:
        """The flat arrays (one NumPy conversion per field, whatever the number of ranks).

        Fields are read as int64 and narrowed by :class:`RankPrograms`, which refuses a value
        its column cannot hold (a peer beyond int32, a kind beyond int8) instead of wrapping
        it; a value beyond int64 is refused here."""
        rs = self._ranks
        counts = np.fromiter((len(r.kind) for r in rs), dtype=np.int64, count=len(rs))
        rank_first = np.zeros(len(rs) + 1, dtype=np.int64)
        np.cumsum(counts, out=rank_first[1:])
        n = int(rank_first[-1])

        def flat(attr: str, count: int) -> np.ndarray:
            return _int64(rs, attr, count)

        dcounts = np.fromiter((len(r.dep_before) for r in rs), dtype=np.int64, count=len(rs))
        m = int(dcounts.sum())
        offset = np.repeat(rank_first[:-1], dcounts)
        labels = lines = None
        if any(r.labels is not None for r in rs):
            labels, line_list = [], []
            for r in rs:
                k = len(r.kind)
                lab = (r.labels or []) + [""] * (k - len(r.labels or []))
                lin = (r.lines or []) + [0] * (k - len(r.lines or []))
                labels.extend(lab)
                line_list.extend(lin)
            lines = np.asarray(line_list, dtype=np.int64)
        op_mode, mode_names = _modes(rs, rank_first, n)
        return RankPrograms(
            rank_first=rank_first,
            op_kind=flat("kind", n),
            op_peer=flat("peer", n),
            op_bytes=flat("nbytes", n),
            op_tag=flat("tag", n),
            op_time_ps=flat("time_ps", n),
            dep_before=flat("dep_before", m) + offset,
            dep_after=flat("dep_after", m) + offset,
            dep_kind=flat("dep_kind", m),
            rank_node=None if rank_node is None else np.asarray(rank_node, dtype=np.int64),
            op_label=labels,
            op_line=lines,
            source=source,
            op_mode=op_mode,
            mode_names=mode_names,
            op_coll=_spans(rank_first, [r.coll for r in rs]),
        )


def _modes(rs: list[RankBuilder], rank_first: np.ndarray, n: int
           ) -> tuple[np.ndarray | None, list[str] | None]:
    """The sends' routing modes given by ``mode=`` (indices into the sorted names)."""
    if all(r.modes is None for r in rs):
        return None, None
    names = sorted({m for r in rs for m in (r.modes or {}).values()})
    index = {m: i for i, m in enumerate(names)}
    out = np.full(n, -1, dtype=np.int8)
    for r in rs:
        for h, m in (r.modes or {}).items():
            out[int(rank_first[r.rank]) + h] = index[m]
    return out, names


def _spans(rank_first: np.ndarray, spans: list[list[int]]) -> np.ndarray:
    """int8[n_ops]: 1 inside each rank's (first, end) spans of rank-local handles."""
    n = int(rank_first[-1])
    mark = np.zeros(n + 1, dtype=np.int64)
    for r, sp in enumerate(spans):
        if sp:
            a = np.asarray(sp, dtype=np.int64).reshape(-1, 2) + rank_first[r]
            np.add.at(mark, a[:, 0], 1)
            np.add.at(mark, a[:, 1], -1)
    return (np.cumsum(mark[:n]) > 0).astype(np.int8)


def _int64(rs: list[RankBuilder], attr: str, count: int) -> np.ndarray:
    """One field of every rank's operations (or edges), joined, as int64; a value that is not
    an integer within int64 is refused naming its rank, operation and field."""
    try:
        return np.fromiter(chain.from_iterable(getattr(r, attr) for r in rs), dtype=np.int64,
                           count=count)
    except (OverflowError, TypeError, ValueError):
        for r in rs:
            for i, v in enumerate(getattr(r, attr)):
                if not isinstance(v, int | np.integer) or not -2**63 <= int(v) < 2**63:
                    what = "dependency" if attr.startswith("dep_") else "operation"
                    raise ConfigError(f"rank {r.rank} {what} {i}: {attr} {v!r} is not a whole "
                                      "number within int64", path="workload") from None
        raise


# --------------------------------------------------------------------------- vectorised


def programs_from_blocks(kind: np.ndarray, peer: np.ndarray, nbytes: np.ndarray,
                         tag: np.ndarray | int = 0, time_ps: np.ndarray | int = 0,
                         dep_before: np.ndarray | None = None,
                         dep_after: np.ndarray | None = None,
                         dep_kind: np.ndarray | int = FINISH,
                         rank_node: np.ndarray | None = None) -> RankPrograms:
    """Programs in which every rank has the same number ``k`` of operations.

    ``kind``, ``peer``, ``nbytes``, ``tag``, ``time_ps`` are ``(n_ranks, k)`` arrays (or
    broadcast to that shape: a scalar, or a ``(k,)`` row shared by all ranks).  Dependencies are
    given in *rank-local* operation numbers, as ``(m,)`` rows shared by every rank or
    ``(n_ranks, m)`` arrays; they are shifted to global numbers here.  No Python step per
    operation, so a million-rank pattern builds in the time NumPy takes to copy it.
    """
    kind = np.asarray(kind)
    if kind.ndim != 2:
        raise ValueError(f"kind must be an (n_ranks, k) array, got shape {kind.shape}")
    n_ranks, k = kind.shape
    shape = (n_ranks, k)

    def grid(a: np.ndarray | int) -> np.ndarray:  # narrowed and checked by RankPrograms
        return np.broadcast_to(np.asarray(a), shape).reshape(-1)

    rank_first = np.arange(n_ranks + 1, dtype=np.int64) * k
    if dep_before is None:
        db = da = np.zeros(0, dtype=np.int64)
        dk = np.zeros(0, dtype=np.int8)
    else:
        before = np.asarray(dep_before, dtype=np.int64)
        after = np.asarray(dep_after, dtype=np.int64)
        m = before.shape[-1]
        dshape = (n_ranks, m)
        base = rank_first[:-1, None]
        db = (np.broadcast_to(before, dshape) + base).reshape(-1)
        da = (np.broadcast_to(after, dshape) + base).reshape(-1)
        dk = np.broadcast_to(np.asarray(dep_kind), dshape).reshape(-1)
    return RankPrograms(
        rank_first=rank_first,
        op_kind=grid(kind),
        op_peer=grid(peer),
        op_bytes=grid(nbytes),
        op_tag=grid(tag),
        op_time_ps=grid(time_ps),
        dep_before=db,
        dep_after=da,
        dep_kind=dk,
        rank_node=rank_node,
    )


def concatenate(parts: Sequence[RankPrograms],
                rank_node: np.ndarray | None = None) -> RankPrograms:
    """Stack the ranks of several programs: the ranks of ``parts[1]`` follow those of
    ``parts[0]``, and so on.  Peers are kept as they are, so they must already be the ranks of
    the whole program (e.g. rank groups built separately).  Labels and lines are kept when
    every part has them; ``rank_node`` defaults to the parts' own placements when all give
    one."""
    if not parts:
        return ProgramBuilder(0).build(rank_node=rank_node)
    op_counts = [p.n_ops for p in parts]
    op_offsets = np.concatenate([[0], np.cumsum(op_counts)[:-1]]).astype(np.int64)
    rank_first = np.concatenate(
        [[0]] + [p.rank_first[1:] + off for p, off in zip(parts, op_offsets, strict=True)]
    ).astype(np.int64)
    dep_before = np.concatenate(
        [p.dep_before + off for p, off in zip(parts, op_offsets, strict=True)])
    dep_after = np.concatenate(
        [p.dep_after + off for p, off in zip(parts, op_offsets, strict=True)])
    labels = None
    if all(p.op_label is not None for p in parts):
        labels = list(chain.from_iterable(p.op_label for p in parts))  # type: ignore[arg-type]
    lines = None
    if all(p.op_line is not None for p in parts):
        lines = np.concatenate([p.op_line for p in parts])
    if rank_node is None and all(p.rank_node is not None for p in parts):
        rank_node = np.concatenate([p.rank_node for p in parts])
    op_mode, mode_names = joined_modes(list(parts))
    rank_source = None
    if any(p.rank_source is not None for p in parts):  # each rank keeps its own file
        rank_source = [s for p in parts for s in (p.rank_source or [p.source or ""] * p.n_ranks)]
    return RankPrograms(
        rank_first=rank_first,
        op_kind=np.concatenate([p.op_kind for p in parts]),
        op_peer=np.concatenate([p.op_peer for p in parts]),
        op_bytes=np.concatenate([p.op_bytes for p in parts]),
        op_tag=np.concatenate([p.op_tag for p in parts]),
        op_time_ps=np.concatenate([p.op_time_ps for p in parts]),
        dep_before=dep_before,
        dep_after=dep_after,
        dep_kind=np.concatenate([p.dep_kind for p in parts]),
        rank_node=rank_node,
        op_label=labels,
        op_line=lines,
        source=parts[0].source if len({p.source for p in parts}) == 1 else None,
        op_mode=op_mode,
        mode_names=mode_names,
        op_coll=np.concatenate([p.op_coll for p in parts]),
        rank_source=rank_source,
    )
