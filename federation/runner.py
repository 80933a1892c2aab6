"""Experiment runner: every point of an experiment through preparation, engine and summary.

The runner owns everything that is the same for every engine: the checks before the run
(:func:`federation.prepare.preflight`), preparing each point (:mod:`federation.prepare`),
reducing raw per-packet arrays to the summary of :class:`~federation.models.results.PointSummary`,
and the results document with the fully resolved experiment of every point.  Output files go
through :class:`~federation.outputs.OutputDir`: written point by point, swapped in whole, and
kept (marked incomplete) when a run stops early.  Randomness comes from one
``numpy.random.Generator`` seeded by the experiment's ``seed`` and split per purpose, so the same
experiment and seed give byte-identical results.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NoReturn, Protocol

import numpy as np

import federation
from federation.engine.native import RawResult
from federation.engine.state import Prog
from federation.errors import FederationError
from federation.loader import LoadedExperiment, ResolvedPoint
from federation.models.results import (
    ComponentOrigin,
    LatencyStats,
    LinkUse,
    MachineSummary,
    Performance,
    PointResult,
    PointSummary,
    ProgramSummary,
    RunResult,
)
from federation.network import Network
from federation.outputs import OutputDir, write_table
from federation.prepare import (
    BuildCache,
    Built,
    PreparedPoint,
    build_network,
    preflight,
    prepare,
    resolve_links,
)
from federation.units import PS_PER_S

__all__ = ["PreparedPoint", "build_network", "message_table", "prepare", "resolve_links",
           "run_experiment", "summarize", "write_table"]


class Progress(Protocol):
    """A progress callback: ``label`` advanced to ``done`` of ``total`` ``unit`` (packets of a
    point's run; ``points`` for a distributed sweep, whose packets are counted on workers)."""

    def __call__(self, label: str, done: int, total: int, unit: str = "packets") -> None: ...


Tables = dict[str, np.ndarray]


class Interrupted(FederationError):
    """Ctrl-C during a run (exit status 130, as a shell reports SIGINT)."""

    exit_code = 130


def summarize(prep: PreparedPoint, raw: RawResult) -> tuple[PointSummary, dict[str, np.ndarray],
                                                            dict[str, np.ndarray]]:
    """Reduce raw arrays to the summary plus the per-packet and per-port tables."""
    job = prep.job
    net = prep.network
    pk = job.packets
    pt = net.ports
    w0, w1 = window_of(prep, raw)
    span_s = (w1 - w0) / PS_PER_S
    capacity = span_s * job.nic_bandwidth * net.n_nodes  # bytes the NICs could inject
    # packets created in the window (a background packet still in flight when the rank
    # programs finished is not measured: its latency is unknown)
    created = raw.pkt_created if raw.pkt_created is not None else pk.time_ps
    measured = (created >= w0) & (created < w1) & (raw.pkt_deliver >= 0)
    delivered_in = (raw.pkt_deliver >= w0) & (raw.pkt_deliver < w1)
    lat = (raw.pkt_deliver - created) / 1e3
    netlat = (raw.pkt_deliver - raw.pkt_inject) / 1e3

    def stats(x: np.ndarray) -> LatencyStats:
        if x.size == 0:
            return LatencyStats(mean=None, p50=None, p99=None, max=None)
        return LatencyStats(mean=float(x.mean()), p50=float(np.percentile(x, 50)),
                            p99=float(np.percentile(x, 99)), max=float(x.max()))

    msg_done = message_done(prep, raw)
    msg_measured = ((prep.messages.time_ps >= w0) & (prep.messages.time_ps < w1)
                    & (msg_done >= 0))
    mct = (msg_done - prep.messages.time_ps)[msg_measured] / 1e3
    if raw.programs is not None and prep.job.programs is not None:
        # a program message is created when its send starts; the background's delivered
        # messages (all created in the run's window) count beside them
        pg, n = raw.programs, prep.job.programs.msg_src.shape[0]
        fin, post = pg.msg_finish[:n], pg.msg_post[:n]
        mct = np.concatenate([mct, (fin - post)[fin >= 0] / 1e3])

    # ports: over the window the engine measured (the job's), and over the whole run
    pw = raw.window_ports
    util_run = raw.port_busy / max(raw.end_ps, 1)
    util_window = pw.busy / max(raw.window[1] - raw.window[0], 1)
    order = np.lexsort((np.arange(util_window.size), -util_window))[:5]
    busiest = []
    for p in order.tolist():
        if pw.busy[p] == 0:
            continue
        peer = int(pt.port_peer[p])
        pr = int(pt.port_router[peer])
        busiest.append(LinkUse(
            router=int(pt.port_router[p]) if pt.port_router[p] >= 0 else None,
            port=p,
            link_class=net.link_classes[int(pt.port_class[p])],
            peer=f"router {pr}" if pr >= 0 else f"node {int(pt.port_node[peer])}",
            utilization_window=float(util_window[p]),
            bytes_window=int(pw.bytes[p]),
            utilization_run=float(util_run[p]),
            bytes=int(raw.port_bytes[p]),
        ))
    fields = dict(
        offered_load=float(pk.size[measured].sum() / capacity) if capacity > 0 else None,
        accepted_load=float(pk.size[delivered_in].sum() / capacity) if capacity > 0 else 0.0,
        packets_generated=pk.count,
        packets_measured=int(measured.sum()),
        packets_delivered=int((raw.pkt_deliver >= 0).sum()),
        bytes_injected=int(pk.size.sum()),
        bytes_delivered=int(pk.size[raw.pkt_deliver >= 0].sum()),
        latency_ns=stats(lat[measured]),
        network_latency_ns=stats(netlat[measured]),
        mean_hops=float(raw.pkt_hops[measured].mean()) if measured.any() else None,
        nonminimal_fraction=float(1 - raw.pkt_minimal[measured].mean()) if measured.any() else None,
        message_completion_ns_mean=float(mct.mean()) if mct.size else None,
        simulated_time_ns=raw.end_ps / 1e3,
        events=raw.events,
        packet_hops=raw.packet_hops,
        busiest_links=busiest,
        programs=program_summary(raw),
    )
    if raw.programs is not None:
        with_program_packets(fields, raw.programs.pstat, capacity)
    summary = PointSummary(**fields)
    packets = {
        "packet": np.arange(pk.count, dtype=np.int64),
        "message": pk.msg.astype(np.int64),
        "src": pk.src.astype(np.int32),
        "dst": pk.dst.astype(np.int32),
        "size": pk.size.astype(np.int64),
        "created_ps": created.astype(np.int64),
        "injected_ps": raw.pkt_inject,
        "delivered_ps": raw.pkt_deliver,
        "hops": raw.pkt_hops,
        "minimal": raw.pkt_minimal.astype(bool),
        "via_group": raw.pkt_via.astype(np.int32),
        "measured": measured,
    }
    local = np.where(pt.port_router >= 0,
                     np.arange(pt.n_ports) - pt.router_port_start[np.maximum(pt.port_router, 0)], 0)
    ports = {
        "port": np.arange(pt.n_ports, dtype=np.int64),
        "router": pt.port_router,
        "local_port": local.astype(np.int32),
        "node": pt.port_node,
        "link_class": np.array(net.link_classes, dtype=object)[pt.port_class],
        "peer_router": pt.port_router[pt.port_peer],
        "utilization_window": util_window,
        "bytes_window": pw.bytes,
        "packets_window": pw.packets,
        "busy_ps_window": pw.busy,
        "stall_ps_window": pw.stall,
        "utilization_run": util_run,
        "bytes": raw.port_bytes,
        "packets": raw.port_pkts,
        "busy_ps": raw.port_busy,
        "stall_ps": raw.port_stall,
        "peak_input_occupancy_bytes": raw.port_peak,
        **class_columns(raw),
    }
    return summary, packets, ports


def with_program_packets(fields: dict[str, Any], pstat: np.ndarray, capacity: float) -> None:
    """Add the packets of rank programs to the summary's packet figures.

    They are born and recycled inside the loop and summed as they arrive (``Prog.pstat``), so
    means, maxima and totals are exact but there is no per-packet list to take percentiles
    from: with rank programs ``p50`` and ``p99`` are null, and the packets table lists only
    open-loop (background) packets."""
    from federation.engine.programs import (
        PSTAT_BYTES,
        PSTAT_HOPS,
        PSTAT_LATENCY,
        PSTAT_MAX,
        PSTAT_NETWORK,
        PSTAT_NONMINIMAL,
        PSTAT_PACKETS,
    )

    n, nbytes = int(pstat[PSTAT_PACKETS]), int(pstat[PSTAT_BYTES])
    if n == 0:
        return
    m = fields["packets_measured"]

    def mean(old: float | None, total_ps: int) -> float:
        return ((old or 0.0) * m + total_ps / 1e3) / (m + n)

    lat, net = fields["latency_ns"], fields["network_latency_ns"]
    fields["latency_ns"] = LatencyStats(
        mean=mean(lat.mean, int(pstat[PSTAT_LATENCY])), p50=None, p99=None,
        max=max(lat.max or 0.0, int(pstat[PSTAT_MAX]) / 1e3))
    fields["network_latency_ns"] = LatencyStats(
        mean=mean(net.mean, int(pstat[PSTAT_NETWORK])), p50=None, p99=None, max=None)
    fields["mean_hops"] = ((fields["mean_hops"] or 0.0) * m + int(pstat[PSTAT_HOPS])) / (m + n)
    fields["nonminimal_fraction"] = (((fields["nonminimal_fraction"] or 0.0) * m
                                      + int(pstat[PSTAT_NONMINIMAL])) / (m + n))
    for key, add in (("packets_generated", n), ("packets_measured", n),
                     ("packets_delivered", n), ("bytes_injected", nbytes),
                     ("bytes_delivered", nbytes)):
        fields[key] += add
    if capacity > 0:
        fields["offered_load"] = (fields["offered_load"] or 0.0) + nbytes / capacity
        fields["accepted_load"] += nbytes / capacity


def window_of(prep: PreparedPoint, raw: RawResult) -> tuple[int, int]:
    """The measurement window: the point's, or the whole run for rank programs."""
    return prep.window if prep.window is not None else raw.window


def program_summary(raw: RawResult) -> ProgramSummary | None:
    """Completion and per-rank finish times of the rank programs (``None``: open loop)."""
    pg = raw.programs
    if pg is None:
        return None
    finish = pg.rank_finish[:pg.rank_left.shape[0]]
    return ProgramSummary(
        ranks=int(finish.shape[0]), operations=int(pg.n_ops),
        messages=int((pg.msg_post >= 0).sum()),
        completion_ns=float(finish.max()) / 1e3 if finish.size else 0.0,
        rank_finish_ns=[float(x) / 1e3 for x in finish.tolist()])


def class_columns(raw: RawResult) -> dict[str, np.ndarray]:
    """``bytes_class_K``: whole-run bytes per port of each traffic class, when there are
    several (a QoS policy's classes)."""
    per = raw.port_class_bytes
    if per is None or per.shape[1] < 2:
        return {}
    return {f"bytes_class_{k}": per[:, k].copy() for k in range(per.shape[1])}


def message_done(prep: PreparedPoint, raw: RawResult) -> np.ndarray:
    """Per message, the delivery time of its last packet (-1 if one is undelivered: a
    background packet still in flight when rank programs finished)."""
    done = np.full(prep.messages.count, -1, dtype=np.int64)
    msg = prep.job.packets.msg
    np.maximum.at(done, msg, raw.pkt_deliver)
    lost = raw.pkt_deliver < 0
    if lost.any():
        done[msg[lost]] = -1
    return done


def message_table(prep: PreparedPoint, raw: RawResult) -> dict[str, np.ndarray]:
    """Per-message completion: the last packet's delivery minus the message's creation.

    With rank programs: the background's messages first, then the programs' (see
    :func:`program_message_table`)."""
    m = prep.messages
    done = message_done(prep, raw)
    w0, w1 = window_of(prep, raw)
    pg = raw.programs
    if pg is not None:  # rank programs: their messages' own times
        return program_message_table(prep, raw, pg)
    return {
        "message": np.arange(m.count, dtype=np.int64),
        "src": m.src.astype(np.int32),
        "dst": m.dst.astype(np.int32),
        "size": m.size.astype(np.int64),
        "created_ps": m.time_ps.astype(np.int64),
        "completed_ps": done,
        "completion_ps": done - m.time_ps,
        "measured": (m.time_ps >= w0) & (m.time_ps < w1),
    }


def program_message_table(prep: PreparedPoint, raw: RawResult,
                          pg: Prog) -> dict[str, np.ndarray]:
    """Per message of a rank-program run: the background's first (``message`` indexes the
    packets table), then the programs' (``message`` indexes their state).  Created: the
    background message's creation or the send's start; started: its first data packet left
    the NIC; completed: its last one arrived (-1, not ``measured``: still in flight when the
    programs finished).  Background rows have rank and tag -1, no rendezvous."""
    t = prep.job.programs
    assert t is not None
    post, done = pg.msg_post, pg.msg_finish
    programs = {
        "message": np.arange(post.shape[0], dtype=np.int64),
        "background": np.zeros(post.shape[0], dtype=bool),
        "src": t.msg_src.astype(np.int32),
        "dst": t.msg_dst.astype(np.int32),
        "size": t.msg_size.astype(np.int64),
        "created_ps": post.copy(),
        "started_ps": pg.msg_start.copy(),
        "completed_ps": done.copy(),
        "completion_ps": np.where(done >= 0, done - post, -1),
        "measured": done >= 0,
        "src_rank": t.msg_src_rank.astype(np.int32),
        "dst_rank": t.msg_dst_rank.astype(np.int32),
        "tag": t.msg_tag.astype(np.int32),
        "rendezvous": t.msg_rdv.astype(bool),
    }
    m = prep.messages
    if not m.count:
        return programs
    done_bg = message_done(prep, raw)
    none = np.full(m.count, -1, dtype=np.int32)
    background = {
        "message": np.arange(m.count, dtype=np.int64),
        "background": np.ones(m.count, dtype=bool),
        "src": m.src.astype(np.int32),
        "dst": m.dst.astype(np.int32),
        "size": m.size.astype(np.int64),
        "created_ps": m.time_ps.astype(np.int64),
        "started_ps": message_started(prep, raw),
        "completed_ps": done_bg,
        "completion_ps": np.where(done_bg >= 0, done_bg - m.time_ps, -1),
        "measured": done_bg >= 0,
        "src_rank": none,
        "dst_rank": none,
        "tag": none,
        "rendezvous": np.zeros(m.count, dtype=bool),
    }
    return {k: np.concatenate([background[k], programs[k]]) for k in programs}


def message_started(prep: PreparedPoint, raw: RawResult) -> np.ndarray:
    """Per open-loop message, when its first packet left the NIC (-1: none had)."""
    first = np.full(prep.messages.count, np.iinfo(np.int64).max, dtype=np.int64)
    sent = raw.pkt_inject >= 0
    np.minimum.at(first, prep.job.packets.msg[sent], raw.pkt_inject[sent])
    return np.where(first == np.iinfo(np.int64).max, -1, first)


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
    from federation.manager import get_plugins

    plugins = get_plugins()
    own = f"hpc-federation {federation.__version__}"
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
    tables on the client (:mod:`federation.distributed`).  ``origins`` lets the caller give the
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
                   workers: int | None = None, scheduler: str | None = None) -> RunResult:
    """Run every point of ``loaded``; write results into ``out_dir`` when given.

    Every point is checked before the first one runs.  Tables are written as each point
    finishes; the folder replaces ``out_dir`` at the end.  If a point fails or the run is
    interrupted after others finished, the finished ones are kept with ``results.json`` marked
    incomplete, and the error (:class:`Interrupted` for Ctrl-C) says so.

    ``workers`` above 1 or a ``scheduler`` address run the points as Dask tasks
    (:mod:`federation.distributed`; a local cluster of at most one process per point, so one
    point is always run here); the results document is the same, byte for byte.  A local
    cluster starts its processes with multiprocessing's ``spawn``, so a script calling this
    needs the usual ``if __name__ == "__main__":`` guard.
    """
    from federation.checks import default_max_memory

    limit = max_memory or default_max_memory()
    if workers is not None or scheduler is not None:
        from federation import distributed

        distributed.check_options(workers, scheduler)
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
                                   out=(writer.tmp, writer.fmt) if writer else None)
        else:
            for i, point in enumerate(loaded.points):
                done[i] = run_point(i, point, cache, writer, progress)
    except (Exception, KeyboardInterrupt) as exc:
        _stop_early(loaded, writer, done, exc)
    points = [done[i][0] for i in sorted(done)]
    result = _result(loaded, done[0][1], points)
    if writer is not None:
        writer.finish(result, _perf(points))
    return result


