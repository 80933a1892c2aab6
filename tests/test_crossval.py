"""``federation crossval``: the shipped suite passes, violations exit 1, engines that are not
installed are reported as not run (never passed), bad suites are refused naming the field, and
the pytest plugin turns a suite into tests.

Tests that run SimGrid *fail* when it is missing, unless ``FEDERATION_SIMGRID_OPTIONAL=1``
(:mod:`federation.adapters.simgrid.testing`).
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import REPO, one_error, run_cli

from federation.adapters.simgrid.locate import ENV_MODULE
from federation.adapters.simgrid.testing import require_simgrid
from federation.crossval import SuiteRunner
from federation.errors import ConfigError
from federation.schemas import crossval as shipped

SHIPPED = Path(shipped.__file__).parent / "native-vs-simgrid.crossval.yaml"
GIB = 2**30
#: one 64-byte message across groups of the small dragonfly (3 cables)
SMALL = {"machine": {"topology": {"kind": "dragonfly", "p": 2, "a": 4, "h": 2}},
         "workload": {"kind": "messages", "messages": [{"src": 0, "dst": 43, "size": 64}]},
         "stop": {"warmup": "0ns", "measure": "1us"}}


def suite(metrics: list[dict], **extra: object) -> dict:
    return {"name": "t", "engines": ["native", "simgrid"],
            "scenarios": [{"name": "small", "experiment": copy.deepcopy(SMALL),
                           "metrics": metrics}], **extra}


def write(tmp_path: Path, doc: dict, name: str = "s.crossval.yaml") -> Path:
    p = tmp_path / name
    p.write_text(yaml.safe_dump(doc, sort_keys=False))
    return p


@pytest.fixture
def simgrid() -> None:
    require_simgrid()


def test_shipped_suite_passes_with_the_store_and_forward_gap(simgrid):
    """Every check of the shipped suite passes, and the zero-load gap is exactly what
    store-and-forward predicts: native serialises the 64 B packet at the NIC, on two local
    cables and at ejection (5.25 GiB/s each) on top of the global cable that both engines
    serialise once."""
    result = SuiteRunner(SHIPPED).run_all()
    assert result.status == "passed", [c for c in result.checks if c.status != "pass"]
    assert result.counts == {"pass": 13, "fail": 0, "error": 0, "not run": 0}
    assert {r.program for r in result.runs if r.engine == "simgrid"} != {None}
    small = next(c for c in result.checks if c.scenario == "zero-load-small")
    assert small.difference == pytest.approx(-4 * 64 / (5.25 * GIB) * 1e9, abs=0.003)
    # rank programs: an 8 B round trip is two such trips of 8 B
    ping = next(c for c in result.checks if c.scenario == "pingpong-small")
    assert ping.difference == pytest.approx(-2 * 4 * 8 / (5.25 * GIB) * 1e9, abs=0.003)
    for c in result.checks:  # every figure is within its tolerance for a stated reason
        assert c.why and c.status == "pass"


def test_violation_exits_1_and_is_in_the_results_file(simgrid, tmp_path):
    s = write(tmp_path, suite([
        {"metric": "message_completion_ns", "message": 0, "tolerance": {"absolute": 50}},
        {"metric": "makespan_ns", "tolerance": {"relative": 0.01}}]))
    r = run_cli("crossval", str(s), "--out", str(tmp_path / "r.json"), cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["status"] == "failed" and doc["counts"]["fail"] == 1
    assert [c["status"] for c in doc["checks"]] == ["pass", "fail"]
    assert "fail: small makespan_ns simgrid: outside the tolerance" in r.stdout


def test_missing_engine_is_not_run_never_passed(tmp_path):
    s = write(tmp_path, suite([{"metric": "makespan_ns", "tolerance": {"relative": 0.2}}]))
    env = {ENV_MODULE: str(tmp_path / "absent.so")}
    r = run_cli("crossval", str(s), "--out", str(tmp_path / "r.json"), cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["counts"] == {"pass": 0, "fail": 0, "error": 0, "not run": 1}
    assert [run["status"] for run in doc["runs"]] == ["ran", "not run"]
    assert "not run: simgrid: engine 'simgrid' is not installed" in r.stdout
    # --out in a folder that does not exist yet: made, as export, report and comm --plot make
    # theirs (it was refused as "nodir is not a folder")
    r = run_cli("crossval", str(s), "--out", "nodir/deeper/r.json", cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    assert json.loads((tmp_path / "nodir" / "deeper" / "r.json").read_text())["counts"]
    r = run_cli("crossval", str(s), "--out", str(tmp_path / "r.json"), "--overwrite",
                "--require-all-engines", cwd=tmp_path, env=env)
    assert r.returncode == 1 and "failed: 1 not run" in r.stdout


@pytest.mark.parametrize(("change", "where"), [
    (lambda d: d["scenarios"][0]["metrics"][0]["tolerance"].update(absolute=1),
     "scenarios[0].metrics[0].tolerance"),
    (lambda d: d["scenarios"][0]["metrics"][0].pop("message"), "scenarios[0].metrics[0]"),
    (lambda d: d.update(engines=["native", "bogus"]), "engines[1]"),
    (lambda d: d.update(reference="sst"), "reference"),
    (lambda d: d["scenarios"][0].update(extra=1), "scenarios[0].extra"),
    (lambda d: d["scenarios"][0]["experiment"]["workload"]["messages"][0].update(size="x"),
     "scenarios[0].experiment.workload.messages[0].size"),
    (lambda d: d["scenarios"][0]["experiment"]["workload"]["messages"][0].update(dst=999),
     "scenarios[0].experiment.workload.messages[0].dst"),
    # the same figure twice: two checks, two passes (or one pass and one failure)
    (lambda d: d["scenarios"][0]["metrics"].append(copy.deepcopy(d["scenarios"][0]["metrics"][0])),
     "scenarios[0].metrics"),
])
def test_bad_suite_is_one_error_naming_the_field(tmp_path, change, where):
    doc = suite([{"metric": "message_completion_ns", "message": 0,
                  "tolerance": {"relative": 0.2}}])
    change(doc)
    s = write(tmp_path, doc)
    line = one_error(run_cli("crossval", str(s), "--out", str(tmp_path / "r.json"),
                             cwd=tmp_path, env={ENV_MODULE: str(tmp_path / "absent.so")}))
    assert line.startswith(f"error: {s}: {where}: "), line
    assert not (tmp_path / "r.json").exists()


def test_existing_results_file_is_refused(tmp_path):
    s = write(tmp_path, suite([{"metric": "makespan_ns", "tolerance": {"relative": 0.2}}]))
    (tmp_path / "r.json").write_text("{}")
    line = one_error(run_cli("crossval", str(s), "--out", str(tmp_path / "r.json"),
                             cwd=tmp_path))
    assert line.startswith("error: --out: ") and "--overwrite" in line


def _pytest(path: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-v",
                           "-rs", str(path)], capture_output=True, text=True, cwd=path.parent,
                          env={**os.environ, **env}, timeout=300)


def test_pytest_plugin_one_test_per_scenario_and_metric(simgrid, tmp_path):
    s = write(tmp_path, suite([
        {"metric": "message_completion_ns", "message": 0, "tolerance": {"absolute": 50}},
        {"metric": "makespan_ns", "tolerance": {"absolute": 0}}]))
    r = _pytest(s, {})
    assert "small/message_completion_ns[0] PASSED" in r.stdout, r.stdout
    assert "small/makespan_ns FAILED" in r.stdout
    assert "simgrid 392.682 ns vs native 438.094 ns: difference -45.41" in r.stdout
    assert "1 failed, 1 passed" in r.stdout and r.returncode == 1
    r = _pytest(s, {ENV_MODULE: str(tmp_path / "absent.so")})
    assert "2 skipped" in r.stdout and "engine 'simgrid' is not installed" in r.stdout
    assert r.returncode == 0


def test_readme_test_command_is_what_ci_runs():
    """The README's test command and the apt step are exactly what .ci/run runs."""
    ci = (REPO / ".ci" / "run").read_text()
    readme = (REPO / "README.md").read_text()
    for line in ("apt-get update -qq && apt-get install -y python3-simgrid",
                 "python3 -m venv .venv && .venv/bin/pip install -q -e '.[test]' && "
                 ".venv/bin/pytest -n 2"):
        assert line in ci and line in readme, line
    assert "FEDERATION_SIMGRID_OPTIONAL=" not in ci  # CI never makes SimGrid optional


