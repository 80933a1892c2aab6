"""Dask clusters that fail under a sweep (issue 17, cases 1 and 11): a lost scheduler, no
worker, every worker gone, workers and the scheduler killed at random moments.  The run ends
with exit 2 and one line, keeps the finished points, and ``results.json`` never claims a point
it does not have.

The cluster is real: a ``dask scheduler`` process and a ``dask worker`` process with two worker
processes, on the loopback interface, started per test (killing is the point).  Machines are
small and runs short; each test costs a few seconds of process start-up.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil  # a dependency of distributed
import pytest
from conftest import one_error, run_cli

from federation.schemas import quickstart_path

ENV = {**os.environ, "FEDERATION_DISABLE_PLUGIN_AUTOLOAD": "1"}

#: points of about half a second each, so that a fault lands mid-sweep
SLOW = ("machine: {topology: {kind: dragonfly, p: 2, a: 4, h: 2}}\n"
        "workload: {kind: synthetic, load: 0.3}\n"
        "stop: {warmup: 1us, measure: 500us}\n"
        "sweep: {seed: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]}\n")


def scratch(folder: Path) -> Path:
    """A temporary folder beside the test's (pytest removes both): a process killed mid-point
    leaves its spooled tables there, not in /tmp (nothing can remove a killed process's
    files), and the test's own folder holds only what the run wrote."""
    out = folder.parent / f"{folder.name}-tmp"
    out.mkdir(exist_ok=True)
    return out


