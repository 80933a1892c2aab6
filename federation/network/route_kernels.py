"""The compiled, parallel all-pairs kernels of :mod:`federation.network.routes`: one
breadth-first search per destination, then the next hop of every router towards it.  A module
of their own, imported only when a table is built, so that importing the topology plugins does
not import numba."""

from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(cache=True, inline="always")
def _bfs(src, indptr, peer, dist, queue):
    """Hop distances from ``src`` into ``dist`` (-1 = unreachable); returns the count reached."""
    dist[:] = -1
    dist[src] = 0
    queue[0] = src
    head = 0
    tail = 1
    while head < tail:
        u = queue[head]
        head += 1
        du = dist[u] + 1
        for k in range(indptr[u], indptr[u + 1]):
            v = peer[k]
            if dist[v] < 0:
                dist[v] = du
                queue[tail] = v
                tail += 1
    return tail


_BLOCK = 64  # destinations per task: rows of the table are written 64 entries at a time


@njit(cache=True, inline="always")
def _spread(off, c):
    """Index in ``0..c-1`` of the shortest-path candidate used towards a destination ``off``
    routers further on (``(d - r) mod R``).

    A fixed 32-bit integer hash scaled to ``0..c-1`` (not ``off mod c``): on structured graphs
    the offset is correlated with which ports are candidates, and a plain modulus then keeps
    choosing the same ones; the hash decorrelates them while staying deterministic.
    """
    x = (off * 0x9E3779B1 + 0x165667B1) & 0xFFFFFFFF
    x ^= x >> 15
    x = (x * 0x2C1B3C6D) & 0xFFFFFFFF
    x ^= x >> 12
    return (x * c) >> 32  # x / 2^32 scaled to 0..c-1 (no division)


@njit(cache=True, parallel=True)
def next_hop_kernel(indptr, port, peer, out, ecc, reached, dsum):
    """``out[r, d]`` = one cable port of ``r`` whose peer is one hop closer to ``d``: candidate
    number ``_spread((d - r) mod R, count)`` in the order of ``port``/``peer`` (see
    :func:`~federation.network.routes.spread_order`), so equal-cost paths share the traffic.

    One BFS per destination ``d``; destinations are handled in blocks so that the row-major
    table is written in contiguous runs instead of one cache miss per entry.
    """
    n = indptr.shape[0] - 1
    deg = 0
    for r in range(n):
        deg = max(deg, indptr[r + 1] - indptr[r])
    nblocks = (n + _BLOCK - 1) // _BLOCK
    for blk in prange(nblocks):
        d0 = blk * _BLOCK
        d1 = min(n, d0 + _BLOCK)
        buf = np.empty((n, d1 - d0), dtype=np.int32)
        dist = np.empty(n, dtype=np.int32)
        queue = np.empty(n, dtype=np.int32)
        cand = np.empty(deg + 1, dtype=np.int32)
        for d in range(d0, d1):
            j = d - d0
            reached[d] = _bfs(d, indptr, peer, dist, queue)
            emax = 0
            s = 0
            for r in range(n):
                dr = dist[r]
                buf[r, j] = -1
                if dr > emax:
                    emax = dr
                if dr > 0:
                    s += dr
                    c = 0
                    for k in range(indptr[r], indptr[r + 1]):
                        cand[c] = port[k]  # kept only if closer (branch-free: ~2x faster)
                        c += dist[peer[k]] == dr - 1
                    off = d - r if d >= r else d - r + n
                    buf[r, j] = cand[_spread(off, c)]
            ecc[d] = emax
            dsum[d] = s
        out[:, d0:d1] = buf


@njit(cache=True, parallel=True)
def distance_kernel(indptr, peer, out, reached):
    n = indptr.shape[0] - 1
    for s in prange(n):
        dist = np.empty(n, dtype=np.int32)
        queue = np.empty(n, dtype=np.int32)
        reached[s] = _bfs(s, indptr, peer, dist, queue)
        out[s, :] = dist


@njit(cache=True, parallel=True)
def stats_kernel(indptr, peer, sources, ecc, reached, dsum):
    n = indptr.shape[0] - 1
    for i in prange(sources.shape[0]):
        dist = np.empty(n, dtype=np.int32)
        queue = np.empty(n, dtype=np.int32)
        reached[i] = _bfs(sources[i], indptr, peer, dist, queue)
        emax = 0
        s = 0
        for r in range(n):
            if dist[r] > emax:
                emax = dist[r]
            if dist[r] > 0:
                s += dist[r]
        ecc[i] = emax
        dsum[i] = s
