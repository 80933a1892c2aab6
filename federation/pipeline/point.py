"""The driver of one point: its stages chained, each taking the previous stage's value.

``preflight`` (every point, before any runs) -> ``build`` -> ``traffic`` -> the engine ->
``summary``; the tables are written by the caller (:func:`write_point_tables`), the results
document by :mod:`.run`.  Stages never import each other: this module is the only place that
knows their order, so one point's path through the code is the body of :func:`compute_point`.

:class:`BuildCache` keeps what a sweep reuses: the last machine built (a sweep over loads builds
its machine once) and the rank programs the preflight built and checked
(:class:`~federation.pipeline.rank_programs.ProgramCache`).

May import: every stage (:mod:`.load`, :mod:`.preflight`, :mod:`.build`, :mod:`.traffic`,
:mod:`.summary`), :mod:`.points`, :mod:`.bounds` and the layers below the pipeline.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

import numpy as np

from federation import interrupts
from federation._version import __version__
from federation.engine.native import RawResult
from federation.errors import ConfigError, FederationError, located
from federation.network import Network
from federation.network.deadlock import DeadlockProof
from federation.pipeline.bounds import default_max_memory, with_rings
from federation.pipeline.build import (
    build,
    build_key,
    build_network,
    prove_deadlock_free,
    resolve_links,
)
from federation.pipeline.jobs import order_ranks, place_jobs
from federation.pipeline.points import (
    Built,
    LoadedExperiment,
    Placed,
    PreparedPoint,
    ResolvedPoint,
    in_point,
    machine_prefix,
    point_jobs,
    point_label,
)
from federation.pipeline.preflight import check_point, machine_estimate
from federation.pipeline.rank_programs import ProgramCache, program_key
from federation.pipeline.rings import smallest_packet
from federation.pipeline.summary import link_series_table, message_table, nic_table, summarize
from federation.pipeline.traffic import check_given_traffic, prepare_traffic
from federation.plugin.components import Engine
from federation.plugin.registry import active_plugins, plugins_in_use
from federation.programs.model import RankPrograms
from federation.results.model import (
    ComponentOrigin,
    MachineSummary,
    Performance,
    PointResult,
    PointSummary,
)
from federation.results.outputs import OutputDir, write_table

__all__ = ["BuildCache", "Built", "Interrupted", "PreparedPoint", "Progress", "Tables",
           "build", "build_network", "compute_point", "message_table", "preflight", "prepare",
           "resolve_links", "run_point", "summarize", "write_point_tables"]


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
    if point.experiment.jobs is None:
        exp["workload"] = _component(point.workload)
        exp["background"] = (_component(point.background) if point.background is not None
                             else None)
        exp.pop("jobs", None)
        if not exp.get("slowdown"):
            exp.pop("slowdown", None)
    else:
        exp.pop("workload", None)
        exp.pop("background", None)
        for doc, job in zip(exp["jobs"], point_jobs(point), strict=True):
            doc["workload"] = _component(job.workload)
            doc["placement"] = _component(job.placement)
    exp["engine"] = _component(point.engine)
    return exp


def workload_document(point: ResolvedPoint) -> dict[str, Any]:
    """The point's ``workload`` as results name it: the file's, or its jobs' (name, kind and
    parameters of each)."""
    exp = point.experiment
    if exp.jobs is None:
        return exp.workload.model_dump(mode="json")
    return {"jobs": [{"name": j.name, **j.workload.model_dump(mode="json")}
                     for j in exp.jobs]}


def _component(c: Any) -> dict[str, Any]:
    return {"kind": c.name, **c.params.model_dump(mode="json")}


def component_origins(point: ResolvedPoint) -> dict[str, ComponentOrigin]:
    """Plugin and version behind each component of ``point``: the machine's topology, QoS
    policy and arbiter, the routing and its controller (when given), the engine,
    ``workload`` (and ``background``) of the one-job form, or ``jobs.NAME.workload`` and
    ``jobs.NAME.placement`` of each job of ``jobs:`` (such a point has no workload of its
    own: ``point.workload``, its first job's, is no slot of the file)."""

    plugins = active_plugins()
    own = f"hpc-federation {__version__}"
    out = {}
    slots: list[tuple[str, Any, Any]] = [
        ("topology", plugins.topologies, point.machine.topology),
        ("qos", plugins.qos, point.machine.qos),
        ("arbiter", plugins.arbiters, point.machine.arbiter),
        ("routing", plugins.routings, point.routing)]
    if point.controller is not None:
        slots.append(("controller", plugins.controllers, point.controller))
    if point.experiment.jobs is None:
        slots.append(("workload", plugins.workloads, point.workload))
        if point.background is not None:
            slots.append(("background", plugins.workloads, point.background))
    slots.append(("engine", plugins.engines, point.engine))
    for slot, registry, comp in slots:
        reg = registry.items.get(comp.name)
        plugin = reg.plugin if reg is not None else "unregistered"
        info = plugins.info.get(plugin)
        source = info.source if info is not None else "unknown"
        out[slot] = ComponentOrigin(name=comp.name, plugin=plugin,
                                    source=own if source == "builtin" else source,
                                    program=comp.program() if slot == "engine" else None)
    if point.experiment.jobs is not None:
        for job in point_jobs(point):
            for what, registry, comp in (("workload", plugins.workloads, job.workload),
                                         ("placement", plugins.placements, job.placement)):
                reg = registry.items.get(comp.name)
                plugin = reg.plugin if reg is not None else "unregistered"
                info = plugins.info.get(plugin)
                source = info.source if info is not None else "unknown"
                out[f"jobs.{job.name}.{what}"] = ComponentOrigin(
                    name=comp.name, plugin=plugin,
                    source=own if source == "builtin" else source)
    return out


def compute_point(index: int, point: ResolvedPoint, cache: BuildCache,
                  progress: Progress | None = None,
                  origins: dict[str, ComponentOrigin] | None = None,
                  folder: Path | None = None,
                  ) -> tuple[PointResult, MachineSummary, dict[str, Tables]]:
    """One point through every stage; returns its result (no tables written yet), the
    machine summary and the tables the experiment asks for, by name.

    Split from writing so that a distributed sweep can run this on a worker and write the
    tables on the client (:mod:`federation.pipeline.distributed`).  ``origins`` lets the
    caller give the component origins it resolved itself (they depend on the process's
    plugin manager).  ``folder``: where an engine that runs points its own way
    (:meth:`~federation.plugin.components.Engine.run_point`, SST) keeps its files.
    """
    if type(point.engine).run_point is not Engine.run_point:
        own = engine_point(index, point, cache, folder, origins)
        if own is not None:
            return own
    prep = prepare(point, cache)                             # preflight, build, traffic
    label = point_label(point)

    def cb(done: int, total: int) -> None:
        if progress is not None:
            progress(label, done, total)

    try:
        raw = point.engine.run(prep.job, progress=cb)        # the engine
    except ConfigError as exc:  # a check while it runs (a streamed batch's): names its file
        at = f" (sweep point {index}: {label})" if point.sweep else ""
        raise ConfigError(exc.message + at, source=exc.source or point.source,
                          path=exc.path) from None
    except FederationError as exc:  # deadlock, clock range: say which file and point
        where = f"{point.source}" + (f" (sweep point {index}: {label})" if point.sweep else "")
        raise type(exc)(f"{where}: {exc}") from None
    summary, packets, ports = summarize(prep, raw)           # summary and tables
    if exp_slowdown(point):
        summary = with_slowdown(summary, prep, cache, index, label, progress)
    exp = point.experiment
    tables: dict[str, Tables] = {}
    if exp.outputs.packets:
        tables["packets"] = packets
    if exp.outputs.ports:
        tables["ports"] = ports
    if exp.outputs.nics and raw.nic_ctr is not None:
        tables["nics"] = nic_table(prep, raw)
    if exp.outputs.messages:  # written last, as before the nics table existed
        tables["messages"] = message_table(prep, raw)
    if exp.outputs.link_series is not None:
        tables["link_series"] = link_series_table(prep, raw)
    result = PointResult(
        index=index, sweep=point.sweep, seed=exp.seed, engine=point.engine.name,
        routing=point.routing.name, routing_description=prep.built.tables.description,
        workload=workload_document(point),
        resolved=resolved_document(point, prep.built),
        components=origins if origins is not None else component_origins(point),
        summary=summary, files={}, performance=_performance(raw),
    )
    return result, machine_summary(point, prep.network), tables


def engine_point(index: int, point: ResolvedPoint, cache: BuildCache, folder: Path | None,
                 origins: dict[str, ComponentOrigin] | None,
                 ) -> tuple[PointResult, MachineSummary, dict[str, Tables]] | None:
    """A point its engine runs its own way (:meth:`Engine.run_point`), on the jobs placed and
    ordered as for any engine; ``None`` when the engine declines."""
    try:
        check_point(point)
        built = cache.get(point)
        placed = place_jobs(point, built)
        placed = cache.ordered(point, built, placed)
        ran = point.engine.run_point(index, point, built, placed, folder)
    except ConfigError as exc:
        raise located(exc, point.source) from None
    if ran is None:
        return None
    exp = point.experiment
    result = PointResult(
        index=index, sweep=point.sweep, seed=exp.seed, engine=point.engine.name,
        routing=point.routing.name, routing_description=ran.routing_description,
        workload=workload_document(point), resolved=resolved_document(point, built),
        components=origins if origins is not None else component_origins(point),
        summary=ran.summary, files=dict(ran.files),
        performance=Performance(wall_seconds=ran.wall_seconds, events_per_second=0.0,
                                packet_hops_per_second=0.0))
    return result, machine_summary(point, built.network), dict(ran.tables)


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
    return result.model_copy(update={"files": {**result.files, **files}})


def run_point(index: int, point: ResolvedPoint, cache: BuildCache, writer: OutputDir | None,
              progress: Progress | None = None) -> tuple[PointResult, MachineSummary]:
    """Prepare, simulate and summarise one point; its tables are written at once."""
    result, msum, tables = compute_point(index, point, cache, progress,
                                         folder=writer.tmp if writer is not None else None)
    if writer is not None:
        result = write_point_tables(writer.tmp, writer.fmt, result, tables)
    return result, msum


class BuildCache:
    """What a sweep's points reuse: the last :class:`Built` (a sweep over loads builds its
    machine once) with its deadlock proof, and the rank programs the preflight built
    (:class:`~federation.pipeline.rank_programs.ProgramCache`).  ``deadlock_check`` false
    (``--no-deadlock-check``) builds without the proof; :attr:`proofs` keeps each distinct
    build's proof for ``federation validate`` to show."""

    def __init__(self, max_memory: int, deadlock_check: bool = True) -> None:
        self.max_memory = max_memory
        self.deadlock_check = deadlock_check
        self._last: Built | None = None
        self._smallest = 0  #: the smallest packet (B) the last build's rings were counted for
        self.programs = ProgramCache(max_memory)
        self.proofs: dict[str, tuple[str, DeadlockProof]] = {}
        self._orders: dict[str, Placed] = {}

    def ordered(self, point: ResolvedPoint, built: Built, placed: Placed,
                programs: dict[int, RankPrograms] | None = None) -> Placed:
        """``placed`` with the two-opt jobs' rank orders (the *jobs* stage's second step),
        searched once per placement and programs (the preflight's search is the run's)."""
        if not any(pj.job.order.order == "two_opt" for pj in placed.jobs):
            return placed
        key = json.dumps([build_key(point), point.experiment.seed,
                          [(pj.job.index, pj.nodes.tolist(),
                            pj.job.order.model_dump(mode="json")) for pj in placed.jobs],
                          [program_key(point, pj.job, pj.nodes) for pj in placed.jobs
                           if pj.job.closed_loop]], default=str)
        got = self._orders.get(key)
        if got is None:
            if programs is None:
                programs = self.programs.peek(point, built, placed)
            got = order_ranks(point, built, placed, programs)
            self._orders = {key: got}  # the last one: a sweep's points share it
        return got

    def get(self, point: ResolvedPoint) -> Built:
        """``point``'s built machine: the last one when the machine and routing are the same,
        else the preflight's memory estimate then the build stage.  Its estimate's QoS rings
        are the point's (:func:`~federation.pipeline.rings.smallest_packet`): a point whose
        workloads make smaller packets than those of the point it was built for gets its
        rings counted, and refused, on the same build."""
        key = build_key(point)
        smallest = smallest_packet(point)
        if self._last is None or self._last.key != key:
            self._last = None  # free the previous machine before building the next
            estimate = machine_estimate(point, self.max_memory)
            self._last = build(point, self.max_memory, estimate, self.deadlock_check)
            self._smallest = smallest.bytes
        elif self.deadlock_check and self._last.deadlock is None:
            self._last = prove_deadlock_free(point, self._last)
        if self._last.deadlock is not None:
            self.proofs.setdefault(key, (point.routing.name, self._last.deadlock))
        if smallest.bytes == self._smallest:
            return self._last
        memory = with_rings(self._last.memory, self._last.network, point.machine,
                            self.max_memory, machine_prefix(point), smallest)
        return dataclasses.replace(self._last, memory=memory)


P = ParamSpec("P")
R = TypeVar("R")


def with_loaded_plugins(fn: Callable[Concatenate[LoadedExperiment, P], R]
                        ) -> Callable[Concatenate[LoadedExperiment, P], R]:
    """``fn(loaded, ...)`` run with the plugin manager ``loaded`` was loaded with as
    :func:`~federation.plugin.registry.active_plugins` (the preflight and the run)."""

    @functools.wraps(fn)
    def run(loaded: LoadedExperiment, *args: P.args, **kwargs: P.kwargs) -> R:
        with plugins_in_use(loaded.plugins):
            return fn(loaded, *args, **kwargs)

    return run


@with_loaded_plugins
def preflight(loaded: LoadedExperiment, max_memory: int,
              deadlock_check: bool = True) -> BuildCache:
    """Every check of every point before any point runs (what ``federation validate`` does):
    the preflight stage's, the build stage's on the built machine (the deadlock proof unless
    ``deadlock_check`` is false), the engine's own
    (:meth:`federation.plugin.components.Engine.check`: what an external engine cannot
    represent), a closed-loop point's rank programs, built and checked against its
    machine, the clock and ``max_memory`` (with the QoS rings their packets need; kept for
    the run), and the open-loop traffic as the run will refuse it
    (:func:`~federation.pipeline.traffic.check_given_traffic`): a measurement window no job
    creates a message in, or a ``stop.messages`` more than the messages after the warm-up,
    judged on the times the file gives (``Workload.message_times``) and on a streamed
    (``synthetic``) job's messages drawn from the point's seed as the run draws them
    (:func:`~federation.pipeline.messages.window_draw`, the run's own check); and packets
    that do not fit ``max_memory`` where their count is known before the run (a streamed
    job's expected count, a file's listed messages)."""
    cache = BuildCache(max_memory, deadlock_check)
    for i, point in enumerate(loaded.points):
        try:
            check_point(point)
            built = cache.get(point)
            placed = place_jobs(point, built)
            check_open_jobs(point, built, placed)
            point.engine.check(point, built)  # what it cannot run at all comes first
            check_given_traffic(point, built, placed, max_memory)
            cache.programs.check(point, built, placed)
            cache.ordered(point, built, placed)
        except FederationError as exc:
            raise point_error(exc, point, i, loaded) from None
    return cache


def point_error(exc: FederationError, point: ResolvedPoint, i: int,
                loaded: LoadedExperiment) -> FederationError:
    """:func:`~federation.pipeline.points.in_point` (the sweep point, the sweep entry), and
    which ``--set`` gave the value, as the loader's own refusals say (before stop 48 a check
    after loading named the file alone, where the user finds no such value)."""
    from federation.pipeline.overrides import blame

    out = in_point(exc, point, i, len(loaded.points))
    if not isinstance(out, ConfigError) or not loaded.overrides:
        return out
    if isinstance(exc, ConfigError):  # a --set under a swept field gave the value itself
        here = in_point(exc, point, i, len(loaded.points), swept=False)
        given = blame(here, loaded.overrides, loaded.source, loaded.doc)
        if given is not here:
            return given
    return blame(out, loaded.overrides, loaded.source, loaded.doc)


def prepare(point: ResolvedPoint, cache: BuildCache | None = None,
            max_memory: int | None = None) -> PreparedPoint:
    """``point`` through the preflight, build and traffic stages: what its engine runs."""
    limit = max_memory or (cache.max_memory if cache else default_max_memory())
    try:
        check_point(point)
        cache = cache or BuildCache(limit)
        built = cache.get(point)
        placed = place_jobs(point, built)                   # jobs: placements
        programs = cache.programs.jobs(point, built, placed)
        placed = cache.ordered(point, built, placed, programs)  # jobs: two-opt orders
        return prepare_traffic(point, built, limit, programs, placed)
    except ConfigError as exc:
        raise located(exc, point.source) from None


def check_open_jobs(point: ResolvedPoint, built: Built, placed: Placed) -> None:
    """Every open-loop job's workload's own checks on its nodes (a pattern that needs a
    power of two or a grid the job does not have), before any point runs: over the horizon
    the run generates its messages whole over (a workload's limit on what it holds whole),
    or 1 ps when it streams them (:func:`~federation.pipeline.messages.whole_horizon`)."""
    import numpy as np

    from federation.pipeline.messages import whole_horizon, workload_context
    from federation.pipeline.points import in_job

    for pj in placed.jobs:
        job = pj.job
        if job.closed_loop:
            continue
        nodes = None if pj.whole else pj.nodes
        m = int(pj.nodes.shape[0])
        try:
            horizon = whole_horizon(point, built, job, m) or 1
            ctx = workload_context(point, built.network, horizon, built.nic_bandwidth,
                                   np.random.default_rng(0), job, nodes)
            job.workload.check(ctx)
        except ConfigError as exc:
            raise in_job(exc, point, job, m) from None


def exp_slowdown(point: ResolvedPoint) -> bool:
    return bool(point.experiment.slowdown)


def with_slowdown(summary: PointSummary, prep: PreparedPoint, cache: BuildCache, index: int,
                  label: str, progress: Progress | None) -> PointSummary:
    """``summary`` with each closed-loop job's completion alone: the job by itself on the
    same nodes, in the same rank order, with the same seed (so its own draws are the same),
    and its slowdown, completion with the others over alone."""
    point = prep.point
    assert prep.placed is not None and summary.jobs is not None
    jobs = list(summary.jobs)
    for k, pj in enumerate(prep.placed.jobs):
        job = pj.job
        if not job.closed_loop:
            continue
        alone = dataclasses.replace(point, jobs=(job,), workload=job.workload, background=None)
        assert prep.job_programs is not None
        programs = {job.index: prep.job_programs[job.index]}
        run = prepare_traffic(alone, prep.built, cache.max_memory, programs, Placed((pj,)))

        def cb(done: int, total: int, name: str = job.name) -> None:
            if progress is not None:
                progress(f"{label}, {name} alone", done, total)

        raw = point.engine.run(run.job, progress=cb)
        finish = raw.programs.rank_finish[:programs[job.index].n_ranks]
        alone_ns = (float(finish.max()) - job.start_ps) / 1e3 if finish.size else 0.0
        together = jobs[k].completion_ns
        ratio = together / alone_ns if together is not None and alone_ns > 0 else None
        jobs[k] = jobs[k].model_copy(update={"completion_alone_ns": alone_ns,
                                             "slowdown": ratio})
    return summary.model_copy(update={"jobs": jobs})
