"""A point through SST: configuration, ``sst``, its statistics read back.

SST runs whole points its own way (the engine's ``run_point``, :func:`run_point`), so
federation's one runner (:mod:`federation.pipeline.run`) runs them like any other: the same
checks, the same output folder (a failing or stopped sweep keeps its finished points, marked
incomplete) and results document, with ``engine: sst`` and a summary read from SST's
statistics (``null`` where merlin and ember report nothing).  ``federation run`` and
``federation sst run`` are the same run.

Per point the output folder keeps ``sst-N/config.py`` (what ran), ``sst-N/stats.csv``,
``sst-N/sst.stdout`` and ``sst-N/sst.stderr``, and ``ports-N`` (the window statistics per router
port, merlin port numbers).  sst runs in a folder of the system's temporary folder that becomes
``sst-N`` once read; when sst fails or its output cannot be read, that folder is kept and the
error names it (:func:`run_point`).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from federation.errors import SimulationError
from federation.pipeline.bounds import default_max_memory
from federation.pipeline.jobs import place_jobs
from federation.pipeline.point import BuildCache, preflight
from federation.pipeline.points import LoadedExperiment, Placed, ResolvedPoint, point_jobs
from federation.plugin.components import EnginePoint
from federation.results.model import ProgramSummary, RunResult
from federation.results.outputs import OutputDir

from .config import build_config
from .ember import is_closed_loop
from .ember_output import MOTIF_LOG, program_summary, read_motif_logs, summarize_programs
from .launch import command, require_sst, run_sst
from .options import SstOptions
from .results import SstOutputError, parse_stats_csv, parse_stdout, port_table, summarize
from .script import STATS_FILE, SstConfig


def options_of(point: ResolvedPoint) -> SstOptions:
    """The point's engine parameters when its engine is sst, else the defaults."""
    params = point.engine.params
    return params if isinstance(params, SstOptions) else SstOptions()


def placed_of(cache: BuildCache, point: ResolvedPoint) -> Placed:
    """The point's jobs on their nodes, in rank order, as any engine's run places them."""
    built = cache.get(point)
    return cache.ordered(point, built, place_jobs(point, built))


def generate(loaded: LoadedExperiment, max_memory: int | None = None,
             ) -> list[tuple[ResolvedPoint, SstConfig]]:
    """The configuration of every point, after the checks of a native run; refuses (one
    ConfigError naming the field) before returning any."""
    cache = preflight(loaded, max_memory or default_max_memory())
    return [(p, build_config(p, cache.get(p).network, options_of(p), placed_of(cache, p)))
            for p in loaded.points]


def write_configs(loaded: LoadedExperiment, out_dir: Path, overwrite: bool = False) -> list[Path]:
    """``config-N.py`` for every point into ``out_dir`` (replaced whole, as a run's folder)."""
    configs = generate(loaded)
    writer = OutputDir(out_dir, "csv", overwrite)
    names = []
    try:
        for i, (_, cfg) in enumerate(configs):
            (writer.tmp / f"config-{i}.py").write_text(cfg.text)
            names.append(out_dir / f"config-{i}.py")
        writer.place()
    except BaseException:
        writer.abort()
        raise
    return names


def run_experiment(loaded: LoadedExperiment, out_dir: Path, overwrite: bool = False,
                   max_memory: int | None = None,
                   placed: Callable[[Path], None] | None = None,
                   checked: Callable[[], None] | None = None) -> RunResult:
    """Every point with sst, through federation's one runner
    (:func:`federation.pipeline.run.run_experiment`, which calls :func:`run_point` through
    the engine's ``run_point``): a failing or stopped sweep keeps its finished points as any
    run does.  ``loaded``'s points must have engine sst (``federation sst run`` sets it);
    ``checked`` is called once every point passed its checks (the CLI prints its notes).
    ``sst`` itself is required after those checks, before anything is written: what merlin
    and ember cannot express is refused as ``federation run`` refuses it, with or without an
    ``sst`` on the machine (before stop 48 a missing ``sst`` came first)."""
    from federation.pipeline.run import run_experiment as run_points

    def sst_then_checked() -> None:
        for point in loaded.points:
            require_sst(options_of(point))
        if checked is not None:
            checked()

    return run_points(loaded, out_dir, overwrite=overwrite, max_memory=max_memory,
                      placed=placed, checked=sst_then_checked)


