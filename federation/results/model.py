"""The results document of a run (one JSON file per run, versioned).

Engines other than the native one (SimGrid, SST adapters) report in the same schema, so a
cross-validation compares like with like.  Per-port and per-packet tables are written beside it
as Parquet or CSV and referenced from each point's ``files``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_serializer

from federation.models.base import FederationModel

#: 3: ``LinkUse.utilization`` (whole run) became ``utilization_window`` (the measurement
#: window, what ``busiest_links`` is ranked by) and ``utilization_run``; ``bytes_window`` added.
#: 4: ``ComponentOrigin.program`` (an external engine's library and version, e.g. SimGrid)
#: 5: ``PointSummary.programs`` (rank programs: completion and per-rank finish times)
#: 6: ``PointSummary.nics`` and ``JobSummary.nics`` (Aries' NIC counters over the window)
RESULTS_SCHEMA_VERSION = 6


class LatencyStats(FederationModel):
    """Latencies in nanoseconds over the measured packets."""

    mean: float | None
    p50: float | None
    p99: float | None
    max: float | None


class LinkUse(FederationModel):
    """One directed link (an output port) and how busy it was in the measurement window, like
    latency and throughput, and over the whole run (warm-up and drain included)."""

    router: int | None = Field(description="owning router (None for a NIC)")
    port: int = Field(description="global port id (see the per-port table)")
    link_class: str
    peer: str = Field(description="what the port leads to: 'router N' or 'node N'")
    utilization_window: float = Field(
        description="time spent serialising within the measurement window / its length (a "
        "transmission straddling an edge counts its part inside)")
    bytes_window: int = Field(description="bytes of the transmissions started in the window")
    utilization_run: float = Field(
        description="time spent serialising over the whole run / simulated time")
    bytes: int = Field(description="bytes sent over the whole run")


class Variability(FederationModel):
    """How a sample of times spreads, in the Aries noise paper's figures (its §3.3): quartiles,
    the quartile coefficient of dispersion, the median with its distribution-free 95 %
    confidence interval, the maximum over the median.  Computed by
    :mod:`federation.results.variability`; in ns like the figure it describes."""

    samples: int = Field(description="values in the sample")
    median: float
    median_ci_low: float | None = Field(
        description="the median's 95 % confidence interval, from order statistics of the "
        "binomial (distribution-free); null below 6 values, where none reaches 95 %")
    median_ci_high: float | None
    median_ci_coverage: float | None = Field(
        description="the interval's exact coverage probability (at least 0.95)")
    q1: float = Field(description="first quartile (NumPy's linear percentile)")
    q3: float = Field(description="third quartile")
    qcd: float | None = Field(
        description="quartile coefficient of dispersion, (q3 - q1) / (q3 + q1); null when both "
        "are 0")
    max: float
    max_over_median: float | None = Field(description="max / median; null when the median is 0")


class ProgramSummary(FederationModel):
    """How the rank programs of a closed-loop run finished."""

    ranks: int
    operations: int
    messages: int
    completion_ns: float = Field(description="program completion time: the last rank's finish")
    rank_finish_ns: list[float] = Field(description="when each rank's last operation finished")
    message_completion_ns: Variability | None = Field(
        None, description="variability of the programs' message completion times (a send's "
        "start to its last packet's arrival) over the messages that completed")


class TwoOptSummary(FederationModel):
    """What a job's two-opt rank placement did (``ranks: {order: two_opt}``)."""

    objective: Literal["hops", "contention"]
    iterations: int
    before: int = Field(description="the objective of the starting order (total hops of the "
                        "job's messages, or pairs of its messages sharing a cable)")
    after: int = Field(description="the objective of the order found")
    accepted: int = Field(description="swaps kept")


class NicCounters(FederationModel):
    """Aries' four NIC counters (the routing noise paper's §2.3) summed over NICs, in the
    measurement window, with the two ratios its Algorithm 1 reads.  Request packets and flits
    count when a packet starts to leave its NIC; the stall is the time a packet ready at the
    NIC waited for credit (back-pressure), not for the link; our packets have no responses, so
    the latency is each packet's network latency (leaving its NIC to delivery), added at
    delivery to its source NIC (docs/architecture.md, "NIC counters")."""

    request_packets: int
    request_flits: int = Field(description="ceil(packet size / nic.flit) per packet")
    stall_ns: float = Field(description="time ready packets waited at NICs for credit")
    latency_ns: float = Field(description="cumulative request latency (network latency of "
                              "the packets delivered)")
    stall_per_flit_ns: float | None = Field(description="s: stall / request flits")
    mean_latency_ns: float | None = Field(description="L: latency / request packets")


