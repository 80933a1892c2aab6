"""The per-hop routing of :class:`~federation.plugin.components.RouteTables`, as a compiled routing.

Every routing that returns ``RouteTables`` (the built-in ``minimal``, ``valiant`` and ``ugal``,
and third-party routings written against the table contract) runs through :func:`route`:
hierarchical tables (``gnext[router, group]`` across groups, ``lnext[router, local index]``
inside one), an intermediate group per packet for Valiant (``F_VIA``, drawn by the routing's
``intermediates``), UGAL-L at the source router, and the VC rules of
:mod:`federation.plugin.components`.  :func:`program_tables` packs the tables into the tuple the
loop passes back here.
"""

from __future__ import annotations

import numpy as np

from federation.engine.api import (
    P_DIM,
    P_DST,
    P_HOPS,
    P_LEVEL,
    P_MINIMAL,
    P_PHASE,
    P_VIA,
    used_credit_all,
)
from federation.engine.jit import part
from federation.network import Network
from federation.network.equal_cost import equal_cost_ports
from federation.network.tables import RouteTables
from federation.plugin.components import RoutingProgram


def program_tables(t: RouteTables, n_ports: int) -> tuple:
    """``RouteTables`` as the tuple :func:`route` reads (fixed dtypes, so one compiled loop
    serves every table routing)."""
    vc_bump = t.port_vc_bump if t.port_vc_bump is not None else np.zeros(n_ports, np.uint8)
    port_dim = t.port_dim if t.port_dim is not None else np.full(n_ports, -1, np.int16)
    dateline = t.port_dateline if t.port_dateline is not None else np.zeros(n_ports, np.uint8)
    cfg = np.array([t.vc_mode, int(bool(t.adaptive)), int(t.adaptive_bias),
                    int(t.phase_vc_offset), int(bool(t.extra.get("vc_on_bump", False)))],
                   dtype=np.int64)
    return (np.ascontiguousarray(t.gnext, dtype=np.int32),
            np.ascontiguousarray(t.lnext, dtype=np.int32),
            t.router_group.astype(np.int32), t.router_local.astype(np.int32),
            vc_bump.astype(np.uint8), port_dim.astype(np.int32), dateline.astype(np.uint8), cfg)


@part
def inject(sim, tables, node, pk):
    """Table routings decide nothing at the NIC."""
    return


@part
def table_port(tables, r, dr, via, phase):
    """The tables' next port from router ``r`` towards router ``dr``, through group ``via``
    first while ``phase`` is 0 (``via`` -1: minimal); -1 where the tables have no entry."""
    gnext, lnext, rgroup, rlocal = tables[0], tables[1], tables[2], tables[3]
    if via >= 0 and phase == 0 and rgroup[r] != via:
        return np.int64(gnext[r, via])
    if rgroup[r] != rgroup[dr]:
        return np.int64(gnext[r, rgroup[dr]])
    return np.int64(lnext[r, rlocal[dr]])


@part
def vc_rule(sim, tables, pk, o):
    """The output VC of ``pk`` leaving on ``o`` by the tables' VC rule (it updates the
    packet's level and dimension fields).  A VC-bumping port (a dragonfly's global one)
    raises the level after its hop, or with ``extra["vc_on_bump"]`` on it: the hop itself
    takes the higher VC, as BookSim2's dragonfly does."""
    vc_bump, port_dim, dateline, cfg = tables[4], tables[5], tables[6], tables[7]
    ps = sim.ps
    if cfg[0] == 0:
        if cfg[4] and vc_bump[o]:  # the level goes up on the hop itself (BookSim2)
            ps[pk, P_LEVEL] += 1
        ovc = np.int64(ps[pk, P_LEVEL])
        if vc_bump[o] and not cfg[4]:
            ps[pk, P_LEVEL] += 1
    else:
        d = port_dim[o]
        if d != ps[pk, P_DIM]:
            ps[pk, P_DIM] = d
            ps[pk, P_LEVEL] = 0
        if dateline[o]:
            ps[pk, P_LEVEL] = 1
        ovc = np.int64(ps[pk, P_LEVEL])
    if ps[pk, P_VIA] >= 0 and ps[pk, P_PHASE] == 1:
        ovc += cfg[3]  # Valiant's second phase on its own VCs
    return ovc


