"""GOAL schedules (LogGOPSim, Schedgen, ATLAHS): text format to rank programs and back.

The grammar follows LogGOPSim's reader (``txt2bin.re``, the same file in ATLAHS)::

    num_ranks 2
    // comment to the end of the line;  /* block comments */ too
    rank 0 {
      l1: send 8b to 1 tag 5        // label optional; "tag", "cpu", "nic" optional, that order
      l2: calc 500                  // calc takes "cpu N" only
      l2 requires l1                // l2 starts once l1 finished
    }
    rank 1 {
      l1: recv 8b from 0 tag 5
      l2: calc 100
      l2 irequires l1               // l2 starts once l1 started
    }

* One statement per line, as in the reference; a ``;`` also ends a statement here (an
  extension for compact files), and ``}`` may end a statement's line.
* Sizes are integers followed by ``b`` (bytes), the only unit the reference knows.  Numbers
  are ASCII digits (a regular expression's digit class and ``int()`` also take ``١`` or
  ``８``: refused here).
* ``calc N`` is N time units; LogGOPSim's clock is in nanoseconds, so the default unit is
  1 ns (:data:`DEFAULT_CALC_UNIT_PS`), a parameter of :func:`parse_goal` / :func:`read_goal`.
* Labels (``[A-Za-z][A-Za-z0-9_]*``) are local to their rank block, as in the reference, which
  clears its label table at each ``}``; a dependency may only name labels defined above it.
* Refused with the line number: syntax errors, undefined or duplicate labels, ranks outside
  ``num_ranks`` (a block's and a peer's), a second block for one rank, wildcards (``from -1``,
  ``tag -1``; the engine matches exactly), a send to a negative rank or with a negative
  tag (meaningless: a negative number is only a receive's wildcard), ``cpu``/``nic`` other
  than 0 (one CPU and one NIC per rank here), an unclosed block or ``/*`` comment,
  ``num_ranks 0``, a ``calc`` beyond the engine's clock range, and (when the caller gives
  the bounds) ``num_ranks`` above the machine's nodes and more operations than the memory
  limit allows: both before anything is allocated for them.  The file is read a block of
  lines at a time (:mod:`federation.programs.reading`: every line within 1 MiB, a leading
  byte-order mark skipped, one further on refused by name).  GOAL has no collectives, so no
  tag is reserved for them: tags run 0 to 2**31 - 1.  Cycles, deadlocks, unmatched sends
  or receives and truncating receives are refused by
  :func:`~federation.programs.checks.check_programs`, which names the line through
  ``op_line``.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from federation.errors import ConfigError
from federation.models.limits import CLOCK_LIMIT, TIME_LIMIT_PS
from federation.programs.builder import ProgramBuilder
from federation.programs.checks import MAX_MESSAGE_BYTES
from federation.programs.model import COMPUTE, FINISH, RECV, SEND, START, RankPrograms
from federation.programs.reading import BOM, bom_inside, op_budget, text_lines
from federation.programs.reading import max_ops as reading_max_ops

#: picoseconds per ``calc`` unit by default: LogGOPSim's times are nanoseconds
DEFAULT_CALC_UNIT_PS = 1000

_LABEL = r"[A-Za-z][A-Za-z0-9_]*"
# re.ASCII: numbers are ASCII digits (\d matched '١' and '８', which int() reads as 1 and 8)
_OP = re.compile(
    rf"(?:(?P<label>{_LABEL})\s*:\s*)?"
    r"(?:(?P<comm>send|recv)\s+(?P<size>\d+)\s*b\s+(?P<dir>to|from)\s+(?P<peer>-?\d+)"
    r"(?:\s+tag\s+(?P<tag>-?\d+))?(?:\s+cpu\s+(?P<cpu>\d+))?(?:\s+nic\s+(?P<nic>\d+))?"
    r"|calc\s+(?P<calc>\d+)(?:\s+cpu\s+(?P<ccpu>\d+))?)\Z", re.ASCII)
_DEP = re.compile(rf"(?P<after>{_LABEL})\s+(?P<how>requires|irequires)\s+(?P<before>{_LABEL})\Z",
                  re.ASCII)
_RANK = re.compile(r"rank\s+(\d+)\s*\{", re.ASCII)
_NUM_RANKS = re.compile(r"num_ranks\s+(\d+)\Z", re.ASCII)
#: largest number read (tags are int32; sizes and times are checked later, but must fit int64)
_MAX_TAG = 2**31 - 1
_MAX_NUMBER = 2**62


def read_goal(path: str | Path, calc_unit_ps: int = DEFAULT_CALC_UNIT_PS,
              max_ranks: int | None = None, max_ops: int | None = None) -> RankPrograms:
    """Read a GOAL text schedule (see the module docstring), a line at a time.

    ``max_ranks`` (the machine's nodes) and ``max_ops`` (default: the current
    :class:`~federation.programs.reading.OpBudget`) bound what is read: a ``num_ranks`` or an
    operation count beyond them is refused at its line, before it is built.
    """
    p = Path(path)
    ps = _Parser(str(p), calc_unit_ps, max_ranks, max_ops)
    # only '\n' ends a line, as in parse_goal and LogGOPSim's reader ('\r'? '\n'): a lone
    # '\r' is refused inside its line, not read as a line break that shifts every number
    for first, lines in text_lines(p, "GOAL schedule", newline=""):
        for n, line in enumerate(lines, first):
            ps.feed(n, line)
    return ps.finish()


class _Parser:
    """State of one parse: the current rank block and its labels."""

    def __init__(self, source: str | None, calc_unit_ps: int, max_ranks: int | None = None,
                 max_ops: int | None = None) -> None:
        if calc_unit_ps < 1:
            raise ValueError(f"calc_unit_ps must be >= 1, got {calc_unit_ps}")
        self.source = source
        self.unit = calc_unit_ps
        self.max_ranks = max_ranks
        self.budget = op_budget()
        self.max_ops = reading_max_ops(max_ops)
        self.n_ops = 0
        self.n_deps = 0
        self.comment_line = 0  # line of an open /* comment (0: none)
        self.n_ranks: int | None = None
        self.builder: ProgramBuilder | None = None
        self.rank: int | None = None
        self.rank_line = 0
        self.labels: dict[str, int] = {}
        self.seen: set[int] = set()
        self.line = 0

    def feed(self, n: int, raw: str) -> None:
        """One line of the schedule: comments removed, then its statements."""
        self.line = n
        line = raw
        if self.comment_line or "/" in line:
            line = self._uncomment(line)
        if ";" in line:
            for stmt in line.split(";"):
                stmt = stmt.strip()
                if stmt:
                    self.statement(stmt)
            return
        line = line.strip()
        if line:
            self.statement(line)

    def _uncomment(self, line: str) -> str:
        """``line`` without its comments, left to right as a lexer reads them: ``//`` ends
        the line, ``/* ... */`` (which may span lines) reads as a blank."""
        out = []
        while line:
            if self.comment_line:
                end = line.find("*/")
                if end < 0:
                    return " ".join(out)
                self.comment_line = 0
                line = " " + line[end + 2:]
                continue
            a, b = line.find("//"), line.find("/*")
            if a >= 0 and (b < 0 or a < b):
                out.append(line[:a])
                break
            if b < 0:
                out.append(line)
                break
            out.append(line[:b])
            self.comment_line = self.line
            line = line[b + 2:]
        return " ".join(out)

    def finish(self) -> RankPrograms:
        """The programs, once every line is in."""
        if self.comment_line:
            self.line, self.rank = self.comment_line, None
            self.fail("'/*' comment is not closed")
        if self.rank is not None:
            self.line = self.rank_line
            self.fail(f"rank {self.rank}'s block is not closed (missing '}}')")
        if self.builder is None:
            raise ConfigError("no 'num_ranks N' line: not a GOAL schedule?", source=self.source)
        progs = self.builder.build(source=self.source)
        if progs.op_label is None:
            progs.op_label = [""] * progs.n_ops
        if progs.op_line is None:
            progs.op_line = np.zeros(progs.n_ops, dtype=np.int64)
        return progs

    def counted(self, deps: int = 0) -> None:
        """One more operation (or, with ``deps``, that many more dependencies, four to an
        operation's memory): refused past the operation budget."""
        if deps:
            self.n_deps += deps
        else:
            self.n_ops += 1
        units = self.n_ops + self.n_deps // 4
        if self.max_ops is not None and units > self.max_ops:
            where = f"line {self.line}: "
            what = f" (and {self.n_deps:,} dependencies, four to an operation)" \
                if self.n_deps >= 4 else ""
            if self.budget is not None and self.max_ops == self.budget.max_ops:
                raise self.budget.refuse(units, self.source,
                                         f"{where}the schedule{what} reaches ")
            raise ConfigError(f"{where}more than {self.max_ops:,} operations{what}",
                              source=self.source)

    def fail(self, message: str) -> None:
        where = f"line {self.line}"
        if self.rank is not None:
            where += f" (rank {self.rank})"
        raise ConfigError(f"{where}: {message}", source=self.source)

    def open_rank(self, r: int) -> None:
        if self.n_ranks is None or self.builder is None:
            self.fail("'rank' before 'num_ranks N'")
        if self.rank is not None:
            self.fail(f"rank {r} opened inside rank {self.rank}'s block (missing '}}')")
        if r >= self.n_ranks:
            self.fail(f"rank {r} is outside num_ranks {self.n_ranks} (ranks 0 to "
                      f"{self.n_ranks - 1})")
        if r in self.seen:
            self.fail(f"a second block for rank {r}")
        self.seen.add(r)
        self.rank, self.rank_line, self.labels = r, self.line, {}

    def close_rank(self) -> None:
        if self.rank is None:
            self.fail("'}' without an open rank block")
        self.rank = None

    def number(self, text: str, what: str, limit: int = _MAX_NUMBER) -> int:
        if len(text.lstrip("-")) > 19:  # int() refuses 4,300 digits and more with ValueError
            self.fail(f"{what} {text[:24]}... is too large (at most {limit})")
        v = int(text)
        if v > limit:
            self.fail(f"{what} {v} is too large (at most {limit})")
        return v

    def statement(self, s: str) -> None:
        while s:
            if s.startswith("}"):
                self.close_rank()
                s = s[1:].lstrip()
                continue
            if s[0] == "r" and (m := _RANK.match(s)):
                self.open_rank(self.number(m.group(1), "rank"))
                s = s[m.end():].lstrip()
                continue
            close = s.endswith("}")
            body = s[:-1].rstrip() if close else s
            if body:
                self.simple(body)
            if close:
                self.close_rank()
            return

    def simple(self, s: str) -> None:
        # the common statements first: a million-line file spends its time here
        if (m := _OP.match(s)) is not None:
            self.operation(m)
            return
        if (m := _DEP.match(s)) is not None:
            self.dependency(m)
            return
        if m := _NUM_RANKS.match(s):
            if self.n_ranks is not None:
                self.fail("'num_ranks' given twice")
            n = self.number(m.group(1), "num_ranks", 2**31 - 1)
            if n == 0:
                self.fail("num_ranks 0: a schedule needs at least one rank")
            if self.max_ranks is not None and n > self.max_ranks:
                self.fail(f"num_ranks {n}, but the machine has {self.max_ranks} nodes (rank i "
                          f"runs on node i)")
            self.n_ranks = n
            self.builder = ProgramBuilder(n)
            return
        digits = any(c.isdigit() and not c.isascii() for c in s)
        self.fail(f"cannot read {s!r}: expected 'num_ranks N', 'rank N {{', '}}', "
                  "'[label:] send Nb to R [tag T]', '[label:] recv Nb from R [tag T]', "
                  "'[label:] calc N', or 'label requires|irequires label'"
                  + (" (numbers are written in ASCII digits, 0-9)" if digits else ""))

    def _rank_builder(self):  # noqa: ANN202
        if self.rank is None or self.builder is None:
            self.fail("an operation outside a 'rank N { ... }' block")
        return self.builder.rank(self.rank)

    def operation(self, m: re.Match) -> None:
        rb = self._rank_builder()
        label = m.group("label")
        if label is not None and label in self.labels:
            self.fail(f"label {label} is defined twice in rank {self.rank}'s block")
        if m.group("calc") is not None:
            if m.group("ccpu") not in (None, "0"):
                self.fail(f"cpu {m.group('ccpu')}: one CPU per rank here (only cpu 0)")
            v = self.number(m.group("calc"), "calc time")
            t = v * self.unit
            if t >= TIME_LIMIT_PS:
                self.fail(f"calc {v} ({v} x {self.unit} ps = {t} ps) is beyond {CLOCK_LIMIT}")
            h = rb.op(COMPUTE, -1, 0, 0, t, label=label or "", line=self.line)
        else:
            comm = m.group("comm")
            if (comm == "send") != (m.group("dir") == "to"):
                self.fail(f"'{comm}' takes '{'to' if comm == 'send' else 'from'}'")
            peer = self.number(m.group("peer"), "rank", _MAX_TAG)
            tag = self.number(m.group("tag") or "0", "tag", _MAX_TAG)
            self._check_wildcards(comm, peer, tag)
            for field in ("cpu", "nic"):
                if m.group(field) not in (None, "0"):
                    self.fail(f"{field} {m.group(field)}: one CPU and one NIC per rank here "
                              f"(only {field} 0)")
            assert self.n_ranks is not None
            if peer >= self.n_ranks:
                self.fail(f"rank {peer} is outside num_ranks {self.n_ranks} (ranks 0 to "
                          f"{self.n_ranks - 1})")
            size = self.number(m.group("size"), "size", MAX_MESSAGE_BYTES - 1)
            h = rb.op(SEND if comm == "send" else RECV, peer, size, tag, 0,
                      label=label or "", line=self.line)
        if label is not None:
            self.labels[label] = h
        self.counted()

    def _check_wildcards(self, comm: str, peer: int, tag: int) -> None:
        """A negative source or tag is a receive's wildcard (LogGOPSim's ANY_SOURCE and
        ANY_TAG), which the engine does not match; on a send it means nothing at all (MPI
        sends to one rank, with a tag from 0 to MPI_TAG_UB), so it is refused as the send's
        own fault rather than as an unsupported wildcard."""
        if comm == "send":
            if peer < 0:
                self.fail(f"send to rank {peer}: a send goes to one rank, 0 to num_ranks - 1 "
                          "(a negative rank is a receive's any-source wildcard)")
            if tag < 0:
                self.fail(f"send with tag {tag}: a send's tag must be 0 or more (a negative "
                          "tag is a receive's any-tag wildcard; on a send it means nothing)")
            return
        if peer < 0:
            self.fail(f"receive from any source (rank {peer}) is not supported: the engine "
                      "matches each receive to one source rank")
        if tag < 0:
            self.fail(f"receive with any tag (tag {tag}) is not supported: the engine matches "
                      "each receive to one tag")

    def dependency(self, m: re.Match) -> None:
        rb = self._rank_builder()
        ops = []
        for which in ("after", "before"):
            name = m.group(which)
            if name not in self.labels:
                self.fail(f"label {name} is not defined above in rank {self.rank}'s block")
            ops.append(self.labels[name])
        rb.depend(ops[1], ops[0], FINISH if m.group("how") == "requires" else START)
        self.counted(deps=1)


def parse_goal(text: str, source: str | None = None,
               calc_unit_ps: int = DEFAULT_CALC_UNIT_PS, max_ranks: int | None = None,
               max_ops: int | None = None) -> RankPrograms:
    """Rank programs from the text of a GOAL schedule; ``source`` names it in messages
    (``max_ranks``, ``max_ops``: as for :func:`read_goal`).

    Every operation keeps its label (``op_label``) and line (``op_line``).  The result is not
    yet checked against a machine: call :func:`~federation.programs.checks.check_programs`.
    """
    ps = _Parser(source, calc_unit_ps, max_ranks, max_ops)
    text = text.removeprefix(BOM)  # a leading byte-order mark, as read_goal skips it
    inside = BOM in text  # and refuses one further on (one search, not one per line)
    for n, line in enumerate(text.split("\n"), start=1):
        if inside and BOM in line:
            raise bom_inside(n, line, source)
        ps.feed(n, line)
    return ps.finish()


def format_goal(progs: RankPrograms, calc_unit_ps: int = DEFAULT_CALC_UNIT_PS) -> str:
    """The GOAL text of ``progs``; operations are labelled ``l<local index>``.

    Compute times must be whole multiples of ``calc_unit_ps``.  ``rank_node`` has no place in
    GOAL and is not written.  Dependencies are written after their rank's operations, in the
    order of the dependency arrays.
    """
    t = progs.op_time_ps
    comp = progs.op_kind == COMPUTE
    bad = np.flatnonzero(comp & (t % calc_unit_ps != 0))
    if bad.size:
        raise ValueError(f"{progs.describe(int(bad[0]))}: not a whole number of calc units "
                         f"({calc_unit_ps} ps)")
    rank = progs.op_rank
    dep_rank = rank[progs.dep_before] if progs.n_deps else np.zeros(0, dtype=np.int64)
    dep_order = np.argsort(dep_rank, kind="stable")
    dep_bounds = np.searchsorted(dep_rank[dep_order], np.arange(progs.n_ranks + 1))
    kind = progs.op_kind.tolist()
    peer = progs.op_peer.tolist()
    size = progs.op_bytes.tolist()
    tag = progs.op_tag.tolist()
    units = (t // calc_unit_ps).tolist()
    rf = progs.rank_first.tolist()
    out = [f"num_ranks {progs.n_ranks}", ""]
    for r in range(progs.n_ranks):
        base = rf[r]
        out.append(f"rank {r} {{")
        for i in range(base, rf[r + 1]):
            k = kind[i]
            if k == SEND:
                out.append(f"l{i - base}: send {size[i]}b to {peer[i]} tag {tag[i]}")
            elif k == RECV:
                out.append(f"l{i - base}: recv {size[i]}b from {peer[i]} tag {tag[i]}")
            else:
                out.append(f"l{i - base}: calc {units[i]}")
        for e in dep_order[dep_bounds[r]:dep_bounds[r + 1]].tolist():
            how = "requires" if progs.dep_kind[e] == FINISH else "irequires"
            out.append(f"l{int(progs.dep_after[e]) - base} {how} "
                       f"l{int(progs.dep_before[e]) - base}")
        out.append("}")
        out.append("")
    return "\n".join(out)


def write_goal(progs: RankPrograms, path: str | Path,
               calc_unit_ps: int = DEFAULT_CALC_UNIT_PS) -> None:
    """Write ``progs`` as a GOAL schedule (:func:`format_goal`)."""
    Path(path).write_text(format_goal(progs, calc_unit_ps), encoding="utf-8")
