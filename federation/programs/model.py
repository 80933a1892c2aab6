"""Rank programs as flat arrays: the contract between workloads, file formats and engines.

An MPI-style program is an *operation graph* per rank (the model of LogGOPSim's GOAL
schedules): ``send``, ``recv`` and ``compute`` operations, and dependencies of two kinds:

* ``FINISH`` (GOAL's ``requires``): the operation may start once the other has *finished*
  (a blocking call, or a wait on a non-blocking one);
* ``START`` (GOAL's ``irequires``): once the other has *started* (what follows a non-blocking
  ``isend``/``irecv`` in program order).

Everything is stored as NumPy arrays, so a million operations take a few tens of megabytes and
an engine can execute them without a Python object per operation.  Operations are numbered
globally, rank by rank: rank ``r`` owns operations ``rank_first[r] .. rank_first[r+1] - 1``.
Edges are listed as (``dep_before``, ``dep_after``, ``dep_kind``) triples of global operation
numbers, both of the same rank.

Receives match sends by (source rank, tag) in posting order, as MPI's non-overtaking rule
requires: the k-th send started from rank s to rank d with tag t is received by the k-th
receive posted at d for (s, t).  There are no wildcards, so every (s, d, t) *channel* needs as
many receives as sends (:func:`federation.programs.checks.check_programs`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

#: operation kinds (``op_kind``)
SEND = 0
RECV = 1
COMPUTE = 2
KIND_NAMES = ("send", "recv", "compute")

#: dependency kinds (``dep_kind``)
FINISH = 0  #: after the other operation finished (GOAL ``requires``)
START = 1  #: after the other operation started (GOAL ``irequires``)


@dataclass
class RankPrograms:
    """Operation graphs of ``n_ranks`` ranks (see the module docstring).

    ``op_peer`` is the destination rank of a send and the source rank of a receive (-1 for
    compute); ``op_bytes`` the message size (0 for compute); ``op_tag`` the MPI tag (0 for
    compute); ``op_time_ps`` a compute operation's duration in picoseconds (0 otherwise).
    ``op_label`` optionally carries each operation's name in its source (a GOAL label such as
    ``l3``) and ``op_line`` its line number there, for messages; ``source`` names the file.
    ``rank_node`` places rank i on node ``rank_node[i]`` (default: node i).
    """

    rank_first: np.ndarray  #: int64[n_ranks + 1]
    op_kind: np.ndarray  #: int8[n_ops]
    op_peer: np.ndarray  #: int32[n_ops]
    op_bytes: np.ndarray  #: int64[n_ops]
    op_tag: np.ndarray  #: int32[n_ops]
    op_time_ps: np.ndarray  #: int64[n_ops]
    dep_before: np.ndarray  #: int64[n_deps]
    dep_after: np.ndarray  #: int64[n_deps]
    dep_kind: np.ndarray  #: int8[n_deps]
    rank_node: np.ndarray | None = None  #: int64[n_ranks]; None: rank i on node i
    op_label: list[str] | None = None
    op_line: np.ndarray | None = None  #: int64[n_ops], 0: unknown
    source: str | None = None
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.rank_first = np.ascontiguousarray(self.rank_first, dtype=np.int64)
        self.op_kind = np.ascontiguousarray(self.op_kind, dtype=np.int8)
        self.op_peer = np.ascontiguousarray(self.op_peer, dtype=np.int32)
        self.op_bytes = np.ascontiguousarray(self.op_bytes, dtype=np.int64)
        self.op_tag = np.ascontiguousarray(self.op_tag, dtype=np.int32)
        self.op_time_ps = np.ascontiguousarray(self.op_time_ps, dtype=np.int64)
        self.dep_before = np.ascontiguousarray(self.dep_before, dtype=np.int64)
        self.dep_after = np.ascontiguousarray(self.dep_after, dtype=np.int64)
        self.dep_kind = np.ascontiguousarray(self.dep_kind, dtype=np.int8)
        if self.rank_node is not None:
            self.rank_node = np.ascontiguousarray(self.rank_node, dtype=np.int64)

    @property
    def n_ranks(self) -> int:
        return int(self.rank_first.shape[0] - 1)

    @property
    def n_ops(self) -> int:
        return int(self.op_kind.shape[0])

    @property
    def n_deps(self) -> int:
        return int(self.dep_before.shape[0])

    @property
    def op_rank(self) -> np.ndarray:
        """int64[n_ops]: the rank of each operation."""
        return np.repeat(np.arange(self.n_ranks, dtype=np.int64), np.diff(self.rank_first))

    def nodes(self) -> np.ndarray:
        """int64[n_ranks]: the node each rank runs on."""
        if self.rank_node is None:
            return np.arange(self.n_ranks, dtype=np.int64)
        return self.rank_node

    def describe(self, op: int) -> str:
        """``rank 3 operation 7 (recv 8 B from rank 1 tag 0)``, with the source's label and
        line when known: what a message about one operation says."""
        rank = int(np.searchsorted(self.rank_first, op, side="right") - 1)
        local = op - int(self.rank_first[rank])
        kind = int(self.op_kind[op])
        if kind == SEND:
            what = f"send {int(self.op_bytes[op])} B to rank {int(self.op_peer[op])} " \
                   f"tag {int(self.op_tag[op])}"
        elif kind == RECV:
            what = f"recv {int(self.op_bytes[op])} B from rank {int(self.op_peer[op])} " \
                   f"tag {int(self.op_tag[op])}"
        else:
            what = f"compute {int(self.op_time_ps[op])} ps"
        name = f"operation {local}"
        if self.op_label is not None and self.op_label[op]:
            name = f"operation {self.op_label[op]}"
        where = ""
        if self.op_line is not None and int(self.op_line[op]) > 0:
            where = f", {self.source or 'line'}:{int(self.op_line[op])}" if self.source \
                else f", line {int(self.op_line[op])}"
        return f"rank {rank} {name} ({what}{where})"
