"""Rank programs are checked against the machine and the clock before any point runs
(issue 17, cases 5, 6, 8, 10, 12 and 22): ``federation validate`` and ``run`` refuse, with one
message naming the file (and line) or the field, exit 2, what used to pass ``validate`` and
then stop a sweep part-way, crash with ``OverflowError``, allocate gigabytes, or simulate for
minutes before blaming the wrong figure.  And the programs the preflight built are the ones
the run uses: built once."""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
import yaml
from conftest import one_error, run_cli
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from test_programs_checks import programs
from test_rank_programs_engine import Given

from federation.errors import ConfigError, SimulationError
from federation.pipeline.load import load_experiment
from federation.pipeline.point import BuildCache, preflight, prepare
from federation.pipeline.rank_programs import machine_figures
from federation.programs import ProgramBuilder
from federation.programs.checks import check_programs, message_pairs

LIMIT = 2**32
#: FEDERATION_FUZZ_EXAMPLES (as for tests/test_loader_fuzz.py) multiplies the examples
SCALE = max(1, int(os.environ.get("FEDERATION_FUZZ_EXAMPLES", "40")) // 40)
#: 2 groups of 2 routers with 2 nodes each (g = a*h + 1 = 3: 12 nodes); tiny and fast
TINY = {"topology": {"kind": "dragonfly", "p": 2, "a": 2, "h": 1}}
CLOCK = "beyond the engine's clock range (8796093022208 ps = 8.796 s of simulated time)"


def experiment(tmp_path: Path, workload: dict, name: str = "e.yaml", **extra) -> Path:
    doc = {"schema_version": 1, "machine": TINY, "workload": workload, **extra}
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc))
    return path


def refusal(path: Path, max_memory: int = LIMIT) -> ConfigError:
    with pytest.raises(ConfigError) as e:
        preflight(load_experiment(path), max_memory)
    return e.value


def goal(tmp_path: Path, text: str, name: str = "s.goal") -> Path:
    (tmp_path / name).write_text(text)
    return experiment(tmp_path, {"kind": "program", "path": name})


HEAD_TO_HEAD = ("num_ranks 2\nrank 0 {\nl1: recv 8b from 1\nl2: send 8b to 1\nl2 requires l1\n}\n"
                "rank 1 {\nl1: recv 8b from 0\nl2: send 8b to 0\nl2 requires l1\n}\n")


# --------------------------------------------------------------------------- case 5


def test_validate_refuses_what_the_run_would_stop_at_naming_file_and_line(tmp_path):
    """A sweep over workload.path whose third file deadlocks: validate used to say valid and
    the run stopped after two points; now validate refuses, naming the file, the line and
    the sweep point, exit 2."""
    ok = "num_ranks 2\nrank 0 {\nl1: send 8b to 1\n}\nrank 1 {\nl1: recv 8b from 0\n}\n"
    for name, text in (("a.goal", ok), ("b.goal", ok), ("c.goal", HEAD_TO_HEAD)):
        (tmp_path / name).write_text(text)
    e = experiment(tmp_path, {"kind": "program", "path": "a.goal"},
                   sweep={"workload.path": ["a.goal", "b.goal", "c.goal"]})
    line = one_error(run_cli("validate", str(e), cwd=tmp_path))
    assert line.startswith(f"error: {tmp_path / 'c.goal'}: workload: the rank programs cannot "
                           "finish (a deadlock, before any run): 4 operation(s) on 2 rank(s) "
                           "would never finish; rank 0 operation l1 (recv 8 B from rank 1 tag "
                           f"0, {tmp_path / 'c.goal'}:3) waits for rank 1 operation l2 (send 8 B "
                           f"to rank 0 tag 0, {tmp_path / 'c.goal'}:9), which never begins")
    assert line.endswith("(sweep point 2: workload.path=c.goal)")
    one_error(run_cli("run", str(e), "--out", str(tmp_path / "out"), cwd=tmp_path))
    assert not (tmp_path / "out").exists()  # refused before the first point ran


