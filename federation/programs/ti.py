"""SimGrid time-independent (TI) traces to rank programs.

What SimGrid writes (``smpirun -trace-ti --cfg=tracing/filename:T``, SimGrid 3.20 and later;
checked against ``src/smpi/internals/smpi_replay.cpp``, ``src/xbt/xbt_replay.cpp``,
``src/smpi/internals/smpi_deployment.cpp`` and ``src/instr/instr_private.hpp``):

* ``T`` is a *list* of trace files, one per line (``T_files/<id>_rank-<n>.txt``); rank i
  reads the i-th.  With ``tracing/smpi/format/ti-one-file`` (or by hand) the list has one line:
  one file shared by all ranks.  ``smpirun -replay`` reads exactly this list.
* A trace line is ``<rank> <action> <args...>``, the rank a plain integer (``0``), fields
  separated by blanks and tabs (``boost::split``; nothing else separates fields there); empty
  lines and lines starting with ``#`` are skipped.  SimGrid gives a line to the rank whose
  name (``std::to_string(rank)``) its first field spells exactly, as text.
* Lines end at ``\\n`` only (``std::getline``), then ``boost::trim`` takes C's blanks, ``\\r``
  among them, off both ends: a ``\\r\\n`` line end reads as ``\\n`` does, but a lone ``\\r``
  inside a line neither ends the line nor separates fields there (it stays in a field, or is
  a field), so it is refused with its line and column.
* A trace's last line needs its ``\\n``: when ``std::getline`` meets the end of the file
  (a last line without one), the replay stops without handling the line it read
  (``ReplayReader::get`` returns ``not fs.eof()`` for a rank's own file, ``get_action``
  breaks on ``eof()`` for a shared one), so SimGrid drops it silently.  Such a line is
  refused when it is an action line; a comment or blanks there are skipped by both alike.
* A trace *list* is read by ``smpi_read_replay`` (``smpi_deployment.cpp``) with
  ``std::getline``, every non-empty line kept whole as a file name, nothing trimmed: a
  ``\\r``, blanks at a name's ends, a line of blanks and a ``#`` line are all names to
  SimGrid (where this reader trimmed or skipped them), so each is refused with the list's
  line.  Only empty lines are skipped by both; a last name without its ``\\n`` is read by
  both.

:func:`read_ti` takes either the list or a trace file itself (a file whose lines have one
field each, blank and ``#`` lines aside, is a list).  Paths in a list are relative to the
list's folder (never to the current directory); absolute ones are taken as given.  Numbers
are ASCII and never negative, each field read as SimGrid reads it, and refused, naming the
line and the field, where this reader and SimGrid would read it differently:

* a line's rank is text to SimGrid: ``0``, ``1``, ... exactly (``+0`` or ``01`` is no rank's);
* a peer rank, a tag and the three fields of ``wait`` go through ``std::stoi``, which reads a
  sign and digits up to the first other character: ``7.9`` is 7 here too, but ``1e3`` (1 to
  SimGrid) and ``.5`` (an error there) are refused;
* a count goes through ``strtod`` and is truncated (``1e3`` is 1000, ``8.5`` is 8), and is
  passed to MPI as a C int: above 2**31 - 1 it is refused;
* a datatype id is looked up as text (``Datatype::decode``): ``6``, never ``06`` or ``6.0``;
* flops and seconds are ``strtod`` numbers (``2.5E3``).

Actions:

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
``sendRecv <n> <dst> <m> <src> <t1>``  isend + irecv with tag 0, then wait for both;
``<t2>``                               all six fields, as SimGrid 3.32 writes and needs them
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
from federation.programs.reading import op_budget, quoted, shown, text_lines
from federation.programs.ti_lines import (
    OTHER_BLANK,
    blanks_only,
    is_list,
    no_leading_bom,
    unterminated,
)

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


#: a trace line's rank as SimGrid names ranks (``std::to_string``): ASCII digits only
#: (int() alone took '０' and '1_0'), no sign, no leading zero.  SimGrid replays a line for
#: the rank whose name its first field spells exactly (``xbt_replay.cpp`` compares the
#: strings), so '+0', '-0' and '01' are no rank's lines there
_RANK = re.compile(r"(?:0|[1-9][0-9]{0,9})\Z")
#: a decimal number in ASCII as SimGrid's parse_double reads one (float() alone took Unicode
#: digits and '1_000', and 'nan')
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
#: the decimal numbers ``std::stoi`` reads as this reader does: a sign, digits and a fraction
#: it stops at ('7.9' is 7 to both); with an exponent ('1e3': 1 to std::stoi) or no digit
#: before the point ('.5': std::stoi throws) the two differ
_STOI_SAME = re.compile(r"([+-]?)([0-9]+)(?:\.[0-9]*)?\Z")
#: the sign and digits std::stoi reads
_DIGITS = re.compile(r"([+-]?)([0-9]+)")
#: a datatype id as SimGrid writes it, and looks it up: as text (``Datatype::decode``)
_DATATYPE_ID = re.compile(r"(?:0|[1-9][0-9]*)\Z")
#: the largest count: SimGrid passes it to MPI as a C int
C_INT_MAX = 2**31 - 1


def _rank_of(text: str) -> int | None:
    """A trace line's rank: as SimGrid names ranks (at most 10 digits), else None."""
    return int(text) if _RANK.match(text) else None


