"""Checks of what a topology plugin hands over, before anything else reads it.

The network's own arrays are checked by :func:`federation.network.graph.network_problem`
(:meth:`Network.validate`).

:func:`route_walk` follows every route of a set of route tables between the routers that
carry nodes (the only destinations), the way the engine's table routing does, and says
which route is missing or loops, and how long the longest route is: a forwarding loop
otherwise passed the deadlock proof's "VC = hops so far" shortcut and surfaced mid-run as a
VC beyond ``router.vcs`` blamed on the routing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

_INT32_MAX = int(np.iinfo(np.int32).max)

if TYPE_CHECKING:
    from federation.network.graph import Network
    from federation.network.tables import RouteTables

# --------------------------------------------------------------------------- route tables


@dataclass(frozen=True)
class RouteWalk:
    """What :func:`route_walk` found: the longest route in cables (hops) between two routers
    with nodes, and the first missing or looping route (``problem``, None if none)."""

    longest: int
    problem: str | None = None


def _entry(tables: RouteTables, r: int, d: int) -> tuple[int, str]:
    """The port the tables give at router ``r`` towards router ``d`` and the entry's name
    (the engine's table lookup, minimal phase)."""
    g, loc = int(tables.router_group[d]), int(tables.router_local[d])
    if int(tables.router_group[r]) != g:
        return int(tables.gnext[r, g]), f"gnext[{r}, {g}] (towards router {d}'s group)"
    return int(tables.lnext[r, loc]), f"lnext[{r}, {loc}] (towards router {d})"


def _explain(network: Network, tables: RouteTables, s: int, d: int) -> str:
    """Why the route ``s -> d`` never arrives: the -1 entry it meets, or the routers of
    its loop (walked one hop at a time: one route, at most ``R`` hops)."""
    pt = network.ports
    seen: dict[int, int] = {}
    path = [s]
    r = s
    while r != d:
        if r in seen:
            loop = path[seen[r]:-1]  # the routers of the loop, once each
            shown = " -> ".join(str(x) for x in loop[:16])
            more = f" -> ... {len(loop) - 16} more" if len(loop) > 16 else ""
            return (f"the route from router {s} to router {d} loops: it returns to router "
                    f"{r} ({shown}{more} -> {r}) and never arrives")
        seen[r] = len(path) - 1
        port, name = _entry(tables, r, d)
        if port < 0:
            return (f"there is no route from router {s} to router {d}: the route table entry "
                    f"{name} is -1 at router {r}")
        r = int(pt.port_router[pt.port_peer[port]])
        path.append(r)
    return f"the route from router {s} to router {d} could not be followed"  # not reached


def route_walk(network: Network, tables: RouteTables, *, max_entries: int = 1 << 22) -> RouteWalk:
    """Follow every route of ``tables`` (already checked by
    :func:`federation.pipeline.tables_check.route_table_problem`: entries are -1 or a cable
    port of their row's router) from every router to every router that carries nodes, by
    the engine's minimal lookup (``gnext`` towards another group, ``lnext`` inside one).

    Not a walk per pair (:func:`federation.network.routes.table_hops` took 6 s on a
    4,096-router circulant): ``max_entries`` (router, destination) entries at a time, by
    pointer doubling (:func:`_distances`), a few whole-block gathers per doubling of the
    route length; the 4,096-router circulant takes about a second, less than building its
    tables.  The first host pair whose route fails is explained by walking that one route
    (:func:`_explain`)."""
    pt = network.ports
    R = network.n_routers
    # the router across each port, then -1: what a -1 entry (no route) reads
    reach = np.concatenate([pt.port_router[pt.port_peer], [-1]]).astype(np.int32)
    group = np.asarray(tables.router_group).astype(np.int64)
    local = np.asarray(tables.router_local).astype(np.int64)
    hosts = np.unique(network.node_router).astype(np.int64)
    longest = 0
    step = max(1, max_entries // max(R, 1))
    for j0 in range(0, hosts.size, step):
        dst = hosts[j0:j0 + step]
        dist = _distances(tables, reach, group, local, dst)
        at_hosts = dist[hosts]
        if (at_hosts < 0).any():
            i, j = (int(x[0]) for x in np.nonzero(at_hosts < 0))
            return RouteWalk(longest, _explain(network, tables, int(hosts[i]), int(dst[j])))
        longest = max(longest, int(at_hosts.max(initial=0)))
    return RouteWalk(longest)


def _distances(tables: RouteTables, reach: np.ndarray, group: np.ndarray, local: np.ndarray,
               dst: np.ndarray) -> np.ndarray:
    """Hops from every router to each router of ``dst`` by the tables (``(R, len(dst))``,
    -1 where the route meets a -1 entry or loops).

    The next router of every (router, destination) entry is looked up once (``gnext``
    towards the destination's group, ``lnext`` in it); then pointer doubling: each round
    makes every entry point twice as far along its route, adding up the hops, until every
    pointer rests on a destination (which points to itself) or on the no-route sink.  That
    is about log2(longest route) + 2 rounds of whole-block gathers; a pointer still moving
    after ``2**k > R`` hops is on a loop.  Entries are laid out destination-major, so each
    gather stays within one destination's ``R`` entries (cache-friendly)."""
    R, B = group.shape[0], dst.shape[0]
    E = R * B  # entry (j, r) at j * R + r: a route stays in its destination's R entries
    gd, ld = group[dst], local[dst]
    port = np.ascontiguousarray(tables.gnext[:, gd].T)
    rr, jj = np.nonzero(group[:, None] == gd[None, :])  # routers in the destination's group
    port[jj, rr] = tables.lnext[rr, ld[jj]]
    nxt = np.take(reach, port.reshape(-1))  # entry -1 (no route) reads reach[-1] = -1
    del port
    idx = np.int32 if E < _INT32_MAX else np.int64
    ptr = np.empty(E + 1, dtype=idx)  # entry E: the sink of routes that meet a -1
    np.add(nxt, np.repeat(np.arange(B, dtype=idx) * R, R), out=ptr[:E], dtype=idx)
    ptr[:E][nxt < 0] = E
    ptr[E] = E
    del nxt
    home = np.arange(B, dtype=np.int64) * R + dst  # each destination's own entry
    ptr[home] = home
    hops = np.ones(E + 1, dtype=np.int32)
    hops[home] = 0
    hops[E] = 0
    reached = 1
    while True:
        after = ptr[ptr]
        if np.array_equal(after, ptr):
            break
        if reached > R:  # still moving after more hops than there are routers: loops
            break
        hops += hops[ptr]
        ptr = after
        reached *= 2
    at_home = np.zeros(E + 1, dtype=bool)
    at_home[home] = True
    return np.where(at_home[ptr[:E]], hops[:E], -1).reshape(B, R).T
