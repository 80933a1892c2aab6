"""Routing ``prog_adaptive``: CODES' progressive adaptive routing of the megafly (dragonfly+).

As CODES' megafly model does it (digest megafly-qos.md §2, the routing of Mubarak et al.'s
megafly QoS study, after Flajslik et al.'s PAR for the megafly): at every router of the source
group, until the packet commits to a non-minimal path, each candidate output port is scored by
its VC occupancy (bytes sent on it whose credit has not returned) plus the bytes of the packets
queued for it at this router.  The minimal candidate is the best-scored of the equal-cost
minimal ports (:mod:`federation.network.equal_cost`); the non-minimal one is the first port
towards the packet's drawn intermediate group.  With CODES' ``delta`` metric the non-minimal
score counts double (a 2:1 bias towards minimal), and the packet goes minimally when ``min_score <=
threshold`` or ``min_score <= 2 * nonmin_score``; otherwise it commits.  ``threshold``
defaults to one packet.  CODES' ``dfp_8k.conf`` sets 131,072 in its own queue accounting
(which includes router output buffers this engine does not model); here a score cannot pass
that figure on the shipped megafly (32 KiB per VC downstream), so the routing would never
leave minimal paths: measured under group shift at 0.3 offered, 0.031 accepted, exactly
minimal's, against 0.255 with the one-packet default.

VC plan as ``par`` (4 VCs on a megafly: VC = global hops so far, plus one for a commitment
after a minimal hop in the source group); the megafly paper's PAR also uses 4.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from federation import Params, RouteTables, hookimpl
from federation.engine.api import (
    F_USER0,
    P_DST,
    P_PHASE,
    P_SIZE,
    P_VIA,
    congestion,
    get_field,
    peer_router,
    pkt_src_router,
    set_field,
)
from federation.engine.jit import part
from federation.engine.tables_route import (
    follow,
    mask_program,
    table_port,
    turn_nonminimal,
    vc_rule,
)
from federation.plugin.components import RoutingProgram, TablePlan
from federation.plugins.routings.par import par_extra_vcs
from federation.plugins.routings.ugal import BiasSize
from federation.plugins.routings.valiant import Valiant


@part
def route(sim, tables, r, ip, pk):
    """Progressive adaptive choice at a source-group router, the tables elsewhere."""
    base, gmask, lmask, first, port, cfg = tables
    rgroup = base[2]
    ps = sim.ps
    dr = sim.node_router[ps[pk, P_DST]]
    via = np.int64(ps[pk, P_VIA])
    undecided = via >= 0 and ps[pk, P_PHASE] == 0 and get_field(sim, pk, F_USER0) == 0
    if not undecided or rgroup[r] != rgroup[pkt_src_router(sim, pk)]:
        if undecided:
            ps[pk, P_VIA] = -1  # left the source group minimally: the choice is over
            via = -1
        return follow(sim, base, r, pk, dr, via)
    size = np.int64(ps[pk, P_SIZE])
    m = gmask[r, rgroup[dr]]
    best = np.int64(-1)
    best_score = np.int64(1) << 62
    k = 0
    while m:  # the best-scored equal-cost minimal port
        if m & np.uint64(1):
            o = port[first[r] + k]
            s = congestion(sim, o, size)
            if s < best_score:
                best, best_score = o, s
        m >>= np.uint64(1)
        k += 1
    on = table_port(base, r, dr, via, 0)
    if best < 0 or on < 0:
        return np.int64(-1), np.int64(0)
    if best_score <= cfg[0] or best_score <= 2 * congestion(sim, on, size):
        if rgroup[peer_router(sim, best)] != rgroup[r]:
            ps[pk, P_VIA] = -1  # this hop leaves the source group: minimal for good
        return best, vc_rule(sim, base, pk, best)
    set_field(sim, pk, F_USER0, 1)  # committed
    turn_nonminimal(sim, pk)
    return follow(sim, base, r, pk, dr, via)


class ProgAdaptiveParams(Params):
    threshold: BiasSize | None = Field(
        None, description="bytes: a minimal score at or below this always goes minimal; "
        "default one packet (CODES' 131072 counts its own queue units, see the module doc); "
        "at most 2**40 (1 TiB)")


class ProgAdaptive(Valiant):
    """CODES megafly progressive adaptive: scores = VC occupancy + queued, 2:1 minimal bias."""

    name = "prog_adaptive"
    Params = ProgAdaptiveParams
    params: ProgAdaptiveParams

    def tables(self, network, topology, machine) -> RouteTables:  # noqa: ANN001
        t = super().tables(network, topology, machine)
        t.vcs_required += par_extra_vcs(t)
        t.description = (f"CODES prog-adaptive (minimal or Valiant, decided at each "
                         f"source-group router), {t.description}")
        return t

    def program(self, network, topology, machine, tables) -> RoutingProgram:  # noqa: ANN001
        threshold = self.params.threshold or machine.packet_size
        prog = mask_program(route, network, tables, "routing 'prog_adaptive'",
                            np.array([int(threshold)], dtype=np.int64))
        # PAR's plan; the minimal candidate is any equal-cost port while undecided
        prog.vc_plan = TablePlan(valiant="group", decide="source_group", commit_bump=1,
                                 spread="source_group")
        return prog


@hookimpl
def federation_register_routings(register) -> None:  # noqa: ANN001
    register(ProgAdaptive)
