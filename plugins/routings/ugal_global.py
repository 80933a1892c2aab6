"""Routing ``ugal_global``: UGAL with global knowledge (UGAL-G), an oracle.

At the source router each packet compares the *whole* minimal path with the *whole* Valiant
path through its drawn intermediate group: the cost of a path is the occupancy of every output
port along it (bytes sent whose credit has not returned, all VCs) plus one packet's size per
hop (the zero-load term, in the same unit), and the packet takes the cheaper, minimal on ties
or within ``bias`` bytes.  No router can see remote queues like this; the figure is the bound
that practical adaptive routings (``ugal``, ``par``) approach (Kim, Dally, Scott, Abts,
"Technology-driven, highly-scalable dragonfly topology", ISCA 2008, §4.2).  VCs as for
``valiant``.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from federation import Params, RouteTables, hookimpl
from federation.engine.api import P_DST, P_HOPS, P_PHASE, P_SIZE, P_VIA, used_credit_all
from federation.engine.jit import part
from federation.engine.tables_route import route, table_port, table_program
from federation.plugin.components import RoutingProgram, TablePlan
from federation.plugins.routings.ugal import BiasSize
from federation.plugins.routings.valiant import Valiant


@part
def path_cost(sim, tables, r, dr, via, size):
    """Occupancy along the table path from ``r`` to ``dr`` (through group ``via`` first, -1:
    minimal) plus ``size`` bytes per hop; -1 if the tables have no path."""
    rgroup = tables[2]
    phase = 0
    cost = np.int64(0)
    hops = 0
    while r != dr and hops < sim.max_hops:
        if via >= 0 and rgroup[r] == via:
            phase = 1
        o = table_port(tables, r, dr, via, phase)
        if o < 0:
            return np.int64(-1)
        cost += used_credit_all(sim, o) + size
        r = sim.port_router[sim.port_peer[o]]
        hops += 1
    return cost


@part
def route_global(sim, tables, r, ip, pk):
    """At the source router choose the cheaper whole path, then follow the tables."""
    ps = sim.ps
    via = np.int64(ps[pk, P_VIA])
    if via >= 0 and ps[pk, P_HOPS] == 0 and ps[pk, P_PHASE] == 0:
        dr = sim.node_router[ps[pk, P_DST]]
        size = np.int64(ps[pk, P_SIZE])
        cm = path_cost(sim, tables, r, dr, -1, size)
        cv = path_cost(sim, tables, r, dr, via, size)
        if cm < 0 or cv < 0 or table_port(tables, r, dr, via, 0) < 0:
            return np.int64(-1), np.int64(0)
        if cm <= cv + tables[7][2]:
            ps[pk, P_VIA] = -1
    return route(sim, tables, r, ip, pk)


class UgalGlobalParams(Params):
    bias: BiasSize | None = Field(
        None, description="bytes added to the Valiant side (favours minimal); default: 0; at "
        "most 2**40 (1 TiB)")


class UgalGlobal(Valiant):
    """UGAL-G (oracle): the cheaper whole path by occupancy along it, at the source."""

    name = "ugal_global"
    Params = UgalGlobalParams
    params: UgalGlobalParams

    def tables(self, network, topology, machine) -> RouteTables:  # noqa: ANN001
        t = super().tables(network, topology, machine)
        t.adaptive_bias = int(self.params.bias or 0)
        t.description = f"UGAL-G (oracle, whole-path occupancy at the source), {t.description}"
        return t

    def program(self, network, topology, machine, tables) -> RoutingProgram:  # noqa: ANN001
        prog = table_program(route_global, tables, network.ports.n_ports)
        prog.vc_plan = TablePlan(valiant="group")  # minimal or Valiant, chosen at the source
        return prog


@hookimpl
def federation_register_routings(register) -> None:  # noqa: ANN001
    register(UgalGlobal)