@pytest.mark.parametrize(("text", "expected"), [
    (None, "e.yaml: workload.path: no such schedule file: {dir}/s.goal"),
    ("num_ranks 2\nrank 0 {\n bogus\n}\n", "{dir}/s.goal: line 3 (rank 0): cannot read 'bogus'"),
    ("num_ranks 2\nrank 0 {\nl1: calc 5\nl2: calc 5\nl1 requires l2\nl2 requires l1\n}\n",
     "{dir}/s.goal: workload: dependency cycle: rank 0 operation l1 (compute 5000 ps, "
     "{dir}/s.goal:3) (transitively) depends on itself"),
    (HEAD_TO_HEAD, "{dir}/s.goal: workload: the rank programs cannot finish (a deadlock"),
])
def test_missing_malformed_cyclic_and_deadlocking_files_are_refused(tmp_path, text, expected):
    if text is None:
        e = experiment(tmp_path, {"kind": "program", "path": "s.goal"})
    else:
        e = goal(tmp_path, text)
    msg = str(refusal(e))
    assert msg.startswith(expected.format(dir=tmp_path).replace("e.yaml", str(e))), msg


def test_a_plugin_workload_sending_to_a_nonexistent_rank_is_refused_by_the_preflight(tmp_path):
    b = ProgramBuilder(2)
    b.rank(0).send(5, 8)
    b.rank(1).recv(0, 8)
    loaded = load_experiment(experiment(tmp_path, {"kind": "pingpong"}))
    loaded.points[0] = dataclasses.replace(loaded.points[0], workload=Given(b.build()))
    with pytest.raises(ConfigError) as e:
        preflight(loaded, LIMIT)
    assert str(e.value) == (f"{tmp_path / 'e.yaml'}: workload: rank 0 operation 0 (send 8 B to "
                            "rank 5 tag 0): unknown rank 5 (the program has 2 ranks, 0 to 1)")


def test_a_plugin_value_beyond_its_column_is_refused_not_wrapped(tmp_path):
    """A peer of 2**32 + 1 used to become rank 1 in the int32 column without a word."""
    from federation.programs.model import RankPrograms

    with pytest.raises(ConfigError, match=r"RankPrograms.op_peer: 4294967297 is not a whole "
                       r"number within int32"):
        RankPrograms([0, 1, 2], [0, 1], np.array([2**32 + 1, 0]), [8, 8], [0, 0], [0, 0],
                     [], [], [])
    with pytest.raises(ConfigError, match="RankPrograms.op_bytes: 8.5 is not a whole number"):
        RankPrograms([0, 1], [2], [-1], [8.5], [0], [0], [], [], [])


# --------------------------------------------------------------------------- case 6


def test_num_ranks_zero_and_an_empty_trace_are_refused(tmp_path):
    assert str(refusal(goal(tmp_path, "num_ranks 0\n"))) == (
        f"{tmp_path / 's.goal'}: line 1: num_ranks 0: a schedule needs at least one rank")
    (tmp_path / "t.txt").write_text("\n# nothing\n")
    e = experiment(tmp_path, {"kind": "program", "path": "t.txt"})
    assert str(refusal(e)) == (f"{tmp_path / 't.txt'}: the trace holds no action line: no "
                               "rank to simulate (an empty trace?)")
    empty = RankProgramsOf(0)
    with pytest.raises(ConfigError, match="the programs have no ranks"):
        check_programs(empty, 4)


def RankProgramsOf(n: int):  # noqa: N802 - reads like the class
    return ProgramBuilder(n).build()


def test_ranks_without_operations_run_and_finish_at_zero(tmp_path):
    """A one-rank allreduce has no operation: not refused, and it finishes at 0 (not -1)."""
    loaded = load_experiment(experiment(tmp_path, {"kind": "allreduce", "ranks": 1}))
    cache = preflight(loaded, LIMIT)
    prep = prepare(loaded.points[0], cache)
    raw = loaded.points[0].engine.run(prep.job)
    assert raw.programs.rank_finish.tolist() == [0]


# --------------------------------------------------------------------------- case 8


