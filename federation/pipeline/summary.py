"""A point's raw engine arrays reduced to its summary and its packet, port and message tables.

Every figure is over the measurement window (for rank programs: the whole run, which ends when
the programs finish); the per-port whole-run totals are kept beside them.  Rank programs'
packets are born and recycled in the loop, so their figures come as sums (``Prog.pstat``);
their rows in the packets table come only when the run keeps it (``outputs.packets``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from federation.engine.native import RawResult
from federation.engine.packet_stats import MESSAGE_COLUMNS, Latency
from federation.engine.state import Prog
from federation.models.units import PS_PER_S
from federation.pipeline.job_figures import job_columns, job_summaries, nic_counters, owners
from federation.pipeline.points import PreparedPoint, everywhere
from federation.results.model import (
    ClassSummary,
    LatencyStats,
    LinkUse,
    PointSummary,
    ProgramSummary,
)
from federation.results.spool import Table
from federation.results.variability import variability


def summarize(prep: PreparedPoint, raw: RawResult) -> tuple[PointSummary, dict[str, np.ndarray],
                                                            dict[str, np.ndarray]]:
    """Reduce raw results to the summary plus the per-packet and per-port tables (the
    packets table is empty unless the run kept its packets: :func:`packet_table`)."""
    net = prep.network
    pt = net.ports
    st = raw.packets
    w0, w1 = window_of(prep, raw)
    span_s = (w1 - w0) / PS_PER_S
    capacity = span_s * prep.job.nic_bandwidth * net.n_nodes  # bytes the NICs could inject

    def stats(x: Latency) -> LatencyStats:
        return LatencyStats(mean=x.mean, p50=x.p50, p99=x.p99, max=x.max)

    # messages created in the window whose packets all arrived (a background packet still in
    # flight when the rank programs finished is not measured: its latency is unknown)
    mct_sum, mct_n = st.message_completion_ps / 1e3, st.messages_measured
    if raw.programs is not None and prep.job.programs is not None:
        # a program message is created when its send starts
        pg, n = raw.programs, prep.job.programs.msg_src.shape[0]
        fin, post = pg.msg_finish[:n], pg.msg_post[:n]
        mct_sum += float(((fin - post)[fin >= 0] / 1e3).sum())
        mct_n += int((fin >= 0).sum())

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
    measured = st.measured
    fields = dict(
        offered_load=float(st.offered_bytes / capacity) if capacity > 0 else None,
        accepted_load=float(st.accepted_bytes / capacity) if capacity > 0 else 0.0,
        packets_generated=st.generated,
        packets_measured=measured,
        packets_delivered=st.delivered,
        bytes_injected=st.generated_bytes,
        bytes_delivered=st.delivered_bytes,
        latency_ns=stats(st.latency),
        network_latency_ns=stats(st.network_latency),
        mean_hops=st.hops / measured if measured else None,
        nonminimal_fraction=st.nonminimal / measured if measured else None,
        message_completion_ns_mean=mct_sum / mct_n if mct_n else None,
        simulated_time_ns=raw.end_ps / 1e3,
        events=raw.events,
        packet_hops=raw.packet_hops,
        busiest_links=busiest,
        programs=program_summary(raw, prep.job.programs.msg_src.shape[0]
                                 if prep.job.programs is not None else None,
                                 start_ops(prep)),
    )
    if raw.programs is not None:
        with_program_packets(fields, raw.programs.pstat, capacity)
    fields["jobs"] = job_summaries(prep, raw)
    if raw.window_ports.nics is not None:
        fields["nics"] = nic_counters(raw.window_ports.nics)
    fields["classes"] = class_summaries(prep, raw)
    if raw.link_series is not None and raw.link_series.coarse_from_ps is not None:
        fields["link_series_coarse_from_ns"] = raw.link_series.coarse_from_ps / 1e3
    summary = PointSummary(**fields)
    packets = packet_table(prep, raw)
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
        **incoming_columns(raw, pt.port_peer),
        **class_columns(raw),
    }
    return summary, packets, ports


def incoming_columns(raw: RawResult, port_peer: np.ndarray) -> dict[str, np.ndarray]:
    """Incoming bytes per port (as Aries' tiles count incoming flits): what the far end of its
    cable sent into it, in the window (transmissions started in it) and over the run.  The
    ``stall`` columns are the output side's (a port's requests waiting for credit)."""
    return {"bytes_in_window": raw.window_ports.bytes[port_peer],
            "bytes_in": raw.port_bytes[port_peer]}


def nic_table(prep: PreparedPoint, raw: RawResult) -> dict[str, np.ndarray]:
    """Per NIC (node), Aries' four NIC counters in the measurement window (corrected at its
    edges: :func:`~federation.engine.native.nic_counters_at`) and over the whole run, with a
    ``job`` column when the experiment gives jobs (empty: the engine keeps no counters)."""
    from federation.engine.api import NC_REQ_FLITS, NC_REQ_PKTS, NC_RSP_LAT, NC_STALL

    w, run = raw.window_ports.nics, raw.nic_ctr
    if w is None or run is None:
        return {}
    net = prep.network
    out: dict[str, np.ndarray] = {"node": np.arange(net.n_nodes, dtype=np.int64),
                                  "router": net.node_router.astype(np.int64)}
    if prep.point.given_jobs:  # the node's job; "": no job's, or several jobs'
        placed = prep.placed or everywhere(prep.point, net.n_nodes)
        owner = owners(placed, net.n_nodes, list(placed.jobs))
        name_of = {pj.job.index: pj.job.name for pj in placed.jobs}
        out["job"] = np.array([name_of.get(int(o), "") for o in owner.tolist()], dtype=object)
    for name, k in (("request_packets", NC_REQ_PKTS), ("request_flits", NC_REQ_FLITS),
                    ("stall_ps", NC_STALL), ("latency_ps", NC_RSP_LAT)):
        out[f"{name}_window"] = w[:, k].copy()
    for name, k in (("request_packets", NC_REQ_PKTS), ("request_flits", NC_REQ_FLITS),
                    ("stall_ps", NC_STALL), ("latency_ps", NC_RSP_LAT)):
        out[name] = run[:, k].copy()
    return out


def packet_table(prep: PreparedPoint, raw: RawResult) -> Table | dict[str, np.ndarray]:
    """The packets table (empty unless the run kept its packets: ``outputs.packets``), with a
    ``job`` column when the experiment gives jobs; a rank-program run's is
    :func:`program_packet_table`."""
    st = raw.packets
    cols = job_columns(prep)
    if raw.programs is not None and prep.job.programs is not None:
        return program_packet_table(prep, raw, cols)
    if st.packets is None:
        return {}
    if cols is None:
        return st.packets
    by_node = cols[0]
    return st.packets.mapped(lambda c: {**c, "job": by_node[c["src"]]},
                             [*st.packets.names, "job"])


#: the columns a rank-program run's packets table shares with an open-loop run's, as they are
_SHARED = ["src", "dst", "size", "created_ps", "injected_ps", "delivered_ps", "hops", "minimal",
           "via_group", "measured", "class"]


def program_packet_table(prep: PreparedPoint, raw: RawResult,
                         cols: tuple[np.ndarray, np.ndarray] | None
                         ) -> Table | dict[str, np.ndarray]:
    """Per packet of a rank-program run, with the conventions of
    :func:`program_message_table`: the background's packets first (``background`` true,
    ``packet`` and ``message`` their open-loop numbers, ``rank`` -1), then the programs' in
    delivery order (``packet`` 0, 1, ... in that order; ``message`` indexes the programs' rows
    of the messages table; ``rank``: the rank whose NIC sent it, the message's source rank
    but for a rendezvous reply; ``control``: a rendezvous request or reply).  Every program
    packet is measured: the run's window is the whole run."""
    st = raw.packets
    if st.packets is None and st.program_packets is None:
        return {}
    t = prep.job.programs
    assert t is not None
    # the sending rank of each flow: data (3m) and request (3m + 1) from the source rank,
    # reply (3m + 2) from the destination rank
    rank_of_flow = np.stack([t.msg_src_rank, t.msg_src_rank, t.msg_dst_rank],
                            axis=1).reshape(-1).astype(np.int32)

    def rows(c: dict[str, np.ndarray], background: bool) -> dict[str, np.ndarray]:
        n = c["packet"].shape[0]
        flow = c["flow"] if not background else np.zeros(0, dtype=np.int64)
        rank = np.full(n, -1, dtype=np.int32) if background else rank_of_flow[flow]
        out = {"packet": c["packet"], "background": np.full(n, background),
               "message": c["message"], "rank": rank, **{k: c[k] for k in _SHARED},
               "control": np.zeros(n, dtype=bool) if background else flow % 3 != 0}
        if cols is not None:
            by_node, by_rank = cols
            out["job"] = (by_node[c["src"]] if background else by_rank[rank] if by_rank.size
                          else np.full(n, "", dtype=object))
        return out

    empty = {**{k: np.zeros(0, dtype=np.int64) for k in ["packet", "message", *_SHARED]},
             "src": np.zeros(0, dtype=np.int32)}
    names = list(rows(empty, True))
    parts = [tab.mapped(lambda c, bg=bg: rows(c, bg), names)
             for tab, bg in ((st.packets, True), (st.program_packets, False))
             if tab is not None]
    return Table(lambda: (c for p in parts for c in p.chunks()), names)


