"""Routing ``valiant``: Valiant's randomized routing through an intermediate group.

Each packet draws an intermediate group uniformly among the groups that are neither its source
nor its destination group (on topologies without groups: an intermediate router), travels there
minimally, then minimally to its destination.  On a dragonfly this is local-global-local-global-
local with VC = global hops so far, hence 3 VCs (CODES).  Packets whose source and destination
share a group route minimally.  Theory: under worst-case (group shift) traffic it sustains just
under 50% of injection bandwidth, since every packet crosses two global links.
"""

from __future__ import annotations

import numpy as np

from federation import Params, RouteTables, Routing, hookimpl
from federation.components import VC_COUNTER
from federation.engine.tables_check import check_minimal_routes


def max_bumps_to_groups(tables: RouteTables, network) -> int:  # noqa: ANN001
    """Largest number of VC-bumping hops on any table path from a router to a group."""
    pt = network.ports
    R = network.n_routers
    G = tables.gnext.shape[1]
    bump = tables.port_vc_bump
    src = np.repeat(np.arange(R), G)
    tgt = np.tile(np.arange(G), R)
    keep = tables.router_group[src] != tgt
    cur, tgt = src[keep], tgt[keep]
    bumps = np.zeros(cur.shape[0], dtype=np.int64)
    for _ in range(R + 1):
        active = tables.router_group[cur] != tgt
        if not active.any():
            break
        port = tables.gnext[cur[active], tgt[active]]
        bumps[active] += bump[port]
        cur[active] = pt.port_router[pt.port_peer[port]]
    return int(bumps.max()) if bumps.size else 0


class Valiant(Routing):
    """Random intermediate group per packet, then minimal (dragonfly: 3 VCs)."""

    name = "valiant"

    class Params(Params):
        pass

    def tables(self, network, topology, machine) -> RouteTables:  # noqa: ANN001
        t = topology.minimal_routes(network)
        check_minimal_routes(t, network, topology, self.name)  # walked below: check first
        t.valiant = True
        counts_hops = (t.vc_mode == VC_COUNTER and t.port_vc_bump is not None
                       and bool(t.port_vc_bump.any()))
        if counts_hops:
            # the VC keeps counting through the intermediate group (dragonfly: global hops)
            t.vcs_required = t.vcs_required + max_bumps_to_groups(t, network)
        else:
            # dateline or up/down rules restart per phase: give phase two its own VC set
            t.phase_vc_offset = t.vcs_required
            t.vcs_required = 2 * t.vcs_required
        t.description = f"Valiant via a random group, then {t.description}"
        return t

    def intermediates(self, tables, src_router, dst_router, rng):  # noqa: ANN001
        return draw_intermediate_groups(tables, src_router, dst_router, rng)


def draw_intermediate_groups(tables: RouteTables, src_router: np.ndarray,
                             dst_router: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Uniform group per packet, excluding the source and destination groups (-1 if none)."""
    G = tables.gnext.shape[1]
    gs = tables.router_group[src_router].astype(np.int64)
    gd = tables.router_group[dst_router].astype(np.int64)
    lo = np.minimum(gs, gd)
    hi = np.maximum(gs, gd)
    n_excl = np.where(gs == gd, 1, 2)
    choices = G - n_excl
    x = (rng.random(src_router.shape[0]) * np.maximum(choices, 1)).astype(np.int64)
    # skip the excluded groups in increasing order
    x = x + (x >= lo)
    x = x + ((x >= hi) & (n_excl == 2))
    via = np.where((gs != gd) & (choices > 0), x, -1)
    return via.astype(np.int32)


@hookimpl
def federation_register_routings(register) -> None:  # noqa: ANN001
    register(Valiant)
