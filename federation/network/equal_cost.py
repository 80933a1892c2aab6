"""Every equal-cost minimal port, not only the one the route tables name.

Route tables give one next hop per (router, destination group) and (router, destination
router in the same group).  For a routing that spreads packets, or chooses by congestion, among
all minimal next hops, :func:`equal_cost_ports` finds, for each of those table entries, every
cable port of the router that is just as good: a port ``p`` of router ``r`` is equal-cost for
destination group ``g`` when the table path from the router behind ``p`` reaches ``g`` in one
hop less than the table path from ``r``, *and* crosses as many VC-bumping ports (with ``p``
itself) as the table path from ``r`` does.  The second condition keeps the VC levels: an
alternative port never consumes a VC level the table path would not (on a dragonfly a global
link into another group is never an alternative to the local hop towards the owner of the link
into ``g``).  It does not keep an order the tables follow inside one level: the Aries XC's
groups are routed dimension-ordered (intra-chassis first), and their equal-cost ports take both
orders, so ``minimal`` with ``spread`` has a cycle there, which the deadlock proof
(:mod:`federation.network.deadlock`) refuses.  Dimension-order (dateline) tables have one
minimal port per hop by design and are refused.

The loop reads the masks with the compiled helpers of :mod:`federation.engine.masks`.

Compact form: one 64-bit mask per table entry, bit ``k`` = the router's ``k``-th cable port in
:func:`federation.network.routes.cable_ports` order, so ``8 x (groups + routers per group)``
bytes per router, measured on the shipped machines: 328 B on the 264-router CODES dragonfly,
520 B on the 1,056-router megafly (8,448 nodes), 648 B on the 1,040-router megafly-paper
dragonfly, 816 B on the 576-router Aries XC.  Topologies without groups (a group per router)
need ``8 x routers`` bytes per router: 8,200 B on G(1024,10), 64 KiB (512 MiB in all) on an
8,192-router graph; above ``MAX_MASK_BYTES`` (1 GiB) the routing is refused.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from federation.errors import RoutingError
from federation.network import Network
from federation.network.routes import cable_ports
from federation.network.tables import VC_DATELINE, RouteTables

#: most cable ports a router may have for the 64-bit masks
MAX_CABLE_PORTS = 64
#: largest mask set built (an 8,192-router graph without groups needs 512 MiB)
MAX_MASK_BYTES = 1 << 30


@dataclass(frozen=True)
class EqualCostPorts:
    gmask: np.ndarray  #: uint64[R, G] equal-cost ports towards each group
    lmask: np.ndarray  #: uint64[R, L] equal-cost ports towards each router of the own group
    first: np.ndarray  #: int64[R+1] router r's cable ports are port[first[r]:first[r+1]]
    port: np.ndarray  #: int64[C] global port ids

    @property
    def bytes_per_router(self) -> int:
        return 8 * (self.gmask.shape[1] + self.lmask.shape[1])


def equal_cost_bytes(tables: RouteTables) -> int:
    """Bytes the masks of these tables take."""
    return 8 * tables.gnext.shape[0] * (tables.gnext.shape[1] + tables.lnext.shape[1])


def _path_figures(nxt_router: np.ndarray, bump: np.ndarray, at_target: np.ndarray,
                  n: int) -> tuple[np.ndarray, np.ndarray]:
    """Hops and VC bumps along the table paths: ``nxt_router[r, t]`` is the router after
    ``r`` towards target column ``t`` (-1: none), ``bump[r, t]`` whether that hop bumps the VC
    level, ``at_target[r, t]`` whether ``r`` already is at the target.  -1 where unknown."""
    hops = np.where(at_target, 0, -1).astype(np.int64)
    bumps = np.zeros_like(hops)
    cols = np.broadcast_to(np.arange(hops.shape[1]), hops.shape)
    for _ in range(n + 1):
        todo = (hops < 0) & (nxt_router >= 0)
        if not todo.any():
            break
        nr = np.where(todo, nxt_router, 0)
        ready = todo & (hops[nr, cols] >= 0)
        if not ready.any():
            break
        hops[ready] = hops[nr, cols][ready] + 1
        bumps[ready] = bumps[nr, cols][ready] + bump[ready]
    return hops, bumps


def equal_cost_ports(network: Network, tables: RouteTables, owner: str) -> EqualCostPorts:
    """The masks of every equal-cost minimal port for ``tables`` (``owner`` names the routing
    in refusals)."""
    if tables.vc_mode == VC_DATELINE:
        raise RoutingError(f"{owner}: dimension-order routing has one minimal port per hop by "
                           "design; spreading over other minimal ports would break its "
                           "deadlock freedom, so routings that choose among equal-cost "
                           "minimal ports (prog_adaptive, aries, minimal with a spread other "
                           "than table) do not run on it")
    need = equal_cost_bytes(tables)
    if need > MAX_MASK_BYTES:
        per = need // max(1, tables.gnext.shape[0])
        raise RoutingError(f"{owner}: the equal-cost port sets of this machine would take "
                           f"{need / 2**20:.0f} MiB ({per} bytes per router), above the "
                           f"{MAX_MASK_BYTES >> 20} MiB limit")
    pt = network.ports
    cp = cable_ports(network)
    R = network.n_routers
    deg = np.diff(cp.indptr)
    if deg.size and int(deg.max()) > MAX_CABLE_PORTS:
        raise RoutingError(f"{owner}: a router has {int(deg.max())} cable ports; equal-cost "
                           f"port sets hold at most {MAX_CABLE_PORTS}")
    peer_router = pt.port_router[pt.port_peer].astype(np.int64)
    vbump = (tables.port_vc_bump if tables.port_vc_bump is not None
             else np.zeros(pt.n_ports, np.uint8)).astype(np.int64)
    rg = tables.router_group.astype(np.int64)
    rl = tables.router_local.astype(np.int64)
    gnext = tables.gnext.astype(np.int64)
    lnext = tables.lnext.astype(np.int64)
    G, L = gnext.shape[1], lnext.shape[1]
    gr = np.where(gnext >= 0, peer_router[np.maximum(gnext, 0)], -1)
    gh, gb = _path_figures(gr, np.where(gnext >= 0, vbump[np.maximum(gnext, 0)], 0),
                           rg[:, None] == np.arange(G)[None, :], R)
    lr = np.where(lnext >= 0, peer_router[np.maximum(lnext, 0)], -1)
    lh, lb = _path_figures(lr, np.where(lnext >= 0, vbump[np.maximum(lnext, 0)], 0),
                           rl[:, None] == np.arange(L)[None, :], R)
    gmask = np.zeros((R, G), dtype=np.uint64)
    lmask = np.zeros((R, L), dtype=np.uint64)
    routers = np.arange(R)
    for k in range(int(deg.max()) if deg.size else 0):
        has = deg > k
        port = np.where(has, cp.port[np.minimum(cp.indptr[:-1] + k, cp.port.shape[0] - 1)], 0)
        x = np.where(has, peer_router[port], 0)
        b = vbump[port]
        bit = np.uint64(1) << np.uint64(k)
        ok_g = (has[:, None] & (gh > 0) & (gh[x] == gh - 1) & (gb[x] + b[:, None] == gb))
        gmask[ok_g] |= bit
        same = has & (rg[x] == rg[routers])
        ok_l = (same[:, None] & (lh > 0) & (lh[x] == lh - 1) & (lb[x] + b[:, None] == lb))
        lmask[ok_l] |= bit
    return EqualCostPorts(gmask, lmask, cp.indptr.astype(np.int64), cp.port.astype(np.int64))
