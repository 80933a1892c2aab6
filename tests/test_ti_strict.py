"""SimGrid TI traces are read field by field as SimGrid's replay reads them (checked against
``src/xbt/xbt_replay.cpp``, ``src/smpi/internals/smpi_replay.cpp`` and
``src/smpi/mpi/smpi_datatype.cpp``, SimGrid 3.20 to 4.1), or refused naming the file, line and
field where the two readings would differ:

* a line's rank is matched as text against ``std::to_string(rank)``: ``01`` is no rank's;
* peers, tags and ``wait``'s fields go through ``std::stoi``: ``1e3`` is 1 there, not 1000;
* counts go through ``strtod`` (``1e3`` is 1000) and are passed to MPI as a C int;
* datatype ids are looked up as text: ``06`` or ``6.0`` names no datatype;
* fields are split at blanks and tabs only (``boost::split``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from federation.errors import ConfigError
from federation.programs.ti import read_ti


def write(tmp_path: Path, text: str, name: str = "t.txt") -> Path:
    f = tmp_path / name
    f.write_text(text, encoding="utf-8")
    return f


def refusal(f: Path) -> tuple[str | None, str]:
    with pytest.raises(ConfigError) as e:
        read_ti(f)
    return e.value.source, e.value.message


# --------------------------------------------------------------------------- a line's rank

NO_RANK = ("SimGrid writes ranks as 0, 1, ... and replays a line only for the rank its first "
           "field spells exactly: {q} is no rank's")
LEADING_ZERO = {
    # '01' was rank 1 here; SimGrid's actor 1 reads the lines whose first field is "1"
    "01": ("0 send 1 0 8\n01 recv 0 0 8\n", 2, "'01'", "1"),
    "00": ("00 send 1 0 8\n1 recv 0 0 8\n", 1, "'00'", "0"),
    "007": ("0 init\n1 init\n007 init\n", 3, "'007'", "7"),
}


@pytest.mark.parametrize("case", sorted(LEADING_ZERO))
def test_a_rank_with_a_leading_zero_is_refused_like_a_signed_one(tmp_path, case):
    text, line, q, plain = LEADING_ZERO[case]
    f = write(tmp_path, text)
    assert refusal(f) == (str(f), f"line {line}: the rank {q} has a leading zero "
                                  f"({NO_RANK.format(q=q)}); write {plain}")


def test_a_rank_with_a_leading_zero_is_refused_in_a_per_rank_file_too(tmp_path):
    write(tmp_path, "0 send 1 0 8\n", "r0.txt")
    r1 = write(tmp_path, "01 recv 0 0 8\n", "r1.txt")
    assert refusal(write(tmp_path, "r0.txt\nr1.txt\n", "list.txt")) == (
        str(r1), f"line 1: the rank '01' has a leading zero ({NO_RANK.format(q=repr('01'))}); "
                 "write 1")


def test_an_overlong_rank_is_not_called_a_non_integer(tmp_path):
    f = write(tmp_path, "12345678901 init\n")
    assert refusal(f) == (str(f), "line 1: the rank '12345678901' has more than 10 digits: no "
                                  "trace has that many ranks")


def test_the_cli_refuses_it_with_exit_2_and_no_traceback(tmp_path):
    write(tmp_path, "0 send 1 0 8\n01 recv 0 0 8\n")
    env = {**os.environ, "FEDERATION_DISABLE_PLUGIN_AUTOLOAD": "1"}
    r = subprocess.run([sys.executable, "-c", "from federation.cli import entry; entry()",
                        "comm", "t.txt"], capture_output=True, text=True, cwd=tmp_path,
                       env=env, timeout=300)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    assert "t.txt: line 2: the rank '01' has a leading zero" in r.stderr


# --------------------------------------------------------------------------- std::stoi fields

def stoi(what: str, text: str, ours: str, theirs: str, stop: str) -> str:
    return (f"{what} {text!r} is {ours} as a number, but {theirs} to SimGrid, which reads a "
            f"{what} with std::stoi (digits up to the first other character, here {stop!r}); "
            "write it as a whole number in plain digits")


STOI = {
    # 1e3 was rank 1000 here (an unknown rank, or another peer): SimGrid sends to rank 1
    "send peer": ("0 send 1e0 0 8\n1 recv 0 0 8\n0 send 1e3 0 8\n", 3, "send",
                  stoi("destination rank", "1e3", "1000", "1", "e")),
    "isend peer": ("0 isend 2e-1 0 8\n", 1, "isend",
                   stoi("destination rank", "2e-1", "0.2", "2", "e")),
    "recv peer": ("0 recv 1.5e1 0 8\n", 1, "recv",
                  stoi("source rank", "1.5e1", "15", "1", ".")),
    "irecv peer": ("0 irecv 1E1 0 8\n", 1, "irecv", stoi("source rank", "1E1", "10", "1", "E")),
    "tag": ("0 send 1 1e1 8\n1 recv 0 10 8\n", 1, "send", stoi("tag", "1e1", "10", "1", "e")),
    "wait tag": ("0 isend 1 5 8\n0 isend 1 5 8\n0 wait 0 1 5e0\n0 wait 0 1 50e-1\n", 4, "wait",
                          stoi("tag", "50e-1", "5", "50", "e")),
    "wait source": ("0 isend 1 0 8\n0 wait 0.5e1 1 0\n", 2, "wait",
                    stoi("source rank", "0.5e1", "5", "0", ".")),
    "wait destination": ("0 isend 1 0 8\n0 wait 0 1e1 0\n", 2, "wait",
                         stoi("destination rank", "1e1", "10", "1", "e")),
    "sendRecv destination": ("0 sendRecv 8 1e1 8 1 6 6\n", 1, "sendRecv",
                             stoi("destination rank", "1e1", "10", "1", "e")),
    "sendRecv source": ("0 sendRecv 8 1 8 1e1 6 6\n", 1, "sendRecv",
                        stoi("source rank", "1e1", "10", "1", "e")),
    "no digit first": ("0 send .5e1 0 8\n", 1, "send",
                       "destination rank '.5e1' is 5 as a number, but an error to SimGrid, "
                       "which reads a destination rank with std::stoi: it needs a digit "
                       "first; write it as a whole number in plain digits"),
    "beyond a C int": ("0 recv 1 30000000000e-10 8\n", 1, "recv",
                       "tag '30000000000e-10' is 3 as a number, but an error to SimGrid, which "
                       "reads a tag with std::stoi: its digits are beyond a C int; write it as "
                       "a whole number in plain digits"),
}


@pytest.mark.parametrize("case", sorted(STOI))
def test_an_integer_field_spelled_so_stoi_reads_it_otherwise_is_refused(tmp_path, case):
    text, line, act, message = STOI[case]
    f = write(tmp_path, text)
    assert refusal(f) == (str(f), f"line {line} (rank 0, {act}): {message}")


def test_integer_fields_std_stoi_reads_alike_still_load(tmp_path):
    """A sign, a leading zero, a fraction std::stoi stops at (truncated, from the digits: as a
    float '7.99999999999999999' is 8), an exponent that changes nothing."""
    p = read_ti(write(tmp_path, "0 isend +1 7.99999999999999999 8\n"
                                "0 wait 0 01 7.0\n"
                                "1 recv 00 7 8\n"
                                "0 isend 1.9 3 8\n"
                                "0 wait 0 1e0 3e0\n"
                                "1 recv -0 3 8\n"))
    assert p.op_peer.tolist() == [1, 1, 0, 0]
    assert p.op_tag.tolist() == [7, 3, 7, 3]
    assert p.op_bytes.tolist() == [8, 8, 8, 8]


# --------------------------------------------------------------------------- counts, datatypes

COUNTS = {
    "send": ("0 send 1 0 3e9\n", "send", "count 3e9 is above 2147483647 (2**31 - 1): SimGrid "
                                         "passes a count to MPI as a C int"),
    "sendRecv": ("0 sendRecv 8 1 2147483648 1 6 6\n", "sendRecv",
                 "count 2147483648 is above 2147483647 (2**31 - 1): SimGrid passes a count to "
                 "MPI as a C int"),
}


@pytest.mark.parametrize("case", sorted(COUNTS))
def test_a_count_beyond_a_c_int_is_refused(tmp_path, case):
    text, act, message = COUNTS[case]
    f = write(tmp_path, text)
    assert refusal(f) == (str(f), f"line 1 (rank 0, {act}): {message}")


def test_counts_are_strtod_numbers_truncated(tmp_path):
    p = read_ti(write(tmp_path, "0 send 1 0 1e3\n1 recv 0 0 1000.9\n"
                                "0 send 1 1 2147483647\n1 recv 0 1 2.147483647e9\n"))
    assert p.op_bytes.tolist() == [1000, 2147483647, 1000, 2147483647]


def datatype(q: str, plain: str) -> str:
    return (f"datatype {q} is not written as SimGrid writes a datatype id (plain digits, no "
            f"sign, no leading zero, no point or exponent): SimGrid looks the id up as text, so "
            f"{q} names none of its datatypes; write {plain}")


DATATYPES = {
    "leading zero": ("06", datatype("'06'", "6")),
    "point": ("6.0", datatype("'6.0'", "6")),
    "sign": ("+6", datatype("'+6'", "6")),
    "exponent": ("6e0", datatype("'6e0'", "6")),
    "fraction": ("0.5", "datatype '0.5' is not written as SimGrid writes a datatype id (plain "
                        "digits, no sign, no leading zero, no point or exponent): SimGrid looks "
                        "the id up as text, so '0.5' names none of its datatypes"),
    "not a number": ("MPI_BYTE", "datatype 'MPI_BYTE' is not a decimal number (ASCII digits)"),
    "unknown id": ("77", "datatype id 77 is not one of SimGrid's predefined datatypes"),
}


@pytest.mark.parametrize("case", sorted(DATATYPES))
def test_a_datatype_id_is_spelled_as_simgrid_looks_it_up(tmp_path, case):
    spelled, message = DATATYPES[case]
    f = write(tmp_path, f"0 send 1 0 8 6\n1 recv 0 0 8 {spelled}\n")
    assert refusal(f) == (str(f), f"line 2 (rank 1, recv): {message}")


def test_plain_datatype_ids_still_load(tmp_path):
    p = read_ti(write(tmp_path, "0 send 1 0 3 0\n1 recv 0 0 24 6\n0 sendRecv 2 1 1 1 1 0\n"
                                "1 sendRecv 8 0 1 0 2 27\n"))
    assert p.op_bytes.tolist() == [24, 8, 8, 24, 8, 32]


# --------------------------------------------------------------------------- field separators

BLANKS = {
    # str.split() took these as blanks; SimGrid keeps them in a field ('send\f1' is no action)
    "form feed": ("0 send\f1 0 8\n", 7, "U+000C"),
    "vertical tab": ("0 send 1\v0 8\n", 9, "U+000B"),
    "no-break space": ("0 send 1 0\xa08\n", 11, "U+00A0 (NO-BREAK SPACE)"),
    "ideographic space": ("0\u3000send 1 0 8\n", 2, "U+3000 (IDEOGRAPHIC SPACE)"),
    "leading no-break space": ("\xa00 send 1 0 8\n", 1, "U+00A0 (NO-BREAK SPACE)"),
}


@pytest.mark.parametrize("case", sorted(BLANKS))
def test_only_blanks_and_tabs_separate_fields(tmp_path, case):
    text, column, char = BLANKS[case]
    f = write(tmp_path, text + "1 recv 0 0 8\n")
    assert refusal(f) == (str(f), f"line 1: the character {char} at column {column}: SimGrid "
                                  "separates fields by blanks and tabs only, so it would read it "
                                  "as part of a field, not between two; replace it by a blank")


def test_tabs_runs_of_blanks_and_line_ends_simgrid_trims_still_load(tmp_path):
    f = tmp_path / "t.txt"
    f.write_bytes(b"0\tsend  1 \t0 8\r\n\x0b1 recv 0 0 8\x0c\r\n"
                  b"# a comment\xc2\xa0with\x0bthings\n")
    p = read_ti(f)
    assert p.op_bytes.tolist() == [8, 8] and p.op_line.tolist() == [1, 2]
