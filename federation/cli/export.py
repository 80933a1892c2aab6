"""``federation export``: any program as a GOAL schedule, for other simulators (LogGOPSim,
ATLAHS) to run ours.

The programs come from an experiment's closed-loop workload, or one closed-loop job of
``jobs:`` (``--job`` when there are several), built, checked and placed as ``run`` would
(skeletons, collectives, drawn compute times, the job's ranks on its nodes and all: see
:func:`federation.cli.comm.experiment_programs`) or from a schedule file; the
GOAL text is :func:`federation.programs.goal.format_goal` (every operation, every
dependency; ``calc`` in units of ``--calc-unit``).  A GOAL schedule read as input counts
its ``calc`` in LogGOPSim's nanoseconds unless ``--input-calc-unit`` says otherwise (what an
earlier ``export --calc-unit`` wrote).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from federation.cli.app import app, out_path
from federation.cli.comm import JOB_HELP
from federation.cli.run import MaxMemory
from federation.errors import ConfigError


@app.command()
def export(
    file: Annotated[Path, typer.Argument(help="an experiment file (its closed-loop workload), "
                                              "or a schedule: GOAL, TI trace, DUMPI folder")],
    out: Annotated[str, typer.Option("--out", help="the GOAL file to write")],  # app.out_path
    calc_unit: Annotated[str, typer.Option(
        "--calc-unit", help="the time of one GOAL 'calc' unit (LogGOPSim reads ns); every "
        "compute must be a whole number of them")] = "1ns",
    input_calc_unit: Annotated[str | None, typer.Option(
        "--input-calc-unit", help="a GOAL schedule given as FILE: its time of one 'calc' unit "
        "(default 1ns, LogGOPSim's; give what an earlier 'export --calc-unit' wrote)")] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite",
                                            help="replace an existing file")] = False,
    point: Annotated[int | None, typer.Option(
        "--point", help="the sweep point of an experiment (default 0)")] = None,
    job: Annotated[str | None, typer.Option("--job", help=JOB_HELP)] = None,
    set_: Annotated[list[str] | None, typer.Option("--set", help="override a field")] = None,
    fmt: Annotated[str, typer.Option("--format", help="schedule format, as for 'comm'")] = "auto",
    max_memory: MaxMemory = None,
) -> None:
    """Write a program (an experiment's workload, or a schedule) as a GOAL schedule."""
    import numpy as np

    from federation.cli.comm import SCHEDULE_FORMATS, calc_unit_ps, read_programs
    from federation.cli.run import memory_limit
    from federation.programs.goal import format_goal
    from federation.programs.model import COMPUTE
    from federation.results.outputs import OutputFile, check_not_input

    limit = memory_limit(max_memory)  # usage before any file is read or made
    if fmt not in SCHEDULE_FORMATS:
        raise ConfigError(f"must be one of {', '.join(SCHEDULE_FORMATS)}, got {fmt!r}",
                          source="--format")
    unit_ps = calc_unit_ps(calc_unit)
    in_unit = (calc_unit_ps(input_calc_unit, "--input-calc-unit")
               if input_calc_unit is not None else None)
    goal_file = out_path(out, "the GOAL file to write", folder=False)
    check_not_input(goal_file, "--out", files=[file], within=[file] if file.is_dir() else [])
    target = OutputFile(goal_file, source="--out", overwrite=overwrite)
    try:
        inputs: list[Path] = []
        progs, label = read_programs(file, set_ or [], point, fmt, limit, job,
                                     "export writes", inputs, in_unit, "--input-calc-unit")
        # the files an experiment reads (its machine, program or trace files) are known now
        check_not_input(goal_file, "--out", files=[p for p in inputs if not p.is_dir()],
                        within=[p for p in inputs if p.is_dir()])
        t = progs.op_time_ps[progs.op_kind == COMPUTE]
        bad = t[t % unit_ps != 0]
        if bad.size:
            raise ConfigError(f"a compute of {int(bad[0])} ps is not a whole number of "
                              f"{calc_unit}; give a finer --calc-unit (1ps is exact)",
                              source="--calc-unit")
        target.commit(format_goal(progs, unit_ps) + "\n")
    except BaseException:
        target.abort()
        raise
    nodes = progs.nodes()
    if not np.array_equal(nodes, np.arange(progs.n_ranks)):
        print("note: GOAL has no placement: the ranks' nodes (rank_node) are not written",
              file=sys.stderr)
    print(f"{out}: {progs.n_ranks} ranks, {progs.n_ops} operations from {label} "
          f"(calc unit {calc_unit})")


__all__ = ["export"]
