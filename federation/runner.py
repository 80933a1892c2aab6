"""Experiment runner: resolved point -> network, routing tables, traffic -> engine -> results.

The runner owns everything that is the same for every engine: building the network, checking
the routing's VC needs, generating traffic with the run's seeded generator, and reducing raw
per-packet arrays to the summary of :class:`~federation.models.results.PointSummary`.
Randomness comes from one ``numpy.random.Generator`` seeded by the experiment's ``seed`` and
split per purpose, so the same experiment and seed give byte-identical results.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import federation
from federation.components import Messages, WorkloadContext
from federation.engine.native import (
    LinkFigures,
    NativeRun,
    Packets,
    RawResult,
    check_vcs,
    packetize,
)
from federation.errors import ConfigError, located
from federation.loader import LoadedExperiment, ResolvedPoint
from federation.models.machine import (
    DEFAULT_BANDWIDTH,
    DEFAULT_BUFFER,
    DEFAULT_LATENCY,
    Machine,
)
from federation.models.results import (
    LatencyStats,
    LinkUse,
    MachineSummary,
    Performance,
    PointResult,
    PointSummary,
    RunResult,
)
from federation.network import Network
from federation.units import PS_PER_S, seconds_to_ps


@dataclass
class PreparedPoint:
    point: ResolvedPoint
    network: Network
    job: NativeRun
    window: tuple[int, int]  # measurement window [start, end) in ps
    messages: Messages


def resolve_links(machine: Machine, topology: Any, network: Network,
                  source: str) -> dict[str, LinkFigures]:
    """Per link class: machine file value, else the topology's default, else the global one."""
    out = {}
    for cls in network.link_classes:
        user = machine.links.get(cls)
        tdef = topology.link_defaults.get(cls)

        def pick(attr: str, default: float, _u: Any = user, _t: Any = tdef) -> float:
            v = getattr(_u, attr) if _u is not None else None
            if v is None and _t is not None:
                v = getattr(_t, attr)
            return float(default if v is None else v)

        fig = LinkFigures(
            bandwidth=pick("bandwidth", DEFAULT_BANDWIDTH),
            latency=pick("latency", DEFAULT_LATENCY),
            buffer=pick("buffer", DEFAULT_BUFFER),
        )
        if fig.buffer < machine.packet_size:
            raise ConfigError(
                f"buffer of link class {cls!r} ({fig.buffer:g} B) is smaller than packet_size "
                f"({machine.packet_size:g} B)", source=source, path=f"links.{cls}.buffer")
        out[cls] = fig
    for name in machine.links:
        if name not in network.link_classes:
            raise ConfigError(
                f"the network has no link class {name!r} (it has: "
                f"{', '.join(network.link_classes)})", source=source, path=f"links.{name}")
    return out


def build_network(point: ResolvedPoint) -> Network:
    net = point.machine.topology.build()
    net.validate()
    return net


def prepare(point: ResolvedPoint) -> PreparedPoint:
    """Build everything an engine needs for one point."""
    try:
        return _prepare(point)
    except ConfigError as exc:
        raise located(exc, point.source) from None


def _prepare(point: ResolvedPoint) -> PreparedPoint:
    exp = point.experiment
    machine = point.machine.machine
    net = build_network(point)
    links = resolve_links(machine, point.machine.topology, net, point.machine.source)
    nic_bw = float(machine.nic.bandwidth or links["terminal"].bandwidth)
    tables = point.routing.tables(net, point.machine.topology, machine)
    check_vcs(tables, machine.router.vcs, point.routing.name)

    seeds = np.random.SeedSequence(exp.seed)
    rng_traffic, rng_route = (np.random.default_rng(s) for s in seeds.spawn(2))
    warm = seconds_to_ps(exp.stop.warmup)
    if exp.stop.measure is not None:
        horizon = warm + seconds_to_ps(exp.stop.measure)
        msgs = point.workload.generate(_ctx(point, net, horizon, nic_bw, rng_traffic))
        window = (warm, horizon)
    else:
        msgs, window = _generate_n_messages(point, net, nic_bw, warm, exp.stop.messages or 0,
                                            rng_traffic)
    ptime, psrc, pdst, psize, pmsg = packetize(
        msgs.time_ps, msgs.src, msgs.dst, msgs.size, int(machine.packet_size))
    src_r = net.node_router[psrc]
    dst_r = net.node_router[pdst]
    via = point.routing.intermediates(tables, src_r, dst_r, rng_route)
    packets = Packets(ptime, psrc, pdst, psize, pmsg, via)
    job = NativeRun(net, links, nic_bw, machine.router.delay, machine.router.vcs, tables, packets)
    return PreparedPoint(point, net, job, window, msgs)


