"""A run's per-packet figures, reduced as the packets are delivered.

The native engine hands its driver one record per delivered open-loop packet
(:mod:`federation.engine.feed`); a :class:`PacketSink` folds them into sums, per-message
completion and exact latency percentiles, so that a run with 10^8 packets needs memory for
what is in flight, not for every packet.  Rank programs' packets leave records only when the
run keeps its packets table, and those only become rows (the loop sums their figures itself).
Percentiles stay exact: the measured packets' latencies go to an in-memory buffer that
spills to a temporary file past :data:`SPILL_VALUES`, and :func:`order_statistics` finds the
k-th smallest value in a few histogram passes over it (each pass narrows the value range
65,536-fold), so nothing is ever sorted whole.  The per-packet and per-message tables are
kept only when asked for (``keep``), and then on disk, in order, as the rows come
(:mod:`federation.results.spool`).
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from federation.engine.feed import (
    REC_CLASS,
    REC_COLS,
    REC_CREATED,
    REC_DELIVER,
    REC_DST,
    REC_FLOW,
    REC_HOPS,
    REC_ID,
    REC_INJECT,
    REC_MINIMAL,
    REC_MSG,
    REC_SIZE,
    REC_SRC,
    REC_VIA,
)
from federation.engine.traffic import PacketChunk, Packets, whole_chunk
from federation.results.spool import InOrder, Spool

#: measured latencies held in memory before they spill to a temporary file (8 B each: 0.5 MB
#: per store, two stores; BookSim's 1,056-node dragonfly measures 1.6 million packets, 25 MB
#: if held whole.  2 MB per store (2^18) was 3 MB of that scenario's 100 MB peak)
SPILL_VALUES = 1 << 16
_BINS = 1 << 16
_NEVER = np.iinfo(np.int64).max


class ValueStore:
    """int64 values appended in batches and read back in batches (memory, then a file)."""

    def __init__(self, spill_at: int = SPILL_VALUES) -> None:
        self.spill_at = spill_at
        self.parts: list[np.ndarray] = []
        self.held = 0
        self.count = 0
        self.min = _NEVER
        self.max = -_NEVER
        self._file: tempfile._TemporaryFileWrapper | None = None

    def add(self, x: np.ndarray) -> None:
        if not x.size:
            return
        x = np.ascontiguousarray(x, dtype=np.int64)
        self.count += x.size
        self.min = min(self.min, int(x.min()))
        self.max = max(self.max, int(x.max()))
        self.parts.append(x)
        self.held += x.size
        if self.held > self.spill_at:
            if self._file is None:
                self._file = tempfile.TemporaryFile(prefix="federation-latency-")
            for p in self.parts:
                p.tofile(self._file)
            self.parts, self.held = [], 0

    def batches(self, size: int = SPILL_VALUES) -> Iterator[np.ndarray]:
        if self._file is not None:
            self._file.flush()
            self._file.seek(0)
            while True:
                # read by Python, not np.fromfile: a stop signal landing inside fromfile's
                # file-object check came out as a TypeError (federation.results.spool)
                x = np.frombuffer(self._file.read(8 * size), dtype=np.int64)
                if not x.size:
                    break
                yield x
        yield from self.parts

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        self.parts = []


def order_statistics(store: ValueStore, ranks: list[int]) -> dict[int, int]:
    """The ``k``-th smallest stored value (0-based) for each ``k`` of ``ranks``, exactly.

    Each pass reads the values once and, per rank, counts them into 65,536 equal bins over
    the value range still in question; the bin holding the rank becomes the new range.
    Integer values converge to a single value in at most four passes.  Values must lie in
    ``[0, 2^62]`` (latencies in ps are below 2^43), so that no difference overflows.  Values
    that never spilled to the file are selected in memory at once (``np.partition``: the same
    values, a tenth of the time)."""
    if store._file is None and store.parts:
        x = np.concatenate(store.parts) if len(store.parts) > 1 else store.parts[0].copy()
        want = sorted(set(ranks))
        x.partition(want)
        return {k: int(x[k]) for k in want}
    state = {k: (store.min, store.max, 0) for k in set(ranks)}  # range [a, b], values below a
    while any(a < b for a, b, _ in state.values()):
        todo = [k for k, (a, b, _) in state.items() if a < b]
        # ranks whose range is the same share its histogram (all of them in the first pass)
        ranges = sorted({state[k][:2] for k in todo})
        width = {r: -(-(r[1] - r[0] + 1) // _BINS) for r in ranges}
        counts = {r: np.zeros(_BINS, dtype=np.int64) for r in ranges}
        for x in store.batches():
            for r in ranges:
                a, b = r
                sel = x if a <= store.min and b >= store.max else x[(x >= a) & (x <= b)]
                counts[r] += np.bincount((sel - a) // width[r], minlength=_BINS)[:_BINS]
        for k in todo:
            a, b, below = state[k]
            r = (a, b)
            cum = np.cumsum(counts[r])
            j = int(np.searchsorted(cum, k - below, side="right"))
            lo = a + j * width[r]
            state[k] = (lo, min(b, lo + width[r] - 1), below + (int(cum[j - 1]) if j else 0))
    return {k: a for k, (a, _, _) in state.items()}


def percentiles_ns(store: ValueStore, qs: tuple[float, ...]) -> list[float]:
    """NumPy's default (linear) percentiles of the stored picosecond values, in ns, exactly
    as ``np.percentile(values / 1e3, q)`` gives them."""
    n = store.count
    virtual = [(n - 1) * (float(q) / 100) for q in qs]
    lo = [min(int(math.floor(v)), n - 1) for v in virtual]
    ranks = lo + [min(i + 1, n - 1) for i in lo]
    vals = order_statistics(store, ranks)
    out = []
    for v, i in zip(virtual, lo, strict=True):
        a, b = vals[i] / 1e3, vals[min(i + 1, n - 1)] / 1e3
        t = v - i
        diff = b - a
        out.append(float(b - diff * (1 - t)) if t >= 0.5 else float(a + diff * t))
    return out


@dataclass
class Latency:
    """Mean, median, 99th percentile and maximum, ns (``None`` without packets)."""

    mean: float | None = None
    p50: float | None = None
    p99: float | None = None
    max: float | None = None


@dataclass
class PacketStats:
    """What a run's open-loop packets add up to (see :class:`PacketSink`)."""

    generated: int = 0
    generated_bytes: int = 0
    delivered: int = 0
    delivered_bytes: int = 0
    #: created in the measurement window and delivered
    measured: int = 0
    measured_bytes: int = 0
    #: delivered in the measurement window
    accepted_bytes: int = 0
    #: created in the measurement window, delivered or not (rank programs that finish end
    #: the run with open-loop packets in flight): the offered load's bytes
    offered_bytes: int = 0
    latency: Latency = field(default_factory=Latency)
    network_latency: Latency = field(default_factory=Latency)
    hops: int = 0  #: over measured packets
    nonminimal: int = 0  #: measured packets the routing marked non-minimal
    #: completion (last packet's delivery minus creation) of the messages created in the
    #: window whose packets were all delivered
    message_completion_ps: int = 0
    messages_measured: int = 0
    #: the packets table by packet number, spooled to disk (``keep``), else ``None``
    packets: Spool | None = None
    #: the open-loop messages' rows by message number, spooled likewise
    messages: Spool | None = None
    #: the rank programs' packets' rows in delivery order (``keep_programs``), else ``None``;
    #: their figures are not in the sums above (the loop sums them: ``Prog.pstat``)
    program_packets: Spool | None = None
    #: per traffic class (with several classes): the measured open-loop packets and the rank
    #: programs' packets of each class, by class number
    classes: dict[int, ClassStats] | None = None


