"""Routing ``ugal``: UGAL-L, the source router chooses minimal or Valiant per packet.

At the packet's source router the engine compares the occupancy of the first output port of the
minimal path (``q_min``: bytes held in the downstream input buffers of that port, all VCs) with
that of the Valiant path (``q_val``) and routes minimally when ``q_min <= 2 * q_val + bias``: the
Valiant path is about twice as long, so its queue counts double (Kim, Dally, Scott, Abts, ISCA
2008; CODES' adaptive routing compares the two queues unweighted).  ``bias`` (bytes, default one
packet) favours the minimal path: without it a single packet queued ahead sends a tenth of
low-load traffic the long way.  The decision is made once; VCs as for ``valiant`` (3 on a
dragonfly).

Where the decision is made (``decide``): ``source_router`` (the default, as BookSim: when the
packet heads its queue at the source router, so it sees the queues as they are when it can
leave) or ``injection`` (when the NIC sends it, from the same router's output queues, as
simulators that route at generation time do; the packet then waits in the router's input queue
with its choice made).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from numba import njit
from pydantic import Field

from federation import Params, RouteTables, hookimpl
from federation.engine.api import P_DST, P_VIA
from federation.engine.tables_route import route, table_program, ugal_choice
from federation.models.units import PositiveSize
from federation.plugin.components import RoutingProgram, TablePlan
from federation.plugins.routings.valiant import Valiant


@njit(cache=True, inline="always")
def decide_at_injection(sim, tables, node, pk):
    """UGAL-L when the NIC of ``node`` sends ``pk``, on the queues of its router."""
    ps = sim.ps
    via = np.int64(ps[pk, P_VIA])
    r = sim.node_router[node]
    dr = sim.node_router[ps[pk, P_DST]]
    if via >= 0 and r != dr and ugal_choice(sim, tables, r, dr, via)[0] == 1:
        ps[pk, P_VIA] = -1


class BiasParams(Params):
    """The minimal-path bias of the UGAL family (``ugal``, ``par``)."""

    bias: PositiveSize | None = Field(
        None, description="bytes added to the Valiant side (favours minimal); default: one "
        "packet, so a single packet ahead does not send traffic the long way")


class UgalParams(BiasParams):
    decide: Literal["source_router", "injection"] = Field(
        "source_router", description="where the choice is made: when the packet heads its "
        "queue at the source router, or when its NIC sends it")


class Ugal(Valiant):
    """UGAL-L: per packet at the source, minimal unless its first queue is twice the Valiant one."""

    name = "ugal"
    Params = UgalParams
    params: UgalParams

    def tables(self, network, topology, machine) -> RouteTables:  # noqa: ANN001
        t = super().tables(network, topology, machine)
        t.adaptive = True
        bias = self.params.bias
        t.adaptive_bias = int(machine.packet_size if bias is None else bias)
        where = "source router" if self.params.decide == "source_router" else "injection"
        t.description = f"UGAL-L (minimal or Valiant at the {where}), {t.description}"
        return t

    def program(self, network, topology, machine, tables) -> RoutingProgram | None:  # noqa: ANN001
        if self.params.decide == "source_router":
            return None  # the table routing decides at the source router
        prog = table_program(route, tables, network.ports.n_ports, decide_at_injection)
        prog.tables[7][1] = 0  # the NIC decides; the routers only follow
        prog.vc_plan = TablePlan(valiant="group")  # minimal or Valiant, chosen at the source
        return prog


@hookimpl
def federation_register_routings(register) -> None:  # noqa: ANN001
    register(Ugal)
