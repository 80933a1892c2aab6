"""``federation comm``: what a program communicates, without simulating it.

The programs come from an experiment file's point (its closed-loop workload, or one
closed-loop job of ``jobs:`` on its own nodes, built, checked and placed as ``run`` would;
several closed-loop jobs need ``--job``, as one summary or one GOAL file holds one program)
or straight from a schedule file (GOAL, a SimGrid TI trace, a
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

from federation.cli.app import app, out_path
from federation.cli.run import MaxMemory
from federation.errors import ConfigError

if TYPE_CHECKING:
    from federation.pipeline.points import ResolvedJob, ResolvedPoint
    from federation.programs.model import RankPrograms

SCHEDULE_FORMATS = ("auto", "goal", "ti", "dumpi")
JOB_HELP = ("the job of an experiment with jobs: (needed when several have closed-loop "
            "workloads): its own ranks on its nodes, as run places them")


def experiment_programs(file: Path, overrides: list[str], index: int, max_memory: int,
                        job_name: str | None = None, command: str = "comm summarises",
                        inputs: list[Path] | None = None) -> tuple[RankPrograms, str]:
    """Point ``index`` of an experiment: one closed-loop job's programs as ``run`` gives them
    to its engine, and a label.  The point is checked, built and placed as the preflight
    does (:func:`_placed_programs`), so a job's programs are its own ranks on its machine
    nodes (after its rank order and ``start``), never the workload spread over the whole
    machine.  ``command`` ("export writes") names the command in refusals; ``inputs`` is
    given every file the experiment reads (:func:`~federation.pipeline.inputs.
    experiment_inputs`), which the command's output may not replace."""
    from federation.errors import FederationError
    from federation.pipeline.inputs import experiment_inputs
    from federation.pipeline.load import load_experiment
    from federation.pipeline.point import point_error

    loaded = load_experiment(file, overrides)
    if inputs is not None:
        inputs.extend(experiment_inputs(loaded))
    n = len(loaded.points)
    if not 0 <= index < n:
        raise ConfigError(f"the experiment has {n} point(s) (0 .. {n - 1}), not {index}",
                          source="--point")
    point = loaded.points[index]
    job = _closed_job(point, file, job_name, command)
    try:
        progs = _placed_programs(point, job, max_memory)
    except FederationError as exc:
        raise point_error(exc, point, index, loaded) from None
    where = f" (point {index} of {n})" if n > 1 else ""
    what = f"job {job.name}, workload {job.workload.name}" if point.experiment.jobs is not None \
        else f"workload {job.workload.name}"
    return progs, f"{file}{where}: {what}"


def _closed_job(point: ResolvedPoint, file: Path, job_name: str | None,
                command: str) -> ResolvedJob:
    """The closed-loop job ``comm`` or ``export`` works on: the ``--job`` one, else the one
    closed-loop job.  Several closed-loop jobs without ``--job`` are refused (naming
    ``jobs``) rather than one picked silently: a GOAL file or a summary holds one program,
    and merging the jobs would mix programs that never talk to each other."""
    from federation.pipeline.points import point_jobs

    jobs = point_jobs(point)
    closed = [j for j in jobs if j.closed_loop]
    names = ", ".join(j.name for j in closed)
    if job_name is not None:
        if point.experiment.jobs is None:
            raise ConfigError(f"{file} has no jobs (its workload is the one program); "
                              "leave out --job", source="--job")
        job = next((j for j in jobs if j.name == job_name), None)
        if job is None:
            raise ConfigError(f"{file} has no job {job_name!r}; its jobs are "
                              f"{', '.join(j.name for j in jobs)}", source="--job")
        if not job.closed_loop:
            raise ConfigError(f"job {job_name!r} has open-loop workload {job.workload.name!r}:"
                              f" it has no rank programs ({command} closed-loop workloads and "
                              f"schedule files); closed-loop jobs: {names or 'none'}",
                              source="--job")
        return job
    if not closed:
        if len(jobs) == 1:
            raise ConfigError(f"workload {jobs[0].workload.name!r} is open loop: it has no "
                              f"rank programs ({command} closed-loop workloads and schedule "
                              "files)", source=str(file), path=f"{jobs[0].workload_field}.kind")
        every = ", ".join(f"{j.name}: {j.workload.name}" for j in jobs)
        raise ConfigError(f"every job's workload is open loop ({every}): none has rank "
                          f"programs ({command} closed-loop workloads and schedule files)",
                          source=str(file), path="jobs")
    if len(closed) > 1:
        raise ConfigError(f"{len(closed)} jobs have closed-loop workloads ({names}); give "
                          "--job NAME to choose one", source=str(file), path="jobs")
    return closed[0]


