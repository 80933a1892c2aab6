"""GOAL schedules: a hand-written file gives the stated arrays, write then read is the
identity, and every refusal names the line."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from test_programs_checks import programs

from federation.errors import ConfigError
from federation.programs.checks import check_programs
from federation.programs.goal import format_goal, parse_goal, read_goal, write_goal

DATA = __import__("pathlib").Path(__file__).parent / "data" / "programs"
ARRAYS = ("rank_first", "op_kind", "op_peer", "op_bytes", "op_tag", "op_time_ps",
          "dep_before", "dep_after", "dep_kind")


def test_hand_written_file_gives_the_exact_arrays():
    p = read_goal(DATA / "hand.goal")
    assert p.rank_first.tolist() == [0, 3, 6]
    assert p.op_kind.tolist() == [0, 2, 1, 1, 2, 0]
    assert p.op_peer.tolist() == [1, -1, 1, 0, -1, 0]
    assert p.op_bytes.tolist() == [64, 0, 8, 64, 0, 8]
    assert p.op_tag.tolist() == [5, 0, 6, 5, 0, 6]
    assert p.op_time_ps.tolist() == [0, 250_000, 0, 0, 1_000_000, 0]
    assert p.dep_before.tolist() == [0, 1, 3, 4]
    assert p.dep_after.tolist() == [1, 2, 4, 5]
    assert p.dep_kind.tolist() == [0, 1, 0, 0]
    assert p.op_label == ["l1", "l2", "l3", "r1", "r2", "r3"]
    assert p.op_line.tolist() == [5, 6, 7, 15, 16, 17]
    assert p.source == str(DATA / "hand.goal")
    check_programs(p, 2)


def test_calc_unit_is_a_parameter():
    p = read_goal(DATA / "hand.goal", calc_unit_ps=1)
    assert p.op_time_ps.tolist() == [0, 250, 0, 0, 1000, 0]


def test_compact_form_with_semicolons():
    p = parse_goal("num_ranks 1\nrank 0 { a: calc 1; b: calc 2; b irequires a }\n")
    assert p.op_time_ps.tolist() == [1000, 2000]
    assert (p.dep_before.tolist(), p.dep_after.tolist(), p.dep_kind.tolist()) == \
        ([0], [1], [1])


def test_reference_schedule_shape():
    """LogGOPSim's binary_tree_32.goal pattern (first lines): rank 1 forwards what it got."""
    text = ("num_ranks 4\n\nrank 0 {\nl1: send 1b to 1 tag 0\nl2: send 1b to 2 tag 0\n}\n\n"
            "rank 1 {\nl1: recv 1b from 0 tag 0\nl2: send 1b to 3 tag 0\nl2 requires l1\n}\n"
            "rank 2 {\nl1: recv 1b from 0 tag 0\n}\nrank 3 {\nl1: recv 1b from 1 tag 0\n}\n")
    p = parse_goal(text)
    assert p.rank_first.tolist() == [0, 2, 4, 5, 6]
    assert p.n_deps == 1
    check_programs(p, 4)


@settings(max_examples=100, deadline=None)
@given(programs())
def test_write_then_read_is_the_identity(p):
    p.op_time_ps = p.op_time_ps * 1000  # whole nanoseconds
    q = parse_goal(format_goal(p))
    for f in ARRAYS:
        assert np.array_equal(getattr(p, f), getattr(q, f)), f
    assert verdict(q) == verdict(p)  # the same checks pass or fail (random ones may deadlock)


def verdict(p) -> str | None:
    """Which check refuses ``p`` (None: accepted); labels differ after the round trip."""
    try:
        check_programs(p, p.n_ranks)
    except ConfigError as exc:
        return "truncate" if "MPI_ERR_TRUNCATE" in exc.message else \
            "deadlock" if "deadlock" in exc.message else exc.message
    return None


def test_write_goal_file(tmp_path):
    p = read_goal(DATA / "hand.goal")
    write_goal(p, tmp_path / "o.goal")
    q = read_goal(tmp_path / "o.goal")
    for f in ARRAYS:
        assert np.array_equal(getattr(p, f), getattr(q, f)), f
    with pytest.raises(ValueError, match="not a whole number of calc units"):
        format_goal(p, calc_unit_ps=300_000)


