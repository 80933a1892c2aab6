"""The compiled loops of the two-opt search (:func:`federation.network.mapping.two_opt`): each
swap's incremental change of the objective.  A module of its own so that importing
:mod:`federation.network.mapping` (every run does, through the jobs stage) does not import
numba (half a second and 90 MB a run that searches nothing would pay)."""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["two_opt_contention", "two_opt_hops"]


@njit(cache=True)
def _hops_delta(u, v, pos, src, dst, count, inc_first, inc_edge, slot_pair, hops):  # noqa: ANN001, ANN202
    """The change of the total hops if units ``u`` and ``v`` swapped slots."""
    pu, pv = pos[u], pos[v]
    delta = 0
    for w in (u, v):
        for j in range(inc_first[w], inc_first[w + 1]):
            e = inc_edge[j]
            a, b = src[e], dst[e]
            if w == v and (a == u or b == u):
                continue  # an edge between u and v: counted with u
            sa, sb = pos[a], pos[b]
            na = pv if a == u else (pu if a == v else sa)
            nb = pv if b == u else (pu if b == v else sb)
            delta += count[e] * (hops[slot_pair[na], slot_pair[nb]]
                                 - hops[slot_pair[sa], slot_pair[sb]])
    return delta


@njit(cache=True)
def two_opt_hops(pos, pairs, src, dst, count, inc_first, inc_edge, slot_pair, hops):  # noqa: ANN001, ANN202
    """Two-opt on total hops over the random unit pairs ``pairs``; returns the total change
    and the number of accepted swaps."""
    total = 0
    accepted = 0
    for i in range(pairs.shape[0]):
        u, v = pairs[i, 0], pairs[i, 1]
        d = _hops_delta(u, v, pos, src, dst, count, inc_first, inc_edge, slot_pair, hops)
        if d < 0:
            pos[u], pos[v] = pos[v], pos[u]
            total += d
            accepted += 1
    return total, accepted


@njit(cache=True)
def _move(e, sign, pos, src, dst, count, slot_pair, k, first, ports, load):  # noqa: ANN001, ANN202
    """Add (``sign`` 1) or remove (-1) edge ``e``'s messages on its path; returns the change
    of the pairs of messages sharing a cable."""
    p = slot_pair[pos[src[e]]] * k + slot_pair[pos[dst[e]]]
    c = count[e]
    change = 0
    for j in range(first[p], first[p + 1]):
        q = ports[j]
        n = load[q]
        if sign > 0:
            change += c * n + c * (c - 1) // 2
            load[q] = n + c
        else:
            change -= c * (n - c) + c * (c - 1) // 2
            load[q] = n - c
    return change


@njit(cache=True)
def _swap_contention(u, v, pos, src, dst, count, inc_first, inc_edge, slot_pair, k, first,  # noqa: ANN001, ANN202
                     ports, load, mark, stamp):
    """Swap units ``u`` and ``v`` and return the change of the contention (the edges of both
    moved off their old paths and onto their new ones)."""
    change = 0
    for sign in (-1, 1):
        tag = stamp
        if sign > 0:
            pos[u], pos[v] = pos[v], pos[u]
            tag = stamp + 1
        for w in (u, v):
            for j in range(inc_first[w], inc_first[w + 1]):
                e = inc_edge[j]
                if mark[e] == tag:
                    continue  # an edge between u and v: once
                mark[e] = tag
                change += _move(e, sign, pos, src, dst, count, slot_pair, k, first, ports,
                                load)
    return change


@njit(cache=True)
def two_opt_contention(pos, pairs, src, dst, count, inc_first, inc_edge, slot_pair, k,  # noqa: ANN001, ANN202
                        first, ports, load):
    """Two-opt on contention; ``load`` holds each cable's message count for ``pos``."""
    mark = np.full(src.shape[0], -1, dtype=np.int64)
    total = 0
    accepted = 0
    for i in range(pairs.shape[0]):
        u, v = pairs[i, 0], pairs[i, 1]
        stamp = 4 * i
        d = _swap_contention(u, v, pos, src, dst, count, inc_first, inc_edge, slot_pair, k,
                             first, ports, load, mark, stamp)
        if d < 0:
            total += d
            accepted += 1
        else:  # swap back (the same moves undone)
            _swap_contention(u, v, pos, src, dst, count, inc_first, inc_edge, slot_pair, k,
                             first, ports, load, mark, stamp + 2)
    return total, accepted
