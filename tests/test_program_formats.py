"""What every program-file reader shares (:mod:`federation.programs.reading`), checked on each
format (GOAL, SimGrid TI, DUMPI): a byte-order mark opening the file is skipped, one further
on is refused by name with the file, line and column (it was quoted raw, an invisible
character in the message, or as an escape), after any fault of an earlier line."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from federation.errors import ConfigError
from federation.programs import reading
from federation.programs.dumpi import read_dumpi
from federation.programs.goal import parse_goal, read_goal
from federation.programs.ti import read_ti

DATA = Path(__file__).parent / "data"
BOM = "\ufeff"


def bom_message(line: int, column: int) -> str:
    return (f"line {line}: a byte-order mark (U+FEFF) inside the file (column {column}), where "
            "it is allowed only as the very first character: remove it (two files joined into "
            "one?)")


def goal(tmp_path: Path, text: str) -> Path:
    f = tmp_path / "s.goal"
    f.write_text(text, encoding="utf-8")
    return f


def ti(tmp_path: Path, text: str) -> Path:
    f = tmp_path / "t.txt"
    f.write_text(text, encoding="utf-8")
    return f


def dumpi(tmp_path: Path, old: str, new: str) -> Path:
    """The ring trace with ``old`` replaced by ``new`` in rank 0's file: that file."""
    d = tmp_path / "ring"
    shutil.copytree(DATA / "dumpi" / "ring", d)
    f = d / "dumpi-2024-0000.txt"
    text = f.read_text()
    assert old in text
    f.write_text(text.replace(old, new, 1), encoding="utf-8")
    return f


HAND = (DATA / "programs" / "hand.goal").read_text()
PING = (DATA / "programs" / "pingpong.ti").read_text()

