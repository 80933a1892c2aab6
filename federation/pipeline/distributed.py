"""Sweep points as Dask tasks: ``federation run --workers N`` and ``--scheduler ADDRESS``.

A sweep's points are independent (each has its own seeded generators, see
:func:`federation.pipeline.prepare.prepare`), so they can run anywhere in any order.  Rather than a
home-made process pool, they run on Dask's distributed scheduler: a :class:`LocalCluster` of
``N`` single-threaded worker processes (the engine is single-threaded compiled code, so one
thread per process uses a core each), or an existing cluster whose scheduler address is given.
Dask brings what a process pool would have to grow by hand: a dead worker's task re-run
elsewhere, cancellation, and the same code path from a laptop to a cluster.

What stays on the client, and why:

* **The checks before the run** (:func:`federation.pipeline.prepare.preflight`): a bad point is refused
  before any worker starts, as in a serial run.
* **Component origins** (which plugin and version supplied each component): they come from the
  client's plugin manager, the one that resolved the points, so ``results.json`` does not
  depend on what a worker process happens to have loaded.
* **The results document**, in point order.

What depends on the cluster: **who writes the tables.**

* A local cluster's workers write their point's tables into
  :class:`~federation.results.outputs.OutputDir`'s temporary folder themselves.  Writing Parquet costs
  about as much as a mid-size simulation (5 s for a 1.4-million-packet point), and done on the
  client it would be a serial step that caps the speed-up.  OutputDir's swap-in-whole stays
  true: the cluster is closed (its processes ended) before the folder is finished, and after an
  early stop every file no kept point names (a cancelled point's partial tables) is removed
  first.
* An existing cluster's workers may not share this filesystem, and a task they are running
  cannot be stopped from here (Dask does not interrupt running tasks): a late table could land
  after the folder was finished.  So they return their tables with the summary, and the client
  writes them as each point arrives: one writer, no late file, at the price of moving the
  tables over the connection (numpy buffers, not element by element).

Workers get the client's ``FEDERATION_*`` environment with every task (a local cluster's
processes inherit it anyway; a remote worker may not have it), and the resolved point itself
(pickled components, so a worker runs exactly the classes the client resolved).  Each worker
process keeps its own :class:`~federation.pipeline.prepare.BuildCache` and compiles (or loads from
numba's on-disk cache) the engine once.

The order of the points in ``results.json`` is their index, never their completion order, so
the document is byte-identical to a serial run's whatever the number of workers.  On a failure
the points after the failing one are cancelled and those before it are awaited, so the error
reported is the one a serial run would have stopped at; every point that finished is kept.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from federation.errors import BackendUnavailable, ConfigError
from federation.pipeline.load import LoadedExperiment, ResolvedPoint
from federation.pipeline.prepare import BuildCache, preflight
from federation.pipeline.run import (
    Progress,
    Tables,
    component_origins,
    compute_point,
    write_point_tables,
)
from federation.results.model import ComponentOrigin, MachineSummary, PointResult

if TYPE_CHECKING:
    from distributed import Client

#: how long to wait for an existing scheduler to answer before giving up
CONNECT_TIMEOUT_S = 20

OnPoint = Callable[[PointResult, MachineSummary, dict[str, Tables]], None]
TaskResult = tuple[PointResult, MachineSummary, dict[str, Tables]]


def check_options(workers: int | None, scheduler: str | None) -> None:
    """Refuse ``--workers`` below 1, or ``--workers`` together with ``--scheduler``."""
    if workers is not None and scheduler is not None:
        raise ConfigError("give either --workers N (start a local cluster) or --scheduler "
                          "ADDRESS (use an existing one), not both", source="--workers")
    if workers is not None and workers < 1:
        raise ConfigError(f"must be at least 1 (1 runs the points one after the other in this "
                          f"process), got {workers}", source="--workers")


def preflight_shared(loaded: LoadedExperiment, limit: int, workers: int | None,
                     scheduler: str | None) -> BuildCache:
    """:func:`~federation.pipeline.prepare.preflight` with each point's share of ``limit``.

    A local cluster of N workers holds N points in memory at once on this machine, so each
    point gets 1/N of the limit; an existing cluster's workers have memory of their own."""
    share = limit // workers if scheduler is None and workers else limit
    try:
        return preflight(loaded, share)
    except ConfigError as exc:
        raise _memory_note(exc, workers) from None


def _memory_note(exc: ConfigError, workers: int | None) -> ConfigError:
    """Say that the memory limit was shared among the workers (a refusal naming a limit
    smaller than the one the user set would otherwise make no sense)."""
    if not workers or "--max-memory" not in exc.message:
        return exc
    return ConfigError(f"{exc.message}; {workers} points run at once on the local cluster "
                       f"(--workers), each gets 1/{workers} of it", source=exc.source,
                       path=exc.path)


def federation_env() -> dict[str, str]:
    """The ``FEDERATION_*`` variables of this process: what decides which plugins load."""
    return {k: v for k, v in os.environ.items() if k.startswith("FEDERATION_")}


_worker_state = threading.local()


def _sync_env(env: dict[str, str]) -> None:
    """Make this worker's ``FEDERATION_*`` variables the client's; reload the plugins if they
    changed (the plugin manager is per process and reads them when it loads)."""
    if federation_env() == env:
        return
    from federation.plugin.registry import reset_plugins

    for k in federation_env():
        if k not in env:
            del os.environ[k]
    os.environ.update(env)
    reset_plugins()


