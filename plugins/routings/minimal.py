"""Routing ``minimal``: always a minimal path, as the topology defines it.

The topology supplies the tables
(:meth:`federation.plugin.components.Topology.minimal_routes`): on a dragonfly at most one global
hop (local, global, local) with VC = global hops so far, so 2 VCs
suffice (CODES); on other graphs shortest paths with the topology's own deadlock-free VC rule.

``vc_step: on`` raises the VC level on a VC-bumping (dragonfly: global) hop itself instead of
after it, BookSim2's plan: its global hop and what follows use VC 1.  Both are deadlock-free;
they differ in which input buffers a global link fills and on which VC packets leave.

``spread`` chooses among *all* equal-cost minimal ports (:mod:`federation.network.equal_cost`: the
ports whose table path is as short and crosses as many VC-bumping ports) instead of the one the
tables name: ``table`` (the default, the tables' own choice, itself spread over destinations
on most topologies), ``lowest`` (the lowest-numbered equal-cost port: every destination through
the first of several global links, a deterministic worst case to compare with), ``hash`` (a
fixed hash of the destination router and the current router picks one) or ``random`` (drawn
per packet and hop from the run's seeded stream).  The VC plan is the tables' in every case
(declared to the deadlock proof as ``TablePlan(spread="all")``); where the tables keep an order
inside one VC level that the equal-cost ports do not (the Aries XC's groups, routed
intra-chassis first) the proof finds a cycle and refuses the run.  Dimension-order tori have one
minimal port per hop and take ``table`` only.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field, field_validator

from federation import Params, RouteTables, Routing, hookimpl
from federation.engine.api import P_DST, random_below
from federation.engine.jit import part
from federation.engine.masks import mask_count, mask_nth, mix_hash
from federation.engine.tables_route import mask_program, vc_rule
from federation.network.routes import most_vc_bumps
from federation.network.tables import VC_COUNTER
from federation.plugin.components import RoutingProgram, TablePlan

SPREADS = {"lowest": 0, "hash": 1, "random": 2}


@part
def route_spread(sim, tables, r, ip, pk):
    """A port among the equal-cost minimal ports of ``r`` towards the packet's destination."""
    base, gmask, lmask, first, port, cfg = tables
    mode = cfg[0]
    rgroup, rlocal = base[2], base[3]
    dr = sim.node_router[sim.ps[pk, P_DST]]
    if rgroup[r] != rgroup[dr]:
        m = gmask[r, rgroup[dr]]
    else:
        m = lmask[r, rlocal[dr]]
    n = mask_count(m)
    if n == 0:
        return np.int64(-1), np.int64(0)
    if mode == 0:
        pick = 0
    elif mode == 1:
        pick = np.int64(mix_hash(dr, r) % np.uint64(n))
    else:
        pick = random_below(sim, n)
    o = port[first[r] + mask_nth(m, pick)]
    return o, vc_rule(sim, base, pk, o)


class MinimalParams(Params):
    spread: Literal["table", "lowest", "hash", "random"] = Field(
        "table", description="which equal-cost minimal port: the tables' own (table), the "
        "lowest-numbered, a hash of the destination, or a random one per packet and hop")
    vc_step: Literal["after", "on"] = Field(
        "after", description="where the VC level goes up at a VC-bumping port (a "
        "dragonfly's global link): `after` its hop (the global hop on the lower VC, as CODES) "
        "or `on` it (the global hop already on the higher VC, as BookSim2's dragonflynew)")

    @field_validator("vc_step", mode="before")
    @classmethod
    def _on(cls, v: object) -> object:
        """``vc_step: on`` unquoted: YAML 1.1 reads the value ``on`` as ``true``."""
        return "on" if v is True else v


class Minimal(Routing):
    """Minimal paths from the topology's tables (dragonfly: local-global-local, 2 VCs)."""

    name = "minimal"
    Params = MinimalParams
    params: MinimalParams

    def tables(self, network, topology, machine) -> RouteTables:  # noqa: ANN001
        t = topology.minimal_routes(network)
        if self.params.vc_step == "on" and t.vc_mode == VC_COUNTER:
            t.extra["vc_on_bump"] = True
            # the last bumping hop of a route now travels on the level it raised: one VC
            # more than its bumps (a dragonfly's one global hop: 2, as after; a route whose
            # every hop bumps, VC = hop index: its diameter plus one)
            most = most_vc_bumps(network, t)
            t.vcs_required = max(t.vcs_required, most + 1)
            t.description = (f"{t.description}, the VC steps up on each VC-bumping hop itself "
                             f"(at most {most} on a route: {t.vcs_required} VCs)")
        return t

    def program(self, network, topology, machine, tables) -> RoutingProgram | None:  # noqa: ANN001
        spread = self.params.spread
        if spread == "table":
            return None
        prog = mask_program(route_spread, network, tables,
                            f"routing 'minimal' (spread: {spread})",
                            np.array([SPREADS[spread]], dtype=np.int64),
                            f"{tables.description}, {spread} among equal-cost minimal ports")
        prog.vc_plan = TablePlan(spread="all")  # any equal-cost minimal port, at every hop
        return prog


@hookimpl
def federation_register_routings(register) -> None:  # noqa: ANN001
    register(Minimal)
