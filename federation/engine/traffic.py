"""Open-loop traffic as the runner hands it to an engine, and its packets, a chunk at a time.

The runner (``federation/pipeline/traffic.py``) decides nothing per packet: it hands an engine one
description (network, routing, arbiter, rank programs and this :class:`OpenTraffic`), and the
engine side turns the workload's message batches into packets here, drawing each packet's
routing choices as it goes (:func:`packet_chunks`).  The native engine loads one chunk into
its packet rows when its loop reaches the chunk's start (:mod:`federation.engine.feed`), so a
run never holds all its packets at once.  The draws come from the point's routing stream in a
fixed order (per chunk: intermediates, then injection VCs), so a seed gives the same packets
whichever engine asks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from federation.models.limits import TIME_LIMIT_PS
from federation.plugin.components import Messages

#: packets per chunk the native engine loads at once (a 4 MB feed).  Part of the results, not
#: only of memory: a chunk load wakes idle NICs, and the order of equal-time events follows
#: when they were scheduled (BookSim p=4 UR 0.3: 16 Ki moves the mean latency in its 7th digit)
CHUNK_PACKETS = 1 << 16


@dataclass
class Packets:
    """Packets of a run (creation time sorted), built from messages by :func:`packetize`."""

    time_ps: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    size: np.ndarray
    msg: np.ndarray
    via: np.ndarray
    #: VC each packet is injected into at its first router (``router.injection_vc``);
    #: ``None``: VC 0
    vc: np.ndarray | None = None
    #: traffic class of each packet (its message's, from the QoS policy); ``None``: 0
    cls: np.ndarray | None = None

    @property
    def count(self) -> int:
        return int(self.time_ps.shape[0])


@dataclass
class PacketChunk:
    """The packets of the messages created in one span of time (every later chunk's are
    created later).  Packet and message numbers run over the whole run: the chunk's packet
    ``i`` is number ``first_packet + i``, its message ``first_message + packets.msg[i]``."""

    packets: Packets
    first_packet: int
    first_message: int
    messages: Messages
    #: packets of each of ``messages``
    npk: np.ndarray
    #: no packet of a later chunk is created before it (its batch's end), ps
    end: int = TIME_LIMIT_PS


@dataclass
class OpenTraffic:
    """Open-loop messages (in time-ordered batches) and what turning them into packets
    needs."""

    #: the workload's messages: ``(end_ps, messages created before it)``, in time order
    batches: Callable[[], Iterator[tuple[int, Messages]]]
    #: traffic class of each message of a batch (the QoS policy's)
    classes: Callable[[Messages], np.ndarray]
    packet_size: int
    node_router: np.ndarray
    #: the routing's per-packet intermediates: ``(src routers, dst routers, rng) -> via``
    intermediates: Callable[[np.ndarray, np.ndarray, np.random.Generator], np.ndarray]
    #: refuses intermediates the engine cannot follow, naming the routing: ``(via, count)``
    check: Callable[[np.ndarray, int], None]
    injection_vc: str
    n_vcs: int
    rng: np.random.Generator
    #: about how many packets the run creates (progress, memory estimates)
    expected_packets: int = 0


def time_batches(msgs: Messages, packet_size: int,
                 target: int = CHUNK_PACKETS) -> Iterator[tuple[int, Messages]]:
    """Split time-sorted ``msgs`` into batches of about ``target`` packets, never between
    two messages created at the same time (a batch ends where the next one's first message
    is created)."""
    n = msgs.count
    npk = (np.maximum(msgs.size.astype(np.int64), 1) + packet_size - 1) // packet_size
    cum = np.cumsum(npk)
    lo = 0
    while lo < n:
        base = int(cum[lo - 1]) if lo else 0
        hi = int(np.searchsorted(cum, base + target, side="right"))
        hi = max(hi, lo + 1)
        if hi < n:  # move the cut past messages created at the same time as its last one
            hi = int(np.searchsorted(msgs.time_ps, msgs.time_ps[hi - 1], side="right"))
        end = int(msgs.time_ps[hi]) if hi < n else TIME_LIMIT_PS
        yield end, Messages(msgs.time_ps[lo:hi], msgs.src[lo:hi], msgs.dst[lo:hi],
                            msgs.size[lo:hi], msgs.cls[lo:hi] if msgs.cls is not None else None)
        lo = hi


def packetize(time_ps: np.ndarray, src: np.ndarray, dst: np.ndarray, size: np.ndarray,
              packet_size: int) -> tuple[np.ndarray, ...]:
    """Split messages into packets of ``packet_size`` bytes (the last one shorter)."""
    size = np.maximum(size.astype(np.int64), 1)
    npk = (size + packet_size - 1) // packet_size
    msg = np.repeat(np.arange(size.shape[0], dtype=np.int64), npk)
    first = np.repeat(np.cumsum(npk) - npk, npk)
    idx = np.arange(msg.shape[0]) - first
    psize = np.minimum(packet_size, size[msg] - idx * packet_size)
    return time_ps[msg], src[msg], dst[msg], psize.astype(np.int64), msg


def injection_vcs(policy: str, src: np.ndarray, n_vcs: int, rng: np.random.Generator,
                  sent: np.ndarray | None = None) -> np.ndarray:
    """The VC each packet enters its first router on (``router.injection_vc``).

    ``spread`` numbers each NIC's packets in creation order (packets are sorted by time),
    counting on from ``sent`` (packets of each node in earlier chunks), and takes that number
    modulo the VC count, so consecutive packets of a node queue in different input buffers at
    its router, as BookSim's round-robin injection does.  ``random`` draws from the routing
    stream *after* the routing's own draws, so choosing it does not change which
    intermediate groups a seed gives.
    """
    k = src.shape[0]
    if policy == "zero" or n_vcs == 1 or k == 0:
        return np.zeros(k, dtype=np.int32)
    if policy == "random":
        return rng.integers(0, n_vcs, size=k).astype(np.int32)
    order = np.argsort(src, kind="stable")
    counts = np.bincount(src, minlength=int(src.max()) + 1)
    start = np.repeat(np.cumsum(counts) - counts, counts)
    rank = np.empty(k, dtype=np.int64)
    rank[order] = np.arange(k) - start
    if sent is not None:
        rank += sent[src]
    return (rank % n_vcs).astype(np.int32)


def packet_chunks(t: OpenTraffic) -> Iterator[PacketChunk]:
    """The packets of ``t``, batch by batch: split, with the routing's intermediates and the
    injection VCs drawn (in that order) from the routing stream, and each message's class."""
    sent = np.zeros(t.node_router.shape[0], dtype=np.int64)
    first = [0, 0]  # packets and messages of the chunks before
    for end, m in t.batches():
        # made by a function, so that this generator holds none of a chunk's arrays while it
        # waits: the consumer lets a chunk's packets go once it has made their feed rows
        yield _chunk(t, m, int(end), sent, first)


