"""Route tables: what a routing hands the engine, as flat arrays (no compiled code here, so
that reading or building tables does not import numba).

Routings return a :class:`RouteTables` (:meth:`federation.plugin.components.Routing.tables`);
:mod:`federation.network.routes` builds shortest-path ones, :mod:`federation.pipeline.tables_check`
checks them and :mod:`federation.engine.tables_route` routes by them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["VC_COUNTER", "VC_DATELINE", "RouteTables"]

#: VC rule codes understood by the engine.
VC_COUNTER = 0  #: VC = number of hops so far through ports flagged in ``port_vc_bump``
VC_DATELINE = 1  #: per dimension: VC 0 until the dateline port, 1 after; reset on a new dimension


@dataclass
class RouteTables:
    """Everything the engine needs to route packets, as flat arrays.

    Routing is hierarchical over *routing groups* (dragonfly groups; single routers on flat
    topologies): at router ``r`` a packet for router ``d`` leaves through
    ``gnext[r, group[d]]`` when ``group[r] != group[d]`` and through ``lnext[r, local[d]]``
    otherwise.  Entries are global port ids (see :mod:`federation.network`), -1 where undefined.

    ``valiant`` packets first travel to an intermediate group drawn per packet by the routing
    plugin (``via``), using ``gnext``; once they reach a router of that group they route
    minimally.  ``adaptive`` (UGAL at the source router) chooses per packet between the minimal
    and the Valiant path by comparing the occupancy of the two first output ports, weighted
    by path length when ``adaptive_hop_weighted``.
    """

    gnext: np.ndarray
    lnext: np.ndarray
    router_group: np.ndarray
    router_local: np.ndarray
    vcs_required: int
    vc_mode: int = VC_COUNTER
    port_vc_bump: np.ndarray | None = None
    port_dim: np.ndarray | None = None
    port_dateline: np.ndarray | None = None
    valiant: bool = False
    adaptive: bool = False
    adaptive_bias: int = 0
    #: added to the VC of every hop after a Valiant packet reached its intermediate group, so
    #: that the second phase uses VCs of its own where the VC rule does not already separate
    #: the phases (dateline tori, up/down fat trees)
    phase_vc_offset: int = 0
    description: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
