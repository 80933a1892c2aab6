"""Open-loop traffic as the runner hands it to an engine, and its packets.

The runner (``federation/prepare.py``) generates messages and decides nothing per packet: it
hands an engine one description (network, routing, arbiter, rank programs and this
:class:`OpenTraffic`), and the engine side packetizes the messages and draws each packet's
routing choices here, when the job's packets are first asked for
(:attr:`federation.engine.native.NativeRun.packets`).  The draws come from the point's
routing stream in a fixed order (intermediates, then injection VCs), so a seed gives the same
packets whichever engine asks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from federation.components import Messages


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
class OpenTraffic:
    """Open-loop messages and what turning them into packets needs."""

    messages: Messages
    #: traffic class of each message (the QoS policy's)
    classes: np.ndarray
    packet_size: int
    node_router: np.ndarray
    #: the routing's per-packet intermediates: ``(src routers, dst routers, rng) -> via``
    intermediates: Callable[[np.ndarray, np.ndarray, np.random.Generator], np.ndarray]
    #: refuses intermediates the engine cannot follow, naming the routing: ``(via, count)``
    check: Callable[[np.ndarray, int], None]
    injection_vc: str
    n_vcs: int
    rng: np.random.Generator


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


def injection_vcs(policy: str, src: np.ndarray, n_vcs: int,
                  rng: np.random.Generator) -> np.ndarray:
    """The VC each packet enters its first router on (``router.injection_vc``).

    ``spread`` numbers each NIC's packets in creation order (packets are sorted by time) and
    takes that number modulo the VC count, so consecutive packets of a node queue in different
    input buffers at its router, as BookSim's round-robin injection does.  ``random`` draws
    from the routing stream *after* the routing's own draws, so choosing it does not change
    which intermediate groups a seed gives.
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
    return (rank % n_vcs).astype(np.int32)


def packetize_traffic(t: OpenTraffic) -> Packets:
    """The packets of ``t``: split, with the routing's intermediates and the injection VCs
    drawn (in that order) from the routing stream, and each message's class."""
    m = t.messages
    ptime, psrc, pdst, psize, pmsg = packetize(m.time_ps, m.src, m.dst, m.size, t.packet_size)
    via = t.intermediates(t.node_router[psrc], t.node_router[pdst], t.rng)
    t.check(via, ptime.shape[0])
    vc = injection_vcs(t.injection_vc, psrc, t.n_vcs, t.rng)
    return Packets(ptime, psrc, pdst, psize, pmsg, via, vc, t.classes[pmsg].astype(np.int32))
