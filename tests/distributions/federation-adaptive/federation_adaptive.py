"""A third-party routing and arbiter compiled into hpc-federation's event loop.

* Routing ``most_credit``: at every hop, among the output ports on a shortest path to the
  destination router, the one whose downstream VC has the most free credit (ties: the lowest
  port).  The VC is the number of hops so far, which is deadlock-free on any graph with as
  many VCs as its diameter: its VC plan says so (every hop from VC v to VC v + 1), and the
  run proves it before simulating.
* Arbiter ``random_pick``: an idle output port sends a request drawn at random among those
  with credit, from the run's seeded random stream (so runs stay reproducible).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from federation import Params, Routing, hookimpl
from federation.components import Arbiter, ClassPlan, RoutingProgram
from federation.engine import api
from federation.engine.arbiters import credit_ok
from federation.routing_tables import cable_ports, hop_distances


@njit(cache=True)
def route(sim, tables, r, ip, pk):
    """Called when packet ``pk`` heads its queue on input port ``ip`` of router ``r``."""
    dist, first, port, peer = tables
    d = api.pkt_dst_router(sim, pk)
    vc = api.pkt_hops(sim, pk)  # VC = hops so far
    best, best_free = -1, -1
    for k in range(first[r], first[r + 1]):
        if dist[peer[k], d] == dist[r, d] - 1:  # one hop closer: a minimal port
            free = api.free_credit(sim, port[k], vc)
            if free > best_free:
                best, best_free = port[k], free
    return best, vc


@njit(cache=True)
def inject(sim, tables, node, pk):
    """Nothing to decide at the NIC."""
    return


class MostCredit(Routing):
    """Per hop: the minimal port with the most free credit."""

    name = "most_credit"

    class Params(Params):
        pass

    def tables(self, network, topology, machine):  # noqa: ANN001
        return topology.minimal_routes(network)  # what summaries and checks use

    def program(self, network, topology, machine, tables):  # noqa: ANN001
        dist = hop_distances(network).astype(np.int16)  # R x R hop counts
        cp = cable_ports(network)  # each router's cable ports and their peers
        vcs = int(dist.max())
        cables = [c for c in network.link_classes if c != "terminal"]
        return RoutingProgram(
            route=route, inject=inject,
            tables=(dist, cp.indptr, cp.port.astype(np.int64), cp.peer.astype(np.int64)),
            vcs_required=vcs,
            description="minimal port with the most free credit, VC = hops so far",
            # the deadlock proof's input: a hop on VC v is followed by one on VC v + 1
            vc_plan=ClassPlan(tuple((a, v, b, v + 1) for a in cables for b in cables
                                    for v in range(vcs - 1))))


@njit(cache=True)
def random_pick(sim, state, o):
    """A random request with credit among those waiting for output ``o``."""
    n = 0
    qi = sim.req_head[o]
    while qi >= 0:  # count the candidates
        n += credit_ok(sim, o, qi)
        qi = sim.req_next[qi]
    if n == 0:
        return -1, -1
    k = api.random_below(sim, n)
    qi, prev = sim.req_head[o], -1
    while True:
        if credit_ok(sim, o, qi):
            if k == 0:
                return qi, prev
            k -= 1
        prev, qi = qi, sim.req_next[qi]


class RandomPick(Arbiter):
    """A random request with credit."""

    name = "random_pick"
    function = random_pick

    class Params(Params):
        pass


@hookimpl
def federation_register_routings(register) -> None:  # noqa: ANN001
    register(MostCredit)


@hookimpl
def federation_register_arbiters(register) -> None:  # noqa: ANN001
    register(RandomPick)