def with_program_packets(fields: dict[str, Any], pstat: np.ndarray, capacity: float) -> None:
    """Add the packets of rank programs to the summary's packet figures.

    They are born and recycled inside the loop and summed as they arrive (``Prog.pstat``), so
    means, maxima and totals are exact but no percentile is taken over them: with rank
    programs ``p50`` and ``p99`` are null.  The packets table has their rows when the run
    keeps it (:func:`program_packet_table`); the summary's figures come from the sums
    either way, so they do not depend on ``outputs.packets``."""
    from federation.engine.programs import (
        PSTAT_BYTES,
        PSTAT_HOPS,
        PSTAT_LATENCY,
        PSTAT_MAX,
        PSTAT_NETMAX,
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
        mean=mean(net.mean, int(pstat[PSTAT_NETWORK])), p50=None, p99=None,
        max=max(net.max or 0.0, int(pstat[PSTAT_NETMAX]) / 1e3))
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


def start_ops(prep: PreparedPoint) -> int:
    """The computes the runner put first in the ranks of jobs with a ``start`` (one per rank,
    :func:`~federation.pipeline.traffic.delayed`): not the workloads' operations."""
    layout = prep.layout
    if layout is None:
        return 0
    return sum(b - a for i, (a, b) in layout.ranks.items() if layout.delays.get(i))


