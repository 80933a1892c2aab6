"""Reading program files as streams, within bounds: what every schedule reader shares.

A schedule file is read a line at a time and turned into operations as it goes, never held
whole: a 20 MB trace once peaked at 1 GB because every line was kept as a list of strings
before any operation was made.  Three bounds hold while reading, each refused as one
:class:`~federation.errors.ConfigError` naming the file and line:

* the file must be a regular file (``/dev/zero`` or a pipe in a trace list never ends);
* a line may hold at most :data:`MAX_LINE_CHARS` characters (a binary file has no line ends),
  every line, wherever it falls in the blocks the file is read in;
* the operations read so far must fit the memory a point may use (:class:`OpBudget`, set by
  :mod:`federation.pipeline.rank_programs` from ``--max-memory`` around a workload's
  ``programs`` call), so a slip such as ``num_ranks 100000000`` or a huge trace is refused
  before memory runs out.

Text of the file that a refusal quotes goes through :func:`quoted` (or :func:`shown`, without
the quotes): a line may hold a million characters, control characters and terminal escapes,
which went straight to the user's terminal when a name was quoted raw.

A UTF-8 byte-order mark (U+FEFF) is skipped as the file's first character (an editor may
write one) and refused anywhere else, by name and with its line and column
(:func:`bom_inside`): it is invisible, so the parsers' own refusals quoted it as a blank or
an escape, and the files pasted together that usually put it there need fixing at that line.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

from federation.errors import ConfigError

#: longest line read (characters): schedule lines are short; a longer one is not a schedule
MAX_LINE_CHARS = 1 << 20
#: characters read at a time; at most MAX_LINE_CHARS, so that a line lying whole inside one
#: block is within the limit and only the first line of a block (the carry of the blocks
#: before it, then the block's first part) needs measuring
_BLOCK_CHARS = 1 << 20
#: a byte-order mark: allowed as a file's first character only
BOM = "\ufeff"


#: characters of a file's text a refusal quotes at most (names are short; a line is not)
QUOTE_CHARS = 40


def shown(text: str, limit: int = QUOTE_CHARS) -> str:
    """``text`` read from a file, safe to print in a refusal: every character a terminal would
    not show as itself (control characters, the ESC that starts a terminal escape, invisible
    ones such as U+202E, which reverses the text after it) as its Python escape (``\\x1b``),
    a backslash doubled (so an escape is never ambiguous), cut to ``limit`` characters with
    ``...`` after them.  Without quotes: for a name in a fixed format, ``(rank 0, send)``."""
    body = repr(text[:limit])[1:-1]
    return body + "..." if len(text) > limit else body


def quoted(text: str, limit: int = QUOTE_CHARS) -> str:
    """``text`` read from a file, quoted safely for a refusal: Python's ``repr`` of at most
    ``limit`` characters (non-printable ones escaped, see :func:`shown`), ``...`` after the
    closing quote when it was cut: ``'MPI_FOO'``, ``'\\x1b[31mred'``, ``'aaaa'...``."""
    q = repr(text[:limit])
    return q + "..." if len(text) > limit else q


@dataclass(frozen=True)
class OpBudget:
    """How many operations a point's programs may have, and why (for the refusal)."""

    max_ops: int
    #: the limit in the user's terms, e.g. "--max-memory (12 GiB, less 0.1 GiB for the machine)"
    why: str

    def refuse(self, n_ops: int, source: str | None, where: str = "",
               path: str | None = None) -> ConfigError:
        """The refusal of ``n_ops`` operations (``where`` leads the message, e.g. ``"line 12:
        the schedule reaches "``)."""
        return ConfigError(f"{where}{n_ops:,} operations, beyond the {self.max_ops:,} that "
                           f"fit {self.why}", source=source, path=path)


_BUDGET: ContextVar[OpBudget | None] = ContextVar("federation_op_budget", default=None)


def op_budget() -> OpBudget | None:
    """The operation budget of the point whose programs are being built (None: unbounded)."""
    return _BUDGET.get()


@contextmanager
def limited_ops(budget: OpBudget | None) -> Iterator[None]:
    """Run a workload's ``programs`` under ``budget`` (readers and built-in workloads check
    their operation counts against it as they go)."""
    token = _BUDGET.set(budget)
    try:
        yield
    finally:
        _BUDGET.reset(token)


def max_ops(given: int | None = None) -> int | None:
    """The smaller of an explicit bound and the current budget's."""
    b = op_budget()
    if b is None:
        return given
    return b.max_ops if given is None else min(given, b.max_ops)


