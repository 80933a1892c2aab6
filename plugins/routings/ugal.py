"""Routing ``ugal``: UGAL-L, the source router chooses minimal or Valiant per packet.

At the packet's source router the engine compares the occupancy of the first output port of the
minimal path (``q_min``: bytes held in the downstream input buffers of that port, all VCs) with
that of the Valiant path (``q_val``) and routes minimally when ``q_min <= 2 * q_val + bias``: the
Valiant path is about twice as long, so its queue counts double (Kim, Dally, Scott, Abts, ISCA
2008; CODES' adaptive routing compares the two queues unweighted).  ``bias`` (bytes, default one
packet) favours the minimal path: without it a single packet queued ahead sends a tenth of
low-load traffic the long way.  The decision is made once.

Where the decision is made (``decide``): ``source_router`` (the default: when the packet heads
its queue at the source router, so it sees that router's queues as they are when it can leave)
or ``injection`` (when its NIC sends it, from the same router's queues, as BookSim2 does: its
routers route one hop ahead, ``routing_delay = 0``, so the source router's choice is made when
the packet is injected; the packet then waits in the router's input queue with its choice
made).

The intermediate (``intermediate``):

* ``group`` (the default): a random group other than the source's and the destination's;
  then minimally once in it.  VCs as for ``valiant`` (3 on a dragonfly).
* ``node``: BookSim2's ``ugal_dragonflynew``.  A node drawn uniformly among *all* nodes; the
  packet goes to that node's router, then minimally to its destination.  An intermediate in
  the source group, or a destination in it, means the minimal path (no comparison).  The VC is
  the phase: 0 on the way to the intermediate router, 1 from there (or from the source, when
  minimal) up to the global hop, 2 on the global hop and after it; a destination in the source
  group takes VC 2.  3 VCs on a dragonfly.  BookSim compares used credits in flits with a bias
  of 30: 30 packets' bytes here (``bias: 1920B`` for its 64-byte flits).
"""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np
from pydantic import AfterValidator, Field

from federation import Params, RouteTables, hookimpl
from federation.engine.api import P_DST, P_LEVEL, P_MINIMAL, P_PHASE, P_VIA, used_credit_all
from federation.engine.jit import part
from federation.engine.tables_route import route, table_port, table_program, ugal_choice
from federation.errors import RoutingError
from federation.models.units import PositiveSize
from federation.plugin.components import ClassPlan, RoutingProgram, TablePlan
from federation.plugins.routings.valiant import Valiant


@part
def decide_at_injection(sim, tables, node, pk):
    """UGAL-L when the NIC of ``node`` sends ``pk``, on the queues of its router."""
    ps = sim.ps
    via = np.int64(ps[pk, P_VIA])
    r = sim.node_router[node]
    dr = sim.node_router[ps[pk, P_DST]]
    if via >= 0 and r != dr and ugal_choice(sim, tables, r, dr, via)[0] == 1:
        ps[pk, P_VIA] = -1


# --------------------------------------------------------------------------- intermediate: node
#: BookSim2's VC = phase, as moves between (link class, VC): phase 0 (VC 0) local, global,
#: local to the intermediate router; phase 1 (VC 1) local hops up to the global hop, which
#: and whatever follows it take VC 2.  The proof finds the cycle local 0 -> global 0 -> local
#: 0 (a packet on its way to an intermediate and one leaving its source group share the local
#: VC 0 channels), so this plan is refused unless --no-deadlock-check: a reproduction of
#: BookSim's figures, not a routing proved safe.
NODE_PLAN = ClassPlan((
    ("local", 0, "global", 0), ("global", 0, "local", 0),
    ("local", 0, "local", 1), ("local", 0, "global", 2),
    ("global", 0, "local", 1), ("global", 0, "global", 2),
    ("local", 1, "global", 2), ("global", 2, "local", 2)))
# P_PHASE holds BookSim's phase (the VC); P_LEVEL is 1 once the choice is made.


@part
def node_choice(sim, tables, r, pk):
    """BookSim's UGAL at router ``r`` (the source router): sets the packet's phase, and its
    intermediate router to -1 when it goes minimally."""
    ps = sim.ps
    ps[pk, P_LEVEL] = 1
    rgroup = tables[2]
    dr = sim.node_router[ps[pk, P_DST]]
    via = np.int64(ps[pk, P_VIA])
    if rgroup[dr] == rgroup[r]:
        ps[pk, P_PHASE] = 2  # the destination is in this group: minimal, VC 2
        ps[pk, P_VIA] = -1
        return
    if via < 0 or rgroup[via] == rgroup[r]:
        ps[pk, P_PHASE] = 1  # an intermediate in this group: minimal
        ps[pk, P_VIA] = -1
        return
    om = table_port(tables, r, dr, -1, 0)
    on = table_port(tables, r, via, -1, 0)
    if om >= 0 and on >= 0 and (used_credit_all(sim, om)
                                <= 2 * used_credit_all(sim, on) + tables[7][2]):
        ps[pk, P_PHASE] = 1
        ps[pk, P_VIA] = -1
    else:
        ps[pk, P_PHASE] = 0
        ps[pk, P_MINIMAL] = 0


@part
def node_inject(sim, tables, node, pk):
    """``decide: injection``: the choice at the NIC, on its router's queues."""
    node_choice(sim, tables, sim.node_router[node], pk)