def _placed_programs(point: ResolvedPoint, job: ResolvedJob, max_memory: int) -> RankPrograms:
    """``job``'s programs as ``run`` merges them for its engine: the point checked, built and
    its jobs placed and rank-ordered as the preflight does (the calls ``federation hops``
    makes: every job's programs are built and checked, as ``run`` refuses a point any of
    whose jobs it refuses), then :func:`~federation.pipeline.traffic.merge_programs` of this
    one job, which puts its ranks on its machine nodes and delays a later ``start``."""
    from federation.pipeline.jobs import place_jobs
    from federation.pipeline.point import BuildCache, check_open_jobs
    from federation.pipeline.preflight import check_point
    from federation.pipeline.routing_modes import with_modes
    from federation.pipeline.traffic import merge_programs

    check_point(point)
    cache = BuildCache(max_memory)
    built = cache.get(point)
    placed = place_jobs(point, built)
    check_open_jobs(point, built, placed)
    programs = cache.programs.peek(point, built, placed)
    placed = cache.ordered(point, built, placed, programs)
    merged, _ = merge_programs(placed, {job.index: with_modes(point, job,
                                                              programs[job.index])})
    return merged


def calc_unit_ps(text: str, option: str = "--calc-unit") -> int:
    """``option``'s value in whole picoseconds (at least 1, below the clock range): the
    time of one GOAL ``calc`` unit."""
    from federation.models.limits import CLOCK_LIMIT, TIME_LIMIT_PS
    from federation.models.units import PS_PER_S, is_whole_ps, parse_time

    try:
        unit_s = parse_time(text)
    except ValueError as e:
        raise ConfigError(str(e), source=option) from None
    unit_ps = round(unit_s * PS_PER_S)
    if unit_ps < 1 or not is_whole_ps(unit_s):
        raise ConfigError(f"{text} is not a whole number of picoseconds (at least 1ps)",
                          source=option)
    if unit_ps >= TIME_LIMIT_PS:  # one calc past the clock (and 2**63 ps an OverflowError)
        raise ConfigError(f"{text} is beyond {CLOCK_LIMIT}", source=option)
    return unit_ps


def schedule_programs(file: Path, fmt: str, calc_unit: int | None = None,
                      unit_option: str = "--calc-unit") -> tuple[RankPrograms, str]:
    """A schedule file read whole (its own rank count, rank i on node i), with the static
    checks an experiment's programs get (:func:`check_schedule`); ``calc_unit`` ps per GOAL
    ``calc`` unit (``None``: LogGOPSim's nanosecond), given by ``unit_option``."""
    progs, label = _read_schedule(file, fmt, calc_unit, unit_option)
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


def _read_schedule(file: Path, fmt: str, calc_unit: int | None = None,
                   unit_option: str = "--calc-unit") -> tuple[RankPrograms, str]:
    """A schedule file read whole in format ``fmt`` (``auto``: by its name), and a label.
    ``calc_unit`` (a GOAL schedule's unit, given by ``unit_option``) is refused for the
    other formats."""
    if fmt == "auto":
        if file.is_dir() or file.name.endswith(".dumpi.txt"):
            fmt = "dumpi"
        else:
            fmt = "goal" if file.suffix.lower() == ".goal" else "ti"
    if calc_unit is not None and fmt != "goal":
        raise ConfigError(f"applies to GOAL schedules; {file} is read as {fmt}",
                          source=unit_option)
    if fmt == "dumpi":
        from federation.programs.dumpi import read_dumpi

        return read_dumpi(file), f"{file} (dumpi)"
    if fmt == "goal":
        from federation.programs.goal import read_goal

        if calc_unit is None:
            return read_goal(file), f"{file} (goal)"
        return read_goal(file, calc_unit), f"{file} (goal, calc unit {calc_unit} ps)"
    from federation.programs.ti import read_ti

    return read_ti(file), f"{file} (ti)"


def results_of_run(file: Path) -> str | None:
    """What a ``federation run`` output ``file`` is (its folder, or its results.json), else
    ``None``: read as a DUMPI folder or an experiment, one said that two tables named rank 0,
    the other listed fifteen schema errors."""
    if file.is_dir() and (file / "results.json").is_file():
        return "a federation run's results folder"
    if file.name == "results.json" and file.is_file():
        try:
            with open(file, encoding="utf-8", errors="replace") as f:
                head = f.read(4096)
        except OSError:
            return None
        if '"federation_version"' in head:  # (sorted keys: among the first)
            return "a federation run's results document"
    return None


def is_experiment(file: Path) -> bool:
    return file.suffix.lower() in (".yaml", ".yml", ".json")


