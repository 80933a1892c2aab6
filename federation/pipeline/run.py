"""The driver of an experiment: every point through the stages (:mod:`.point`), serially or as
Dask tasks (:mod:`.distributed`), into one output folder and one results document.

The runner owns what is the same for every engine: the checks of every point before the first
runs (:func:`federation.pipeline.point.preflight`), the results document with the fully
resolved experiment of every point, and the output folder
(:class:`~federation.results.outputs.OutputDir`: written point by point, swapped in whole, kept
and marked incomplete when a run stops early).  Randomness comes from one
``numpy.random.Generator`` seeded by the experiment's ``seed`` and split per purpose, so the same
experiment and seed give byte-identical results.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from federation import interrupts
from federation._version import __version__
from federation.errors import FederationError
from federation.pipeline.build import build_network, resolve_links
from federation.pipeline.point import (
    Interrupted,
    Progress,
    Tables,
    preflight,
    prepare,
    run_point,
    with_loaded_plugins,
    write_point_tables,
)
from federation.pipeline.points import LoadedExperiment, PreparedPoint
from federation.pipeline.summary import message_table, summarize
from federation.results.model import (
    MachineSummary,
    PointResult,
    RunResult,
)
from federation.results.outputs import OutputDir, OutputError, write_table

__all__ = ["Interrupted", "PreparedPoint", "build_network", "message_table", "prepare",
           "resolve_links", "run_experiment", "summarize", "write_table"]


@with_loaded_plugins
def run_experiment(loaded: LoadedExperiment, out_dir: str | Path | None = None,
                   progress: Progress | None = None, *, overwrite: bool = False,
                   max_memory: int | None = None, out_source: str = "--out",
                   workers: int | None = None, scheduler: str | None = None,
                   worker_timeout: float | None = None,
                   placed: Callable[[Path], None] | None = None,
                   checked: Callable[[], None] | None = None,
                   deadlock_check: bool = True) -> RunResult:
    """Run every point of ``loaded``; write results into ``out_dir`` when given.

    Every point is checked before the first one runs.  Tables are written as each point
    finishes; the folder replaces ``out_dir`` at the end.  If a point fails or the run is
    stopped (Ctrl-C, SIGTERM, SIGHUP: :mod:`federation.interrupts`) after others finished, the
    finished ones are kept with ``results.json`` marked incomplete, and the error
    (:class:`Interrupted` for a stop signal) says so and where they are.

    ``workers`` above 1 or a ``scheduler`` address run the points as Dask tasks
    (:mod:`federation.pipeline.distributed`; a local cluster of at most one process per point, so
    one point is always run here); the results document is the same, byte for byte.
    ``worker_timeout`` bounds how long the sweep waits while the cluster has no worker.
    ``placed`` is told where the folder went (``out_dir``, or beside it when a folder appeared
    there during the run, see :class:`~federation.results.outputs.OutputDir`).
    ``deadlock_check`` false (``--no-deadlock-check``) skips the proof that each point's
    routing cannot deadlock (:mod:`federation.network.deadlock`).  A
    local cluster starts its processes with multiprocessing's ``spawn``, so a script calling
    this needs the usual ``if __name__ == "__main__":`` guard.  ``checked`` is called once every
    point has passed the preflight (the CLI prints its notes then: a refused run prints one line).
    """
    from federation.pipeline.bounds import default_max_memory

    limit = max_memory or default_max_memory()
    if workers is not None or scheduler is not None or worker_timeout is not None:
        from federation.pipeline import distributed

        distributed.check_options(workers, scheduler, worker_timeout)
    if workers is not None:  # no more local processes than points: 1 is the serial run
        workers = min(workers, len(loaded.points))
    spread = workers is not None and workers > 1 or scheduler is not None
    if spread:
        cache = distributed.preflight_shared(loaded, limit, workers, scheduler, deadlock_check)
    else:
        cache = preflight(loaded, limit, deadlock_check)
    if checked is not None:
        checked()
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
