"""Stop signals (issue 17, cases 3 and 17): SIGTERM and SIGHUP keep the finished points as
Ctrl-C does, a repeated signal does not cut the saving short, an interrupted run never replaces
a complete one, and a signal the process was started ignoring stays ignored."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from federation import interrupts

#: points long enough (about a second each) that a signal lands mid-sweep on an idle machine
LONG = ("machine: {topology: {kind: dragonfly, p: 2, a: 4, h: 2}}\n"
        "workload: {kind: synthetic, load: 0.3}\n"
        "stop: {warmup: 1us, measure: 1000us}\n"
        "sweep: {seed: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]}\n")


def start(tmp_path: Path, *args: str, ignore: tuple[int, ...] = ()) -> subprocess.Popen:
    """``federation run e.yaml ARGS`` in the background, with SIGINT taken as a terminal's
    foreground job takes it (a shell's background job, as in CI, ignores it), and ``ignore``
    ignored from the start."""
    def child() -> None:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        for s in ignore:
            signal.signal(s, signal.SIG_IGN)

    env = {**os.environ, "FEDERATION_DISABLE_PLUGIN_AUTOLOAD": "1"}
    return subprocess.Popen([sys.executable, "-c", "from federation.cli import entry; entry()",
                             "run", "e.yaml", *args], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=child)


def wait_for(proc: subprocess.Popen, tmp_path: Path, pattern: str, count: int = 1) -> None:
    deadline = time.time() + 240
    while len(list(tmp_path.glob(pattern))) < count:
        if time.time() > deadline or proc.poll() is not None:
            proc.kill()
            raise AssertionError(f"{pattern} never appeared: {proc.communicate()}")
        time.sleep(0.02)


def kept(folder: Path, n: int, error: str) -> list[int]:
    """The finished points a stopped run kept: results.json incomplete, every kept point's
    tables there and no other file, the others missing; returns the kept indices."""
    doc = json.loads((folder / "results.json").read_text())
    done = [p["index"] for p in doc["points"]]
    assert doc["status"] == "incomplete" and doc["error"] == error
    assert done and sorted(done + doc["missing_points"]) == list(range(n))
    assert {p.name for p in folder.iterdir()} == {"results.json", "performance.json"} | {
        f"{t}-{i}.parquet" for t in ("packets", "ports", "messages", "nics") for i in done}
    return done


def no_leftovers(tmp_path: Path) -> None:
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".federation-")]


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_keep_the_finished_points(tmp_path, sig):
    """``kill``, ``timeout``, a batch system's limit, a closed terminal: each lost every
    finished point and left a hidden .federation-* folder.  Now as Ctrl-C: kept, exit
    128 + the signal's number."""
    (tmp_path / "e.yaml").write_text(LONG)
    proc = start(tmp_path, "--out", "o")
    wait_for(proc, tmp_path, ".federation-*/packets-1.parquet")  # point 0 is complete
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    name = signal.Signals(sig).name
    assert proc.returncode == 128 + sig, err
    line = one_line(err)
    done = kept(tmp_path / "o", 12, f"interrupted by {name}")
    assert line == (f"error: interrupted by {name}; {len(done)} of 12 points finished and are "
                    "kept in o (results.json marked incomplete)")
    no_leftovers(tmp_path)


def test_repeated_signals_do_not_cut_the_saving_short(tmp_path):
    """Ctrl-C pressed three times, then a SIGTERM: the first one stops the run, the others
    are ignored while the finished points are saved."""
    (tmp_path / "e.yaml").write_text(LONG)
    proc = start(tmp_path, "--out", "o")
    wait_for(proc, tmp_path, ".federation-*/packets-1.parquet")
    for s in (signal.SIGINT, signal.SIGINT, signal.SIGINT, signal.SIGTERM):
        proc.send_signal(s)
        time.sleep(0.01)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert one_line(err).startswith("error: interrupted by SIGINT; ")
    kept(tmp_path / "o", 12, "interrupted by SIGINT")
    no_leftovers(tmp_path)


def test_interrupted_run_never_replaces_a_complete_one(tmp_path):
    """Ctrl-C with --overwrite replaced a complete earlier run with the partial one.  Now the
    earlier run stays and the partial one is written beside it, and the message says where."""
    (tmp_path / "e.yaml").write_text(LONG)
    env = {**os.environ, "FEDERATION_DISABLE_PLUGIN_AUTOLOAD": "1"}
    r = subprocess.run([sys.executable, "-c", "from federation.cli import entry; entry()",
                        "run", "e.yaml", "--out", "o", "--set", "sweep={seed: [1]}",
                        "--set", "stop.measure=5us"], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    before = {p.name: p.read_bytes() for p in (tmp_path / "o").iterdir()}
    (tmp_path / "o.incomplete-1").mkdir()  # taken: the next free number is used
    (tmp_path / "o.incomplete-1" / "x").write_text("")
    proc = start(tmp_path, "--out", "o", "--overwrite")
    wait_for(proc, tmp_path, ".federation-*/packets-1.parquet")
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err
    done = kept(tmp_path / "o.incomplete-2", 12, "interrupted by SIGTERM")
    assert one_line(err) == (
        f"error: interrupted by SIGTERM; {len(done)} of 12 points finished and are kept in "
        "o.incomplete-2 (results.json marked incomplete); o holds a complete earlier run, left "
        "as it was")
    assert {p.name: p.read_bytes() for p in (tmp_path / "o").iterdir()} == before
    no_leftovers(tmp_path)


def test_a_signal_ignored_from_the_start_stays_ignored(tmp_path):
    """``nohup`` ignores SIGHUP so that a run survives its terminal: it still does."""
    (tmp_path / "e.yaml").write_text(LONG.replace("seed: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]",
                                                  "seed: [1, 2, 3]"))
    proc = start(tmp_path, "--out", "o", ignore=(signal.SIGHUP,))
    wait_for(proc, tmp_path, ".federation-*/packets-1.parquet")
    proc.send_signal(signal.SIGHUP)
    _, err = proc.communicate(timeout=240)
    assert proc.returncode == 0, err
    assert json.loads((tmp_path / "o" / "results.json").read_text())["status"] == "complete"


def test_repeated_ctrl_c_with_workers_closes_the_cluster_quietly(tmp_path):
    """Ctrl-C pressed again while a local Dask cluster closed printed Dask's exit-handler
    traceback.  Now: one line, exit 130, the finished points kept, no worker left."""
    import psutil  # a dependency of distributed

    (tmp_path / "e.yaml").write_text(LONG.replace("1000us", "500us"))
    proc = start(tmp_path, "--out", "o", "--workers", "2")
    # a third messages table: one worker has simulated a second point since its first one
    # finished, long after the client took that one in
    wait_for(proc, tmp_path, ".federation-*/messages-*.parquet", 3)
    workers = psutil.Process(proc.pid).children(recursive=True)
    for _ in range(3):
        proc.send_signal(signal.SIGINT)
        time.sleep(0.2)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert one_line(err).startswith("error: interrupted by SIGINT; ")
    kept(tmp_path / "o", 12, "interrupted by SIGINT")
    _, alive = psutil.wait_procs(workers, timeout=30)
    assert not alive, alive
    no_leftovers(tmp_path)


# ------------------------------------------------------------------ the mechanism itself
in_main_thread = pytest.mark.skipif(
    threading.current_thread() is not threading.main_thread(),
    reason="signal handlers are installed from the main thread only")


@in_main_thread
def test_handling_turns_sigterm_into_stopped_and_ignores_repeats():
    with pytest.raises(interrupts.Stopped) as stop, interrupts.handling():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(1)  # the handler raises here
    assert stop.value.signum == signal.SIGTERM
    assert interrupts.exit_code(stop.value) == 143
    assert interrupts.signal_name(stop.value) == "SIGTERM"
    assert interrupts.signal_name(KeyboardInterrupt()) == "SIGINT"
    with pytest.raises(interrupts.Stopped), interrupts.handling():
        try:
            os.kill(os.getpid(), signal.SIGHUP)
            time.sleep(1)
        finally:  # cleaning up after the first signal: later ones are ignored
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.05)
            assert interrupts.stopping()
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL  # restored


@in_main_thread
@pytest.mark.usefixtures("sigint_default")
def test_held_defers_a_signal_to_the_end_of_the_block():
    steps = []
    with pytest.raises(interrupts.Stopped), interrupts.held():
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)
        steps.append("finished")  # the block runs to its end
    assert steps == ["finished"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_stop_while_spooled_tables_are_read_back_stays_a_stop(monkeypatch):
    """test_sigterm_and_sighup_keep_the_finished_points failed in a fresh-clone .ci/run: SIGTERM
    landed while a spooled table was read back, and came out as "TypeError: expected str,
    bytes or os.PathLike object, not BufferedReader" with a traceback.  Given a file, numpy's
    readers (np.load, np.fromfile) ask whether it is an os.PathLike, which runs Python code
    where the signal's exception is raised, and numpy reports a TypeError instead.  Here that
    check raises the stop every time: the spool and the spilled latency store read their files
    without asking it, so they read back what they hold."""
    import numpy as np

    from federation.engine.packet_stats import ValueStore
    from federation.results.spool import Spool

    spool = Spool(["a"])
    spool.append({"a": np.arange(5)})
    store = ValueStore(spill_at=2)
    store.add(np.arange(10, dtype=np.int64))
    store.add(np.arange(3, dtype=np.int64))

    import io

    def stop(cls, other):  # noqa: ANN001
        # only numpy's question about a file object, in this thread (pytest-xdist's own
        # threads ask os.PathLike questions too, and a stop there ends the worker)
        if threading.current_thread() is threading.main_thread() and issubclass(
                other, io.IOBase):
            raise interrupts.Stopped(signal.SIGTERM)
        return NotImplemented

    monkeypatch.setattr(os.PathLike, "__subclasshook__", classmethod(stop))
    os.PathLike._abc_caches_clear()
    assert spool["a"].tolist() == [0, 1, 2, 3, 4]
    assert np.concatenate(list(store.batches(size=4))).tolist() == list(range(10)) + [0, 1, 2]
    store.close()
