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

from federation.errors import ConfigError

#: operation kinds (``op_kind``)
SEND = 0
RECV = 1
COMPUTE = 2
KIND_NAMES = ("send", "recv", "compute")

#: dependency kinds (``dep_kind``)
FINISH = 0  #: after the other operation finished (GOAL ``requires``)
START = 1  #: after the other operation started (GOAL ``irequires``)


#: the dtype of each array field: what the engine's tables hold
_DTYPES = {"rank_first": np.int64, "op_kind": np.int8, "op_peer": np.int32,
           "op_bytes": np.int64, "op_tag": np.int32, "op_time_ps": np.int64,
           "dep_before": np.int64, "dep_after": np.int64, "dep_kind": np.int8}


def _exact(values: object, dtype: type, name: str) -> np.ndarray:
    """``values`` as a contiguous ``dtype`` array, refused when a value would change on the
    way (NumPy's casts wrap integers and truncate floats without a word)."""
    arr = np.asarray(values)
    if arr.dtype == dtype:
        return np.ascontiguousarray(arr)
    if arr.dtype.kind == "b" or (arr.dtype.kind in "iu" and np.can_cast(arr.dtype, dtype)):
        return np.ascontiguousarray(arr, dtype=dtype)
    try:
        with np.errstate(invalid="ignore", over="ignore"):
            out = np.ascontiguousarray(arr, dtype=dtype)
            same = arr.dtype.kind in "iuf" and bool(np.all(out == arr))
    except (TypeError, ValueError, OverflowError):
        same = False
    if not same:
        bad = _first_bad(arr, dtype)
        raise ConfigError(f"RankPrograms.{name}: {bad!r} is not a whole number within "
                          f"{np.dtype(dtype).name} (the engine stores {name} as "
                          f"{np.dtype(dtype).name})", path="workload")
    return out


@dataclass(frozen=True)
class JobRanks:
    """One job's ranks in programs merged for a run of several jobs: its ranks are
    ``first ..`` up to the next job's first; ``source`` names its program file (or
    workload).  Messages about an operation name the job and the job's own rank numbers,
    the ones its program file uses."""

    name: str
    first: int
    source: str | None = None


def _first_bad(arr: np.ndarray, dtype: type) -> object:
    """The first value of ``arr`` that ``dtype`` cannot hold exactly (for the message)."""
    info = np.iinfo(dtype)
    for v in arr.reshape(-1).tolist():
        if not isinstance(v, int | float) or v != v or not info.min <= v <= info.max \
                or int(v) != v:
            return v
    return arr.reshape(-1)[:1].tolist()


