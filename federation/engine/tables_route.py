"""The per-hop routing of :class:`~federation.components.RouteTables`, as a compiled routing.

Every routing that returns ``RouteTables`` (the built-in ``minimal``, ``valiant`` and ``ugal``,
and third-party routings written against the table contract) runs through :func:`route`:
hierarchical tables (``gnext[router, group]`` across groups, ``lnext[router, local index]``
inside one), an intermediate group per packet for Valiant (``F_VIA``, drawn by the routing's
``intermediates``), UGAL-L at the source router, and the VC rules of
:mod:`federation.components`.  :func:`program_tables` packs the tables into the tuple the
loop passes back here.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from federation.components import RouteTables
from federation.engine.api import P_DIM, P_DST, P_HOPS, P_LEVEL, P_MINIMAL, P_PHASE, P_VIA


def program_tables(t: RouteTables, n_ports: int) -> tuple:
    """``RouteTables`` as the tuple :func:`route` reads (fixed dtypes, so one compiled loop
    serves every table routing)."""
    vc_bump = t.port_vc_bump if t.port_vc_bump is not None else np.zeros(n_ports, np.uint8)
    port_dim = t.port_dim if t.port_dim is not None else np.full(n_ports, -1, np.int16)
    dateline = t.port_dateline if t.port_dateline is not None else np.zeros(n_ports, np.uint8)
    cfg = np.array([t.vc_mode, int(bool(t.adaptive)), int(t.adaptive_bias),
                    int(t.phase_vc_offset)], dtype=np.int64)
    return (np.ascontiguousarray(t.gnext, dtype=np.int32),
            np.ascontiguousarray(t.lnext, dtype=np.int32),
            t.router_group.astype(np.int32), t.router_local.astype(np.int32),
            vc_bump.astype(np.uint8), port_dim.astype(np.int32), dateline.astype(np.uint8), cfg)


@njit(cache=True, inline="always")
def inject(sim, tables, node, pk):
    """Table routings decide nothing at the NIC."""
    return


@njit(cache=True, inline="always")
def route(sim, tables, r, ip, pk):
    """Output port and VC of packet ``pk`` at router ``r`` (not its destination router)."""
    gnext, lnext, rgroup, rlocal, vc_bump, port_dim, dateline, cfg = tables
    ps = sim.ps
    dr = sim.node_router[ps[pk, P_DST]]
    via = ps[pk, P_VIA]
    if cfg[1] and via >= 0 and ps[pk, P_HOPS] == 0 and ps[pk, P_PHASE] == 0:
        # UGAL at the source router: occupancy of the minimal and Valiant first ports, the
        # Valiant one weighted by its double path length
        if rgroup[r] != rgroup[dr]:
            om = gnext[r, rgroup[dr]]
        else:
            om = lnext[r, rlocal[dr]]
        on = om
        if rgroup[r] != via:
            on = gnext[r, via]
        if om < 0 or on < 0:
            return np.int64(-1), np.int64(0)
        qm = np.int64(0)
        qn = np.int64(0)
        V = sim.n_vcs
        for k in range(V):
            qm += sim.port_buf[sim.port_peer[om]] - sim.credits[om * V + k]
            qn += sim.port_buf[sim.port_peer[on]] - sim.credits[on * V + k]
        if qm <= 2 * qn + cfg[2]:
            ps[pk, P_VIA] = -1
            via = -1
    if via >= 0 and ps[pk, P_PHASE] == 0:
        if rgroup[r] == via:
            ps[pk, P_PHASE] = 1
        else:
            ps[pk, P_MINIMAL] = 0
    if via >= 0 and ps[pk, P_PHASE] == 0:
        o = gnext[r, via]
    elif rgroup[r] != rgroup[dr]:
        o = gnext[r, rgroup[dr]]
    else:
        o = lnext[r, rlocal[dr]]
    if o < 0:
        return np.int64(-1), np.int64(0)
    if cfg[0] == 0:
        ovc = ps[pk, P_LEVEL]
        if vc_bump[o]:
            ps[pk, P_LEVEL] += 1
    else:
        d = port_dim[o]
        if d != ps[pk, P_DIM]:
            ps[pk, P_DIM] = d
            ps[pk, P_LEVEL] = 0
        if dateline[o]:
            ps[pk, P_LEVEL] = 1
        ovc = ps[pk, P_LEVEL]
    if via >= 0 and ps[pk, P_PHASE] == 1:
        ovc += cfg[3]  # Valiant's second phase on its own VCs
    return np.int64(o), np.int64(ovc)
