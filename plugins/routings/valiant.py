"""Routing ``valiant``: Valiant's randomized routing through an intermediate group.

Each packet draws an intermediate group uniformly among the groups that are neither its source
nor its destination group (on topologies without groups: an intermediate router), travels there
minimally, then minimally to its destination.  On a dragonfly this is local-global-local-global-
local with VC = global hops so far, hence 3 VCs (CODES).  Packets whose source and destination
share a group route minimally.

``intermediate: router`` draws a router of that group instead, and the packet travels to that
very router before turning to its destination (CODES' non-minimal routing through a random
router).  In the intermediate group a packet may then take two local hops, so the VC level goes
up by one where the phase changes, and the routing needs one VC more (4 on a dragonfly).  On
topologies without groups the two modes are the same.

A packet is delivered at its destination router whatever its phase (the engine ejects there):
on topologies without groups (tori, circulants, graph files) the way to the intermediate may
pass the destination router, and the packet then ends there, by a path as short as minimal's;
it still counts as non-minimal (the packets table's ``minimal`` column, the summary's
``nonminimal_fraction``: packets given an intermediate).  On a dragonfly or megafly the
intermediate group is never the destination's, so the way there never passes it.

Theory: under worst-case (group shift) traffic every packet crosses two global links, so it
sustains at most h / (2 p) x (global link bandwidth / injection bandwidth) of the injection
bandwidth: 50 % on a balanced dragonfly (h = p, equal bandwidths), 44.8 % on CODES' figures
(4.7 GiB/s global links, 5.25 GiB/s injection).  A bound, not a prediction: random
intermediates load the global links unevenly, and runs saturate below it.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from federation import Params, RouteTables, Routing, hookimpl
from federation.engine.api import P_DIM, P_DST, P_LEVEL, P_MINIMAL, P_PHASE, P_VIA
from federation.engine.jit import part
from federation.engine.tables_route import table_port, table_program, vc_rule
from federation.pipeline.tables_check import check_minimal_routes
from federation.plugin.components import VC_COUNTER, RoutingProgram, TablePlan


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


@part
def route_via_router(sim, tables, r, ip, pk):
    """Valiant through intermediate router ``P_VIA`` (not a group): minimal to it, then to
    the destination; the VC level goes up by one at the turn."""
    ps = sim.ps
    dr = sim.node_router[ps[pk, P_DST]]
    via = np.int64(ps[pk, P_VIA])
    if via >= 0 and ps[pk, P_PHASE] == 0:
        if r == via:
            ps[pk, P_PHASE] = 1
            ps[pk, P_LEVEL] += 1
            ps[pk, P_DIM] = -1  # dateline tables: phase two's levels start afresh
        else:
            ps[pk, P_MINIMAL] = 0
    target = via if via >= 0 and ps[pk, P_PHASE] == 0 else dr
    o = table_port(tables, r, target, -1, 0)
    if o < 0:
        return np.int64(-1), np.int64(0)
    return o, vc_rule(sim, tables, pk, o)


class ValiantParams(Params):
    intermediate: Literal["group", "router"] = Field(
        "group", description="draw an intermediate group (then route minimally once in it), or "
        "an intermediate router (travel to that router first; one VC more)")


class Valiant(Routing):
    """Random intermediate group per packet, then minimal (dragonfly: 3 VCs)."""

    name = "valiant"
    Params = ValiantParams
    params: ValiantParams

    def _via_router(self, tables: RouteTables) -> bool:
        """Router mode, where it differs from group mode (some group has several routers)."""
        mode = getattr(self.params, "intermediate", "group")
        return mode == "router" and tables.router_group.max() + 1 < tables.router_group.shape[0]

    def program(self, network, topology, machine, tables) -> RoutingProgram | None:  # noqa: ANN001
        if not self._via_router(tables) or type(self).program is not Valiant.program:
            return None
        prog = table_program(route_via_router, tables, network.ports.n_ports)
        prog.via_limit = network.n_routers  # intermediates are routers here
        prog.vc_plan = TablePlan(valiant="router", turn_bump=1)  # the level rises at the turn
        return prog

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
        if self._via_router(t) and counts_hops:
            t.vcs_required += 1  # the level goes up at the turn (see the module docstring)
            t.description = f"Valiant via a random router, then {t.description}"
        elif self._via_router(t):
            t.description = f"Valiant via a random router, then {t.description}"
        else:
            t.description = f"Valiant via a random group, then {t.description}"
        return t

    def intermediates(self, tables, src_router, dst_router, rng):  # noqa: ANN001
        groups = draw_intermediate_groups(tables, src_router, dst_router, rng)
        if not self._via_router(tables):
            return groups
        return draw_router_in_group(tables, groups, rng)

    def intermediate_rule(self, tables: RouteTables) -> str:
        """The same draws inside the loop (``engine.programs.draw_via``)."""
        return "router" if self._via_router(tables) else "group"


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


def draw_router_in_group(tables: RouteTables, groups: np.ndarray,
                         rng: np.random.Generator) -> np.ndarray:
    """A uniform router of each packet's drawn group (-1 stays -1)."""
    rg = tables.router_group.astype(np.int64)
    order = np.argsort(rg, kind="stable")
    counts = np.bincount(rg, minlength=int(rg.max()) + 1)
    start = np.cumsum(counts) - counts
    g = np.maximum(groups.astype(np.int64), 0)
    pick = (rng.random(groups.shape[0]) * counts[g]).astype(np.int64)
    return np.where(groups >= 0, order[start[g] + pick], -1).astype(np.int32)


@hookimpl
def federation_register_routings(register) -> None:  # noqa: ANN001
    register(Valiant)
