"""SimGrid time-independent (TI) traces to rank programs.

What SimGrid writes (``smpirun -trace-ti --cfg=tracing/filename:T``, SimGrid 3.20 and later;
checked against ``src/smpi/internals/smpi_replay.cpp``, ``src/xbt/xbt_replay.cpp`` and
``src/instr/instr_private.hpp``):

* ``T`` is a *list* of trace files, one per line (``T_files/<id>_rank-<n>.txt``); rank i
  reads the i-th.  With ``tracing/smpi/format/ti-one-file`` (or by hand) the list has one line:
  one file shared by all ranks.  ``smpirun -replay`` reads exactly this list.
* A trace line is ``<rank> <action> <args...>``, the rank a plain integer (``0``), fields
  separated by blanks; empty lines and lines starting with ``#`` are skipped.  SimGrid gives
  a line to the rank whose name its first field spells exactly, as text.

:func:`read_ti` takes either the list or a trace file itself (a file whose lines have one
field each is a list).  Paths in a list are relative to the list's folder (never to the
current directory); absolute ones are taken as given.  Numbers are ASCII: a line's rank is
ASCII digits without a sign (``+0`` is refused: SimGrid would replay it for no rank), the
other fields decimal numbers as SimGrid reads them (``1e3``; a fraction is truncated), never
negative.  Actions:

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

import re
from collections import deque
from pathlib import Path

import numpy as np

from federation.errors import ConfigError
from federation.programs.builder import ProgramBuilder, RankBuilder
from federation.programs.checks import MAX_MESSAGE_BYTES
from federation.programs.model import COMPUTE, KIND_NAMES, RankPrograms
from federation.programs.reading import max_ops as reading_max_ops
from federation.programs.reading import op_budget, text_lines

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


#: a trace line's rank: ASCII digits only (int() alone took '０' and '1_0'), no sign: SimGrid
#: replays a line for the rank whose name (``0``, ``1``, ...) its first field spells exactly
#: (``xbt_replay.cpp`` compares the strings), so '+0' and '-0' are no rank's lines there
_RANK = re.compile(r"[0-9]{1,10}\Z")
#: a decimal number in ASCII as SimGrid's parse_double reads one (float() alone took Unicode
#: digits and '1_000', and 'nan')
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")


def _rank_of(text: str) -> int | None:
    """A trace line's rank: a plain integer (at most 10 digits), else None."""
    return int(text) if _RANK.match(text) else None