def _stop_early(loaded: LoadedExperiment, writer: OutputDir | None,
                done: dict[int, tuple[PointResult, MachineSummary]],
                exc: BaseException) -> NoReturn:
    """Keep the finished points (``results.json`` marked incomplete, the others listed as
    missing) and raise the error saying so; with nothing finished, leave nothing behind."""
    if writer is not None and not done:
        writer.abort()
    if writer is None or not done:
        if isinstance(exc, KeyboardInterrupt):  # typer would exit 130 without a word
            raise Interrupted("interrupted before any point finished; nothing was "
                              "written") from None
        raise exc
    n = len(loaded.points)
    kept = sorted(done)
    points = [done[i][0] for i in kept]
    _drop_unkept(writer.tmp, points)
    why = "interrupted" if isinstance(exc, KeyboardInterrupt) else str(exc)
    missing = [i for i in range(n) if i not in done]
    partial = _result(loaded, done[kept[0]][1], points, missing=missing, error=why)
    writer.finish(partial, _perf(points))
    note = (f"{len(points)} of {n} points finished and are kept in {writer.out} "
            "(results.json marked incomplete)")
    if isinstance(exc, KeyboardInterrupt):
        raise Interrupted(f"interrupted; {note}") from None
    if isinstance(exc, FederationError):
        raise type(exc)(f"{exc}; {note}") from None
    exc.add_note(note)
    raise exc


def _drop_unkept(folder: Path, points: list[PointResult]) -> None:
    """Remove every file of ``folder`` that no kept point names: tables a worker process wrote
    for a point whose run was cancelled or interrupted (its cluster is closed by now)."""
    keep = {name for p in points for name in p.files.values()}
    for path in folder.iterdir():
        if path.name not in keep and path.is_file():
            path.unlink(missing_ok=True)


def _result(loaded: LoadedExperiment, msum: MachineSummary, points: list[PointResult],
            missing: list[int] | None = None, error: str | None = None) -> RunResult:
    return RunResult(
        federation_version=federation.__version__,
        experiment=loaded.experiment.name,
        source=str(Path(loaded.source).resolve()),
        status="incomplete" if missing else "complete",
        missing_points=missing or [],
        error=error,
        machine=msum,
        points=points,
    )


def _perf(points: list[PointResult]) -> list[dict[str, Any] | None]:
    return [p.performance.model_dump(mode="json") if p.performance else None for p in points]
