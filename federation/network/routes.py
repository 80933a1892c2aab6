"""Helpers that turn a :class:`~federation.network.Network` into routing tables.

Used by :meth:`federation.plugin.components.Topology.minimal_routes` and by topology plugins that
override it.  The all-pairs work (one breadth-first search per destination, then the next hop of
every router towards it) runs in a compiled, parallel loop, so an 8,192-router graph of degree
25 gets its full ``R x R`` next-hop table in seconds and without ever holding a float distance
matrix (only the int32 table itself, 256 MiB at R = 8,192).

Tie-break (part of the contract): among the ``c`` ports of router ``r`` whose peer lies one hop
closer to destination ``d``, taken in :func:`spread_order` (by ``(peer - r) mod R``, then port
number; see :mod:`federation.network` for port numbering), the next hop is number
``spread((d - r) mod R, c)``, a fixed integer hash of the destination offset scaled to
``0..c-1``.  So tables are deterministic, and a router spreads the destinations it reaches
through several equal-cost neighbours over all of them: the lowest-port rule used before sent
all of them through the first neighbour and left the others idle.  On a circulant numbered
cyclically the tables are invariant under rotation of the router ids, so every port of one jump
carries the same load.  The choice costs about 1.5x the table build of the lowest-port rule (it
looks at every port instead of stopping at the first candidate).  The compiled kernels live in
:mod:`federation.network.route_kernels`, imported when a table is built, so that importing this
module (every topology plugin does) does not import numba.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from federation.errors import TopologyError
from federation.network import Network
from federation.network.tables import VC_COUNTER, RouteTables


@dataclass(frozen=True)
class CablePorts:
    """Cable (router-router) ports grouped by owning router, in increasing port order.

    ``port[indptr[r]:indptr[r+1]]`` are router ``r``'s cable ports and ``peer`` the router at the
    other end of each (a CSR adjacency list; parallel cables appear once per cable).
    """

    indptr: np.ndarray  # int64[R+1]
    port: np.ndarray  # int32[C]
    peer: np.ndarray  # int32[C]


def cable_ports(network: Network) -> CablePorts:
    pt = network.ports
    rp = pt.n_router_ports
    ports = np.nonzero(pt.port_link[:rp] >= 0)[0]  # increasing, hence grouped by owner
    owner = pt.port_router[ports]
    peer = pt.port_router[pt.port_peer[ports]]
    indptr = np.zeros(network.n_routers + 1, dtype=np.int64)
    np.cumsum(np.bincount(owner, minlength=network.n_routers), out=indptr[1:])
    return CablePorts(indptr, ports.astype(np.int32), peer.astype(np.int32))


def spread_order(network: Network) -> CablePorts:
    """:func:`cable_ports` with each router's ports sorted by ``(peer - r) mod R``, then port.

    The order in which :func:`next_hop_table` numbers the shortest-path candidates of a router.
    Together with a choice that depends only on ``(d - r) mod R`` it makes the tables invariant
    under a rotation of the router ids, so vertex-transitive graphs numbered cyclically
    (circulants, rings) load every port of one jump alike.
    """
    cp = cable_ports(network)
    n = network.n_routers
    owner = np.repeat(np.arange(n, dtype=np.int64), np.diff(cp.indptr))
    o = np.lexsort((cp.port, (cp.peer - owner) % n, owner))
    return CablePorts(cp.indptr, cp.port[o], cp.peer[o])


def _check_connected(reached: np.ndarray, n: int) -> None:
    bad = np.nonzero(reached < n)[0]
    if bad.size:
        raise TopologyError(
            f"the router graph is not connected: router {int(bad[0])} reaches only "
            f"{int(reached[bad[0]])} of {n} routers"
        )


# --------------------------------------------------------------------------- public helpers


def hop_distances(network: Network) -> np.ndarray:
    """All-pairs router hop counts (int32 ``R x R``), one compiled BFS per router."""
    cp = cable_ports(network)
    n = network.n_routers
    out = np.empty((n, n), dtype=np.int32)
    reached = np.zeros(n, dtype=np.int64)
    from federation.network.route_kernels import distance_kernel

    distance_kernel(cp.indptr, cp.peer, out, reached)
    _check_connected(reached, n)
    return out


@dataclass(frozen=True)
class GraphStats:
    """Hop-count figures of the router graph (``aspl`` excludes self-pairs)."""

    diameter: int
    aspl: float


def graph_stats(network: Network, sources: np.ndarray | None = None) -> GraphStats:
    """Diameter and average shortest path length without storing a distance matrix.

    ``sources`` restricts the BFS roots (enough for vertex-transitive graphs such as circulants
    and tori, where one root gives the exact values).
    """
    cp = cable_ports(network)
    n = network.n_routers
    src = np.arange(n, dtype=np.int64) if sources is None else np.asarray(sources, np.int64)
    ecc = np.zeros(src.shape[0], dtype=np.int64)
    reached = np.zeros(src.shape[0], dtype=np.int64)
    dsum = np.zeros(src.shape[0], dtype=np.int64)
    from federation.network.route_kernels import stats_kernel

    stats_kernel(cp.indptr, cp.peer, src, ecc, reached, dsum)
    _check_connected(reached, n)
    pairs = src.shape[0] * (n - 1)
    return GraphStats(int(ecc.max()) if n > 1 else 0,
                      float(dsum.sum() / pairs) if pairs else 0.0)


def next_hop_table(network: Network) -> tuple[np.ndarray, GraphStats]:
    """``R x R`` table of a port on a shortest path from ``r`` to ``d`` (-1 on the diagonal),
    plus the graph's diameter and ASPL computed on the way.

    Among the ``c`` ports of ``r`` whose peer is one hop closer to ``d``, taken in
    :func:`spread_order`, the table holds number ``spread((d - r) mod R, c)``: a fixed hash, so
    the routes are deterministic and the destinations reached through equal-cost neighbours
    are spread over all of them.
    """
    cp = spread_order(network)
    n = network.n_routers
    table = np.empty((n, n), dtype=np.int32)
    ecc = np.zeros(n, dtype=np.int64)
    reached = np.zeros(n, dtype=np.int64)
    dsum = np.zeros(n, dtype=np.int64)
    from federation.network.route_kernels import next_hop_kernel

    next_hop_kernel(cp.indptr, cp.port, cp.peer, table, ecc, reached, dsum)
    _check_connected(reached, n)
    pairs = n * (n - 1)
    stats = GraphStats(int(ecc.max()) if n > 1 else 0,
                       float(dsum.sum() / pairs) if pairs else 0.0)
    return table, stats


def shortest_path_routes(network: Network) -> RouteTables:
    """Shortest-path next-hop tables with VC = hop index (deadlock-free with diameter VCs).

    Next hop from ``r`` towards ``d``: a port to a neighbour ``s`` with ``dist[s, d] ==
    dist[r, d] - 1``, chosen among them by the deterministic spread of :func:`next_hop_table`
    (module docstring).  Every cable port bumps the
    VC (rule ``VC_COUNTER``), so hop ``i`` of a route travels on VC ``i`` and a route of
    ``diameter`` hops needs ``diameter`` VCs.
    """
    r = network.n_routers
    gnext, stats = next_hop_table(network)
    diameter = stats.diameter
    bump = np.ones(network.ports.n_ports, dtype=np.uint8)
    return RouteTables(
        gnext=gnext,
        lnext=np.full((r, 1), -1, dtype=np.int32),
        router_group=np.arange(r, dtype=np.int32),
        router_local=np.zeros(r, dtype=np.int32),
        vcs_required=max(1, diameter),
        vc_mode=VC_COUNTER,
        port_vc_bump=bump,
        description=f"shortest paths, VC = hop index (diameter {diameter})",
        extra={"diameter": diameter, "aspl": stats.aspl},
    )


# --------------------------------------------------------------------------- channel load


def _route_step(tables: RouteTables, cur: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Output port at router ``cur`` for a packet to router ``dst`` (minimal tables)."""
    gc = tables.router_group[cur]
    gd = tables.router_group[dst]
    out = np.empty(cur.shape[0], dtype=np.int64)
    cross = gc != gd
    out[cross] = tables.gnext[cur[cross], gd[cross]]
    out[~cross] = tables.lnext[cur[~cross], tables.router_local[dst[~cross]]]
    return out


