"""Where SimGrid 3.32 reads a TI trace otherwise than this reader did, the two now agree or
the line is refused, naming the file, the line and why (checked against SimGrid 3.32's
sources):

* line ends: ``xbt_replay.cpp`` reads a trace with ``std::getline`` (lines end at ``\\n``
  only), ``boost::trim`` takes C's blanks, ``\\r`` among them, off both ends, and
  ``boost::split`` separates fields at blanks and tabs only.  A ``\\r\\n`` line end therefore
  reads as ``\\n``; a lone ``\\r`` inside a line ends nothing there, where Python's universal
  newlines made two lines of it.  A trace *list* is read whole line by line
  (``smpi_deployment.cpp``, ``std::getline``, nothing trimmed): a ``\\r`` in it is part of a
  file name to SimGrid.
* ``sendRecv``: ``SendRecvParser::parse`` (``smpi_replay.cpp``) requires six fields after the
  action (``CHECK_ACTION_PARAMS(action, 6, 0)``: counts, peers and both datatype ids); the
  four-field form this reader took is refused.
* the last line: ``read_and_trim_line`` (``xbt_replay.cpp``) reads a line with
  ``std::getline``; when that meets the end of the file (no ``\\n`` after the line), both
  ``ReplayReader::get`` (per-rank files: ``return not fs.eof()``) and ``get_action`` (one
  shared file: ``if (action_fs.eof()) break``) stop without replaying it.  An action line
  there is refused; a comment or blanks there, or nothing after the last ``\\n``, are
  read alike by both.
* trace lists: ``smpi_read_replay`` (``smpi_deployment.cpp``) keeps every non-empty line
  verbatim as a file name, so a ``#`` line, a line of blanks and blanks around a name
  (skipped or trimmed here before) are refused; empty lines are skipped by both.

(Each case was also run through the installed ``libsimgrid.so.3.32``'s ``replay_runner``.)
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import one_error, run_cli

from federation.errors import ConfigError
from federation.programs.checks import check_programs
from federation.programs.reading import MAX_LINE_CHARS
from federation.programs.ti import read_ti


def write(tmp_path: Path, data: bytes, name: str = "t.txt") -> Path:
    f = tmp_path / name
    f.write_bytes(data)
    return f


def refusal(f: Path) -> tuple[str | None, str]:
    with pytest.raises(ConfigError) as e:
        read_ti(f)
    return e.value.source, e.value.message


def lone_cr(line: int, column: int) -> str:
    return (f"line {line}: a carriage return (U+000D) at column {column}, not followed by a "
            "line feed: SimGrid ends lines at line feeds only and splits fields at blanks "
            "and tabs only, so it reads the text after it as part of this line, not as a "
            "line of its own; end lines with \\n or \\r\\n")


# --------------------------------------------------------------------------- carriage returns

LONE_CR = {
    # two lines here before, one to SimGrid: send's count '8\r1' is not a number there
    "between lines": (b"0 send 1 0 8\r1 recv 0 0 8\n", 1, 13),
    "between fields": (b"0 send 1 0 8\n1 recv\r0 0 8\n", 2, 7),
    "a field of its own": (b"0 send 1 0 8\n1 recv 0 \r 0 8\r\n", 2, 10),
    "before a CRLF end": (b"0 init\r\n1 init\r\n0 send 1 0 8 \r6\r\n", 3, 14),
}


@pytest.mark.parametrize("case", sorted(LONE_CR))
def test_a_lone_carriage_return_inside_a_line_is_refused(tmp_path, case):
    data, line, column = LONE_CR[case]
    f = write(tmp_path, data)
    assert refusal(f) == (str(f), lone_cr(line, column))


def test_a_lone_carriage_return_in_a_per_rank_file_names_that_file(tmp_path):
    write(tmp_path, b"0 send 1 0 8\n", "r0.txt")
    r1 = write(tmp_path, b"1 init\n1 recv 0 0 8\r1 finalize\n", "r1.txt")
    lst = write(tmp_path, b"r0.txt\nr1.txt\n", "list.txt")
    assert refusal(lst) == (str(r1), lone_cr(2, 13))


def test_crlf_line_ends_read_as_simgrid_trims_them(tmp_path):
    """``\\r\\n`` (and a ``\\r`` before it, or blanks) is trimmed off as SimGrid trims it;
    lines are counted at ``\\n`` as ``std::getline`` counts them (the ``\\r\\r\\n`` of line 1
    made a blank line 2 before, and the send line 3)."""
    f = write(tmp_path, b"0 init\r\r\n0 send 1 0 8\r\n\r\n \r1 recv 0 0 8 \r\n")
    p = read_ti(f)
    assert p.op_bytes.tolist() == [8, 8]
    assert p.op_line.tolist() == [2, 4]


def test_a_comment_holding_a_lone_carriage_return_is_one_comment_line(tmp_path):
    """SimGrid skips the whole line (it starts with ``#``): the ``0 compute`` after the
    ``\\r`` is no action there, and was one here."""
    f = write(tmp_path, b"# from rank 0\r0 compute 1e9\n0 compute 2e9\n")
    p = read_ti(f)
    assert p.op_time_ps.tolist() == [2 * 10**12]
    assert p.op_line.tolist() == [2]


def test_lines_ended_by_carriage_returns_alone_say_so_when_too_long(tmp_path):
    """A classic Mac OS file is one line to SimGrid; past the line limit the refusal names
    the carriage returns rather than guessing a binary file."""
    f = write(tmp_path, b"0 compute 1\r" * (MAX_LINE_CHARS // 12 + 1))
    assert refusal(f) == (str(f), f"line 1 is longer than {MAX_LINE_CHARS:,} characters: not "
                                  "a trace (it holds carriage returns without a line feed, "
                                  "which do not end a trace's lines: end them with \\n)")


def cr_in_list(line: int, what: str) -> str:
    return (f"line {line}: {what} a carriage return (a list with \\r\\n line ends?): SimGrid "
            "reads a trace list's lines whole, up to the line feed, so it would take the "
            "carriage return as part of a file name; end the list's lines with \\n")


def test_a_trace_list_with_crlf_line_ends_is_refused(tmp_path):
    """SimGrid would open ``r0.txt\\r``, not ``r0.txt``."""
    write(tmp_path, b"0 send 1 0 8\r\n", "r0.txt")
    write(tmp_path, b"1 recv 0 0 8\r\n", "r1.txt")
    lst = write(tmp_path, b"r0.txt\r\nr1.txt\r\n", "list.txt")
    assert refusal(lst) == (str(lst), cr_in_list(1, "the trace file name 'r0.txt\\r' holds"))


def test_a_blank_list_line_holding_a_carriage_return_is_refused(tmp_path):
    """SimGrid skips only empty list lines: ``\\r`` would be a file's name (rank 1's)."""
    write(tmp_path, b"0 send 1 0 8\n", "r0.txt")
    write(tmp_path, b"1 recv 0 0 8\n", "r1.txt")
    lst = write(tmp_path, b"r0.txt\n\r\nr1.txt\n", "list.txt")
    assert refusal(lst) == (str(lst), cr_in_list(2, "a blank line holds"))


def test_a_lone_carriage_return_is_refused_by_the_cli_without_a_traceback(tmp_path):
    write(tmp_path, b"0 send 1 0 8\r1 recv 0 0 8\n")
    line = one_error(run_cli("comm", "t.txt", "--format", "ti", cwd=tmp_path))
    assert "line 1: a carriage return (U+000D) at column 13" in line
    assert "t.txt" in line


# --------------------------------------------------------------------------- sendRecv

SENDRECV_FORM = ("expected 'sendRecv <sendcount> <dst> <recvcount> <src> <sendtype> "
                 "<recvtype>' (6 fields after the action), got {given}")
FEWER = (": SimGrid (3.32, the first version to replay sendRecv) needs all six, the two "
         "datatype ids included, and stops on fewer")

SENDRECV = {
    "four fields": (b"0 sendRecv 8 1 8 1\n1 sendRecv 8 0 8 0\n", 1, 0,
                    SENDRECV_FORM.format(given=4) + FEWER
                    + "; append '6 6' for counts in the rank's default datatype (id 6, 1 B)"),
    "four fields after init with an argument": (
        b"0 init\n1 init 1\n0 sendRecv 8 1 8 1 6 6\n1 sendRecv 1 0 8 0\n", 4, 1,
        SENDRECV_FORM.format(given=4) + FEWER
        + "; append '0 0' for counts in the rank's default datatype (id 0, 8 B)"),
    "one datatype": (b"0 sendRecv 8 1 8 1 6\n", 1, 0, SENDRECV_FORM.format(given=5) + FEWER),
    "three fields": (b"0 sendRecv 8 1 8\n", 1, 0, SENDRECV_FORM.format(given=3) + FEWER),
    "seven fields": (b"0 sendRecv 8 1 8 1 6 6 6\n", 1, 0,
                     SENDRECV_FORM.format(given=7)
                     + ": SimGrid ignores the fields past the sixth; remove them"),
}


@pytest.mark.parametrize("case", sorted(SENDRECV))
def test_sendrecv_needs_the_six_fields_simgrid_3_32_replays(tmp_path, case):
    data, line, rank, message = SENDRECV[case]
    f = write(tmp_path, data)
    assert refusal(f) == (str(f), f"line {line} (rank {rank}, sendRecv): {message}")


def test_sendrecv_with_six_fields_as_simgrid_3_32_writes_it(tmp_path):
    """``sendRecv <sendcount> <dst> <recvcount> <src> <sendtype> <recvtype>`` (the tracer's
    ``VarCollTIData("sendRecv", -1, ...)`` prints no root): sizes from each datatype, tag 0."""
    f = write(tmp_path, b"0 sendRecv 3 1 2 1 0 1\n1 sendRecv 2 0 24 0 1 6\n")
    p = read_ti(f)
    assert p.op_bytes.tolist() == [24, 8, 8, 24]
    assert p.op_tag.tolist() == [0, 0, 0, 0]
    assert p.op_line.tolist() == [1, 1, 2, 2]
    check_programs(p, 2)


def test_the_four_field_sendrecv_is_refused_by_the_cli_without_a_traceback(tmp_path):
    write(tmp_path, b"0 sendRecv 8 1 8 1\n1 sendRecv 8 0 8 0\n")
    line = one_error(run_cli("comm", "t.txt", "--format", "ti", cwd=tmp_path))
    assert "t.txt: line 1 (rank 0, sendRecv): " + SENDRECV_FORM.format(given=4) in line


# --------------------------------------------------------------------------- the last line


def no_line_feed(line: int) -> str:
    return (f"line {line}: the last line of the trace has no line feed at its end: SimGrid "
            "stops reading at the end of the file without replaying the line it read there, "
            "so it would not replay this line (this reader would); end the file with a line "
            "feed (\\n)")


UNTERMINATED = {
    # SimGrid 3.32 replays only '0 compute 1' of these (checked with its replay_runner)
    "after other lines": (b"0 compute 1\n0 compute 2", 2),
    "the only line": (b"0 compute 1", 1),
    "after a CRLF line, ending in a carriage return": (b"0 compute 1\r\n0 compute 2\r", 2),
    "after comments and blank lines": (b"0 compute 1\n# c\n\n  \n0 compute 2", 5),
    "blanks after the action": (b"0 compute 1\n0 compute 2 \t", 2),
    # SimGrid never reads it, so this reader's own objection to it is not the reason
    "an unknown action": (b"0 compute 1\n0 frobnicate", 2),
    "another rank's line": (b"0 compute 1\n1 compute 2", 2),
}


@pytest.mark.parametrize("case", sorted(UNTERMINATED))
def test_a_last_action_line_without_its_line_feed_is_refused(tmp_path, case):
    data, line = UNTERMINATED[case]
    f = write(tmp_path, data)
    assert refusal(f) == (str(f), no_line_feed(line))


def test_a_last_line_without_its_line_feed_is_refused_after_an_earlier_lines_fault(tmp_path):
    """The lines before it are read first: their own fault is the one reported."""
    f = write(tmp_path, b"0 frobnicate\n0 compute 2")
    assert refusal(f) == (str(f), "line 1 (rank 0, frobnicate): unknown action 'frobnicate'")


def test_a_per_rank_file_without_its_last_line_feed_is_refused_by_name(tmp_path):
    """``ReplayReader::get`` (each rank's own file) drops the line as the shared reader does."""
    write(tmp_path, b"0 send 1 0 8\n", "r0.txt")
    r1 = write(tmp_path, b"1 init\n1 recv 0 0 8", "r1.txt")
    lst = write(tmp_path, b"r0.txt\nr1.txt\n", "list.txt")
    assert refusal(lst) == (str(r1), no_line_feed(2))


def test_a_shared_file_named_by_a_one_line_list_without_its_last_line_feed(tmp_path):
    """One name: the file every rank shares (``get_action``), which drops the line too."""
    t = write(tmp_path, b"0 send 1 0 8\n1 recv 0 0 8", "shared.txt")
    lst = write(tmp_path, b"shared.txt\n", "list.txt")
    assert refusal(lst) == (str(t), no_line_feed(2))


TERMINATED = {
    # what SimGrid reads as this reader does: the last action line ends in '\n'
    "a line feed, then nothing": b"0 compute 1\n0 compute 2\n",
    "CRLF line ends": b"0 compute 1\r\n0 compute 2\r\n",
    "an unterminated comment": b"0 compute 1\n0 compute 2\n# end",
    "an unterminated indented comment": b"0 compute 1\n0 compute 2\n  # end",
    "unterminated blanks": b"0 compute 1\n0 compute 2\n \t ",
    "an unterminated carriage return": b"0 compute 1\n0 compute 2\n\r",
    "empty lines": b"0 compute 1\n0 compute 2\n\n\n",
}


@pytest.mark.parametrize("case", sorted(TERMINATED))
def test_a_trace_whose_last_action_line_ends_in_a_line_feed_is_read(tmp_path, case):
    f = write(tmp_path, TERMINATED[case])
    p = read_ti(f)
    assert p.op_time_ps.tolist() == [10**3, 2 * 10**3]
    assert p.op_line.tolist() == [1, 2]


def test_a_missing_last_line_feed_is_refused_by_the_cli_without_a_traceback(tmp_path):
    write(tmp_path, b"0 send 1 0 8\n1 recv 0 0 8")
    line = one_error(run_cli("comm", "t.txt", "--format", "ti", cwd=tmp_path))
    assert "t.txt: line 2: the last line of the trace has no line feed at its end" in line


# --------------------------------------------------------------------------- trace lists


def padded(line: int, name: str) -> str:
    return (f"line {line}: the trace file name {name} has blanks at its start or end: SimGrid "
            "takes a trace list's lines whole, nothing trimmed, so it would open a file whose "
            "name holds them; remove them")


def odd(line: int, text: str, what: str) -> str:
    return (f"line {line}: {text} in a trace list is {what}: SimGrid skips only empty lines "
            "of a list and reads every other line as a trace file's name, so it would take "
            "this one for a rank's trace (the files after it each going to the next rank); "
            "remove the line or leave it empty")


LIST_LINES = {
    # SimGrid's smpi_read_replay keeps each of these lines whole, as a file name
    "a leading blank": (b" r0.txt\nr1.txt\n", padded(1, "' r0.txt'")),
    "a trailing blank": (b"r0.txt\nr1.txt \n", padded(2, "'r1.txt '")),
    "a trailing tab on the only name": (b"r0.txt\t\n", padded(1, "'r0.txt\\t'")),
    "a '#' line": (b"# ranks 0 and 1\nr0.txt\nr1.txt\n",
                   odd(1, "'# ranks 0 and 1'", "a '#' line")),
    "a '#' line after the names": (b"r0.txt\nr1.txt\n#end\n", odd(3, "'#end'", "a '#' line")),
    "a line of blanks": (b"r0.txt\n \nr1.txt\n", odd(2, "' '", "blanks only, not empty")),
    "a tab after the last name": (b"r0.txt\nr1.txt\n\t", odd(3, "'\\t'",
                                                             "blanks only, not empty")),
    "a one-name list with a comment": (b"r0.txt\n# shared\n",
                                       odd(2, "'# shared'", "a '#' line")),
}


@pytest.mark.parametrize("case", sorted(LIST_LINES))
def test_a_list_line_simgrid_reads_as_a_file_name_is_refused(tmp_path, case):
    data, message = LIST_LINES[case]
    write(tmp_path, b"0 send 1 0 8\n", "r0.txt")
    write(tmp_path, b"1 recv 0 0 8\n", "r1.txt")
    lst = write(tmp_path, data, "list.txt")
    assert refusal(lst) == (str(lst), message)


@pytest.mark.parametrize("data", [b"r0.txt\n\nr1.txt\n\n\n", b"\nr0.txt\nr1.txt"],
                         ids=["empty lines", "no line feed after the last name"])
def test_list_lines_simgrid_reads_alike_are_read(tmp_path, data):
    """Empty lines SimGrid skips (``if (not str.empty())``); a last name without its line
    feed it keeps (``std::getline`` sets only eof there, and the loop body runs)."""
    write(tmp_path, b"0 send 1 0 8\n", "r0.txt")
    write(tmp_path, b"1 recv 0 0 8\n", "r1.txt")
    p = read_ti(write(tmp_path, data, "list.txt"))
    assert p.n_ranks == 2 and p.op_bytes.tolist() == [8, 8]


def test_comments_and_blank_lines_in_a_trace_are_still_skipped(tmp_path):
    """A file with a line of two fields or more is a trace, where SimGrid skips them."""
    f = write(tmp_path, b"# SimGrid trace\n \n\t\n0 send 1 0 8\n  # c\n1 recv 0 0 8\n")
    assert read_ti(f).op_line.tolist() == [4, 6]


def test_a_list_line_simgrid_reads_as_a_name_is_refused_by_the_cli(tmp_path):
    write(tmp_path, b"0 send 1 0 8\n", "r0.txt")
    write(tmp_path, b"1 recv 0 0 8\n", "r1.txt")
    write(tmp_path, b"# two ranks\nr0.txt\nr1.txt\n", "list.txt")
    line = one_error(run_cli("comm", "list.txt", "--format", "ti", cwd=tmp_path))
    assert "list.txt: line 1: '# two ranks' in a trace list is a '#' line" in line