def test_experiment_files_and_relative_machines_resolve_from_the_suite(tmp_path):
    """A scenario's experiment file, and an inline experiment's machine path, are relative to
    the suite file wherever crossval is run from; a sweep is refused naming its file."""
    (tmp_path / "m.yaml").write_text(yaml.safe_dump(SMALL["machine"]))
    exp = {**copy.deepcopy(SMALL), "machine": "m.yaml"}
    (tmp_path / "e.yaml").write_text(yaml.safe_dump(exp))
    metric = [{"metric": "makespan_ns", "tolerance": {"relative": 0.2}}]
    doc = suite(metric)
    doc["scenarios"] = [{"name": "file", "experiment": "e.yaml", "metrics": metric},
                        {"name": "inline", "experiment": exp, "metrics": metric}]
    s = write(tmp_path, doc)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {ENV_MODULE: str(tmp_path / "absent.so")}
    r = run_cli("crossval", str(s), "--out", "r.json", cwd=elsewhere, env=env)
    assert r.returncode == 0, r.stderr
    runs = json.loads((elsewhere / "r.json").read_text())["runs"]
    native = [run["figures"]["makespan_ns"] for run in runs if run["engine"] == "native"]
    assert len(native) == 2 and native[0] == native[1] > 0
    (tmp_path / "e.yaml").write_text(yaml.safe_dump({**exp, "seed": 1,
                                                     "sweep": {"seed": [1, 2]}}))
    line = one_error(run_cli("crossval", str(s), "--out", "r2.json", cwd=elsewhere, env=env))
    assert line.startswith(f"error: {tmp_path / 'e.yaml'}: sweep: a scenario is one run")