def text_lines(path: str | Path, what: str = "schedule", newline: str | None = None,
               unterminated: Callable[[int, str], None] | None = None,
               ) -> Iterator[tuple[int, list[str]]]:
    """The lines of a UTF-8 text file, streamed a block at a time: ``(number of the first
    line, lines)`` (without their line ends), each within :data:`MAX_LINE_CHARS`.  A
    missing, unreadable or non-regular file, undecodable bytes or an over-long line are
    refused naming the file (and line).  A UTF-8 byte-order mark opening the file is skipped
    (as the YAML loader does; an editor may write one); one further on is refused
    (:func:`bom_inside`) once the lines before it have been yielded, so an earlier line's
    own fault is still reported first.  Blocks, not single lines, because a generator step
    per line cost as much as reading the file.

    ``newline`` is :func:`open`'s: by default (None) ``\\r\\n`` and a lone ``\\r`` both end a
    line.  With ``""`` only ``\\n`` ends one and every ``\\r`` stays in the text (at the end
    of a ``\\r\\n`` line, or inside one), for a format whose own reader splits at ``\\n``
    only (SimGrid's ``std::getline``), so that the caller can read a ``\\r`` as that reader
    does or refuse it: split here, a lone ``\\r`` made two lines of what is one there.

    ``unterminated``, if given, is called with the number and text of the file's last line
    when no ``\\n`` ends it (a file ending in ``\\n`` has no such line), after every line
    before it has been yielded and before that line is: a format whose own reader drops
    such a line (SimGrid's replay stops at end of file without handling the line it read
    there) can refuse it there, with its line, before replaying it, and only after an
    earlier line's own fault."""
    p = Path(path)
    src = str(p)
    try:
        regular = p.is_file()
        exists = regular or p.exists()
    except OSError as exc:  # e.g. a name too long for the file system
        raise ConfigError(f"cannot read the {what}: {exc.strerror or exc}", source=src) from None
    if not regular:
        raise ConfigError(f"the {what} is not a regular file" if exists
                          else f"no such {what} file", source=src)
    n = 0
    try:
        # utf-8-sig: a byte-order mark at the start is skipped (and only there)
        with open(p, encoding="utf-8-sig", newline=newline) as f:
            carry = ""
            while True:
                # a block at a time, split in C: a readline per line cost twice as long
                block = f.read(_BLOCK_CHARS)
                text = carry + block
                lines = text.split("\n")
                carry = lines.pop()
                # the first line holds the carry (up to a limit) and the block's start; the
                # others lie inside the block, shorter than _BLOCK_CHARS <= MAX_LINE_CHARS
                if lines and len(lines[0]) > MAX_LINE_CHARS:
                    raise _too_long(n + 1, what, src, lines[0])
                if len(carry) > MAX_LINE_CHARS:
                    raise _too_long(n + len(lines) + 1, what, src, carry)
                # one search of the block in C; a mark in the carry is found with its line
                if BOM in text:
                    for i, line in enumerate(lines if block else [*lines, carry]):
                        if BOM in line:
                            if i:
                                yield n + 1, lines[:i]
                            raise bom_inside(n + 1 + i, line, src)
                if not block:
                    if carry and unterminated is not None:
                        if lines:
                            yield n + 1, lines
                            n += len(lines)
                        unterminated(n + 1, carry)
                        lines = []
                    if carry:
                        lines.append(carry)
                    if lines:
                        yield n + 1, lines
                    return
                if lines:
                    yield n + 1, lines
                    n += len(lines)
    except UnicodeDecodeError as exc:
        raise ConfigError(f"line {n + 1} or soon after: not UTF-8 text ({exc.reason}): not a "
                          f"{what}?", source=src) from None
    except OSError as exc:
        raise ConfigError(f"cannot read the {what}: {exc.strerror or exc}", source=src) from None


def bom_inside(line: int, text: str, source: str | None) -> ConfigError:
    """The refusal of a byte-order mark on ``line`` (whose ``text`` holds it), past the
    file's first character.  It names the mark and its column rather than quoting the line:
    the mark is invisible, so a quote showed nothing wrong (or an escape, ``\\ufeff``).
    Refused in every line, comments too: no format gives it a meaning anywhere but at the
    start, and it is most often the mark of a second file joined onto the first."""
    return ConfigError(f"line {line}: a byte-order mark (U+FEFF) inside the file (column "
                       f"{text.index(BOM) + 1}), where it is allowed only as the very first "
                       "character: remove it (two files joined into one?)", source=source)


def _too_long(line: int, what: str, src: str, text: str) -> ConfigError:
    """The refusal of over-long line ``line`` (``text``, or its start).  A carriage return
    inside it (not the ``\\r`` of a ``\\r\\n`` end) is named: read with ``newline=""``, a
    file whose lines end in a lone ``\\r`` (classic Mac OS) is one long line, and "a binary
    file?" would not say why."""
    why = (f"it holds carriage returns without a line feed, which do not end a {what}'s "
           "lines: end them with \\n" if "\r" in text.rstrip("\r") else "a binary file?")
    return ConfigError(f"line {line} is longer than {MAX_LINE_CHARS:,} characters: not a "
                       f"{what} ({why})", source=src)