@dataclass
class ClassStats:
    """One traffic class's measured packets (open-loop and rank programs')."""

    packets: int = 0
    bytes: int = 0
    latency: Latency = field(default_factory=Latency)


#: the open-loop messages' columns the sink keeps (:meth:`_Chunk.rows`; the messages table
#: is made from them)
MESSAGE_COLUMNS = ["message", "src", "dst", "size", "created_ps", "started_ps",
                   "completed_ps", "class"]


class Ledger(NamedTuple):
    """What the sink keeps of a chunk: its packets and bytes, and its messages' completion
    state (``None``: it has none), made without the sink (:func:`ledger`) so that a chunk's
    packets can be let go before it is loaded."""

    packets: int
    bytes: int
    messages: _Chunk | None


def ledger(c: PacketChunk, table: bool = True) -> Ledger:
    """The :class:`Ledger` of chunk ``c`` (``table``: with what the messages table needs)."""
    return Ledger(c.packets.count, int(c.packets.size.sum()),
                  _Chunk(c, table) if c.messages.count else None)


class _Chunk:
    """Completion state of one loaded chunk's messages: packets left, completion and creation
    times (the summary's message figures), and with ``table`` the rest of the messages
    table's columns (without it a chunk's ledger holds 3 arrays, not 8: on BookSim's p=4
    scenario, two or three ledgers live at once, 3-5 MB)."""

    def __init__(self, c: PacketChunk, table: bool = True) -> None:
        m = c.messages
        self.first = c.first_message
        self.left = c.npk  # the chunk's own counts (nothing else reads them): no copy
        self.time = m.time_ps
        self.done = np.full(m.count, -1, dtype=np.int64)
        self.table = table
        if not table:
            return
        self.src, self.dst, self.size = m.src, m.dst, m.size
        self.started = np.full(m.count, _NEVER, dtype=np.int64)
        self.cls = np.zeros(m.count, dtype=np.int16)  # the traffic class of its packets
        if c.packets.cls is not None and c.packets.count:
            self.cls[c.packets.msg] = c.packets.cls

    def rows(self, i: np.ndarray, done: np.ndarray) -> dict[str, np.ndarray]:
        """Rows ``i`` of the open-loop messages' table (``done``: completion, -1 none)."""
        return {
            "message": self.first + i,
            "src": self.src[i].astype(np.int32), "dst": self.dst[i].astype(np.int32),
            "size": self.size[i].astype(np.int64),
            "created_ps": self.time[i].astype(np.int64),
            "started_ps": np.where(self.started[i] == _NEVER, -1, self.started[i]),
            "completed_ps": done[i],
            "class": self.cls[i],
        }