def test_a_suite_given_by_a_relative_path_reads_its_inline_files_beside_it(tmp_path):
    """Issue 17 case 18: with the suite given as `sub/s.crossval.yaml`, an inline experiment's
    `machine: m.yaml` and `workload.path: hand.goal` were looked up in the temporary folder
    the suite runs in.  They are read beside the suite file, as the loader reads them beside
    an experiment file; a missing one is named there, at the suite's field."""
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "m.yaml").write_text(yaml.safe_dump(SMALL["machine"]))
    exp = {"machine": "m.yaml", "workload": {"kind": "program", "path": "hand.goal"}}
    line = _goal_beside_the_suite(tmp_path, exp, 0.2, "program_completion_ns")
    assert line.startswith("error: sub/s.crossval.yaml: scenarios[0].experiment.workload.path")


def _goal_beside_the_suite(tmp_path, exp: dict, relative: float, metric: str) -> str:
    """Run a suite ``sub/s.crossval.yaml`` of the one scenario ``exp`` (reading
    ``hand.goal`` beside it) from ``tmp_path``: it runs; then, ``hand.goal`` removed, its
    one error line, which names the file beside the suite, not the temporary folder."""
    sub = tmp_path / "sub"
    (sub / "hand.goal").write_text((REPO / "tests/data/programs/hand.goal").read_text())
    doc = {"name": "t", "engines": ["native", "simgrid"],
           "scenarios": [{"name": "s", "experiment": exp, "metrics": [
               {"metric": metric, "tolerance": {"relative": relative}}]}]}
    write(sub, doc)
    env = {ENV_MODULE: str(tmp_path / "absent.so")}
    r = run_cli("crossval", "sub/s.crossval.yaml", "--out", "r.json", cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    (run,) = [x for x in json.loads((tmp_path / "r.json").read_text())["runs"]
              if x["engine"] == "native"]
    assert run["status"] == "ran" and run["figures"][metric] > 0
    (sub / "hand.goal").unlink()
    line = one_error(run_cli("crossval", "sub/s.crossval.yaml", "--out", "r2.json",
                             cwd=tmp_path, env=env))
    assert str(sub / "hand.goal") in line and "federation-crossval-" not in line
    return line


def test_a_jobs_workload_path_resolves_from_the_suite(tmp_path):
    """Fuzz 43 case 7: an inline experiment's `jobs[0].workload.path` was looked up in the
    temporary folder the suite runs in ("no such schedule file: /tmp/federation-crossval-
    .../hand.goal"), while a top-level `workload.path` was read beside the suite file.  Both
    are read beside it; a missing one is named there, at the suite's field."""
    (tmp_path / "sub").mkdir()
    exp = {"machine": {"topology": {"kind": "dragonfly", "p": 2, "a": 2, "h": 1}},
           "jobs": [{"name": "a", "workload": {"kind": "program", "path": "hand.goal"},
                     "placement": {"kind": "contiguous", "count": 2}}], "seed": 5}
    line = _goal_beside_the_suite(tmp_path, exp, 0.05, "makespan_ns")
    assert line.startswith(
        "error: sub/s.crossval.yaml: scenarios[0].experiment.jobs[0].workload.path")


def _inline_point(path: Path, exp: dict):
    """The one point of inline experiment ``exp`` as a suite ``path`` loads it (no run)."""
    write(path.parent, {"name": "t", "engines": ["native", "simgrid"], "scenarios": [
        {"name": "s", "experiment": exp, "metrics": [
            {"metric": "makespan_ns", "tolerance": {"relative": 0.1}}]}]}, path.name)
    (point,) = SuiteRunner(path)._load(0, "native").points
    return point


def test_an_inline_experiments_paths_are_resolved_beside_the_suite(tmp_path, monkeypatch):
    """Every relative path of an inline experiment, and nothing else, is the loader's own
    resolution against the suite's folder (the suite given by a relative path): the machine
    file, a DocumentPath parameter in `params:` form or in an inline machine's topology, a
    job's (flat), and the sweep values that set them (a job by position or by name)."""
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "m.yaml").write_text(yaml.safe_dump(SMALL["machine"]))
    (sub / "g.txt").write_text("0 1\n1 2\n2 0\n")
    monkeypatch.chdir(tmp_path)
    suite_file = Path("sub/s.crossval.yaml")
    point = _inline_point(suite_file, {
        "machine": {"topology": {"kind": "graph_file", "path": "g.txt"}},
        "workload": {"kind": "program", "params": {"path": "a.goal", "format": "goal"}},
        "sweep": {"workload.params.path": ["b.goal"]}})
    assert point.machine.topology.params.path == str(sub / "g.txt")
    assert point.workload.params.path == str(sub / "b.goal")
    exp = {"machine": "m.yaml",
           "jobs": [{"name": "a", "workload": {"kind": "program", "path": "a.goal"},
                     "placement": {"kind": "contiguous", "count": 2}},
                    {"name": "b", "workload": {"kind": "program",
                                               "params": {"path": "/abs/b.goal"}},
                     "placement": {"kind": "contiguous", "count": 2}},
                    {"name": "c", "workload": {"kind": "synthetic", "load": 0.1},
                     "placement": {"kind": "rest"}}]}
    point = _inline_point(suite_file, exp)
    assert point.machine.source == str(sub / "m.yaml")
    assert [j.workload.params.path for j in point.jobs[:2]] == [str(sub / "a.goal"),
                                                                "/abs/b.goal"]
    assert point.jobs[2].workload.params.load == 0.1
    for axis in ("jobs.0.workload.path", "jobs.a.workload.path"):
        point = _inline_point(suite_file, {**exp, "sweep": {axis: ["x.goal"]}})
        assert point.jobs[0].workload.params.path == str(sub / "x.goal"), axis
    point = _inline_point(suite_file, {**exp, "machine": "/nowhere/m.yaml",
                                       "sweep": {"machine": ["m.yaml"]}})
    assert point.machine.source == str(sub / "m.yaml")
    assert exp["jobs"][0]["workload"]["path"] == "a.goal"  # the suite's own document is kept