def _bad_rank(text: str) -> str:
    """Why ``text`` is not a trace line's rank (see :data:`_RANK`).  A sign or a leading zero
    is named: either reads as part of a number everywhere else (SimGrid takes ``+1`` or
    ``01`` as a peer, through ``std::stoi``), so "not an integer" would not say what is
    wrong."""
    q = quoted(text)
    why = ("SimGrid writes ranks as 0, 1, ... and replays a line only for the rank its first "
           f"field spells exactly: {q} is no rank's")
    if len(text) > 1 and text[0] in "+-" and text[1:].isascii() and text[1:].isdigit():
        return f"the rank {q} has a sign ({why})"
    if text.isascii() and text.isdigit():
        if text[0] == "0":
            plain = shown(text.lstrip("0") or "0")
            return f"the rank {q} has a leading zero ({why}); write {plain}"
        return f"the rank {q} has more than 10 digits: no trace has that many ranks"
    return f"the rank {q} is not an integer (SimGrid writes ranks as 0, 1, ...)"


def _decimal(text: str, what: str) -> float:
    """A number SimGrid's ``strtod`` reads as ``float`` does, within 2**62."""
    if _DECIMAL.match(text) is None:
        raise ConfigError(f"{what} {quoted(text)} is not a decimal number (ASCII digits)")
    v = float(text)
    if not (abs(v) < 2**62):
        raise ConfigError(f"{what} {shown(text)} is out of range")
    return v


def _whole(text: str, what: str, negative: str = "{what} {text} is negative") -> int:
    """A peer rank, a tag or a field of ``wait``, which SimGrid reads with ``std::stoi``
    (``smpi_replay.cpp``): a sign and digits, up to the first other character, so a fraction
    is truncated (from the digits: '7.99999999999999999' is 8.0 as a float, 7 to stoi).
    With an exponent or no digit before the point the two readings may differ ('1e3' is 1 to
    std::stoi, '.5' an error): then it is refused, naming the field and both readings.  A
    negative one (``-0.5`` too) is refused with ``negative``."""
    if len(text) < 19 and text.isascii() and text.isdigit():  # the usual '3', at once
        return int(text)
    v = _decimal(text, what)
    m = _STOI_SAME.match(text)
    if m is not None:
        whole = int(m.group(2).lstrip("0") or "0")  # as std::stoi reads it, but the sign
    else:
        whole = int(v)
        theirs = _stoi(text)
        if theirs != whole:
            how = f"which reads a {what} with std::stoi"
            stop = _DIGITS.match(text)
            if stop is None:  # '.5', '+.5'
                simgrid = f"an error to SimGrid, {how}: it needs a digit first"
            elif theirs is None:
                simgrid = f"an error to SimGrid, {how}: its digits are beyond a C int"
            else:
                simgrid = (f"{theirs} to SimGrid, {how} (digits up to the first other "
                           f"character, here {text[stop.end()]!r})")
            raise ConfigError(f"{what} {quoted(text)} is {v:.15g} as a number, but {simgrid}; "
                              "write it as a whole number in plain digits")
    if v < 0:
        raise ConfigError(negative.format(what=what, text=shown(text)))
    return whole


def _stoi(text: str) -> int | None:
    """What ``std::stoi`` reads in ``text`` (a decimal number), or None where it throws: no
    digit first, or beyond a C int."""
    m = _DIGITS.match(text)
    if m is None:
        return None
    digits = m.group(2).lstrip("0") or "0"
    if len(digits) > 10:
        return None
    n = -int(digits) if m.group(1) == "-" else int(digits)
    return n if -C_INT_MAX - 1 <= n <= C_INT_MAX else None