class Cluster:
    """A scheduler process and a worker process (``nworkers`` worker processes under it)."""

    def __init__(self, folder: Path, nworkers: int = 2) -> None:
        self.file = folder / f"scheduler-{time.monotonic_ns()}.json"
        env = {**ENV, "TMPDIR": str(scratch(folder))}
        self.scheduler = subprocess.Popen(
            [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
             "--port", "0", "--no-dashboard", "--scheduler-file", str(self.file)],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 60
        while not self.file.exists() or not self.file.read_text().strip():
            assert time.time() < deadline and self.scheduler.poll() is None, "no scheduler"
            time.sleep(0.05)
        self.address = json.loads(self.file.read_text())["address"]
        self.workers: subprocess.Popen | None = None
        if nworkers:
            self.workers = subprocess.Popen(
                [sys.executable, "-m", "distributed.cli.dask_worker", "--scheduler-file",
                 str(self.file), "--nworkers", str(nworkers), "--nthreads", "1",
                 "--no-dashboard", "--memory-limit", "0"],
                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def wait_for_workers(self, n: int) -> None:
        from distributed import Client

        with Client(self.address, timeout=60) as client:
            client.wait_for_workers(n, timeout=120)

    def worker_processes(self) -> list[psutil.Process]:
        if self.workers is None or self.workers.poll() is not None:
            return []
        try:
            return psutil.Process(self.workers.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return []

    def kill_all_workers(self) -> None:
        if self.workers is not None:
            procs = self.worker_processes()
            self.workers.kill()
            for p in procs:
                p.kill()
            self.workers.wait()

    def close(self) -> None:
        self.kill_all_workers()
        self.scheduler.kill()
        self.scheduler.wait()
        self.file.unlink(missing_ok=True)


@pytest.fixture
def cluster(tmp_path):
    made: list[Cluster] = []

    def make(nworkers: int = 2) -> Cluster:
        made.append(Cluster(tmp_path, nworkers))
        return made[-1]

    yield make
    for c in made:
        c.close()


def start(tmp_path: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "from federation.cli import entry; entry()",
                             "run", *args], cwd=tmp_path,
                            env={**ENV, "TMPDIR": str(scratch(tmp_path))}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def wait_for(proc: subprocess.Popen, tmp_path: Path, pattern: str) -> None:
    deadline = time.time() + 240
    while not list(tmp_path.glob(pattern)):
        if time.time() > deadline or proc.poll() is not None:
            proc.kill()
            raise AssertionError(f"{pattern} never appeared: {proc.communicate()}")
        time.sleep(0.02)


def finished(proc: subprocess.Popen) -> subprocess.CompletedProcess:
    out, err = proc.communicate(timeout=180)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def claims_only_what_it_has(folder: Path, n: int, reference: Path | None = None) -> list[int]:
    """What a results folder claims is there, byte for byte (against ``reference``, a serial
    run's folder, when given); ``complete`` exactly when every point is in it.  Returns the
    points it has."""
    doc = json.loads((folder / "results.json").read_text())
    have = [p["index"] for p in doc["points"]]
    assert have == sorted(set(have)) and have
    assert sorted(have + doc["missing_points"]) == list(range(n))
    assert (doc["status"] == "complete") == (not doc["missing_points"])
    assert (doc["error"] is None) == (doc["status"] == "complete")
    names = {"results.json", "performance.json"}
    for p in doc["points"]:
        for name in p["files"].values():
            names.add(name)
            if reference is not None:
                assert (folder / name).read_bytes() == (reference / name).read_bytes(), name
    assert {p.name for p in folder.iterdir()} == names
    return have


def no_leftovers(tmp_path: Path) -> None:
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".federation-")]


def test_lost_scheduler_keeps_the_finished_points(tmp_path, cluster):
    """The scheduler killed mid-sweep: exit 0 with ``status: complete`` and only some points,
    and a CancelledError traceback, before.  Now exit 2, one line, the finished points kept
    and marked incomplete."""
    (tmp_path / "e.yaml").write_text(SLOW)
    c = cluster()
    proc = start(tmp_path, "e.yaml", "--out", "o", "--scheduler", c.address)
    wait_for(proc, tmp_path, ".federation-*/messages-*.parquet")  # the client wrote a point
    c.scheduler.kill()
    line = one_error(finished(proc))
    have = claims_only_what_it_has(tmp_path / "o", 12)
    assert line == (f"error: lost the connection to the Dask scheduler at {c.address}; "
                    f"{len(have)} of 12 points finished and are kept in o (results.json marked "
                    "incomplete)")
    no_leftovers(tmp_path)


def test_scheduler_without_workers_times_out(tmp_path, cluster):
    """A scheduler with no worker showed "0/5 points" forever; now --worker-timeout (60 s by
    default) ends the wait with one line, and nothing is written."""
    c = cluster(nworkers=0)
    t0 = time.monotonic()
    line = one_error(run_cli("run", "--out", "o", "--scheduler", c.address,
                             "--worker-timeout", "1", cwd=tmp_path))
    assert time.monotonic() - t0 < 60
    assert line == (f"error: no worker joined the Dask scheduler at {c.address} within 1 s "
                    "(--worker-timeout); start workers with `dask worker ADDRESS`")
    assert sorted(p.name for p in tmp_path.iterdir()) == [c.file.name]


def test_every_worker_gone_keeps_the_finished_points(tmp_path, cluster):
    (tmp_path / "e.yaml").write_text(SLOW)
    c = cluster()
    proc = start(tmp_path, "e.yaml", "--out", "o", "--scheduler", c.address,
                 "--worker-timeout", "1")
    wait_for(proc, tmp_path, ".federation-*/messages-*.parquet")
    c.kill_all_workers()
    line = one_error(finished(proc))
    have = claims_only_what_it_has(tmp_path / "o", 12)
    assert line == (f"error: every worker of the Dask scheduler at {c.address} left and none "
                    f"came back within 1 s (--worker-timeout); {len(have)} of 12 points "
                    "finished and are kept in o (results.json marked incomplete)")
    no_leftovers(tmp_path)


def test_bad_worker_timeout_is_refused():
    from federation.errors import ConfigError
    from federation.pipeline.distributed import check_options

    for bad in (0, -1, float("inf"), float("nan")):
        with pytest.raises(ConfigError, match="--worker-timeout: must be a positive number"):
            check_options(None, "tcp://x:1", bad)


def test_killed_worker_is_named_as_such():
    from distributed import KilledWorker

    from federation.pipeline.distributed import ClusterError, _task_error
    from federation.pipeline.load import load_experiment

    loaded = load_experiment(None)
    err = _task_error(KilledWorker("k", "w", 3), 2, loaded.points[2])
    assert isinstance(err, ClusterError)
    assert str(err).startswith(f"{loaded.points[2].source} (sweep point 2: workload.load=0.5): "
                               "the Dask workers running this point died each time it was tried "
                               "(Dask gives up after distributed.scheduler.allowed-failures = 3 "
                               "retries)")


def test_faults_at_random_moments_never_claim_a_missing_point(tmp_path, cluster):
    """Fault injection (seeded): on each iteration a worker process is killed at a random
    moment of the sweep, and the scheduler too on some.  Whatever the moments, the run ends
    with exit 0 (every point, the serial run's bytes) or exit 2 and one line, and
    results.json claims exactly the points whose tables it has, byte-identical to the serial
    run's."""
    rng = random.Random(int(os.environ.get("FAULT_SEED", "17")))
    quick = tmp_path / "e.yaml"
    # the quickstart machine with tiny stop windows: points of a few milliseconds
    quick.write_text(f"machine: {quickstart_path().parent / 'machines/quickstart-dragonfly.yaml'}\n"
                     "workload: {kind: synthetic, load: 0.3}\n"
                     "stop: {warmup: 0.1us, measure: 40us}\n"
                     "sweep: {seed: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]}\n")
    serial = run_cli("run", "e.yaml", "--out", "serial", cwd=tmp_path)
    assert serial.returncode == 0, serial.stderr
    outcomes = []
    for it in range(int(os.environ.get("FAULT_ITERATIONS", "3"))):
        c = cluster()
        c.wait_for_workers(2)
        # a worker killed at a moment after the run made its folder (it connects next); the
        # scheduler (on later iterations) at a moment after the first point arrived
        kill_worker: float | None = rng.uniform(0, 3)
        kill_scheduler = rng.uniform(0, 1.5) if it else None
        out = f"o{it}"
        proc = start(tmp_path, "e.yaml", "--out", out, "--scheduler", c.address,
                     "--worker-timeout", "2")
        wait_for(proc, tmp_path, ".federation-*")
        t0 = time.monotonic()
        t1 = None
        while proc.poll() is None:
            t = time.monotonic()
            if kill_worker is not None and t - t0 > kill_worker:
                rng.choice(c.worker_processes()).kill()
                kill_worker = None
            if t1 is None and list(tmp_path.glob(".federation-*/messages-*")):
                t1 = t
            if kill_scheduler is not None and t1 is not None and t - t1 > kill_scheduler:
                c.scheduler.kill()
                kill_scheduler = None
            time.sleep(0.01)
        r = finished(proc)
        assert "Traceback" not in r.stderr, r.stderr
        if r.returncode == 0:
            assert r.stderr == ""
            assert claims_only_what_it_has(tmp_path / out, 12, tmp_path / "serial") == list(
                range(12))
        else:
            one_error(r)
            if (tmp_path / out).exists():
                claims_only_what_it_has(tmp_path / out, 12, tmp_path / "serial")
        outcomes.append(r.returncode)
        c.close()
    no_leftovers(tmp_path)
    assert set(outcomes) <= {0, 2}


def test_sigterm_to_a_worker_of_a_local_cluster_is_survived(tmp_path):
    """A local worker killed by SIGTERM (not held back by the start-up's signal mask): Dask
    runs its point again elsewhere and the sweep completes."""
    (tmp_path / "e.yaml").write_text(SLOW.replace("500us", "200us").replace(
        "seed: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]", "seed: [1, 2, 3, 4, 5, 6]"))
    proc = start(tmp_path, "e.yaml", "--out", "o", "--workers", "2")
    wait_for(proc, tmp_path, ".federation-*/messages-*.parquet")
    workers = [p for p in psutil.Process(proc.pid).children(recursive=True)
               if "spawn_main" in " ".join(p.cmdline())]
    assert workers
    workers[0].send_signal(signal.SIGTERM)
    psutil.wait_procs(workers[:1], timeout=30)
    r = finished(proc)
    assert r.returncode == 0, r.stderr
    assert claims_only_what_it_has(tmp_path / "o", 6) == list(range(6))
