"""The ``federation`` command line.

Data goes to stdout (tables, JSON); progress and diagnostics go to stderr, progress only when
stderr is a terminal.  A user error (:class:`~federation.errors.FederationError`) ends with one
message on stderr and exit status 2, never a traceback.
"""

from __future__ import annotations

import sys

import typer

from federation.errors import FederationError

app = typer.Typer(
    name="federation",
    help="Simulate HPC interconnection networks from typed machine and experiment files.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        from federation._version import __version__

        print(f"federation {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="print the version and exit"),
) -> None:
    """Simulate HPC interconnection networks from typed machine and experiment files."""


def _register_commands() -> None:
    from federation.cli import inspect, plot, report, run  # noqa: F401 - register on import

    try:
        from federation.cli import topology  # noqa: F401
    except ImportError:  # pragma: no cover - optional until the topology command exists
        pass
    from federation.cli import crossval  # noqa: F401 - validation suites


def error(message: str) -> None:
    """Print one error message to stderr."""
    print(f"error: {message}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    """Console-script entry point; returns the exit status."""
    _register_commands()
    try:
        from federation.plugin.registry import get_plugins

        try:
            get_plugins().add_commands(app)
        except FederationError:
            pass  # reported by the command that needs the plugins
        app(args=argv, standalone_mode=True)
    except FederationError as exc:
        error(str(exc))
        return exc.exit_code
    except SystemExit as exc:  # typer/click exit
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    except KeyboardInterrupt:
        error("interrupted")
        return 130
    return 0


def entry() -> None:  # pragma: no cover - thin wrapper for the console script
    sys.exit(main())