class Spread(FederationModel):
    """Least, mean and greatest of a figure over a job's ranks or ports."""

    min: float
    mean: float
    max: float


class JobSummary(FederationModel):
    """One job of a point: where it ran and what its traffic did.

    Figures the engine's records cannot attribute to the job are null: the latency and hops
    of rank-program packets when several closed-loop jobs run (the engine sums them over all
    programs), the packet figures of open-loop jobs whose nodes overlap another open-loop
    job's (or, with several open-loop jobs, when the packets table is not kept), and the link
    figures of a job whose nodes other jobs share."""

    name: str
    workload: str = Field(description="the workload's kind")
    closed_loop: bool
    placement: str = Field(description="the placement's kind")
    rank_order: str
    nodes: list[int] = Field(description="the machine node of each of the job's nodes (node "
                             "i of the job, where its rank i runs by default)")
    start_ns: float
    two_opt: TwoOptSummary | None = None
    ranks: int | None = None
    operations: int | None = None
    messages: int | None = Field(None, description="messages the job's traffic created")
    completion_ns: float | None = Field(
        None, description="closed loop: its last rank's finish, from the job's start")
    rank_finish_ns: Spread | None = Field(
        None, description="closed loop: when its ranks finished, from the job's start")
    completion_alone_ns: float | None = Field(
        None, description="with slowdown: its completion run alone on the same nodes")
    slowdown: float | None = Field(
        None, description="with slowdown: completion with the others / alone")
    message_completion_ns_mean: float | None = None
    message_completion_ns: Variability | None = Field(
        None, description="variability of its message completion times: a closed-loop job's "
        "completed messages; an open-loop job's messages created in the window, when its "
        "figures come from the kept tables")
    packets_generated: int | None = None
    packets_delivered: int | None = None
    packets_undelivered: int | None = Field(
        None, description="its packets created by the run's end but not delivered: still in "
        "flight or waiting at its NICs when a rank-program run ended (an open-loop job beside "
        "closed-loop ones); they are left out of its delivered, latency and hops figures. "
        "packets_generated - packets_delivered where both are given, as for the point; 0 "
        "when the run delivered everything; null when its packet figures are")
    bytes_injected: int | None = None
    bytes_delivered: int | None = None
    latency_ns: LatencyStats | None = None
    mean_hops: float | None = None
    injection_bytes: int | None = Field(
        None, description="bytes its nodes' NIC (injection) ports sent over the whole run, "
        "counted as each packet starts on the link (the ports table's bytes of those ports)")
    injection_utilization: Spread | None = Field(
        None, description="its NICs' utilisation in the window")
    ejection_bytes: int | None = Field(
        None, description="bytes its nodes' terminal (ejection) ports sent into them over "
        "the whole run, counted as each packet starts on the link (the ports table's bytes "
        "of those ports, as injection_bytes): a packet still on that link when the run "
        "ended counts, so this exceeds bytes_delivered by such packets (see "
        "packets_undelivered)")
    nics: NicCounters | None = Field(
        None, description="its nodes' NIC counters in the window (null when other jobs share "
        "its nodes)")


class ClassSummary(FederationModel):
    """One traffic class's measured packets (open-loop packets created in the window, and
    every rank-program packet), with several classes (``machine.qos``)."""

    name: str = Field(description="the class's name (machine.qos)")
    index: int = Field(description="its number: 0 first, as the policy orders them")
    packets: int
    bytes: int
    latency_ns: LatencyStats = Field(description="creation at the source NIC to delivery")