def test_a_send_larger_than_its_receive_is_refused_naming_both(tmp_path):
    text = "num_ranks 2\nrank 0 {\nl1: send 65536b to 1\n}\nrank 1 {\nl1: recv 8b from 0\n}\n"
    s = tmp_path / "s.goal"
    assert str(refusal(goal(tmp_path, text))) == (
        f"{s}: workload: rank 0 operation l1 (send 65536 B to rank 1 tag 0, {s}:3) meets rank 1 "
        f"operation l1 (recv 8 B from rank 0 tag 0, {s}:6): a send larger than its receive (MPI "
        "would truncate it: MPI_ERR_TRUNCATE); make the receive at least 65536 B")


def test_a_receive_larger_than_its_send_is_legal_and_the_message_is_the_sends_size(tmp_path):
    text = "num_ranks 2\nrank 0 {\nl1: send 8b to 1\n}\nrank 1 {\nl1: recv 65536b from 0\n}\n"
    loaded = load_experiment(goal(tmp_path, text))
    cache = preflight(loaded, LIMIT)
    prep = prepare(loaded.points[0], cache)
    assert prep.job.programs.msg_size.tolist() == [8]
    loaded.points[0].engine.run(prep.job)


def test_sizes_on_a_channel_whose_pairs_depend_on_timing_are_refused_if_any_truncates():
    """Rank 1's receives wait for different things, so which send each meets depends on
    timing; some timing pairs the 4 KiB send with the 8 B receive."""
    b = ProgramBuilder(2)
    b.rank(0).send(1, 8)
    b.rank(0).send(1, 4096)
    r1 = b.rank(1)
    c = r1.op(2, -1, 0, 0, 1000)
    r1.op(1, 0, 4096, 0, 0)
    r1.op(1, 0, 8, 0, 0, requires=[c])
    with pytest.raises(ConfigError, match=r"send 4096 B to rank 1 tag 0\) may meet \(the pairs "
                       r"on this channel depend on timing\) rank 1 operation 2 \(recv 8 B"):
        check_programs(b.build(), 2)


def test_stop_messages_is_refused_for_rank_programs(tmp_path):
    e = experiment(tmp_path, {"kind": "pingpong"}, stop={"messages": 10})
    assert str(refusal(e)) == (
        f"{e}: stop.messages: stop.messages (10) counts open-loop messages, but workload "
        "'pingpong' is rank programs, which run until they finish; drop stop.messages (with a "
        "background, give stop.measure: its horizon)")


def test_a_stop_window_set_for_rank_programs_alone_is_noted(tmp_path):
    """stop.warmup and stop.measure change nothing for rank programs without a background:
    the file still runs (they are harmless), and the loader says so rather than ignore them
    without a word; with a background they give its horizon, and nothing is said."""
    e = experiment(tmp_path, {"kind": "pingpong"}, stop={"warmup": "1us", "measure": "5us"})
    assert load_experiment(e).notes == [
        "stop.measure and stop.warmup change nothing here: rank programs run until they finish "
        "and the whole run is measured (the stop rule gives a background's horizon)"]
    assert load_experiment(experiment(tmp_path, {"kind": "pingpong"}, name="f.yaml")).notes == []
    bg = experiment(tmp_path, {"kind": "pingpong"}, name="g.yaml", stop={"measure": "5us"},
                    background={"kind": "synthetic", "load": 0.1})
    assert load_experiment(bg).notes == []
    # a sweep of both kinds: the open-loop point uses them, so the note names the others
    mixed = experiment(tmp_path, {"kind": "pingpong"}, name="h.yaml",
                       stop={"warmup": "1us", "measure": "5us"},
                       sweep={"workload": [{"kind": "synthetic", "load": 0.3},
                                           {"kind": "pingpong"}]})
    assert load_experiment(mixed).notes == [
        "stop.measure and stop.warmup change nothing at point 1 (the open-loop points use "
        "them): rank programs run until they finish and the whole run is measured (the stop "
        "rule gives a background's horizon)"]


# --------------------------------------------------------------------------- case 10


