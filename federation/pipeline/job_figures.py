"""The summary's figures per job, derived from what the engine reports for the whole run.

The engine knows nothing of jobs: it reports rank programs by rank and message, open-loop
packets by source node and message, and ports.  So a job's figures come from where its traffic
is: a closed-loop job's ranks are a range of the merged programs' ranks
(:class:`~federation.pipeline.points.JobLayout`), an open-loop job's packets are those from its
nodes, and its links are its nodes' NIC and terminal ports (its confined traffic is all that
crosses them).  What the engine's records cannot split is left null, never guessed: the
latency and hops of rank-program packets when several closed-loop jobs run (the engine sums
them over every program), the packets of open-loop jobs whose nodes overlap another's, and the
links of a job whose nodes other jobs share.

Part of the *summary* stage (:mod:`.summary` calls it); never imports another stage.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from federation.engine.native import RawResult
from federation.engine.packet_stats import ValueStore, order_statistics, percentiles_ns
from federation.engine.state import Prog
from federation.pipeline.points import Placed, PlacedJob, PreparedPoint, everywhere
from federation.results.model import (
    JobSummary,
    LatencyStats,
    NicCounters,
    Spread,
    TwoOptSummary,
    Variability,
)
from federation.results.variability import from_order_statistics, variability


def owners(placed: Placed, n_nodes: int, which: list[PlacedJob]) -> np.ndarray:
    """Each node's job among ``which`` (its index), -1 none, -2 more than one."""
    owner = np.full(n_nodes, -1, dtype=np.int64)
    for pj in which:
        held = owner[pj.nodes]
        owner[pj.nodes] = np.where(held == -1, pj.job.index, -2)
    return owner


def spread(x: np.ndarray) -> Spread | None:
    if x.size == 0:
        return None
    return Spread(min=float(x.min()), mean=float(x.mean()), max=float(x.max()))


def job_summaries(prep: PreparedPoint, raw: RawResult) -> list[JobSummary] | None:
    """Per job of the point (``None`` when the experiment gives no jobs)."""
    point = prep.point
    if not point.given_jobs:
        return None
    net = prep.network
    placed = prep.placed or everywhere(point, net.n_nodes)
    everyone = owners(placed, net.n_nodes, list(placed.jobs))
    open_jobs = [pj for pj in placed.jobs if not pj.job.closed_loop]
    open_owner = owners(placed, net.n_nodes, open_jobs)
    table = open_table(prep, raw, open_jobs, open_owner)
    out = []
    for pj in placed.jobs:
        job = pj.job
        fields = dict(
            name=job.name, workload=job.workload.name, closed_loop=job.closed_loop,
            placement=job.placement.name, rank_order=job.order.order,
            nodes=[int(x) for x in pj.nodes.tolist()], start_ns=job.start_ps / 1e3,
            two_opt=(TwoOptSummary(**vars(pj.two_opt)) if pj.two_opt is not None else None))
        if job.closed_loop:
            fields.update(closed_figures(prep, raw, pj))
        else:
            fields.update(table.get(job.index, {}))
        gen, got = fields.get("packets_generated"), fields.get("packets_delivered")
        if "packets_undelivered" not in fields and gen is not None and got is not None:
            fields["packets_undelivered"] = gen - got  # as the point's (docs/programs.md)
        if (everyone[pj.nodes] == job.index).all():
            fields.update(link_figures(prep, raw, pj))
            fields["nics"] = job_nic_counters(raw, pj.nodes)
        out.append(JobSummary(**fields))
    return out


def link_figures(prep: PreparedPoint, raw: RawResult, pj: PlacedJob) -> dict:
    """Its nodes' NIC (injection) and terminal (ejection) ports: all their traffic is the
    job's when no other job holds them.  Port figures, as the ports table's: bytes count as
    a packet starts on the link, so a packet still on its terminal link when a rank-program
    run ends is in ``ejection_bytes`` but not in the job's ``bytes_delivered``."""
    pt = prep.network.ports
    w0, w1 = raw.window
    nic = pt.nic_port[pj.nodes]
    util = raw.window_ports.busy[nic] / max(w1 - w0, 1)
    return dict(injection_bytes=int(raw.port_bytes[nic].sum()),
                injection_utilization=spread(util),
                ejection_bytes=int(raw.port_bytes[pt.node_port[pj.nodes]].sum()))