def _chunk(t: OpenTraffic, m: Messages, end: int, sent: np.ndarray,
           first: list[int]) -> PacketChunk:
    """The chunk of batch ``m`` (``sent``: packets of each node so far, and ``first``: the
    numbers of its first packet and message, both moved on past it)."""
    ptime, psrc, pdst, psize, pmsg = packetize(m.time_ps, m.src, m.dst, m.size, t.packet_size)
    via = t.intermediates(t.node_router[psrc], t.node_router[pdst], t.rng)
    t.check(via, ptime.shape[0])
    vc = injection_vcs(t.injection_vc, psrc, t.n_vcs, t.rng, sent)
    sent += np.bincount(psrc, minlength=sent.shape[0])
    cls = np.asarray(t.classes(m))[pmsg].astype(np.int32)
    pk = Packets(ptime, psrc, pdst, psize, pmsg, via, vc, cls)
    chunk = PacketChunk(pk, first[0], first[1], m,
                        np.bincount(pmsg, minlength=m.count).astype(np.int64), end)
    first[0] += pk.count
    first[1] += m.count
    return chunk


def whole_chunk(pk: Packets) -> PacketChunk:
    """Packets given whole (tests, other drivers; at least one) as one chunk; their
    messages are made up from them (created with their first packet)."""
    k = pk.count
    n_msg = int(pk.msg.max()) + 1
    npk = np.bincount(pk.msg, minlength=n_msg).astype(np.int64)
    first = np.full(n_msg, k - 1, dtype=np.int64)
    np.minimum.at(first, pk.msg, np.arange(k))
    size = np.bincount(pk.msg, weights=pk.size, minlength=n_msg).astype(np.int64)
    msgs = Messages(pk.time_ps[first], pk.src[first], pk.dst[first], size)
    zeros = np.zeros(k, dtype=np.int32)
    full = Packets(pk.time_ps, pk.src, pk.dst, pk.size, pk.msg, pk.via,
                   pk.vc if pk.vc is not None else zeros, pk.cls if pk.cls is not None else zeros)
    return PacketChunk(full, 0, 0, msgs, npk)


def all_packets(chunks: Iterator[PacketChunk]) -> Packets:
    """Every chunk's packets in one :class:`Packets` (message numbers over the run): for
    engines that take a run's traffic whole (the SimGrid adapter runs small platforms)."""
    parts = list(chunks)
    if not parts:
        none = np.zeros(0, dtype=np.int64)
        return Packets(none, none, none, none, none, none, none.astype(np.int32),
                       none.astype(np.int32))

    def cat(name: str) -> np.ndarray:
        return np.concatenate([getattr(c.packets, name) for c in parts])

    msg = np.concatenate([c.first_message + c.packets.msg for c in parts])
    return Packets(cat("time_ps"), cat("src"), cat("dst"), cat("size"), msg, cat("via"),
                   cat("vc"), cat("cls"))
