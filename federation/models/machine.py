"""Machine files: topology, link classes, routers, packets and NICs.

Everything but ``topology`` has a documented default, so ``topology: {kind: dragonfly, p: 2,
a: 4, h: 2}`` alone is a complete machine.  Defaults follow the CODES dragonfly model (Mubarak et
al., TPDS 2015): 5.25 GiB/s links, 8 KiB of buffer per VC, 512-byte packets, 50 ns router delay,
3 VCs.  A topology plugin may suggest other figures per link class (e.g. 4.7 GiB/s and 16 KiB on
dragonfly global links); the machine file overrides any of them under ``links:``.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, PrivateAttr, ValidationInfo, model_serializer, model_validator

from federation.models.base import DocumentModel, FieldValueError, SchemaVersion
from federation.models.limits import CLOCK_LIMIT, TIME_LIMIT_PS
from federation.models.units import (
    PS_PER_S,
    Bandwidth,
    BufferSize,
    ByteCount,
    PacketSize,
    Size,
    Time,
    format_time,
)

DEFAULT_BANDWIDTH = 5.25 * 2**30  # bytes/s (CODES, Edison-like)
DEFAULT_LATENCY = 10e-9  # s
DEFAULT_BUFFER = 8 * 2**10  # bytes per VC (CODES case studies)


class ComponentSpec(DocumentModel):
    """``{kind: <name>, <params>...}``: which plugin component to use and its parameters.

    The parameters are validated later by the ``Params`` model of the plugin that provides
    ``kind`` (see :func:`federation.pipeline.load.resolve_component`).  ``params`` holds the raw
    mapping until then and the plugin's validated model afterwards.
    """

    kind: str
    params: Any = Field(default_factory=dict)

    #: the key that names the component in files; routing uses ``algorithm``
    component_key: ClassVar[str] = "kind"

    #: the folder of the file the spec was read from (the validation context's ``base_dir``,
    #: as for a ``DocumentPath``); ``None``: made in code, or read from ``--set``
    _base_dir: str | None = PrivateAttr(None)

    @model_validator(mode="after")
    def _anchor(self, info: ValidationInfo) -> ComponentSpec:
        """Keep the folder of the spec's file: its raw parameters are validated later, a
        nested component's (:func:`~federation.plugin.registry.resolve_nested`) outside that
        file's validation, and their relative paths are relative to that file."""
        base = (info.context or {}).get("base_dir")
        if base is not None:
            self._base_dir = str(base)
        return self

    @property
    def base_dir(self) -> str | None:
        """The folder this spec's relative paths are resolved against (see ``_base_dir``)."""
        return self._base_dir

    @model_validator(mode="before")
    @classmethod
    def _split(cls, data: Any) -> Any:
        key = cls.component_key
        if isinstance(data, str):
            return {"kind": data, "params": {}}
        if isinstance(data, dict) and "params" not in data:
            rest = dict(data)
            if key not in rest:
                raise ValueError(f"missing '{key}' (the component to use)")
            kind = rest.pop(key)
            if not isinstance(kind, str):
                raise ValueError(f"'{key}' must be a name, got {kind!r}")
            return {"kind": kind, "params": rest}
        return data

    @model_serializer(mode="wrap")
    def _flatten(self, handler: Any) -> dict[str, Any]:
        key = self.component_key
        params = self.params
        if hasattr(params, "model_dump"):
            params = params.model_dump(mode="json")
        return {key: self.kind, **(params or {})}


class AlgorithmSpec(ComponentSpec):
    """``{algorithm: <name>, <params>...}`` (routing)."""

    component_key: ClassVar[str] = "algorithm"


class NestedSpec(ComponentSpec):
    """A component given inside another's parameters (``synthetic``'s ``pattern`` and
    ``injection``): a name, or ``{kind: ..., <params>}``.  Written back as the bare name while
    its parameters are all defaults, so a file that names it keeps its shape."""

    @model_serializer(mode="wrap")
    def _flatten(self, handler: Any) -> Any:
        params = self.params
        if hasattr(params, "model_dump"):
            dumped = params.model_dump(mode="json")
            try:
                default = type(params)().model_dump(mode="json")
            except ValueError:  # a required parameter: never all defaults
                default = None
            params = None if dumped == default else dumped
        return {"kind": self.kind, **params} if params else self.kind