def test_counts_are_compared_with_the_machine_before_anything_is_built(tmp_path):
    t0 = time.perf_counter()
    assert str(refusal(goal(tmp_path, "num_ranks 100000000\n"))) == (
        f"{tmp_path / 's.goal'}: line 1: num_ranks 100000000, but the machine has 12 nodes "
        "(rank i runs on node i)")
    (tmp_path / "t.txt").write_text("100000000 init\n")
    assert str(refusal(experiment(tmp_path, {"kind": "program", "path": "t.txt"}))) == (
        f"{tmp_path / 't.txt'}: line 1: rank 100000000, but the machine has 12 nodes (rank i "
        "runs on node i)")
    (tmp_path / "list.txt").write_text("a.txt\n/dev/zero\n")
    (tmp_path / "a.txt").write_text("0 init\n")
    assert str(refusal(experiment(tmp_path, {"kind": "program", "path": "list.txt"}))) == (
        f"{tmp_path / 'list.txt'}: line 2: the trace file '/dev/zero' (/dev/zero) is not a "
        "regular file")
    assert time.perf_counter() - t0 < 10


def test_max_memory_is_checked_while_a_trace_is_read(tmp_path):
    (tmp_path / "t.txt").write_text("0 compute 10\n" * 30_000)
    e = experiment(tmp_path, {"kind": "program", "path": "t.txt"})
    machine = preflight(load_experiment(e), LIMIT).get(load_experiment(e).points[0]).memory
    limit = machine.network + machine.tables + 400 * 20_000  # room for 20,000 operations
    msg = str(refusal(e, limit))
    assert msg.startswith(f"{tmp_path / 't.txt'}: line 20001: the trace reaches 20,001 "
                          "operations, beyond the 20,000 that fit --max-memory (")


def test_max_memory_is_checked_while_a_goal_file_is_read_dependencies_included(tmp_path):
    """Dependencies count four to an operation: a file of few operations and a million
    edges is refused too, at the line where it crosses."""
    body = "a: calc 1\nb: calc 1\n" + "b requires a\n" * 1000
    e = goal(tmp_path, f"num_ranks 1\nrank 0 {{\n{body}}}\n")
    machine = BuildCache(LIMIT).get(load_experiment(e).points[0]).memory
    msg = str(refusal(e, machine.network + machine.tables + 400 * 100))
    assert msg.startswith(f"{tmp_path / 's.goal'}: line 400: the schedule (and 396 "
                          "dependencies, four to an operation) reaches 101 operations, beyond "
                          "the 100 that fit --max-memory ("), msg


def test_a_binary_file_is_refused_by_its_line_length(tmp_path):
    (tmp_path / "s.goal").write_bytes(b"num_ranks 1\n" + b"x" * (1 << 21))
    assert "line 2 is longer than 1,048,576 characters" in str(refusal(
        experiment(tmp_path, {"kind": "program", "path": "s.goal"})))


# --------------------------------------------------------------------------- case 12


@pytest.mark.parametrize(("name", "text", "params", "expected"), [
    ("s.goal", "num_ranks 1\nrank 0 {\nl1: calc 9300000000000000\n}\n", {},
     "line 3 (rank 0): calc 9300000000000000 (9300000000000000 x 1000 ps = "
     "9300000000000000000 ps) is " + CLOCK),
    ("t.txt", "0 compute 1e22\n", {},
     "line 1 (rank 0, compute): compute 1e22 flops at host_speed 1e+09 flop/s: 1e+13s is "
     + CLOCK),
    ("t.txt", "0 sleep 1e15\n", {}, "line 1 (rank 0, sleep): sleep 1e+15s is " + CLOCK),
    ("t.txt", "0 compute 1\n", {"host_speed": 1e-300},
     "line 1 (rank 0, compute): compute 1 flops at host_speed 1e-300 flop/s: 1e+300s is "
     + CLOCK),
])
def test_compute_times_beyond_the_clock_are_refused_not_overflowed(tmp_path, name, text,
                                                                   params, expected):
    (tmp_path / name).write_text(text)
    e = experiment(tmp_path, {"kind": "program", "path": name, **params})
    assert str(refusal(e)) == f"{tmp_path / name}: {expected}"


