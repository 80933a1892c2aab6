"""SimGrid time-independent traces: small hand-written traces give the stated arrays;
collectives and malformed lines are refused with the line."""

from __future__ import annotations

from pathlib import Path

import pytest

from federation.errors import ConfigError
from federation.programs.checks import check_programs
from federation.programs.ti import read_ti

DATA = Path(__file__).parent / "data" / "programs"


def edges(p):
    return list(zip(p.dep_before.tolist(), p.dep_after.tolist(), p.dep_kind.tolist(),
                    strict=True))


def test_pingpong_shared_trace():
    """3.20+ lines: tags, keyed wait, datatype 0 (MPI_DOUBLE, 8 B), compute at 1 Gflop/s."""
    p = read_ti(DATA / "pingpong.ti", host_speed_flops=1e9)
    assert p.rank_first.tolist() == [0, 3, 6]
    assert p.op_kind.tolist() == [2, 0, 1, 1, 2, 0]
    assert p.op_peer.tolist() == [-1, 1, 1, 0, -1, 0]
    assert p.op_bytes.tolist() == [0, 1000, 1000, 1000, 0, 1000]
    assert p.op_tag.tolist() == [0, 7, 8, 7, 0, 8]
    assert p.op_time_ps.tolist() == [2 * 10**12, 0, 0, 0, 10**12, 0]
    # rank 1: irecv(3) -> compute(4) starts once 3 started; wait(3) -> isend(5) after 3 and 4
    assert edges(p) == [(0, 1, 0), (1, 2, 0), (3, 4, 1), (4, 5, 0), (3, 5, 0)]
    assert p.op_line.tolist() == [4, 5, 9, 6, 7, 10]
    check_programs(p, 2)


def test_list_of_per_rank_files_and_old_forms():
    """The list smpirun writes (one file per rank); ``0 wait`` without arguments takes the
    newest request (SimGrid <= 3.19)."""
    p = read_ti(DATA / "split.txt", host_speed_flops=2e9)
    assert p.rank_first.tolist() == [0, 4, 6]
    assert p.op_kind.tolist() == [0, 0, 2, 2, 1, 1]
    assert p.op_bytes.tolist() == [10, 20, 0, 0, 10, 20]
    assert p.op_time_ps.tolist() == [0, 0, 250_000_000_000, 500_000_000_000, 0, 0]
    # isend0 -> isend1 (START); compute2 START on isend1; "wait 0 1 0" = oldest = op 0;
    # compute3 after compute2 and op 0; bare "wait" = newest pending = op 1
    assert edges(p) == [(0, 1, 1), (1, 2, 1), (2, 3, 0), (0, 3, 0), (4, 5, 0)]
    assert p.op_label[:2] == ["r0.txt:2", "r0.txt:3"]
    check_programs(p, 2)


def write(tmp_path, text, name="t.txt"):
    f = tmp_path / name
    f.write_text(text)
    return f


def test_sends_without_a_tag_are_simgrid_3_19s_and_not_mixed_with_three_fields(tmp_path):
    """``send 1 20`` (SimGrid <= 3.19, MPI_BYTE) has tag 0.  <= 3.19 wrote another datatype
    as ``send 1 256 1`` (256 ints), which reads as 3.20's ``send <dst> <tag> <count>`` (1 B
    with tag 256): a trace with both forms is refused, naming both lines."""
    p = read_ti(write(tmp_path, "0 init\n1 init\n0 send 1 20\n1 recv 0 20\n"),
                host_speed_flops=1e9)
    assert p.op_bytes.tolist() == [20, 20]
    f = write(tmp_path, "0 init\n1 init\n0 send 1 20\n1 recv 0 20\n0 send 1 256 1\n"
                        "1 recv 0 256 1\n", "mixed.txt")
    with pytest.raises(ConfigError) as exc:
        read_ti(f, host_speed_flops=1e9)
    assert "line 5 (rank 0, send): a send or receive of SimGrid <= 3.19's form 'send <peer> " \
        "<count>' (at mixed.txt:3) beside one of three fields (at mixed.txt:5)" in str(exc.value)


def test_one_line_list_names_a_shared_trace(tmp_path):
    write(tmp_path, "0 init\n0 send 1 0 5\n1 recv 0 0 5\n", "shared.txt")
    p = read_ti(write(tmp_path, "shared.txt\n", "list.txt"))
    assert p.n_ranks == 2 and p.op_bytes.tolist() == [5, 5]
    assert p.source == str(tmp_path / "shared.txt")