class LinkClass(DocumentModel):
    """Figures of one link class; unset fields take the topology's or the global default."""

    bandwidth: Bandwidth | None = Field(
        None, description="per direction; default 5.25GiB/s; at most 1e12 B/s (1 TB/s: the "
        "engine's clock counts whole picoseconds, and a packet may be one byte)")
    latency: Time | None = Field(None, description="propagation latency; default 10ns")
    buffer: BufferSize | None = Field(
        None, description="input buffer per VC at the receiving port; default 8KiB; at most "
        "2**60 B (the engine's credit counters)"
    )


class RouterConfig(DocumentModel):
    delay: Time = Field(
        50e-9, description="pipeline delay from arrival to switch request (CODES: 50ns)")
    vcs: int = Field(3, ge=1, le=64, description="virtual channels per port (CODES: 3)")
    injection_vc: Literal["spread", "zero", "random"] = Field(
        "spread", description="the VC a NIC injects a packet into at its router: `spread` "
        "(each NIC's packets take VCs 0, 1, .. in turn, like BookSim's round-robin injection; "
        "the default), `zero` (always VC 0, as CODES and SST merlin with one traffic class), "
        "`random` (drawn per packet from the run's seeded stream). With `zero` a saturated "
        "source router holds only one injection queue per node, which hides congestion from "
        "adaptive routing")
    arbiter: ComponentSpec = Field(
        default_factory=lambda: ComponentSpec(kind="oldest_first", params={}),
        description="which waiting packet an idle output port sends next: `oldest_first` "
        "(the default), `round_robin` over input VCs, `strict_priority` by traffic class, or "
        "a plugin's")
    switching: Literal["store_and_forward", "cut_through"] = Field(
        "store_and_forward", description="`store_and_forward`: a packet is routed once its "
        "tail has arrived; `cut_through` (virtual cut-through): once its head has arrived, so "
        "zero-load latency pays the serialisation once instead of once per hop (credit for the "
        "whole packet is still needed downstream)")
    model: Literal["default", "booksim_iq"] = Field(
        "default", description="the router model: `default` (each output port serves the "
        "oldest routed input-VC head with credit, `delay` after arrival) or `booksim_iq` "
        "(BookSim2's input-queued router, clocked: per internal step a separable input-first "
        "VC allocation and switch allocation with one iteration and round-robin arbiters, "
        "`speedup` internal steps per `cycle` into unbounded output queues, one packet per "
        "cycle per link, lookahead routing, credits back after `credit_delay`); "
        "docs/architecture.md compares them")
    cycle: Time | None = Field(
        None, description="booksim_iq: the router clock period; default: the time the fastest "
        "link takes to send one packet (BookSim: one flit per cycle)")
    speedup: float = Field(
        2.0, ge=1.0, le=16.0, description="booksim_iq: internal speedup, allocation steps per "
        "cycle (BookSim's internal_speedup; its dragonfly example: 2.0)")
    credit_delay: Time = Field(
        0.0, description="time a returned credit takes, after crossing its cable, before the "
        "upstream router (or NIC) can use it: the credit count and the far-end congestion "
        "routings read from it (UGAL, PAR, aries) lag by this much, so they see phantom "
        "congestion (default router: 0, credits usable on arrival; booksim_iq: BookSim's "
        "credit_delay, in cycles there; its dragonfly example: 2)")

    @model_validator(mode="after")
    def _model_fields(self) -> RouterConfig:
        if self.model == "default":
            if self.credit_delay < 0:
                raise ValueError("router.credit_delay must not be negative")
            given = [f for f, v in (("cycle", self.cycle is not None),
                                    ("speedup", self.speedup != 2.0)) if v]
            if given:
                raise ValueError(f"{', '.join(given)} apply to router.model: booksim_iq "
                                 "only (the default router has no clock)")
            return self
        if "delay" in self.model_fields_set:
            raise ValueError("router.delay applies to the default router model; the "
                             "booksim_iq router's delay is its pipeline (one cycle at zero "
                             "load with speedup 2): set router.cycle")
        if self.switching != "store_and_forward":
            raise ValueError("booksim_iq forwards whole packets through its allocators; "
                             "switching: cut_through applies to the default router model")
        if self.arbiter.kind != "oldest_first":
            raise ValueError("booksim_iq allocates with BookSim's round-robin separable "
                             "allocators; router.arbiter applies to the default router model")
        if self.cycle is not None and not 1 <= self.cycle * PS_PER_S < TIME_LIMIT_PS:
            # the engine's own range (it clocks whole picoseconds): a cycle below half a
            # picosecond was 0 while the file was read (a ZeroDivisionError), one below 1 ps
            # or past the clock refused only when the run started
            raise FieldValueError("cycle", f"{format_time(self.cycle)} is outside 1 ps .. "
                                  f"{CLOCK_LIMIT}")
        if self.credit_delay < 0:
            raise ValueError("router.credit_delay must not be negative")
        return self

    @model_serializer(mode="wrap")
    def _dump(self, handler: Any) -> dict[str, Any]:
        """The fields of the model in use only (a resolved document of a default-model run
        reads as before the models existed, and either runs again as it is)."""
        data = handler(self)
        if self.model == "default":
            for key in ("model", "cycle", "speedup"):
                data.pop(key, None)
            if not self.credit_delay:
                data.pop("credit_delay", None)
        else:
            data.pop("delay", None)
        return data