def test_the_clock_refusal_holds_in_a_sweep_and_with_dask_workers(tmp_path):
    """The preflight runs on the client for every point, before a worker starts."""
    (tmp_path / "t.txt").write_text("0 compute 1\n")
    e = experiment(tmp_path, {"kind": "program", "path": "t.txt"},
                   sweep={"workload.host_speed": [1e9, 1e-300]})
    line = one_error(run_cli("run", str(e), "--workers", "2", "--out", str(tmp_path / "o"),
                             cwd=tmp_path))
    assert "1e+300s is beyond the engine's clock range" in line
    assert line.endswith("(sweep point 1: workload.host_speed=1e-300)")


@pytest.mark.parametrize(("workload", "field", "expected"), [
    ({"kind": "allreduce", "compute": "1e300s"}, "workload.compute",
     "compute 1e+300s is " + CLOCK),
    ({"kind": "halo3d", "pex": 2, "pey": 2, "pez": 2, "peflops": 1e-300}, "workload.peflops",
     "the default computetime"),
    ({"kind": "pingpong", "sizes": ["1e30B"]}, "workload.sizes[0]",
     "sizes[0] is 1e+30 B, beyond the largest message"),
])
def test_built_in_workloads_check_their_times_and_sizes_first(tmp_path, workload, field,
                                                               expected):
    e = experiment(tmp_path, workload)
    err = refusal(e)
    assert (err.source, err.path) == (str(e), field)
    assert err.message.startswith(expected), err.message


def test_overheads_beyond_the_clock_are_refused_naming_the_machine_field(tmp_path):
    e = experiment(tmp_path, {"kind": "pingpong"})
    doc = yaml.safe_load(e.read_text())
    doc["machine"]["nic"] = {"send_overhead": "1e300s"}
    e.write_text(yaml.safe_dump(doc))
    err = refusal(e)
    assert (err.path, err.message) == ("machine.nic.send_overhead",
                                       "nic.send_overhead 1e+300s is " + CLOCK)


# --------------------------------------------------------------------------- case 22


def test_an_80_gb_halo_face_is_refused_up_front_naming_the_field(tmp_path):
    e = experiment(tmp_path, {"kind": "halo3d", "nx": 100000, "ny": 100000, "nz": 100000,
                              "pex": 2, "pey": 2, "pez": 2})
    t0 = time.perf_counter()
    err = refusal(e)
    assert time.perf_counter() - t0 < 5
    assert err.path == "workload.ny"
    assert err.message == (
        "the x faces (fields_per_cell x datatype_width x ny x nz = 1 x 8 x 100000 x 100000) "
        "is 80000000000 B, which takes at least 14.19s to leave a NIC at 5.25GiB/s, " + CLOCK)


def test_a_nodes_bytes_beyond_the_clock_are_refused_naming_the_crossing_send():
    """Each message alone fits (4 GiB at 1 GiB/s: 4 s); rank 0's NIC needs 12 s for the
    three, and the third crosses the clock range."""
    from federation.programs.checks import MachineFigures

    size = 4 * 2**30
    b = ProgramBuilder(2)
    for _ in range(3):
        b.rank(0).isend(1, size)
        b.rank(1).irecv(0, size)
    fig = MachineFigures(2, 4096, 65536, 2**30, 2**31)
    with pytest.raises(ConfigError) as e:
        check_programs(b.build(), 2, machine=fig)
    assert e.value.message == (
        "rank 0 operation 2 (send 4294967296 B to rank 1 tag 0): node 0's outgoing messages "
        "add up to 12884901888 B here, which take at least 12s to leave its node at 1GiB/s "
        "(nic.bandwidth), " + CLOCK)


