"""SST's output read back: the statistics CSV, the stdout of ``merlin.offered_load`` and sst-core,
and the point summary in our results schema.

Both parsers are strict about the format they accept and say what they expected, because a
silently half-read file would give plausible but wrong figures.  The CSV is sst-core's
``sst.statOutputCSV`` with its default separator ``", "``, one line per statistic (every
statistic here is an ``sst.AccumulatorStatistic`` written once, at the end):

    ComponentName, StatisticName, StatisticSubId, StatisticType, SimTime, Rank, Sum.u64,
    SumSQ.u64, Count.u64, Min.u64, Max.u64

What each summary figure means on the SST side is listed in ``docs/sst.md`` ("Results").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from federation.errors import FederationError
from federation.results.model import ClassSummary, JobSummary, LatencyStats, PointSummary

from .script import SstConfig

#: the columns every statistics row must have (more may follow, e.g. from other stat types)
REQUIRED_COLUMNS = ("ComponentName", "StatisticName", "StatisticSubId", "StatisticType",
                    "SimTime", "Rank", "Sum.u64", "SumSQ.u64", "Count.u64", "Min.u64", "Max.u64")
SEPARATOR = ", "
_SI = {"": 1.0, "m": 1e-3, "u": 1e-6, "µ": 1e-6, "n": 1e-9, "p": 1e-12, "f": 1e-15,
       "k": 1e3, "M": 1e6, "G": 1e9}
_SIMTIME = re.compile(r"Simulation is complete, simulated time:\s*([0-9.eE+-]+)\s*([a-zµ]?)s\b")
_LOAD_ROW = re.compile(r"(?:^|:)\s*([0-9]+\.[0-9]+)\s+([0-9.eE+-]+)\s*([a-zµ]?)s(\*?)\s*$")


class SstOutputError(FederationError):
    """sst's output is not in the format this adapter reads (or is missing)."""


@dataclass(frozen=True)
class StatRow:
    """One statistic of the CSV (integers as written; ``sim_time`` in SST's core time base)."""

    component: str
    statistic: str
    subid: str
    type: str
    sim_time: int
    rank: int
    sum: int
    sum_sq: int
    count: int
    min: int
    max: int


@dataclass(frozen=True)
class LoadResult:
    """One row of offered_load's table: the load and the mean latency (seconds); ``behind``
    when the endpoint could not keep up with its schedule (printed as ``*``)."""

    load: float
    latency_s: float
    behind: bool


@dataclass(frozen=True)
class SstStdout:
    simulated_time_s: float | None
    loads: list[LoadResult]