@dataclass
class RankPrograms:
    """Operation graphs of ``n_ranks`` ranks (see the module docstring).

    ``op_peer`` is the destination rank of a send and the source rank of a receive (-1 for
    compute); ``op_bytes`` the message size (0 for compute); ``op_tag`` the MPI tag (0 for
    compute); ``op_time_ps`` a compute operation's duration in picoseconds (0 otherwise).
    ``op_label`` optionally carries each operation's name in its source (a GOAL label such as
    ``l3``) and ``op_line`` its line number there, for messages; ``source`` names the file.
    ``rank_node`` places rank i on node ``rank_node[i]`` (default: node i).
    ``op_coll`` marks the operations a collective (or barrier) made (1) apart from the
    program's own point-to-point calls (0): QoS's ``class_by`` classes sends by it; every
    transformation of programs must carry it (the default, all zeros, says "no collective").
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
    #: int8[n_ops]: a send's routing mode, an index into ``mode_names`` (-1: none given, the
    #: job's or the routing's own); ``None``: no send names one.  A per-message mode, as Cray's
    #: uGNI calls take one (``MPICH_GNI_ROUTING_MODE`` per message)
    op_mode: np.ndarray | None = None
    mode_names: list[str] | None = None  #: the names ``op_mode`` indexes
    op_coll: np.ndarray | None = None  #: int8[n_ops]; None: zeros (no collective)
    #: the file each rank was read from when ranks come from several files (a DUMPI folder's
    #: per-rank files): messages name the rank's file, not the folder; ``None``: ``source``
    rank_source: list[str] | None = None
    #: the jobs these programs merge, by first rank (a run of several jobs); ``None``: one
    #: program, whose rank numbers are its own
    job_ranks: tuple[JobRanks, ...] | None = None

    def __post_init__(self) -> None:
        # each field in the dtype the engine stores it in; a value that dtype cannot hold (a
        # peer of 2**32, a kind of 256, a size of 8.5 or 1e30) is refused, not wrapped
        for name, dtype in _DTYPES.items():
            setattr(self, name, _exact(getattr(self, name), dtype, name))
        if self.rank_node is not None:
            self.rank_node = _exact(self.rank_node, np.int64, "rank_node")
        if self.op_line is not None:
            self.op_line = _exact(self.op_line, np.int64, "op_line")
        if self.op_mode is not None:
            self.op_mode = _exact(self.op_mode, np.int8, "op_mode")
            names = self.mode_names or []
            if self.op_mode.shape != self.op_kind.shape or (
                    self.op_mode.size and not -1 <= int(self.op_mode.min())
                    <= int(self.op_mode.max()) < len(names)):
                raise ConfigError(f"RankPrograms.op_mode: one value per operation, each -1 or "
                                  f"an index of mode_names ({len(names)} names)",
                                  path="workload")
        if self.op_coll is None:
            self.op_coll = np.zeros(self.op_kind.shape[0], dtype=np.int8)
        else:
            self.op_coll = _exact(self.op_coll, np.int8, "op_coll")
            if self.op_coll.shape != self.op_kind.shape:
                raise ValueError(f"op_coll has {self.op_coll.shape[0]} entries for "
                                 f"{self.op_kind.shape[0]} operations")
        if self.rank_source is not None and len(self.rank_source) != self.n_ranks:
            raise ValueError(f"rank_source has {len(self.rank_source)} entries for "
                             f"{self.n_ranks} ranks")

    def collective_sends(self) -> np.ndarray:
        """bool[n_messages]: per send (in operation order), whether a collective made it."""
        assert self.op_coll is not None
        return self.op_coll[self.op_kind == SEND] != 0

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

    def send_modes(self) -> list[str | None]:
        """Each operation's routing mode by name (``None``: none given); for messages."""
        if self.op_mode is None:
            return [None] * self.n_ops
        names = self.mode_names or []
        return [names[m] if m >= 0 else None for m in self.op_mode.tolist()]

    def nodes(self) -> np.ndarray:
        """int64[n_ranks]: the node each rank runs on."""
        if self.rank_node is None:
            return np.arange(self.n_ranks, dtype=np.int64)
        return self.rank_node

    def describe(self, op: int) -> str:
        """``rank 3 operation 7 (recv 8 B from rank 1 tag 0)``, with the source's label and
        line when known: what a message about one operation says.  The file is the rank's own
        (:attr:`rank_source`, else its job's, else :attr:`source`); in programs merged from
        several jobs, ranks are the job's own numbers, as in its file, and the run's rank and
        node follow: ``job 'b' rank 0 (rank 2 of the run, node 2) operation ...``."""
        rank = int(np.searchsorted(self.rank_first, op, side="right") - 1)
        local = op - int(self.rank_first[rank])
        job = self.job_of(rank)
        base = job.first if job is not None else 0
        kind = int(self.op_kind[op])
        if kind == SEND:
            what = f"send {int(self.op_bytes[op])} B to rank {int(self.op_peer[op]) - base} " \
                   f"tag {int(self.op_tag[op])}"
        elif kind == RECV:
            what = f"recv {int(self.op_bytes[op])} B from rank {int(self.op_peer[op]) - base} " \
                   f"tag {int(self.op_tag[op])}"
        else:
            what = f"compute {int(self.op_time_ps[op])} ps"
        name = f"operation {local}"
        if self.op_label is not None and self.op_label[op]:
            name = f"operation {self.op_label[op]}"
        source = self.source
        if self.rank_source is not None and self.rank_source[rank]:
            source = self.rank_source[rank]
        elif job is not None:
            source = job.source
        where = ""
        if self.op_line is not None and int(self.op_line[op]) > 0:
            where = f", {source}:{int(self.op_line[op])}" if source \
                else f", line {int(self.op_line[op])}"
        who = f"rank {rank}"
        if job is not None:
            who = (f"job {job.name!r} rank {rank - base} (rank {rank} of the run, node "
                   f"{int(self.nodes()[rank])})")
        return f"{who} {name} ({what}{where})"

    def job_of(self, rank: int) -> JobRanks | None:
        """The job that holds ``rank`` in programs merged from several jobs (else None)."""
        if not self.job_ranks:
            return None
        i = int(np.searchsorted([j.first for j in self.job_ranks], rank, side="right")) - 1
        return self.job_ranks[i] if i >= 0 else None


def with_jobs(merged: RankPrograms, jobs: list[tuple[str, RankPrograms]]) -> RankPrograms:
    """``merged`` (the ranks of ``jobs``' programs one job after the other, in that order)
    knowing its jobs, so that a message about an operation in the run (a deadlock, the
    clock) names the job, its program file and the job's own rank numbers; a job read from
    several files (DUMPI) keeps each rank's file."""
    parts, first = [], 0
    for name, p in jobs:
        parts.append(JobRanks(name, first, p.source))
        first += p.n_ranks
    if first != merged.n_ranks:
        raise ValueError(f"the jobs have {first} ranks, the merged programs {merged.n_ranks}")
    rank_source = None
    if any(p.rank_source is not None for _, p in jobs):
        rank_source = [s for _, p in jobs
                       for s in (p.rank_source or [p.source or ""] * p.n_ranks)]
    merged.job_ranks = tuple(parts)
    merged.rank_source = rank_source
    return merged


def joined_modes(parts: list[RankPrograms]) -> tuple[np.ndarray | None, list[str] | None]:
    """The sends' routing modes of ``parts`` stacked one after the other (``op_mode`` and
    ``mode_names`` of the joined programs): each part's indices moved to the joined names."""
    if all(p.op_mode is None for p in parts):
        return None, None
    names = sorted({m for p in parts for m in (p.mode_names or [])})
    index = {m: i for i, m in enumerate(names)}
    cols = []
    for p in parts:
        if p.op_mode is None:
            cols.append(np.full(p.n_ops, -1, dtype=np.int8))
            continue
        remap = np.array([index[m] for m in (p.mode_names or [])] + [-1], dtype=np.int8)
        cols.append(remap[p.op_mode])  # -1 indexes the trailing -1
    return np.concatenate(cols), names
