"""``federation comm``: what a program communicates, without simulating it.

The programs come from an experiment file's point (its closed-loop workload, built and
checked as ``run`` would) or straight from a schedule file (GOAL, a SimGrid TI trace, a
DUMPI trace), checked by the same static checks without a machine (:func:`check_schedule`;
``export`` reads its programs here too).
The summary is :func:`federation.programs.analysis.communication`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from federation.cli.app import app
from federation.errors import ConfigError

if TYPE_CHECKING:
    from federation.programs.model import RankPrograms

SCHEDULE_FORMATS = ("auto", "goal", "ti", "dumpi")


def experiment_programs(file: Path, overrides: list[str], index: int,
                        max_memory: int) -> tuple[RankPrograms, str]:
    """Point ``index`` of an experiment: its programs, built and checked against its
    machine (as the preflight does), and a label."""
    from federation.errors import FederationError
    from federation.pipeline.load import load_experiment
    from federation.pipeline.point import BuildCache
    from federation.pipeline.points import in_point
    from federation.pipeline.preflight import check_point

    loaded = load_experiment(file, overrides)
    n = len(loaded.points)
    if not 0 <= index < n:
        raise ConfigError(f"the experiment has {n} point(s) (0 .. {n - 1}), not {index}",
                          source="--point")
    point = loaded.points[index]
    if not point.workload.closed_loop:
        raise ConfigError(f"workload {point.workload.name!r} is open loop: it has no rank "
                          "programs (comm summarises closed-loop workloads and schedule "
                          "files)", source=str(file), path="workload.kind")
    try:
        check_point(point)
        cache = BuildCache(max_memory)
        progs = cache.programs.get(point, cache.get(point))
    except FederationError as exc:
        raise in_point(exc, point, index, n) from None
    label = f"{file}" + (f" (point {index} of {n})" if n > 1 else "") + \
        f": workload {point.workload.name}"
    return progs, label


def schedule_programs(file: Path, fmt: str) -> tuple[RankPrograms, str]:
    """A schedule file read whole (its own rank count, rank i on node i), with the static
    checks an experiment's programs get (:func:`check_schedule`)."""
    progs, label = _read_schedule(file, fmt)
    check_schedule(progs, str(file))
    return progs, label


def check_schedule(progs: RankPrograms, source: str) -> None:
    """Refuse a schedule that ``run`` and ``validate`` would refuse, with the same message:
    :func:`federation.programs.checks.check_programs`, the one set of checks every caller
    uses (unmatched sends or receives, a send larger than its receive, bad ranks or
    dependencies, cycles, certain deadlocks).  Without a machine: the schedule's ranks on
    nodes 0 .. n-1 (as it is read), every send eager (the deadlocks every eager threshold
    has), no bandwidth bound.  The message names the schedule file and, through the
    programs, the operation's line; there is no experiment field to name, so no path."""
    from federation.programs.checks import check_programs

    nodes = progs.nodes()
    n_nodes = max(progs.n_ranks, int(nodes.max()) + 1 if nodes.size else 0)
    try:
        check_programs(progs, n_nodes, source=progs.source or source)
    except ConfigError as exc:
        raise ConfigError(exc.message, source=exc.source) from None


def _read_schedule(file: Path, fmt: str) -> tuple[RankPrograms, str]:
    """A schedule file read whole in format ``fmt`` (``auto``: by its name), and a label."""
    if fmt == "auto":
        if file.is_dir() or file.name.endswith(".dumpi.txt"):
            fmt = "dumpi"
        else:
            fmt = "goal" if file.suffix.lower() == ".goal" else "ti"
    if fmt == "dumpi":
        from federation.programs.dumpi import read_dumpi

        return read_dumpi(file), f"{file} (dumpi)"
    if fmt == "goal":
        from federation.programs.goal import read_goal

        return read_goal(file), f"{file} (goal)"
    from federation.programs.ti import read_ti

    return read_ti(file), f"{file} (ti)"


def is_experiment(file: Path) -> bool:
    return file.suffix.lower() in (".yaml", ".yml", ".json")


def read_programs(file: Path, overrides: list[str], index: int, fmt: str,
                  max_memory: str | None) -> tuple[RankPrograms, str]:
    """The programs ``comm`` and ``export`` work on: point ``index`` of an experiment file
    (``--set`` applied, built and checked under ``--max-memory``), or a schedule file read
    whole (``--set`` refused: it applies to experiment files only)."""
    from federation.cli.run import parse_max_memory
    from federation.pipeline.bounds import default_max_memory

    if is_experiment(file):
        limit = parse_max_memory(max_memory) or default_max_memory()
        return experiment_programs(file, overrides, index, limit)
    if overrides:
        raise ConfigError("--set applies to experiment files", source="--set")
    return schedule_programs(file, fmt)


@app.command()
def comm(
    file: Annotated[Path, typer.Argument(help="an experiment file (its closed-loop workload), "
                                              "or a schedule: GOAL, TI trace, DUMPI folder")],
    as_json: Annotated[bool, typer.Option("--json", help="the whole summary as JSON, per-rank "
                                          "figures and the matrix's non-zero entries")] = False,
    plot: Annotated[Path | None, typer.Option(
        "--plot", help="write the rank x rank heat map of bytes (png, svg or pdf)")] = None,
    overwrite: Annotated[bool, typer.Option(
        "--overwrite", help="replace an existing --plot file")] = False,
    point: Annotated[int, typer.Option("--point", help="the sweep point of an experiment")] = 0,
    set_: Annotated[list[str] | None, typer.Option("--set", help="override a field")] = None,
    fmt: Annotated[str, typer.Option(
        "--format", help="schedule format: auto (.goal: GOAL, a folder or .dumpi.txt: DUMPI, "
        "else TI), goal, ti, dumpi")] = "auto",
    max_memory: Annotated[str | None, typer.Option(
        "--max-memory", help="as for 'run': the memory the programs may need")] = None,
) -> None:
    """Summarise what a program communicates without simulating it: messages, bytes,
    per-rank sends and compute, message sizes, the busiest pairs, the communication matrix."""
    from federation.programs.analysis import communication, describe
    from federation.results.outputs import OutputFile

    if fmt not in SCHEDULE_FORMATS:
        raise ConfigError(f"must be one of {', '.join(SCHEDULE_FORMATS)}, got {fmt!r}",
                          source="--format")
    target = None
    if plot is not None:
        from federation.plots.style import FORMATS

        if plot.suffix.lower().lstrip(".") not in FORMATS:
            raise ConfigError(f"the file name must end in .png, .svg or .pdf, got {plot.name!r}",
                              source="--plot")
        target = OutputFile(plot, source="--plot", overwrite=overwrite, make_parents=True)
    try:
        progs, label = read_programs(file, set_ or [], point, fmt, max_memory)
        summary = communication(progs)
        if target is not None:
            from federation.plots.comm import comm_figure

            data, _ = comm_figure(summary, plot, f"Communication matrix: {label}")
            target.commit(data)
    except BaseException:
        if target is not None:
            target.abort()
        raise
    if as_json:
        doc = {"source": label, **summary.to_dict()}
        json.dump(doc, sys.stdout, sort_keys=True)
        print()
        return
    print(label)
    for line in describe(summary):
        print(f"  {line}")
    if plot is not None:
        print(f"  heat map: {plot}")
