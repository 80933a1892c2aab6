"""DUMPI traces (``dumpi2ascii`` output) read into rank programs (``federation.programs.dumpi``):
a hand-written 3-rank trace read to exact operations and edges, collectives expanded per rank,
refusals naming the file and line (one message, exit 2), the ``program`` workload reading a
trace folder, and ``federation export`` writing any program as GOAL (read back the same)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import one_error, run_cli
from test_collectives import as_sets

from federation.errors import ConfigError
from federation.programs.builder import ProgramBuilder
from federation.programs.checks import check_programs
from federation.programs.collectives import allreduce
from federation.programs.dumpi import COLLECTIVE_TAG, read_dumpi
from federation.programs.goal import read_goal

RING = Path(__file__).parent / "data" / "dumpi" / "ring"


def test_ring_trace_to_exact_programs():
    p = read_dumpi(RING)
    b = ProgramBuilder(3)
    for r in range(3):
        rb = b.rank(r)
        rb.compute_ps(10_000_000)  # 1 us -> 11 us between MPI_Comm_rank and MPI_Irecv
        h1 = rb.irecv((r - 1) % 3, 32, 7)  # 4 x MPI_DOUBLE
        h2 = rb.isend((r + 1) % 3, 32, 7)
        rb.wait(h1, h2)
        rb.compute_ps(2_500_000)  # 15 us -> 17.5 us
    allreduce(b, None, 4, algorithm="recursive_doubling", tag=COLLECTIVE_TAG)  # MPI_INT
    assert as_sets(p) == as_sets(b.build())
    assert p.op_label[1] == "dumpi-2024-0000.txt:9" and int(p.op_line[1]) == 9
    check_programs(p, 3)


def test_compute_scale_and_algorithm_choice():
    p = read_dumpi(RING, compute_scale=0.5, algorithms={"allreduce": "ring"})
    comp = p.op_time_ps[p.op_kind == 2]
    assert sorted(set(comp.tolist())) == [1_250_000, 5_000_000]
    # ring of one MPI_INT over 3 ranks, split in whole elements: pieces 4, 0, 0 B;
    # reduce-scatter: 2 exchanges per rank (the empty pieces too), allgather: the empty pieces
    # skipped, the one piece sent on twice (2 sends and 2 receives in all)
    assert int((p.op_tag >= COLLECTIVE_TAG).sum()) == 3 * 2 * 2 + 2 * 2
    sent = p.op_bytes[(p.op_tag >= COLLECTIVE_TAG) & (p.op_kind == 0)]
    assert sorted(sent.tolist()) == [0] * 4 + [4] * 4


def copy_ring(tmp_path: Path) -> Path:
    d = tmp_path / "t"
    shutil.copytree(RING, d)
    return d


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


@pytest.mark.parametrize("change,file,words", [
    (("int source=2", "int source=-1 (MPI_ANY_SOURCE)"), "0000",
     "line 12: MPI_Irecv: source -1 is a wildcard"),
    (("MPI_Datatype datatype=11 (MPI_DOUBLE)", "MPI_Datatype datatype=40 (user-defined)"),
     "0001", "line 11: MPI_Irecv: the size of datatype 40 (user-defined) is unknown"),
    (("MPI_Op op=3 (MPI_SUM)\nMPI_Comm comm=2 (MPI_COMM_WORLD)",
      "MPI_Op op=3 (MPI_SUM)\nMPI_Comm comm=5 (user-comm)"),
     "0002", "line 34: MPI_Allreduce on communicator 5 (user-comm)"),
    (("MPI_Waitall entering", "MPI_Waitany entering"), "0000", "MPI_Waitall returns inside"),
    (("MPI_Request requests[2]=[0, 1]", "MPI_Request requests[2]=[0, 9]"), "0001",
     "line 27: MPI_Waitall: request 9 was not started"),
    (("int tag=7", "int tag=-1 (MPI_ANY_TAG)"), "0002", "line 13: MPI_Irecv: tag -1"),
    (("MPI_Finalize returning at walltime 0.000020000, cputime 0.000000000 seconds in "
      "thread 0.\n", ""), "0000", "line 36: MPI_Finalize never returns"),
    (("int count=4\n", "int count=4\nbogus\n"), "0000", "line 11: not a parameter of "
     "MPI_Irecv: 'bogus'"),
])
def test_refusals_name_the_file_and_line(tmp_path, change, file, words):
    d = copy_ring(tmp_path)
    edit(d / f"dumpi-2024-{file}.txt", *change)
    with pytest.raises(ConfigError) as e:
        read_dumpi(d)
    assert words in str(e.value) and f"dumpi-2024-{file}.txt" in str(e.value)


def test_waitany_is_refused(tmp_path):
    d = copy_ring(tmp_path)
    f = d / "dumpi-2024-0000.txt"
    f.write_text(f.read_text().replace("MPI_Waitall", "MPI_Waitany"))
    with pytest.raises(ConfigError, match="line 25: MPI_Waitany is not read"):
        read_dumpi(d)


def test_files_must_name_every_rank_once(tmp_path):
    d = copy_ring(tmp_path)
    (d / "dumpi-2024-0001.txt").rename(d / "dumpi-2024-0005.txt")
    with pytest.raises(ConfigError, match="no file for rank 1"):
        read_dumpi(d)
    (d / "dumpi-2024-0005.txt").rename(d / "x-0002.txt")
    with pytest.raises(ConfigError, match="both name rank 2"):
        read_dumpi(d)


def test_an_unmatched_receive_is_refused_with_its_line(tmp_path):
    d = copy_ring(tmp_path)
    edit(d / "dumpi-2024-0001.txt", "int dest=2", "int dest=0")  # rank 2's irecv is alone
    p = read_dumpi(d)
    with pytest.raises(ConfigError) as e:
        check_programs(p, 3)
    assert "dumpi-2024-000" in str(e.value) and ":" in str(e.value)
    assert "receive" in str(e.value) or "send" in str(e.value)


def experiment(tmp_path: Path, trace: str) -> Path:
    doc = {"schema_version": 1, "name": "d",
           "machine": {"topology": {"kind": "dragonfly", "p": 2, "a": 4, "h": 2}},
           "routing": {"algorithm": "minimal"},
           "workload": {"kind": "program", "path": trace}}
    (tmp_path / "e.yaml").write_text(yaml.safe_dump(doc))
    return tmp_path / "e.yaml"


def test_program_workload_runs_a_trace_folder(tmp_path):
    copy_ring(tmp_path)
    e = experiment(tmp_path, "t")
    r = run_cli("run", str(e), "--out", "out", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    r = run_cli("comm", "t", cwd=tmp_path)
    assert "3 ranks, 20 operations, 7 messages" in r.stdout


def test_an_unmatched_receive_through_validate_is_one_message(tmp_path):
    d = copy_ring(tmp_path)
    edit(d / "dumpi-2024-0001.txt", "int dest=2", "int dest=0")
    line = one_error(run_cli("validate", str(experiment(tmp_path, "t")), cwd=tmp_path))
    assert "dumpi-2024-000" in line


def test_export_to_goal_reads_back_the_same_programs(tmp_path):
    r = run_cli("export", str(RING), "--out", "ring.goal", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    back = read_goal(tmp_path / "ring.goal")
    mine = read_dumpi(RING)
    for f in ("rank_first", "op_kind", "op_peer", "op_bytes", "op_tag", "op_time_ps"):
        assert np.array_equal(getattr(back, f), getattr(mine, f)), f
    assert as_sets(back)[1] == as_sets(mine)[1]
    line = one_error(run_cli("export", str(RING), "--out", "ring.goal", cwd=tmp_path))
    assert "exists" in line
    line = one_error(run_cli("export", str(RING), "--out", "x.goal", "--calc-unit", "1us",
                             cwd=tmp_path))
    assert "not a whole number of 1us" in line and "1ps" in line


def test_export_an_experiment_with_drawn_compute(tmp_path):
    doc = {"schema_version": 1, "name": "d", "seed": 4,
           "machine": {"topology": {"kind": "dragonfly", "p": 2, "a": 4, "h": 2}},
           "routing": {"algorithm": "minimal"},
           "workload": {"kind": "nekbone", "ranks": 8, "iterations": 2,
                        "compute": {"dist": "normal", "mean": "5us", "std": "1us"}}}
    (tmp_path / "e.yaml").write_text(yaml.safe_dump(doc))
    r = run_cli("export", "e.yaml", "--out", "n.goal", "--calc-unit", "1ps", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    back = read_goal(tmp_path / "n.goal", calc_unit_ps=1)
    assert back.n_ranks == 8 and len(set(back.op_time_ps[back.op_kind == 2].tolist())) == 16


# --------------------------------------------------------------------------- where refusals point


def test_a_pair_refusal_names_each_rank_file_not_the_folder(tmp_path):
    """A refusal about operations of a trace folder named ``FOLDER:17`` (a line of no file);
    each operation now names its rank's file, and a compute its call's line."""
    d = copy_ring(tmp_path)
    edit(d / "dumpi-2024-0000.txt", "int count=4", "int count=0")  # rank 0's irecv: 0 B
    p = read_dumpi(d)
    assert p.rank_source == [str(d / f"dumpi-2024-000{r}.txt") for r in range(3)]
    assert p.op_kind[0] == 2 and int(p.op_line[0]) == 9  # the gap before MPI_Irecv
    with pytest.raises(ConfigError) as e:
        check_programs(p, 3)
    assert e.value.source == str(d)
    assert e.value.message.startswith(
        f"rank 2 operation dumpi-2024-0002.txt:17 (send 32 B to rank 0 tag 7, "
        f"{d}/dumpi-2024-0002.txt:17) meets rank 0 operation dumpi-2024-0000.txt:9 (recv 0 B "
        f"from rank 2 tag 7, {d}/dumpi-2024-0000.txt:9): a send larger than its receive")


def test_a_gap_beyond_the_clock_names_the_file_and_lines(tmp_path):
    """A 20 s gap was refused by the checks as rank 0's "operation 6" with no file or
    line; the reader refuses it at the call that ends it."""
    d = copy_ring(tmp_path)
    edit(d / "dumpi-2024-0000.txt", "MPI_Finalize entering at walltime 0.000020000",
         "MPI_Finalize entering at walltime 20.0")
    with pytest.raises(ConfigError) as e:
        read_dumpi(d)
    assert (e.value.source, e.value.path) == (str(d / "dumpi-2024-0000.txt"), None)
    assert e.value.message == (
        "line 36: MPI_Finalize enters 19999980000 ns after the return at line 35: that "
        "compute (19999980000000 ps) is beyond the engine's clock range (8796093022208 ps = "
        "8.796 s of simulated time)")


def test_a_scale_that_takes_a_gap_past_the_clock_names_compute_scale(tmp_path):
    """compute_scale 1e6 makes the 10 us gap before rank 0's MPI_Irecv 1e13 ps: refused
    naming the field, the product and where (it was "time_ps ... is not a whole number
    within int64" without either, for 1e30)."""
    with pytest.raises(ConfigError) as e:
        read_dumpi(RING, compute_scale=1e6)
    assert (e.value.source, e.value.path) == (None, "workload.compute_scale")
    assert e.value.message == (
        f"1e+06 turns the 10000 ns between the return at line 8 and MPI_Irecv at line 9 of "
        f"{RING}/dumpi-2024-0000.txt into 1e+13 ps of compute (gap x 1000 x compute_scale), "
        "beyond the engine's clock range (8796093022208 ps = 8.796 s of simulated time)")


def test_a_scale_beyond_the_clock_per_nanosecond_is_refused_when_loaded(tmp_path):
    """``compute_scale: 1e30`` is refused by ``validate``, before the trace is read, naming
    the field and the limit."""
    copy_ring(tmp_path)
    e = experiment(tmp_path, "t")
    doc = yaml.safe_load(e.read_text())
    doc["workload"]["compute_scale"] = 1e30
    e.write_text(yaml.safe_dump(doc))
    assert one_error(run_cli("validate", str(e), cwd=tmp_path)) == (
        f"error: {e}: workload.compute_scale: 1e+30 makes each nanosecond between two calls "
        "1e+33 ps of compute: even the shortest gap a trace records (1 ns) would be beyond "
        "the engine's clock range (8796093022208 ps = 8.796 s of simulated time); it must be "
        "below 8.796e+09")


def test_stacked_programs_keep_each_rank_file():
    """Programs stacked from parts (``concatenate``) keep each rank's file for messages."""
    from federation.programs.builder import concatenate

    p = read_dumpi(RING)
    both = concatenate([p, p])
    assert both.rank_source == 2 * [str(RING / f"dumpi-2024-000{r}.txt") for r in range(3)]
    assert both.describe(int(both.rank_first[4]) + 1).startswith(
        f"rank 4 operation dumpi-2024-0001.txt:9 (recv 32 B from rank 0 tag 7, "
        f"{RING}/dumpi-2024-0001.txt:9)")


@pytest.mark.parametrize(("algorithms", "path", "message"), [
    ({"allreduce": "nope"}, "workload.algorithms.allreduce",
     "allreduce has no algorithm 'nope' (one of auto, {})"),
    ({"scan": "ring"}, "workload.algorithms.scan", "'scan' is not a collective (one of {})"),
])
def test_an_unknown_collective_or_algorithm_lists_the_known_ones(tmp_path, algorithms, path,
                                                                 message):
    from federation.programs.collectives import ALGORITHMS

    copy_ring(tmp_path)
    e = experiment(tmp_path, "t")
    doc = yaml.safe_load(e.read_text())
    doc["workload"]["algorithms"] = algorithms
    e.write_text(yaml.safe_dump(doc))
    known = ", ".join(ALGORITHMS["allreduce"] if "allreduce" in algorithms else ALGORITHMS)
    assert one_error(run_cli("validate", str(e), cwd=tmp_path)) == \
        f"error: {e}: {path}: {message.format(known)}"


# --------------------------------------------------------------------------- fuzz findings

WHOLE = "(in ASCII digits, as dumpi2ascii prints an int)"


@pytest.mark.parametrize(("old", "new", "file", "message"), [
    # count=1e3 was read as 1, 0x10 as 0, '4 elements' as 4 (the leading digits)
    ("int count=4\n", "int count=1e3\n", "0000",
     f"line 10: MPI_Irecv: count='1e3' is not a whole number >= 0 {WHOLE}"),
    ("int count=4\n", "int count=0x10\n", "0000",
     f"line 10: MPI_Irecv: count='0x10' is not a whole number >= 0 {WHOLE}"),
    ("int count=4\n", "int count=4 elements\n", "0000",
     f"line 10: MPI_Irecv: count='4 elements' is not a whole number >= 0 {WHOLE}"),
    ("int count=4\n", "int count=-4\n", "0000",
     f"line 10: MPI_Irecv: count='-4' is not a whole number >= 0 {WHOLE}"),
    ("int count=4\n", "int count=\u0664\n", "0000",
     f"line 10: MPI_Irecv: count='\u0664' is not a whole number >= 0 {WHOLE}"),
    ("int count=4\n", "int count=99999999999\n", "0000",
     "line 10: MPI_Irecv: count=99999999999 is beyond a C int (-2147483648 .. 2147483647), "
     "which dumpi2ascii prints"),
    ("int dest=1\n", "int dest=1.0\n", "0000",
     f"line 20: MPI_Isend: dest='1.0' is not a whole decimal number {WHOLE}"),
    ("int source=2\n", "int source=2 (MPI_ANY_SOURCE)\n", "0000",
     f"line 12: MPI_Irecv: source='2 (MPI_ANY_SOURCE)' is not a whole decimal number {WHOLE}"),
    ("int tag=7\n", "int tag=7x\n", "0000",
     f"line 13: MPI_Irecv: tag='7x' is not a whole decimal number {WHOLE}"),
    ("MPI_Request requests[2]=[0, 1]", "MPI_Request requests[2]=[0, 1e0]", "0000",
     "line 27: MPI_Waitall: requests='[0, 1e0]' is not a list of whole numbers within a C "
     "int, in ASCII digits ('[0, 1]')"),
])
def test_numeric_parameters_are_whole_decimal_integers(tmp_path, old, new, file, message):
    d = copy_ring(tmp_path)
    edit(d / f"dumpi-2024-{file}.txt", old, new)
    with pytest.raises(ConfigError) as e:
        read_dumpi(d)
    assert (e.value.source, e.value.message) == (str(d / f"dumpi-2024-{file}.txt"), message)


BCAST = ("MPI_Init entering at walltime 0.000000000, cputime 0.000000000 seconds in thread 0.\n"
         "MPI_Init returning at walltime 0.000000000, cputime 0.000000000 seconds in thread 0.\n"
         "MPI_Bcast entering at walltime 0.000000000, cputime 0.000000000 seconds in thread 0.\n"
         "int count=8\nMPI_Datatype datatype=1 (MPI_BYTE)\nint root={root}\n"
         "MPI_Comm comm=2 (MPI_COMM_WORLD)\n"
         "MPI_Bcast returning at walltime 0.000000000, cputime 0.000000000 seconds in thread 0.\n")


def test_a_root_is_a_whole_number(tmp_path):
    d = tmp_path / "t"
    d.mkdir()
    for r in range(2):
        (d / f"t-{r}.txt").write_text(BCAST.format(root="1.5" if r else "0"))
    with pytest.raises(ConfigError) as e:
        read_dumpi(d)
    assert (e.value.source, e.value.message) == (
        str(d / "t-1.txt"), f"line 6: MPI_Bcast: root='1.5' is not a whole decimal number "
                            f"{WHOLE}")


def set_tag(d: Path, tag: str) -> None:
    for f in d.iterdir():
        f.write_text(f.read_text().replace("int tag=7\n", f"int tag={tag}\n"))


def clash(line: int, tag: str, where: str = "line 30") -> str:
    return (f"line {line}: MPI_Irecv: tag={tag} is above 1073741823 (2**30 - 1), the largest "
            f"application tag in a trace with collectives (MPI_Allreduce at {where}): their "
            "messages are tagged from 2**30 up, standing in for MPI's separate context for "
            "collectives, and could be paired with this tag's; without collectives, tags up "
            "to 2**31 - 1 are read (MPI guarantees 32767, MPI_TAG_UB)")


@pytest.mark.parametrize("tag", ["1073741824", "2147483647"])
def test_an_application_tag_in_the_collectives_range_is_refused(tmp_path, tag):
    """A tag of 2**30 or more met the collectives' own tags (an application send was paired
    with a bcast's receive, refused as a truncation): refused at the tag, naming the
    collective read after it."""
    d = copy_ring(tmp_path)
    set_tag(d, tag)
    with pytest.raises(ConfigError) as e:
        read_dumpi(d)
    assert (e.value.source, e.value.message) == (str(d / "dumpi-2024-0000.txt"),
                                                 clash(13, tag))


def test_a_tag_after_a_collective_in_another_file_names_both(tmp_path):
    """Rank 0's file (read first) has the collective, rank 1's the tag: refused at the tag's
    file and line, naming the collective's file."""
    d = copy_ring(tmp_path)
    f = d / "dumpi-2024-0001.txt"
    f.write_text(f.read_text().replace("int tag=7\n", "int tag=1073741824\n"))
    with pytest.raises(ConfigError) as e:
        read_dumpi(d)
    assert (e.value.source, e.value.message) == (
        str(f), clash(13, "1073741824", "dumpi-2024-0000.txt line 30"))


def drop_collectives(d: Path) -> None:
    for f in d.iterdir():
        text = re.sub(r"MPI_Allreduce entering.*?MPI_Allreduce returning[^\n]*\n", "",
                      f.read_text(), flags=re.S)
        assert "Allreduce" not in text
        f.write_text(text)


@pytest.mark.parametrize("tag", [2**30, 2**31 - 1])
def test_tags_up_to_int32_are_read_in_a_trace_without_collectives(tmp_path, tag):
    """Nothing else uses tags from 2**30 up when the trace has no collective: they were
    refused all the same.  Up to 2**31 - 1, the largest C int (the programs' op_tag is
    int32; the engines match on channel numbers)."""
    d = copy_ring(tmp_path)
    drop_collectives(d)
    set_tag(d, str(tag))
    p = read_dumpi(d)
    assert p.op_tag[p.op_kind != 2].tolist() == 6 * [tag]
    check_programs(p, 3)


@pytest.mark.parametrize("tag", ["2147483648", "99999999999"])
def test_a_tag_beyond_int32_is_refused_naming_the_limit(tmp_path, tag):
    """Beyond a C int, with or without collectives (it was refused by the program arrays,
    naming the experiment and no line)."""
    for coll in (True, False):
        d = copy_ring(tmp_path / str(coll))
        if not coll:
            drop_collectives(d)
        set_tag(d, tag)
        with pytest.raises(ConfigError) as e:
            read_dumpi(d)
        assert (e.value.source, e.value.message) == (
            str(d / "dumpi-2024-0000.txt"),
            f"line 13: MPI_Irecv: tag={tag} is above 2147483647 (2**31 - 1), the largest tag: "
            "tags are C ints, as MPI and dumpi2ascii have them, and the programs keep them as "
            "int32")


def test_a_collective_without_messages_leaves_the_range_free(tmp_path):
    """A barrier on MPI_COMM_SELF (no operation) writes no message: tags from 2**30 up
    conflict with nothing."""
    d = copy_ring(tmp_path)
    for f in d.iterdir():
        f.write_text(f.read_text().replace("MPI_Op op=3 (MPI_SUM)\nMPI_Comm comm=2 "
                                           "(MPI_COMM_WORLD)", "MPI_Op op=3 (MPI_SUM)\n"
                                           "MPI_Comm comm=1 (MPI_COMM_SELF)"))
    set_tag(d, str(2**30))
    assert int((read_dumpi(d).op_tag == 2**30).sum()) == 6


def test_the_largest_application_tag_runs_beside_a_collective(tmp_path):
    d = copy_ring(tmp_path)
    set_tag(d, str(COLLECTIVE_TAG - 1))
    p = read_dumpi(d)
    assert int((p.op_tag == COLLECTIVE_TAG - 1).sum()) == 6
    check_programs(p, 3)


def test_a_walltime_going_backwards_is_refused(tmp_path):
    """An entry before the previous return dropped the compute between them silently."""
    d = copy_ring(tmp_path)
    edit(d / "dumpi-2024-0000.txt", "MPI_Allreduce entering at walltime 0.000017500",
         "MPI_Allreduce entering at walltime 0.000001500")
    with pytest.raises(ConfigError) as e:
        read_dumpi(d)
    assert (e.value.source, e.value.message) == (
        str(d / "dumpi-2024-0000.txt"),
        "line 30: MPI_Allreduce enters at walltime 0.000001500, before the previous call "
        "returned (line 29, walltime 0.000015000): walltimes must not go backwards")
    d = copy_ring(tmp_path / "b")
    edit(d / "dumpi-2024-0000.txt", "MPI_Waitall returning at walltime 0.000015000",
         "MPI_Waitall returning at walltime 0.000011000")
    with pytest.raises(ConfigError) as e:
        read_dumpi(d)
    assert e.value.message == (
        "line 29: MPI_Waitall returns at walltime 0.000011000, before it entered (line 25, "
        "walltime 0.000011200): walltimes must not go backwards")


def test_a_parameter_given_twice_in_a_call_is_refused(tmp_path):
    """The last of two 'int count=' lines won silently (64 B messages instead of 32 B)."""
    d = copy_ring(tmp_path)
    edit(d / "dumpi-2024-0000.txt", "int count=4\n", "int count=4\nint count=8\n")
    with pytest.raises(ConfigError) as e:
        read_dumpi(d)
    assert (e.value.source, e.value.message) == (
        str(d / "dumpi-2024-0000.txt"),
        "line 11: MPI_Irecv: a second 'count' (the first is at line 10): which one the call "
        "had is unknown")


def test_a_byte_order_mark_is_skipped(tmp_path):
    d = copy_ring(tmp_path)
    f = d / "dumpi-2024-0001.txt"
    f.write_bytes(b"\xef\xbb\xbf" + f.read_bytes())
    p, q = read_dumpi(d), read_dumpi(RING)
    assert as_sets(p) == as_sets(q) and p.op_line.tolist() == q.op_line.tolist()


def write_trace(d: Path, n: int, call: str, params) -> Path:  # noqa: ANN001
    """``n`` rank files with MPI_Init, one ``call`` with ``params(rank)`` (lines), MPI_Finalize,
    each call 1 us after the previous one returned."""
    d.mkdir()
    for r in range(n):
        lines, t = [], 0
        for name, body in (("MPI_Init", []), (call, params(r)), ("MPI_Finalize", [])):
            lines.append(f"{name} entering at walltime 0.{t:09d}, cputime 0.000000000 seconds "
                         "in thread 0.")
            lines += body
            lines.append(f"{name} returning at walltime 0.{t + 1000:09d}, cputime 0.000000000 "
                         "seconds in thread 0.")
            t += 2000
        (d / f"dumpi-0000-{r:04d}.txt").write_text("\n".join(lines) + "\n")
    return d


def collective_ops(p) -> list[tuple]:  # noqa: ANN001
    ops, _ = as_sets(p)
    return sorted(o[:5] for o in ops if o[1] in (0, 1) and o[4] >= COLLECTIVE_TAG)


DOUBLE = "11 (MPI_DOUBLE)"
NULL_TYPE = "0 (MPI_DATATYPE_NULL)"
WORLD = "MPI_Comm comm=2 (MPI_COMM_WORLD)"


def counts(send: int, stype: str, recv: int, rtype: str, root: int | None = None) -> list[str]:
    return [f"int sendcount={send}", f"MPI_Datatype sendtype={stype}", f"int recvcount={recv}",
            f"MPI_Datatype recvtype={rtype}",
            *([f"int root={root}"] if root is not None else []), WORLD]


@pytest.mark.parametrize("call, params, op, nbytes, algorithm", [
    # 5 doubles by ring over 4 ranks: pieces of whole doubles, 16, 16, 8, 0 B (MPICH's split);
    # they were cut as 5 x 8 bytes, 10 B each
    ("MPI_Allreduce", lambda r: ["int count=5", f"MPI_Datatype datatype={DOUBLE}",
                                 "MPI_Op op=3 (MPI_SUM)", WORLD], "allreduce", 40, "ring"),
    # MPI reads a scatter's send side at the root only: the others may pass 0, NULL (they were
    # sized by their own sendcount, and refused as unmatched)
    ("MPI_Scatter", lambda r: counts(100 if r == 1 else 0, DOUBLE if r == 1 else NULL_TYPE,
                                     100, DOUBLE, root=1), "scatter", 800, "auto"),
    # a gather's receive side at the root (whose send side MPI_IN_PLACE leaves unread)
    ("MPI_Gather", lambda r: counts(0 if r == 2 else 100, NULL_TYPE if r == 2 else DOUBLE,
                                    100 if r == 2 else 0, DOUBLE if r == 2 else NULL_TYPE,
                                    root=2), "gather", 800, "auto"),
    # an in-place allgather: only the receive side is read (it wrote no message at all)
    ("MPI_Allgather", lambda r: counts(0, NULL_TYPE, 100, DOUBLE), "allgather", 800, "auto"),
])
def test_collectives_are_sized_as_mpi_reads_them(tmp_path, call, params, op, nbytes,
                                                 algorithm):
    from federation.programs.collectives import collective

    d = write_trace(tmp_path / "t", 4, call, params)
    got = read_dumpi(d, algorithms={op: algorithm})
    b = ProgramBuilder(4)
    root = {"scatter": 1, "gather": 2}.get(op, 0)
    collective(b, op, None, nbytes, algorithm=algorithm, root=root, tag=COLLECTIVE_TAG,
               datatype_size=8)
    assert collective_ops(got) == collective_ops(b.build())
    assert collective_ops(got)  # it writes messages
    check_programs(got, 4)


def test_the_auto_choice_counts_elements_not_bytes(tmp_path):
    """3 elements of a 1 KiB type on 12 ranks: MPICH's allreduce takes recursive doubling
    (count 3 < pof2 8), which the collective workload does too; counted as 3,072 elements it
    was Rabenseifner, which refuses 3 elements."""
    from federation.programs.collectives import collective

    d = write_trace(tmp_path / "t", 12, "MPI_Allreduce", lambda r: [
        "int count=3", "MPI_Datatype datatype=100 (user-type)", "MPI_Op op=3 (MPI_SUM)", WORLD])
    got = read_dumpi(d, datatype_sizes={100: 1024})
    b = ProgramBuilder(12)
    collective(b, "allreduce", None, 3072, algorithm="recursive_doubling", tag=COLLECTIVE_TAG,
               datatype_size=1024)
    assert collective_ops(got) == collective_ops(b.build())
    assert {o[3] for o in collective_ops(got)} == {3072}


def test_a_sendrecv_on_comm_self_is_refused_as_a_send_is(tmp_path):
    """Its dest and source were read as world ranks: a 0 -> 0 message through the NIC on rank
    0, an unmatched receive from rank 0 on rank 1."""
    d = write_trace(tmp_path / "t", 2, "MPI_Sendrecv", lambda r: [
        "int sendcount=4", f"MPI_Datatype sendtype={DOUBLE}", "int dest=0", "int sendtag=1",
        "int recvcount=4", f"MPI_Datatype recvtype={DOUBLE}", "int source=0", "int recvtag=1",
        "MPI_Comm comm=1 (MPI_COMM_SELF)"])
    with pytest.raises(ConfigError) as e:
        read_dumpi(d)
    assert e.value.message.endswith("line 3: MPI_Sendrecv on MPI_COMM_SELF: a rank's message "
                                    "to itself")
