"""The edges of the deadlock proof's state walk (:mod:`federation.network.dependencies`), kept
as bits of small dense bitmaps where both ends are neighbours of one router."""

from __future__ import annotations

from typing import Any

import numpy as np

#: most bytes of the bitmaps that hold the edges between neighbouring channels and states
MAX_EDGE_BYTES = 1 << 28


def distinct(a: np.ndarray) -> np.ndarray:
    """The distinct values of ``a``, sorted (``np.unique`` by a sort: NumPy 2.4's hashing
    ``np.unique`` took 2.4 s where this takes 0.02 s, on 2 million int64s)."""
    if a.size == 0:
        return a
    b = np.sort(a)
    keep = np.empty(b.size, bool)
    keep[0] = True
    np.not_equal(b[1:], b[:-1], out=keep[1:])
    return b[keep]


class EdgeSet:
    """The walk's edges.  An edge between a channel and the next channel, between a channel and
    the fan-out state it arrives in, or between a fan-out state and a channel it leaves on,
    joins neighbours of one router, so it is a bit of a small dense bitmap (many destinations
    share one dependency: a repeat costs nothing); the few others are kept as lists."""

    def __init__(self, w: Any) -> None:  # a dependencies.Walk (which imports this module)
        pt = w.ports_of
        self.w = w
        rps = pt.router_port_start.astype(np.int64)
        self.first_port = rps
        self.maxp = int(np.diff(rps).max()) if rps.size > 1 else 1
        self.local = np.zeros(pt.n_ports, np.int64)
        own = pt.port_router >= 0
        self.local[own] = np.nonzero(own)[0] - rps[pt.port_router[own]]
        self.out_w = self.maxp * w.V  # out-channels of one router
        self.ss = 1 << w.sb
        self.block = (w.base_s1 - w.base_ent) // 2  # one fan-out kind's code range
        self.fan_w = 5 * self.ss  # fan-out states of one router
        n_fan = w.end - w.base_ent
        sizes = (w.n_ch * self.out_w, n_fan * self.out_w, w.n_ch * self.fan_w)
        self.dense = sum(sizes) <= MAX_EDGE_BYTES
        if self.dense:
            self.cc, self.fc, self.cf = (np.zeros(n, bool) for n in sizes)
        self.src: list[np.ndarray] = []
        self.dst: list[np.ndarray] = []

    def add(self, a: np.ndarray, b: np.ndarray) -> None:
        w = self.w
        rest = np.ones(a.size, bool)
        if self.dense:
            ch_a, ch_b = a < w.n_ch, b < w.n_ch
            fan_a, fan_b = a >= w.base_ent, b >= w.base_ent
            bc = np.where(ch_b, b, 0)
            out = self.local[bc // w.V] * w.V + bc % w.V  # b's channel among its router's
            m = ch_a & ch_b
            self.cc[a[m] * self.out_w + out[m]] = True
            k = fan_a & ch_b
            self.fc[(a[k] - w.base_ent) * self.out_w + out[k]] = True
            f = ch_a & fan_b
            rel = b[f] - w.base_ent
            self.cf[a[f] * self.fan_w + rel // self.block * self.ss + (rel & (self.ss - 1))] = True
            rest = ~(m | k | f)
        if rest.any():
            a, b = a[rest], b[rest]
            if a.size > 4096 and self.w.end < 2**31:  # a fan-out's repeats: keep one of each
                pair = distinct(a * self.w.end + b)
                a, b = np.divmod(pair, self.w.end)
            self.src.append(a)
            self.dst.append(b)

    def arrays(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """Every edge as (from, to) vertex codes, in parts."""
        w = self.w
        out = list(zip(self.src, self.dst, strict=True))
        if not self.dense:
            return out
        peer = w.peer
        idx = np.nonzero(self.cc)[0]
        a, rest = np.divmod(idx, self.out_w)
        lp, vc = np.divmod(rest, w.V)
        out.append((a, (self.first_port[peer[a // w.V]] + lp) * w.V + vc))
        idx = np.nonzero(self.fc)[0]
        fan, rest = np.divmod(idx, self.out_w)
        lp, vc = np.divmod(rest, w.V)
        y = (fan >> w.sb) & ((1 << w.rb) - 1)
        out.append((w.base_ent + fan, (self.first_port[y] + lp) * w.V + vc))
        idx = np.nonzero(self.cf)[0]
        a, rest = np.divmod(idx, self.fan_w)
        kind, s = np.divmod(rest, self.ss)
        z = peer[a // w.V]
        out.append((a, w.base_ent + kind * self.block + (z << w.sb | s)))
        return out