HEAD = "num_ranks 2\nrank 0 {\n"
BAD = {
    "syntax": (HEAD + "l1: send 8 to 1\n}\n", "line 3 (rank 0): cannot read 'l1: send 8 to 1'"),
    "undefined label": (HEAD + "l1: calc 1\nl1 requires l9\n}\n",
                        "line 4 (rank 0): label l9 is not defined above"),
    "label used before definition": (HEAD + "l2 requires l1\nl1: calc 1\nl2: calc 1\n}\n",
                                     "line 3 (rank 0): label l2 is not defined above"),
    "duplicate label": (HEAD + "l1: calc 1\nl1: calc 2\n}\n",
                        "line 4 (rank 0): label l1 is defined twice"),
    "rank block out of range": ("num_ranks 2\nrank 2 {\n}\n",
                                "line 2: rank 2 is outside num_ranks 2"),
    "peer out of range": (HEAD + "l1: send 8b to 7\n}\n", "line 3 (rank 0): rank 7 is outside"),
    "second block": ("num_ranks 2\nrank 0 {\n}\nrank 0 {\n}\n",
                     "line 4: a second block for rank 0"),
    "wildcard": (HEAD + "l1: recv 8b from 1 tag -1\n}\n", "line 3 (rank 0): receive with any tag"),
    # a send with a negative tag or rank was refused as a receive's wildcard, on a send's line
    "send's negative tag": (HEAD + "l1: send 8b to 1 tag -5\n}\n",
                            "line 3 (rank 0): send with tag -5: a send's tag must be 0 or more "
                            "(a negative tag is a receive's any-tag wildcard; on a send it "
                            "means nothing)"),
    "send to a negative rank": (HEAD + "l1: send 8b to -1\n}\n",
                                "line 3 (rank 0): send to rank -1: a send goes to one rank, 0 "
                                "to num_ranks - 1 (a negative rank is a receive's any-source "
                                "wildcard)"),
    "wildcard tag value": (HEAD + "l1: recv 8b from 1 tag -5\n}\n",
                           "line 3 (rank 0): receive with any tag (tag -5) is not supported"),
    "second cpu": (HEAD + "l1: calc 5 cpu 1\n}\n", "line 3 (rank 0): cpu 1: one CPU per rank"),
    "unclosed": (HEAD + "l1: calc 5\n", "line 2 (rank 0): rank 0's block is not closed"),
    "no num_ranks": ("rank 0 {\n}\n", "line 1: 'rank' before 'num_ranks N'"),
    "cycle": (HEAD + "a: calc 1\nb: calc 1\nb requires a\na requires b\n}\n",
              "dependency cycle: rank 0 operation a (compute 1000 ps, s.goal:3)"),
    "unmatched send": (HEAD + "a: send 8b to 1 tag 3\n}\n",
                       "rank 0 operation a (send 8 B to rank 1 tag 3, s.goal:3): no receive "
                       "takes this send"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_refusals_name_the_line(case):
    text, expected = BAD[case]
    with pytest.raises(ConfigError) as e:
        check_programs(parse_goal(text, source="s.goal"), 4)
    assert str(e.value).startswith("s.goal: "), str(e.value)
    assert expected in str(e.value), str(e.value)


# --------------------------------------------------------------------------- workload program

MACHINE = "topology: {kind: dragonfly, p: 2, a: 4, h: 2}\n"


def experiment(tmp_path, workload):
    (tmp_path / "m.yaml").write_text(MACHINE)
    (tmp_path / "e.yaml").write_text(f"machine: m.yaml\nworkload: {workload}\n"
                                     "stop: {warmup: 0.1us, measure: 0.5us}\n")
    from federation.pipeline.build import build
    from federation.pipeline.load import load_experiment
    from federation.plugin.components import WorkloadContext
    point = load_experiment(tmp_path / "e.yaml").points[0]
    built = build(point, 2**33)
    ctx = WorkloadContext(built.network, point.machine.machine, point.experiment, 0,
                          built.nic_bandwidth, np.random.default_rng(0))
    return point.workload, ctx


def test_workload_program_reads_goal_relative_to_the_experiment(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "s.goal").write_text((DATA / "hand.goal").read_text())
    w, ctx = experiment(tmp_path, "{kind: program, path: sub/s.goal, calc_unit: 1ps}")
    assert type(w).closed_loop is True
    p = w.programs(ctx)
    assert p.op_time_ps.tolist() == [0, 250, 0, 0, 1000, 0]
    assert p.source == str(tmp_path / "sub" / "s.goal")


def test_workload_program_reads_ti(tmp_path):
    (tmp_path / "p.txt").write_text((DATA / "pingpong.ti").read_text())
    w, ctx = experiment(tmp_path, "{kind: program, path: p.txt, host_speed: 2e9}")
    assert w.programs(ctx).op_time_ps.tolist() == [10**12, 0, 0, 0, 5 * 10**11, 0]


def test_workload_program_refuses_with_file_and_line(tmp_path):
    """The workload reads; the point's preflight (build_programs) checks, naming file and
    line.  num_ranks above the machine's nodes is refused by the reader, at its line,
    before anything is built for the ranks."""
    from federation.pipeline.build import build
    from federation.pipeline.load import load_experiment
    from federation.pipeline.rank_programs import build_programs

    (tmp_path / "s.goal").write_text("num_ranks 2\nrank 0 {\nl1: send 8b to 1 tag 0\n}\n")
    experiment(tmp_path, "{kind: program, path: s.goal}")
    point = load_experiment(tmp_path / "e.yaml").points[0]
    with pytest.raises(ConfigError) as e:
        build_programs(point, build(point, 2**33), 2**33)
    assert str(e.value).startswith(f"{tmp_path / 's.goal'}: workload: rank 0 operation l1 "
                                   f"(send 8 B to rank 1 tag 0, {tmp_path / 's.goal'}:3): no "
                                   "receive takes this send")
    (tmp_path / "big.goal").write_text("num_ranks 100\n")
    w, ctx = experiment(tmp_path, "{kind: program, path: big.goal, format: goal}")
    with pytest.raises(ConfigError) as e:
        w.programs(ctx)
    assert str(e.value) == (f"{tmp_path / 'big.goal'}: line 1: num_ranks 100, but the machine "
                            "has 72 nodes (rank i runs on node i)")


@pytest.mark.parametrize(("file", "fields", "path", "message"), [
    ("s.goal", "host_speed: 5, compute_scale: 7", "workload.compute_scale",
     "compute_scale applies to DUMPI traces (format dumpi) only; s.goal is read as format goal "
     "(auto: its '.goal' suffix), which ignores it: remove it, or give the format it belongs "
     "to"),
    ("s.goal", "format: goal, host_speed: 5", "workload.host_speed",
     "host_speed applies to SimGrid TI traces (format ti) only; s.goal is read as format goal, "
     "which ignores it: remove it, or give the format it belongs to"),
    ("p.txt", "calc_unit: 1ps", "workload.calc_unit",
     "calc_unit applies to GOAL schedules (format goal) only; p.txt is read as format ti "
     "(auto: neither a '.goal' suffix nor a folder), which ignores it: remove it, or give the "
     "format it belongs to"),
    ("p.txt", "algorithms: {allreduce: ring}", "workload.algorithms",
     "algorithms applies to DUMPI traces (format dumpi) only; p.txt is read as format ti "
     "(auto: neither a '.goal' suffix nor a folder), which ignores it: remove it, or give the "
     "format it belongs to"),
])
def test_a_field_of_another_format_is_refused(tmp_path, file, fields, path, message):
    """``host_speed``/``compute_scale`` on a GOAL schedule were silently ignored (the run
    looked scaled and was not): a field the file's format does not read is refused."""
    (tmp_path / "s.goal").write_text((DATA / "hand.goal").read_text())
    (tmp_path / "p.txt").write_text((DATA / "pingpong.ti").read_text())
    w, ctx = experiment(tmp_path, f"{{kind: program, path: {file}, {fields}}}")
    with pytest.raises(ConfigError) as e:
        w.programs(ctx)
    assert (e.value.path, e.value.message) == (path, message)


def test_every_field_at_its_default_reads_as_before(tmp_path):
    """A point's resolved document writes every field (the other formats' at their
    defaults), and runs again: a default is not refused, given or not."""
    (tmp_path / "s.goal").write_text((DATA / "hand.goal").read_text())
    w, ctx = experiment(tmp_path, "{kind: program, path: s.goal, host_speed: 1e9, "
                        "compute_scale: 1.0, datatype_sizes: {}, algorithms: {}}")
    assert w.programs(ctx).op_time_ps.tolist() == [0, 250_000, 0, 0, 1_000_000, 0]


# --------------------------------------------------------------------------- fuzz findings

GRAMMAR = ("expected 'num_ranks N', 'rank N {', '}', '[label:] send Nb to R [tag T]', "
           "'[label:] recv Nb from R [tag T]', '[label:] calc N', or 'label requires|irequires "
           "label'")


@pytest.mark.parametrize(("line", "where"), [
    ("a: send 8b to \u0661 tag 0", "line 3 (rank 0)"),  # Arabic-Indic one: read as 1
    ("a: send \uff18b to 1 tag 0", "line 3 (rank 0)"),  # fullwidth 8: read as 8
    ("a: send 8b to 1 tag \u0663", "line 3 (rank 0)"),
    ("a: calc \uff15", "line 3 (rank 0)"),
])
def test_numbers_are_ascii_digits(line, where):
    with pytest.raises(ConfigError) as e:
        parse_goal(f"num_ranks 2\nrank 0 {{\n{line}\n}}\n", source="s.goal")
    assert e.value.message == (f"{where}: cannot read {line!r}: {GRAMMAR} (numbers are written "
                               "in ASCII digits, 0-9)")


def test_unicode_digits_in_num_ranks_and_rank_blocks_are_refused():
    with pytest.raises(ConfigError) as e:
        parse_goal("num_ranks \uff12\n", source="s.goal")
    assert e.value.message.startswith("line 1: cannot read 'num_ranks \uff12'")
    with pytest.raises(ConfigError) as e:
        parse_goal("num_ranks 2\nrank \u0660 {\n}\n", source="s.goal")
    assert e.value.message.startswith("line 2: cannot read 'rank \u0660 {'")


def test_every_line_is_within_the_line_limit(tmp_path):
    """A 1,572,876-character line was accepted: only a line left over across a read block
    was measured.  One of exactly the limit is read."""
    from federation.programs.reading import MAX_LINE_CHARS

    f = tmp_path / "long.goal"
    comment = "// " + "x" * (MAX_LINE_CHARS + MAX_LINE_CHARS // 2 - 3)
    f.write_text(f"num_ranks 1\n{comment}\nrank 0 {{\nl1: calc 5\n}}\n")
    with pytest.raises(ConfigError) as e:
        read_goal(f)
    assert (e.value.source, e.value.message) == (
        str(f), "line 2 is longer than 1,048,576 characters: not a GOAL schedule (a binary "
                "file?)")
    f.write_text(f"num_ranks 1\n{comment[:MAX_LINE_CHARS]}\nrank 0 {{\nl1: calc 5\n}}\n")
    assert read_goal(f).op_line.tolist() == [4]


def test_a_byte_order_mark_is_skipped(tmp_path):
    """A file an editor saved with a BOM was refused quoting '\\ufeffnum_ranks 2'."""
    f = tmp_path / "bom.goal"
    f.write_bytes(b"\xef\xbb\xbf" + (DATA / "hand.goal").read_bytes())
    p, q = read_goal(f), read_goal(DATA / "hand.goal")
    for a in ARRAYS:
        assert np.array_equal(getattr(p, a), getattr(q, a)), a
    assert p.op_line.tolist() == q.op_line.tolist()
    r = parse_goal("\ufeff" + (DATA / "hand.goal").read_text())
    assert np.array_equal(r.op_bytes, q.op_bytes)


def test_tags_up_to_int32_stay_application_tags():
    """GOAL has no collectives (nor does a TI trace: they are refused), so no tag is reserved
    for them: tags up to 2**31 - 1 are read as given (an exported DUMPI trace's collective
    messages keep their tags from 2**30 up)."""
    p = parse_goal("num_ranks 2\nrank 0 {\nsend 8b to 1 tag 2147483647\n}\n"
                   "rank 1 {\nrecv 8b from 0 tag 1073741824\n}\n")
    assert p.op_tag.tolist() == [2**31 - 1, 2**30]


def test_a_lone_carriage_return_is_not_a_line_break(tmp_path):
    """LogGOPSim ends a line at '\\n' (a '\\r' before it allowed): read_goal read a lone
    '\\r' as a line break (three operations on lines 3-5) where parse_goal and LogGOPSim
    refuse line 3, and every later line number was off by one from theirs."""
    text = "num_ranks 1\nrank 0 {\na: calc 5\rb: calc 6\nc: calc 7\n}\n"
    f = tmp_path / "cr.goal"
    f.write_bytes(text.encode())
    with pytest.raises(ConfigError) as by_file:
        read_goal(f)
    with pytest.raises(ConfigError) as by_text:
        parse_goal(text)
    assert "line 3 (rank 0): cannot read 'a: calc 5\\rb: calc 6'" in str(by_file.value)
    assert by_file.value.message == by_text.value.message
    f.write_bytes(b"num_ranks 1\r\nrank 0 {\r\na: calc 5\r\nb: calc 6\r\nc: calc 7\r\n}\r\n")
    assert read_goal(f).n_ops == 3  # every line ended by '\r\n': read
