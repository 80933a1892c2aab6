"""Sweep points as Dask tasks: ``federation run --workers N`` and ``--scheduler ADDRESS``.

A sweep's points are independent (each has its own seeded generators, see
:func:`federation.pipeline.point.prepare`), so they can run anywhere in any order.  Rather than a
home-made process pool, they run on Dask's distributed scheduler: a :class:`LocalCluster` of
``N`` single-threaded worker processes (the engine is single-threaded compiled code, so one
thread per process uses a core each), or an existing cluster whose scheduler address is given.
Dask brings what a process pool would have to grow by hand: a dead worker's task re-run
elsewhere, cancellation, and the same code path from a laptop to a cluster.

What stays on the client, and why:

* **The checks before the run** (:func:`federation.pipeline.point.preflight`): a bad point is
refused
  before any worker starts, as in a serial run.
* **Component origins** (which plugin and version supplied each component): they come from the
  client's plugin manager, the one that resolved the points, so ``results.json`` does not
  depend on what a worker process happens to have loaded.
* **The results document**, in point order.

What depends on the cluster: **who writes the tables.**

* A local cluster's workers write their point's tables into
  :class:`~federation.results.outputs.OutputDir`'s temporary folder themselves.  Writing Parquet
  costs about as much as a mid-size simulation (5 s for a 1.4-million-packet point), and done on the
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
process keeps its own :class:`~federation.pipeline.point.BuildCache` and compiles (or loads from
numba's on-disk cache) the engine once.

The order of the points in ``results.json`` is their index, never their completion order, so
the document is byte-identical to a serial run's whatever the number of workers.  On a failure
the points after the failing one are cancelled and those before it are awaited, so the error
reported is the one a serial run would have stopped at; every point that finished is kept.

Faults of the cluster end the run the same way (:class:`ClusterError`, exit 2, the finished
points kept and the run marked incomplete): a lost scheduler, no worker for ``--worker-timeout``
seconds (:data:`WORKER_TIMEOUT_S`; a scheduler nobody started workers for waited forever
before), or a point whose workers kept dying.  The client never blocks on Dask while it waits:
it looks for finished points every :data:`POLL_S` and asks about the cluster's health while
none arrive (:class:`_Watch`), and a stop signal (:mod:`federation.interrupts`) is acted on at
once.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from federation.errors import BackendUnavailable, ConfigError, FederationError
from federation.interrupts import STOP_SIGNALS, held
from federation.pipeline.point import (
    BuildCache,
    Progress,
    Tables,
    component_origins,
    compute_point,
    preflight,
    write_point_tables,
)
from federation.pipeline.points import LoadedExperiment, ResolvedPoint
from federation.results.model import ComponentOrigin, MachineSummary, PointResult
from federation.results.spool import Held, Table

if TYPE_CHECKING:
    from distributed import Client

#: how long to wait for an existing scheduler to answer before giving up
CONNECT_TIMEOUT_S = 20

#: how long a sweep waits while the cluster has no worker (none joined yet, or every one left)
#: before it stops, keeping the finished points (``--worker-timeout``)
WORKER_TIMEOUT_S = 60.0

#: how often the client looks for finished points (seconds): a point is taken in at most this
#: long after it finished, and a stop signal is acted on as quickly
POLL_S = 0.01

#: how often, while no point arrives, the client asks the scheduler how many workers it has
HEALTH_PERIOD_S = 1.0

OnPoint = Callable[[PointResult, MachineSummary, dict[str, Tables]], None]
TaskResult = tuple[PointResult, MachineSummary, dict[str, Tables]]


class ClusterError(FederationError):
    """The Dask cluster failed the sweep: the scheduler was lost, no worker was there for
    ``--worker-timeout`` seconds, or the workers running a point kept dying."""


def check_options(workers: int | None, scheduler: str | None,
                  worker_timeout: float | None = None) -> None:
    """Refuse ``--workers`` below 1, ``--workers`` together with ``--scheduler``, and a
    ``--worker-timeout`` that is not a positive number of seconds."""
    if worker_timeout is not None and not (0 < worker_timeout < float("inf")):
        raise ConfigError(f"must be a positive number of seconds, got {worker_timeout:g}",
                          source="--worker-timeout")
    if workers is not None and scheduler is not None:
        raise ConfigError("give either --workers N (start a local cluster) or --scheduler "
                          "ADDRESS (use an existing one), not both", source="--workers")
    if workers is not None and workers < 1:
        raise ConfigError(f"must be at least 1 (1 runs the points one after the other in this "
                          f"process), got {workers}", source="--workers")


def preflight_shared(loaded: LoadedExperiment, limit: int, workers: int | None,
                     scheduler: str | None, deadlock_check: bool = True) -> BuildCache:
    """:func:`~federation.pipeline.point.preflight` with each point's share of ``limit``.

    A local cluster of N workers holds N points in memory at once on this machine, so each
    point gets 1/N of the limit; an existing cluster's workers have memory of their own."""
    share = limit // workers if scheduler is None and workers else limit
    try:
        return preflight(loaded, share, deadlock_check)
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
        # the client's preflight proved every point deadlock-free (or was told not to)
        cache = _worker_state.cache = BuildCache(max_memory, deadlock_check=False)
    try:
        result, msum, tables = compute_point(index, point, cache, None, origins,
                                             folder=out[0] if out is not None else None)
    except ConfigError as exc:
        raise _memory_note(exc, local_workers) from None
    if out is not None:
        return write_point_tables(out[0], out[1], result, tables), msum, {}
    if not return_tables:
        return result, msum, {}
    # the rows themselves, not the names of spool folders on this worker's disk
    return result, msum, {k: Held(t) if isinstance(t, Table) else t
                          for k, t in tables.items()}


