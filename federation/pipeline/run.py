"""Experiment runner: every point of an experiment through preparation, engine and summary.

The runner owns everything that is the same for every engine: the checks before the run
(:func:`federation.pipeline.prepare.preflight`), preparing each point (:mod:`federation.pipeline.prepare`),
reducing raw per-packet arrays to the summary of :class:`~federation.results.model.PointSummary`,
and the results document with the fully resolved experiment of every point.  Output files go
through :class:`~federation.results.outputs.OutputDir`: written point by point, swapped in whole, and
kept (marked incomplete) when a run stops early.  Randomness comes from one
``numpy.random.Generator`` seeded by the experiment's ``seed`` and split per purpose, so the same
experiment and seed give byte-identical results.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn, Protocol

import numpy as np

from federation._version import __version__
from federation import interrupts
from federation.engine.native import RawResult
from federation.errors import FederationError
from federation.pipeline.load import LoadedExperiment, ResolvedPoint
from federation.results.model import (
    ComponentOrigin,
    MachineSummary,
    Performance,
    PointResult,
    RunResult,
)
from federation.network import Network
from federation.results.outputs import OutputDir, OutputError, write_table
from federation.pipeline.prepare import (
    BuildCache,
    Built,
    PreparedPoint,
    build_network,
    preflight,
    prepare,
    resolve_links,
)
from federation.pipeline.summary import message_table, summarize

__all__ = ["PreparedPoint", "build_network", "message_table", "prepare", "resolve_links",
           "run_experiment", "summarize", "write_table"]


class Progress(Protocol):
    """A progress callback: ``label`` advanced to ``done`` of ``total`` ``unit`` (packets of a
    point's run; ``points`` for a distributed sweep, whose packets are counted on workers)."""

    def __call__(self, label: str, done: int, total: int, unit: str = "packets") -> None: ...


Tables = dict[str, np.ndarray]


class Interrupted(FederationError):
    """A stop signal during a run (SIGINT, SIGTERM, SIGHUP: :mod:`federation.interrupts`);
    the exit status is 128 + the signal's number, as a shell reports it (130 for Ctrl-C)."""

    exit_code = 130

    def __init__(self, message: str, exc: BaseException | None = None) -> None:
        super().__init__(message)
        if exc is not None:
            self.exit_code = interrupts.exit_code(exc)


def _performance(raw: RawResult) -> Performance:
    w = raw.wall_s
    return Performance(
        wall_seconds=w,
        events_per_second=raw.events / w if w > 0 else 0.0,
        packet_hops_per_second=raw.packet_hops / w if w > 0 else 0.0,
    )


def machine_summary(point: ResolvedPoint, net: Network) -> MachineSummary:
    counts = np.bincount(net.link_class, minlength=len(net.link_classes))
    links = {"terminal": net.n_nodes}
    for i, c in enumerate(net.link_classes):
        if c != "terminal":
            links[c] = int(counts[i])
    m = point.machine.machine
    return MachineSummary(name=m.name, topology=m.topology.model_dump(mode="json"),
                          routers=net.n_routers, nodes=net.n_nodes, links=links)




def resolved_document(point: ResolvedPoint, built: Built) -> dict[str, Any]:
    """The point as a complete experiment document: the machine inline with every default
    filled in, each component with all its parameters, no sweep.  Running it gives the point's
    results again, wherever it is run from."""
    m = point.machine
    machine = m.machine.model_dump(mode="json")
    machine["topology"] = _component(m.topology)
    machine["qos"] = _component(m.qos)
    machine["links"] = {c: {"bandwidth": f.bandwidth, "latency": f.latency, "buffer": f.buffer}
                        for c, f in built.links.items()}
    machine["nic"] = {**machine.get("nic", {}), "bandwidth": built.nic_bandwidth}
    exp = point.experiment.model_dump(mode="json")
    exp.pop("sweep", None)
    exp["machine"] = machine
    exp["routing"] = {"algorithm": point.routing.name,
                      **point.routing.params.model_dump(mode="json")}
    exp["workload"] = _component(point.workload)
    exp["background"] = _component(point.background) if point.background is not None else None
    exp["engine"] = _component(point.engine)
    return exp


def _component(c: Any) -> dict[str, Any]:
    return {"kind": c.name, **c.params.model_dump(mode="json")}


def component_origins(point: ResolvedPoint) -> dict[str, ComponentOrigin]:
    """Plugin and version behind each component of ``point``."""
    from federation.plugin.registry import get_plugins

    plugins = get_plugins()
    own = f"hpc-federation {__version__}"
    out = {}
    for slot, registry, comp in (
            ("topology", plugins.topologies, point.machine.topology),
            ("qos", plugins.qos, point.machine.qos),
            ("routing", plugins.routings, point.routing),
            ("workload", plugins.workloads, point.workload),
            ("engine", plugins.engines, point.engine)):
        reg = registry.items.get(comp.name)
        plugin = reg.plugin if reg is not None else "unregistered"
        info = plugins.info.get(plugin)
        source = info.source if info is not None else "unknown"
        out[slot] = ComponentOrigin(name=comp.name, plugin=plugin,
                                    source=own if source == "builtin" else source,
                                    program=comp.program() if slot == "engine" else None)
    return out


def compute_point(index: int, point: ResolvedPoint, cache: BuildCache,
                  progress: Progress | None = None,
                  origins: dict[str, ComponentOrigin] | None = None,
                  ) -> tuple[PointResult, MachineSummary, dict[str, Tables]]:
    """Prepare, simulate and summarise one point; returns its result (no files yet), the
    machine summary and the tables the experiment asks for, by name.

    Split from writing so that a distributed sweep can run this on a worker and write the
    tables on the client (:mod:`federation.pipeline.distributed`).  ``origins`` lets the caller give the
    component origins it resolved itself (they depend on the process's plugin manager).
    """
    prep = prepare(point, cache)
    built = cache.get(point)
    label = point_label(point)

    def cb(done: int, total: int) -> None:
        if progress is not None:
            progress(label, done, total)

    try:
        raw = point.engine.run(prep.job, progress=cb)
    except FederationError as exc:  # deadlock, clock range: say which file and point
        where = f"{point.source}" + (f" (sweep point {index}: {label})" if point.sweep else "")
        raise type(exc)(f"{where}: {exc}") from None
    summary, packets, ports = summarize(prep, raw)
    exp = point.experiment
    tables: dict[str, Tables] = {}
    if exp.outputs.packets:
        tables["packets"] = packets
    if exp.outputs.ports:
        tables["ports"] = ports
    if exp.outputs.messages:
        tables["messages"] = message_table(prep, raw)
    result = PointResult(
        index=index, sweep=point.sweep, seed=exp.seed, engine=point.engine.name,
        routing=point.routing.name, routing_description=built.tables.description,
        workload=exp.workload.model_dump(mode="json"),
        resolved=resolved_document(point, built),
        components=origins if origins is not None else component_origins(point),
        summary=summary, files={}, performance=_performance(raw),
    )
    return result, machine_summary(point, prep.network), tables


def point_label(point: ResolvedPoint) -> str:
    """``workload.load=0.3, seed=2`` (or ``run`` for an experiment without a sweep)."""
    return ", ".join(f"{k}={v}" for k, v in point.sweep.items()) or "run"


def write_point_tables(folder: Path, fmt: str, result: PointResult,
                       tables: dict[str, Tables]) -> PointResult:
    """Write a point's tables into ``folder`` now (``packets-N``, ``ports-N``, ``messages-N``,
    in ``fmt``); returns the result with their file names.  Folder and format rather than the
    :class:`OutputDir`, so that a worker process of a distributed sweep can call it too."""
    stems = [f"{name}-{result.index}" for name in tables]
    try:
        files = {name: write_table(table, folder / stem, fmt, {"point": result.index}).name
                 for stem, (name, table) in zip(stems, tables.items(), strict=True)}
    except BaseException:  # Ctrl-C or a full disk between two tables: no half-written point
        for stem in stems:
            for path in folder.glob(f"{stem}.*"):
                path.unlink(missing_ok=True)
        raise
    return result.model_copy(update={"files": files})


def run_point(index: int, point: ResolvedPoint, cache: BuildCache, writer: OutputDir | None,
              progress: Progress | None = None) -> tuple[PointResult, MachineSummary]:
    """Prepare, simulate and summarise one point; its tables are written at once."""
    result, msum, tables = compute_point(index, point, cache, progress)
    if writer is not None:
        result = write_point_tables(writer.tmp, writer.fmt, result, tables)
    return result, msum


def run_experiment(loaded: LoadedExperiment, out_dir: str | Path | None = None,
                   progress: Progress | None = None, *, overwrite: bool = False,
                   max_memory: int | None = None, out_source: str = "--out",
                   workers: int | None = None, scheduler: str | None = None,
                   worker_timeout: float | None = None,
                   placed: Callable[[Path], None] | None = None) -> RunResult:
    """Run every point of ``loaded``; write results into ``out_dir`` when given.

    Every point is checked before the first one runs.  Tables are written as each point
    finishes; the folder replaces ``out_dir`` at the end.  If a point fails or the run is
    stopped (Ctrl-C, SIGTERM, SIGHUP: :mod:`federation.interrupts`) after others finished, the
    finished ones are kept with ``results.json`` marked incomplete, and the error
    (:class:`Interrupted` for a stop signal) says so and where they are.

    ``workers`` above 1 or a ``scheduler`` address run the points as Dask tasks
    (:mod:`federation.pipeline.distributed`; a local cluster of at most one process per point, so one
    point is always run here); the results document is the same, byte for byte.
    ``worker_timeout`` bounds how long the sweep waits while the cluster has no worker.
    ``placed`` is told where the folder went (``out_dir``, or beside it when a folder appeared
    there during the run, see :class:`~federation.results.outputs.OutputDir`).  A
    local cluster starts its processes with multiprocessing's ``spawn``, so a script calling
    this needs the usual ``if __name__ == "__main__":`` guard.
    """
    from federation.pipeline.preflight import default_max_memory

    limit = max_memory or default_max_memory()
    if workers is not None or scheduler is not None or worker_timeout is not None:
        from federation.pipeline import distributed

        distributed.check_options(workers, scheduler, worker_timeout)
    if workers is not None:  # no more local processes than points: 1 is the serial run
        workers = min(workers, len(loaded.points))
    spread = workers is not None and workers > 1 or scheduler is not None
    if spread:
        cache = distributed.preflight_shared(loaded, limit, workers, scheduler)
    else:
        cache = preflight(loaded, limit)
    writer = (OutputDir(Path(out_dir), loaded.experiment.outputs.format, overwrite, out_source)
              if out_dir is not None else None)
    done: dict[int, tuple[PointResult, MachineSummary]] = {}
    try:
        if spread:
            def keep(result: PointResult, msum: MachineSummary,
                     tables: dict[str, Tables]) -> None:
                if writer is not None and tables:  # else written by the worker, or not wanted
                    result = write_point_tables(writer.tmp, writer.fmt, result, tables)
                done[result.index] = (result, msum)

            distributed.run_points(loaded, cache.max_memory, keep, workers=workers,
                                   scheduler=scheduler, progress=progress,
                                   out=(writer.tmp, writer.fmt) if writer else None,
                                   worker_timeout=worker_timeout)
        else:
            for i, point in enumerate(loaded.points):
                done[i] = run_point(i, point, cache, writer, progress)
        if len(done) < len(loaded.points):  # never claim a point that did not run
            raise FederationError(f"points {_missing(loaded, done)} did not finish")
    except (Exception, KeyboardInterrupt) as exc:
        with interrupts.held():  # a second signal does not cut keeping the points short
            _stop_early(loaded, writer, done, exc)
    result = _result(loaded, done)
    if writer is None:
        return result
    try:
        result = writer.finish(result, _perf(result.points))
    except KeyboardInterrupt as exc:  # arrived while the folder was put in place
        raise Interrupted(f"interrupted by {interrupts.signal_name(exc)} after every point "
                          f"finished; the results are complete in {writer.final}", exc) from None
    if placed is not None and writer.final is not None:
        placed(writer.final)
    if result.status != "complete":  # the writer found a point's tables missing
        raise FederationError(f"{result.error}; {len(result.points)} of {len(loaded.points)} "
                              f"points are kept in {writer.final} (results.json marked "
                              "incomplete)")
    return result


def _stop_early(loaded: LoadedExperiment, writer: OutputDir | None,
                done: dict[int, tuple[PointResult, MachineSummary]],
                exc: BaseException) -> NoReturn:
    """Keep the finished points (``results.json`` marked incomplete, the others listed as
    missing) and raise the error saying so and where; with nothing finished, leave nothing
    behind."""
    stop = isinstance(exc, KeyboardInterrupt)
    why = f"interrupted by {interrupts.signal_name(exc)}" if stop else str(exc)
    n = len(loaded.points)
    if writer is None or not done:
        if writer is not None:
            writer.abort()
        if stop:  # typer would exit 130 without a word
            tail = ("before any point finished; nothing was written" if not done
                    else f"after {len(done)} of {n} points")
            raise Interrupted(f"{why} {tail}", exc) from None
        raise exc
    _drop_unkept(writer.tmp, [p for p, _ in done.values()])
    try:
        kept = writer.finish(_result(loaded, done, error=why), _perf(
            [done[i][0] for i in sorted(done)]))
        if kept.status == "complete":  # the signal came after the last point finished
            note = f"every point finished; the results are complete in {writer.final}"
        else:
            note = (f"{len(kept.points)} of {n} points finished and are kept in "
                    f"{writer.final} (results.json marked incomplete)")
        if writer.beside_complete:
            note += f"; {writer.out} holds a complete earlier run, left as it was"
    except OutputError as werr:  # the documents could not be written: say what is where
        note = str(werr)
    if stop:
        raise Interrupted(f"{why}; {note}", exc) from None
    if isinstance(exc, FederationError):
        raise type(exc)(f"{exc}; {note}") from None
    exc.add_note(note)
    raise exc


def _missing(loaded: LoadedExperiment,
             done: dict[int, tuple[PointResult, MachineSummary]]) -> list[int]:
    return [i for i in range(len(loaded.points)) if i not in done]


def _drop_unkept(folder: Path, points: list[PointResult]) -> None:
    """Remove every file of ``folder`` that no kept point names: tables a worker process wrote
    for a point whose run was cancelled or interrupted (its cluster is closed by now)."""
    keep = {name for p in points for name in p.files.values()}
    for path in folder.iterdir():
        if path.name not in keep and path.is_file():
            path.unlink(missing_ok=True)


def _result(loaded: LoadedExperiment, done: dict[int, tuple[PointResult, MachineSummary]],
            error: str | None = None) -> RunResult:
    """The results document of the finished points ``done`` (at least one), in index order:
    ``complete`` only when every point of the sweep is in it."""
    kept = sorted(done)
    missing = _missing(loaded, done)
    return RunResult(
        federation_version=__version__,
        experiment=loaded.experiment.name,
        source=str(Path(loaded.source).resolve()),
        status="incomplete" if missing else "complete",
        missing_points=missing,
        error=error if missing else None,
        machine=done[kept[0]][1],
        points=[done[i][0] for i in kept],
    )


def _perf(points: list[PointResult]) -> list[dict[str, Any] | None]:
    return [p.performance.model_dump(mode="json") if p.performance else None for p in points]