def test_a_late_jobs_bytes_count_from_its_start(tmp_path):
    """200 pings of 64 KiB leave a node of 5.25 GiB/s in 2.2 ms: from a start at 8.795 s that
    passes the clock range at the 95th (the run reached it after simulating the job, and
    refused it naming no field), from 8.79 s it does not."""
    def at(start: str) -> Path:
        job = {"name": "a", "placement": {"kind": "contiguous", "count": 2}, "start": start,
               "workload": {"kind": "pingpong", "sizes": ["64KiB"], "iterations": 200}}
        path = tmp_path / "e.yaml"
        path.write_text(yaml.safe_dump({"schema_version": 1, "machine": TINY, "jobs": [job]}))
        return path

    err = refusal(at("8.795s"))
    assert err.path == "jobs[0].workload"
    assert err.message.startswith(
        "rank 0 operation 188 (send 65536 B to rank 1 tag 0): node 0's outgoing messages add "
        "up to 6225920 B here, which take at least 1.104ms to leave its node at 5.25GiB/s "
        "(machine.links.terminal.bandwidth), which after the job's start at 8.795s "
        "(jobs[0].start) is " + CLOCK)
    preflight(load_experiment(at("8.79s")), LIMIT)


def test_a_ranks_compute_counts_from_its_jobs_start():
    from federation.programs.checks import MachineFigures

    b = ProgramBuilder(1)
    b.rank(0).compute(3.0)
    b.rank(0).compute(3.0)
    fig = MachineFigures(1, 4096, 65536, 2**30, 2**31, start_ps=3 * 10**12,
                         start_field="jobs[1].start")
    check_programs(b.build(), 1, machine=dataclasses.replace(fig, start_ps=2 * 10**12))
    with pytest.raises(ConfigError) as e:
        check_programs(b.build(), 1, machine=fig)
    assert e.value.message == (
        "rank 0 operation 1 (compute 3000000000000 ps): rank 0's compute times add up to "
        "6000000000000 ps here, which after the job's start at 3s (jobs[1].start) is " + CLOCK)


# --------------------------------------------------------------------------- built once


def test_the_preflight_builds_each_program_once_and_the_run_uses_it(tmp_path):
    """A sweep over the routing with one program: built once (preflight), not again per
    point; a point run on its own (no preflight, e.g. on a Dask worker) builds and checks."""
    (tmp_path / "s.goal").write_text(
        "num_ranks 2\nrank 0 {\nl1: send 8b to 1\n}\nrank 1 {\nl1: recv 8b from 0\n}\n")
    e = experiment(tmp_path, {"kind": "program", "path": "s.goal"},
                   sweep={"routing.algorithm": ["minimal", "valiant"]})
    loaded = load_experiment(e)
    from federation.plugins.workloads import program_file as wpf

    with mock.patch.object(wpf, "read_goal", wraps=wpf.read_goal) as reads:
        cache = preflight(loaded, LIMIT)
        assert reads.call_count == 1
        for point in loaded.points:
            prepare(point, cache)
        assert reads.call_count == 1
        prepare(loaded.points[0], BuildCache(LIMIT))
        assert reads.call_count == 2


# --------------------------------------------------------------------------- the verdicts hold


