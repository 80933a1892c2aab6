"""Every point of an experiment through SST: configuration, ``sst``, results document.

The native runner (:mod:`federation.pipeline.run`) summarises per-packet arrays, which SST's
endpoints do not report, so SST points go through this driver instead (``federation sst run``): it
shares the runner's checks (:func:`federation.pipeline.point.preflight`), its output folder
(:class:`federation.results.outputs.OutputDir`: written whole at the end, nothing left on failure)
and its results document, with ``engine: sst`` and a summary read from SST's statistics.

Per point the output folder keeps ``sst-N/config.py`` (what ran), ``sst-N/stats.csv``,
``sst-N/sst.stdout`` and ``sst-N/sst.stderr``, and ``ports-N`` (the window statistics per router
port, merlin port numbers).  sst runs in a folder of the system's temporary folder that becomes
``sst-N`` once read; when sst fails or its output cannot be read, that folder is kept and the
error names it (:func:`_run_point`).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from federation._version import __version__
from federation.errors import SimulationError
from federation.pipeline.bounds import default_max_memory
from federation.pipeline.jobs import place_jobs
from federation.pipeline.point import BuildCache, preflight, workload_document
from federation.pipeline.points import LoadedExperiment, Placed, ResolvedPoint, point_jobs
from federation.plugin.components import EnginePoint
from federation.results.model import PointResult, ProgramSummary, RunResult
from federation.results.outputs import OutputDir

from .config import build_config
from .ember import is_closed_loop
from .ember_output import MOTIF_LOG, program_summary, read_motif_logs, summarize_programs
from .launch import command, require_sst, run_sst, sst_version
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
        _swap(writer)
    except BaseException:
        writer.abort()
        raise
    return names


def _swap(writer: OutputDir) -> None:
    out = writer.out
    if out.exists():
        trash = Path(tempfile.mkdtemp(prefix=".federation-old-", dir=writer.tmp.parent))
        out.rename(trash / "old")
        writer.tmp.rename(out)
        shutil.rmtree(trash, ignore_errors=True)
    else:
        writer.tmp.rename(out)


def run_experiment(loaded: LoadedExperiment, out_dir: Path, overwrite: bool = False,
                   max_memory: int | None = None) -> RunResult:
    """Run every point with sst and write the results folder; sst must be installed."""
    from federation.pipeline.point import component_origins, machine_summary, resolved_document

    for point in loaded.points:
        require_sst(options_of(point))
    cache = preflight(loaded, max_memory or default_max_memory())
    writer = OutputDir(out_dir, loaded.experiment.outputs.format, overwrite)
    points, perf = [], []
    try:
        msum = None
        for i, point in enumerate(loaded.points):
            res, wall = _run_point(i, point, cache, writer)
            points.append(res.model_copy(update={
                "resolved": resolved_document(point, cache.get(point)),
                "components": _with_version(component_origins(point), point)}))
            perf.append({"wall_seconds": wall})
            msum = msum or machine_summary(point, cache.get(point).network)
        assert msum is not None
        result = RunResult(federation_version=__version__,
                           experiment=loaded.experiment.name,
                           source=str(Path(loaded.source).resolve()), machine=msum,
                           points=points)
        writer.finish(result, perf)
    except BaseException:
        writer.abort()
        raise
    return result


def _run_point(index: int, point: ResolvedPoint, cache: BuildCache,
               writer: OutputDir) -> tuple[PointResult, float]:
    """Run one point with sst (:func:`run_point`) into the output folder."""
    ran = run_point(index, point, cache.get(point), placed_of(cache, point), writer.tmp)
    table = {k: np.asarray(v) for k, v in ran.tables["ports"].items()}
    files = {"ports": writer.write_table(f"ports-{index}", table, {"point": index}),
             **ran.files}
    exp = point.experiment
    res = PointResult(
        index=index, sweep=point.sweep, seed=exp.seed, engine="sst",
        routing=point.routing.name, routing_description=ran.routing_description,
        workload=workload_document(point), summary=ran.summary, files=files)
    return res, ran.wall_seconds


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
        summary = summarize(cfg, rows, out, int(point.machine.machine.packet_size))
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


def _with_version(origins: dict[str, Any], point: ResolvedPoint) -> dict[str, Any]:
    """The engine's origin with the SST version that ran (``sst --version``)."""
    eng = origins.get("engine")
    if eng is None:
        return origins
    version = sst_version(require_sst(options_of(point)))
    return {**origins, "engine": eng.model_copy(update={"program": version})}