def dask_setup(worker: object) -> None:
    """Dask preload hook, run in each local worker process as it starts: ignore SIGINT and
    SIGHUP, take SIGTERM.

    Ctrl-C at a terminal and a closed terminal's SIGHUP reach the whole process group, workers
    included; the client alone decides what they mean (cancel the tasks, keep the finished
    points, close the cluster), and a worker dying of one would only print a traceback of its
    own.  SIGTERM was held back while the cluster started (:func:`_stops_masked`; the mask is
    inherited): a worker must still end when someone sends it one."""
    if threading.current_thread() is threading.main_thread():
        for name in ("SIGINT", "SIGHUP"):
            if hasattr(signal, name):
                signal.signal(getattr(signal, name), signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})


@contextmanager
def dask_client(workers: int | None, scheduler: str | None) -> Iterator[Client]:
    """A client of a new local cluster (``workers`` processes, one thread each, on the loopback
    interface) or of the scheduler at ``scheduler``; closed on the way out, which ends a local
    cluster's processes.  Starting a local cluster and closing are never cut short by a stop
    signal (it is delivered after the start, and after the close, see
    :mod:`federation.interrupts`): interrupted half-way, Dask leaves workers it cannot close
    and its exit handler prints a traceback.  (Connecting to an existing scheduler is not held:
    it may take :data:`CONNECT_TIMEOUT_S`, and starts no process.)  Dask's own log lines stay
    out of the terminal: what went wrong is reported by :func:`run_points`, once."""
    try:
        from distributed import Client, LocalCluster
    except ImportError as exc:  # a dependency, but an install may have left it out
        raise BackendUnavailable(f"--workers and --scheduler need Dask's 'distributed' package "
                                 f"({exc}); pip install distributed") from None
    with ExitStack() as stack:
        stack.callback(_quiet_dask())
        if scheduler is not None:
            try:
                client = Client(scheduler, timeout=CONNECT_TIMEOUT_S)
            except (OSError, ValueError, TypeError) as exc:
                raise ConfigError(f"cannot reach the Dask scheduler at {scheduler!r}: {exc}",
                                  source="--scheduler") from None
            stack.callback(_close_client, client)
        else:
            with held(), _stops_masked():
                # memory_limit=0: the points were checked against their share of --max-memory
                # already; Dask's own per-worker limit would pause or kill a worker on another
                # rule
                cluster = stack.enter_context(LocalCluster(
                    n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                    # the scheduler's HTTP routes on any free port (the fixed default, 8787,
                    # may be taken by another cluster: a warning on stderr), no dashboard
                    dashboard_address=":0", scheduler_kwargs={"dashboard": False},
                    memory_limit=0, preload=[__name__], silence_logs=logging.CRITICAL))
                client = Client(cluster)
                stack.callback(_close_client, client)
        try:
            yield client
        finally:
            with held():
                stack.close()


def _close_client(client: Client) -> None:
    try:
        client.close()
    except Exception:  # noqa: BLE001 - a scheduler already gone; nothing left to close
        pass


