"""``federation plot``: the standard figures of one or more result folders.

matplotlib is imported inside the command, never at module level: this module is imported on
every ``federation`` invocation (commands register on import), and commands that draw nothing
must not pay for it.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from federation.cli.app import app, out_path
from federation.errors import ConfigError, os_reason
from federation.plots import DEFAULT_SATURATION_MARGIN

if TYPE_CHECKING:
    from federation.plots.reader import ResultFolder

FORMATS = ("png", "svg", "pdf")


#: ``--saturation-margin``, shared by ``plot`` and ``report``
SaturationMargin = Annotated[float, typer.Option(
    "--saturation-margin", help="a point is saturated when its accepted load is below its "
    "offered load by more than this fraction of it")]


def check_margin(margin: float) -> float:
    """``--saturation-margin`` as a fraction in [0, 1)."""
    if not 0 <= margin < 1:
        raise ConfigError(f"must be a fraction of the offered load in [0, 1), got {margin:g}",
                          source="--saturation-margin")
    return margin


def check_apart(out: Path, folders: list[ResultFolder], source: str) -> None:
    """Refuse an ``out`` that would replace what ``folders`` hold: a results folder itself,
    its ``results.json``, ``performance.json`` or a table (any name a results folder uses for
    its own files, and every ``files`` entry), compared as real paths.  Other places inside
    a results folder are allowed: ``plots`` and ``report.html`` are the defaults."""
    from federation.results.outputs import check_not_input

    reads = [f.path / e for f in folders for p in f.result.points for e in p.files.values()]
    check_not_input(out, source, results=[f.path for f in folders], files=reads)


def draw_folders(results: list[Path], out: Path, fmt: str, margin: float,
                 overwrite: bool = False, source: str = "--out") -> list[Path]:
    """Load ``results``, draw the standard figures into the folder ``out``; returns the files
    written.  A figure whose file is in ``out`` already is refused unless ``overwrite``
    (every figure is drawn into a temporary folder first, and none moved in when one is
    refused); other files in ``out`` stay.  Notes (skipped figures, incomplete runs) go to
    stderr."""
    from federation.plots.data import load_folders
    from federation.plots.standard import draw_all
    from federation.results.outputs import OutputFiles

    folders = load_folders(results)
    check_apart(out, folders, source)
    for f in folders:
        r = f.result
        if r.status != "complete":
            print(f"note: {f.path}: incomplete run (points {r.missing_points} missing); "
                  f"drawing its {len(r.points)} finished points", file=sys.stderr)
    # the folder checked, made and proved writable before anything is drawn
    with OutputFiles(out, source=source, overwrite=overwrite, what="figures") as target:
        try:
            drawn = draw_all(folders, target.tmp, fmt, margin)
        except OSError as exc:  # a full disk, a quota
            raise ConfigError(f"cannot write the figures in {out}: {os_reason(exc)}",
                              source=source) from None
        target.commit()
    for s in drawn.skipped:
        print(f"note: not drawn: {s}", file=sys.stderr)
    return [out / p.name for p in drawn.paths]


@app.command()
def plot(
    results: Annotated[list[Path], typer.Argument(
        help="result folders (what `federation run` wrote); several go on one figure")],
    out: Annotated[str | None, typer.Option(  # text: see app.out_path
        "--out", help="folder for the figures (default: RESULTS/plots for one folder, ./plots "
        "for several)")] = None,
    fmt: Annotated[str, typer.Option("--format", help="png, svg or pdf")] = "png",
    overwrite: Annotated[bool, typer.Option(
        "--overwrite", help="replace figures of the same names in --out")] = False,
    margin: SaturationMargin = DEFAULT_SATURATION_MARGIN,
) -> None:
    """Draw latency and throughput against offered load (saturation marked), link utilisation
    per class, a router x port heatmap, and latency, hop and message-completion distributions;
    an engine-against-engine overlay when the folders ran on different engines."""
    if fmt not in FORMATS:
        raise ConfigError(f"must be one of {', '.join(FORMATS)}, got {fmt!r}", source="--format")
    check_margin(margin)
    folder = out_path(out, "the folder for the figures")
    source = "--out" if folder is not None else "plot"
    if folder is None:
        folder = results[0] / "plots" if len(results) == 1 else Path("plots")
    from federation.results.outputs import check_not_input, check_out_folder, check_out_path

    check_out_path(folder, source)  # before the folders are read
    check_not_input(folder, source, results=results)
    check_out_folder(folder, source)
    for p in draw_folders(results, folder, fmt, margin, overwrite, source):
        print(p)
