"""How the adapters run child programs (:mod:`federation.adapters.process`): their own process
group, stopped whole on the time limit and on Ctrl-C, and their end worded from the exit
status, not from whatever line they printed last (issue 17, cases 20 and 21)."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from federation.adapters import process


def _gone(pid: int) -> bool:
    """True when ``pid`` no longer runs (gone, or a zombie not reaped yet)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state in ("Z", "X")


def _wait_gone(pid: int, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while not _gone(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    return _gone(pid)


def _parent_with_child(tmp_path: Path, ignore_term: bool = False) -> list[str]:
    """argv of a program that starts a `sleep 60` child, writes its pid, then sleeps."""
    pidfile = tmp_path / "child.pid"
    code = ("import signal, subprocess, sys, time\n"
            + ("signal.signal(signal.SIGTERM, signal.SIG_IGN)\n" if ignore_term else "")
            + "c = subprocess.Popen(['sleep', '60'])\n"
            f"open({str(pidfile)!r}, 'w').write(str(c.pid))\n"
            "print('started', file=sys.stderr, flush=True)\n"
            "time.sleep(60)\n")
    return [sys.executable, "-c", code]


def _child_pid(tmp_path: Path) -> int:
    deadline = time.monotonic() + 10
    pidfile = tmp_path / "child.pid"
    while time.monotonic() < deadline:
        if pidfile.is_file() and pidfile.read_text():
            return int(pidfile.read_text())
        time.sleep(0.02)
    raise AssertionError("the child never started")


def test_time_limit_stops_the_whole_group(tmp_path: Path) -> None:
    t0 = time.monotonic()
    with pytest.raises(process.TimedOut) as err:
        process.run(_parent_with_child(tmp_path), 1.0)
    assert time.monotonic() - t0 < 10
    assert err.value.stderr == "started\n"
    assert _wait_gone(_child_pid(tmp_path))


def test_a_program_ignoring_sigterm_is_killed_after_the_grace(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(process, "GRACE_S", 0.5)
    with pytest.raises(process.TimedOut):
        process.run(_parent_with_child(tmp_path, ignore_term=True), 1.0)
    assert _wait_gone(_child_pid(tmp_path))


@pytest.mark.usefixtures("sigint_default")
def test_ctrl_c_while_waiting_stops_the_group(tmp_path: Path) -> None:
    """The child runs in its own session, so a Ctrl-C reaches only us: the interrupted wait
    must stop the child and what it started, then let the KeyboardInterrupt through."""
    timer = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            process.run(_parent_with_child(tmp_path), 60.0)
    finally:
        timer.cancel()
    assert _wait_gone(_child_pid(tmp_path))


def test_leftovers_of_a_finished_program_are_killed(tmp_path: Path) -> None:
    """A program that exits leaving a background child (its pipes closed) does not leave it
    running."""
    pidfile = tmp_path / "child.pid"
    code = ("import subprocess\n"
            "c = subprocess.Popen(['sleep', '60'], stdout=subprocess.DEVNULL, "
            "stderr=subprocess.DEVNULL)\n"
            f"open({str(pidfile)!r}, 'w').write(str(c.pid))\n")
    done = process.run([sys.executable, "-c", code], 30.0)
    assert done.returncode == 0
    assert _wait_gone(int(pidfile.read_text()))


def test_how_it_ended_and_the_relevant_tail() -> None:
    assert process.how_it_ended(0) == "exited with status 0"
    assert process.how_it_ended(3) == "exited with status 3"
    assert process.how_it_ended(-15) == "was killed by signal 15 (SIGTERM)"
    assert process.how_it_ended(-9).startswith("was killed by signal 9 (SIGKILL): ")
    err = ("[0.000000] [xbt_cfg/INFO] Configuration change: Set 'contexts/factory' to "
           "'thread'\nTraceback (most recent call last):\n  File \"w.py\", line 1\n"
           "ValueError: bad platform\n\n[1.5] [surf/INFO] done\n")
    assert process.relevant_tail(err, 2) == 'File "w.py", line 1 | ValueError: bad platform'
    assert process.relevant_tail("[0.0] [xbt_cfg/INFO] only chatter\n") == ""
    assert process.relevant_tail("[0.0] [ker/WARNING] kept\n") == "[0.0] [ker/WARNING] kept"


@pytest.mark.parametrize("timeout", [0.0, -1.0, process.MAX_TIMEOUT_S * 2])
def test_time_limits_outside_the_range_are_refused(timeout: float) -> None:
    with pytest.raises(ValueError, match="outside"):
        process.run(["true"], timeout)
