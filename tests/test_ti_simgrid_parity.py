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