class NicConfig(DocumentModel):
    """The node's network interface, and the MPI-style protocol figures rank programs use."""

    bandwidth: Bandwidth | None = Field(
        None, description="injection bandwidth; default: the terminal link bandwidth; at most "
        "1e12 B/s (1 TB/s), as a link's"
    )
    eager_threshold: ByteCount = Field(
        65536, description="rank programs: messages up to this size go eagerly (at once; an "
        "early arrival waits for its receive), larger ones by rendezvous (a request packet "
        "first, a reply once the receive is posted, then the data). Default 64 KiB, the "
        "order of MPI libraries' eager limits and of LogGOPSim's S")
    control_bytes: PacketSize | None = Field(
        None, description="rank programs: size of a rendezvous request or reply packet; "
        "default: 64 B, or packet_size if smaller")
    send_overhead: Time = Field(
        0.0, description="rank programs: LogGP o at the sender, from a send's start to its "
        "message reaching the NIC")
    recv_overhead: Time = Field(
        0.0, description="rank programs: LogGP o at the receiver, from a message's arrival "
        "(receive posted) to the receive's finish")
    flit: PacketSize = Field(
        16, description="bytes per flit of the NIC counters (request flits = ceil(packet "
        "size / flit) per packet): 16 B, an Aries payload flit (a 64 B request packet is 4 "
        "payload flits and a header flit; our packet size includes its header). Counting only")


class Machine(DocumentModel):
    """A machine: topology plus link, router, packet and NIC figures."""

    schema_version: SchemaVersion = 1
    name: str | None = None
    description: str | None = None
    topology: ComponentSpec
    links: dict[str, LinkClass] = Field(
        default_factory=dict, description="per link class (terminal, local, global, ...)"
    )
    router: RouterConfig = Field(default_factory=RouterConfig)
    nic: NicConfig = Field(default_factory=NicConfig)
    packet_size: PacketSize = Field(
        512, description="bytes per packet (CODES: 512B); whole bytes from 1 to 2**31 - 1")
    qos: ComponentSpec = Field(default_factory=lambda: ComponentSpec(kind="none", params={}))

    @model_validator(mode="after")
    def _packet_fits(self) -> Machine:
        for name, link in self.links.items():
            if link.buffer is not None and link.buffer < self.packet_size:
                raise FieldValueError(
                    f"links.{name}.buffer", f"{link.buffer:g} B is smaller than packet_size "
                    f"({self.packet_size:g} B): a packet could never be forwarded")
        cb = self.nic.control_bytes
        if cb is not None and cb > self.packet_size:
            raise FieldValueError("nic.control_bytes", f"{cb:g} B is larger than packet_size "
                                  f"({self.packet_size:g} B): a control packet must fit a "
                                  "buffer")
        return self

    def control_packet_bytes(self) -> int:
        """Size of a rendezvous request or reply packet (``nic.control_bytes``)."""
        if self.nic.control_bytes is not None:
            return int(self.nic.control_bytes)
        return int(min(64, self.packet_size))


__all__ = [
    "AlgorithmSpec",
    "ComponentSpec",
    "LinkClass",
    "Machine",
    "NicConfig",
    "RouterConfig",
    "Size",
]
