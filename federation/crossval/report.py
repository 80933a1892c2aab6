"""The side-by-side table of a validation suite's results (rich), for the terminal and docs."""

from __future__ import annotations

import io
import sys

from rich.console import Console
from rich.table import Table

from federation.crossval.models import SuiteResult

STYLE = {"pass": "green", "fail": "bold red", "error": "bold red", "not run": "yellow"}


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.6g}"


def difference_text(d: float | None, rel: float | None) -> str:
    """A check's difference (and relative difference) as the table and pytest print it."""
    if d is None:
        return "-"
    # the tolerance's digits (Tolerance.describe prints six): a difference just past it shows
    return f"{d:+.6g}" + (f" ({100 * rel:+.6g}%)" if rel is not None else "")


def table(result: SuiteResult) -> Table:
    """One row per check: reference figure, the engine's figure, difference, tolerance."""
    ref = result.reference_engine
    t = Table(title=f"crossval {result.suite}: engines compared with {ref}",
              title_justify="left")
    for col, kw in (("scenario", {}), ("metric", {}), ("unit", {}),
                    (ref, {"justify": "right"}), ("engine", {}), ("value", {"justify": "right"}),
                    ("difference", {"justify": "right"}), ("tolerance", {"justify": "right"}),
                    ("status", {})):
        t.add_column(col, **kw)
    for c in result.checks:
        status = f"[{STYLE[c.status]}]{c.status}[/]"
        t.add_row(c.scenario, c.metric, c.unit, _num(c.reference), c.engine, _num(c.value),
                  difference_text(c.difference, c.relative_difference), c.tolerance, status)
    return t


def summary_line(result: SuiteResult) -> str:
    n = result.counts
    parts = [f"{n.get(k, 0)} {k}" for k in ("pass", "fail", "error", "not run") if n.get(k)]
    return f"{result.status}: " + ", ".join(parts)


def render(result: SuiteResult, width: int | None = None) -> str:
    """The table, the reasons for anything not passed, and the tally, as plain text."""
    buf = io.StringIO()
    console = Console(file=buf, width=width or 160, no_color=True, highlight=False)
    _print(console, result)
    return buf.getvalue()


def print_report(result: SuiteResult) -> None:
    """Print to stdout: colours on a terminal, plain text (160 columns) otherwise."""
    tty = sys.stdout.isatty()
    console = Console(width=None if tty else 160, no_color=not tty, highlight=False,
                      soft_wrap=False)
    _print(console, result)


def _print(console: Console, result: SuiteResult) -> None:
    console.print(table(result))
    for c in result.checks:
        if c.status in ("fail", "error"):
            console.print(f"{c.status}: {c.scenario} {c.metric} {c.engine}: {c.reason}",
                          markup=False)
    not_run = {r.engine: r.reason for r in result.runs if r.status == "not run"}
    for engine, reason in sorted(not_run.items()):
        console.print(f"not run: {engine}: {reason}", markup=False)
    programs = sorted({f"{r.engine}: {r.program}" for r in result.runs if r.program})
    if programs:
        console.print("programs: " + "; ".join(programs), markup=False)
    console.print(summary_line(result), markup=False)