class PacketSink:
    """Folds delivery records into :class:`PacketStats` (``window``: ``[w0, w1)`` ps, or
    ``None``: every delivered packet is measured).  ``keep_programs``: the records of rank
    programs' packets come too (``Prog.keep``), and go to their own table only."""

    def __init__(self, window: tuple[int, int] | None, keep: bool = False,
                 spill_at: int = SPILL_VALUES, keep_programs: bool = False,
                 n_classes: int = 1) -> None:
        self.w0, self.w1 = window if window is not None else (0, _NEVER)
        self.spill_at = spill_at
        #: per class (several classes only): [packets, bytes, latency sum], latencies
        self.by_class: dict[int, tuple[list[int], ValueStore]] | None = \
            {} if n_classes > 1 else None
        self.s = PacketStats()
        self.lat, self.net = ValueStore(spill_at), ValueStore(spill_at)
        self.lat_sum = self.net_sum = 0
        self.chunks: list[_Chunk] = []
        # the tables, in packet and message order, on disk as they come (``keep``)
        self.packet_rows = InOrder("packet", Spool(PACKET_COLUMNS)) if keep else None
        self.message_rows = InOrder("message", Spool(MESSAGE_COLUMNS)) if keep else None
        self.end = _NEVER  #: messages created after this never existed (:meth:`ended`)
        # the programs' packets, numbered in delivery order (a deterministic order: the loop's)
        self.program_rows = Spool(PROGRAM_PACKET_COLUMNS) if keep_programs else None

    def ledger(self, c: PacketChunk) -> Ledger:
        """Chunk ``c``'s :func:`ledger`, with the messages table's columns when this sink keeps
        the table (it reads nothing the loop changes: the feeder's helper makes it ahead)."""
        return ledger(c, self.message_rows is not None)

    def loaded(self, c: PacketChunk | Ledger) -> None:
        """A chunk entered the engine (or its :meth:`ledger`, made ahead): its packets count
        as generated."""
        led = c if isinstance(c, Ledger) else self.ledger(c)
        self.s.generated += led.packets
        self.s.generated_bytes += led.bytes
        if led.messages is not None:
            self.chunks.append(led.messages)

    def add(self, rec: np.ndarray) -> None:
        """Records of delivered packets (or, at the end, undelivered ones: delivery -1)."""
        if rec.shape[0]:
            prog = rec[:, REC_FLOW] >= 0
            if prog.any():
                self._programs(rec[prog])
                rec = rec[~prog]
        if not rec.shape[0]:
            return
        if self.packet_rows is not None:
            self.packet_rows.add(_packet_columns(rec, self.w0, self.w1))
        s = self.s
        made = rec[:, REC_CREATED]
        made_in = (made >= self.w0) & (made < self.w1)  # created in the window: measured
        s.offered_bytes += int(rec[made_in, REC_SIZE].sum())
        # views, not copies, when every row is kept (every drain but the last): each copy of
        # a record block is memory the process maps, faults in and unmaps again
        got = rec[:, REC_DELIVER] >= 0
        every = bool(got.all())
        d = rec if every else rec[got]
        s.delivered += d.shape[0]
        s.delivered_bytes += int(d[:, REC_SIZE].sum())
        dv = d[:, REC_DELIVER]
        s.accepted_bytes += int(d[(dv >= self.w0) & (dv < self.w1), REC_SIZE].sum())
        inw = made_in if every else made_in[got]
        m = d if inw.all() else d[inw]
        if m.shape[0]:
            s.measured += m.shape[0]
            s.measured_bytes += int(m[:, REC_SIZE].sum())
            lat = m[:, REC_DELIVER] - m[:, REC_CREATED]
            net = m[:, REC_DELIVER] - m[:, REC_INJECT]
            self.lat_sum += int(lat.sum())
            self.net_sum += int(net.sum())
            self.lat.add(lat)
            self.net.add(net)
            s.hops += int(m[:, REC_HOPS].sum())
            s.nonminimal += int((m[:, REC_MINIMAL] == 0).sum())
            self._classes(m)
        self._messages(d)
        if not every:  # the run ended with these in flight: a message started when its
            self._started(rec[~got])  # first packet left its NIC, delivered or not

    def _classes(self, m: np.ndarray) -> None:
        """Measured packets' records ``m`` counted by their traffic class."""
        if self.by_class is None or not m.shape[0]:
            return
        cls = m[:, REC_CLASS]
        lat = m[:, REC_DELIVER] - m[:, REC_CREATED]
        for c in np.unique(cls).tolist():
            sel = cls == c
            acc, store = self.by_class.setdefault(int(c), ([0, 0, 0], ValueStore(self.spill_at)))
            acc[0] += int(sel.sum())
            acc[1] += int(m[sel, REC_SIZE].sum())
            acc[2] += int(lat[sel].sum())
            store.add(lat[sel])

    def _programs(self, rec: np.ndarray) -> None:
        """Rows of delivered program packets: every one measured (a program run's window is
        the whole run); ``packet`` numbers them in delivery order.  They come when the run
        keeps their rows, or counts figures per class (``Prog.keep``)."""
        self._classes(rec)
        if self.program_rows is None:
            return
        cols = _packet_columns(rec, 0, _NEVER)
        cols["packet"] = self.program_rows.rows + np.arange(rec.shape[0], dtype=np.int64)
        cols["flow"] = rec[:, REC_FLOW].copy()
        self.program_rows.append(cols)

    def ended(self, rec: np.ndarray, end_ps: int) -> None:
        """The run ended at ``end_ps`` (rank programs finished) with the packets of ``rec``
        still in rows: those created by then are undelivered; those created later (loaded
        ahead with their chunk) never existed, and neither did their messages."""
        self.end = end_ps
        late = rec[:, REC_CREATED] > end_ps
        self.s.generated -= int(late.sum())
        self.s.generated_bytes -= int(rec[late, REC_SIZE].sum())
        self.add(rec[~late])

    def _messages(self, d: np.ndarray) -> None:
        if not d.shape[0] or not self.chunks:
            return
        for c, part in self._by_chunk(d):
            i = part[:, REC_MSG] - c.first
            np.subtract.at(c.left, i, 1)
            np.maximum.at(c.done, i, part[:, REC_DELIVER])
            if c.table:
                np.minimum.at(c.started, i, part[:, REC_INJECT])
        finished = [c for c in self.chunks if not (c.left > 0).any()]
        for c in finished:
            self._retire(c)
        self.chunks = [c for c in self.chunks if (c.left > 0).any()]

    def _started(self, u: np.ndarray) -> None:
        """Undelivered packets' records ``u``: those that left their NIC start their message
        then (``started_ps``), as delivered ones do in :meth:`_messages`."""
        u = u[u[:, REC_INJECT] >= 0]
        if not u.shape[0] or not self.chunks:
            return
        for c, part in self._by_chunk(u):
            if c.table:
                np.minimum.at(c.started, part[:, REC_MSG] - c.first, part[:, REC_INJECT])

    def _by_chunk(self, rec: np.ndarray) -> Iterator[tuple[_Chunk, np.ndarray]]:
        """The loaded chunks that records ``rec`` belong to (by message number), each with
        its records (``rec`` itself when they are all one chunk's)."""
        firsts = np.array([c.first for c in self.chunks])
        which = np.searchsorted(firsts, rec[:, REC_MSG], side="right") - 1
        chunks = np.unique(which).tolist()
        for ci in chunks:
            yield self.chunks[ci], rec if len(chunks) == 1 else rec[which == ci]

    def _retire(self, c: _Chunk) -> None:
        done = np.where(c.left > 0, -1, c.done)
        inw = (c.time >= self.w0) & (c.time < self.w1) & (done >= 0)
        self.s.message_completion_ps += int((done - c.time)[inw].sum())
        self.s.messages_measured += int(inw.sum())
        if self.message_rows is not None:
            self.message_rows.add(c.rows(np.nonzero(c.time <= self.end)[0], done))

    def finish(self) -> PacketStats:
        """Retire what is left (messages with undelivered packets complete at -1) and work
        out the latency figures."""
        for c in self.chunks:
            self._retire(c)
        self.chunks = []
        s = self.s
        for store, total, out in ((self.lat, self.lat_sum, "latency"),
                                  (self.net, self.net_sum, "network_latency")):
            if store.count:
                p50, p99 = percentiles_ns(store, (50, 99))
                setattr(s, out, Latency(mean=total / store.count / 1e3, p50=p50, p99=p99,
                                        max=store.max / 1e3))
            store.close()
        if self.by_class is not None:
            s.classes = {}
            for c, (acc, store) in sorted(self.by_class.items()):
                p50, p99 = percentiles_ns(store, (50, 99))
                s.classes[c] = ClassStats(acc[0], acc[1], Latency(
                    mean=acc[2] / acc[0] / 1e3, p50=p50, p99=p99, max=store.max / 1e3))
                store.close()
        if self.packet_rows is not None and self.message_rows is not None:
            s.packets = self.packet_rows.flush()
            s.messages = self.message_rows.flush()
        s.program_packets = self.program_rows
        return s