def _ctx(point: ResolvedPoint, net: Network, horizon: int, nic_bw: float,
         rng: np.random.Generator) -> WorkloadContext:
    return WorkloadContext(net, point.machine.machine, point.experiment, horizon, nic_bw, rng)


def _generate_n_messages(point: ResolvedPoint, net: Network, nic_bw: float, warm: int, n: int,
                         rng: np.random.Generator) -> tuple[Messages, tuple[int, int]]:
    """Generate until ``n`` messages exist after the warm-up; the window closes at the n-th."""
    load = point.workload.offered_load() or 0.5
    size = float(point.machine.machine.packet_size)
    per_node_rate = load * nic_bw / size  # messages per second per node (estimate)
    span = seconds_to_ps(1.5 * n / max(per_node_rate * net.n_nodes, 1e-30)) + 1
    state = rng.bit_generator.state
    while True:
        rng.bit_generator.state = state
        msgs = point.workload.generate(_ctx(point, net, warm + span, nic_bw, rng))
        after = np.nonzero(msgs.time_ps >= warm)[0]
        if after.size >= n:
            cut = after[n - 1]
            end = int(msgs.time_ps[cut]) + 1
            keep = np.arange(msgs.count) <= cut
            m = Messages(msgs.time_ps[keep], msgs.src[keep], msgs.dst[keep], msgs.size[keep])
            return m, (warm, end)
        span *= 2
        if span > 10**18:
            raise ConfigError(f"the workload cannot produce {n} messages", path="stop.messages")


def summarize(prep: PreparedPoint, raw: RawResult) -> tuple[PointSummary, dict[str, np.ndarray],
                                                            dict[str, np.ndarray]]:
    """Reduce raw arrays to the summary plus the per-packet and per-port tables."""
    job = prep.job
    net = prep.network
    pk = job.packets
    pt = net.ports
    w0, w1 = prep.window
    span_s = (w1 - w0) / PS_PER_S
    capacity = span_s * job.nic_bandwidth * net.n_nodes  # bytes the NICs could inject
    measured = (pk.time_ps >= w0) & (pk.time_ps < w1)
    delivered_in = (raw.pkt_deliver >= w0) & (raw.pkt_deliver < w1)
    lat = (raw.pkt_deliver - pk.time_ps) / 1e3
    netlat = (raw.pkt_deliver - raw.pkt_inject) / 1e3

    def stats(x: np.ndarray) -> LatencyStats:
        if x.size == 0:
            return LatencyStats(mean=None, p50=None, p99=None, max=None)
        return LatencyStats(mean=float(x.mean()), p50=float(np.percentile(x, 50)),
                            p99=float(np.percentile(x, 99)), max=float(x.max()))

    msg_done = message_done(prep, raw)
    msg_measured = (prep.messages.time_ps >= w0) & (prep.messages.time_ps < w1)
    mct = (msg_done - prep.messages.time_ps)[msg_measured] / 1e3

    end = max(raw.end_ps, 1)
    util = raw.port_busy / end
    order = np.lexsort((np.arange(util.size), -util))[:5]
    busiest = []
    for p in order.tolist():
        if raw.port_bytes[p] == 0:
            continue
        peer = int(pt.port_peer[p])
        pr = int(pt.port_router[peer])
        busiest.append(LinkUse(
            router=int(pt.port_router[p]) if pt.port_router[p] >= 0 else None,
            port=p,
            link_class=net.link_classes[int(pt.port_class[p])],
            peer=f"router {pr}" if pr >= 0 else f"node {int(pt.port_node[peer])}",
            utilization=float(util[p]),
            bytes=int(raw.port_bytes[p]),
        ))
    summary = PointSummary(
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
    )
    packets = {
        "packet": np.arange(pk.count, dtype=np.int64),
        "message": pk.msg.astype(np.int64),
        "src": pk.src.astype(np.int32),
        "dst": pk.dst.astype(np.int32),
        "size": pk.size.astype(np.int64),
        "created_ps": pk.time_ps.astype(np.int64),
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
        "bytes": raw.port_bytes,
        "packets": raw.port_pkts,
        "busy_ps": raw.port_busy,
        "utilization": util,
        "stall_ps": raw.port_stall,
        "peak_input_occupancy_bytes": raw.port_peak,
    }
    return summary, packets, ports


