"""Route tables and VC plans: what a routing hands the engine and the deadlock proof, as flat
arrays and declarations (no compiled code here, so that reading or building tables does not
import numba).

Routings return a :class:`RouteTables` (:meth:`federation.plugin.components.Routing.tables`);
:mod:`federation.network.routes` builds shortest-path ones, :mod:`federation.pipeline.tables_check`
checks them and :mod:`federation.engine.tables_route` routes by them.  A compiled routing declares
the moves it makes as a :class:`TablePlan` or :class:`ClassPlan`
(``RoutingProgram.vc_plan``), which :mod:`federation.network.deadlock` proves free of cycles.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

__all__ = ["VC_COUNTER", "VC_DATELINE", "ClassPlan", "RouteTables", "TablePlan"]

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


@dataclass(frozen=True)
class TablePlan:
    """A compiled routing that moves packets only along its route tables' paths, with the VC
    rule of the tables, plus the liberties declared here (the defaults declare none: what the
    engine's own table routing does for tables without Valiant draws).

    * ``valiant``: ``"group"`` -- a packet may first travel to an intermediate group
      (``gnext``), then route minimally from the router where it reached it, on VCs shifted by
      ``phase_vc_offset``; ``"router"`` -- to an intermediate *router* (through its group,
      then ``lnext``), then minimally; ``"none"``.
    * ``decide``: where a packet chooses between its minimal and its Valiant path: at its
      source router (``"source"``, UGAL-L, UGAL-G) or at every router of its source group
      until it commits (``"source_group"``, progressive adaptive: PAR, CODES' prog-adaptive,
      Aries).
    * ``spread``: the minimal hops may take any equal-cost minimal port of
      :func:`federation.network.equal_cost.equal_cost_ports` instead of the table's:
      ``"all"`` on every minimal hop, ``"source_group"`` only while undecided (``decide:
      source_group``), ``"none"``.
    * ``commit_bump``: VC levels added when a packet commits to its Valiant path at a router
      of its source group other than its source router (``turn_nonminimal``).
    * ``turn_bump``: VC levels added at the intermediate router (``valiant: router``).
    * ``detour``: ``"source"`` -- a packet whose destination router is in its source group
      may first hop from its source router to any router of that group one cable away (its
      VC by the tables' rule, as a first minimal hop), then route minimally from there with
      ``detour_bump`` more VC levels (the intra-group non-minimal paths of ``aries``, through
      another router of the row or column); ``"none"``.
    * ``intermediates``: which groups a Valiant packet's intermediate (group, or router's
      group) may be: ``"other_groups"`` than its source and destination groups (every
      built-in draw: ``Routing.intermediate_rule`` ``group`` and ``router``, the loop's draws
      of ``aries``), or ``"any_group"``.
    """

    valiant: Literal["none", "group", "router"] = "none"
    decide: Literal["source", "source_group"] = "source"
    spread: Literal["none", "source_group", "all"] = "none"
    commit_bump: int = 0
    turn_bump: int = 0
    intermediates: Literal["other_groups", "any_group"] = "other_groups"
    detour: Literal["none", "source"] = "none"
    detour_bump: int = 1


@dataclass(frozen=True)
class ClassPlan:
    """A compiled routing's moves as transitions between channel classes: a packet that
    arrived at a router on a channel of link class ``in_class`` and VC ``in_vc`` may leave it
    on any cable of class ``out_class`` on VC ``out_vc``, for every
    ``(in_class, in_vc, out_class, out_vc)`` in ``transitions``.  Coarse (every router, every
    cable of the class) but easy to state, e.g. ``VC = hops so far`` on a torus:
    ``(("torus", v, "torus", v + 1) for v in range(vcs - 1))``.  Terminal channels need no
    transitions (they cannot be in a cycle)."""

    transitions: tuple[tuple[str, int, str, int], ...]
