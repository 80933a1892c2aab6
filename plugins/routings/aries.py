"""Routing ``aries``: Cray Aries' adaptive routing and its routing modes.

From De Sensi, Di Girolamo, Hoefler, SC'19, §2.2 (digest aries-routing-noise.md §2): for each
packet two minimal and two non-minimal paths are picked at random; the congestion of each is
estimated from local queue occupancy and from far-end congestion inferred from credits; a
*bias* is added to the non-minimal estimates; the packet takes the least congested.  Here:

* towards another group -- minimal candidates: two ports drawn from the router's equal-cost
  minimal ports towards the destination (:mod:`federation.network.equal_cost`); non-minimal
  candidates: the first ports towards two intermediate groups drawn among the others (Valiant
  paths);
* inside a group (the packet's destination router is in its source group) -- at the source
  router, minimal candidates: two of the equal-cost minimal ports (on Aries intra-chassis
  first, the tables' path, or inter-chassis first); non-minimal candidates: two of the other
  neighbours in the group (another router of the row or column), except those from which
  the tables lead back through the source router; after a hop that is not the tables' own
  the packet routes minimally by the tables, one VC level up (``TablePlan.detour``): at most
  3 hops, where the paper's "non-minimal path inside a group" is not detailed;
* cost of a port: bytes of the packets waiting for it at this router (``queued x packet
  size``) plus bytes sent on it whose credit has not returned (far-end congestion); with
  ``router.credit_delay`` the credits, hence this far-end part, are that much late (phantom
  congestion; the paper gives no figure);
* towards another group the choice is made again at every router of the source group until
  the packet commits to a non-minimal path (as Aries routes adaptively hop by hop); it then
  follows the tables through its intermediate group, like ``valiant``;
* modes (``MPICH_GNI_ROUTING_MODE``): ``ADAPTIVE_0`` no bias; ``ADAPTIVE_1`` a bias towards
  minimal that grows as the packet nears its destination (``bias_step`` at the source router,
  one ``bias_step`` more for every hop made); ``ADAPTIVE_2`` low bias (``bias_low``);
  ``ADAPTIVE_3`` high bias (``bias_high``); ``MIN_HASH`` always minimal, the port hashed from
  the destination among the equal-cost ones; ``NMIN_HASH`` always non-minimal, the
  intermediate group (inside a group: the neighbour) hashed from source and destination;
  ``IN_ORDER`` always minimal on the tables' single path (packets of a pair stay in order).
  A packet's own mode (``pkt_mode``: a message's per-message mode, an index into
  :meth:`Aries.modes`) overrides the configured one.

The bias values are not public.  Defaults, in packets of the machine (64 B on the shipped
Aries machine): ``bias_step`` 1, ``bias_low`` 2, ``bias_high`` 8, so that at the source router
the modes order ADAPTIVE_0 < ADAPTIVE_1 < ADAPTIVE_2 < ADAPTIVE_3.  Costs move in whole packets,
so a bias below one packet acts like none.

VC plan as ``par``: VC = global hops so far, plus one for a commitment after a minimal hop in
the source group (4 VCs on a dragonfly-family machine); inside a group, VC 0 for the first
hop and 1 after a detour (``TablePlan.detour``, proved with the rest before the run).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from federation import Params, RouteTables, hookimpl
from federation.engine.api import (
    F_USER0,
    FIELD_COLUMNS,
    P_DST,
    P_HOPS,
    P_LEVEL,
    P_PHASE,
    P_SIZE,
    P_SRC,
    P_VIA,
    congestion,
    mark_nonminimal,
    pkt_mode,
    random_below,
    skip_past,
)
from federation.engine.jit import part
from federation.engine.masks import mask_count, mask_nth, mix_hash
from federation.engine.tables_route import (
    follow,
    mask_program,
    table_port,
    turn_nonminimal,
    vc_rule,
)
from federation.network.routes import cable_ports
from federation.plugin.components import RoutingProgram, TablePlan
from federation.plugins.routings.par import par_extra_vcs
from federation.plugins.routings.ugal import BiasSize
from federation.plugins.routings.valiant import Valiant

#: VC levels a packet goes up after an intra-group detour hop
DETOUR_BUMP = 1

MODES = ["ADAPTIVE_0", "ADAPTIVE_1", "ADAPTIVE_2", "ADAPTIVE_3", "MIN_HASH", "NMIN_HASH",
         "IN_ORDER"]


#: the packet column (``F_USER0``) holding "this packet made a detour hop in its source group:
#: raise its VC level at the next router"
P_DETOUR = int(FIELD_COLUMNS[F_USER0])


@part
def route(sim, tables, r, ip, pk):
    """Aries routing at router ``r`` (see the module docstring)."""
    base, gmask, lmask, first, port, cfg, dmask = tables
    ps = sim.ps
    mode = pkt_mode(sim, pk)
    if mode < 0:
        mode = cfg[0]
    rgroup = base[2]
    dr = sim.node_router[ps[pk, P_DST]]
    if ps[pk, P_DETOUR]:  # the router after a detour hop: minimal from here, a level up
        ps[pk, P_DETOUR] = 0
        ps[pk, P_LEVEL] += cfg[4]
        return follow(sim, base, r, pk, dr, np.int64(-1))
    src_group = rgroup[sim.node_router[ps[pk, P_SRC]]]
    if rgroup[dr] == src_group:
        if mode == 6 or ps[pk, P_HOPS] > 0:
            return follow(sim, base, r, pk, dr, np.int64(-1))
        return _local(sim, tables, r, pk, dr, mode)
    if mode == 6 or ps[pk, P_VIA] >= 0 or rgroup[r] != src_group:
        return follow(sim, base, r, pk, dr, np.int64(ps[pk, P_VIA]))  # tables from here
    m = gmask[r, rgroup[dr]]
    n = mask_count(m)
    if n == 0:
        return np.int64(-1), np.int64(0)
    if mode == 4:  # MIN_HASH
        o = port[first[r] + mask_nth(m, np.int64(mix_hash(dr, r) % np.uint64(n)))]
        return o, vc_rule(sim, base, pk, o)
    choices = base[0].shape[1] - 2
    if mode == 5:  # NMIN_HASH: the intermediate group from source and destination
        if choices < 1:
            return follow(sim, base, r, pk, dr, np.int64(-1))
        x = np.int64(mix_hash(ps[pk, P_SRC], ps[pk, P_DST]) % np.uint64(choices))
        return _commit(sim, base, r, pk, dr, skip_past(x, src_group, rgroup[dr]))
    size = np.int64(ps[pk, P_SIZE])
    best = np.int64(-1)
    best_cost = np.int64(1) << 62
    for _ in range(2):  # two random minimal candidates
        o = port[first[r] + mask_nth(m, random_below(sim, n))]
        c = congestion(sim, o, size)
        if c < best_cost:
            best, best_cost = o, c
    bias = _bias(cfg, mode, ps[pk, P_HOPS])
    via = np.int64(-1)
    for _ in range(2 if choices >= 1 else 0):  # two random non-minimal candidates
        g = skip_past(random_below(sim, choices), src_group, rgroup[dr])
        o = table_port(base, r, dr, g, 0)
        if o >= 0:
            c = congestion(sim, o, size) + bias
            if c < best_cost:
                best_cost, via = c, g
    if via >= 0:
        return _commit(sim, base, r, pk, dr, via)
    return best, vc_rule(sim, base, pk, best)


@part
def _bias(cfg, mode, hops):
    """Bytes added to a non-minimal candidate's cost in ``mode``."""
    if mode == 1:
        return cfg[3] * (hops + 1)
    if mode == 2:
        return cfg[1]
    if mode == 3:
        return cfg[2]
    return np.int64(0)