def message_done(prep: PreparedPoint, raw: RawResult) -> np.ndarray:
    """Per message, the delivery time of its last packet (-1 if one is undelivered)."""
    done = np.full(prep.messages.count, -1, dtype=np.int64)
    np.maximum.at(done, prep.job.packets.msg, raw.pkt_deliver)
    return done


def message_table(prep: PreparedPoint, raw: RawResult) -> dict[str, np.ndarray]:
    """Per-message completion: the last packet's delivery minus the message's creation."""
    m = prep.messages
    done = message_done(prep, raw)
    w0, w1 = prep.window
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


def write_table(table: dict[str, np.ndarray], path: Path, fmt: str, extra: dict[str, Any]) -> Path:
    import pyarrow as pa

    cols = {k: pa.array(v) for k, v in table.items()}
    for k, v in extra.items():
        n = len(next(iter(table.values())))
        cols[k] = pa.array([v] * n)
    t = pa.table(cols)
    if fmt == "csv":
        import pyarrow.csv as pcsv

        out = path.with_suffix(".csv")
        pcsv.write_csv(t, out)
    else:
        import pyarrow.parquet as pq

        out = path.with_suffix(".parquet")
        pq.write_table(t, out)
    return out


def run_experiment(loaded: LoadedExperiment, out_dir: str | Path | None = None,
                   progress: Callable[[str, int, int], None] | None = None) -> RunResult:
    """Run every point of ``loaded``; write results into ``out_dir`` when given.

    Files are written to a temporary folder first and moved into place at the end, so a run
    that fails leaves nothing half-written.
    """
    points: list[PointResult] = []
    msum: MachineSummary | None = None
    tables: list[tuple[str, dict[str, np.ndarray], dict[str, Any]]] = []
    for i, point in enumerate(loaded.points):
        prep = prepare(point)
        if msum is None:
            msum = machine_summary(point, prep.network)
        label = ", ".join(f"{k}={v}" for k, v in point.sweep.items()) or "run"

        def cb(done: int, total: int, _label: str = label) -> None:
            if progress is not None:
                progress(_label, done, total)

        raw = point.engine.run(prep.job, progress=cb)
        summary, packets, ports = summarize(prep, raw)
        exp = point.experiment
        files = {}
        extra = {"point": i}
        if exp.outputs.packets:
            files["packets"] = f"packets-{i}"
            tables.append((f"packets-{i}", packets, extra))
        if exp.outputs.ports:
            files["ports"] = f"ports-{i}"
            tables.append((f"ports-{i}", ports, extra))
        if exp.outputs.messages:
            files["messages"] = f"messages-{i}"
            tables.append((f"messages-{i}", message_table(prep, raw), extra))
        points.append(PointResult(
            sweep=point.sweep, seed=exp.seed, engine=point.engine.name,
            routing=point.routing.name,
            workload=exp.workload.model_dump(mode="json"),
            summary=summary, files=files, performance=_performance(raw),
        ))
    assert msum is not None
    result = RunResult(
        federation_version=federation.__version__,
        experiment=loaded.experiment.name,
        source=loaded.source,
        machine=msum,
        points=points,
    )
    if out_dir is not None:
        result = _write(result, Path(out_dir), tables, loaded.experiment.outputs.format)
    return result


def _write(result: RunResult, out: Path, tables: list[tuple[str, dict[str, np.ndarray],
           dict[str, Any]]], fmt: str) -> RunResult:
    import shutil
    import tempfile

    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".federation-", dir=out.parent))
    try:
        names = {}
        for name, table, extra in tables:
            names[name] = write_table(table, tmp / name, fmt, extra).name
        pts = []
        for p in result.points:
            pts.append(p.model_copy(update={"files": {k: names[v] for k, v in p.files.items()}}))
        result = result.model_copy(update={"points": pts})
        (tmp / "results.json").write_text(
            json.dumps(result.model_dump(mode="json"), indent=2, sort_keys=True) + "\n")
        perf = [p.performance.model_dump(mode="json") if p.performance else None
                for p in result.points]
        (tmp / "performance.json").write_text(json.dumps(perf, indent=2) + "\n")
        out.mkdir(parents=True, exist_ok=True)
        for f in tmp.iterdir():
            shutil.move(str(f), out / f.name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return result
