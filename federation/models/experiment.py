"""Experiment files: a machine, routing, workload (and background) or jobs, engine, seed, stop
rule, sweep and outputs."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Discriminator, Field, Tag, field_validator, model_validator

from federation.models.base import DocumentModel, SchemaVersion
from federation.models.machine import AlgorithmSpec, ComponentSpec, Machine
from federation.models.units import (
    ClockTime,
    PositiveClockTime,
    PositiveTime,
    Time,
    seconds_to_ps,
)

#: most two-opt iterations one job may ask for (the thesis uses 200,000 to 1,000,000)
MAX_TWO_OPT_ITERATIONS = 100_000_000


def _machine_tag(value: Any) -> str:
    return "machine-file" if isinstance(value, str) else "inline-machine"


#: a path or an inline machine; the tag picks the branch so that an error in an inline machine
#: is reported once, at its own field (a plain union also reports "should be a string")
MachineRef = Annotated[
    Annotated[str, Tag("machine-file")] | Annotated[Machine, Tag("inline-machine")],
    Discriminator(_machine_tag)]


class StopRule(DocumentModel):
    """When to stop generating traffic and which packets are measured.

    Traffic is generated over ``warmup + measure``; statistics cover the packets *created* in
    the measurement window, and the run continues until they are all delivered (the booksim
    convention).  With ``messages`` instead of ``measure``, the measurement window closes once
    that many messages have been created after the warm-up.
    """

    warmup: Time = Field(2e-6, description="traffic before measurement starts")
    measure: PositiveTime | None = Field(10e-6, description="measurement window")
    messages: int | None = Field(None, gt=0, description="stop after N measured messages")

    @model_validator(mode="before")
    @classmethod
    def _one_rule(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("messages") is not None and "measure" not in data:
            data = {**data, "measure": None}
        return data

    @model_validator(mode="after")
    def _exclusive(self) -> StopRule:
        if self.measure is None and self.messages is None:
            raise ValueError("give either 'measure' (a time) or 'messages' (a count)")
        if self.measure is not None and self.messages is not None:
            raise ValueError("give either 'measure' or 'messages', not both")
        return self


class LinkSeries(DocumentModel):
    """``outputs.link_series``: bytes each port sent per traffic class, sampled every
    ``interval`` over the run (the ``link_series`` table)."""

    interval: PositiveClockTime = Field(description="time between two samples")
    links: Literal["router", "all"] = Field(
        "router", description="router: router-to-router ports only; all: NIC ports too")

    @field_validator("interval")
    @classmethod
    def _whole_clock_tick(cls, v: float) -> float:
        """The engine samples at whole picoseconds: an interval that rounds to 0 ps took no
        sample at all and wrote an empty table."""
        if seconds_to_ps(v) < 1:
            raise ValueError(f"{v * 1e12:.3g}ps is below the engine's clock unit (1ps: its "
                             "times are whole picoseconds); give at least 1ps")
        return v


class Outputs(DocumentModel):
    """Which result files a run writes (into ``--out`` or ``dir``)."""

    dir: str | None = Field(
        None, description="output directory, relative to this file (the CLI's --out wins)")
    format: Literal["parquet", "csv"] = "parquet"
    packets: bool = Field(True, description="write the per-packet table")
    ports: bool = Field(True, description="write the per-port table")
    messages: bool = Field(True, description="write the per-message completion table")
    nics: bool = Field(True, description="write the per-NIC counters table (Aries' NIC "
                       "counters over the measurement window)")
    link_series: LinkSeries | None = Field(
        None, description="write the link_series table: bytes per port and traffic class in "
        "each interval of the run")


class RankOrder(DocumentModel):
    """Which of a job's nodes each of its ranks runs on (``ranks:`` of a job).

    ``ascending`` (the default): the job's i-th lowest node holds its local node i (rank i);
    ``placement``: the placement's own order (the order a random placement drew its nodes, a
    tree's breadth-first order, the ring's order from its start); ``cco``: chain concatenation
    ordering, breadth first over the routers from the job's first node; ``two_opt``: from
    ``initial``, random pairs of ranks swapped whenever that lowers the ``objective`` of the
    job's own messages on the routing's minimal paths (``hops``: their total path hops;
    ``contention``: the pairs of messages that share a link), ``iterations`` times."""

    order: Literal["ascending", "placement", "cco", "two_opt"] = "ascending"
    objective: Literal["hops", "contention"] | None = Field(
        None, description="two_opt: what the swaps lower (default hops)")
    iterations: int | None = Field(
        None, ge=0, le=MAX_TWO_OPT_ITERATIONS,
        description="two_opt: swaps tried (default 200000, the thesis' figure)")
    initial: Literal["ascending", "placement"] | None = Field(
        None, description="two_opt: the order it starts from (default ascending)")
    seed: int | None = Field(
        None, ge=0, description="two_opt: seed of its random pairs (default: from the "
        "experiment's seed and the job's position)")

    @model_validator(mode="after")
    def _two_opt_only(self) -> RankOrder:
        if self.order != "two_opt":
            given = [k for k in ("objective", "iterations", "initial", "seed")
                     if getattr(self, k) is not None]
            if given:
                raise ValueError(f"{given[0]!r} applies to order two_opt only, not "
                                 f"{self.order!r}")
        return self


#: a traffic class's name: one of ``machine.qos``'s classes (checked once the policy is known)
ClassName = Annotated[str, Field(min_length=1, max_length=200)]


class ClassBy(DocumentModel):
    """Mechanism II: a closed-loop job's packets classed by the operation that sent them.  A
    send a collective (or barrier) made is ``collective``; every other send is
    ``point_to_point``."""

    collective: ClassName = Field(description="class of the sends collectives and barriers "
                                  "make")
    point_to_point: ClassName = Field(description="class of every other send")


class WorkloadClasses(DocumentModel):
    """Classes of the one-workload form (``workload`` and ``background``)."""

    workload: ClassName | None = Field(None, description="class of every packet of workload")
    background: ClassName | None = Field(None, description="class of every packet of "
                                         "background")


class Job(DocumentModel):
    """One job of a shared machine: a workload on the nodes its placement gives it."""

    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True)

    name: str = Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9_.\-]+$",
                      description="names the job in results, tables and messages")
    workload: ComponentSpec = Field(description="{kind: ..., <params>}: any workload; its node "
                                    "numbers are the job's own (node i: the job's i-th node)")
    placement: ComponentSpec = Field(description="{kind: ..., <params>}: which nodes the job "
                                     "gets (contiguous, list, random_nodes, rest, ...)")
    ranks: RankOrder = Field(default_factory=RankOrder,
                             description="which of its nodes each rank runs on")
    start: ClockTime = Field(0.0, description="when the job starts (its traffic, or its "
                             "ranks' first operations)")
    shared: bool = Field(False, description="the job's nodes may also belong to other jobs "
                         "(else any overlap is refused)")
    routing_mode: str | None = Field(
        None, description="routing mode of the job's rank-program messages (a name of the "
        "routing's modes, e.g. ADAPTIVE_3), as Cray's MPICH_GNI_ROUTING_MODE; default: the "
        "experiment's routing_mode")
    collective_modes: dict[str, str] | None = Field(
        None, description="routing mode by collective ({alltoall: ADAPTIVE_1}, as "
        "MPICH_GNI_A2A_ROUTING_MODE) of the job's messages; applies to a workload of kind "
        "collective (its op) or allreduce only (a skeleton's or a program file's collectives "
        "take routing_mode), an entry its workload does not run is refused; replaces the "
        "experiment's")
    class_: ClassName | None = Field(
        None, alias="class", description="traffic class of every packet of the job (a name "
        "of machine.qos's classes; Mechanism I)")
    class_by: ClassBy | None = Field(
        None, description="closed-loop jobs: class by the operation that sent each packet "
        "(Mechanism II)")

    @model_validator(mode="after")
    def _one_classification(self) -> Job:
        if self.class_ is not None and self.class_by is not None:
            raise ValueError("give 'class' or 'class_by', not both")
        return self


class Experiment(DocumentModel):
    """One experiment: possibly several points when ``sweep`` is given."""

    schema_version: SchemaVersion = 1
    name: str | None = None
    description: str | None = None
    machine: MachineRef = Field(description="a machine file (relative to this file) or inline")
    routing: AlgorithmSpec = Field(default_factory=lambda: AlgorithmSpec(kind="minimal", params={}))
    workload: ComponentSpec = Field(
        default_factory=lambda: ComponentSpec(kind="synthetic", params={}),
        description="{kind: ..., <params>}",
    )
    background: ComponentSpec | None = Field(
        None,
        description="open-loop traffic ({kind: ..., <params>}, e.g. {kind: synthetic, load: 0.2}) "
        "beside a closed-loop workload (rank programs), generated over stop.warmup + "
        "stop.measure; the run still ends when the programs finish",
    )
    jobs: list[Job] | None = Field(
        None, min_length=1,
        description="jobs sharing the machine, each a workload on its own nodes (instead of "
        "workload and background)")
    classes: WorkloadClasses | None = Field(
        None, description="without jobs: the traffic class of workload's and background's "
        "packets (names of machine.qos's classes)")
    class_by: ClassBy | None = Field(
        None, description="without jobs: a closed-loop workload's packets classed by the "
        "operation that sent them (collective or point_to_point)")
    slowdown: bool = Field(
        False, description="also run each closed-loop job alone on the same nodes (same seed) "
        "and report its completion with the others over alone")
    routing_mode: str | None = Field(
        None, description="routing mode of every rank-program message (a name of the "
        "routing's modes, e.g. ADAPTIVE_3), as Cray's MPICH_GNI_ROUTING_MODE; a send's own "
        "mode and collective_modes come first; default: the routing's configured mode")
    collective_modes: dict[str, str] = Field(
        default_factory=dict, description="routing mode by collective ({alltoall: "
        "ADAPTIVE_1}: MPICH_GNI_A2A_ROUTING_MODE), a default for every job without its own; "
        "applies to workloads of kind collective (its op) or allreduce only (a skeleton's or "
        "a program file's collectives take routing_mode); an entry for a collective no such "
        "workload runs is refused (unless the sweep varies the workloads: a default for the "
        "points that run it)")
    routing_controller: ComponentSpec | None = Field(
        None, description="{kind: ..., <params>}: a routing controller choosing each "
        "rank-program message's routing mode at its send, in the loop (e.g. app_aware, "
        "by_size)")
    engine: ComponentSpec = Field(default_factory=lambda: ComponentSpec(kind="native", params={}))
    seed: int = Field(1, ge=0)
    stop: StopRule = Field(default_factory=StopRule)
    sweep: dict[str, Annotated[list[Any], Field(min_length=1)]] = Field(
        default_factory=dict,
        description="dotted path -> values; one run per combination, "
        "e.g. {workload.load: [0.1, 0.5]}",
    )
    outputs: Outputs = Field(default_factory=Outputs)

    @model_validator(mode="after")
    def _classes_form(self) -> Experiment:
        if self.jobs is not None:
            given = "classes" if self.classes is not None else \
                "class_by" if self.class_by is not None else None
            if given:
                raise ValueError(f"{given!r} is for the one-workload form; with jobs, give "
                                 "each job its 'class' or 'class_by'")
        if self.class_by is not None and self.classes is not None \
                and self.classes.workload is not None:
            raise ValueError("give classes.workload or class_by, not both")
        return self

    def class_fields(self, field: str) -> tuple[str | None, ClassBy | None, str]:
        """The classification of the job at ``field`` (``jobs[1]``, ``workload`` or
        ``background``): its class name, its class_by, and where they are in the file."""
        if field.startswith("jobs["):
            assert self.jobs is not None
            job = self.jobs[int(field[5:-1])]
            return job.class_, job.class_by, field
        if field == "background":
            cls = self.classes.background if self.classes is not None else None
            return cls, None, "classes.background"
        cls = self.classes.workload if self.classes is not None else None
        where = "class_by" if self.class_by is not None else "classes.workload"
        return cls, self.class_by, where
