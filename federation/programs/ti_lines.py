"""How SimGrid 3.32 reads a time-independent trace's lines and a trace list, for
:mod:`federation.programs.ti`: what ends a line and separates fields, the last line, a
leading byte-order mark, and the list's file names (``src/xbt/xbt_replay.cpp``,
``src/smpi/internals/smpi_deployment.cpp``).  Each function refuses, naming the file and the
line, where this reader's reading and SimGrid's would differ; ``ti`` reads the actions."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

from federation.errors import ConfigError
from federation.programs.reading import quoted, shown, text_lines

#: what SimGrid trims off a line's ends (``boost::trim``: C's isspace) before splitting it
_TRIM = " \t\n\v\f\r"
#: a character Python's str.split() splits at but SimGrid (blanks and tabs) keeps in a field
OTHER_BLANK = re.compile(r"[^\S \t]")


def blanks_only(src: str, n: int, raw: str) -> None:
    """Refuse line ``n`` if a character that ``str.split`` takes as a blank, but SimGrid
    does not (it splits at blanks and tabs, and trims C's isspace off the ends), stands
    inside it: SimGrid would keep it in a field (``0 send\\x0c1 0 8`` is an unknown action
    there), this reader split the field in two.  A carriage return is named as such: it
    ends a line to Python's universal newlines, which split one line in two here that
    SimGrid (``std::getline``, up to ``\\n``) reads as one."""
    body = raw.strip(_TRIM)
    m = OTHER_BLANK.search(body)
    if m is None:
        return
    ch = m.group()
    name = unicodedata.name(ch, "")
    column = len(raw) - len(raw.lstrip(_TRIM)) + m.start() + 1
    if ch == "\r":
        raise ConfigError(f"line {n}: a carriage return (U+000D) at column {column}, not "
                          "followed by a line feed: SimGrid ends lines at line feeds only and "
                          "splits fields at blanks and tabs only, so it reads the text after "
                          "it as part of this line, not as a line of its own; end lines with "
                          "\\n or \\r\\n", source=src)
    raise ConfigError(f"line {n}: the character U+{ord(ch):04X}{f' ({name})' if name else ''} "
                      f"at column {column}: SimGrid separates fields by blanks and tabs only, "
                      "so it would read it as part of a field, not between two; replace it by "
                      "a blank", source=src)


def no_leading_bom(path: Path, part: str) -> None:
    """Refuse a trace or trace list that starts with a UTF-8 byte-order mark.  The other
    formats' readers skip one there, as editors write it; SimGrid does not
    (``std::getline`` on a byte stream): the mark's three bytes are part of ``part`` to it,
    so its replay and this reader's would differ (a first line ``\ufeff0 compute 1`` is no
    rank's there).  Files that are not regular are left to :func:`text_lines` to refuse."""
    try:
        if not path.is_file():
            return
        with open(path, "rb") as f:
            head = f.read(len(BOM_BYTES))
    except OSError:
        return  # text_lines names the fault
    if head == BOM_BYTES:
        raise ConfigError("line 1: the file starts with a byte-order mark (U+FEFF), which "
                          f"SimGrid does not skip: it reads the mark as part of {part}; "
                          "save the file as UTF-8 without it", source=str(path))


#: UTF-8's byte-order mark
BOM_BYTES = b"\xef\xbb\xbf"


def unterminated(src: str, n: int, raw: str) -> None:
    """Refuse line ``n`` (``raw``), the last of trace ``src``, which no line feed ends, if
    it is an action line (a blank or ``#`` line is skipped by both readers alike).  SimGrid
    drops it: ``read_and_trim_line`` (``xbt_replay.cpp``) reads it with ``std::getline``,
    which meets the end of the file there, and both the per-rank reader
    (``ReplayReader::get`` returns ``not fs.eof()``) and the shared one-file reader
    (``get_action``: ``if (action_fs.eof()) break``) stop without handling it, silently:
    its operations would be in this reader's programs and not in SimGrid's replay."""
    fields = raw.split()
    if not fields or fields[0].startswith("#"):
        return
    raise ConfigError(f"line {n}: the last line of the trace has no line feed at its end: "
                      "SimGrid stops reading at the end of the file without replaying the "
                      "line it read there, so it would not replay this line (this reader "
                      "would); end the file with a line feed (\\n)", source=src)


def is_list(path: Path, max_files: int | None) -> list[Path] | None:
    """The files of a trace list, or None when ``path`` is a trace itself (a line with more
    than one field; blank and ``#`` lines do not count).  A list of more than ``max_files``
    names is refused as soon as it gets there, and a name that is not a regular file
    (missing, or ``/dev/zero``), or that SimGrid reads otherwise (``\\r``, blanks at its
    ends), with its line.  SimGrid (``smpi_read_replay``) takes a list's lines verbatim and
    skips only empty ones, so a blank line that is not empty and a ``#`` line are file names
    there: fine in a trace, they are refused once the file is known to be a list (at its
    end), the first of them with its line."""
    no_leading_bom(path, "the first line (a trace's first rank field, a list's first name)")
    names: list[Path] = []
    odd, odd_raw = 0, ""  # the first line blank but not empty, or '#': refused in a list
    for first, lines in text_lines(path, "trace", newline=""):
        for n, raw in enumerate(lines, first):
            fields = raw.split()
            if not fields or fields[0].startswith("#"):
                if raw and not odd:
                    odd, odd_raw = n, raw
                continue
            if len(fields) != 1:
                return None
            if "\r" in raw:
                raise _cr_in_list(path, n, raw)
            if raw != fields[0]:
                raise _padded_in_list(path, n, raw)
            names.append(_listed(path, n, fields[0]))
            if max_files is not None and len(names) > max_files and len(names) > 1:
                raise ConfigError(f"line {n}: a trace list of more than {max_files} files "
                                  f"(one per rank), but the machine has {max_files} nodes",
                                  source=str(path))
    if names and odd:
        raise _odd_in_list(path, odd, odd_raw)
    return names


def _padded_in_list(listing: Path, n: int, raw: str) -> ConfigError:
    """The refusal of a trace file name with blanks at its start or end (line ``n``,
    ``raw``).  SimGrid opens the list's line as it stands (``smpi_read_replay`` trims
    nothing), a file other than the one this reader, splitting at blanks, would open."""
    return ConfigError(f"line {n}: the trace file name {quoted(raw, 200)} has blanks at its "
                       "start or end: SimGrid takes a trace list's lines whole, nothing "
                       "trimmed, so it would open a file whose name holds them; remove them",
                       source=str(listing))


def _odd_in_list(listing: Path, n: int, raw: str) -> ConfigError:
    """The refusal of line ``n`` (``raw``) of a trace list: blank but not empty, or a ``#``
    line.  SimGrid keeps every non-empty line of a list as a file name
    (``smpi_read_replay``: ``if (not str.empty())``), so it would open this line as a
    rank's trace, give the files after it to the ranks after theirs, and with one name
    besides it read one trace per rank rather than one shared by all; this reader skipped
    the line."""
    if "\r" in raw and not raw.split():
        return _cr_in_list(listing, n, "")
    what = "a '#' line" if raw.split() else "blanks only, not empty"
    return ConfigError(f"line {n}: {quoted(raw, 80)} in a trace list is {what}: SimGrid skips "
                       "only empty lines of a list and reads every other line as a trace "
                       "file's name, so it would take this one for a rank's trace (the files "
                       "after it each going to the next rank); remove the line or leave it "
                       "empty", source=str(listing))


def _cr_in_list(listing: Path, n: int, raw: str) -> ConfigError:
    """The refusal of a ``\\r`` on line ``n`` of a trace list (in a name, or on a blank line
    if ``raw`` is empty).  SimGrid reads a list with ``std::getline`` up to ``\\n`` and keeps
    every non-empty line whole (``smpi_read_replay`` in ``smpi_deployment.cpp``, nothing
    trimmed), so the ``\\r`` of a ``\\r\\n`` line end is part of the file name it opens:
    this reader, splitting at blanks, would open a file SimGrid does not."""
    what = (f"the trace file name {quoted(raw, 200)} holds" if raw
            else "a blank line holds")
    return ConfigError(f"line {n}: {what} a carriage return (a list with \\r\\n line ends?): "
                       "SimGrid reads a trace list's lines whole, up to the line feed, so it "
                       "would take the carriage return as part of a file name; end the list's "
                       "lines with \\n", source=str(listing))


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
        raise ConfigError(f"line {n}: the trace file {quoted(name, 200)} "
                          f"({shown(str(q), 300)}) {what}", source=str(listing))
    return q


def _resolve(listing: Path, name: str) -> Path:
    """A listed name: relative to the list's folder (a name found only in the current
    directory ran a different trace depending on where ``federation`` was started), an
    absolute one as given."""
    q = Path(name)
    return q if q.is_absolute() else listing.parent / q