def nic_counters(ctr: np.ndarray) -> NicCounters:
    """Aries' NIC counters summed over the rows of ``ctr`` (int64[n, api.NC_COLS]), with the
    routing noise paper's ratios s (stall per flit) and L (latency per packet)."""
    from federation.engine.api import NC_REQ_FLITS, NC_REQ_PKTS, NC_RSP_LAT, NC_STALL

    tot = ctr.sum(axis=0, dtype=np.int64)
    flits, pkts = int(tot[NC_REQ_FLITS]), int(tot[NC_REQ_PKTS])
    stall, lat = int(tot[NC_STALL]), int(tot[NC_RSP_LAT])
    return NicCounters(request_packets=pkts, request_flits=flits, stall_ns=stall / 1e3,
                       latency_ns=lat / 1e3,
                       stall_per_flit_ns=stall / 1e3 / flits if flits else None,
                       mean_latency_ns=lat / 1e3 / pkts if pkts else None)


def job_nic_counters(raw: RawResult, nodes: np.ndarray) -> NicCounters | None:
    """The job's nodes' NIC counters in the window (all theirs when no other job holds the
    nodes; ``None``: the engine keeps none)."""
    w = raw.window_ports.nics
    return nic_counters(w[nodes]) if w is not None else None


def closed_figures(prep: PreparedPoint, raw: RawResult, pj: PlacedJob) -> dict:
    """A closed-loop job's completion, rank finish spread, messages and packets, from its
    range of the run's ranks."""
    from federation.engine.programs import PSTAT_HOPS, PSTAT_LATENCY, PSTAT_MAX, PSTAT_PACKETS

    pg: Prog | None = raw.programs
    t = prep.job.programs
    layout = prep.layout
    if pg is None or t is None or layout is None:
        return {}
    job = pj.job
    a, b = layout.ranks[job.index]
    delay = layout.delays.get(job.index, 0)
    finish = pg.rank_finish[a:b].astype(np.int64) - job.start_ps
    first = t.programs.rank_first
    ops = int(first[b] - first[a]) - (b - a if delay else 0)
    n = t.msg_src.shape[0]
    mine = (t.msg_src_rank >= a) & (t.msg_src_rank < b)
    fin, post = pg.msg_finish[:n][mine], pg.msg_post[:n][mine]
    done = fin >= 0
    npk = pg.flow_npk[:3 * n].reshape(n, 3)[mine] if n else np.zeros((0, 3), np.int64)
    ctrl = int(pg.control_bytes)
    size = t.msg_size[mine].astype(np.int64)
    packets = int(npk[done].sum())
    nbytes = int(np.maximum(size[done], 1).sum() + ctrl * npk[done, 1:].sum())
    out = dict(
        ranks=b - a, operations=ops, messages=int(mine.sum()),
        completion_ns=float(finish.max()) / 1e3 if finish.size else 0.0,
        rank_finish_ns=spread(finish / 1e3),
        message_completion_ns_mean=(float((fin - post)[done].mean()) / 1e3 if done.any()
                                    else None),
        message_completion_ns=variability((fin - post)[done], per_unit=1e3),
        packets_generated=packets, packets_delivered=packets, bytes_injected=nbytes,
        bytes_delivered=nbytes)
    if len(layout.ranks) == 1:  # the engine's sums are this job's alone
        st = pg.pstat
        m = int(st[PSTAT_PACKETS])
        if m:
            out["latency_ns"] = LatencyStats(
                mean=int(st[PSTAT_LATENCY]) / m / 1e3, p50=None, p99=None,
                max=int(st[PSTAT_MAX]) / 1e3)
            out["mean_hops"] = int(st[PSTAT_HOPS]) / m
    return out


def open_table(prep: PreparedPoint, raw: RawResult, jobs: list[PlacedJob],
               owner: np.ndarray) -> dict[int, dict]:
    """Open-loop jobs' packet figures, by job index: the run's own figures for a single
    open-loop job; with several, from the packets and messages tables (by source node)."""
    st = raw.packets
    if not jobs:
        return {}
    alone = [pj for pj in jobs if (owner[pj.nodes] == pj.job.index).all()]
    if len(jobs) == 1 and alone:
        m = st.measured
        return {jobs[0].job.index: dict(
            packets_generated=st.generated, packets_delivered=st.delivered,
            bytes_injected=st.generated_bytes, bytes_delivered=st.delivered_bytes,
            latency_ns=LatencyStats(mean=st.latency.mean, p50=st.latency.p50,
                                    p99=st.latency.p99, max=st.latency.max),
            mean_hops=st.hops / m if m else None,
            message_completion_ns_mean=(st.message_completion_ps / st.messages_measured / 1e3
                                        if st.messages_measured else None),
            message_completion_ns=(completions(prep, raw, owner, [jobs[0].job.index])
                                   [jobs[0].job.index][0] if st.messages is not None
                                   else None))}
    if st.packets is None or not alone:
        return {}
    return from_tables(prep, raw, alone, owner)


def _chunks(table: object) -> Iterator[dict[str, np.ndarray]]:
    chunks = getattr(table, "chunks", None)
    if chunks is not None:
        yield from chunks()
    elif table:
        yield table  # type: ignore[misc]


