"""SimGrid time-independent (TI) traces to rank programs.

What SimGrid writes (``smpirun -trace-ti --cfg=tracing/filename:T``, SimGrid 3.20 and later;
checked against ``src/smpi/internals/smpi_replay.cpp``, ``src/xbt/xbt_replay.cpp`` and
``src/instr/instr_private.hpp``):

* ``T`` is a *list* of trace files, one per line (``T_files/<id>_rank-<n>.txt``); rank i
  reads the i-th.  With ``tracing/smpi/format/ti-one-file`` (or by hand) the list has one line:
  one file shared by all ranks.  ``smpirun -replay`` reads exactly this list.
* A trace line is ``<rank> <action> <args...>``, the rank a plain integer (``0``), fields
  separated by blanks; empty lines and lines starting with ``#`` are skipped.

:func:`read_ti` takes either the list or a trace file itself (a file whose lines have one
field each is a list).  Paths in a list are relative to the list's folder.  Actions:

=====================================  ====================================================
``send|isend <dst> <tag> <n> [type]``  ``n`` elements of datatype id ``type`` (default
``recv|irecv <src> <tag> <n> [type]``  MPI_BYTE, or MPI_DOUBLE after ``init`` with an
                                       argument, as SimGrid does); older traces without a
                                       tag (``send <dst> <n>``, SimGrid <= 3.19) read tag 0
``compute <flops>``                    ``flops / host_speed_flops`` seconds
``sleep <seconds>``                    a compute operation of that length
``wait <src> <dst> <tag>``             the oldest pending request of that key (3.20+); a
                                       bare ``wait`` (<= 3.19) takes the newest, as then
``waitall``                            every pending request of the rank
``sendRecv <n> <dst> <m> <src> ...``   isend + irecv with tag 0, then wait for both
``init``, ``finalize``, ``test``,      no operation (a test does not complete anything
``comm_size``, ``comm_split``,         here; the request stays pending for its wait)
``comm_dup``, ``location``
=====================================  ====================================================

Collectives (``barrier``, ``bcast``, ``reduce``, ``allreduce``, ...) are refused with the line:
their cost depends on the algorithm SimGrid picks, which a trace does not record.
"""

from __future__ import annotations

from collections import deque
from pathlib import Path

from federation.errors import ConfigError
from federation.programs.builder import ProgramBuilder, RankBuilder
from federation.programs.model import RankPrograms

#: bytes per element of SimGrid's predefined datatype ids (``smpi_datatype.cpp``, LP64 sizes)
DATATYPE_BYTES = {
    0: 8, 1: 4, 2: 1, 3: 2, 4: 8, 5: 4, 6: 1, 7: 8, 8: 1, 9: 1, 10: 2, 11: 4, 12: 8, 13: 8,
    14: 16, 15: 4, 16: 1, 17: 1, 18: 2, 19: 4, 20: 8, 21: 1, 22: 2, 23: 4, 24: 8, 25: 8,
    26: 16, 27: 32, 28: 8, 29: 8, 30: 8, 31: 16, 32: 16, 33: 8, 34: 8, 35: 8, 36: 16, 37: 16,
    38: 4, 39: 4, 40: 8, 41: 16, 42: 8, 43: 16, 44: 16, 45: 4, 46: 2, 47: 4, 48: 8, 49: 16,
    50: 32, 51: 1, 52: 8, 53: 16, 54: 32, 57: 1, 58: 8, 59: 8,
}
MPI_BYTE, MPI_DOUBLE = 6, 0

COLLECTIVES = frozenset({
    "barrier", "bcast", "reduce", "allreduce", "alltoall", "alltoallv", "gather", "gatherv",
    "scatter", "scatterv", "allgather", "allgatherv", "reducescatter", "scan", "exscan",
})
NO_OP = frozenset({"init", "finalize", "test", "comm_size", "comm_split", "comm_dup",
                   "location"})
#: a sensible default host speed: 1 Gflop/s, the order of SimGrid's example platforms
DEFAULT_HOST_SPEED = 1e9


class _Rank:
    """Replay state of one rank: its builder, pending requests, default datatype."""

    __slots__ = ("rb", "by_key", "order", "dtype")

    def __init__(self, rb: RankBuilder) -> None:
        self.rb = rb
        self.by_key: dict[tuple[int, int, int], deque[int]] = {}
        self.order: dict[int, tuple[int, int, int]] = {}  # pending handles in issue order
        self.dtype = MPI_BYTE

    def add(self, h: int, key: tuple[int, int, int]) -> None:
        self.by_key.setdefault(key, deque()).append(h)
        self.order[h] = key

    def take(self, h: int) -> None:
        key = self.order.pop(h)
        self.by_key[key].remove(h)


