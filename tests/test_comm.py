"""The static communication summary (``federation.programs.analysis``) and ``federation comm``:
exact figures of hand-written programs, the command on an experiment and a schedule file,
the heat map written deterministically, and refusals (exit 2, one line)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml
from conftest import one_error, run_cli

from federation.programs.analysis import communication, describe
from federation.programs.builder import ProgramBuilder
from federation.programs.collectives import collective
from federation.programs.goal import read_goal


def small() -> ProgramBuilder:
    b = ProgramBuilder(4)
    b.rank(0).send(1, 100)
    b.rank(0).send(1, 50, tag=1)
    b.rank(0).send(3, 7)
    b.rank(1).recv(0, 100)
    b.rank(1).recv(0, 50, tag=1)
    b.rank(3).recv(0, 7)
    b.rank(2).compute_ps(1500)
    b.rank(2).send(3, 1000)
    b.rank(3).recv(2, 1000)
    return b


def test_exact_figures_of_a_small_program():
    s = communication(small().build())
    assert (s.n_ranks, s.operations, s.messages, s.bytes, s.compute_ps) == (4, 9, 4, 1157, 1500)
    assert s.sends.tolist() == [3, 0, 1, 0]
    assert s.sent_bytes.tolist() == [157, 0, 1000, 0]
    assert s.receives.tolist() == [0, 2, 0, 2]
    assert s.received_bytes.tolist() == [0, 150, 0, 1007]
    assert s.partners.tolist() == [2, 0, 1, 0]
    assert s.rank_compute_ps.tolist() == [0, 0, 1500, 0]
    assert list(zip(s.pair_src.tolist(), s.pair_dst.tolist(), s.pair_messages.tolist(),
                    s.pair_bytes.tolist(), strict=True)) == \
        [(0, 1, 2, 150), (0, 3, 1, 7), (2, 3, 1, 1000)]
    assert s.sizes.tolist() == [7, 50, 100, 1000] and s.size_counts.tolist() == [1, 1, 1, 1]
    m = s.matrix("bytes")
    assert m[0, 1] == 150 and m[2, 3] == 1000 and m.sum() == 1157
    assert s.matrix("messages", max_side=2).tolist() == [[2, 1], [0, 1]]
    text = "\n".join(describe(s))
    assert "4 ranks, 9 operations, 4 messages" in text and "rank 2 -> 3: 1 messages" in text


def test_matrix_of_an_alltoall_is_full_off_the_diagonal():
    b = ProgramBuilder(9)
    collective(b, "alltoall", None, 10, algorithm="pairwise")
    s = communication(b.build())
    m = s.matrix("messages")
    assert (m == 1 - np.eye(9, dtype=np.int64)).all()
    assert s.to_dict()["per_rank_stats"]["partners"] == {"min": 8, "mean": 8.0, "max": 8}


def test_empty_and_compute_only_programs():
    b = ProgramBuilder(2)
    b.rank(1).compute_ps(10)
    s = communication(b.build())
    assert s.messages == 0 and s.matrix().sum() == 0 and s.to_dict()["matrix"]["rows"] == []
    assert describe(s)[0].startswith("2 ranks, 1 operations, 0 messages")


def experiment(tmp_path, workload: dict) -> str:  # noqa: ANN001
    doc = {"schema_version": 1, "name": "c",
           "machine": {"topology": {"kind": "dragonfly", "p": 2, "a": 4, "h": 2}},
           "routing": {"algorithm": "minimal"}, "workload": workload}
    (tmp_path / "e.yaml").write_text(yaml.safe_dump(doc))
    return "e.yaml"


def test_command_on_an_experiment_text_json_and_plot(tmp_path):
    e = experiment(tmp_path, {"kind": "allreduce", "ranks": 16, "size": "8B",
                              "iterations": 3})
    r = run_cli("comm", e, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "e.yaml: workload allreduce" in r.stdout
    assert "16 ranks, 384 operations, 192 messages, 1.50 KiB (1,536 B)" in r.stdout
    r = run_cli("comm", e, "--json", cwd=tmp_path)
    doc = json.loads(r.stdout)
    assert doc["messages"] == 192 and doc["per_rank"]["sends"] == [12] * 16
    assert [0, 1, 3, 24] in doc["matrix"]["rows"]
    r = run_cli("comm", e, "--plot", "m/heat.png", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    first = (tmp_path / "m/heat.png").read_bytes()
    assert first[:4] == b"\x89PNG"
    line = one_error(run_cli("comm", e, "--plot", "m/heat.png", cwd=tmp_path))
    assert "exists" in line and "--overwrite" in line
    assert run_cli("comm", e, "--plot", "m/heat.png", "--overwrite", cwd=tmp_path).returncode == 0
    assert (tmp_path / "m/heat.png").read_bytes() == first  # the same file, byte for byte


def test_command_on_a_goal_schedule(tmp_path):
    (tmp_path / "s.goal").write_text("num_ranks 2\nrank 0 {\nl1: send 64b to 1\n}\n"
                                     "rank 1 {\nl1: recv 64b from 0\n}\n")
    r = run_cli("comm", "s.goal", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "s.goal (goal)" in r.stdout and "2 ranks, 2 operations, 1 messages, 64 B" in r.stdout


def test_a_goal_schedule_in_another_calc_unit(tmp_path):
    """``export --calc-unit 1ps`` writes calc in picoseconds; ``comm`` read every GOAL file in
    LogGOPSim's nanoseconds, a thousand times the compute, and had no way to say otherwise."""
    (tmp_path / "s.goal").write_text("num_ranks 2\nrank 0 {\nl1: calc 2500\n"
                                     "l2: send 64b to 1\nl2 requires l1\n}\n"
                                     "rank 1 {\nl1: recv 64b from 0\n}\n")

    def compute(*args: str) -> int:
        r = run_cli("comm", "s.goal", "--json", *args, cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)["compute_ps"]

    assert compute() == 2_500_000  # 2,500 ns
    assert compute("--calc-unit", "1ps") == 2_500
    assert compute("--calc-unit", "10ns") == 25_000_000
    assert compute("--calc-unit", "1.1ns") == 2_750_000  # 1,100 ps, whatever the float says
    # 1,000,000.4 ps was taken as 1,000,000 (a relative slack of 1e-6 let 0.4 ps pass)
    for args, words in ((["--calc-unit", "0.5ps"], "not a whole number of picoseconds"),
                        (["--calc-unit", "1.0000004us"], "not a whole number of picoseconds"),
                        (["--format", "ti", "--calc-unit", "1ps"], "applies to GOAL schedules")):
        assert words in one_error(run_cli("comm", "s.goal", *args, cwd=tmp_path))