def parse_stats_csv(text: str, source: str = "stats.csv") -> list[StatRow]:
    """Rows of an ``sst.statOutputCSV`` file; :class:`SstOutputError` names the line that does
    not fit."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        raise SstOutputError(f"{source}: empty statistics file (no header)")
    header = [h.strip() for h in lines[0].split(SEPARATOR.strip())]
    missing = [c for c in REQUIRED_COLUMNS if c not in header]
    if missing:
        raise SstOutputError(f"{source}: line 1: header lacks {', '.join(missing)} (got "
                             f"{lines[0]!r}); expected sst.statOutputCSV with separator ', '")
    col = {name: header.index(name) for name in REQUIRED_COLUMNS}
    rows = []
    for no, line in enumerate(lines[1:], start=2):
        cells = [c.strip() for c in line.split(SEPARATOR.strip())]
        if len(cells) != len(header):
            raise SstOutputError(f"{source}: line {no}: {len(cells)} fields, the header has "
                                 f"{len(header)}: {line!r}")
        try:
            nums = [int(cells[col[c]]) for c in REQUIRED_COLUMNS[4:]]
        except ValueError:
            raise SstOutputError(f"{source}: line {no}: a numeric field is not an integer: "
                                 f"{line!r}") from None
        rows.append(StatRow(cells[col["ComponentName"]], cells[col["StatisticName"]],
                            cells[col["StatisticSubId"]], cells[col["StatisticType"]], *nums))
    return rows


def parse_stdout(text: str) -> SstStdout:
    """sst-core's closing line (simulated time) and offered_load's load/latency table."""
    sim = None
    m = _SIMTIME.search(text)
    if m:
        sim = float(m.group(1)) * _SI[m.group(2)]
    loads = []
    in_table = False
    for line in text.splitlines():
        if "Offered" in line and "Average" in line:
            in_table = True
            continue
        if in_table:
            r = _LOAD_ROW.search(line)
            if r:
                loads.append(LoadResult(float(r.group(1)), float(r.group(2)) * _SI[r.group(3)],
                                        r.group(4) == "*"))
    return SstStdout(sim, loads)


def _node_of(component: str) -> int | None:
    m = re.match(r"nic(\d+)\b", component)
    return int(m.group(1)) if m else None


def _router_port(row: StatRow) -> tuple[int, int] | None:
    m, p = re.match(r"rtr(\d+)\b", row.component), re.fullmatch(r"port(\d+)", row.subid)
    return (int(m.group(1)), int(p.group(1))) if m and p else None


def port_table(cfg: SstConfig, rows: list[StatRow]) -> dict[str, list[Any]]:
    """Per router port, what it sent within the measurement window (merlin port numbers)."""
    cls = {(r, p): c for c, ra, pa, rb, pb in cfg.network.cables for r, p in ((ra, pa), (rb, pb))}
    cls.update({(r, p): "terminal" for _, r, p in cfg.network.hosts})
    sent: dict[tuple[int, int], dict[str, int]] = {}
    for row in rows:
        rp = _router_port(row)
        if rp is not None and row.statistic in ("send_bit_count", "send_packet_count"):
            sent.setdefault(rp, {})[row.statistic] = row.sum
    w = (cfg.window_ps[1] - cfg.window_ps[0]) / 1e12
    out: dict[str, list[Any]] = {k: [] for k in ("router", "port", "link_class", "bytes_window",
                                                 "packets_window", "utilization_window")}
    for (r, p) in sorted(sent):
        c = cls.get((r, p), "unconnected")
        nbytes = sent[(r, p)].get("send_bit_count", 0) // 8
        bw = cfg.port_bandwidth.get(c, 0.0)
        out["router"].append(r)
        out["port"].append(p)
        out["link_class"].append(c)
        out["bytes_window"].append(nbytes)
        out["packets_window"].append(sent[(r, p)].get("send_packet_count", 0))
        out["utilization_window"].append(nbytes / (bw * w) if bw > 0 and w > 0 else 0.0)
    return out


@dataclass(frozen=True)
class Counts:
    """What merlin's statistics add up to: NIC bytes sent, host-port bytes and packets
    (deliveries), router-to-router packets (hops), and the linkcontrol packet latency."""

    injected_bytes: int
    delivered_bytes: int
    delivered_packets: int
    hops: int
    latency_sum: int
    latency_count: int
    latency_max: int


def count(cfg: SstConfig, rows: list[StatRow]) -> Counts:
    """The sums over every statistics row (:class:`SstOutputError` when there are none)."""
    if not rows:
        raise SstOutputError("the statistics file has no rows: sst wrote no statistics")
    hosts = {(r, p) for _, r, p in cfg.network.hosts}
    injected_bits = delivered_bits = delivered_pkts = hops = 0
    lat_sum = lat_count = lat_max = 0
    for row in rows:
        rp = _router_port(row)
        if rp is not None:
            if row.statistic == "send_bit_count" and rp in hosts:
                delivered_bits += row.sum
            elif row.statistic == "send_packet_count":
                if rp in hosts:
                    delivered_pkts += row.sum
                else:
                    hops += row.sum
        elif _node_of(row.component) is not None:
            if row.statistic == "send_bit_count":
                injected_bits += row.sum
            elif row.statistic == "packet_latency":
                lat_sum, lat_count = lat_sum + row.sum, lat_count + row.count
                lat_max = max(lat_max, row.max if row.count else 0)
    return Counts(injected_bits // 8, delivered_bits // 8, delivered_pkts, hops, lat_sum,
                  lat_count, lat_max)


def job_latencies(cfg: SstConfig, out: SstStdout) -> list[float | None]:
    """Each job's mean latency (ns) from ``merlin.offered_load``'s printed tables, or
    ``None`` for every job when they cannot be told apart.

    With job endpoints the endpoint of logical id 0 of each job prints its job's table: one
    row, the job's load (two decimals) and mean latency (creation at its schedule to
    receipt).  No row names its job, and the order of the tables is not the order of the jobs
    or of their nodes (measured), so a row is its job's by its load: the jobs' loads must be
    distinct at two decimals and every job's must be printed once."""
    want = [f"{load:.2f}" for load, _, _ in cfg.jobs]
    got = [f"{row.load:.2f}" for row in out.loads]
    if len(set(want)) != len(want) or sorted(got) != sorted(want):
        return [None] * len(cfg.jobs)
    by_load = {g: row.latency_s * 1e9 for g, row in zip(got, out.loads, strict=True)}
    return [by_load[w] for w in want]


def _weighted(values: list[float | None], weights: list[int]) -> float | None:
    total = sum(weights)
    if total == 0 or any(v is None for v, w in zip(values, weights, strict=True) if w):
        return None
    return sum(v * w for v, w in zip(values, weights, strict=True) if w) / total


def class_summaries(cfg: SstConfig, counts: JobCounts, job_lat: list[float | None],
                    ) -> list[ClassSummary] | None:
    """Per traffic class (with several, :attr:`SstConfig.classes`): the packets and bytes
    the routers delivered in the window into the class's nodes (a job sends within itself,
    so a node receives its own job's packets only), and their mean latency: the class's jobs'
    offered_load latencies (:func:`job_latencies`) weighted by those packets; p50, p99 and
    max are not reported."""
    if not cfg.classes:
        return None
    bits, pkts = counts.bits, counts.packets
    out = []
    for c, name in enumerate(cfg.classes):
        mine = [j for j, job in enumerate(cfg.jobs) if job[1] == c]
        mean = _weighted([job_lat[j] for j in mine], [pkts[j] for j in mine])
        out.append(ClassSummary(name=name, index=c, packets=sum(pkts[j] for j in mine),
                                bytes=sum(bits[j] for j in mine) // 8,
                                latency_ns=LatencyStats(mean=mean, p50=None, p99=None,
                                                        max=None)))
    return out


