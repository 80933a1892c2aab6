"""``federation report``: one self-contained HTML page for one or more result folders.

matplotlib is imported inside the command only (see :mod:`federation.cli.plot`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from federation.cli.app import app, out_path
from federation.cli.plot import SaturationMargin, check_apart, check_margin
from federation.plots import DEFAULT_SATURATION_MARGIN


@app.command()
def report(
    results: Annotated[list[Path], typer.Argument(
        help="result folder (what `federation run` wrote); several are compared")],
    out: Annotated[str | None, typer.Option(  # text: see app.out_path
        "--out", help="the HTML file (default: RESULTS/report.html for one folder, "
        "./report.html for several)")] = None,
    overwrite: Annotated[bool, typer.Option(
        "--overwrite", help="replace an existing --out file")] = False,
    margin: SaturationMargin = DEFAULT_SATURATION_MARGIN,
) -> None:
    """Write one HTML page with the figures embedded, the resolved machine and experiment, the
    summary table, the busiest links and the plugins behind the numbers; it loads nothing from
    elsewhere, so it can be attached to a message."""
    from federation.plots.data import load_folders
    from federation.plots.report import render_report
    from federation.results.outputs import OutputFile, check_not_input, check_out_file

    check_margin(margin)
    page_file = out_path(out, "the HTML file to write", folder=False)  # usage first
    source = "--out" if page_file is not None else "report"
    if page_file is None:
        page_file = results[0] / "report.html" if len(results) == 1 else Path("report.html")
    # before reading: not a results folder's own file; what is there now, with lstat only (a
    # device, a FIFO or a link is refused at once)
    check_not_input(page_file, source, results=results)
    check_out_file(page_file, source, overwrite)
    folders = load_folders(results)
    check_apart(page_file, folders, source)  # never one of the files just read
    # checked (an existing file only with --overwrite), its temporary file made beside it,
    # before the figures are drawn; the page replaces an earlier one whole (a rename), never
    # half-written
    with OutputFile(page_file, source=source, overwrite=overwrite) as target:
        page, _ = render_report(folders, margin)
        target.commit(page)
    print(page_file)