def _count(text: str) -> int:
    """A count, which SimGrid reads with ``strtod`` and truncates, then passes to MPI as a
    C int; a negative one (``-0.5`` too, which truncates to 0) is refused."""
    if len(text) < 10 and text.isascii() and text.isdigit():  # the usual '1000', at once
        return int(text)
    v = _decimal(text, "count")
    if v < 0:
        raise ConfigError(f"negative count {shown(text)} (a receive of unknown size) is not "
                          "supported")
    n = int(v)
    if n > C_INT_MAX:
        raise ConfigError(f"count {shown(text)} is above {C_INT_MAX} (2**31 - 1): SimGrid "
                          "passes a count to MPI as a C int")
    return n


def _datatype(text: str) -> int:
    """A datatype id: SimGrid looks it up as the text it writes (``0`` .. ``59``), so any
    other spelling of a number (``06``, ``6.0``, ``+6``) names no datatype there."""
    if _DATATYPE_ID.match(text) is None:
        v = _decimal(text, "datatype")
        write = f"; write {int(v)}" if v >= 0 and v.is_integer() else ""
        raise ConfigError(f"datatype {quoted(text)} is not written as SimGrid writes a "
                          "datatype id (plain digits, no sign, no leading zero, no point or "
                          f"exponent): SimGrid looks the id up as text, so {quoted(text)} names "
                          f"none of its datatypes{write}")
    t = int(text) if len(text) <= 9 else -1
    if t not in DATATYPE_BYTES:
        raise ConfigError(f"datatype id {shown(text)} is not one of SimGrid's predefined "
                          "datatypes")
    return t


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
        #: where the trace first wrote a send or receive of each form: ``2`` fields (SimGrid
        #: <= 3.19, no tag), ``3`` (3.20 and later ``<peer> <tag> <count>``, which is also
        #: how <= 3.19 wrote ``<peer> <count> <datatype>``: the two cannot be told apart)
        self.forms: dict[int, tuple[str, int]] = {}
        self.here = ("", 0)  # the line being replayed (file, line): named only in a refusal

    def collect(self, path: Path, only_rank: int | None, labelled: bool) -> None:
        """Replay the lines of one trace file (actions run per rank, in file order); with
        ``labelled`` each operation is named ``file:line`` (several files), else it keeps its
        line number."""
        src = str(path)
        self.files.append(src)
        # '\n' only ends a line, as std::getline ends it: a '\r' stays in the line's text,
        # trimmed off its ends (as boost::trim does) by split(), refused inside it; a last
        # line without its '\n' SimGrid does not replay, so it is refused before it is read
        def last(n: int, raw: str) -> None:
            unterminated(src, n, raw)

        no_leading_bom(path, "its first line's rank field, so it would not replay that line")
        for first, lines in text_lines(path, "trace", newline="", unterminated=last):
            for n, raw in enumerate(lines, first):
                fields = raw.split()
                if not fields or fields[0].startswith("#"):
                    continue
                if OTHER_BLANK.search(raw) is not None:
                    blanks_only(src, n, raw)
                self.line(src, n, raw, fields, only_rank, labelled)

    def line(self, src: str, n: int, raw: str, fields: list[str], only_rank: int | None,
             labelled: bool) -> None:
        if len(fields) < 2:
            raise ConfigError(f"line {n}: expected '<rank> <action> ...', got "
                              f"{quoted(raw.strip(), 80)}", source=src)
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
        self.here = (src, n)
        try:
            self.action(st, r, fields)
        except ConfigError as exc:
            raise ConfigError(f"line {n} (rank {r}, {shown(fields[1])}): {exc.message}",
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

    def _form(self, act: str, n: int) -> None:
        """Refuse a trace that writes sends both without a tag (SimGrid <= 3.19) and with
        three fields: <= 3.19 wrote a datatype other than MPI_BYTE as ``<peer> <count>
        <datatype>``, which reads as 3.20's ``<peer> <tag> <count>`` (a count read as the
        tag, the datatype as the count)."""
        if n not in (2, 3):
            return
        self.forms.setdefault(n, self.here)
        if len(self.forms) == 2:
            at = {k: f"{Path(f).name}:{line}" for k, (f, line) in self.forms.items()}
            raise ConfigError(
                f"a send or receive of SimGrid <= 3.19's form '{act} <peer> <count>' (at "
                f"{at[2]}) beside one of three fields (at {at[3]}): SimGrid "
                "<= 3.19 wrote '<peer> <count> <datatype>', 3.20 and later '<peer> <tag> "
                "<count>', and the trace says not which; rewrite the <= 3.19 lines with a tag "
                "('<peer> 0 <count> <datatype>')")

    def _peer(self, text: str, what: str) -> int:
        """A peer rank (``what``: "destination rank" or "source rank")."""
        p = _whole(text, what, "unknown rank {text} (a negative rank)")
        if self.bound is not None and p >= self.bound:
            upto = f" (ranks 0 to {self.bound - 1})" if self.bound else ""
            raise ConfigError(f"unknown rank {p}{upto}")
        return p

    def _bytes(self, st: _Rank, count: str, dtype: str | None) -> int:
        n = _count(count)
        t = st.dtype if dtype is None else _datatype(dtype)
        nbytes = n * DATATYPE_BYTES[t]
        if nbytes >= MAX_MESSAGE_BYTES:
            raise ConfigError(f"{n} elements of {DATATYPE_BYTES[t]} B = {nbytes} B, beyond the "
                              f"largest message ({MAX_MESSAGE_BYTES - 1} B)")
        return nbytes

    def action(self, st: _Rank, r: int, fields: list[str]) -> None:
        act, args = fields[1], fields[2:]
        rb = st.rb
        if act in ("send", "isend", "recv", "irecv"):
            self._form(act, min(len(args), 3))
            if len(args) == 2:  # SimGrid <= 3.19: <peer> <count>, no tag
                peer_s, tag_s, count_s, dt = args[0], "0", args[1], None
            elif len(args) in (3, 4):
                peer_s, tag_s, count_s = args[:3]
                dt = args[3] if len(args) == 4 else None
            else:
                raise ConfigError(f"expected '{act} <peer> <tag> <count> [datatype]'")
            peer = self._peer(peer_s, "destination rank" if "send" in act else "source rank")
            tag = _whole(tag_s, "tag", "tag {text} is outside 0 .. 2**31 - 1")
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
            if len(args) != 6:
                raise ConfigError(_sendrecv_fields(len(args), st.dtype))
            dst = self._peer(args[1], "destination rank")
            src = self._peer(args[3], "source rank")
            s = rb.isend(dst, self._bytes(st, args[0], args[4]))
            q = rb.irecv(src, self._bytes(st, args[2], args[5]))
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
            raise ConfigError(f"unknown action {quoted(act)}")

    @staticmethod
    def _float(text: str, what: str) -> float:
        """Flops or seconds: a ``strtod`` number, as ``float`` reads it."""
        if _DECIMAL.match(text) is None:
            raise ConfigError(f"{what} {quoted(text)} is not a decimal number (ASCII digits)")
        v = float(text)
        if not (v >= 0 and v < float("inf")):
            raise ConfigError(f"{what} {shown(text)} must be a finite number >= 0")
        return v

    def wait(self, st: _Rank, args: list[str]) -> None:
        if not st.order:
            raise ConfigError("wait with no pending isend or irecv")
        if not args:  # SimGrid <= 3.19: the most recent request
            h = next(reversed(st.order))
        elif len(args) == 3:
            key = (_whole(args[0], "source rank"), _whole(args[1], "destination rank"),
                   _whole(args[2], "tag"))
            q = st.by_key.get(key)
            if not q:
                raise ConfigError(f"no pending isend or irecv from rank {key[0]} to rank "
                                  f"{key[1]} with tag {key[2]}")
            h = q[0]
        else:
            raise ConfigError("expected 'wait <src> <dst> <tag>'")
        st.take(h)
        st.rb.wait(h)


def _sendrecv_fields(given: int, dtype: int) -> str:
    """Why a ``sendRecv`` of ``given`` fields (after the action) is refused.  SimGrid 3.32,
    the first to replay ``sendRecv`` (3.31 has no such action), needs six
    (``CHECK_ACTION_PARAMS(action, 6, 0)`` in ``SendRecvParser::parse``) and throws on
    fewer; its tracer always writes the two datatype ids.  The four-field form this reader
    once took (counts in the rank's default datatype, ``dtype``) is not SimGrid's, so the
    ids that keep its sizes are named; fields past the sixth SimGrid ignores."""
    form = ("expected 'sendRecv <sendcount> <dst> <recvcount> <src> <sendtype> <recvtype>' "
            f"(6 fields after the action), got {given}")
    if given > 6:
        return f"{form}: SimGrid ignores the fields past the sixth; remove them"
    keep = (f"; append '{dtype} {dtype}' for counts in the rank's default datatype (id "
            f"{dtype}, {DATATYPE_BYTES[dtype]} B)" if given == 4 else "")
    return (f"{form}: SimGrid (3.32, the first version to replay sendRecv) needs all six, "
            f"the two datatype ids included, and stops on fewer{keep}")


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
    names = is_list(p, max_ranks)
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