@part
def node_route(sim, tables, r, ip, pk):
    """Port and VC at router ``r`` (BookSim's ``ugal_dragonflynew`` hop)."""
    ps = sim.ps
    if ps[pk, P_LEVEL] == 0:
        node_choice(sim, tables, r, pk)  # decide: source_router
    via = np.int64(ps[pk, P_VIA])
    if ps[pk, P_PHASE] == 0 and r == via:
        ps[pk, P_PHASE] = 1  # the intermediate router: minimal from here
    dr = sim.node_router[ps[pk, P_DST]]
    target = via if ps[pk, P_PHASE] == 0 else dr
    o = table_port(tables, r, target, -1, 0)
    if o < 0:
        return np.int64(-1), np.int64(0)
    if ps[pk, P_PHASE] == 1 and tables[4][o]:
        ps[pk, P_PHASE] = 2  # the global hop: VC 2 from it on
    return o, np.int64(ps[pk, P_PHASE])


#: largest bias or threshold (bytes) of the adaptive routings: their costs are int64 sums of
#: queued bytes and a bias (aries' ADAPTIVE_1: times the hops made), compared with 2**62;
#: 1e30 was an OverflowError in ``validate``, 1e19 a refusal of the plugin's tables
MAX_BIAS = 2**40


def _bounded(v: float) -> float:
    if v > MAX_BIAS:
        raise ValueError(f"{v:g} B is more than {MAX_BIAS} B (2**40, 1 TiB): the routing's "
                         "costs are int64 sums of queued bytes and the bias")
    return v


#: bytes of a bias or threshold: positive, at most :data:`MAX_BIAS`
BiasSize = Annotated[PositiveSize, AfterValidator(_bounded)]


class BiasParams(Params):
    """The minimal-path bias of the UGAL family (``ugal``, ``par``)."""

    bias: BiasSize | None = Field(
        None, description="bytes added to the Valiant side (favours minimal); default: one "
        "packet, so a single packet ahead does not send traffic the long way; at most 2**40 "
        "(1 TiB)")


class UgalParams(BiasParams):
    decide: Literal["source_router", "injection"] = Field(
        "source_router", description="where the choice is made: when the packet heads its "
        "queue at the source router, or when its NIC sends it (BookSim2, whose routers route "
        "one hop ahead)")
    intermediate: Literal["group", "node"] = Field(
        "group", description="`group`: a random group other than the source's and the "
        "destination's; `node`: a node drawn among all nodes, the packet goes to its router "
        "(BookSim2's ugal_dragonflynew, VC by phase)")


class Ugal(Valiant):
    """UGAL-L: per packet at the source, minimal unless its first queue is twice the Valiant one."""

    name = "ugal"
    Params = UgalParams
    params: UgalParams

    def _via_router(self, tables: RouteTables) -> bool:
        return False  # node mode draws its own intermediates (below)

    def tables(self, network, topology, machine) -> RouteTables:  # noqa: ANN001
        t = super().tables(network, topology, machine)
        t.adaptive = True
        bias = self.params.bias
        t.adaptive_bias = int(machine.packet_size if bias is None else bias)
        where = "source router" if self.params.decide == "source_router" else "injection"
        if self.params.intermediate == "node":
            t.vcs_required = 3  # VC = phase (BookSim)
            t.extra["node_router"] = np.asarray(network.node_router, dtype=np.int64)
            t.description = (f"UGAL-L via a random node's router, VC by phase (BookSim2), "
                             f"decided at the {where}")
        else:
            t.description = f"UGAL-L (minimal or Valiant at the {where}), {t.description}"
        return t

    def program(self, network, topology, machine, tables) -> RoutingProgram | None:  # noqa: ANN001
        if self.params.intermediate == "node":
            missing = sorted({"local", "global"} - set(network.link_classes))
            if missing:  # its VC = phase is defined by the dragonfly's local and global hops
                raise RoutingError(
                    f"routing 'ugal' with intermediate: node is BookSim2's dragonfly routing "
                    f"(VC by phase over local and global links), but this network has no "
                    f"{' or '.join(missing)} links (it has: {', '.join(network.link_classes)}); "
                    f"use intermediate: group")
            inject = node_inject if self.params.decide == "injection" else None
            prog = table_program(node_route, tables, network.ports.n_ports, inject)
            prog.via_limit = network.n_routers
            prog.vc_plan = NODE_PLAN
            return prog
        if self.params.decide == "source_router":
            return None  # the table routing decides at the source router
        prog = table_program(route, tables, network.ports.n_ports, decide_at_injection)
        prog.tables[7][1] = 0  # the NIC decides; the routers only follow
        prog.vc_plan = TablePlan(valiant="group")  # minimal or Valiant, chosen at the source
        return prog

    def intermediates(self, tables, src_router, dst_router, rng):  # noqa: ANN001
        if self.params.intermediate != "node":
            return super().intermediates(tables, src_router, dst_router, rng)
        node_router = tables.extra["node_router"]
        pick = node_router[rng.integers(0, node_router.shape[0], size=src_router.shape[0])]
        rg = tables.router_group
        return np.where(rg[src_router] != rg[dst_router], pick, -1).astype(np.int32)

    def intermediate_rule(self, tables: RouteTables) -> str:
        return "node" if self.params.intermediate == "node" else super().intermediate_rule(
            tables)


@hookimpl
def federation_register_routings(register) -> None:  # noqa: ANN001
    register(Ugal)
