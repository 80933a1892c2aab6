"""Finding and running the ``sst`` program.

``sst`` runs as a subprocess from an argv list, never through a shell, so no path or parameter
is ever re-parsed by one.  It runs in a process group of its own, stopped whole on the time
limit, on Ctrl-C or on an error (:mod:`federation.adapters.process`).  An MPI launch puts the
launcher in front (``mpirun -n 4 sst ...``): that is how a run too large for one machine is
split over ranks.  The run has a wall-clock limit; its stdout and stderr are captured and kept
beside the configuration.
"""

from __future__ import annotations

import functools
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from federation.adapters import process
from federation.errors import BackendUnavailable, SimulationError

from .options import SstOptions

INSTALL_HINT = ("SST (sst-core and sst-elements with merlin) is in no package registry; build "
                "it from the sstsimulator sources outside this repository and put 'sst' on PATH, "
                "or set engine.sst_binary")


def find_sst(binary: str = "sst") -> str | None:
    """Absolute path of the sst program (a name looked up on PATH, or a path), else None."""
    if "/" in binary:
        p = Path(binary)
        return str(p.resolve()) if p.is_file() and shutil.which(str(p)) else None
    return shutil.which(binary)


def require_sst(options: SstOptions) -> str:
    """The sst program, or :class:`BackendUnavailable` with one message (exit status 2)."""
    found = find_sst(options.sst_binary)
    if found is None:
        raise BackendUnavailable(f"engine sst: program {options.sst_binary!r} not found "
                                 f"(engine.sst_binary). {INSTALL_HINT}")
    return found


def command(options: SstOptions, sst: str, config: str) -> list[str]:
    """The argv of one run: ``[launcher...] sst [--num-threads N] config.py``."""
    launcher = list(options.launcher or [])
    if not launcher and options.ranks > 1:
        launcher = ["mpirun", "-n", str(options.ranks)]
    argv = [*launcher, sst]
    if options.threads > 1:
        argv += ["--num-threads", str(options.threads)]
    return [*argv, config]


@dataclass(frozen=True)
class SstRun:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    wall_s: float


def run_sst(argv: list[str], cwd: Path, timeout_s: float) -> SstRun:
    """Run ``argv`` in ``cwd`` in its own process group (:mod:`federation.adapters.process`);
    stdout/stderr go to ``sst.stdout``/``sst.stderr`` there.  A non-zero exit, a signal or the
    time limit is a :class:`SimulationError` saying how it ended, quoting stderr's last lines
    and naming ``cwd`` (the caller keeps that folder when the run fails)."""
    try:
        done = process.run(argv, timeout_s, cwd=cwd)
    except process.TimedOut as exc:
        _keep(cwd, exc.stdout, exc.stderr)
        raise SimulationError(f"engine sst: {argv[0]} did not finish within {timeout_s:g} s "
                              f"(engine.timeout); it and every process it started were "
                              f"stopped; its output is kept in {cwd}") from None
    except OSError as exc:
        raise BackendUnavailable(f"engine sst: cannot start {argv[0]}: "
                                 f"{exc.strerror or exc}") from None
    _keep(cwd, done.stdout, done.stderr)
    if done.returncode != 0:
        tail = process.relevant_tail(done.stderr) or process.relevant_tail(done.stdout)
        ended = process.how_it_ended(done.returncode)
        raise SimulationError(f"engine sst: {' '.join(argv)} {ended} (output kept in {cwd})"
                              + (f": {tail}" if tail else ""))
    return SstRun(argv, done.returncode, done.stdout, done.stderr, done.wall_s)


def _keep(cwd: Path, out: str, err: str) -> None:
    for name, text in (("sst.stdout", out), ("sst.stderr", err)):
        (cwd / name).write_text(text)


_VERSION = re.compile(r"SST-Core Version \(([^,\s)]+)(?:.*?SHA: ([0-9a-f]+))?")


@functools.lru_cache(maxsize=8)
def sst_version(sst: str) -> str | None:
    """``SST-Core 16.0.0 (ffd71527bc26)`` from ``sst --version``, for the results document's
    engine origin; ``None`` when the program does not answer in that form (a stand-in).
    Asked once per program path and process, not once per point."""
    try:
        done = process.run([sst, "--version"], 30.0)
    except (OSError, process.TimedOut):
        return None
    m = _VERSION.search(done.stdout)
    if m is None:
        return None
    return f"SST-Core {m[1]}" + (f" ({m[2][:12]})" if m[2] else "")