@part
def _local(sim, tables, r, pk, dr, mode):
    """First hop of a packet for a router of its own group, at its source router ``r``: two
    random minimal candidates (the equal-cost ports: intra-chassis first, the tables' path, or
    inter-chassis first) and two random non-minimal ones (another neighbour in the group, a
    router of the row or column, from which the tables do not lead back through ``r``), the
    least congested with the mode's bias."""
    base, gmask, lmask, first, port, cfg, dmask = tables
    ps = sim.ps
    m = lmask[r, base[3][dr]]
    nm = _detours(sim, base, first, port, r, dr, dmask[r] & ~m)
    n, k = mask_count(m), mask_count(nm)
    if n == 0:
        return np.int64(-1), np.int64(0)
    if mode == 4:  # MIN_HASH
        o = port[first[r] + mask_nth(m, np.int64(mix_hash(dr, r) % np.uint64(n)))]
        return _local_hop(sim, base, r, pk, dr, o, True)
    if mode == 5 and k > 0:  # NMIN_HASH
        x = np.int64(mix_hash(ps[pk, P_SRC], ps[pk, P_DST]) % np.uint64(k))
        return _local_hop(sim, base, r, pk, dr, port[first[r] + mask_nth(nm, x)], False)
    size = np.int64(ps[pk, P_SIZE])
    best = np.int64(-1)
    best_cost = np.int64(1) << 62
    for _ in range(2):
        o = port[first[r] + mask_nth(m, random_below(sim, n))]
        c = congestion(sim, o, size)
        if c < best_cost:
            best, best_cost = o, c
    minimal = True
    bias = _bias(cfg, mode, ps[pk, P_HOPS])
    for _ in range(2 if k > 0 else 0):
        o = port[first[r] + mask_nth(nm, random_below(sim, k))]
        c = congestion(sim, o, size) + bias
        if c < best_cost:
            best, best_cost, minimal = o, c, False
    return _local_hop(sim, base, r, pk, dr, best, minimal)