class _DaskFutureNoise(logging.Filter):
    """Drops asyncio's "Future/Task exception was never retrieved" records whose exception
    passed through Dask's or Tornado's code, and keeps every other record.

    A client closed under load can leave a timed-out future of Dask's own behind; asyncio logs
    it when the future is collected, which may be after :func:`_quiet_dask` has restored the
    loggers (the event loop's thread holds it), so a refusal printed as one line gained a
    traceback of Dask's internals.  The filter stays on the ``asyncio`` logger for the rest of
    the process: it cannot hide a record of anyone else's future."""

    def filter(self, record: logging.LogRecord) -> bool:
        text = str(record.msg)
        if not (text.startswith(("Future exception was never retrieved",
                                 "Task exception was never retrieved")) and record.exc_info):
            return True
        tb = record.exc_info[2]
        while tb is not None:
            parts = Path(tb.tb_frame.f_code.co_filename).parts
            if "distributed" in parts or "tornado" in parts:
                return False
            tb = tb.tb_next
        return True


_FUTURE_NOISE = _DaskFutureNoise()


def _quiet_dask() -> Callable[[], None]:
    """Silence Dask's loggers (a lost scheduler logs a traceback per reconnection attempt;
    Dask's configuration gives some of them levels of their own, so each is set); returns the
    function that restores them.  Dask's never-retrieved futures stay silent after that
    (:class:`_DaskFutureNoise`)."""
    asyncio_logger = logging.getLogger("asyncio")
    if _FUTURE_NOISE not in asyncio_logger.filters:
        asyncio_logger.addFilter(_FUTURE_NOISE)
    names = ["distributed", "tornado", "asyncio",
             *(n for n in logging.Logger.manager.loggerDict
               if n.startswith(("distributed.", "tornado.")))]
    loggers = [logging.getLogger(n) for n in names]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.CRITICAL + 1)

    def restore() -> None:
        for lg, level in zip(loggers, levels, strict=True):
            lg.setLevel(level)
    return restore


@contextmanager
def _stops_masked() -> Iterator[None]:
    """Block the stop signals in this thread while Dask starts its threads and processes, and
    deliver a held one when they are up.

    The threads started meanwhile (Dask's event loop) inherit the mask, so a later signal is
    always delivered to the main thread, which is the one waiting (Python runs signal handlers
    there; one landing on the event loop's thread would leave the main thread blocked in Dask's
    wait).  Worker processes inherit it too: their preload hook (:func:`dask_setup`) ignores
    SIGINT and SIGHUP and takes SIGTERM again.  A worker that gets a Ctrl-C from the terminal
    before that hook runs still dies of it, printing a traceback (ignoring SIGINT here
    meanwhile, which the workers would inherit, loses the user's Ctrl-C instead)."""
    if threading.current_thread() is not threading.main_thread() \
            or not hasattr(signal, "pthread_sigmask"):
        yield
        return
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, set(STOP_SIGNALS))
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # a held signal is delivered here


class _Watch:
    """The cluster's health while the client waits for points: the scheduler's connection, and
    how long the cluster has had no worker (``timeout`` at most, else :class:`ClusterError`).

    Asked only when no point has arrived for a moment, at most once per
    :data:`HEALTH_PERIOD_S` (one small request to the scheduler)."""

    def __init__(self, client: Client, where: str, timeout: float) -> None:
        self.client = client
        self.where = where
        self.timeout = timeout
        self.next_check = 0.0
        self.idle_since: float | None = time.monotonic()  # no worker seen yet
        self.seen_worker = False

    def check(self) -> None:
        now = time.monotonic()
        if now < self.next_check:
            return
        self.next_check = now + HEALTH_PERIOD_S
        if self.client.status != "running":
            raise ClusterError(f"lost the connection to {self.where}")
        try:
            n = len(self.client.nthreads())
        except Exception:  # noqa: BLE001 - any failure to ask is a lost scheduler
            raise ClusterError(f"lost the connection to {self.where}") from None
        if n:
            self.idle_since, self.seen_worker = None, True
            return
        if self.idle_since is None:
            self.idle_since = now
        if now - self.idle_since < self.timeout:
            return
        if self.seen_worker:
            raise ClusterError(f"every worker of {self.where} left and none came back "
                               f"within {self.timeout:g} s (--worker-timeout)")
        raise ClusterError(f"no worker joined {self.where} within {self.timeout:g} s "
                           "(--worker-timeout); start workers with `dask worker ADDRESS`")