def program_summary(raw: RawResult, n_messages: int | None = None,
                    added_ops: int = 0) -> ProgramSummary | None:
    """Completion and per-rank finish times of the rank programs (``None``: open loop), and the
    variability of their messages' completion times (of the first ``n_messages``: the
    state's tables may have a spare row).  ``added_ops``: operations the runner added
    (:func:`start_ops`), left out of the count as each job's figures leave them out."""
    pg = raw.programs
    if pg is None:
        return None
    finish = pg.rank_finish[:pg.rank_left.shape[0]]
    fin, post = pg.msg_finish[:n_messages], pg.msg_post[:n_messages]
    return ProgramSummary(
        ranks=int(finish.shape[0]), operations=int(pg.n_ops) - added_ops,
        messages=int((pg.msg_post >= 0).sum()),
        completion_ns=float(finish.max()) / 1e3 if finish.size else 0.0,
        rank_finish_ns=[float(x) / 1e3 for x in finish.tolist()],
        message_completion_ns=variability((fin - post)[fin >= 0], per_unit=1e3))


def class_columns(raw: RawResult) -> dict[str, np.ndarray]:
    """``bytes_class_K``: whole-run bytes per port of each traffic class, and
    ``inactive_ps_class_K``, the time the QoS policy held class K inactive at the port (when
    the engine counts it: ``RawResult.port_class_inactive``), when there are several classes
    (a QoS policy's)."""
    out: dict[str, np.ndarray] = {}
    per = raw.port_class_bytes
    if per is not None and per.ndim == 2 and per.shape[1] > 1:
        out.update({f"bytes_class_{k}": per[:, k].copy() for k in range(per.shape[1])})
    idle = getattr(raw, "port_class_inactive", None)
    if idle is not None and np.ndim(idle) == 2 and idle.shape[1] > 1:
        out.update({f"inactive_ps_class_{k}": np.asarray(idle[:, k], dtype=np.int64).copy()
                    for k in range(idle.shape[1])})
    return out