def run_point(index: int, point: ResolvedPoint, built: Any, placed: Placed | None,
              folder: Path | None) -> EnginePoint:
    """Run one point with sst and read its output: its summary (what merlin and ember report,
    ``null`` for the rest), its ports table, and the files kept in ``folder``.

    sst runs in a folder of its own in the system's temporary folder, moved into ``folder`` as
    ``sst-N`` once its output has been read (removed when there is no ``folder``): when sst
    fails (exit status, signal, time limit) or its output cannot be read, that folder is
    **kept** and the message names it (the output folder of a failed run is removed, so a path
    inside it would name nothing)."""
    opts = options_of(point)
    sst = require_sst(opts)
    cfg = build_config(point, built.network, opts, placed)
    work = Path(tempfile.mkdtemp(prefix=f"federation-sst-{index}-"))
    try:
        (work / "config.py").write_text(cfg.text)
        done = run_sst(command(opts, sst, "config.py"), work, opts.timeout)
        summary, rows = _read_output(point, built, cfg, work, done.stdout, placed)
    except (SimulationError, SstOutputError) as exc:  # the folder is kept: name it
        if str(work) in str(exc):
            raise
        raise type(exc)(f"{exc} (sst's files are kept in {work})") from None
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    files: dict[str, str] = {}
    if folder is not None:
        shutil.move(work, folder / f"sst-{index}")
        files["sst_config"] = f"sst-{index}/config.py"
        if is_closed_loop(point):
            files["motif_log"] = f"sst-{index}/{MOTIF_LOG}.log"
    else:
        shutil.rmtree(work, ignore_errors=True)
    tp = cfg.network.topo_params
    algorithm = tp.get("algorithm", tp.get("routing_alg", "dimension-order"))
    return EnginePoint(summary, {"ports": port_table(cfg, rows)}, files,
                       f"merlin {cfg.network.topology}, routing {algorithm}", done.wall_s)


def _read_output(point: ResolvedPoint, built: Any, cfg: SstConfig, work: Path,
                 stdout: str, placed: Placed | None = None) -> tuple[Any, list[Any]]:
    """The point's summary and the statistics rows, from what sst wrote into ``work``."""
    stats_path = work / STATS_FILE
    rows = parse_stats_csv(stats_path.read_text() if stats_path.exists() else "",
                           str(stats_path))
    out = parse_stdout(stdout)
    if is_closed_loop(point):
        summary = summarize_programs(cfg, rows, out, _programs(point, built, cfg, work, placed))
    else:
        meta = [{"name": j.name, "workload": j.workload.name, "placement": j.placement.name,
                 "rank_order": j.order.order} for j in point_jobs(point)
                ] if point.given_jobs else None
        summary = summarize(cfg, rows, out, int(point.machine.machine.packet_size), meta)
    return summary, rows


def _programs(point: ResolvedPoint, built: Any, cfg: SstConfig, work: Path,
              placed: Placed | None = None) -> ProgramSummary:
    """Completion and per-rank finish from ember's motif log; the operation and message
    counts are those of the program our workload builds with the same parameters on the same
    nodes (ember reports neither; the motifs issue the same MPI calls by construction)."""
    from federation.models.limits import TIME_LIMIT_PS
    from federation.pipeline.messages import workload_context
    from federation.programs.model import SEND

    job = point_jobs(point)[0]
    pj = placed.of(job) if placed is not None else None
    nodes = None if pj is None or pj.whole else pj.nodes
    progs = job.workload.programs(workload_context(
        point, built.network, TIME_LIMIT_PS - 1, built.nic_bandwidth,
        np.random.default_rng(point.experiment.seed), job, nodes))
    return program_summary(read_motif_logs(work), progs.n_ranks, cfg.motifs, progs.n_ops,
                           int((progs.op_kind == SEND).sum()), str(work / f"{MOTIF_LOG}.log"))
