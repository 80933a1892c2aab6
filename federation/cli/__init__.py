"""The ``federation`` command line.

Data goes to stdout (tables, JSON); progress and diagnostics go to stderr, progress only when
stderr is a terminal.  A user error (:class:`~federation.errors.FederationError`) ends with one
message on stderr and exit status 2, never a traceback.

Owns the commands, one module each, registered on :data:`~federation.cli.app.app` when
:func:`main` starts.  May import: everything (it is the top layer); nothing imports it but the
console script and plugins that add commands.
"""

from __future__ import annotations

import sys

from federation.cli.app import app
from federation.errors import FederationError, PluginError

__all__ = ["app", "entry", "error", "main"]


def _register_commands() -> None:
    from federation.cli import inspect, plot, report, run  # noqa: F401 - register on import

    try:
        from federation.cli import topology  # noqa: F401
    except ImportError:  # pragma: no cover - optional until the topology command exists
        pass
    from federation.cli import (
        comm,  # noqa: F401 - communication summaries
        crossval,  # noqa: F401 - validation suites
        export,  # noqa: F401 - programs as GOAL
        hops,  # noqa: F401 - hops and contention of placed jobs
    )


def error(message: str) -> None:
    """Print one error message to stderr."""
    print(f"error: {message}", file=sys.stderr)


def main(argv: list[str] | None = None, *, freeze: bool = False) -> int:
    """Console-script entry point; returns the exit status.

    Start-up (the commands' modules, the plugins) runs without the cyclic collector
    (:mod:`federation._gc`); with ``freeze`` (the console script) what it made is then frozen
    out of the collector's way for the rest of the process.  In-process callers (tests) keep
    their collector as it is.

    SIGINT, SIGTERM and SIGHUP stop every command the same way (:mod:`federation.interrupts`):
    cleanup runs, a run keeps its finished points, and the exit status is 128 + the signal's
    number.  An ``OSError`` naming a file that no command turned into a message of its own (a
    name too long for the file system, a file that cannot be read) is printed as one line
    naming the file, exit 2: it is about the user's files, not a bug."""
    from federation import _gc, interrupts

    with _gc.paused():
        _register_commands()
    try:
        with interrupts.handling(to_the_end=True):
            from federation.plugin.registry import get_plugins

            try:
                get_plugins().add_commands(app)  # the registry loads without the collector
            except FederationError:
                pass  # reported by the command that needs the plugins
            if freeze:
                _gc.freeze_startup()
            app(args=argv, standalone_mode=True)
    except FederationError as exc:
        error(str(exc))
        return exc.exit_code
    except SystemExit as exc:  # typer/click exit
        stop = _stop_behind(exc) if exc.code not in (0, None) else None
        if stop is not None:  # typer turns a KeyboardInterrupt into exit 130, without a word
            error(f"interrupted by {interrupts.signal_name(stop)}")
            return interrupts.exit_code(stop)
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    except KeyboardInterrupt as exc:
        error(f"interrupted by {interrupts.signal_name(exc)}")
        return interrupts.exit_code(exc)
    except OSError as exc:
        if exc.filename is None:
            return _plugin_failure(exc)
        error(f"{_shown(exc.filename)}: {exc.strerror or exc}")
        return 2
    except Exception as exc:  # noqa: BLE001 - a plugin's exception is said in one line
        return _plugin_failure(exc)
    return 0


def _plugin_failure(exc: Exception) -> int:
    """A third-party plugin that raised: one line naming it and where (docs/plugins.md:
    every plugin failure is a PluginError); anything else is a bug of ours, re-raised with
    its traceback."""
    from federation.plugin.registry import get_plugins

    try:
        found = get_plugins().failing_plugin(exc)
    except FederationError:
        found = None
    if found is None:
        raise exc
    plugin, where = found
    error(f"plugin {plugin!r} failed: {type(exc).__name__}: {exc} (at {where})")
    return PluginError.exit_code


def _stop_behind(exc: BaseException) -> KeyboardInterrupt | None:
    """The stop signal (as its exception) an exit was raised for, if any."""
    seen = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        if isinstance(e, KeyboardInterrupt):
            return e
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return None


def _shown(name: object) -> str:
    import os

    text = os.fsdecode(name) if isinstance(name, bytes | str) else str(name)
    return os.fsencode(text).decode("utf-8", "backslashreplace")


def entry() -> None:  # pragma: no cover - thin wrapper for the console script
    sys.exit(main(freeze=True))