def from_tables(prep: PreparedPoint, raw: RawResult, jobs: list[PlacedJob],
                owner: np.ndarray) -> dict[int, dict]:
    """Per open-loop job, from the kept packets and messages tables: every packet the run
    created by its end is in the packets table (delivered, or with ``delivered_ps = -1``
    when rank programs ended the run first), so their sums are the point's."""
    st = raw.packets
    w0, w1 = raw.window if prep.window is None else prep.window
    acc = {pj.job.index: dict(n=0, nbytes=0, got=0, got_bytes=0, hops=0, measured=0,
                              lat=ValueStore(), lat_sum=0) for pj in jobs}
    for c in _chunks(st.packets):
        job = owner[c["src"]]
        for j, a in acc.items():
            sel = job == j
            if not sel.any():
                continue
            size = c["size"][sel]
            got = c["delivered_ps"][sel] >= 0
            a["n"] += int(sel.sum())
            a["nbytes"] += int(size.sum())
            a["got"] += int(got.sum())
            a["got_bytes"] += int(size[got].sum())
            m = c["measured"][sel].astype(bool)
            lat = (c["delivered_ps"][sel] - c["created_ps"][sel])[m]
            a["lat"].add(lat)
            a["lat_sum"] += int(lat.sum())
            a["measured"] += int(m.sum())
            a["hops"] += int(c["hops"][sel][m].sum())
    mct = completions(prep, raw, owner, list(acc))
    out = {}
    for j, a in acc.items():
        store: ValueStore = a["lat"]
        lat = None
        if store.count:
            p50, p99 = percentiles_ns(store, (50, 99))
            lat = LatencyStats(mean=a["lat_sum"] / store.count / 1e3, p50=p50, p99=p99,
                               max=store.max / 1e3)
        store.close()
        out[j] = dict(
            packets_generated=a["n"], packets_delivered=a["got"],
            # the table holds the packets created by the end that were not delivered too
            packets_undelivered=a["n"] - a["got"],
            bytes_injected=a["nbytes"], bytes_delivered=a["got_bytes"],
            latency_ns=lat, mean_hops=a["hops"] / a["measured"] if a["measured"] else None,
            message_completion_ns_mean=mct[j][1], message_completion_ns=mct[j][0])
    return out


def completions(prep: PreparedPoint, raw: RawResult, owner: np.ndarray, jobs: list[int]
                ) -> dict[int, tuple[Variability | None, float | None]]:
    """Per open-loop job (index), the variability and mean of the completion times (ns) of
    its messages created in the window that completed, from the kept messages table (read
    chunk by chunk; exact order statistics over a store that spills to disk)."""
    w0, w1 = raw.window if prep.window is None else prep.window
    stores = {j: ValueStore() for j in jobs}
    sums = dict.fromkeys(jobs, 0)
    for c in _chunks(raw.packets.messages):
        job = owner[c["src"]]
        done, created = c["completed_ps"], c["created_ps"]
        inw = (created >= w0) & (created < w1) & (done >= 0)
        for j in jobs:
            t = (done - created)[inw & (job == j)]
            stores[j].add(t)
            sums[j] += int(t.sum())
    out = {}
    for j, store in stores.items():
        n = store.count
        out[j] = (from_order_statistics(n, lambda ranks, s=store: order_statistics(s, ranks),
                                        per_unit=1e3),
                  sums[j] / n / 1e3 if n else None)
        store.close()
    return out


def job_columns(prep: PreparedPoint) -> tuple[np.ndarray, np.ndarray] | None:
    """What the tables' ``job`` column is made from: the job name (``""``: unknown, nodes
    of several open-loop jobs) of each machine node's open-loop packets, and of each rank of
    the run's programs; ``None`` when the experiment gives no jobs."""
    point = prep.point
    if not point.given_jobs:
        return None
    net = prep.network
    placed = prep.placed or everywhere(point, net.n_nodes)
    name_of = {pj.job.index: pj.job.name for pj in placed.jobs}
    top = max(name_of) + 1
    names = np.array([name_of.get(i, "") for i in range(top)] + [""], dtype=object)
    open_owner = owners(placed, net.n_nodes, [pj for pj in placed.jobs
                                              if not pj.job.closed_loop])
    by_node = names[np.where(open_owner >= 0, open_owner, top)]
    ranks = np.zeros(0, dtype=object)
    if prep.layout is not None and prep.layout.ranks:
        n = max(b for _, b in prep.layout.ranks.values())
        ranks = np.full(n, "", dtype=object)
        for j, (a, b) in prep.layout.ranks.items():
            ranks[a:b] = name_of[j]
    return by_node, ranks
