"""Sweep points as Dask tasks (``federation run --workers N`` / ``--scheduler ADDRESS``): the same
bytes as a serial run, the same partial results on a failing point, one refusal for bad options.

Each test that starts a cluster costs a few seconds (worker processes import numpy, numba and
the engine), so the machine is tiny and the runs short.
"""

from __future__ import annotations

import json
import os

import pytest
from conftest import one_error, run_cli

MACHINE = "topology: {kind: dragonfly, p: 1, a: 2, h: 1}\n"


def experiment(tmp_path, sweep: str) -> None:
    (tmp_path / "m.yaml").write_text(MACHINE)
    (tmp_path / "e.yaml").write_text(
        "machine: m.yaml\n"
        "workload: {kind: synthetic, load: 0.1}\n"
        "stop: {warmup: 0.2us, measure: 2us}\n"
        f"sweep: {sweep}\n")


def files(folder) -> dict[str, bytes]:
    """Every file of an output folder but performance.json (wall-clock figures)."""
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())
            if p.name != "performance.json"}


def test_two_workers_give_the_serial_bytes(tmp_path):
    """8 points (4 loads x 2 seeds) on a two-process local cluster: results.json and every
    table byte-identical to the serial run's, points in index order."""
    experiment(tmp_path, "{workload.load: [0.1, 0.4, 0.2, 0.3], seed: [1, 2]}")
    serial = run_cli("run", "e.yaml", "--out", "serial", cwd=tmp_path)
    assert serial.returncode == 0, serial.stderr
    spread = run_cli("run", "e.yaml", "--out", "spread", "--workers", "2", cwd=tmp_path)
    assert spread.returncode == 0, spread.stderr
    assert spread.stderr == ""  # no worker log, no progress bar when stderr is not a terminal
    a, b = files(tmp_path / "serial"), files(tmp_path / "spread")
    expected = {f"{t}-{i}.parquet" for t in ("packets", "ports", "messages", "nics")
                for i in range(8)}
    assert set(a) == set(b) == expected | {"results.json"}
    for name in a:
        assert a[name] == b[name], name
    doc = json.loads(b["results.json"])
    assert doc["status"] == "complete"
    assert [p["index"] for p in doc["points"]] == list(range(8))
    perf = json.loads((tmp_path / "spread" / "performance.json").read_text())
    assert len(perf) == 8 and all(p["wall_seconds"] > 0 for p in perf)
    # the summary table printed after the run is the serial one but for the wall-clock column
    def table(out: str) -> list[str]:
        return [line.rsplit(maxsplit=1)[0] for line in out.splitlines()[2:11]]

    assert table(spread.stdout) == table(serial.stdout)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".federation-")]


def test_two_workers_run_qos_policies_like_a_serial_run(tmp_path):
    """A class policy's arbiter class is made at run time (no importable name), so Dask pickled
    it by value and the worker's compiled arbitrate function was a copy, not its module's: the
    engine refused every QoS point ("must be defined at module level").  A sweep over no QoS
    and both class policies gives the serial bytes."""
    (tmp_path / "e.yaml").write_text(
        "machine:\n"
        "  topology: {kind: dragonfly, p: 1, a: 2, h: 1}\n"
        "  router: {vcs: 4}\n"
        "workload: {kind: synthetic, load: 0.2}\n"
        "stop: {warmup: 0us, measure: 1us}\n"
        "sweep:\n"
        "  machine.qos:\n"
        "    - {kind: none}\n"
        "    - {kind: bandwidth_caps, classes: [{name: high, cap: 0.7}, {name: low, cap: 0.3}],"
        " window: 1us}\n"
        "    - {kind: strict_priority, classes: [{name: high}, {name: low}]}\n")
    serial = run_cli("run", "e.yaml", "--out", "serial", cwd=tmp_path)
    assert serial.returncode == 0, serial.stderr
    spread = run_cli("run", "e.yaml", "--out", "spread", "--workers", "2", cwd=tmp_path)
    assert spread.returncode == 0 and spread.stderr == "", spread.stderr
    a, b = files(tmp_path / "serial"), files(tmp_path / "spread")
    assert len(a) == 13 and a == b
    assert json.loads(b["results.json"])["status"] == "complete"


@pytest.fixture(scope="module")
def scheduler():
    """An existing two-process cluster on the loopback interface, as ``--scheduler`` uses."""
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=":0") as cluster:
        yield cluster.scheduler_address


def test_existing_cluster_gives_the_serial_bytes(tmp_path, scheduler):
    """--scheduler: the workers return their tables and the client writes them; same bytes."""
    experiment(tmp_path, "{workload.load: [0.3, 0.1], seed: [3, 4]}")
    assert run_cli("run", "e.yaml", "--out", "serial", cwd=tmp_path).returncode == 0
    r = run_cli("run", "e.yaml", "--out", "spread", "--scheduler", scheduler, cwd=tmp_path)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    a, b = files(tmp_path / "serial"), files(tmp_path / "spread")
    assert len(a) == 17 and a == b