@settings(max_examples=40 * SCALE, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_static_verdicts_agree_with_the_engine(tmp_path_factory, p):
    """Random programs (random placement of each message's send and receive): accepted ones
    finish in the engine with exactly the predicted pairs; those refused as deadlocks get
    stuck in the engine (their check bypassed)."""
    tmp = tmp_path_factory.mktemp("verdict")
    loaded = load_experiment(experiment(tmp, {"kind": "pingpong"}))
    point = loaded.points[0]
    point = dataclasses.replace(point, workload=Given(p))
    built = BuildCache(LIMIT).get(point)
    try:
        check_programs(p, 12, machine=machine_figures(point, built))
        verdict = None
    except ConfigError as exc:
        verdict = "deadlock" if "deadlock" in exc.message else "truncate"
    event(f"verdict: {verdict}")
    if verdict == "truncate":
        return
    with mock.patch("federation.pipeline.rank_programs.check_programs", lambda *a, **k: None):
        prep = prepare(point, BuildCache(LIMIT))
        try:
            raw = point.engine.run(prep.job)
        except SimulationError as exc:
            assert verdict == "deadlock", str(exc)
            assert "cannot finish" in str(exc)
            return
    assert verdict is None
    pairs = message_pairs(p)
    if pairs is not None:
        sends = np.flatnonzero(p.op_kind == 0)
        msg_of_send = {int(s): i for i, s in enumerate(sends)}
        assert [int(raw.programs.op_msg[r]) for r in pairs.recv] == \
            [msg_of_send[int(s)] for s in pairs.send]


@st.composite
def graphs(draw):
    """Random programs with free-form dependencies (as GOAL allows): each rank's operations
    in a random order, each with random earlier operations to wait for (finish or start).
    Ranks are often not chained, so pairs may depend on timing."""
    n = draw(st.integers(2, 3))
    ops: list[list[tuple]] = [[] for _ in range(n)]
    for _ in range(draw(st.integers(1, 8))):
        s, d = draw(st.integers(0, n - 1)), draw(st.integers(0, n - 1))
        tag, size = draw(st.integers(0, 1)), draw(st.sampled_from([8, 600, 100_000]))
        rsize = draw(st.sampled_from([size, size, 8, 100_000]))
        ops[s].insert(draw(st.integers(0, len(ops[s]))), (0, d, size, tag, 0))
        ops[d].insert(draw(st.integers(0, len(ops[d]))), (1, s, rsize, tag, 0))
    for r in range(n):
        for _ in range(draw(st.integers(0, 2))):
            ops[r].insert(draw(st.integers(0, len(ops[r]))),
                          (2, -1, 0, 0, draw(st.sampled_from([0, 1000, 50_000]))))
    b = ProgramBuilder(n)
    for r in range(n):
        rb = b.rank(r)
        for i, op in enumerate(ops[r]):
            before = draw(st.lists(st.integers(0, i - 1), unique=True, max_size=2)) if i else []
            kinds = [draw(st.integers(0, 1)) for _ in before]
            rb.op(*op, requires=[x for x, k in zip(before, kinds, strict=True) if k == 0],
                  irequires=[x for x, k in zip(before, kinds, strict=True) if k == 1])
    return b.build()


@settings(max_examples=60 * SCALE, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(graphs())
def test_static_verdicts_hold_for_free_form_dependencies(tmp_path_factory, p):
    """Where the checks call pairs certain, the engine pairs exactly so; where they accept a
    program, no message the engine delivers is larger than its receive; where they find a
    deadlock, the engine gets stuck.  (An accepted program with pairs that depend on timing
    may still get stuck: the engine reports that itself.)"""
    tmp = tmp_path_factory.mktemp("graph")
    point = load_experiment(experiment(tmp, {"kind": "pingpong"})).points[0]
    point = dataclasses.replace(point, workload=Given(p))
    built = BuildCache(LIMIT).get(point)
    try:
        check_programs(p, 12, machine=machine_figures(point, built))
        verdict = None
    except ConfigError as exc:
        verdict = ("deadlock" if "deadlock" in exc.message else "truncate"
                   if "TRUNCATE" in exc.message else "unmatched")
    pairs = message_pairs(p) if verdict != "unmatched" else None
    certain = pairs is not None and bool(pairs.forced.all())
    event(f"verdict: {verdict}, pairs certain: {certain}")
    if verdict in ("unmatched", "truncate"):
        return
    with mock.patch("federation.pipeline.rank_programs.check_programs", lambda *a, **k: None):
        prep = prepare(point, BuildCache(LIMIT))
        try:
            raw = point.engine.run(prep.job)
        except SimulationError as exc:
            assert "cannot finish" in str(exc)
            assert verdict == "deadlock" or not certain, str(exc)
            return
    assert verdict is None
    sends = np.flatnonzero(p.op_kind == 0)
    recvs = np.flatnonzero(p.op_kind == 1)
    got = raw.programs.op_msg[recvs]
    assert (p.op_bytes[sends[got]] <= p.op_bytes[recvs]).all()  # nothing truncated
    if pairs is not None:
        forced = pairs.forced
        assert (raw.programs.op_msg[pairs.recv[forced]]
                == np.searchsorted(sends, pairs.send[forced])).all()
