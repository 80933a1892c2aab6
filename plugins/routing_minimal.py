"""Routing ``minimal``: always a minimal path, as the topology defines it.

The topology supplies the tables (:meth:`federation.components.Topology.minimal_routes`): on a
dragonfly at most one global hop (local, global, local) with VC = global hops so far, so 2 VCs
suffice (CODES); on other graphs shortest paths with the topology's own deadlock-free VC rule.
"""

from __future__ import annotations

from federation import Params, RouteTables, Routing, hookimpl


class Minimal(Routing):
    """Minimal paths from the topology's tables (dragonfly: local-global-local, 2 VCs)."""

    name = "minimal"

    class Params(Params):
        pass

    def tables(self, network, topology, machine) -> RouteTables:  # noqa: ANN001
        return topology.minimal_routes(network)


@hookimpl
def federation_register_routings(register) -> None:  # noqa: ANN001
    register(Minimal)
