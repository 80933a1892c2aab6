"""Experiment files: a machine, routing, workload (and background), engine, seed, stop rule,
sweep and outputs."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag, model_validator

from federation.models.base import DocumentModel, SchemaVersion
from federation.models.machine import AlgorithmSpec, ComponentSpec, Machine
from federation.models.units import PositiveTime, Time


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


class Outputs(DocumentModel):
    """Which result files a run writes (into ``--out`` or ``dir``)."""

    dir: str | None = Field(
        None, description="output directory, relative to this file (the CLI's --out wins)")
    format: Literal["parquet", "csv"] = "parquet"
    packets: bool = Field(True, description="write the per-packet table")
    ports: bool = Field(True, description="write the per-port table")
    messages: bool = Field(True, description="write the per-message completion table")


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
    engine: ComponentSpec = Field(default_factory=lambda: ComponentSpec(kind="native", params={}))
    seed: int = Field(1, ge=0)
    stop: StopRule = Field(default_factory=StopRule)
    sweep: dict[str, Annotated[list[Any], Field(min_length=1)]] = Field(
        default_factory=dict,
        description="dotted path -> values; one run per combination, "
        "e.g. {workload.load: [0.1, 0.5]}",
    )
    outputs: Outputs = Field(default_factory=Outputs)
