"""``federation run``: run an experiment file (default: the shipped quickstart)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from federation.cli.app import app, out_path
from federation.cli.terminal import progress_reporter
from federation.errors import ConfigError
from federation.results.model import LinkUse, PointResult, RunResult
from federation.results.tables import cell, job_rows, num, program_rows

if TYPE_CHECKING:
    from federation.pipeline.points import LoadedExperiment


#: the help of ``--no-deadlock-check`` (``run`` and ``validate``)
NO_DEADLOCK_CHECK_HELP = (
    "skip the proof, before anything is simulated, that the routing cannot deadlock (its "
    "channel dependency graph has no cycle; a cycle is refused and printed): for routings "
    "whose cycles you mean to study, or compiled routings without a declared VC plan")


#: ``--max-memory`` of every command whose memory refusal advises it (``run``, ``validate``,
#: ``topology``, ``hops``, ``comm``, ``export``): one declaration, one help and one reading
#: (:func:`memory_limit`), so that ``validate`` checks a point against the limit ``run``
#: would run it under
MaxMemory = Annotated[str | None, typer.Option(
    "--max-memory", metavar="SIZE", help="refuse a machine or point estimated to need more "
    "memory than this, e.g. 16GiB (default: $FEDERATION_MAX_MEMORY or 80% of physical "
    "memory)")]


@app.command()
def run(
    file: Annotated[Path | None, typer.Argument(
        help="experiment file (YAML or JSON); default: the shipped quickstart")] = None,
    set_: Annotated[list[str] | None, typer.Option(
        "--set", help="override a field: --set workload.load=0.3 (repeatable)")] = None,
    out: Annotated[str | None, typer.Option(  # text: see app.out_path
        "--out", help="output directory (default: outputs.dir or results/<name>)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print results.json to stdout")] = False,
    overwrite: Annotated[bool, typer.Option(
        "--overwrite", help="replace an existing non-empty output directory whole")] = False,
    max_memory: MaxMemory = None,
    plot: Annotated[bool, typer.Option(
        "--plot", help="draw the standard figures (PNG) into the output folder's plots/ at the "
        "end (see `federation plot`)")] = False,
    workers: Annotated[int | None, typer.Option(
        "--workers", metavar="N",
        help="run the sweep points on a local Dask cluster of N processes (each point gets 1/N "
        "of --max-memory); 1 or absent: one after the other")] = None,
    scheduler: Annotated[str | None, typer.Option(
        "--scheduler", metavar="ADDRESS", help="run the sweep points on the existing Dask "
        "cluster whose scheduler is at ADDRESS, e.g. tcp://scheduler-host:8786")] = None,
    worker_timeout: Annotated[float | None, typer.Option(
        "--worker-timeout", metavar="SECONDS", help="with --workers or --scheduler: stop the "
        "sweep, keeping the finished points, when the cluster has had no worker for this long "
        "(none joined, or all left)  [default: 60]")] = None,
    no_deadlock_check: Annotated[bool, typer.Option(
        "--no-deadlock-check", help=NO_DEADLOCK_CHECK_HELP)] = False,
) -> None:
    """Run an experiment on its engine and write results.json plus per-port/per-packet tables.

    Stopped by Ctrl-C, SIGTERM or SIGHUP, it keeps the finished points (results.json marked
    incomplete) and exits 128 + the signal's number; an incomplete run never replaces a
    complete one (--overwrite): it is written beside it, as OUT.incomplete-N."""
    from federation.pipeline.distributed import check_options
    from federation.pipeline.load import load_experiment
    from federation.pipeline.run import run_experiment

    check_options(workers, scheduler, worker_timeout)  # before the file is read: usage first
    limit = memory_limit(max_memory)  # as validate reads it: usage before the file is read
    loaded = load_experiment(file, set_ or [])
    out_dir, out_source = output_folder(loaded, out)

    placed: list[Path] = []
    with progress_reporter() as cb:
        try:
            result = run_experiment(loaded, out_dir, progress=cb, overwrite=overwrite,
                                    max_memory=limit, out_source=out_source,
                                    workers=workers, scheduler=scheduler,
                                    worker_timeout=worker_timeout, placed=placed.append,
                                    checked=loaded.print_notes,
                                    deadlock_check=not no_deadlock_check)
        except KeyboardInterrupt as exc:  # before the run started
            from federation import interrupts
            from federation.pipeline.point import Interrupted

            raise Interrupted(f"interrupted by {interrupts.signal_name(exc)} before the run "
                              "started; nothing was written", exc) from None
    out_dir = placed[0] if placed else out_dir
    if as_json:
        print(json.dumps(result.model_dump(mode="json"), indent=2, sort_keys=True))
    else:
        print(format_summary(result, out_dir))
    if plot:
        from federation.cli.plot import draw_folders
        from federation.plots import DEFAULT_SATURATION_MARGIN

        # the run's own new folder: nothing of the user's to keep
        paths = draw_folders([out_dir], out_dir / "plots", "png", DEFAULT_SATURATION_MARGIN,
                             overwrite=True, source="--plot")
        if not as_json:  # stdout stays one JSON document
            print(f"plots: {out_dir / 'plots'}/ ({len(paths)} figures)")


def output_folder(loaded: LoadedExperiment, out: str | None,
                  command: str = "run") -> tuple[Path, str]:
    """Where the run writes, and what to name in a refusal: ``--out``, else ``outputs.dir``
    (relative to the experiment file), else ``results/<name>`` (the experiment's ``name``, or
    the file's stem; ``command``: the one asking, ``validate`` for the folder ``run`` would
    write), each checked as a name every file system and reader takes
    (:func:`federation.results.outputs.check_out_path`) and as no input of the experiment
    (:func:`check_inputs`)."""
    from federation.pipeline.inputs import check_inputs
    from federation.results.outputs import check_name, check_out_path

    exp = loaded.experiment
    out_given = out_path(out, "the output folder")
    if out_given is not None:
        out_dir, out_source = out_given, "--out"
    elif exp.outputs.dir:
        out_dir = Path(exp.outputs.dir)
        if not out_dir.is_absolute():
            out_dir = Path(loaded.source).parent / out_dir
        out_source = f"{loaded.source}: outputs.dir"
    elif exp.name:
        try:
            check_name(exp.name, str(loaded.source))
        except ConfigError as exc:  # say so when --set gave the name
            from federation.pipeline.overrides import blame

            raise blame(exc, loaded.overrides, loaded.source, loaded.doc) from None
        out_dir, out_source = Path("results") / exp.name, f"{loaded.source}: name"
    else:
        out_dir = Path("results") / Path(loaded.source).stem
        give = "give --out" if command == "run" else "give run --out"  # validate has none
        out_source = f"{loaded.source} (its name gives the output folder; {give})"
    check_out_path(out_dir, out_source)
    check_inputs(loaded, out_dir, out_source)
    return out_dir, out_source


def parse_max_memory(text: str | None) -> int | None:
    """``--max-memory`` as bytes, or ``None`` for the default."""
    from federation.pipeline.bounds import parse_memory_limit

    return None if text is None else parse_memory_limit(text, "--max-memory")


def memory_limit(text: str | None) -> int:
    """``--max-memory`` as bytes, its default (:func:`default_max_memory
    <federation.pipeline.bounds.default_max_memory>`) when not given."""
    from federation.pipeline.bounds import default_max_memory

    return parse_max_memory(text) or default_max_memory()


def format_summary(result: RunResult, out_dir: Path | None) -> str:
    """The concise table printed after a run.

    Open-loop points get the latency-versus-load table; closed-loop points (rank programs)
    get completion times instead, since for them load is not an input and the packet
    percentiles are not kept.  A sweep that mixes both prints both tables."""
    m = result.machine
    links = ", ".join(f"{v} {k}" for k, v in m.links.items())
    lines = [
        f"experiment {result.experiment or '-'}: {m.topology.get('kind')} machine "
        f"{m.name or ''} ({m.routers} routers, {m.nodes} nodes; links: {links})".replace("  ", " "),
        "",
    ]
    keys = list(result.points[0].sweep) if result.points else []
    open_loop = [p for p in result.points if p.summary.programs is None]
    closed = [p for p in result.points if p.summary.programs is not None]
    if open_loop or not closed:
        lines += _table(*_open_loop_rows(keys, open_loop))
    if closed:
        if open_loop:
            lines.append("")
        lines += _table(*program_rows(keys, closed, _wall))
    with_jobs = [p for p in result.points if p.summary.jobs]
    if with_jobs:
        lines += ["", *_table(*job_rows(keys, with_jobs))]
        late = _outlived(with_jobs)
        if late:
            lines += ["", late]
    last = result.points[-1] if result.points else None
    if last is not None and last.summary.busiest_links:
        lines += ["", *_busiest_links(last)]
    if out_dir is not None:
        lines += ["", f"results: {out_dir}/results.json"]
    return "\n".join(lines)


def _wall(p: PointResult) -> str:
    return num(p.performance.wall_seconds if p.performance else None, ".2f")


def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    """Right-aligned columns, each as wide as its widest cell."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    out = ["  ".join(h.rjust(w) for h, w in zip(head, widths, strict=True))]
    out += ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return out