def _bad_rank(text: str) -> str:
    """Why ``text`` is not a trace line's rank (see :data:`_RANK`).  A sign is named: it
    reads as part of a number everywhere else (SimGrid takes ``+1`` as a peer, through
    ``std::stoi``), so "not an integer" alone would not say what is wrong."""
    shown = repr(text[:40])
    if len(text) > 1 and text[0] in "+-" and text[1:].isascii() and text[1:].isdigit():
        return (f"the rank {shown} has a sign (SimGrid writes ranks as 0, 1, ... and replays "
                f"a line only for the rank its first field spells exactly: {shown} is no "
                "rank's)")
    return f"the rank {shown} is not an integer (SimGrid writes ranks as 0, 1, ...)"


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
    """Replays trace lines into rank programs as they are read: a line is turned into its
    operations at once and not kept (a 20 MB trace held as lists of strings took 1 GB)."""

    def __init__(self, host_speed: float, n_ranks: int | None, max_ranks: int | None,
                 max_ops: int | None) -> None:
        self.speed = host_speed
        #: ranks must be below this while reading: the fixed count, else the machine's nodes
        self.bound = n_ranks if n_ranks is not None else max_ranks
        self.bound_is_machine = n_ranks is None and max_ranks is not None
        self.states: dict[int, _Rank] = {}
        self.files: list[str] = []
        self.budget = op_budget()
        self.max_ops = reading_max_ops(max_ops)
        self.n_ops = 0

    def collect(self, path: Path, only_rank: int | None, labelled: bool) -> None:
        """Replay the lines of one trace file (actions run per rank, in file order); with
        ``labelled`` each operation is named ``file:line`` (several files), else it keeps its
        line number."""
        src = str(path)
        self.files.append(src)
        for first, lines in text_lines(path, "trace"):
            for n, raw in enumerate(lines, first):
                fields = raw.split()
                if not fields or fields[0].startswith("#"):
                    continue
                self.line(src, n, raw, fields, only_rank, labelled)

    def line(self, src: str, n: int, raw: str, fields: list[str], only_rank: int | None,
             labelled: bool) -> None:
        if len(fields) < 2:
            raise ConfigError(f"line {n}: expected '<rank> <action> ...', got "
                              f"{raw.strip()[:80]!r}", source=src)
        r = _rank_of(fields[0])
        if r is None:
            raise ConfigError(f"line {n}: {_bad_rank(fields[0])}", source=src)
        if only_rank is not None and r != only_rank:
            raise ConfigError(f"line {n}: a line of rank {r} in the trace of rank "
                              f"{only_rank}", source=src)
        if self.bound is not None and r >= self.bound:
            why = (f"the machine has {self.bound} nodes (rank i runs on node i)"
                   if self.bound_is_machine else f"the trace has {self.bound} ranks")
            raise ConfigError(f"line {n}: rank {r}, but {why}", source=src)
        st = self.states.get(r)
        if st is None:
            st = self.states[r] = _Rank(RankBuilder(r))
        rb = st.rb
        before = len(rb)
        try:
            self.action(st, r, fields)
        except ConfigError as exc:
            raise ConfigError(f"line {n} (rank {r}, {fields[1][:40]}): {exc.message}",
                              source=src) from None
        added = len(rb) - before
        if added:
            label = f"{Path(src).name}:{n}" if labelled else ""
            for h in range(before, before + added):
                rb._annotate(h, label, 0 if labelled else n)
            self.n_ops += added
            if self.max_ops is not None and self.n_ops > self.max_ops:
                if self.budget is not None and self.max_ops == self.budget.max_ops:
                    raise self.budget.refuse(self.n_ops, src, f"line {n}: the trace reaches ")
                raise ConfigError(f"line {n}: more than {self.max_ops:,} operations",
                                  source=src)

    def build(self, n_ranks: int, source: str) -> RankPrograms:
        b = ProgramBuilder(n_ranks)
        for st in self.states.values():
            b.adopt(st.rb)
        return b.build(source=source)

    @staticmethod
    def _int(text: str, what: str, negative: str = "{what} {text} is negative") -> int:
        """A count, rank, tag or datatype id: SimGrid parses numbers as doubles ("1e6") and
        truncates; a negative one (``-0.5`` too, which truncates to 0) is refused with
        ``negative``."""
        if _DECIMAL.match(text) is None:
            raise ConfigError(f"{what} {text!r} is not a decimal number (ASCII digits)")
        v = float(text)
        if not (abs(v) < 2**62):
            raise ConfigError(f"{what} {text} is out of range")
        if v < 0:
            raise ConfigError(negative.format(what=what, text=text))
        return int(v)

    def _peer(self, text: str) -> int:
        p = self._int(text, "rank", "unknown rank {text} (a negative rank)")
        if self.bound is not None and p >= self.bound:
            upto = f" (ranks 0 to {self.bound - 1})" if self.bound else ""
            raise ConfigError(f"unknown rank {p}{upto}")
        return p

    def _bytes(self, st: _Rank, count: str, dtype: str | None) -> int:
        n = self._int(count, "count", "negative count {text} (a receive of unknown size) is "
                                      "not supported")
        t = st.dtype if dtype is None else self._int(dtype, "datatype")
        if t not in DATATYPE_BYTES:
            raise ConfigError(f"datatype id {t} is not one of SimGrid's predefined datatypes")
        nbytes = n * DATATYPE_BYTES[t]
        if nbytes >= MAX_MESSAGE_BYTES:
            raise ConfigError(f"{n} elements of {DATATYPE_BYTES[t]} B = {nbytes} B, beyond the "
                              f"largest message ({MAX_MESSAGE_BYTES - 1} B)")
        return nbytes

    def action(self, st: _Rank, r: int, fields: list[str]) -> None:
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
            peer = self._peer(peer_s)
            tag = self._int(tag_s, "tag", "tag {text} is outside 0 .. 2**31 - 1")
            if not 0 <= tag < 2**31:
                raise ConfigError(f"tag {tag} is outside 0 .. 2**31 - 1")
            nbytes = self._bytes(st, count_s, dt)
            h = getattr(rb, act)(peer, nbytes, tag)
            if act[0] == "i":
                st.add(h, (r, peer, tag) if act == "isend" else (peer, r, tag))
        elif act == "compute":
            if len(args) != 1:
                raise ConfigError("expected 'compute <flops>'")
            flops = self._float(args[0], "flops")
            rb.compute(flops / self.speed, f"compute {args[0]} flops at host_speed "
                                           f"{self.speed:g} flop/s:")
        elif act == "sleep":
            if len(args) != 1:
                raise ConfigError("expected 'sleep <seconds>'")
            rb.compute(self._float(args[0], "seconds"), "sleep")
        elif act == "wait":
            self.wait(st, args)
        elif act == "waitall":
            for h in list(st.order):
                st.take(h)
                rb.wait(h)
        elif act == "sendRecv":
            if len(args) not in (4, 6):
                raise ConfigError("expected 'sendRecv <sendcount> <dst> <recvcount> <src> "
                                  "[sendtype recvtype]'")
            dst, src = self._peer(args[1]), self._peer(args[3])
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
        if _DECIMAL.match(text) is None:
            raise ConfigError(f"{what} {text!r} is not a decimal number (ASCII digits)")
        v = float(text)
        if not (v >= 0 and v < float("inf")):
            raise ConfigError(f"{what} {text} must be a finite number >= 0")
        return v

    def wait(self, st: _Rank, args: list[str]) -> None:
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