@part
def _detours(sim, base, first, port, r, dr, nm):
    """The ports of mask ``nm`` (neighbours of ``r`` in its group) whose tables' path to
    ``dr`` does not come back through ``r`` (on Aries: a router of the column when ``dr`` is
    in the row, since the tables go intra-chassis first)."""
    lnext, rlocal = base[1], base[3]
    out = nm
    b = np.int64(0)
    while nm:
        if nm & np.uint64(1):
            z = sim.port_router[sim.port_peer[port[first[r] + b]]]
            t = lnext[z, rlocal[dr]]
            if z != dr and t >= 0 and sim.port_router[sim.port_peer[t]] == r:
                out &= ~(np.uint64(1) << np.uint64(b))
        nm >>= np.uint64(1)
        b += 1
    return out


@part
def _local_hop(sim, base, r, pk, dr, o, minimal):
    """Leave on ``o``; unless it is the tables' own first port, the packet routes minimally
    from the next router a VC level up (a detour: ``TablePlan.detour``)."""
    if o != table_port(base, r, dr, np.int64(-1), 0):
        sim.ps[pk, P_DETOUR] = 1
        if not minimal:
            mark_nonminimal(sim, pk)
    return o, vc_rule(sim, base, pk, o)


@part
def _commit(sim, base, r, pk, dr, via):
    """Take the non-minimal path through group ``via`` from here on."""
    ps = sim.ps
    ps[pk, P_VIA] = via
    ps[pk, P_PHASE] = 0
    turn_nonminimal(sim, pk)
    return follow(sim, base, r, pk, dr, via)


class AriesParams(Params):
    mode: Literal["ADAPTIVE_0", "ADAPTIVE_1", "ADAPTIVE_2", "ADAPTIVE_3", "MIN_HASH",
                  "NMIN_HASH", "IN_ORDER"] = Field(
        "ADAPTIVE_0", description="MPICH_GNI_ROUTING_MODE: ADAPTIVE_0 (no bias), ADAPTIVE_1 "
        "(bias towards minimal growing as the packet nears its destination), ADAPTIVE_2 (low "
        "bias), ADAPTIVE_3 (high bias), MIN_HASH, NMIN_HASH, IN_ORDER")
    bias_step: BiasSize | None = Field(
        None, description="ADAPTIVE_1: bytes added to non-minimal costs at the "
        "source router and again for every hop made; not public, default one packet; at most "
        "2**40 (1 TiB)")
    bias_low: BiasSize | None = Field(
        None, description="bytes added to non-minimal costs in ADAPTIVE_2; not "
        "public, default two packets; at most 2**40 (1 TiB)")
    bias_high: BiasSize | None = Field(
        None, description="bytes added to non-minimal costs in ADAPTIVE_3; not "
        "public, default eight packets; at most 2**40 (1 TiB)")


class Aries(Valiant):
    """Cray Aries adaptive routing (2 minimal + 2 non-minimal random candidates) and its modes."""

    name = "aries"
    Params = AriesParams
    params: AriesParams

    def tables(self, network, topology, machine) -> RouteTables:  # noqa: ANN001
        t = super().tables(network, topology, machine)
        t.vcs_required += par_extra_vcs(t)  # a commitment after a minimal hop
        t.description = f"Aries {self.params.mode}, {t.description}"
        return t

    def intermediates(self, tables, src_router, dst_router, rng):  # noqa: ANN001
        return np.full(src_router.shape[0], -1, dtype=np.int32)  # drawn in the loop

    def intermediate_rule(self, tables: RouteTables) -> str:
        return "none"

    def program(self, network, topology, machine, tables) -> RoutingProgram:  # noqa: ANN001
        p = self.params
        packet = int(machine.packet_size)
        cfg = np.array([MODES.index(p.mode), int(p.bias_low or 2 * packet),
                        int(p.bias_high or 8 * packet), int(p.bias_step or packet),
                        DETOUR_BUMP], dtype=np.int64)
        prog = mask_program(route, network, tables, f"routing 'aries' ({p.mode})", cfg)
        prog.tables = (*prog.tables, group_neighbours(network, tables))
        # PAR's plan (the minimal candidates are equal-cost ports while undecided), and the
        # intra-group first hop to any neighbour of the group, minimal a level up after it
        prog.vc_plan = TablePlan(valiant="group", decide="source_group", commit_bump=1,
                                 spread="source_group", detour="source",
                                 detour_bump=DETOUR_BUMP)
        return prog

    @classmethod
    def modes(cls) -> list[str]:
        return list(MODES)


def group_neighbours(network, tables: RouteTables) -> np.ndarray:  # noqa: ANN001
    """Per router, the mask (bit ``k``: its ``k``-th cable port, the order of the equal-cost
    masks) of its cable ports to routers of its own group: the row and column on Aries."""
    cp = cable_ports(network)
    R = network.n_routers
    owner = np.repeat(np.arange(R), np.diff(cp.indptr))
    k = np.arange(cp.port.size) - cp.indptr[owner]
    g = tables.router_group.astype(np.int64)
    same = g[cp.peer] == g[owner]
    out = np.zeros(R, np.uint64)
    np.bitwise_or.at(out, owner[same], np.left_shift(np.uint64(1), k[same].astype(np.uint64)))
    return out


@hookimpl
def federation_register_routings(register) -> None:  # noqa: ANN001
    register(Aries)
