"""Child processes of the adapters (``sst``, an MPI launcher, the SimGrid worker): one way to
start them, stop them and say how they ended.

Why not plain :func:`subprocess.run`: on its time limit it kills the child alone, so whatever
the child started (``mpirun``'s ranks, a helper of a wrapper script) keeps running, and a
Ctrl-C in the parent leaves the child running too when it is in another process group.  Here

* every child starts in a **session and process group of its own** (``start_new_session``),
  with stdin from ``/dev/null`` (nothing can stop it by reading the terminal, and a Ctrl-C
  typed for ``federation`` reaches ``federation`` only);
* on the time limit, on any exception in the parent while it waits (Ctrl-C, a signal handler
  that raises, an error) the **whole group is stopped**: SIGTERM first, so that a launcher
  can take down its remote ranks, then SIGKILL after :data:`GRACE_S`; whatever is left of the
  group after a normal exit is killed too (nothing of a finished run may keep running);
* :func:`how_it_ended` words the exit status (a negative one is a signal: "was killed by
  signal 9 (SIGKILL)"), and :func:`relevant_tail` picks the last lines of stderr worth
  quoting, without the log chatter a program prints at start (e.g. SimGrid's INFO lines).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

#: seconds a stopped group gets between SIGTERM and SIGKILL
GRACE_S = 5.0
#: longest time limit a child may be given: Python's timers hold about 292 years in
#: nanoseconds, and a limit that long is a mistake (a year is far more than any run here)
MAX_TIMEOUT_S = 365 * 86400.0


@dataclass(frozen=True)
class Finished:
    """A child that exited by itself (any status)."""

    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    wall_s: float


class TimedOut(Exception):  # noqa: N818 - an outcome, like subprocess.TimeoutExpired
    """The child did not finish within its time limit; its group has been stopped.
    ``stdout``/``stderr`` hold what it wrote until then."""

    def __init__(self, argv: list[str], timeout_s: float, stdout: str, stderr: str) -> None:
        super().__init__(f"{argv[0]} did not finish within {timeout_s:g} s")
        self.argv, self.timeout_s, self.stdout, self.stderr = argv, timeout_s, stdout, stderr


def run(argv: list[str], timeout_s: float, cwd: Path | None = None,
        env: dict[str, str] | None = None) -> Finished:
    """Run ``argv`` (never through a shell) in its own process group with a time limit.

    Raises :class:`TimedOut` after stopping the group, re-raises whatever interrupted the
    wait (after stopping the group), and lets :class:`OSError` through when the program
    cannot be started."""
    if not 0 < timeout_s <= MAX_TIMEOUT_S:
        raise ValueError(f"timeout {timeout_s!r} s is outside (0, {MAX_TIMEOUT_S:g}]")
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            errors="replace", start_new_session=True, shell=False)
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        out, err = stop_group(proc)
        raise TimedOut(argv, timeout_s, out, err) from None
    except BaseException:
        stop_group(proc)
        raise
    _signal_group(proc.pid, signal.SIGKILL)  # stragglers of a finished run
    return Finished(argv, proc.returncode, out or "", err or "", time.perf_counter() - start)


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass  # the group is gone (or its last member is a zombie of another parent)


def stop_group(proc: subprocess.Popen[str]) -> tuple[str, str]:
    """Stop ``proc``'s process group (SIGTERM, then SIGKILL after :data:`GRACE_S`) and
    return what it wrote.  A second interruption while waiting kills the group at once."""
    out: str | None = None
    err: str | None = None
    try:
        _signal_group(proc.pid, signal.SIGTERM)
        try:
            out, err = proc.communicate(timeout=GRACE_S)
        except subprocess.TimeoutExpired:
            _signal_group(proc.pid, signal.SIGKILL)
            try:
                out, err = proc.communicate(timeout=GRACE_S)
            except subprocess.TimeoutExpired:  # a member left the group and holds the pipes
                proc.kill()
                proc.wait()
    finally:
        _signal_group(proc.pid, signal.SIGKILL)
        if proc.returncode is None:
            proc.kill()
            proc.wait()
    return out or "", err or ""


def how_it_ended(returncode: int) -> str:
    """``exited with status 3``, or ``was killed by signal 9 (SIGKILL)`` for a negative
    status (with a word on who sends SIGKILL unasked)."""
    if returncode >= 0:
        return f"exited with status {returncode}"
    number = -returncode
    try:
        name = signal.Signals(number).name
    except ValueError:
        return f"was killed by signal {number}"
    text = f"was killed by signal {number} ({name})"
    if number == signal.SIGKILL:
        text += ": someone killed it, or the system's out-of-memory killer did"
    return text


#: log lines of SimGrid (``[0.000000] [xbt_cfg/INFO] ...``) and SST below warning level
CHATTER = re.compile(r"^\s*\[[^\]]*\]\s*\[[^\]]*/(?:INFO|VERBOSE|DEBUG)\]")


def relevant_tail(text: str, lines: int = 5, chatter: re.Pattern[str] = CHATTER) -> str:
    """The last ``lines`` non-empty lines of ``text`` that are not ``chatter``, joined by
    `` | `` (empty when there are none)."""
    kept = [ln.strip() for ln in text.splitlines() if ln.strip() and not chatter.match(ln)]
    return " | ".join(kept[-lines:])