#: a profile of one cluster: every call of phase ``mg`` computes 1 ms (constant sampling)
PROFILE = {"unit": "1us", "phases": {"mg": {"clusters": [{"cdf": [[900, 0], [1100, 1]]}]}}}
#: rank programs (4 ranks, 2 iterations) that compute from the profile ``p.yaml``
PROFILED = {"kind": "collective", "op": "barrier", "ranks": 4, "iterations": 2,
            "sampling": "constant", "compute": {"profile": "p.yaml", "phase": "mg"}}


@pytest.mark.parametrize("form", ["workload", "job", "sweep"])
def test_a_nested_profile_path_is_read_beside_the_suite(tmp_path, monkeypatch, form):
    """Fuzz round defect: only a component's own path parameters were anchored to the suite's
    folder, so a compute-time `profile:` nested in a workload's `compute` (in the one-job
    form, a job, or a sweep value) was looked up in the temporary folder the suite runs in
    ("no such profile file: /tmp/federation-crossval-.../p.yaml").  It is read beside the
    suite file (the 1 ms per call of the profile there is in the figure), and a missing one
    is named there, at the suite's field."""
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "p.yaml").write_text(yaml.safe_dump(PROFILE))
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(  # where the run starts: never read
        {"unit": "1us", "phases": {"mg": {"clusters": [{"cdf": [[1, 0], [3, 1]]}]}}}))
    machine = {"topology": {"kind": "dragonfly", "p": 2, "a": 4, "h": 2}}
    exp = {"machine": machine, "workload": copy.deepcopy(PROFILED)}
    field = "workload.compute.profile"
    if form == "job":
        exp = {"machine": machine, "jobs": [{"name": "a", "workload": exp["workload"],
                                             "placement": {"kind": "contiguous", "count": 4}}]}
        field = "jobs[0].workload.compute.profile"
    elif form == "sweep":
        exp["workload"]["compute"] = "1us"
        exp["sweep"] = {"workload.compute": [{"profile": "p.yaml", "phase": "mg"}]}
        field = "sweep.workload.compute"
    write(sub, {"name": "t", "engines": ["native", "simgrid"], "scenarios": [
        {"name": "s", "experiment": exp, "metrics": [
            {"metric": "program_completion_ns", "tolerance": {"relative": 0.1}}]}]})
    monkeypatch.chdir(tmp_path)
    run = SuiteRunner("sub/s.crossval.yaml").run(0, "native")
    assert run.status == "ran", run.reason
    assert 2e6 <= run.figures["program_completion_ns"] < 2.1e6  # 2 calls of 1 ms
    (sub / "p.yaml").unlink()
    with pytest.raises(ConfigError) as err:
        SuiteRunner("sub/s.crossval.yaml").run(0, "native")
    assert (err.value.source, err.value.path) == ("sub/s.crossval.yaml",
                                                  f"scenarios[0].experiment.{field}")
    assert str(sub / "p.yaml") in err.value.message
    assert "federation-crossval-" not in err.value.message