def host_pairs(network: Network, max_pairs: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Every ordered pair of distinct routers with nodes, as (source, destination) arrays of
    at most about ``max_pairs`` pairs each, so that memory stays bounded."""
    per_router = np.bincount(network.node_router, minlength=network.n_routers)
    hosts = np.nonzero(per_router > 0)[0]
    if hosts.size < 2:
        return
    rows = max(1, max_pairs // hosts.size)
    for i0 in range(0, hosts.size, rows):
        src = np.repeat(hosts[i0:i0 + rows], hosts.size)
        dst = np.tile(hosts, min(rows, hosts.size - i0))
        keep = src != dst
        yield src[keep], dst[keep]


def table_hops(network: Network, tables: RouteTables, src: np.ndarray,
                dst: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The routes of the pairs ``src -> dst`` (distinct routers) through minimal ``tables``, hop
    by hop, all pairs at once: at each hop, the output ports of the pairs still on their way
    and those pairs' indices (one walk for :func:`channel_load`, :func:`most_vc_bumps`,
    :func:`federation.network.mapping.walk` and the clock bound's longest route,
    :func:`federation.pipeline.bounds.check_route_clock`).  Raises
    :class:`TopologyError` if a route is missing or does not arrive within ``R`` hops."""
    pt = network.ports
    cur = src.astype(np.int64)
    dst = dst.astype(np.int64)
    pair = np.arange(cur.size)
    for _ in range(network.n_routers + 1):
        if cur.size == 0:
            return
        port = _route_step(tables, cur, dst)
        if (port < 0).any():
            k = int(np.nonzero(port < 0)[0][0])
            raise TopologyError(f"no route from router {int(cur[k])} to router {int(dst[k])}")
        yield port, pair
        cur = pt.port_router[pt.port_peer[port]].astype(np.int64)
        going = cur != dst
        cur, dst, pair = cur[going], dst[going], pair[going]
    raise TopologyError(f"a route from router {int(cur[0])} to router {int(dst[0])} loops")


def channel_load(network: Network, tables: RouteTables, *,
                 max_pairs: int = 1 << 22) -> np.ndarray:
    """Exact per-port load of uniform all-to-all traffic routed through minimal ``tables``.

    Every ordered pair of distinct nodes sends one unit; the flow of each (source router,
    destination router) pair (weight = nodes of one times nodes of the other) is walked hop by
    hop through the tables, and the result counts, per global port id, the units leaving through
    it (terminal and NIC ports included).  Cable ports are directed: each end of a cable is its
    own entry.  Router pairs are processed in batches of ``max_pairs`` so that memory stays
    bounded; each hop is a vectorised lookup, so the shipped machines take well under a second.
    Raises :class:`TopologyError` if a route is missing or does not arrive within ``R`` hops.
    """
    per_router = np.bincount(network.node_router, minlength=network.n_routers)
    load = np.zeros(network.ports.n_ports, dtype=np.float64)
    for src, dst in host_pairs(network, max_pairs):
        w = (per_router[src] * per_router[dst]).astype(np.float64)
        for port, pair in table_hops(network, tables, src, dst):
            load += np.bincount(port, weights=w[pair], minlength=load.size)
    return load


def most_vc_bumps(network: Network, tables: RouteTables, *, max_pairs: int = 1 << 22) -> int:
    """The most VC-bumping ports (``tables.port_vc_bump``) any route of minimal ``tables``
    between two routers with nodes crosses: with the level raised *on* a bumping hop
    (minimal's ``vc_step: on``) the last such hop takes VC ``most``, so the routing needs one
    VC more than that (raised after the hop, each hop counts only the bumps before it, and
    the topology's own ``vcs_required`` holds)."""
    if tables.port_vc_bump is None:
        return 0
    bump = np.asarray(tables.port_vc_bump).astype(np.int64)
    most = 0
    for src, dst in host_pairs(network, max_pairs):
        count = np.zeros(src.size, dtype=np.int64)
        for port, pair in table_hops(network, tables, src, dst):
            count[pair] += bump[port]
        most = max(most, int(count.max()))
    return most


@dataclass(frozen=True)
class ClassLoad:
    """Load figures of one link class over its directed cable ports."""

    ports: int
    mean: float
    max: float

    @property
    def ratio(self) -> float:
        """``max / mean``: 1.0 is a perfectly even spread (0 if the class carries nothing)."""
        return self.max / self.mean if self.mean > 0 else 0.0


def class_loads(network: Network, load: np.ndarray) -> dict[str, ClassLoad]:
    """Per link class (cables only), mean and max of :func:`channel_load` over its ports."""
    pt = network.ports
    rp = pt.n_router_ports
    cable = np.nonzero(pt.port_link[:rp] >= 0)[0]
    cls = pt.port_class[cable]
    out: dict[str, ClassLoad] = {}
    for c, name in enumerate(network.link_classes):
        sel = load[cable[cls == c]]
        if sel.size:
            out[name] = ClassLoad(int(sel.size), float(sel.mean()), float(sel.max()))
    return out
