"""``federation crossval SUITE.yaml``: run a validation suite, print the side-by-side table.

Exit status: 0 when every check passed (checks whose engine is not installed are reported as
``not run`` and do not fail the suite unless ``--require-all-engines``); 1 when a figure is
outside its tolerance or an engine failed while simulating; 2 for a bad suite or scenario
(one message naming the file and field, as for ``federation run``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from federation.cli.app import app, out_path

#: exit status when a check failed (a bad file is 2, like every user error)
EXIT_VIOLATION = 1


@app.command()
def crossval(
    file: Annotated[Path, typer.Argument(help="validation suite (YAML or JSON)")],
    out_text: Annotated[str, typer.Option(  # text: see app.out_path
        "--out", help="machine-readable results (JSON)")] = "crossval.json",
    overwrite: Annotated[bool, typer.Option(
        "--overwrite", help="replace an existing --out file")] = False,
    as_json: Annotated[bool, typer.Option(
        "--json", help="print the results document instead of the table")] = False,
    require_all: Annotated[bool, typer.Option(
        "--require-all-engines", help="fail (exit 1) when an engine of the suite is not "
        "installed, instead of reporting its checks as not run")] = False,
) -> None:
    """Run every scenario of a suite on every engine and compare the figures within tolerance."""
    from federation.crossval.report import print_report
    from federation.crossval.run import SuiteRunner, load_suite
    from federation.results.outputs import OutputFile, check_not_input

    out = out_path(out_text, "the results file to write", folder=False)
    assert out is not None
    check_not_input(out, "--out", files=[file])  # the suite file itself
    suite = load_suite(file)
    # checked, and its temporary file made beside it, before any scenario runs: a place that
    # cannot be written is refused now, not after the whole suite has run
    target = OutputFile(out, source="--out", overwrite=overwrite, ours=_is_crossval_result,
                        what="crossval results file")

    def progress(scenario: str, engine: str) -> None:
        if sys.stderr.isatty():
            print(f"running {scenario} on {engine} ...", file=sys.stderr)

    with target:
        result = SuiteRunner(file, suite, progress).run_all(require_all)
        text = json.dumps(result.model_dump(mode="json"), indent=2, sort_keys=True) + "\n"
        target.commit(text)
    if as_json:
        print(text, end="")
    else:
        print_report(result)
        print(f"results: {out}")
    if result.status != "passed":
        raise typer.Exit(EXIT_VIOLATION)


def _is_crossval_result(path: Path) -> bool:
    """Is ``path`` a results file of ``federation crossval`` (what ``--overwrite`` may
    replace)?"""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(doc, dict) and doc.get("schema_name") == "hpc-federation.crossval"