@pytest.mark.parametrize(("native", "simgrid", "reason"), [
    # neither engine has the figure: both are named, with the scenario and the metric (it
    # blamed SimGrid alone: "simgrid gave no figure")
    (None, None, "neither native nor simgrid reports makespan_ns for scenario 'small' (it "
                 "has no message, a message was not delivered, or neither engine reports "
                 "this metric)"),
    (None, 1.0, "native gave no figure (a message was not delivered, or the engine does not "
                "report this metric)"),
    (1.0, None, "simgrid gave no figure (a message was not delivered, or the engine does not "
                "report this metric)")])
def test_a_missing_figure_names_exactly_the_engines_without_it(tmp_path, native, simgrid,
                                                                reason):
    from federation.crossval.models import EngineRun

    runner = SuiteRunner(write(tmp_path, suite([{"metric": "makespan_ns",
                                                 "tolerance": {"absolute": 50}}])))
    for engine, value in (("native", native), ("simgrid", simgrid)):
        runner._runs[(0, engine)] = EngineRun(scenario="small", engine=engine, status="ran",
                                              figures={"makespan_ns": value})
    check = runner.check(0, 0, "simgrid")
    assert (check.status, check.reason) == ("error", reason)


def test_a_scenario_without_messages_is_reported_as_neither_engine_having_the_figure(
        simgrid, tmp_path):
    """A program of one compute sends nothing: no makespan on either engine."""
    (tmp_path / "p.goal").write_text("num_ranks 1\nrank 0 {\n a: calc 0\n}\n")
    doc = suite([{"metric": "makespan_ns", "tolerance": {"absolute": 50}}])
    doc["scenarios"][0]["experiment"]["workload"] = {"kind": "program", "path": "p.goal"}
    r = run_cli("crossval", str(write(tmp_path, doc)), "--json", "--out",
                str(tmp_path / "r.json"), cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    (check,) = json.loads((tmp_path / "r.json").read_text())["checks"]
    assert (check["status"], check["reason"]) == (
        "error", "neither native nor simgrid reports makespan_ns for scenario 'small' (it has "
        "no message, a message was not delivered, or neither engine reports this metric)")


def test_a_difference_equal_to_the_tolerance_passes_and_shows_its_digits():
    """Figures are picoseconds in nanoseconds: 774.522 - 763.17 is 11.35200000000009 in
    floats, so an absolute tolerance of exactly 11.352 ns failed, and the table printed the
    difference as -11.35 beside ±11.352.  The bound now holds at equality (to a trillionth of
    the figures), a step past it still fails, and both print six digits."""
    from federation.crossval.models import Tolerance
    from federation.crossval.report import difference_text

    exact = Tolerance(absolute=11.352)
    assert exact.allows(774.522, 763.17) and exact.allows(763.17, 774.522)
    assert not exact.allows(774.523, 763.17)
    assert not Tolerance(absolute=45.411).allows(392.682, 438.094)  # 45.412 apart
    assert Tolerance(absolute=45.412).allows(392.682, 438.094)
    rel = 0.1 * 3 / 3  # a relative bound hit exactly: 0.3 of 3 in floats
    assert Tolerance(relative=rel).allows(3.3, 3.0) and not Tolerance(relative=0.0999).allows(
        3.3, 3.0)
    assert difference_text(763.17 - 774.522, -0.01466) == "-11.352 (-1.466%)"
    assert difference_text(392.682 - 438.094, None) == "-45.412"