@dataclass(frozen=True)
class JobCounts:
    """Per job (:attr:`SstConfig.jobs`), in the window: the bits and packets the routers
    delivered on the host ports of its nodes, and the bits its nodes' NICs sent."""

    bits: list[int]
    packets: list[int]
    sent_bits: list[int]


def job_counts(cfg: SstConfig, rows: list[StatRow]) -> JobCounts:
    """The :class:`JobCounts` of the statistics ``rows``, in one pass."""
    host_node = {(r, p): n for n, r, p in cfg.network.hosts}
    job_of = {n: j for j, (_, _, nodes) in enumerate(cfg.jobs) for n in nodes}
    c = JobCounts([0] * len(cfg.jobs), [0] * len(cfg.jobs), [0] * len(cfg.jobs))
    for row in rows:
        rp = _router_port(row)
        if rp is None:  # a NIC's
            j = job_of.get(_node_of(row.component))
            if j is not None and row.statistic == "send_bit_count":
                c.sent_bits[j] += row.sum
            continue
        j = job_of.get(host_node.get(rp, -1))
        if j is None:
            continue
        if row.statistic == "send_bit_count":
            c.bits[j] += row.sum
        elif row.statistic == "send_packet_count":
            c.packets[j] += row.sum
    return c


def job_summaries(cfg: SstConfig, c: JobCounts, lat: list[float | None],
                  jobs: list[dict[str, Any]]) -> list[JobSummary]:
    """Per open-loop job (``jobs``: each job's name, workload, placement and rank order, in
    the order of :attr:`SstConfig.jobs`): its nodes, the bytes its NICs sent and the packets
    and bytes delivered into its nodes in the window (``c``), and its offered_load latency
    (``lat``, :func:`job_latencies`)."""
    return [JobSummary(**meta, closed_loop=False, nodes=list(cfg.jobs[j][2]), start_ns=0.0,
                       packets_delivered=c.packets[j], bytes_delivered=c.bits[j] // 8,
                       bytes_injected=c.sent_bits[j] // 8,
                       latency_ns=LatencyStats(mean=lat[j], p50=None, p99=None, max=None))
            for j, meta in enumerate(jobs)]


def summarize(cfg: SstConfig, rows: list[StatRow], out: SstStdout, packet_size: int,
              jobs: list[dict[str, Any]] | None = None) -> PointSummary:
    """Our :class:`PointSummary` from SST's window statistics and stdout; with ``jobs`` (the
    experiment's own jobs, as :func:`job_summaries` takes them) and job endpoints, the
    per-job figures too.

    Counts and loads cover the measurement window (SST's statistics start and stop at its
    edges); figures SST does not measure are ``None`` or 0 (see docs/sst.md, "Results").
    """
    c = count(cfg, rows)
    w = (cfg.window_ps[1] - cfg.window_ps[0]) / 1e12
    capacity = w * cfg.nic_bandwidth * cfg.nodes
    job_lat: list[float | None] = []
    per_job = JobCounts([], [], [])
    if cfg.jobs:  # a table per job: their mean, weighted by the packets each delivered
        per_job = job_counts(cfg, rows)
        job_lat = job_latencies(cfg, out)
        mean = _weighted(job_lat, per_job.packets)
    else:
        mean = out.loads[0].latency_s * 1e9 if out.loads else None
    net_mean = c.latency_sum / c.latency_count if c.latency_count else None
    injected = c.injected_bytes
    return PointSummary(
        offered_load=injected / capacity if capacity > 0 else None,
        accepted_load=c.delivered_bytes / capacity if capacity > 0 else 0.0,
        packets_generated=injected // max(packet_size, 1),
        packets_measured=injected // max(packet_size, 1),
        packets_delivered=c.delivered_packets,
        bytes_injected=injected,
        bytes_delivered=c.delivered_bytes,
        latency_ns=LatencyStats(mean=mean, p50=None, p99=None, max=None),
        network_latency_ns=LatencyStats(mean=net_mean, p50=None, p99=None,
                                        max=float(c.latency_max) if c.latency_count else None),
        mean_hops=c.hops / c.delivered_packets if c.delivered_packets else None,
        nonminimal_fraction=None,
        message_completion_ns_mean=mean,
        simulated_time_ns=(out.simulated_time_s or 0.0) * 1e9,
        events=0,
        packet_hops=c.hops,
        busiest_links=[],
        classes=class_summaries(cfg, per_job, job_lat),
        jobs=job_summaries(cfg, per_job, job_lat, jobs) if jobs and cfg.jobs else None,
    )
