"""Validation suites (``federation crossval SUITE.yaml``) and their results document.

A suite runs every *scenario* (one experiment, from a file or inline) on every *engine* and
compares, per *metric*, each engine's figure with the reference engine's (the first one unless
``reference`` says otherwise), within a tolerance stated per metric::

    schema_version: 1
    name: native-vs-simgrid
    engines: [native, simgrid]
    scenarios:
      - name: zero-load-small
        experiment: experiments/zero-load-small.yaml     # relative to the suite file
        metrics:
          - metric: message_completion_ns
            message: 0
            tolerance: {absolute: 40}                    # in the metric's unit (ns)
            why: store-and-forward serialises the packet at every hop

Suites are documents like machine and experiment files: strict (unknown keys, ``"4"`` for 4 and
``true`` for 1 are refused), versioned, and every error names the suite file and field.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from federation.models.base import DocumentModel, FederationModel, SchemaVersion

#: metric name -> (unit, what it measures); see :mod:`federation.crossval.metrics`
METRICS: dict[str, tuple[str, str]] = {
    "message_completion_ns": (
        "ns", "completion of one message (`message: i`): its last byte delivered minus its "
        "creation"),
    "mean_completion_ns": ("ns", "mean completion of the measured messages"),
    "makespan_ns": ("ns", "last completion minus first creation, over all messages"),
    "throughput_gb_s": ("GB/s", "bytes of all messages / makespan, in 10^9 bytes per second"),
    "latency_mean_ns": ("ns", "mean creation-to-delivery latency of the measured packets"),
    "accepted_load": ("", "bytes delivered in the window / (window x NIC bandwidth x nodes)"),
    "program_completion_ns": ("ns", "rank programs: the last rank's finish"),
    "class_latency_mean_ns": (
        "ns", "mean latency of one traffic class's measured packets (`class: name`; "
        "machine.qos with several classes)"),
    "class_packets": ("", "measured packets of one traffic class (`class: name`)"),
}
MetricName = Literal["message_completion_ns", "mean_completion_ns", "makespan_ns",
                     "throughput_gb_s", "latency_mean_ns", "accepted_load",
                     "program_completion_ns", "class_latency_mean_ns", "class_packets"]
#: the metrics that name a traffic class
CLASS_METRICS = ("class_latency_mean_ns", "class_packets")
#: what a suite file may name a scenario (it becomes part of test ids and file names)
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"


#: relative slack of :meth:`Tolerance.allows` (float rounding of the figures, not a tolerance)
ROUNDING = 1e-12


class Tolerance(DocumentModel):
    """How far an engine's figure may be from the reference's: exactly one of ``relative``
    (a fraction of the reference's figure) or ``absolute`` (in the metric's unit)."""

    relative: float | None = Field(None, ge=0, description="|value - reference| / |reference|")
    absolute: float | None = Field(None, ge=0, description="|value - reference|, metric's unit")

    @model_validator(mode="after")
    def _exactly_one(self) -> Tolerance:
        if (self.relative is None) == (self.absolute is None):
            raise ValueError("give exactly one of 'relative' or 'absolute'")
        return self

    def allows(self, value: float, reference: float) -> bool:
        """Whether ``value`` is within the tolerance of ``reference``.  The figures are
        picoseconds turned into the metric's unit, so a difference equal to the bound can come
        out a rounding step above it (774.522 - 763.17 = 11.35200000000009 ns): a slack of a
        trillionth of the figures' size, far below any figure's meaning, counts it as equal."""
        diff = abs(value - reference)
        slack = ROUNDING * max(abs(value), abs(reference))
        if self.absolute is not None:
            return diff <= self.absolute + slack
        assert self.relative is not None
        return diff <= self.relative * abs(reference) + slack

    def describe(self, unit: str) -> str:
        if self.absolute is not None:
            return f"±{self.absolute:g} {unit}".rstrip()
        assert self.relative is not None
        return f"±{100 * self.relative:g}%"


class MetricSpec(DocumentModel):
    """One figure compared between engines, with its tolerance and the reason for it."""

    metric: MetricName
    message: int | None = Field(None, ge=0, description="message index (message_completion_ns)")
    traffic_class: str | None = Field(None, alias="class", description="traffic class name "
                                      "(class_latency_mean_ns, class_packets)")
    tolerance: Tolerance
    why: str | None = Field(None, description="why this tolerance: where the engines differ")

    @model_validator(mode="after")
    def _message_only_where_meant(self) -> MetricSpec:
        if self.metric == "message_completion_ns" and self.message is None:
            raise ValueError("message_completion_ns needs 'message: <index>'")
        if self.metric != "message_completion_ns" and self.message is not None:
            raise ValueError(f"'message' applies to message_completion_ns only, not "
                             f"{self.metric}")
        if (self.metric in CLASS_METRICS) != (self.traffic_class is not None):
            raise ValueError(f"{self.metric} needs 'class: <name>'" if self.metric in
                             CLASS_METRICS else f"'class' applies to {', '.join(CLASS_METRICS)} "
                             f"only, not {self.metric}")
        return self

    @property
    def label(self) -> str:
        if self.traffic_class is not None:
            return f"{self.metric}[{self.traffic_class}]"
        return self.metric if self.message is None else f"{self.metric}[{self.message}]"

    @property
    def unit(self) -> str:
        return METRICS[self.metric][0]


class Scenario(DocumentModel):
    """One experiment (a single point: no sweep) and the metrics compared on it."""

    name: str = Field(pattern=NAME_PATTERN)
    description: str | None = None
    experiment: str | dict[str, Any] = Field(
        description="an experiment file (relative to the suite file) or an inline experiment "
        "(whose relative paths, machine: and file parameters such as workload.path, are "
        "relative to the suite file too)")
    metrics: list[MetricSpec] = Field(min_length=1)

    @field_validator("metrics")
    @classmethod
    def _one_check_per_figure(cls, v: list[MetricSpec]) -> list[MetricSpec]:
        """A figure listed twice would be checked twice, counted as two passes, perhaps with
        two tolerances of which one would fail."""
        seen: dict[str, int] = {}
        for i, m in enumerate(v):
            if m.label in seen:
                raise ValueError(f"metrics[{i}] compares {m.label} again (metrics[{seen[m.label]}] "
                                 "does): give each figure once, with one tolerance")
            seen[m.label] = i
        return v


class Suite(DocumentModel):
    """A validation suite: scenarios x engines x metrics."""

    schema_version: SchemaVersion = 1
    name: str = Field(pattern=NAME_PATTERN)
    description: str | None = None
    engines: list[str] = Field(min_length=2, description="engine kinds; the first is the "
                               "reference unless 'reference' is given")
    reference: str | None = Field(None, description="the engine the others are compared with")
    scenarios: list[Scenario] = Field(min_length=1)

    @field_validator("engines")
    @classmethod
    def _distinct(cls, v: list[str]) -> list[str]:
        if len(set(v)) != len(v):
            raise ValueError("an engine is listed twice")
        return v

    @field_validator("reference")
    @classmethod
    def _one_of_the_engines(cls, v: str | None, info: ValidationInfo) -> str | None:
        engines = info.data.get("engines")
        if v is not None and engines is not None and v not in engines:
            raise ValueError(f"{v!r} is not one of the engines {engines}")
        return v

    @field_validator("scenarios")
    @classmethod
    def _distinct_names(cls, v: list[Scenario]) -> list[Scenario]:
        names = [s.name for s in v]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"scenario names must be distinct: {', '.join(dup)} repeated")
        return v

    @property
    def reference_engine(self) -> str:
        return self.reference or self.engines[0]

    @property
    def compared_engines(self) -> list[str]:
        return [e for e in self.engines if e != self.reference_engine]


# --------------------------------------------------------------------------- results

Status = Literal["pass", "fail", "not run", "error"]


class EngineRun(FederationModel):
    """One scenario on one engine: whether it ran, and the engine's library version."""

    scenario: str
    engine: str
    status: Literal["ran", "not run", "error"]
    program: str | None = Field(None, description="external library and version, if any")
    reason: str | None = Field(None, description="why it did not run, or the error")
    figures: dict[str, float | None] = Field(
        default_factory=dict, description="metric label -> figure")


class Check(FederationModel):
    """One metric of one scenario: one engine against the reference engine."""

    scenario: str
    metric: str = Field(description="metric label, e.g. message_completion_ns[0]")
    unit: str
    engine: str
    reference_engine: str
    value: float | None
    reference: float | None
    difference: float | None = Field(description="value - reference")
    relative_difference: float | None = Field(description="(value - reference) / |reference|")
    tolerance: str
    status: Status
    reason: str | None = None
    why: str | None = Field(None, description="the suite's reason for the tolerance")


class SuiteResult(FederationModel):
    """What ``federation crossval`` writes (``--out``): deterministic, no wall-clock times."""

    schema_name: Literal["hpc-federation.crossval"] = "hpc-federation.crossval"
    schema_version: int = 1
    federation_version: str
    suite: str
    source: str = Field(description="the suite file, as an absolute path")
    engines: list[str]
    reference_engine: str
    status: Literal["passed", "failed"]
    counts: dict[str, int] = Field(description="checks per status")
    runs: list[EngineRun]
    checks: list[Check]
