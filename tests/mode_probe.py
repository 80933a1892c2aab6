"""A test routing that has modes and records, per source node, the mode each packet carries
(``pkt_mode``) as its NIC sends it: the proof that a message's mode reaches its packets.
Its moves are the minimal tables' (the engine's own table routing), declared as such."""

from __future__ import annotations

import numpy as np

from federation import Params, Routing, hookimpl
from federation.engine.api import pkt_mode
from federation.engine.jit import part
from federation.engine.tables_route import program_tables
from federation.engine.tables_route import route as table_route
from federation.plugin.components import RoutingProgram, TablePlan

MODES = ["ALPHA", "BETA", "GAMMA"]


@part
def route(sim, tables, r, ip, pk):
    return table_route(sim, tables[0], r, ip, pk)


@part
def inject(sim, tables, node, pk):
    seen = tables[1]
    seen[node, pkt_mode(sim, pk) + 1] += 1


class ModeProbe(Routing):
    """Minimal routing with three modes that counts packets by (source node, mode + 1)."""

    name = "mode_probe"
    Params = Params

    def tables(self, network, topology, machine):  # noqa: ANN001
        return topology.minimal_routes(network)

    @classmethod
    def modes(cls) -> list[str]:
        return list(MODES)

    def program(self, network, topology, machine, tables):  # noqa: ANN001
        seen = np.zeros((network.n_nodes, len(MODES) + 1), dtype=np.int64)
        return RoutingProgram(route=route, inject=inject, vcs_required=tables.vcs_required,
                              tables=(program_tables(tables, network.ports.n_ports), seen),
                              vc_plan=TablePlan())


@hookimpl
def federation_register_routings(register) -> None:  # noqa: ANN001
    register(ModeProbe)
