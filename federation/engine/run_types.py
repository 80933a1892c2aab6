"""What the native engine takes and gives: the prepared run (:class:`NativeRun`, with its
:class:`LinkFigures`) and the raw result (:class:`RawResult`, with its
:class:`PortCounters`).  Plain dataclasses, apart from the driver (:mod:`.native`), so that the
driver's setup and the pipeline can name them without importing the loop's machinery."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from federation.engine.link_series import LinkSeries
from federation.engine.packet_stats import PacketStats
from federation.engine.program_arrays import ProgramTraffic
from federation.engine.state import Prog
from federation.engine.traffic import (
    OpenTraffic,
    PacketChunk,
    Packets,
    all_packets,
    packet_chunks,
    whole_chunk,
)
from federation.models.machine import RouterConfig
from federation.network import Network
from federation.plugin.components import RouteTables, RoutingProgram


@dataclass
class LinkFigures:
    """Resolved per-class figures (bytes/s, seconds, bytes)."""

    bandwidth: float
    latency: float
    buffer: float


@dataclass
class NativeRun:
    """What the runner hands an engine for one point (see
    :func:`federation.pipeline.point.prepare`):
    the network and its figures, the routing, the arbiter, the rank programs and the
    open-loop traffic.  The open-loop packets are made on the engine side
    (:mod:`federation.engine.traffic`) when :attr:`packets` is first read, and the loop's
    random stream is drawn after them from the same routing stream (:attr:`seed_stream`)."""

    network: Network
    links: dict[str, LinkFigures]
    nic_bandwidth: float
    router_delay_s: float
    n_vcs: int
    tables: RouteTables
    #: the open-loop packets when given whole (tests, other drivers); else made from
    #: :attr:`traffic` a chunk at a time
    given_packets: Packets | None = None
    #: measurement window ``[start, end)`` in ps; the per-port ``*_window`` counters cover it.
    #: ``None``: the whole run, ``[0, end of the run]``
    window: tuple[int, int] | None = None
    #: ``router.switching``: virtual cut-through instead of store-and-forward
    cut_through: bool = False
    #: a compiled routing (``None``: follow ``tables`` with the built-in table routing)
    program: RoutingProgram | None = None
    #: ``(arbitrate function, its state tuple)``; ``None``: oldest first
    arbiter: tuple[Any, tuple] | None = None
    #: who the routing and arbiter are, for messages ("routing 'x' (plugin y)")
    owner: str = ""
    #: seed of the loop's own random stream (routings and arbiters draw from it); ``None``:
    #: drawn from ``seed_rng`` once the packets are made
    given_seed: int | None = 0x9E3779B97F4A7C15 & 0x7FFFFFFFFFFFFFFF
    #: hops after which a packet is deemed in a routing loop (``None``: 4 x routers + 8)
    max_hops: int | None = None
    #: traffic classes (the QoS policy's); per-port bytes are counted per class
    n_classes: int = 1
    #: rank programs (closed loop); their packets are born in the loop
    programs: ProgramTraffic | None = None
    #: open-loop messages, packetized by the engine side (:func:`packetize_traffic`)
    traffic: OpenTraffic | None = None
    #: the routing stream the loop's seed is drawn from, before the packets' draws
    seed_rng: np.random.Generator | None = None
    #: keep every packet's and message's row for the tables (``outputs.packets`` /
    #: ``outputs.messages``); else only sums and percentiles
    keep_packets: bool = True
    #: and the rank programs' packets' rows too (``outputs.packets``: the messages table needs
    #: none of them); without it the loop only sums them (``Prog.pstat``)
    keep_program_packets: bool = True
    #: packet rows the engine may hold at once (the memory limit): a run that queues more
    #: (a saturated network's NIC backlog) stops with a message instead of swapping
    max_rows: int = 1 << 34
    #: the machine's ``router`` block (its ``model``: ``booksim_iq`` clocks the routers, see
    #: :mod:`federation.engine.iq`); ``None``: the default router model
    router: RouterConfig | None = None
    #: a routing controller's ``decide`` (its state is the programs' ``Prog.ctl``); ``None``
    controller: Any = None
    #: bytes per flit of the NIC counters (``nic.flit``): request flits = ceil(size / flit)
    nic_flit: int = 16
    #: sample the per-port per-class byte counters every this many ps (``outputs.link_series``;
    #: ``None``: no samples).  The loop stops at each sample's time as at the window's edges,
    #: which changes no figure
    sample_ps: int | None = None
    #: the run's length the loader counted the samples over (``stop.warmup + stop.measure``
    #: of an open-loop run: the drain after it is sampled while the limit allows, then as one
    #: interval); ``None``: not known before the run, which the limit refuses
    #: (:class:`~federation.engine.link_series.Sampler`)
    sample_known_ps: int | None = None

    @property
    def iq(self) -> bool:
        return self.router is not None and self.router.model == "booksim_iq"

    def chunks(self) -> Iterator[PacketChunk]:
        """The open-loop packets, chunk by chunk (drawn on the engine side from
        :attr:`traffic`, or :attr:`given_packets` as one chunk)."""
        if self.given_packets is not None:
            if self.given_packets.count:
                yield whole_chunk(self.given_packets)
        elif self.traffic is not None:
            yield from packet_chunks(self.traffic)

    @property
    def packets(self) -> Packets:
        """Every open-loop packet at once, for engines that take a run whole (small runs):
        the native engine never asks for it."""
        if self.given_packets is None:
            self.given_packets = all_packets(self.chunks())
        return self.given_packets

    @property
    def largest_packet(self) -> int:
        """The largest packet the run can have (the figures' checks need it up front)."""
        if self.given_packets is not None:
            return int(self.given_packets.size.max()) if self.given_packets.count else 0
        return int(self.traffic.packet_size) if self.traffic is not None else 0

    @property
    def seed_stream(self) -> int:
        """Seed of the loop's random stream: drawn first from the routing stream (the
        packets' draws follow, chunk by chunk, as the run needs them)."""
        if self.given_seed is None:
            rng = self.seed_rng if self.seed_rng is not None else np.random.default_rng(0)
            self.given_seed = int(rng.integers(1, 2**62))
        return self.given_seed


@dataclass
class PortCounters:
    """Per-port counters over a span of time (index = global port id).

    ``busy`` is the time the port spent serialising within the span (a transmission that
    straddles an edge counts only its part inside); ``bytes`` and ``packets`` count the
    transmissions that started in it; ``stall`` the time requests waited for credit in it.
    """

    busy: np.ndarray
    bytes: np.ndarray
    packets: np.ndarray
    stall: np.ndarray
    #: the per-NIC counters at the same reading (int64[N, api.NC_COLS]; ``None``: an engine
    #: that keeps none)
    nics: np.ndarray | None = None

    def __sub__(self, other: PortCounters) -> PortCounters:
        nics = (self.nics - other.nics if self.nics is not None and other.nics is not None
                else None)
        return PortCounters(self.busy - other.busy, self.bytes - other.bytes,
                            self.packets - other.packets, self.stall - other.stall, nics)


@dataclass
class RawResult:
    """What an engine hands back for one point: per-port counters, the open-loop packets'
    figures (:class:`~federation.engine.packet_stats.PacketStats`) and the rank programs' state."""

    packets: PacketStats
    port_bytes: np.ndarray
    port_pkts: np.ndarray
    port_busy: np.ndarray
    port_stall: np.ndarray
    port_peak: np.ndarray
    end_ps: int
    events: int
    packet_hops: int
    wall_s: float
    #: the span ``window_ports`` covers: the job's window, or ``(0, end_ps)`` without one
    window: tuple[int, int]
    #: the per-port counters within ``window`` (the fields above are whole-run totals)
    window_ports: PortCounters
    #: whole-run bytes per port and traffic class (ports x classes); ``None``: not counted
    port_class_bytes: np.ndarray | None = None
    #: ps each traffic class spent inactive at each port (ports x classes, int64) under a
    #: ``bandwidth_caps`` QoS policy (:mod:`federation.engine.qos`): over its cap on an
    #: oversubscribed port until its window reset.  NIC ports' rows are zero unless the
    #: policy applies at injection (:mod:`federation.engine.nic_qos`); ``None``: no such policy
    port_class_inactive: np.ndarray | None = None
    #: the rank programs' state at the end (``None``: an open-loop run)
    programs: Prog | None = None
    #: processor time of the loop (``wall_s`` counts time the process waited for a core)
    cpu_s: float = 0.0
    #: seconds outside the loop during the run: generating and loading chunks of open-loop
    #: packets, and reducing their delivery records (``wall_s`` is the loop's alone)
    feed_s: float = 0.0
    #: packet rows the run allocated: the most packets in flight at once (rounded up to a
    #: power of two), not the run's packet count
    peak_rows: int = 0
    #: the most open-loop packets waiting at NICs seen between two slices of the loop
    #: (about one chunk, plus a saturated network's backlog)
    peak_waiting: int = 0
    #: whole-run per-NIC counters (int64[N, api.NC_COLS], ``api.NC_*`` columns; ``None``: an
    #: engine that keeps none); ``window_ports.nics`` holds them within ``window``
    nic_ctr: np.ndarray | None = None
    #: ``NativeRun.sample_ps``: the bytes each port sent per class in each interval, sparse
    #: (interval end and start ps, port, class, bytes), rows with bytes > 0 only; ``None``:
    #: not sampled
    link_series: LinkSeries | None = None

    def column(self, name: str) -> np.ndarray:
        """One column of the packets table (by packet number), when the run kept it
        (``NativeRun.keep_packets``)."""
        if self.packets.packets is None:
            raise ValueError("this run kept no per-packet rows (NativeRun.keep_packets)")
        return self.packets.packets[name]

    # per-packet arrays by packet number, from the kept table (tests and small runs)
    pkt_inject = property(lambda self: self.column("injected_ps"))
    pkt_deliver = property(lambda self: self.column("delivered_ps"))
    pkt_hops = property(lambda self: self.column("hops"))
    pkt_minimal = property(lambda self: self.column("minimal").astype(np.int8))
    pkt_via = property(lambda self: self.column("via_group"))
    pkt_created = property(lambda self: self.column("created_ps"))