def test_failing_point_keeps_finished_points_like_a_serial_run(tmp_path, scheduler):
    """Point 1 saturates the network (every node sends to node 0 at full load), found only
    when a worker simulates it: the error a serial run stops at, exit 2, results.json
    incomplete, every finished point kept with its tables."""
    (tmp_path / "m.yaml").write_text(MACHINE)
    (tmp_path / "e.yaml").write_text(
        "machine: m.yaml\n"
        "workload: {kind: synthetic, load: 0.1}\n"
        "stop: {warmup: 0.2us, measure: 20ms}\n"
        "outputs: {packets: false, messages: false}\n"
        "sweep: {workload: [{kind: synthetic, load: 0.002}, "
        "{kind: synthetic, load: 1.0, pattern: incast}, {kind: synthetic, load: 0.003}, "
        "{kind: synthetic, load: 0.004}, {kind: synthetic, load: 0.005}]}\n")
    limit = ("--max-memory", "40MB")
    assert run_cli("validate", "e.yaml", *limit, cwd=tmp_path).returncode == 0
    serial = one_error(run_cli("run", "e.yaml", "--out", "serial", *limit, cwd=tmp_path))
    line = one_error(run_cli("run", "e.yaml", "--out", "spread", "--scheduler", scheduler,
                             *limit, cwd=tmp_path))
    head = serial.split("; 1 of 5 points finished")[0]
    assert "packets exist at once" in head and "the network is saturated" in head
    assert line.startswith(head + "; ") and line.endswith(
        " points finished and are kept in spread (results.json marked incomplete)")
    doc = json.loads((tmp_path / "spread" / "results.json").read_text())
    kept = [p["index"] for p in doc["points"]]
    assert doc["status"] == "incomplete" and doc["error"] == head.removeprefix("error: ")
    assert 0 in kept and 1 not in kept and 1 in doc["missing_points"]
    assert sorted(kept + doc["missing_points"]) == list(range(5))
    names = {p.name for p in (tmp_path / "spread").iterdir()}
    assert names == {"results.json", "performance.json"} | {
        f"{t}-{i}.parquet" for t in ("ports", "nics") for i in kept}
    # a point both runs finished has the same bytes in both
    assert files(tmp_path / "spread")["ports-0.parquet"] == (
        tmp_path / "serial" / "ports-0.parquet").read_bytes()


@pytest.mark.parametrize("args, message", [
    (["--workers", "0"], "--workers: must be at least 1 (1 runs the points one after the other "
                         "in this process), got 0"),
    (["--workers", "-3"], "--workers: must be at least 1 (1 runs the points one after the other "
                          "in this process), got -3"),
    (["--workers", "2", "--scheduler", "tcp://127.0.0.1:8786"],
     "--workers: give either --workers N (start a local cluster) or --scheduler ADDRESS (use an "
     "existing one), not both"),
])
def test_bad_worker_options_are_refused_before_anything(tmp_path, args, message):
    experiment(tmp_path, "{workload.load: [0.1, 0.2]}")
    assert one_error(run_cli("run", "e.yaml", "--out", "o", *args, cwd=tmp_path)) == (
        f"error: {message}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.yaml", "m.yaml"]


def test_one_worker_is_the_serial_path(tmp_path, monkeypatch):
    """``--workers 1`` never imports Dask's scheduler: it is today's serial run."""
    import sys

    from federation.pipeline.load import load_experiment
    from federation.pipeline.run import run_experiment

    experiment(tmp_path, "{workload.load: [0.1, 0.2]}")
    monkeypatch.setitem(sys.modules, "distributed", None)  # importing it would fail
    result = run_experiment(load_experiment(tmp_path / "e.yaml"), tmp_path / "o", workers=1)
    assert result.status == "complete" and len(result.points) == 2


def test_workers_get_the_clients_federation_environment(monkeypatch):
    """A worker (here: this process) takes the client's FEDERATION_* variables and reloads its
    plugins when they differ, since the plugin manager reads them once per process."""
    from federation.pipeline import distributed
    from federation.plugin import registry as manager

    monkeypatch.setenv("FEDERATION_STALE", "x")
    monkeypatch.delenv("FEDERATION_DISABLE_PLUGINS", raising=False)
    monkeypatch.setattr(manager, "_MANAGER", object())
    client_env = {k: v for k, v in os.environ.items()
                  if k.startswith("FEDERATION_") and k != "FEDERATION_STALE"}
    client_env["FEDERATION_DISABLE_PLUGINS"] = "nonexistent"
    distributed._sync_env(client_env)
    assert distributed.federation_env() == client_env and manager._MANAGER is None
    loaded = object()
    monkeypatch.setattr(manager, "_MANAGER", loaded)
    distributed._sync_env(client_env)  # same variables: the loaded plugins stay
    assert manager._MANAGER is loaded


