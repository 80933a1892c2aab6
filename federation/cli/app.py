"""The ``federation`` Typer application, which every command module registers itself on (its
own module, so that a command imports it without importing the package that imports the
commands)."""

from __future__ import annotations

from pathlib import Path

import typer

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


def out_path(text: str | None, what: str, folder: bool = True,
             source: str = "--out") -> Path | None:
    """``--out`` as a path (``None``: not given).  The commands read ``--out`` as text because
    typer turns an empty value into ``Path(".")``, which wrote into (or refused as not empty)
    the current folder; an empty value is refused, naming ``what`` it names.  A file
    (``folder=False``) whose name ends in ``/`` is refused: the slash names a folder, and the
    path would lose it (``o.json/`` wrote ``o.json``)."""
    if text is None:
        return None
    from federation.errors import ConfigError

    if not text:
        here = " ('.' for the current folder)" if folder else ""
        raise ConfigError(f"is empty; give {what}{here}", source=source)
    if not folder and text.endswith("/") and text.strip("/"):
        from federation.results.destinations import shown

        raise ConfigError(f"'{shown(text)}' ends in '/', which names a folder; give {what}",
                          source=source)
    return Path(text)
