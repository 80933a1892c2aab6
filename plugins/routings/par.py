"""Routing ``par``: progressive adaptive routing, re-evaluated at every hop of the source group.

Each packet carries a candidate intermediate group drawn at injection, as for ``valiant``.  At
every router of its source group, until it commits, the router compares the occupancy of the
minimal path's next port (``q_min``: bytes sent on it whose credit has not returned, all VCs)
with that of the Valiant path's next port (``q_val``) and commits to the Valiant path when
``q_min > 2 * q_val + bias``; otherwise the packet takes one minimal hop and the next router of
the source group decides again.  Leaving the source group minimally ends the choice: the hop
that leaves it clears the packet's intermediate, so a minimal packet's ``via_group`` is -1 in
the packets table (also when that hop reaches its destination router, which routes nothing).
So a packet whose source router looks idle but whose group's global link is congested can still
divert at the router that owns that link, which UGAL-L at the source cannot (Jiang, Kim,
Dally, ISCA 2009, "Indirect adaptive routing on large scale interconnection networks"; CODES
dragonfly PAR, digest codes-torus-dragonfly.md §2; megafly PAR, digest megafly-qos.md §2).

VC plan (dragonfly): VC = global hops so far, plus one once a packet commits after a minimal
hop in its source group.  Each VC level then holds at most one local hop followed by a global
hop or ejection, as in minimal routing, so the channel dependencies stay acyclic: 4 VCs
(a commitment at the source router needs only 3).  On topologies without groups a packet
leaves its source group with its first hop, so ``par`` decides at the source router only,
like ``ugal``, with ``valiant``'s VCs.
"""

from __future__ import annotations

import numpy as np

from federation import RouteTables, hookimpl
from federation.engine.api import (
    F_USER0,
    P_DST,
    P_PHASE,
    P_VIA,
    get_field,
    peer_router,
    pkt_src_router,
    set_field,
)
from federation.engine.jit import part
from federation.engine.tables_route import (
    follow,
    table_program,
    turn_nonminimal,
    ugal_choice,
    vc_rule,
)
from federation.plugin.components import VC_COUNTER, RoutingProgram, TablePlan
from federation.plugins.routings.ugal import BiasParams
from federation.plugins.routings.valiant import Valiant


@part
def route(sim, tables, r, ip, pk):
    """PAR at router ``r``: decide again while in the source group and not committed."""
    rgroup = tables[2]
    ps = sim.ps
    dr = sim.node_router[ps[pk, P_DST]]
    via = np.int64(ps[pk, P_VIA])
    undecided = via >= 0 and ps[pk, P_PHASE] == 0 and get_field(sim, pk, F_USER0) == 0
    if undecided and rgroup[r] == rgroup[pkt_src_router(sim, pk)]:
        choice, om = ugal_choice(sim, tables, r, dr, via)
        if choice < 0:
            return np.int64(-1), np.int64(0)
        if choice == 0:
            set_field(sim, pk, F_USER0, 1)  # committed to the Valiant path
            turn_nonminimal(sim, pk)
        else:  # one more minimal hop; the next router decides again
            if rgroup[peer_router(sim, om)] != rgroup[r]:
                ps[pk, P_VIA] = -1  # this hop leaves the source group: minimal for good
            return om, vc_rule(sim, tables, pk, om)
    elif undecided:
        ps[pk, P_VIA] = -1  # left the source group minimally: the choice is over
        via = -1
    return follow(sim, tables, r, pk, dr, via)


#: the VC plan of the progressive routings (``par``; with ``spread`` ``prog_adaptive`` and
#: ``aries``): minimal or Valiant decided again at every router of the source group, one VC
#: level more for a commitment after a minimal hop (``turn_nonminimal``)
PROGRESSIVE = TablePlan(valiant="group", decide="source_group", commit_bump=1)


def par_extra_vcs(t: RouteTables) -> int:
    """One more VC level for a commitment after a minimal hop, where the VC rule counts hops
    through the whole path (see the VC plan); none where the phases have their own sets."""
    return 1 if t.vc_mode == VC_COUNTER and t.phase_vc_offset == 0 else 0


class Par(Valiant):
    """Progressive adaptive: minimal or Valiant, decided again at each source-group router."""

    name = "par"
    Params = BiasParams
    params: BiasParams

    def tables(self, network, topology, machine) -> RouteTables:  # noqa: ANN001
        t = super().tables(network, topology, machine)
        t.vcs_required += par_extra_vcs(t)
        bias = self.params.bias
        t.adaptive_bias = int(machine.packet_size if bias is None else bias)
        t.description = (f"PAR (minimal or Valiant, decided at each source-group router), "
                         f"{t.description}")
        return t

    def program(self, network, topology, machine, tables) -> RoutingProgram:  # noqa: ANN001
        prog = table_program(route, tables, network.ports.n_ports)
        prog.vc_plan = PROGRESSIVE
        return prog


@hookimpl
def federation_register_routings(register) -> None:  # noqa: ANN001
    register(Par)
