"""Helpers that turn a :class:`~federation.network.Network` into routing tables.

Used by :meth:`federation.components.Topology.minimal_routes` and by topology plugins that
override it.  Everything is vectorised over scipy's compiled BFS, so an 8k-router graph is
handled in seconds.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import csgraph

from federation.components import VC_COUNTER, RouteTables
from federation.errors import TopologyError
from federation.network import Network


def port_to_neighbor(network: Network) -> dict[tuple[int, int], int]:
    """Lowest-numbered cable port at router ``r`` leading to router ``s``."""
    pt = network.ports
    out: dict[tuple[int, int], int] = {}
    rp = pt.n_router_ports
    peers = pt.port_peer[:rp]
    owners = pt.port_router[:rp]
    for port in range(rp):
        link = pt.port_link[port]
        if link < 0:
            continue
        key = (int(owners[port]), int(pt.port_router[peers[port]]))
        if key not in out:
            out[key] = port
    return out


def neighbor_port_matrix(network: Network) -> np.ndarray:
    """Dense ``R x R`` matrix: lowest port at ``r`` towards neighbour ``s`` (-1 if none)."""
    r = network.n_routers
    pt = network.ports
    rp = pt.n_router_ports
    ports = np.nonzero(pt.port_link[:rp] >= 0)[0]
    owner = pt.port_router[ports]
    peer = pt.port_router[pt.port_peer[ports]]
    m = np.full((r, r), -1, dtype=np.int32)
    # assign in reverse order so the lowest port wins
    m[owner[::-1], peer[::-1]] = ports[::-1]
    return m


def hop_distances(network: Network) -> np.ndarray:
    """All-pairs router hop counts (int32), computed with scipy's BFS."""
    d = csgraph.shortest_path(network.adjacency, method="D", unweighted=True, directed=False)
    if np.isinf(d).any():
        raise TopologyError("the router graph is not connected")
    return d.astype(np.int32)


def shortest_path_routes(network: Network) -> RouteTables:
    """Shortest-path next-hop tables with VC = hop index (deadlock-free with diameter VCs).

    Next hop from ``r`` towards ``d`` is the lowest-numbered port to a neighbour ``s`` with
    ``dist[s, d] == dist[r, d] - 1``, which makes ties deterministic.
    """
    r = network.n_routers
    dist = hop_distances(network)
    nbr = neighbor_port_matrix(network)
    gnext = np.full((r, r), -1, dtype=np.int32)
    best = np.full((r, r), np.iinfo(np.int32).max, dtype=np.int64)
    pt = network.ports
    rp = pt.n_router_ports
    cable = np.nonzero(pt.port_link[:rp] >= 0)[0]
    owner = pt.port_router[cable]
    peer = pt.port_router[pt.port_peer[cable]]
    for port, a, b in zip(cable.tolist(), owner.tolist(), peer.tolist(), strict=True):
        ok = dist[b] == dist[a] - 1
        row = best[a]
        upd = ok & (port < row)
        row[upd] = port
    has = best != np.iinfo(np.int32).max
    gnext[has] = best[has]
    diameter = int(dist.max())
    del nbr
    bump = np.ones(pt.n_ports, dtype=np.uint8)
    return RouteTables(
        gnext=gnext,
        lnext=np.full((r, 1), -1, dtype=np.int32),
        router_group=np.arange(r, dtype=np.int32),
        router_local=np.zeros(r, dtype=np.int32),
        vcs_required=max(1, diameter),
        vc_mode=VC_COUNTER,
        port_vc_bump=bump,
        description=f"shortest paths, VC = hop index (diameter {diameter})",
    )