def test_ctrl_c_cancels_the_points_and_closes_the_cluster(tmp_path):
    """SIGINT to the client once a point is finished: exit 130 with one line, the finished
    points kept (no table of another point), and no worker process left behind."""
    import signal
    import subprocess
    import sys
    import time

    import psutil  # a dependency of distributed

    (tmp_path / "e.yaml").write_text(
        "machine: {topology: {kind: dragonfly, p: 2, a: 4, h: 2}}\n"
        "workload: {kind: synthetic, load: 0.3}\n"
        "stop: {warmup: 1us, measure: 500us}\n"
        "sweep: {seed: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]}\n")
    env = {**os.environ, "FEDERATION_DISABLE_PLUGIN_AUTOLOAD": "1"}
    proc = subprocess.Popen([sys.executable, "-c", "from federation.cli import entry; entry()",
                             "run", "e.yaml", "--out", "o", "--workers", "2"], cwd=tmp_path,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            # a shell's background job (CI) ignores SIGINT: undo that
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 240
    # the workers write their points' tables (messages last): with 2 workers, a third point's
    # messages table means one worker has simulated a second point since its first one
    # finished, long after the client took that one in
    while len(list(tmp_path.glob(".federation-*/messages-*.parquet"))) < 3:
        if time.time() > deadline or proc.poll() is not None:
            proc.kill()
            raise AssertionError(f"no point finished: {proc.communicate()}")
        time.sleep(0.05)
    workers = psutil.Process(proc.pid).children(recursive=True)
    assert workers
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: interrupted by SIGINT; "), (out, err)
    doc = json.loads((tmp_path / "o" / "results.json").read_text())
    kept = [p["index"] for p in doc["points"]]
    assert doc["status"] == "incomplete" and doc["error"] == "interrupted by SIGINT"
    assert kept and len(kept) < 16 and sorted(kept + doc["missing_points"]) == list(range(16))
    assert {p.name for p in (tmp_path / "o").iterdir()} == {"results.json", "performance.json"} | {
        f"{t}-{i}.parquet" for t in ("packets", "ports", "messages", "nics") for i in kept}
    gone, alive = psutil.wait_procs(workers, timeout=30)
    assert not alive, alive


def test_a_worker_returns_its_tables_rows_not_its_spool_folders(tmp_path, spool_dir):
    """An existing cluster's worker returns a point's tables to the client: the rows travel.
    A spool pickled carried only the name of its folder on the worker's disk, which the worker
    removes with the object (the client could read it only on a shared disk, and only while the
    worker had not collected it yet)."""
    import gc
    import pickle

    from federation.pipeline.bounds import default_max_memory
    from federation.pipeline.distributed import federation_env, run_task
    from federation.pipeline.load import load_experiment

    path = tmp_path / "e.yaml"
    path.write_text("machine: {topology: {kind: dragonfly, p: 2, a: 4, h: 2}}\n"
                    "workload: {kind: synthetic, load: 0.3}\n"
                    "stop: {warmup: 1us, measure: 5us}\n"
                    "outputs: {packets: true, messages: true}\n")
    point = load_experiment(path).points[0]
    gc.disable()
    try:
        result, _, tables = run_task(0, point, default_max_memory(), {}, federation_env(),
                                     None, None, True)
        sent = pickle.dumps(tables)
        assert list(spool_dir.glob("federation-table-*")) == []  # the worker's folders are gone
    finally:
        gc.enable()
    got = pickle.loads(sent)
    assert len(got["packets"]["packet"]) == result.summary.packets_generated > 0
    assert len(got["messages"]["message"]) > 0


def _never_retrieved(filename: str) -> None:
    """A future whose exception was raised in code from ``filename``, dropped unread: asyncio
    logs "Future exception was never retrieved" when it is collected."""
    import asyncio
    import gc

    scope: dict = {}
    exec(compile("def fail():\n    raise TimeoutError('closing')\n", filename, "exec"), scope)
    loop = asyncio.new_event_loop()
    try:
        future = loop.create_future()
        try:
            scope["fail"]()
        except TimeoutError as exc:
            future.set_exception(exc)
        del future
        gc.collect()
    finally:
        loop.close()


def test_dasks_unread_futures_stay_silent_after_the_cluster_closes(caplog):
    """A client closed under load left a timed-out future of Dask's; asyncio logged it once the
    loggers were restored, after the CLI's one-line refusal.  Only futures whose exception went
    through Dask's or Tornado's code are dropped."""
    from federation.pipeline.distributed import _quiet_dask

    _quiet_dask()()  # installs the filter, restores the levels
    with caplog.at_level("ERROR", logger="asyncio"):
        _never_retrieved(os.path.join("site-packages", "distributed", "comm", "core.py"))
        assert not [r for r in caplog.records if "never retrieved" in r.getMessage()]
        _never_retrieved(os.path.join("somewhere", "mine.py"))
        assert [r for r in caplog.records if "never retrieved" in r.getMessage()]