class PointSummary(FederationModel):
    offered_load: float | None = Field(
        description="bytes created in the window / (window x NIC bandwidth x nodes)")
    accepted_load: float = Field(
        description="bytes delivered in the window / (window x NIC bandwidth x nodes)")
    packets_generated: int
    packets_measured: int
    packets_delivered: int
    bytes_injected: int
    bytes_delivered: int
    latency_ns: LatencyStats = Field(description="creation at the source NIC to delivery")
    network_latency_ns: LatencyStats = Field(description="leaving the NIC to delivery")
    mean_hops: float | None = Field(description="router-to-router hops per measured packet")
    nonminimal_fraction: float | None = Field(
        description="measured packets the routing sent non-minimally (given an intermediate "
        "or a non-minimal hop), whatever path they ended on: a packet is delivered at its "
        "destination router in any phase")
    message_completion_ns_mean: float | None
    simulated_time_ns: float
    events: int
    packet_hops: int
    busiest_links: list[LinkUse] = Field(
        description="the five output ports with the highest utilization in the window")
    programs: ProgramSummary | None = Field(
        None, description="rank programs (closed-loop workloads): completion and per-rank "
        "finish times; null for open-loop runs")
    jobs: list[JobSummary] | None = Field(
        None, description="per job, with 'jobs' or 'slowdown' in the experiment (absent "
        "otherwise)")
    nics: NicCounters | None = Field(
        None, description="every NIC's counters in the window (absent when the engine keeps "
        "none)")
    classes: list[ClassSummary] | None = Field(
        None, description="per traffic class, when machine.qos has several (absent "
        "otherwise)")
    link_series_coarse_from_ns: float | None = Field(
        None, ge=0, description="outputs.link_series: the drain after stop.warmup + "
        "stop.measure was too long to sample at the interval within the limit of a million "
        "samples a run, so the link_series table's last interval runs from this time to the "
        "run's end (absent when every interval was sampled)")

    @model_serializer(mode="wrap")
    def _without_absent_jobs(self, handler: Any) -> Any:
        """Leave ``jobs`` and ``classes`` out when there are none, so the results of an
        experiment without them keep the document they had."""
        out = handler(self)
        if isinstance(out, dict):
            for key in ("jobs", "nics", "classes", "link_series_coarse_from_ns"):
                if out.get(key) is None:
                    out.pop(key, None)
        return out


class Performance(FederationModel):
    """Wall-clock figures of one point.  Kept out of ``results.json`` (written to
    ``performance.json``) so that the same experiment and seed give byte-identical results."""

    wall_seconds: float
    events_per_second: float
    packet_hops_per_second: float


class ComponentOrigin(FederationModel):
    """Which plugin supplied a component of a point, and its version."""

    name: str = Field(description="the component's name in files (kind or algorithm)")
    plugin: str = Field(description="the plugin (entry-point name) that registered it")
    source: str = Field(description="'hpc-federation <version>' for built-ins, else the "
                        "distribution's 'name version'")
    program: str | None = Field(
        None, description="engines only: the external program or library the engine drove "
        "and its version, e.g. 'SimGrid 3.32.0'; null for the native engine")


class PointResult(FederationModel):
    index: int = Field(description="position of the point in the sweep (files use it)")
    sweep: dict[str, Any] = Field(default_factory=dict)
    seed: int
    engine: str
    routing: str
    routing_description: str = Field(
        "", description="what the routing's tables do (paths, VC rule), as the plugin says")
    workload: dict[str, Any]
    resolved: dict[str, Any] = Field(
        default_factory=dict,
        description="the point as a complete experiment document: machine inline with every "
        "default filled in (figures per link class, VCs, router delay, packet size, NIC), "
        "every component's parameters, no sweep; `federation run` accepts it as it is")
    components: dict[str, ComponentOrigin] = Field(
        default_factory=dict, description="the plugin and version behind each component: "
        "topology, qos, arbiter, routing, controller (when the routing has one), engine, and "
        "the workload (and background) of a file without "
        "jobs, or for each job of `jobs:` `jobs.NAME.workload` and `jobs.NAME.placement` "
        "(no `workload` then)")
    summary: PointSummary
    files: dict[str, str] = Field(default_factory=dict)
    performance: Performance | None = Field(None, exclude=True)


class MachineSummary(FederationModel):
    name: str | None
    topology: dict[str, Any]
    routers: int
    nodes: int
    links: dict[str, int]


class RunResult(FederationModel):
    """A run: one entry in ``points`` per finished sweep combination.

    ``status`` is ``incomplete`` when the run stopped early (an error or Ctrl-C after some
    points finished); ``missing_points`` then lists the sweep indices that did not run and
    ``error`` says why.
    """

    schema_name: Literal["hpc-federation.results"] = "hpc-federation.results"
    schema_version: int = RESULTS_SCHEMA_VERSION
    federation_version: str
    experiment: str | None
    source: str = Field(description="the experiment file, as an absolute path")
    status: Literal["complete", "incomplete"] = "complete"
    missing_points: list[int] = Field(default_factory=list)
    error: str | None = None
    machine: MachineSummary
    points: list[PointResult]