def test_init_with_argument_makes_double_the_default(tmp_path):
    p = read_ti(write(tmp_path, "0 init 1\n0 send 1 0 3\n1 init\n1 recv 0 0 24 6\n"))
    assert p.op_bytes.tolist() == [24, 24]


def test_sendrecv_and_sleep(tmp_path):
    """sendRecv with its six fields, as SimGrid 3.32 writes and replays it (datatype 6 is
    MPI_BYTE)."""
    p = read_ti(write(tmp_path, "0 sendRecv 4 1 8 1 6 6\n0 sleep 1e-6\n"
                                "1 sendRecv 8 0 4 0 6 6\n"))
    assert p.op_kind.tolist() == [0, 1, 2, 0, 1]
    assert p.op_time_ps.tolist() == [0, 0, 1_000_000, 0, 0]
    assert edges(p)[:3] == [(0, 1, 1), (0, 2, 0), (1, 2, 0)]
    check_programs(p, 2)


BAD = {
    "collective": ("0 init\n0 allreduce 5e4 5e8\n", "t.txt: line 2 (rank 0, allreduce): "
                   "the collective 'allreduce' is not supported"),
    "barrier": ("0 barrier\n", "line 1 (rank 0, barrier): the collective 'barrier'"),
    "unknown action": ("0 ssend 1 0 5\n", "line 1 (rank 0, ssend): unknown action 'ssend'"),
    "rank name": ("p0 compute 5\n", "line 1: the rank 'p0' is not an integer"),
    "unknown peer": ("0 send 3 0 5\n1 init\n", "line 1 (rank 0, send): unknown rank 3"),
    "wait with nothing pending": ("0 wait 0 1 0\n", "line 1 (rank 0, wait): wait with no"),
    "wait for another key": ("0 isend 1 0 5\n0 wait 0 1 9\n1 recv 0 0 5\n",
                             "line 2 (rank 0, wait): no pending isend or irecv from rank 0 "
                             "to rank 1 with tag 9"),
    "datatype": ("0 send 1 0 5 77\n1 init\n", "datatype id 77 is not one of"),
    "unknown size": ("0 recv 1 0 -1\n1 init\n", "negative count -1"),
    "bad flops": ("0 compute lots\n", "line 1 (rank 0, compute): flops 'lots' is not"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_refusals_name_the_line(tmp_path, case):
    text, expected = BAD[case]
    with pytest.raises(ConfigError) as e:
        read_ti(write(tmp_path, text))
    assert expected in str(e.value), str(e.value)


def test_unmatched_trace_is_refused_by_the_checks(tmp_path):
    p = read_ti(write(tmp_path, "0 send 1 0 5\n1 recv 0 1 5\n"))
    with pytest.raises(ConfigError, match=r"rank 0 operation 0 \(send 5 B to rank 1 tag 0, "
                                          r".*t.txt:1\): no receive takes this send"):
        check_programs(p, 2)


def test_line_of_another_rank_in_a_per_rank_file(tmp_path):
    write(tmp_path, "0 init\n", "a.txt")
    write(tmp_path, "0 init\n", "b.txt")
    with pytest.raises(ConfigError, match=r"b.txt: line 1: a line of rank 0 in the trace of "
                                          r"rank 1"):
        read_ti(write(tmp_path, "a.txt\nb.txt\n", "list.txt"))


# --------------------------------------------------------------------------- fuzz findings


def test_a_listed_name_is_read_beside_the_list_never_from_the_current_directory(
        tmp_path, monkeypatch):
    """``r1.txt`` missing beside the list but present in the current directory was read from
    there: the same experiment ran from one folder and was refused from another."""
    (tmp_path / "lst").mkdir()
    (tmp_path / "sub").mkdir()
    write(tmp_path / "sub", "0 init\n0 send 1 0 8\n", "r0.txt")
    write(tmp_path, "1 init\n1 recv 0 0 4000\n", "r1.txt")  # in the cwd only
    listing = write(tmp_path / "lst", "../sub/r0.txt\nr1.txt\n", "list.txt")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as e:
        read_ti(listing)
    assert (e.value.source, e.value.message) == (
        str(listing), f"line 2: the trace file 'r1.txt' ({tmp_path / 'lst' / 'r1.txt'}) does "
                      "not exist (a name in a list is relative to the list's folder)")
    # beside the list, or absolute: read
    write(tmp_path / "lst", "1 init\n1 recv 0 0 8\n", "r1.txt")
    assert read_ti(listing).op_bytes.tolist() == [8, 8]
    write(tmp_path / "lst", f"{tmp_path / 'sub' / 'r0.txt'}\nr1.txt\n", "list.txt")
    assert read_ti(listing).op_bytes.tolist() == [8, 8]


NUMBERS = {
    # int() and float() read Unicode digits and underscores; a negative count truncated to 0
    "fullwidth rank": ("\uff10 send 1 0 8\n1 recv 0 0 8\n",
                       "line 1: the rank '\uff10' is not an integer (SimGrid writes ranks as "
                       "0, 1, ...)"),
    "underscored rank": ("1_0 init\n", "line 1: the rank '1_0' is not an integer (SimGrid "
                                       "writes ranks as 0, 1, ...)"),
    # '+0' was rank 0 here, but SimGrid gives a line to the rank its first field spells
    # exactly ('0'): the line was replayed here and by no rank there
    "signed rank": ("+0 send 1 0 8\n1 recv 0 0 8\n",
                    "line 1: the rank '+0' has a sign (SimGrid writes ranks as 0, 1, ... and "
                    "replays a line only for the rank its first field spells exactly: '+0' is "
                    "no rank's)"),
    "negative zero rank": ("0 init\n-0 init\n",
                           "line 2: the rank '-0' has a sign (SimGrid writes ranks as 0, 1, ... "
                           "and replays a line only for the rank its first field spells "
                           "exactly: '-0' is no rank's)"),
    "negative rank": ("-1 init\n", "line 1: the rank '-1' has a sign (SimGrid writes ranks as "
                                   "0, 1, ... and replays a line only for the rank its first "
                                   "field spells exactly: '-1' is no rank's)"),
    "signed unicode rank": ("+\u0661 init\n", "line 1: the rank '+\u0661' is not an integer "
                                              "(SimGrid writes ranks as 0, 1, ...)"),
    "underscored count": ("0 send 1 0 1_000\n1 recv 0 0 1000\n",
                          "line 1 (rank 0, send): count '1_000' is not a decimal number "
                          "(ASCII digits)"),
    "arabic count": ("0 send 1 0 \u0668\n1 recv 0 0 8\n",
                     "line 1 (rank 0, send): count '\u0668' is not a decimal number (ASCII "
                     "digits)"),
    "negative fraction count": ("0 send 1 0 -0.5\n1 recv 0 0 0\n",
                                "line 1 (rank 0, send): negative count -0.5 (a receive of "
                                "unknown size) is not supported"),
    "negative fraction tag": ("0 send 1 -0.5 8\n1 recv 0 0 8\n",
                              "line 1 (rank 0, send): tag -0.5 is outside 0 .. 2**31 - 1"),
    "negative fraction peer": ("0 send -0.5 0 8\n1 recv 0 0 8\n",
                               "line 1 (rank 0, send): unknown rank -0.5 (a negative rank)"),
    "fullwidth flops": ("0 compute \uff15\n", "line 1 (rank 0, compute): flops '\uff15' is not "
                                             "a decimal number (ASCII digits)"),
    "nan seconds": ("0 sleep nan\n", "line 1 (rank 0, sleep): seconds 'nan' is not a decimal "
                                    "number (ASCII digits)"),
}


@pytest.mark.parametrize("case", sorted(NUMBERS))
def test_numbers_are_ascii_and_counts_never_negative(tmp_path, case):
    text, expected = NUMBERS[case]
    f = write(tmp_path, text)
    with pytest.raises(ConfigError) as e:
        read_ti(f)
    assert (e.value.source, e.value.message) == (str(f), expected)


def test_simgrid_numbers_still_read_as_simgrid_does(tmp_path):
    """What SimGrid's parse_double takes stays: an exponent, a fraction (truncated), a sign
    (in a peer, which SimGrid reads with std::stoi; not in a line's rank, see NUMBERS)."""
    p = read_ti(write(tmp_path, "0 send 1 7.9 1e3\n1 recv +0 7 1000.5\n0 compute 2.5E3\n"))
    assert p.op_bytes.tolist() == [1000, 0, 1000]
    assert p.op_tag.tolist() == [7, 0, 7]
    assert p.op_time_ps.tolist() == [0, 2_500_000, 0]


def test_a_byte_order_mark_is_refused(tmp_path):
    """SimGrid does not skip it: its first line's rank would be ``\\ufeff0``, no rank's,
    and the send would not be replayed there (the reader used to skip it)."""
    f = tmp_path / "t.txt"
    f.write_bytes(b"\xef\xbb\xbf0 send 1 0 8\n1 recv 0 0 8\n")
    with pytest.raises(ConfigError, match="byte-order mark"):
        read_ti(f)