def _task_error(exc: BaseException, index: int, point: ResolvedPoint) -> BaseException:
    """A failed task's error; a worker that died under it as :class:`ClusterError`."""
    from distributed import KilledWorker

    if isinstance(exc, KilledWorker):
        from federation.pipeline.points import point_label

        where = f"{point.source}" + (f" (sweep point {index}: {point_label(point)})"
                                     if point.sweep else "")
        retries = getattr(exc, "allowed_failures", None)
        limit = f" = {retries}" if retries is not None else ""
        return ClusterError(f"{where}: the Dask workers running this point died each time it "
                            "was tried (Dask gives up after distributed.scheduler."
                            f"allowed-failures{limit} retries); a worker killed for lack of "
                            "memory is the usual cause")
    return exc


def run_points(loaded: LoadedExperiment, max_memory: int, on_point: OnPoint, *,
               workers: int | None, scheduler: str | None,
               progress: Progress | None = None, out: tuple[Path, str] | None = None,
               worker_timeout: float | None = None) -> None:
    """Run every point of ``loaded`` as a Dask task; ``on_point`` gets each finished point on
    the client, in completion order.  The workers of a local cluster write the tables into
    ``out`` (folder, format) themselves; those of an existing cluster return them, since they
    may not share this machine's filesystem.

    On a failing point: the points after it are cancelled, those before it awaited, and the
    lowest-index failure is raised (the one a serial run would report).  A lost scheduler, or
    no worker for ``worker_timeout`` seconds (:data:`WORKER_TIMEOUT_S` by default), raises
    :class:`ClusterError` once the points that finished are handed over.  On a stop signal
    every task is cancelled and the cluster closed before the ``KeyboardInterrupt`` goes on.
    """
    n = len(loaded.points)
    env = federation_env()
    with dask_client(workers, scheduler) as client:
        from distributed import as_completed

        where = (f"the local Dask cluster ({workers} workers)" if scheduler is None
                 else f"the Dask scheduler at {scheduler}")
        label = f"sweep points ({f'{workers} workers' if workers else scheduler})"
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
        lost: set[int] = set()
        cancelled: set[int] = set()  # by us, after a failing point
        watch = _Watch(client, where, worker_timeout or WORKER_TIMEOUT_S)
        finished = 0
        if progress is not None:
            progress(label, 0, n, "points")
        try:
            done = as_completed(futures, with_results=True)
            while not done.is_empty():
                batch = done.next_batch(block=False)
                if not batch:  # nothing new: is the cluster still there?
                    watch.check()
                    time.sleep(POLL_S)
                    continue
                for fut, value in batch:
                    i = index[fut.key]
                    kind, got = _outcome(value)
                    if kind in ("finished", "error"):  # a worker ran it, seen by check() or not
                        watch.seen_worker = True
                    if kind == "finished":
                        fut.release()  # the worker may drop the tables now
                        on_point(*got)
                        finished += 1
                        if progress is not None:
                            progress(label, finished, n, "points")
                    elif kind == "error":
                        failed[i] = _task_error(got, i, loaded.points[i])
                        later = [j for j, f in enumerate(futures)
                                 if j > min(failed) and not f.done()]
                        cancelled.update(later)
                        client.cancel([futures[j] for j in later])
                    elif i not in cancelled:  # cancelled, but not by us: the point is lost
                        lost.add(i)
        finally:
            if client.status == "running":  # a remote cluster would otherwise run them on
                try:
                    client.cancel(futures)
                except Exception:  # noqa: BLE001 - the scheduler went away meanwhile
                    pass
        if failed:
            raise failed[min(failed)]
        if lost:
            raise ClusterError(f"lost the connection to {where}" if client.status != "running"
                               else f"{where} cancelled {len(lost)} points")


def _outcome(value: object) -> tuple[str, Any]:
    """What a task that left :class:`distributed.as_completed` came to: ``finished`` with its
    result, ``error`` with its exception, or ``cancelled``.

    Decided by the value fetched, not the future's status: a lost scheduler cancels every
    future, finished ones included, so a point whose result is already here may read as
    cancelled (and was thrown away, before)."""
    if isinstance(value, tuple) and len(value) == 3:
        if isinstance(value[0], PointResult):
            return "finished", value
        if isinstance(value[1], BaseException):  # (type, exception, traceback)
            return "error", value[1]
    return "cancelled", None
