"""The output folder and the results document: refused when in the way, written point by point,
kept (marked incomplete) on a late error or Ctrl-C, and enough to re-run every point."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pyarrow.parquet as pq
import yaml

MACHINE = "topology: {kind: dragonfly, p: 1, a: 2, h: 1}\n"


def run_cli(*args, cwd, **kw):
    env = {**os.environ, "FEDERATION_DISABLE_PLUGIN_AUTOLOAD": "1"}
    return subprocess.run([sys.executable, "-c", "from federation.cli import entry; entry()",
                           *args], capture_output=True, text=True, cwd=cwd, env=env, **kw)


def experiment(tmp_path, sweep="[0.1, 0.2]", extra=""):
    (tmp_path / "m.yaml").write_text(MACHINE)
    (tmp_path / "e.yaml").write_text(
        "machine: m.yaml\n"
        "workload: {kind: synthetic, load: 0.1}\n"
        "stop: {warmup: 0.2us, measure: 1us}\n"
        f"sweep: {{workload.load: {sweep}}}\n{extra}")


def test_version(tmp_path):
    import federation

    r = run_cli("--version", cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.strip() == f"federation {federation.__version__}"


def test_existing_output_folder_is_refused_then_replaced_whole(tmp_path):
    experiment(tmp_path, sweep="[0.1, 0.2, 0.3]")
    assert run_cli("run", "e.yaml", "--out", "o", cwd=tmp_path).returncode == 0
    assert {p.name for p in (tmp_path / "o").iterdir()} >= {"packets-2.parquet", "ports-2.parquet"}
    before = (tmp_path / "o" / "results.json").read_bytes()
    # a second run into the same folder is refused and leaves it alone
    r = run_cli("run", "e.yaml", "--out", "o", "--set", "sweep={workload.load: [0.1]}",
                cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.strip() == ("error: --out: o exists and is not empty; choose another folder "
                                "or pass --overwrite to replace it whole")
    assert (tmp_path / "o" / "results.json").read_bytes() == before
    # --overwrite replaces the folder whole: no table of the old points 1 and 2, no mixed formats
    r = run_cli("run", "e.yaml", "--out", "o", "--overwrite", "--set",
                "sweep={workload.load: [0.1]}", "--set", "outputs.format=csv", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    names = sorted(p.name for p in (tmp_path / "o").iterdir())
    assert names == ["messages-0.csv", "nics-0.csv", "packets-0.csv", "performance.json",
                     "ports-0.csv",
                     "results.json"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".federation-")]


def test_output_folder_is_checked_before_simulating(tmp_path):
    experiment(tmp_path)
    (tmp_path / "afile").write_text("x")
    cases = {
        "afile/sub": "--out: cannot write the output folder afile/sub: ",
        "afile": "--out: afile exists and is not a folder",
        "/proc/x": "--out: cannot write the output folder /proc/x: ",
    }
    for out, message in cases.items():
        t0 = time.perf_counter()
        r = run_cli("run", "e.yaml", "--out", out, cwd=tmp_path)
        assert r.returncode == 2, out
        assert r.stderr.startswith("error: " + message), r.stderr
        assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    r = run_cli("schema", "--out", "afile/sub", cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.startswith("error: --out: cannot write afile/sub")
    assert time.perf_counter() - t0 < 60


def test_outputs_dir_is_relative_to_the_experiment_file(tmp_path):
    sub = tmp_path / "exp"
    sub.mkdir()
    experiment(sub, sweep="[0.1]", extra="outputs: {dir: here}\n")
    r = run_cli("run", "exp/e.yaml", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (sub / "here" / "results.json").exists()
    r = run_cli("run", "exp/e.yaml", cwd=tmp_path)
    assert r.returncode == 2 and "exp/e.yaml: outputs.dir: " in r.stderr


#: a sweep whose point 1 saturates the network (every node sends to node 0 at full load):
#: an error only the run finds, when more packets exist at once than --max-memory allows
SATURATING = ("machine: m.yaml\n"
              "workload: {kind: synthetic, load: 0.1}\n"
              "stop: {warmup: 0.2us, measure: 20ms}\n"
              "outputs: {packets: false, messages: false}\n"
              "sweep: {workload: [{kind: synthetic, load: 0.002}, "
              "{kind: synthetic, load: 1.0, pattern: incast}, {kind: synthetic, load: 0.003}]}\n")


def test_late_error_keeps_finished_points(tmp_path):
    """Point 1 saturates the network: an error found only when it is simulated (a window
    without traffic, the case this test used, is now refused before any point runs)."""
    (tmp_path / "m.yaml").write_text(MACHINE)
    (tmp_path / "e.yaml").write_text(SATURATING)
    assert run_cli("validate", "e.yaml", "--max-memory", "40MB", cwd=tmp_path).returncode == 0
    r = run_cli("run", "e.yaml", "--out", "o", "--max-memory", "40MB", cwd=tmp_path)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr
    assert "packets exist at once" in lines[0] and "the network is saturated" in lines[0]
    assert "1 of 3 points finished and are kept in o (results.json marked incomplete)" in lines[0]
    doc = json.loads((tmp_path / "o" / "results.json").read_text())
    assert doc["status"] == "incomplete" and doc["missing_points"] == [1, 2]
    assert "the network is saturated" in doc["error"]
    assert [p["index"] for p in doc["points"]] == [0]
    assert pq.read_table(tmp_path / "o" / "ports-0.parquet").num_rows > 0
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == [
        "nics-0.parquet", "performance.json", "ports-0.parquet", "results.json"]


def test_error_before_any_point_leaves_nothing(tmp_path):
    experiment(tmp_path, sweep="[1.0e-12, 0.2]")
    r = run_cli("run", "e.yaml", "--out", "o", cwd=tmp_path)
    assert r.returncode == 2 and "kept" not in r.stderr
    assert not (tmp_path / "o").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.yaml", "m.yaml"]


def test_ctrl_c_keeps_finished_points(tmp_path):
    (tmp_path / "e.yaml").write_text(
        "machine: {topology: {kind: dragonfly, p: 2, a: 4, h: 2}}\n"
        "workload: {kind: synthetic, load: 0.3}\n"
        # points long enough (about a second each) that the signal lands mid-sweep even on a
        # fast, idle machine
        "stop: {warmup: 1us, measure: 2000us}\n"
        "sweep: {seed: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]}\n")
    env = {**os.environ, "FEDERATION_DISABLE_PLUGIN_AUTOLOAD": "1"}
    proc = subprocess.Popen([sys.executable, "-c", "from federation.cli import entry; entry()",
                             "run", "e.yaml", "--out", "o"], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            # a shell's background job (CI) ignores SIGINT: undo that
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 240
    while time.time() < deadline:
        if list(tmp_path.glob(".federation-*/packets-1.parquet")):  # point 0 is complete
            break
        time.sleep(0.05)
    else:
        proc.kill()
        raise AssertionError("the first point never finished")
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: interrupted by SIGINT; "), (out, err)
    assert "points finished and are kept in o (results.json marked incomplete)" in lines[0]
    doc = json.loads((tmp_path / "o" / "results.json").read_text())
    done = [p["index"] for p in doc["points"]]
    assert doc["status"] == "incomplete" and doc["error"] == "interrupted by SIGINT"
    assert done == list(range(len(done))) and doc["missing_points"] == list(range(len(done), 12))
    for i in done:
        assert (tmp_path / "o" / f"packets-{i}.parquet").exists()


def test_results_say_what_was_run_and_rerun_identically(tmp_path):
    """Each point carries the resolved experiment: re-running it alone gives the same summary;
    results.json does not depend on the working directory."""
    experiment(tmp_path, sweep="[0.1, 0.3]")
    (tmp_path / "elsewhere").mkdir()
    assert run_cli("run", "e.yaml", "--out", "a", cwd=tmp_path).returncode == 0
    r = run_cli("run", "../e.yaml", "--out", "../b", cwd=tmp_path / "elsewhere")
    assert r.returncode == 0, r.stderr
    a = (tmp_path / "a" / "results.json").read_bytes()
    assert a == (tmp_path / "b" / "results.json").read_bytes()
    doc = json.loads(a)
    assert doc["source"] == str(tmp_path / "e.yaml")
    point = doc["points"][1]
    res = point["resolved"]
    m = res["machine"]
    assert set(m["links"]) == {"terminal", "local", "global"}
    assert m["links"]["global"] == {"bandwidth": 4.7 * 2**30, "latency": 100e-9,
                                    "buffer": 16384}
    assert m["router"] == {"delay": 50e-9, "vcs": 3, "injection_vc": "spread",
                           "arbiter": {"kind": "oldest_first"},
                           "switching": "store_and_forward"}
    assert m["nic"]["bandwidth"] > 0
    assert m["topology"]["kind"] == "dragonfly" and m["qos"] == {"kind": "none"}
    assert res["workload"]["load"] == 0.3 and "sweep" not in res
    assert res["stop"] == {"warmup": 0.2e-6, "measure": 1e-6, "messages": None}
    assert point["routing_description"].startswith("dragonfly minimal")
    assert set(point["components"]) == {"topology", "qos", "arbiter", "routing", "workload",
                                        "engine"}
    assert point["components"]["routing"]["source"].startswith("hpc-federation ")
    (tmp_path / "rerun.yaml").write_text(yaml.safe_dump(res))
    r = run_cli("run", "rerun.yaml", "--json", "--out", "c", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["points"][0]["summary"] == point["summary"]


def test_a_streamed_run_is_allowed_the_rows_its_limit_leaves(tmp_path):
    """A streamed run's packets were all charged as messages held whole: at load 0.3 for
    3 ms under a 36 MiB limit (which validate and the run's own check accept) the rows'
    allowance fell to its floor, below the first chunk, and the idle network was stopped at
    t=0 as "saturated"."""
    (tmp_path / "e.yaml").write_text(
        "machine: {topology: {kind: dragonfly, p: 2, a: 4, h: 2}}\n"
        "workload: {kind: synthetic, load: 0.3}\nstop: {warmup: 0s, measure: 3ms}\n"
        "outputs: {packets: false, messages: false}\n")
    r = run_cli("run", "e.yaml", "--max-memory", "36MiB", "--out", "o", cwd=tmp_path)
    assert r.returncode == 0, r.stderr


def test_a_halo3d_points_resolved_document_reruns(tmp_path):
    """halo3d refuses a bare non-zero ``computetime`` (ember's unit is ns, ours s), and the
    resolved document wrote it as bare seconds (1e-07): re-running it was refused."""
    (tmp_path / "e.yaml").write_text(
        "machine: {topology: {kind: torus, dims: [2, 2, 2]}}\n"
        "workload: {kind: halo3d, nx: 4, ny: 4, nz: 4, pex: 2, pey: 2, pez: 2, "
        "computetime: 100ns, copytime: 3ns}\n")
    assert run_cli("run", "e.yaml", "--out", "a", cwd=tmp_path).returncode == 0
    point = json.loads((tmp_path / "a" / "results.json").read_text())["points"][0]
    assert point["resolved"]["workload"]["computetime"] == "1.0000000000000001e-07s"
    (tmp_path / "rerun.json").write_text(json.dumps(point["resolved"]))
    r = run_cli("run", "rerun.json", "--json", "--out", "b", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["points"][0]["summary"] == point["summary"]