def run_task(index: int, point: ResolvedPoint, max_memory: int,
             origins: dict[str, ComponentOrigin], env: dict[str, str],
             local_workers: int | None, out: tuple[Path, str] | None,
             return_tables: bool) -> TaskResult:
    """One sweep point on a worker.  With ``out`` (the run's temporary folder and table
    format; local clusters) the worker writes the tables there; with ``return_tables`` it
    returns them for the client to write; else (no output folder) they are dropped here.
    ``local_workers`` is the size of a local cluster, whose workers share ``max_memory`` (for
    the refusal)."""
    _sync_env(env)
    cache = getattr(_worker_state, "cache", None)
    if cache is None or cache.max_memory != max_memory:
        cache = _worker_state.cache = BuildCache(max_memory)
    try:
        result, msum, tables = compute_point(index, point, cache, None, origins)
    except ConfigError as exc:
        raise _memory_note(exc, local_workers) from None
    if out is not None:
        return write_point_tables(out[0], out[1], result, tables), msum, {}
    return result, msum, tables if return_tables else {}


def dask_setup(worker: object) -> None:
    """Dask preload hook, run in each local worker process as it starts: ignore SIGINT.

    Ctrl-C at a terminal reaches the whole process group, workers included; the client alone
    decides what it means (cancel the tasks, keep the finished points, close the cluster),
    and a worker dying of it would only print a traceback of its own."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextmanager
def dask_client(workers: int | None, scheduler: str | None) -> Iterator[Client]:
    """A client of a new local cluster (``workers`` processes, one thread each, on the loopback
    interface) or of the scheduler at ``scheduler``; closed on the way out,
    which ends a local cluster's processes."""
    try:
        from distributed import Client, LocalCluster
    except ImportError as exc:  # a dependency, but an install may have left it out
        raise BackendUnavailable(f"--workers and --scheduler need Dask's 'distributed' package "
                                 f"({exc}); pip install distributed") from None
    if scheduler is not None:
        try:
            client = Client(scheduler, timeout=CONNECT_TIMEOUT_S)
        except (OSError, ValueError, TypeError) as exc:
            raise ConfigError(f"cannot reach the Dask scheduler at {scheduler!r}: {exc}",
                              source="--scheduler") from None
        with client:
            yield client
        return
    with ExitStack() as stack:
        with _sigint_held():
            # memory_limit=0: the points were checked against their share of --max-memory
            # already; Dask's own per-worker limit would pause or kill a worker on another rule
            cluster = stack.enter_context(LocalCluster(
                n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                # the scheduler's HTTP routes on any free port (the fixed default, 8787, may be
                # taken by another cluster: a warning on stderr), no dashboard
                dashboard_address=":0", scheduler_kwargs={"dashboard": False},
                memory_limit=0, preload=[__name__], silence_logs=logging.CRITICAL))
            client = stack.enter_context(Client(cluster))
        yield client


@contextmanager
def _sigint_held() -> Iterator[None]:
    """Hold Ctrl-C back while a local cluster starts, and deliver it once the cluster is up.

    Interrupted half-way, Dask's start leaves workers it cannot close (its exit handler then
    prints a traceback); held, the interrupt arrives where the cluster is closed in order.
    Only this thread and the threads it starts (Dask's event loop) hold it: a worker process
    that gets a Ctrl-C from the terminal before its preload hook (:func:`dask_setup`) runs
    still dies of it, printing a traceback (ignoring SIGINT here meanwhile, which the workers
    would inherit, loses the user's Ctrl-C instead)."""
    if threading.current_thread() is not threading.main_thread() \
            or not hasattr(signal, "pthread_sigmask"):
        yield
        return
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # a held Ctrl-C is delivered here


def run_points(loaded: LoadedExperiment, max_memory: int, on_point: OnPoint, *,
               workers: int | None, scheduler: str | None,
               progress: Progress | None = None, out: tuple[Path, str] | None = None) -> None:
    """Run every point of ``loaded`` as a Dask task; ``on_point`` gets each finished point on
    the client, in completion order.  The workers of a local cluster write the tables into
    ``out`` (folder, format) themselves; those of an existing cluster return them, since they
    may not share this machine's filesystem.

    On a failing point: the points after it are cancelled, those before it awaited, and the
    lowest-index failure is raised (the one a serial run would report).  On Ctrl-C every task
    is cancelled and the cluster closed before :class:`KeyboardInterrupt` goes on.
    """
    n = len(loaded.points)
    env = federation_env()
    with dask_client(workers, scheduler) as client:
        from distributed import as_completed

        where = f"{workers} workers" if workers else scheduler
        label = f"sweep points ({where})"
        run_id = uuid.uuid4().hex  # keys unique on a scheduler other clients share
        futures = [client.submit(run_task, i, p, max_memory, component_origins(p), env,
                                 workers if scheduler is None else None,
                                 out if scheduler is None else None,
                                 out is not None and scheduler is not None,
                                 key=f"federation-point-{i}-{run_id}",
                                 pure=False)
                   for i, p in enumerate(loaded.points)]
        index = {f.key: i for i, f in enumerate(futures)}
        failed: dict[int, BaseException] = {}
        finished = 0
        if progress is not None:
            progress(label, 0, n, "points")
        try:
            for fut in as_completed(futures):
                i = index[fut.key]
                if fut.status == "cancelled":
                    continue
                if fut.status == "error":
                    failed[i] = fut.exception()
                    client.cancel([f for j, f in enumerate(futures)
                                   if j > min(failed) and not f.done()])
                    continue
                result, msum, tables = fut.result()
                fut.release()  # the worker may drop the tables now
                on_point(result, msum, tables)
                finished += 1
                if progress is not None:
                    progress(label, finished, n, "points")
        finally:
            client.cancel(futures)  # a remote cluster would otherwise run them on
        if failed:
            raise failed[min(failed)]