def test_export_reads_a_goal_schedule_in_its_calc_unit(tmp_path):
    """``export`` read a GOAL input in nanoseconds only: a schedule an earlier ``export
    --calc-unit 1ps`` wrote came back with a thousand times its compute.  The round trip
    through picoseconds now gives back the first file, byte for byte."""
    (tmp_path / "s.goal").write_text("num_ranks 2\nrank 0 {\nl1: calc 2500\n"
                                     "l2: send 64b to 1\nl2 requires l1\n}\n"
                                     "rank 1 {\nl1: recv 64b from 0\n}\n")

    def export(src: str, dst: str, *args: str) -> str:
        r = run_cli("export", src, "--out", dst, *args, cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        return (tmp_path / dst).read_text()

    ns = export("s.goal", "ns.goal")
    assert "calc 2500" in ns
    ps = export("ns.goal", "ps.goal", "--calc-unit", "1ps")
    assert "calc 2500000" in ps
    assert export("ps.goal", "back.goal", "--input-calc-unit", "1ps") == ns
    # without it the input counts nanoseconds, as documented: 2,500,000 ns
    assert "calc 2500000000\n" in export("ps.goal", "ns_in.goal", "--calc-unit", "1ps")
    for args, words in ((["--input-calc-unit", "0.5ps"], "--input-calc-unit: 0.5ps is not"),
                        (["--format", "ti", "--input-calc-unit", "1ps"],
                         "--input-calc-unit: applies to GOAL schedules")):
        line = one_error(run_cli("export", "ps.goal", "--out", "x.goal", *args, cwd=tmp_path))
        assert words in line
    experiment(tmp_path, {"kind": "allreduce", "ranks": 4})
    line = one_error(run_cli("export", "e.yaml", "--out", "x.goal", "--input-calc-unit", "1ps",
                             cwd=tmp_path))
    assert "--input-calc-unit: applies to GOAL schedules" in line
    assert not (tmp_path / "x.goal").exists()


@pytest.mark.parametrize("args,words", [
    (["e.yaml", "--calc-unit", "1ps"], "--calc-unit: applies to GOAL schedules"),
    (["e.yaml", "--point", "3"], "--point: the experiment has 1 point(s)"),
    (["e.yaml", "--format", "otf2"], "--format: must be one of auto, goal, ti, dumpi"),
    (["e.yaml", "--plot", "x.jpg"], "--plot: the file name must end in .png, .svg or .pdf"),
    (["missing.goal"], "missing.goal: no such GOAL schedule file"),
])
def test_refusals(tmp_path, args, words):
    experiment(tmp_path, {"kind": "allreduce", "ranks": 4})
    line = one_error(run_cli("comm", *args, cwd=tmp_path))
    assert words in line


def test_open_loop_workload_is_refused(tmp_path):
    e = experiment(tmp_path, {"kind": "synthetic", "pattern": "uniform", "load": 0.1})
    line = one_error(run_cli("comm", e, cwd=tmp_path))
    assert "workload.kind" in line and "open loop" in line


def test_a_bad_program_is_refused_as_run_would(tmp_path):
    e = experiment(tmp_path, {"kind": "collective", "op": "allgather",
                              "algorithm": "recursive_doubling", "ranks": 12})
    line = one_error(run_cli("comm", e, cwd=tmp_path))
    assert "workload.algorithm" in line and "power-of-two" in line


#: (schedule, the message ``run`` and ``validate`` give for it, after the file's name)
BAD_SCHEDULES = [
    # rank 0 sends twice on (0, 1, tag 4), rank 1 receives once
    ("num_ranks 2\nrank 0 {\nl1: send 8b to 1 tag 4\nl2: send 8b to 1 tag 4\nl2 requires l1\n"
     "}\nrank 1 {\nl1: recv 8b from 0 tag 4\n}\n",
     "rank 0 operation l2 (send 8 B to rank 1 tag 4, s.goal:4): no receive takes this send "
     "(rank 0 sends 2 message(s) to rank 1 with tag 4 and rank 1 posts 1 receive(s) for "
     "them)"),
    # both ranks receive first: a deadlock whatever the eager threshold
    ("num_ranks 2\nrank 0 {\nr: recv 8b from 1\ns: send 8b to 1\ns requires r\n}\n"
     "rank 1 {\nr: recv 8b from 0\ns: send 8b to 0\ns requires r\n}\n",
     "the rank programs cannot finish (a deadlock, before any run): 4 operation(s) on 2 "
     "rank(s) would never finish; rank 0 operation r (recv 8 B from rank 1 tag 0, s.goal:3) "
     "waits for rank 1 operation s (send 8 B to rank 0 tag 0, s.goal:9), which never begins; "
     "rank 1 operation r (recv 8 B from rank 0 tag 0, s.goal:8) waits for rank 0 operation s "
     "(send 8 B to rank 1 tag 0, s.goal:4), which never begins"),
    ("num_ranks 2\nrank 0 {\nl0: send 8b to 1\nl0 requires l0\n}\nrank 1 {\n"
     "l0: recv 8b from 0\n}\n",
     "rank 0 operation l0 (send 8 B to rank 1 tag 0, s.goal:3) depends on itself")]


@pytest.mark.parametrize(("text", "message"), BAD_SCHEDULES)
def test_a_bad_schedule_is_refused_by_comm_and_export_as_validate_refuses_it(tmp_path, text,
                                                                             message):
    """``comm`` and ``export`` on a schedule file ran without the static checks of
    :func:`~federation.programs.checks.check_programs` (they summarised and exported programs
    that ``run`` refuses); now they refuse with ``validate``'s message, exit 2, and ``export``
    writes nothing."""
    (tmp_path / "s.goal").write_text(text)
    (tmp_path / "e.yaml").write_text(yaml.safe_dump({
        "machine": {"topology": {"kind": "dragonfly", "p": 2, "a": 4, "h": 2}},
        "workload": {"kind": "program", "path": "s.goal"}}))
    validate = one_error(run_cli("validate", "e.yaml", cwd=tmp_path))
    assert validate.endswith(f": workload: {message}".replace("s.goal", str(tmp_path / "s.goal")))
    assert one_error(run_cli("comm", "s.goal", cwd=tmp_path)) == f"error: s.goal: {message}"
    assert one_error(run_cli("export", "s.goal", "--out", "o.goal", cwd=tmp_path)) == \
        f"error: s.goal: {message}"
    assert not (tmp_path / "o.goal").exists()


# --------------------------------------------------------------------------- jobs: and placement

def jobs_experiment(tmp_path, jobs: list[dict]) -> str:  # noqa: ANN001
    doc = {"schema_version": 1, "name": "j", "seed": 3,
           "machine": {"topology": {"kind": "dragonfly", "p": 2, "a": 4, "h": 2}},
           "stop": {"warmup": "0us", "measure": "20us"}, "jobs": jobs}
    (tmp_path / "j.yaml").write_text(yaml.safe_dump(doc))
    return "j.yaml"


ALLREDUCE_8 = {"name": "a", "workload": {"kind": "allreduce", "size": "8B", "iterations": 1},
               "placement": {"kind": "contiguous", "count": 8}}
PINGPONG_2 = {"name": "c", "workload": {"kind": "pingpong", "sizes": ["1KiB"], "iterations": 2},
              "placement": {"kind": "list", "nodes": [70, 20]}}
OPEN_16 = {"name": "b", "workload": {"kind": "synthetic", "load": 0.3},
           "placement": {"kind": "random_nodes", "count": 16}}


def test_comm_and_export_take_the_one_job_on_its_own_nodes(tmp_path):
    """An allreduce placed on 8 of 72 nodes was summarised and exported as the workload over
    the whole machine (72 ranks, 400 messages); it is the job's 8 ranks and 24 messages,
    the messages ``hops`` counts for it."""
    e = jobs_experiment(tmp_path, [ALLREDUCE_8, OPEN_16])
    hops = json.loads(run_cli("hops", e, "--json", cwd=tmp_path).stdout)
    assert hops["points"][0]["jobs"][0]["messages"] == 24
    r = run_cli("comm", e, "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert (doc["source"], doc["ranks"], doc["messages"]) == \
        ("j.yaml: job a, workload allreduce", 8, 24)
    assert doc["per_rank"]["node"] == list(range(8))
    r = run_cli("export", e, "--out", "a.goal", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "a.goal: 8 ranks, 48 operations from j.yaml: job a, workload allreduce " \
        "(calc unit 1ns)\n"
    assert r.stderr == ""  # its nodes are 0 .. 7: nothing lost
    assert read_goal(tmp_path / "a.goal").n_ranks == 8


def test_several_closed_loop_jobs_need_job(tmp_path):
    """With two closed-loop jobs ``export`` took the first one's workload over all 72 nodes;
    without ``--job`` both commands refuse, naming ``jobs`` and the closed-loop jobs, and
    write nothing; ``--job c`` gives job c's two ranks on its nodes (20 and 70: ascending,
    its rank order)."""
    e = jobs_experiment(tmp_path, [ALLREDUCE_8, OPEN_16, PINGPONG_2])
    want = ("error: j.yaml: jobs: 2 jobs have closed-loop workloads (a, c); give --job NAME "
            "to choose one")
    assert one_error(run_cli("comm", e, cwd=tmp_path)) == want
    assert one_error(run_cli("export", e, "--out", "o.goal", cwd=tmp_path)) == want
    assert not (tmp_path / "o.goal").exists()
    doc = json.loads(run_cli("comm", e, "--job", "c", "--json", cwd=tmp_path).stdout)
    assert (doc["source"], doc["ranks"], doc["messages"], doc["bytes"]) == \
        ("j.yaml: job c, workload pingpong", 2, 4, 4096)
    assert doc["per_rank"]["node"] == [20, 70]  # nodes 70 and 20 in the default order
    r = run_cli("export", e, "--job", "c", "--out", "o.goal", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "o.goal: 2 ranks, 8 operations from j.yaml: job c, workload pingpong " \
        "(calc unit 1ns)\n"
    assert r.stderr == "note: GOAL has no placement: the ranks' nodes (rank_node) are not " \
        "written\n"
    back = read_goal(tmp_path / "o.goal")
    assert back.n_ranks == 2 and back.op_bytes.tolist() == [1024] * 8


@pytest.mark.parametrize(("args", "want"), [
    (["--job", "b"], "error: --job: job 'b' has open-loop workload 'synthetic': it has no rank "
     "programs (export writes closed-loop workloads and schedule files); closed-loop jobs: "
     "a, c"),
    (["--job", "zz"], "error: --job: j.yaml has no job 'zz'; its jobs are a, b, c"),
])
def test_job_refusals(tmp_path, args, want):
    e = jobs_experiment(tmp_path, [ALLREDUCE_8, OPEN_16, PINGPONG_2])
    assert one_error(run_cli("export", e, *args, "--out", "o.goal", cwd=tmp_path)) == want
    assert not (tmp_path / "o.goal").exists()


def test_job_applies_to_experiments_with_jobs(tmp_path):
    e = experiment(tmp_path, {"kind": "allreduce", "ranks": 4})
    assert one_error(run_cli("comm", e, "--job", "a", cwd=tmp_path)) == \
        "error: --job: e.yaml has no jobs (its workload is the one program); leave out --job"
    (tmp_path / "s.goal").write_text("num_ranks 2\nrank 0 {\nl1: send 64b to 1\n}\n"
                                     "rank 1 {\nl1: recv 64b from 0\n}\n")
    assert one_error(run_cli("export", "s.goal", "--job", "a", "--out", "o.goal",
                             cwd=tmp_path)) == "error: --job: --job applies to experiment files"


def test_point_applies_to_experiment_files(tmp_path):
    """Fuzz 43, item 12: ``--point 7`` on a schedule (no sweep) was ignored, while ``--job``
    and ``--set`` were refused there; ``--point`` is refused the same way, and ``export``
    writes nothing.  On an experiment it still chooses the point."""
    (tmp_path / "s.goal").write_text("num_ranks 2\nrank 0 {\nl1: send 64b to 1\n}\n"
                                     "rank 1 {\nl1: recv 64b from 0\n}\n")
    want = "error: --point: --point applies to experiment files"
    for point in ("7", "0"):
        assert one_error(run_cli("comm", "s.goal", "--point", point, cwd=tmp_path)) == want
        assert one_error(run_cli("export", "s.goal", "--point", point, "--out", "o.goal",
                                 cwd=tmp_path)) == want
        assert not (tmp_path / "o.goal").exists()
    r = run_cli("comm", "s.goal", cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.startswith("s.goal (goal)"), r.stderr
    e = experiment(tmp_path, {"kind": "allreduce", "ranks": 4})
    assert one_error(run_cli("comm", e, "--point", "7", cwd=tmp_path)) == (
        "error: --point: the experiment has 1 point(s) (0 .. 0), not 7")
    assert run_cli("comm", e, "--point", "0", cwd=tmp_path).returncode == 0


def test_an_open_loop_refusal_names_the_command_that_was_run(tmp_path):
    """``export`` said "comm summarises closed-loop workloads"."""
    e = experiment(tmp_path, {"kind": "synthetic", "pattern": "uniform", "load": 0.1})
    assert one_error(run_cli("export", e, "--out", "o.goal", cwd=tmp_path)) == (
        "error: e.yaml: workload.kind: workload 'synthetic' is open loop: it has no rank "
        "programs (export writes closed-loop workloads and schedule files)")
    e = jobs_experiment(tmp_path, [OPEN_16, {**OPEN_16, "name": "d", "placement": "rest"}])
    assert one_error(run_cli("comm", e, cwd=tmp_path)) == (
        "error: j.yaml: jobs: every job's workload is open loop (b: synthetic, d: synthetic): "
        "none has rank programs (comm summarises closed-loop workloads and schedule files)")


def test_means_are_rounded_like_the_other_figures():
    """``comm`` printed ``mean 5.555555555555555``."""
    b = ProgramBuilder(3)
    b.rank(0).send(1, 8)
    b.rank(1).recv(0, 8)
    lines = describe(communication(b.build()))
    assert "sends per rank: min 0, mean 0.33, max 1" in lines
    assert "destinations per rank: min 0, mean 0.33, max 1" in lines
    assert "bytes sent per rank: min 0 B, mean 3 B, max 8 B" in lines


@pytest.mark.parametrize("command", ["comm", "export"])
def test_a_results_folder_is_named_as_one_not_read_as_a_trace(tmp_path, command):
    """A ``federation run`` output folder was read as a DUMPI folder ("messages-0.parquet and
    link_series-0.parquet both name rank 0"), its results.json as an experiment (fifteen
    schema errors)."""
    out = tmp_path / "res"
    out.mkdir()
    (out / "results.json").write_text(json.dumps({"error": None, "experiment": "x",
                                                  "federation_version": "0.1.0",
                                                  "points": []}))
    (out / "messages-0.parquet").write_bytes(b"")
    extra = ["--out", str(tmp_path / "x.goal")] if command == "export" else []
    for target in (out, out / "results.json"):
        line = one_error(run_cli(command, str(target), *extra, cwd=tmp_path))
        assert f"{target}: is a federation run's results" in line, line
    assert not (tmp_path / "x.goal").exists()