class _Reader:
    def __init__(self, host_speed: float) -> None:
        self.speed = host_speed
        self.ranks: dict[int, list[tuple[str, int, list[str]]]] = {}
        self.where: dict[int, str] = {}

    def collect(self, path: Path, only_rank: int | None) -> None:
        """Store the lines of one trace file by rank (actions run per rank, in file order)."""
        with open(path, encoding="utf-8") as f:
            for n, raw in enumerate(f, start=1):
                fields = raw.split()
                if not fields or fields[0].startswith("#"):
                    continue
                if len(fields) < 2:
                    raise ConfigError(f"line {n}: expected '<rank> <action> ...', got "
                                      f"{raw.strip()!r}", source=str(path))
                try:
                    r = int(fields[0])
                except ValueError:
                    raise ConfigError(f"line {n}: the rank {fields[0]!r} is not an integer "
                                      "(SimGrid writes ranks as 0, 1, ...)",
                                      source=str(path)) from None
                if r < 0:
                    raise ConfigError(f"line {n}: negative rank {r}", source=str(path))
                if only_rank is not None and r != only_rank:
                    raise ConfigError(f"line {n}: a line of rank {r} in the trace of rank "
                                      f"{only_rank}", source=str(path))
                self.ranks.setdefault(r, []).append((str(path), n, fields))

    def build(self, n_ranks: int, source: str) -> RankPrograms:
        b = ProgramBuilder(n_ranks)
        files = {f for lines in self.ranks.values() for f, _, _ in lines}
        labels_needed = len(files) > 1
        if len(files) == 1:
            source = files.pop()  # a one-line list: the lines are the shared trace's
        for r in range(n_ranks):
            st = _Rank(b.rank(r))
            for f, n, fields in self.ranks.get(r, []):
                before = len(st.rb)
                try:
                    self.action(st, r, n_ranks, fields)
                except ConfigError as exc:
                    raise ConfigError(f"line {n} (rank {r}, {fields[1]}): {exc.message}",
                                      source=f) from None
                for h in range(before, len(st.rb)):
                    if labels_needed:
                        st.rb._annotate(h, f"{Path(f).name}:{n}", 0)
                    else:
                        st.rb._annotate(h, "", n)
        return b.build(source=source)

    @staticmethod
    def _int(text: str, what: str) -> int:
        try:
            v = float(text)  # SimGrid parses counts as doubles ("1e6") and truncates
        except ValueError:
            raise ConfigError(f"{what} {text!r} is not a number") from None
        if not (abs(v) < 2**62):
            raise ConfigError(f"{what} {text} is out of range")
        return int(v)

    def _peer(self, text: str, n_ranks: int) -> int:
        p = self._int(text, "rank")
        if not 0 <= p < n_ranks:
            raise ConfigError(f"unknown rank {p} (the trace has ranks 0 to {n_ranks - 1})")
        return p

    def _bytes(self, st: _Rank, count: str, dtype: str | None) -> int:
        n = self._int(count, "count")
        if n < 0:
            raise ConfigError(f"negative count {n} (a receive of unknown size) is not "
                              "supported")
        t = st.dtype if dtype is None else self._int(dtype, "datatype")
        if t not in DATATYPE_BYTES:
            raise ConfigError(f"datatype id {t} is not one of SimGrid's predefined datatypes")
        return n * DATATYPE_BYTES[t]

    def action(self, st: _Rank, r: int, n_ranks: int, fields: list[str]) -> None:
        act, args = fields[1], fields[2:]
        rb = st.rb
        if act in ("send", "isend", "recv", "irecv"):
            if len(args) == 2:  # SimGrid <= 3.19: <peer> <count>, no tag
                peer_s, tag_s, count_s, dt = args[0], "0", args[1], None
            elif len(args) in (3, 4):
                peer_s, tag_s, count_s = args[:3]
                dt = args[3] if len(args) == 4 else None
            else:
                raise ConfigError(f"expected '{act} <peer> <tag> <count> [datatype]'")
            peer = self._peer(peer_s, n_ranks)
            tag = self._int(tag_s, "tag")
            if not 0 <= tag < 2**31:
                raise ConfigError(f"tag {tag} is outside 0 .. 2**31 - 1")
            nbytes = self._bytes(st, count_s, dt)
            h = getattr(rb, act)(peer, nbytes, tag)
            if act[0] == "i":
                st.add(h, (r, peer, tag) if act == "isend" else (peer, r, tag))
        elif act == "compute":
            if len(args) != 1:
                raise ConfigError("expected 'compute <flops>'")
            rb.compute(self._float(args[0], "flops") / self.speed)
        elif act == "sleep":
            if len(args) != 1:
                raise ConfigError("expected 'sleep <seconds>'")
            rb.compute(self._float(args[0], "seconds"))
        elif act == "wait":
            self.wait(st, args, n_ranks)
        elif act == "waitall":
            for h in list(st.order):
                st.take(h)
                rb.wait(h)
        elif act == "sendRecv":
            if len(args) not in (4, 6):
                raise ConfigError("expected 'sendRecv <sendcount> <dst> <recvcount> <src> "
                                  "[sendtype recvtype]'")
            dst, src = self._peer(args[1], n_ranks), self._peer(args[3], n_ranks)
            s = rb.isend(dst, self._bytes(st, args[0], args[4] if len(args) == 6 else None))
            q = rb.irecv(src, self._bytes(st, args[2], args[5] if len(args) == 6 else None))
            rb.wait(s, q)
        elif act == "init":
            st.dtype = MPI_DOUBLE if args else MPI_BYTE
        elif act in NO_OP:
            pass
        elif act in COLLECTIVES:
            raise ConfigError(f"the collective '{act}' is not supported: rank programs hold "
                              "point-to-point operations only (its cost depends on the "
                              "algorithm SimGrid picks, which the trace does not record); "
                              "expand it into sends and receives first, e.g. as a GOAL "
                              "schedule from Schedgen")
        else:
            raise ConfigError(f"unknown action '{act}'")

    def _float(self, text: str, what: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise ConfigError(f"{what} {text!r} is not a number") from None
        if not (v >= 0 and v < float("inf")):
            raise ConfigError(f"{what} {text} must be a finite number >= 0")
        return v

    def wait(self, st: _Rank, args: list[str], n_ranks: int) -> None:
        if not st.order:
            raise ConfigError("wait with no pending isend or irecv")
        if not args:  # SimGrid <= 3.19: the most recent request
            h = next(reversed(st.order))
        elif len(args) == 3:
            key = (self._int(args[0], "rank"), self._int(args[1], "rank"),
                   self._int(args[2], "tag"))
            q = st.by_key.get(key)
            if not q:
                raise ConfigError(f"no pending isend or irecv from rank {key[0]} to rank "
                                  f"{key[1]} with tag {key[2]}")
            h = q[0]
        else:
            raise ConfigError("expected 'wait <src> <dst> <tag>'")
        st.take(h)
        st.rb.wait(h)


def _is_list(path: Path) -> list[str] | None:
    """The file names of a trace list, or None when ``path`` is a trace itself."""
    names = []
    with open(path, encoding="utf-8") as f:
        for raw in f:
            fields = raw.split()
            if not fields or fields[0].startswith("#"):
                continue
            if len(fields) != 1:
                return None
            names.append(fields[0])
    return names


def read_ti(path: str | Path, host_speed_flops: float = DEFAULT_HOST_SPEED,
            n_ranks: int | None = None) -> RankPrograms:
    """Rank programs from a SimGrid TI trace (a list of per-rank traces, or one trace).

    ``n_ranks`` defaults to the number of files in a list of several, else the largest rank
    in the trace plus one.  Operations keep their line (``op_line``; with several files their
    label is ``file:line``).  Check the result with
    :func:`~federation.programs.checks.check_programs`.
    """
    p = Path(path)
    if not host_speed_flops > 0:
        raise ValueError(f"host_speed_flops must be > 0, got {host_speed_flops}")
    rd = _Reader(host_speed_flops)
    try:
        names = _is_list(p)
        if names is None or not names:
            rd.collect(p, None)
        elif len(names) == 1:
            rd.collect(_resolve(p, names[0]), None)
        else:
            for i, name in enumerate(names):
                rd.collect(_resolve(p, name), i)
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the trace: {exc}", source=str(p)) from None
    if n_ranks is None:
        n_ranks = len(names) if names and len(names) > 1 else max(rd.ranks, default=-1) + 1
    if rd.ranks and max(rd.ranks) >= n_ranks:
        raise ConfigError(f"rank {max(rd.ranks)} appears but the trace has {n_ranks} ranks",
                          source=str(p))
    return rd.build(n_ranks, str(p))


def _resolve(listing: Path, name: str) -> Path:
    q = Path(name)
    if q.is_absolute():
        return q
    beside = listing.parent / q
    return beside if beside.exists() or not q.exists() else q
