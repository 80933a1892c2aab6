"""The results document of a run (one JSON file per run, versioned).

Engines other than the native one (SimGrid, SST adapters) report in the same schema, so a
cross-validation compares like with like.  Per-port and per-packet tables are written beside it
as Parquet or CSV and referenced from each point's ``files``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from federation.models.base import FederationModel

RESULTS_SCHEMA_VERSION = 1


class LatencyStats(FederationModel):
    """Latencies in nanoseconds over the measured packets."""

    mean: float | None
    p50: float | None
    p99: float | None
    max: float | None


class LinkUse(FederationModel):
    """One directed link (an output port) and how busy it was during the run."""

    router: int | None = Field(description="owning router (None for a NIC)")
    port: int = Field(description="global port id (see the per-port table)")
    link_class: str
    peer: str = Field(description="what the port leads to: 'router N' or 'node N'")
    utilization: float = Field(description="busy time / simulated time")
    bytes: int


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
    nonminimal_fraction: float | None
    message_completion_ns_mean: float | None
    simulated_time_ns: float
    events: int
    packet_hops: int
    busiest_links: list[LinkUse]


class Performance(FederationModel):
    """Wall-clock figures of one point.  Kept out of ``results.json`` (written to
    ``performance.json``) so that the same experiment and seed give byte-identical results."""

    wall_seconds: float
    events_per_second: float
    packet_hops_per_second: float


class PointResult(FederationModel):
    sweep: dict[str, Any] = Field(default_factory=dict)
    seed: int
    engine: str
    routing: str
    workload: dict[str, Any]
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
    """A successful run: one entry in ``points`` per sweep combination."""

    schema_name: Literal["hpc-federation.results"] = "hpc-federation.results"
    schema_version: int = RESULTS_SCHEMA_VERSION
    federation_version: str
    experiment: str | None
    source: str
    machine: MachineSummary
    points: list[PointResult]
