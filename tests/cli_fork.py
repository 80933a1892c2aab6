"""``federation ARGS`` in a child process, forked from a process that has imported the CLI.

The suite runs the command line hundreds of times to see what a user sees: the exit code,
stdout and stderr of a process.  A fresh interpreter spends some 0.3 s importing the
framework and its built-in plugins before every one of them.  So each test process starts
one *zygote* (a Python started as :func:`conftest.run_cli` starts the command, ``python -c
"from federation.cli import entry"``, same environment, which then imports the built-in
plugins' modules, as every command's registry does first, and matplotlib as the figures'
commands set it up, :mod:`federation.plots.style`; no command's result depends on what is
imported, only its start-up time) and forks it for each command: the child
changes to the test's folder, points its standard streams at files and calls ``entry()``
as the command line would, with ``sys.argv`` as ``python -c`` sets it.  It then leaves the
interpreter as any command does (``SystemExit`` or an uncaught exception out of the top
level, ``atexit`` handlers and all), so its exit status is the one a fresh process gives.

The child gets the request's environment.  A request whose environment differs from the
zygote's in more than ``PYTEST_CURRENT_TEST`` (a test's ``env``, a variable set by
``monkeypatch``) runs in a fresh process instead, since imports may read the environment; so
does everything where there is no ``fork``, or ``FEDERATION_TEST_NO_FORK`` is set.
"""

from __future__ import annotations

import json
import os
import select
import signal
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

#: the zygote: imports the CLI, then forks a child per request read from fd ``argv[1]`` and
#: writes the child's pid, then its exit status, to fd ``argv[2]``
_ZYGOTE = r"""
import importlib, json, os, struct, sys
from federation.cli import entry
from federation.plugin.registry import BUILTIN_PLUGINS
for module in BUILTIN_PLUGINS.values():  # what every command's registry imports first
    importlib.import_module(module)
importlib.import_module("federation.plots.style")  # matplotlib, as plot and report import it
r, w = int(sys.argv[1]), int(sys.argv[2])


def _read(n):
    data = b""
    while len(data) < n:
        more = os.read(r, n - len(data))
        if not more:
            return None
        data += more
    return data


while True:
    head = _read(4)
    if head is None:
        os._exit(0)
    req = json.loads(_read(struct.unpack("<I", head)[0]))
    pid = os.fork()
    if pid == 0:
        os.close(r)
        os.close(w)
        os.chdir(req["cwd"])
        os.environ.clear()
        os.environ.update(req["env"])
        for fd, path, flags in ((0, os.devnull, os.O_RDONLY),
                                (1, req["out"], os.O_WRONLY | os.O_TRUNC),
                                (2, req["err"], os.O_WRONLY | os.O_TRUNC)):
            f = os.open(path, flags)
            os.dup2(f, fd)
            os.close(f)
        sys.argv = ["-c", *req["args"]]
        entry()
        sys.exit(0)
    os.write(w, struct.pack("<q", pid))
    _, status = os.waitpid(pid, 0)
    os.write(w, struct.pack("<q", os.waitstatus_to_exitcode(status)))
"""


class Zygote:
    """One zygote per test process, started on first use; it ends when the test process does
    (its request pipe closes)."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = dict(env)
        to_child, self._req = os.pipe()
        self._res, from_child = os.pipe()
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _ZYGOTE, str(to_child), str(from_child)],
            pass_fds=(to_child, from_child), env=self.env, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            cwd=tempfile.mkdtemp(prefix="cli-zygote-"))  # nothing to import by accident
        os.close(to_child)
        os.close(from_child)

    def _read(self, timeout: float | None) -> int | None:
        data = b""
        while len(data) < 8:
            if timeout is not None and not select.select([self._res], [], [], timeout)[0]:
                return None
            more = os.read(self._res, 8 - len(data))
            if not more:
                raise RuntimeError("the CLI zygote ended: " + self.proc.stderr.read().decode())
            data += more
        return struct.unpack("<q", data)[0]

    def run(self, args: list[str], cwd: Path, env: dict[str, str],
            timeout: float) -> subprocess.CompletedProcess:
        with tempfile.TemporaryDirectory() as tmp:
            out, err = Path(tmp, "out"), Path(tmp, "err")
            out.touch()
            err.touch()
            body = json.dumps({"args": args, "cwd": str(cwd), "env": env, "out": str(out),
                               "err": str(err)}).encode()
            os.write(self._req, struct.pack("<I", len(body)) + body)
            pid = self._read(None)
            code = self._read(timeout)
            if code is None:
                os.kill(pid, signal.SIGKILL)
                self._read(None)
                raise subprocess.TimeoutExpired(args, timeout)
            return subprocess.CompletedProcess(
                [sys.executable, "-c", "from federation.cli import entry; entry()", *args],
                code, out.read_text(), err.read_text())


_zygote: Zygote | None = None


def run_forked(args: list[str], cwd: Path, env: dict[str, str],
               timeout: float) -> subprocess.CompletedProcess | None:
    """The command run by a forked child, or ``None`` where it must run in a fresh process
    (``env`` is not the zygote's, or there is no ``fork``)."""
    global _zygote
    if not hasattr(os, "fork") or os.environ.get("FEDERATION_TEST_NO_FORK"):
        return None
    if _zygote is None:
        _zygote = Zygote(env)
    if _imports_see(env) != _imports_see(_zygote.env):
        return None
    return _zygote.run(args, cwd, env, timeout)


def _imports_see(env: dict[str, str]) -> dict[str, str]:
    """The environment but what pytest changes for every test, which no import reads (the
    child gets the request's environment whole)."""
    return {k: v for k, v in env.items() if k != "PYTEST_CURRENT_TEST"}