def _packet_columns(rec: np.ndarray, w0: int, w1: int) -> dict[str, np.ndarray]:
    """Rows of the packets table from delivery records."""
    created, deliver = rec[:, REC_CREATED], rec[:, REC_DELIVER]
    return {
        "packet": rec[:, REC_ID].copy(),
        "message": rec[:, REC_MSG].copy(),
        "src": rec[:, REC_SRC].astype(np.int32),
        "dst": rec[:, REC_DST].astype(np.int32),
        "size": rec[:, REC_SIZE].copy(),
        "created_ps": created.copy(),
        "injected_ps": rec[:, REC_INJECT].copy(),
        "delivered_ps": deliver.copy(),
        "hops": rec[:, REC_HOPS].astype(np.int32),
        "minimal": rec[:, REC_MINIMAL].astype(bool),
        "via_group": rec[:, REC_VIA].astype(np.int32),
        "measured": (created >= w0) & (created < w1) & (deliver >= 0),
        "class": rec[:, REC_CLASS].astype(np.int16),
    }


#: the packets table's columns
PACKET_COLUMNS = list(_packet_columns(np.zeros((0, REC_COLS), dtype=np.int64), 0, 0))
#: the rank programs' packets' columns (``flow``: message ``flow // 3``; ``flow % 3``: data,
#: rendezvous request or reply, see :mod:`federation.engine.programs`)
PROGRAM_PACKET_COLUMNS = [*PACKET_COLUMNS, "flow"]


def stats_of_packets(pk: Packets, inject: np.ndarray, deliver: np.ndarray, hops: np.ndarray,
                     minimal: np.ndarray, via: np.ndarray, window: tuple[int, int] | None,
                     keep: bool) -> PacketStats:
    """:class:`PacketStats` of packets whose figures an engine has whole (the SimGrid
    adapter), folded exactly as the native engine's records are."""
    rec = np.zeros((pk.count, REC_COLS), dtype=np.int64)
    for col, x in ((REC_ID, np.arange(pk.count)), (REC_MSG, pk.msg), (REC_SRC, pk.src),
                   (REC_DST, pk.dst), (REC_SIZE, pk.size), (REC_CREATED, pk.time_ps),
                   (REC_INJECT, inject), (REC_DELIVER, deliver), (REC_HOPS, hops),
                   (REC_MINIMAL, minimal), (REC_VIA, via),
                   (REC_CLASS, pk.cls if pk.cls is not None else 0)):
        rec[:, col] = x
    rec[:, REC_FLOW] = -1
    sink = PacketSink(window, keep)
    if pk.count:
        sink.loaded(whole_chunk(pk))
    sink.add(rec)
    return sink.finish()