def _open_loop_rows(keys: list[str], points: list[PointResult]
                    ) -> tuple[list[str], list[list[str]]]:
    head = [*keys, "routing", "offered", "accepted", "lat mean ns", "p50", "p99", "hops",
            "nonmin", "measured", "wall s"]
    rows = []
    for p in points:
        s = p.summary
        lat = s.latency_ns
        rows.append([*(cell(p.sweep.get(k, "-")) for k in keys), p.routing,
                     num(s.offered_load, ".3f"), num(s.accepted_load, ".3f"), num(lat.mean),
                     num(lat.p50), num(lat.p99), num(s.mean_hops, ".2f"),
                     num(s.nonminimal_fraction, ".2f"), str(s.packets_measured), _wall(p)])
    return head, rows


def _outlived(points: list[PointResult]) -> str | None:
    """A note when a closed-loop job ran past the open-loop jobs' traffic, which stops at
    stop.warmup + stop.measure: its slowdown is then measured partly on a quieter machine."""
    for p in points:
        jobs = p.summary.jobs or []
        if not any(not j.closed_loop for j in jobs):
            continue
        stop = p.resolved.get("stop", {}) if p.resolved else {}
        try:
            from federation.models.units import parse_time

            horizon = (parse_time(stop.get("warmup", 0)) + parse_time(stop.get("measure", 0)))
        except (TypeError, ValueError):
            continue
        for j in jobs:
            if j.closed_loop and j.completion_ns is not None and \
                    (j.start_ns + j.completion_ns) * 1e-9 > horizon:
                return (f"note: job {j.name!r} ran until {(j.start_ns + j.completion_ns):.1f} "
                        f"ns, past the open-loop jobs' traffic (stop.warmup + stop.measure = "
                        f"{horizon * 1e9:.1f} ns); lengthen stop.measure for them to run as "
                        "long as it does")
    return None


def _busiest_links(p: PointResult) -> list[str]:
    """The last point's busiest output ports.  A closed-loop point's window is its whole run,
    so its two utilisations are one figure, printed once."""
    label = ", ".join(f"{k}={cell(v)}" for k, v in p.sweep.items()) or "the run"
    out = []
    if p.summary.programs is not None:
        where = "" if not p.sweep else f" ({label})"
        out.append(f"busiest links over the run, until the programs completed{where}:")
        for lk in p.summary.busiest_links:
            out.append(f"  {_link_name(lk)}: {100 * lk.utilization_run:.1f}% busy, "
                       f"{lk.bytes} bytes")
        return out
    out.append(f"busiest links in the measurement window ({label}):")
    for lk in p.summary.busiest_links:
        out.append(f"  {_link_name(lk)}: "
                   f"{100 * lk.utilization_window:.1f}% busy in the window, "
                   f"{lk.bytes_window} bytes (whole run: "
                   f"{100 * lk.utilization_run:.1f}%, {lk.bytes} bytes)")
    return out


def _link_name(lk: LinkUse) -> str:
    src = f"router {lk.router}" if lk.router is not None else "NIC"
    return f"{src} -> {lk.peer} [{lk.link_class}] port {lk.port}"