def _is_list(path: Path, max_files: int | None) -> list[Path] | None:
    """The files of a trace list, or None when ``path`` is a trace itself (a line with more
    than one field).  A list of more than ``max_files`` names is refused as soon as it gets
    there, and a name that is not a regular file (missing, or ``/dev/zero``) with its line."""
    names: list[Path] = []
    for first, lines in text_lines(path, "trace"):
        for n, raw in enumerate(lines, first):
            fields = raw.split()
            if not fields or fields[0].startswith("#"):
                continue
            if len(fields) != 1:
                return None
            names.append(_listed(path, n, fields[0]))
            if max_files is not None and len(names) > max_files and len(names) > 1:
                raise ConfigError(f"line {n}: a trace list of more than {max_files} files "
                                  f"(one per rank), but the machine has {max_files} nodes",
                                  source=str(path))
    return names


def read_ti(path: str | Path, host_speed_flops: float = DEFAULT_HOST_SPEED,
            n_ranks: int | None = None, max_ranks: int | None = None,
            max_ops: int | None = None) -> RankPrograms:
    """Rank programs from a SimGrid TI trace (a list of per-rank traces, or one trace).

    ``n_ranks`` defaults to the number of files in a list of several, else the largest rank
    in the trace plus one.  Operations keep their line (``op_line``; with several files their
    label is ``file:line``).  The trace is replayed as it is read, never held whole;
    ``max_ranks`` (the machine's nodes) and ``max_ops`` (default: the current
    :class:`~federation.programs.reading.OpBudget`) are checked line by line.  A trace
    without any action line (no rank) is refused.  Check the result with
    :func:`~federation.programs.checks.check_programs`.
    """
    p = Path(path)
    if not host_speed_flops > 0:
        raise ValueError(f"host_speed_flops must be > 0, got {host_speed_flops}")
    names = _is_list(p, max_ranks)
    several = bool(names) and len(names) > 1
    if several and n_ranks is None:
        n_ranks = len(names)
    if n_ranks is not None and max_ranks is not None and n_ranks > max_ranks:
        raise ConfigError(f"{n_ranks} ranks, but the machine has {max_ranks} nodes",
                          source=str(p))
    rd = _Reader(host_speed_flops, n_ranks, max_ranks, max_ops)
    if not names:
        rd.collect(p, None, False)
    elif len(names) == 1:
        rd.collect(names[0], None, False)
    else:
        for i, name in enumerate(names):
            rd.collect(name, i, True)
    if not rd.states:
        what = "traces hold" if several else "trace holds"
        raise ConfigError(f"the {what} no action line: no rank to simulate (an empty "
                          "trace?)", source=str(p))
    if n_ranks is None:
        n_ranks = max(rd.states) + 1
    progs = rd.build(n_ranks, rd.files[0] if len(rd.files) == 1 else str(p))
    _check_peers(progs)
    return progs


def _check_peers(progs: RankPrograms) -> None:
    """Peers against the final rank count (while a one-file trace is read, its count is not
    known yet; a list's is): the first unknown one is refused with its line."""
    bad = np.flatnonzero((progs.op_kind != COMPUTE) & (progs.op_peer >= progs.n_ranks))
    if bad.size:
        op = int(bad[0])
        rank = int(np.searchsorted(progs.rank_first, op, side="right") - 1)
        line = int(progs.op_line[op]) if progs.op_line is not None else 0
        raise ConfigError(f"line {line} (rank {rank}, {KIND_NAMES[int(progs.op_kind[op])]}): "
                          f"unknown rank {int(progs.op_peer[op])} (the trace has ranks 0 to "
                          f"{progs.n_ranks - 1})", source=progs.source)


def _listed(listing: Path, n: int, name: str) -> Path:
    """The trace file named on line ``n`` of a list, refused unless it is a regular file."""
    q = _resolve(listing, name)
    try:
        ok, exists = q.is_file(), q.exists()
    except OSError:  # a name too long for the file system, say
        ok = exists = False
    if not ok:
        what = "is not a regular file" if exists else "does not exist"
        if not exists and not Path(name).is_absolute():
            what += " (a name in a list is relative to the list's folder)"
        raise ConfigError(f"line {n}: the trace file {name[:200]!r} ({q}) {what}",
                          source=str(listing))
    return q


def _resolve(listing: Path, name: str) -> Path:
    """A listed name: relative to the list's folder (a name found only in the current
    directory ran a different trace depending on where ``federation`` was started), an
    absolute one as given."""
    q = Path(name)
    return q if q.is_absolute() else listing.parent / q