@part
def ugal_choice(sim, tables, r, dr, via):
    """UGAL-L at router ``r``: ``(choice, minimal port)``, choice 1 if the minimal path's
    first port towards ``dr`` holds no more than twice the Valiant path's (through group
    ``via``) plus the bias ``cfg[2]`` (bytes sent whose credit has not returned, all VCs; the
    Valiant path is about twice as long), 0 for Valiant, -1 if the tables have no port.
    Used at the source router (``ugal``), at the NIC (``ugal`` deciding at injection) and at
    every source-group router (``par``)."""
    om = table_port(tables, r, dr, -1, 0)
    on = table_port(tables, r, dr, via, 0)
    if om < 0 or on < 0:
        return -1, om
    if used_credit_all(sim, om) <= 2 * used_credit_all(sim, on) + tables[7][2]:
        return 1, om
    return 0, om


@part
def turn_nonminimal(sim, pk):
    """A packet commits to its non-minimal path: after a minimal hop in its source group it
    moves to the next VC level, so each level keeps at most one local hop before a global one
    (the VC plan of ``par``, ``prog_adaptive`` and ``aries``)."""
    if sim.ps[pk, P_HOPS] > 0:
        sim.ps[pk, P_LEVEL] += 1


@part
def route(sim, tables, r, ip, pk):
    """Output port and VC of packet ``pk`` at router ``r`` (not its destination router)."""
    cfg = tables[7]
    ps = sim.ps
    dr = sim.node_router[ps[pk, P_DST]]
    via = np.int64(ps[pk, P_VIA])
    if cfg[1] and via >= 0 and ps[pk, P_HOPS] == 0 and ps[pk, P_PHASE] == 0:
        choice, _ = ugal_choice(sim, tables, r, dr, via)  # UGAL at the source router
        if choice < 0:
            return np.int64(-1), np.int64(0)
        if choice == 1:
            ps[pk, P_VIA] = -1
            via = -1
    return follow(sim, tables, r, pk, dr, via)


@part
def follow(sim, tables, r, pk, dr, via):
    """Port and VC by the tables once the choice is made: towards group ``via`` until a
    router of it is reached (the packet is then in Valiant's second phase), then minimally.
    Phase two runs on its own VCs (``phase_vc_offset``) by the same rule from its start: on
    dateline tables its first hop counts as a new dimension (level 0 until a dateline), as
    the first phase's did, or a second phase that goes on round the ring its first phase
    ended in would keep level 1 past its own dateline (a cycle)."""
    ps = sim.ps
    if via >= 0 and ps[pk, P_PHASE] == 0:
        if tables[2][r] == via:
            ps[pk, P_PHASE] = 1
            ps[pk, P_DIM] = -1  # dateline tables: phase two's levels start afresh
        else:
            ps[pk, P_MINIMAL] = 0
    o = table_port(tables, r, dr, via, ps[pk, P_PHASE])
    if o < 0:
        return np.int64(-1), np.int64(0)
    return o, vc_rule(sim, tables, pk, o)


def table_program(route_fn, t: RouteTables, n_ports: int, inject_fn=None) -> RoutingProgram:
    """A compiled routing that reads ``RouteTables`` (packed by :func:`program_tables`)."""
    return RoutingProgram(route=route_fn, inject=inject_fn or inject,
                          tables=program_tables(t, n_ports), vcs_required=t.vcs_required,
                          description=t.description)


def mask_program(route_fn, network: Network, tables: RouteTables, owner: str,
                 cfg: np.ndarray, description: str | None = None) -> RoutingProgram:
    """A compiled routing reading the tables and their equal-cost masks: its ``tables`` are
    ``(packed RouteTables, gmask, lmask, first, port, cfg)``."""
    ec = equal_cost_ports(network, tables, owner)
    packed = (program_tables(tables, network.ports.n_ports), ec.gmask, ec.lmask, ec.first,
              ec.port, cfg)
    return RoutingProgram(route=route_fn, inject=inject, tables=packed,
                          vcs_required=tables.vcs_required,
                          description=description or tables.description)