def class_summaries(prep: PreparedPoint, raw: RawResult) -> list[ClassSummary] | None:
    """Per traffic class (several classes only): its measured packets' count, bytes and
    latency, every class of the policy listed (a class without packets has zeros and no
    latency)."""
    per = raw.packets.classes
    if per is None:
        return None
    names = list(prep.point.machine.qos.class_names())
    out = []
    for k, name in enumerate(names):
        c = per.get(k)
        lat = c.latency if c is not None else Latency()
        out.append(ClassSummary(name=name, index=k, packets=c.packets if c else 0,
                                bytes=c.bytes if c else 0,
                                latency_ns=LatencyStats(mean=lat.mean, p50=lat.p50,
                                                        p99=lat.p99, max=lat.max)))
    return out


def message_table(prep: PreparedPoint, raw: RawResult) -> Table | dict[str, np.ndarray]:
    """Per-message completion: the last packet's delivery minus the message's creation (a
    :class:`~federation.results.spool.Table` read chunk by chunk when written).

    With rank programs: the background's messages first, then the programs' (see
    :func:`program_message_table`)."""
    if raw.programs is not None:  # rank programs: their messages' own times
        return program_message_table(prep, raw, raw.programs)
    w0, w1 = window_of(prep, raw)

    def rows(m: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        done, created = m["completed_ps"], m["created_ps"]
        return {
            "message": m["message"], "src": m["src"], "dst": m["dst"], "size": m["size"],
            "created_ps": created, "completed_ps": done,
            "completion_ps": np.where(done >= 0, done - created, -1),
            "measured": (created >= w0) & (created < w1),
            "class": m["class"],
        }

    none = rows({k: np.zeros(0, dtype=np.int64) for k in MESSAGE_COLUMNS})
    m = raw.packets.messages
    cols = job_columns(prep)
    if cols is not None:
        by_node = cols[0]
        plain = rows

        def rows(m: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
            return {**plain(m), "job": by_node[m["src"]]}

        none = rows({k: np.zeros(0, dtype=np.int64) for k in MESSAGE_COLUMNS})
    return m.mapped(rows, list(none)) if m is not None else none


def program_message_table(prep: PreparedPoint, raw: RawResult,
                          pg: Prog) -> Table | dict[str, np.ndarray]:
    """Per message of a rank-program run: the background's first (``message`` indexes the
    packets table), then the programs' (``message`` indexes their state).  Created: the
    background message's creation or the send's start; started: its first data packet left
    the NIC; completed: its last one arrived (-1, not ``measured``: still in flight when the
    programs finished); ``routing_mode``: the mode the message was sent with (an index of the
    routing's modes, -1 its own).  Background rows have rank, tag and mode -1, no
    rendezvous."""
    t = prep.job.programs
    assert t is not None
    n = t.msg_src.shape[0]  # the state's tables may have a spare row
    post, done = pg.msg_post[:n], pg.msg_finish[:n]
    programs = {
        "message": np.arange(post.shape[0], dtype=np.int64),
        "background": np.zeros(post.shape[0], dtype=bool),
        "src": t.msg_src.astype(np.int32),
        "dst": t.msg_dst.astype(np.int32),
        "size": t.msg_size.astype(np.int64),
        "created_ps": post.copy(),
        "started_ps": pg.msg_start[:n].copy(),
        "completed_ps": done.copy(),
        "completion_ps": np.where(done >= 0, done - post, -1),
        "measured": done >= 0,
        "src_rank": t.msg_src_rank.astype(np.int32),
        "dst_rank": t.msg_dst_rank.astype(np.int32),
        "tag": t.msg_tag.astype(np.int32),
        "rendezvous": t.msg_rdv.astype(bool),
        "routing_mode": pg.msg_mode[:n].astype(np.int8),  # as sent (a controller's choice)
        "class": t.msg_cls.astype(np.int16),
    }
    def background(m: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        n = m["message"].shape[0]
        done_bg, created = m["completed_ps"], m["created_ps"]
        none = np.full(n, -1, dtype=np.int32)
        return {
            "message": m["message"],
            "background": np.ones(n, dtype=bool),
            "src": m["src"].astype(np.int32),
            "dst": m["dst"].astype(np.int32),
            "size": m["size"].astype(np.int64),
            "created_ps": created,
            "started_ps": m["started_ps"],
            "completed_ps": done_bg,
            "completion_ps": np.where(done_bg >= 0, done_bg - created, -1),
            "measured": done_bg >= 0,
            "src_rank": none,
            "dst_rank": none,
            "tag": none,
            "rendezvous": np.zeros(n, dtype=bool),
            "routing_mode": np.full(n, -1, dtype=np.int8),
            "class": m["class"],
        }

    cols = job_columns(prep)
    if cols is not None:
        by_node, by_rank = cols
        programs["job"] = by_rank[programs["src_rank"]] if by_rank.size else \
            np.full(n, "", dtype=object)
        plain = background

        def background(m: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
            return {**plain(m), "job": by_node[m["src"]]}

    m = raw.packets.messages
    if m is None or not m.rows:
        return programs
    return m.mapped(background, list(programs)).then(programs)


def link_series_table(prep: PreparedPoint, raw: RawResult) -> dict[str, np.ndarray]:
    """The ``link_series`` table (``outputs.link_series``): per interval, port and traffic
    class with bytes sent, the bytes the port started sending in ``[start_ps, end_ps)`` and
    their share of what the link could carry then (``utilization``); router-to-router ports
    only unless ``links: all``.  The intervals are the sampler's own (the last one, and the
    rest of a drain the sample limit cut, are longer or shorter than ``interval``)."""
    series = raw.link_series
    net = prep.network
    pt = net.ports
    names = np.array(list(prep.point.machine.qos.class_names()), dtype=object)
    empty = series is None or series.port.size == 0
    port = series.port if not empty else np.zeros(0, np.int64)
    sel = np.ones(port.shape[0], dtype=bool)
    spec = prep.point.experiment.outputs.link_series
    if spec is not None and spec.links == "router":
        sel = (pt.port_router[port] >= 0) & (pt.port_router[pt.port_peer[port]] >= 0)
    port = port[sel]
    end = series.end_ps[sel] if not empty else np.zeros(0, np.int64)
    cls = series.cls[sel] if not empty else np.zeros(0, np.int64)
    nbytes = series.bytes[sel] if not empty else np.zeros(0, np.int64)
    start = series.start_ps[sel] if not empty else np.zeros(0, np.int64)
    bw = np.array([prep.job.links[c].bandwidth for c in net.link_classes], dtype=np.float64)
    port_bw = bw[pt.port_class]
    port_bw[pt.nic_port] = prep.job.nic_bandwidth
    span_s = np.maximum(end - start, 1) / PS_PER_S
    return {
        "start_ps": start.astype(np.int64), "end_ps": end.astype(np.int64),
        "port": port.astype(np.int64), "router": pt.port_router[port].astype(np.int64),
        "link_class": np.array(net.link_classes, dtype=object)[pt.port_class[port]],
        "class": cls.astype(np.int16), "class_name": names[cls] if cls.size else
        np.zeros(0, dtype=object),
        "bytes": nbytes.astype(np.int64),
        "utilization": nbytes / (port_bw[port] * span_s),
    }
