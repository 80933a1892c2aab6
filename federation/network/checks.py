"""Checks of what a topology plugin hands over, before anything else reads it.

A :class:`~federation.network.Network` built through
:class:`~federation.network.NetworkBuilder` is well formed by construction, but a plugin may
also fill one directly (or return something else entirely).  Everything downstream -- port
numbering, route tables, the compiled loop -- indexes these arrays without bounds checks, so a
node on router 7 of a 4-router network, a cable of class 5 among 2 classes, or a group
array one router short surfaced as a NumPy ``ValueError``, an ``IndexError`` in the middle
of the run, or (worse) as a silently wrong result (cables counted as terminal links).
:func:`network_problem` names the first such defect; it is vectorised (min/max over each
array), so a 100,000-router network costs a few milliseconds.

:func:`route_walk` follows every route of a set of route tables between the routers that
carry nodes (the only destinations), the way the engine's table routing does, and says
which route is missing or loops, and how long the longest route is: a forwarding loop
otherwise passed the deadlock proof's "VC = hops so far" shortcut and surfaced mid-run as a
VC beyond ``router.vcs`` blamed on the routing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from federation.network.graph import Network
    from federation.network.tables import RouteTables

TERMINAL = "terminal"
_INT32_MAX = int(np.iinfo(np.int32).max)
_INT16_MAX = int(np.iinfo(np.int16).max)


def _integer(x: Any) -> bool:
    return isinstance(x, int | np.integer) and not isinstance(x, bool)


def _array_problem(name: str, a: Any, length: int, length_of: str, what: str) -> str | None:
    """Why ``a`` is not a 1-D NumPy integer array of ``length`` entries, or None."""
    if not isinstance(a, np.ndarray):
        return f"{name} must be a 1-D NumPy integer array ({what}), got {type(a).__name__}"
    if not np.issubdtype(a.dtype, np.integer):
        return f"{name} must be a 1-D NumPy integer array ({what}), got dtype {a.dtype}"
    if a.ndim != 1:
        return f"{name} must be a 1-D NumPy integer array ({what}), got shape {a.shape}"
    if a.shape[0] != length:
        return f"{name} has {a.shape[0]} entries but {length_of} is {length} ({what})"
    return None


def _range_problem(name: str, a: np.ndarray, lo: int, hi: int, what: str) -> str | None:
    """The first entry of ``a`` outside ``[lo, hi)`` (min/max first: no temporaries when
    every entry is in range), or None."""
    if a.size == 0 or (int(a.min()) >= lo and int(a.max()) < hi):
        return None
    i = int(np.flatnonzero((a < lo) | (a >= hi))[0])
    span = f"{lo}..{hi - 1}" if hi > lo else "none: there is no valid value"
    return f"{name}[{i}] = {int(a[i])} is outside {span} ({what})"


def _classes_problem(classes: Any) -> str | None:
    if not isinstance(classes, tuple | list) or not all(isinstance(c, str) for c in classes):
        return f"link_classes must be a tuple of class names, got {classes!r}"
    if not classes or classes[0] != TERMINAL:
        return (f"link_classes must start with {TERMINAL!r} (terminal and NIC ports are "
                f"class 0), got {tuple(classes)!r}")
    if len(set(classes)) != len(classes):
        return f"link_classes names a class twice: {tuple(classes)!r}"
    if len(classes) > _INT16_MAX:
        return f"link_classes has {len(classes)} classes, at most {_INT16_MAX}"
    return None


def network_problem(net: Network) -> str | None:
    """The first structural defect of ``net`` (types, shapes, dtypes, index ranges), or None.

    What a valid network is: ``n_routers`` an integer in ``[0, 2**31)``; ``link_classes`` a
    tuple of distinct names starting with ``'terminal'``; 1-D integer arrays ``radix`` and
    ``router_group`` of ``n_routers`` entries, ``node_router`` of any length, and
    ``link_src``, ``link_dst``, ``link_class`` of one length (the cables); routers in
    ``[0, n_routers)``, groups in ``[0, n_routers)`` (the route tables get one column per
    group), cable classes in ``[1, len(link_classes))`` (class 0 is the terminal links'),
    radixes ``>= 0``; ``coords`` and ``info`` dicts."""
    R = net.n_routers
    if not _integer(R) or not 0 <= R <= _INT32_MAX:
        return f"n_routers = {R!r} must be an integer in 0..{_INT32_MAX}"
    why = _classes_problem(net.link_classes)
    if why:
        return why
    L = net.link_src.shape[0] if isinstance(net.link_src, np.ndarray) and net.link_src.ndim else 0
    N = net.node_router.shape[0] if isinstance(net.node_router, np.ndarray) else 0
    arrays = (("node_router", net.node_router, N, "its length", "the router of each node"),
              ("link_src", net.link_src, L, "its length", "one end of each cable"),
              ("link_dst", net.link_dst, L, "the length of link_src", "the other end of "
               "each cable"),
              ("link_class", net.link_class, L, "the length of link_src", "the class of "
               "each cable"),
              ("router_group", net.router_group, R, "n_routers", "the group of each router"),
              ("radix", net.radix, R, "n_routers", "the ports of each router"))
    for name, a, n, n_of, what in arrays:
        why = _array_problem(name, a, n, n_of, what)
        if why:
            return why
    C = len(net.link_classes)
    if net.link_class.size and int(net.link_class.min()) == 0:
        i = int(np.flatnonzero(net.link_class == 0)[0])
        return (f"link_class[{i}] = 0 is the {TERMINAL!r} class, which is for node links; "
                "cables between routers need a class of their own")
    for name, a, lo, hi, what in (
            ("node_router", net.node_router, 0, R, f"the router of each node; n_routers = {R}"),
            ("link_src", net.link_src, 0, R, f"a cable's router; n_routers = {R}"),
            ("link_dst", net.link_dst, 0, R, f"a cable's router; n_routers = {R}"),
            ("link_class", net.link_class, 1, C, f"cable classes of link_classes "
             f"{tuple(net.link_classes)!r}"),
            ("router_group", net.router_group, 0, R, "the group of each router; at most one "
             "group per router"),
            ("radix", net.radix, 0, _INT32_MAX + 1, "ports per router")):
        why = _range_problem(name, a, lo, hi, what)
        if why:
            return why
    for name, d in (("coords", net.coords), ("info", net.info)):
        if not isinstance(d, dict):
            return f"{name} must be a dict, got {type(d).__name__}"
    return None


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