def read_programs(file: Path, overrides: list[str], index: int | None, fmt: str,
                  max_memory: int, job: str | None = None, command: str = "comm summarises",
                  inputs: list[Path] | None = None, calc_unit: int | None = None,
                  unit_option: str = "--calc-unit") -> tuple[RankPrograms, str]:
    """The programs ``comm`` and ``export`` work on: one closed-loop job (``--job``) of point
    ``index`` of an experiment file (``--set`` applied, built and checked under
    ``max_memory`` bytes, ``--max-memory`` as :func:`~federation.cli.run.memory_limit` reads
    it; ``None``: point 0), or a schedule file read whole (``--set``, ``--point`` and
    ``--job`` refused: they apply to experiment files only).  ``inputs`` is given the files
    an experiment reads (see :func:`experiment_programs`).  ``calc_unit``: a GOAL
    schedule's ps per ``calc`` (an experiment's ``workload.calc_unit`` says its own), given
    by the command's option ``unit_option`` (named in refusals)."""
    results = results_of_run(file)
    if results is not None:
        raise ConfigError(f"is {results}, not a program: give the experiment file it ran "
                          "(its resolved points are in results.json's points[i].resolved) or a "
                          "schedule", source=str(file))
    if fmt == "auto" and is_experiment(file):  # a format given says the file is a schedule
        if calc_unit is not None:
            raise ConfigError("applies to GOAL schedules; an experiment's program_file "
                              "workload gives its own calc_unit", source=unit_option)
        return experiment_programs(file, overrides, index or 0, max_memory, job, command,
                                   inputs)
    if overrides:
        raise ConfigError("--set applies to experiment files", source="--set")
    if index is not None:
        raise ConfigError("--point applies to experiment files", source="--point")
    if job is not None:
        raise ConfigError("--job applies to experiment files", source="--job")
    return schedule_programs(file, fmt, calc_unit, unit_option)


@app.command()
def comm(
    file: Annotated[Path, typer.Argument(help="an experiment file (its closed-loop workload), "
                                              "or a schedule: GOAL, TI trace, DUMPI folder")],
    as_json: Annotated[bool, typer.Option("--json", help="the whole summary as JSON, per-rank "
                                          "figures and the matrix's non-zero entries")] = False,
    plot_text: Annotated[str | None, typer.Option(  # text: see app.out_path
        "--plot", help="write the rank x rank heat map of bytes (png, svg or pdf)")] = None,
    overwrite: Annotated[bool, typer.Option(
        "--overwrite", help="replace an existing --plot file")] = False,
    point: Annotated[int | None, typer.Option(
        "--point", help="the sweep point of an experiment (default 0)")] = None,
    job: Annotated[str | None, typer.Option(
        "--job", help=JOB_HELP)] = None,
    set_: Annotated[list[str] | None, typer.Option("--set", help="override a field")] = None,
    fmt: Annotated[str, typer.Option(
        "--format", help="schedule format: auto (.goal: GOAL, a folder or .dumpi.txt: DUMPI, "
        "else TI), goal, ti, dumpi")] = "auto",
    calc_unit: Annotated[str | None, typer.Option(
        "--calc-unit", help="a GOAL schedule's time of one 'calc' unit (default 1ns, "
        "LogGOPSim's; give what 'export --calc-unit' wrote)")] = None,
    max_memory: MaxMemory = None,
) -> None:
    """Summarise what a program communicates without simulating it: messages, bytes,
    per-rank sends and compute, message sizes, the busiest pairs, the communication matrix."""
    from federation.cli.run import memory_limit
    from federation.programs.analysis import communication, describe
    from federation.results.outputs import OutputFile, check_not_input

    limit = memory_limit(max_memory)  # usage before any file is read or made
    plot = out_path(plot_text, "the figure file to write", folder=False, source="--plot")

    if fmt not in SCHEDULE_FORMATS:
        raise ConfigError(f"must be one of {', '.join(SCHEDULE_FORMATS)}, got {fmt!r}",
                          source="--format")
    unit = calc_unit_ps(calc_unit) if calc_unit is not None else None
    target = None
    if plot is not None:
        from federation.plots.style import FORMATS

        if plot.suffix.lower().lstrip(".") not in FORMATS:
            raise ConfigError(f"the file name must end in .png, .svg or .pdf, got {plot.name!r}",
                              source="--plot")
        check_not_input(plot, "--plot", files=[file], within=[file] if file.is_dir() else [])
        target = OutputFile(plot, source="--plot", overwrite=overwrite)
    try:
        inputs: list[Path] = []
        progs, label = read_programs(file, set_ or [], point, fmt, limit, job, inputs=inputs,
                                     calc_unit=unit)
        summary = communication(progs)
        if target is not None:
            assert plot is not None
            check_not_input(plot, "--plot", files=inputs)  # what the experiment reads too
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