# (reader, file maker, arguments, line, column): the mark at the start of a line, inside a
# token, inside a comment (no format gives it a meaning there either), alone on a line
CASES = {
    "goal line start": (read_goal, goal, ("num_ranks 2\n" + BOM + "rank 0 {\n}\n",), 2, 1),
    "goal in a number": (read_goal, goal, ("num_ranks 2\nrank 0 {\nl1: calc 5" + BOM +
                                           "\n}\n",), 3, 11),
    "goal in a comment": (read_goal, goal, ("num_ranks 1\nrank 0 {\nl1: calc 5 // x" + BOM +
                                            "\n}\n",), 3, 16),
    "goal two marks": (read_goal, goal, (BOM + BOM + "num_ranks 1\n",), 1, 1),
    "ti rank": (read_ti, ti, ("0 init\n" + BOM + "0 finalize\n",), 2, 1),
    "ti action": (read_ti, ti, ("0 init\n0 finalize" + BOM + "\n",), 2, 11),
    "ti alone": (read_ti, ti, ("0 init\n" + BOM + "\n",), 2, 1),
    "ti comment": (read_ti, ti, ("0 init\n# " + BOM + "\n0 finalize\n",), 2, 3),
    "ti last line": (read_ti, ti, ("0 init\n0 compute 5" + BOM,), 2, 12),
    "dumpi call": (read_dumpi, dumpi, ("MPI_Irecv entering", BOM + "MPI_Irecv entering"), 9, 1),
    "dumpi parameter": (read_dumpi, dumpi, ("int count=4\n", "int count=4" + BOM + "\n"),
                        10, 12),
    "dumpi datatype name": (read_dumpi, dumpi, ("datatype=11 (MPI_DOUBLE)",
                                                "datatype=11 (MPI_DOUBLE" + BOM + ")"), 11, 37),
    "dumpi string": (read_dumpi, dumpi, ('["a.out"]', '["a.out' + BOM + '"]'), 3, 23),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_byte_order_mark_inside_a_file_is_refused_by_name(tmp_path, case):
    read, make, args, line, column = CASES[case]
    f = make(tmp_path, *args)
    with pytest.raises(ConfigError) as e:
        read(f.parent if read is read_dumpi else f)
    assert (e.value.source, e.value.message) == (str(f), bom_message(line, column))
    assert BOM not in str(e.value) and "\\ufeff" not in str(e.value)


def test_parse_goal_refuses_it_as_read_goal_does():
    with pytest.raises(ConfigError) as e:
        parse_goal("num_ranks 2\n" + BOM + "rank 0 {\n}\n", source="s.goal")
    assert (e.value.source, e.value.message) == ("s.goal", bom_message(2, 1))
    assert parse_goal(BOM + HAND).n_ops == parse_goal(HAND).n_ops


def test_a_trace_list_refuses_it_too(tmp_path):
    (tmp_path / "a.txt").write_text("0 init\n")
    (tmp_path / "b.txt").write_text("1 init\n")
    listing = tmp_path / "list.txt"
    listing.write_text("a.txt\n" + BOM + "b.txt\n", encoding="utf-8")
    with pytest.raises(ConfigError) as e:
        read_ti(listing)
    assert (e.value.source, e.value.message) == (str(listing), bom_message(2, 1))


def test_a_leading_byte_order_mark_is_still_skipped_in_goal_and_dumpi(tmp_path):
    assert read_goal(goal(tmp_path, BOM + HAND)).op_line.tolist() == \
        read_goal(DATA / "programs" / "hand.goal").op_line.tolist()
    f = dumpi(tmp_path, "MPI_Init entering", BOM + "MPI_Init entering")
    assert read_dumpi(f.parent).n_ops == read_dumpi(DATA / "dumpi" / "ring").n_ops


def test_a_leading_byte_order_mark_is_refused_in_ti_traces_and_lists(tmp_path):
    """SimGrid reads a TI file as bytes and does not skip the mark: to it the first line's
    rank is ``\ufeff0`` (no rank's: the line is not replayed), or the first listed name
    starts with it."""
    with pytest.raises(ConfigError, match=r"line 1: the file starts with a byte-order mark "
                       r".*a trace.s first rank field"):
        read_ti(ti(tmp_path, BOM + PING))
    (tmp_path / "a.txt").write_text("0 init\n")
    listing = tmp_path / "list.txt"
    listing.write_text(BOM + "a.txt\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"a list.s first name") as e:
        read_ti(listing)
    assert e.value.source == str(listing)


def test_an_earlier_line_is_still_refused_first(tmp_path):
    """The lines before the mark's are read first: their own fault is the one reported."""
    f = goal(tmp_path, "num_ranks 2\nrank 0 {\nl1: bogus\n}\n" + BOM + "\n")
    with pytest.raises(ConfigError, match=r"line 3 \(rank 0\): cannot read 'l1: bogus'"):
        read_goal(f)
    with pytest.raises(ConfigError, match=r"line 3: the rank 'x' is not an integer"):
        read_ti(ti(tmp_path, "0 init\n0 init\nx init\n" + BOM + "0 init\n"))


@pytest.mark.parametrize("block", [4, 7, 16])
def test_the_line_is_right_across_read_blocks(tmp_path, monkeypatch, block):
    """Files are read in blocks; a mark in a line that spans blocks (or in the last line,
    without a line end) is found at its own line and column."""
    monkeypatch.setattr(reading, "_BLOCK_CHARS", block)
    text = "".join(f"0 compute {i}\n" for i in range(1, 9))
    for at in (1, 5, 13, 30, len(text) - 1, len(text)):
        f = ti(tmp_path, text[:at] + BOM + text[at:])
        line = text[:at].count("\n") + 1
        column = at - (text[:at].rfind("\n") + 1) + 1
        with pytest.raises(ConfigError) as e:
            read_ti(f)
        assert e.value.message == bom_message(line, column), at
    assert read_goal(goal(tmp_path, BOM + HAND)).op_line.tolist() == \
        read_goal(DATA / "programs" / "hand.goal").op_line.tolist()  # at the start: skipped


# --------------------------------------------------------------------------- quoting file text

ESC = "\x1b[2J\x1b[31m"  # clear the screen, then red
SHOWN_ESC = "\\x1b[2J\\x1b[31m"

# (reader, file maker, arguments, line, message): names no reader knows were printed raw,
# terminal escapes, control characters and a million characters straight to the terminal
QUOTES = {
    "ti action escape": (read_ti, ti, (f"0 {ESC}boom 1\n",), 1,
                         f"line 1 (rank 0, {SHOWN_ESC}boom): unknown action '{SHOWN_ESC}boom'"),
    "ti action controls": (read_ti, ti, ("0 a\x00b\x07\u202ec 1\n",), 1,
                           "line 1 (rank 0, a\\x00b\\x07\\u202ec): unknown action "
                           "'a\\x00b\\x07\\u202ec'"),
    "ti long action": (read_ti, ti, ("0 init\n0 " + "x" * 100_000 + " 1\n",), 2,
                       f"line 2 (rank 0, {'x' * 40}...): unknown action '{'x' * 40}'..."),
    "ti one field": (read_ti, ti, (f"0 init\n{ESC}\n",), 2,
                     f"line 2: expected '<rank> <action> ...', got '{SHOWN_ESC}'"),
    "ti rank": (read_ti, ti, (f"{ESC}0 init\n",), 1,
                f"line 1: the rank '{SHOWN_ESC}0' is not an integer (SimGrid writes ranks as "
                "0, 1, ...)"),
    "ti number": (read_ti, ti, (f"0 compute 5{ESC}\n",), 1,
                  f"line 1 (rank 0, compute): flops '5{SHOWN_ESC}' is not a decimal number "
                  "(ASCII digits)"),
    "ti datatype": (read_ti, ti, ("0 send 1 0 8 " + "9" * 1000 + "\n1 recv 0 0 8\n",), 1,
                    f"line 1 (rank 0, send): datatype id {'9' * 40}... is not one of "
                    "SimGrid's predefined datatypes"),
    "dumpi datatype name": (read_dumpi, dumpi, ("datatype=11 (MPI_DOUBLE)",
                                                f"datatype=40 ({ESC}user\x07)"), 11,
                            f"line 11: MPI_Irecv: the size of datatype 40 ({SHOWN_ESC}user\\x07) "
                            "is unknown; give it in datatype_sizes"),
    "dumpi long datatype name": (read_dumpi, dumpi, ("datatype=11 (MPI_DOUBLE)",
                                                     "datatype=40 (" + "T" * 100_000 + ")"), 11,
                                 f"line 11: MPI_Irecv: the size of datatype 40 ({'T' * 40}...) "
                                 "is unknown; give it in datatype_sizes"),
    "dumpi datatype": (read_dumpi, dumpi, ("datatype=11 (MPI_DOUBLE)", f"datatype={ESC}"), 11,
                       f"line 11: MPI_Irecv: datatype '{SHOWN_ESC}' is not 'id (name)'"),
    "dumpi communicator": (read_dumpi, dumpi, ("comm=2 (MPI_COMM_WORLD)\nMPI_Request",
                                               f"comm=5 ({ESC})\nMPI_Request"), 14,
                           f"line 14: MPI_Irecv on communicator 5 ({SHOWN_ESC}): only "
                           "MPI_COMM_WORLD is read (the ASCII trace does not say who belongs to "
                           "other communicators)"),
    "dumpi parameter": (read_dumpi, dumpi, ("int count=4\n", f"int count=4\n{ESC}\n"), 11,
                        f"line 11: not a parameter of MPI_Irecv: '{SHOWN_ESC}'"),
    "dumpi long call": (read_dumpi, dumpi, ("MPI_Irecv entering", "MPI_" + "I" * 100_000 +
                                            " entering"), 9,
                        f"line 9: expected 'MPI_... entering at walltime ...', got "
                        f"'MPI_{'I' * 76}'..."),
}


@pytest.mark.parametrize("case", sorted(QUOTES))
def test_names_from_the_file_are_quoted_safely(tmp_path, case):
    """Escaped (a control character or terminal escape as ``\\x1b``), cut with ``...``."""
    read, make, args, line, message = QUOTES[case]
    f = make(tmp_path, *args)
    with pytest.raises(ConfigError) as e:
        read(f.parent if read is read_dumpi else f)
    assert (e.value.source, e.value.message) == (str(f), message)
    assert str(e.value).isprintable() and len(str(e.value)) < 400 + len(str(f))


def test_the_quoting_helpers():
    assert reading.quoted("MPI_FOO") == "'MPI_FOO'"
    assert reading.shown("MPI_FOO") == "MPI_FOO"
    assert reading.quoted("\x1b[0m\x00\t\u202e") == "'\\x1b[0m\\x00\\t\\u202e'"
    assert reading.shown("it's") == "it's"
    assert reading.quoted("a" * 41) == "'" + "a" * 40 + "'..."
    assert reading.shown("a" * 41, 10) == "a" * 10 + "..."
    assert reading.quoted("a" * 40) == "'" + "a" * 40 + "'"
