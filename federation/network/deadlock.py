"""Deadlock freedom proved before a run: the channel dependency graph of a routing.

A *channel* is one virtual channel of one cable: ``(port, vc)``, the input buffer behind router
port ``port`` (a cable port; terminal and NIC channels cannot be in a cycle: a NIC sends only
its own packets and always accepts).  A packet holding channel ``c1`` at a router may wait for
channel ``c2`` when the routing may send it on ``c2`` next: the edge ``c1 -> c2`` of the
channel dependency graph (Dally and Seitz, IEEE TC 1987; Duato, IEEE TPDS 1993 for adaptive
routings, whose escape-channel argument is not used here: every dependency counts).  The
graph is the union over every packet the routing may route, so if it has no cycle no set of
packets can wait on each other in a circle, whatever the traffic: the routing cannot
deadlock.  A cycle is a set of buffers that packets can fill while each waits for the next.

What is analysed (:func:`prove`):

* **Route tables** (the table contract, and compiled routings that declare a
  :class:`TablePlan`): every path the tables allow, walked with the engine's exact VC rules
  (``VC_COUNTER`` with ``port_vc_bump``, ``VC_DATELINE`` with ``port_dim``/``port_dateline``,
  ``phase_vc_offset`` for a Valiant packet's second phase), for every source, every
  destination and every intermediate group (or router) a Valiant packet may draw (any group:
  a superset of the built-in draws), minimal or Valiant as UGAL may choose at the source, and
  what the plan adds: a choice again at every router of the source group (``decide``), the
  equal-cost minimal ports of :mod:`federation.network.equal_cost` (``spread``), VC levels
  added at a commitment or at the intermediate router, a first hop from the source router
  to any neighbour in its group followed by minimal hops ``detour_bump`` levels up
  (``detour``).  The walk is over *routing states* ``(router, mode, column, VC
  level[, dimension])`` -- one per (router, destination group or local router, level),
  never per packet -- found by a vectorised breadth-first search
  (:mod:`federation.network.dependencies`).  A hop the walk finds on a VC at or above
  ``n_vcs`` is refused (:class:`VCShortfall`, naming the highest VC and one hop that gives
  it): the run would stop on it, so the tables or the plan declare too few VCs (without
  Valiant phases or detours, where the walk is exact; their supersets may hold longer paths
  than any packet takes, so there the run refuses such a hop if one is made).  The graph
  then holds channels and states: a channel leads to the states a packet arriving on it may
  be in, a state to the channels it may leave on.  States at one router never form a cycle
  among themselves, so this graph has a cycle exactly when the channel dependency graph has
  one.
* **Class transitions** (:class:`ClassPlan`, a compiled routing's coarse declaration): a
  packet that arrived on a channel of link class ``a`` and VC ``va`` may leave on any channel
  of class ``b`` and VC ``vb`` of the same router for each declared ``(a, va, b, vb)``.

What it cannot cover: choices a compiled routing makes beyond what it declared (the proof is
about the plan, not the code; a plugin whose plan lies is not caught), and deadlocks that are
not about buffers (rank programs waiting on each other are checked in
:mod:`federation.programs.checks`).  A cycle is refused with one cycle printed, channel by
channel.

Cycles are found with SciPy's strongly connected components and one breadth-first search.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from federation.errors import RoutingError
from federation.network.checks import route_walk
from federation.network.dependencies import VCOverflow, distinct, table_edges
from federation.network.routes import cable_ports
from federation.network.tables import VC_COUNTER, ClassPlan, TablePlan

if TYPE_CHECKING:
    from federation.network import Network
    from federation.network.tables import RouteTables

__all__ = ["Channel", "ClassPlan", "DeadlockProof", "TablePlan", "VCShortfall", "plan_problem",
           "prove"]

#: a cycle longer than this is printed with its middle left out
PRINT_CHANNELS = 16


@dataclass(frozen=True)
class Channel:
    """One channel of a printed cycle: VC ``vc`` of the cable leaving ``router`` on ``port``."""

    port: int
    vc: int
    router: int
    peer: int
    link_class: str

    def __str__(self) -> str:
        return (f"router {self.router} port {self.port} ({self.link_class} to router "
                f"{self.peer}) VC {self.vc}")


@dataclass(frozen=True)
class DeadlockProof:
    """The outcome of :func:`prove`: what the graph was made from, its size, and a cycle (empty
    when there is none: the routing is deadlock-free)."""

    method: str
    channels: int  #: channels some packet may hold
    states: int  #: routing states walked (0 for class transitions)
    dependencies: int  #: edges of the graph
    seconds: float
    cycle: tuple[Channel, ...] = ()

    @property
    def deadlock_free(self) -> bool:
        return not self.cycle

    def describe(self) -> str:
        """One line for ``federation validate``."""
        if self.cycle:
            return f"a cycle of {len(self.cycle)} channels: {cycle_text(self.cycle)}"
        states = f", {self.states:,} routing states" if self.states else ""
        return (f"no cycle among {self.channels:,} channels ({self.dependencies:,} "
                f"dependencies{states}; {self.method}; {self.seconds:.2f} s)")


def cycle_text(cycle: tuple[Channel, ...]) -> str:
    """``a -> b -> ... -> a``, the middle left out past :data:`PRINT_CHANNELS` channels."""
    parts = [str(c) for c in cycle]
    if len(parts) > PRINT_CHANNELS:
        keep = PRINT_CHANNELS // 2
        parts = [*parts[:keep], f"... {len(parts) - 2 * keep} more ...", *parts[-keep:]]
    return " -> ".join([*parts, str(cycle[0])])


def plan_problem(plan: object, network: Network, n_vcs: int) -> str | None:
    """Why ``plan`` is not a usable declaration for ``network`` (or None)."""
    if isinstance(plan, TablePlan):
        for name, allowed in (("valiant", ("none", "group", "router")),
                              ("decide", ("source", "source_group")),
                              ("spread", ("none", "source_group", "all")),
                              ("intermediates", ("other_groups", "any_group")),
                              ("detour", ("none", "source"))):
            if getattr(plan, name) not in allowed:
                return f"TablePlan.{name} = {getattr(plan, name)!r} is not one of {allowed}"
        for name in ("commit_bump", "turn_bump", "detour_bump"):
            v = getattr(plan, name)
            if not isinstance(v, int | np.integer) or isinstance(v, bool) or v < 0:
                return f"TablePlan.{name} = {v!r} must be an integer >= 0"
        return None
    if isinstance(plan, ClassPlan):
        try:
            rows = [tuple(t) for t in plan.transitions]
        except TypeError:
            return "ClassPlan.transitions must be a sequence of (class, vc, class, vc)"
        for t in rows:
            ok = (len(t) == 4 and all(isinstance(t[i], str) for i in (0, 2))
                  and all(isinstance(t[i], int | np.integer) and not isinstance(t[i], bool)
                          and t[i] >= 0 for i in (1, 3)))
            if not ok:
                return (f"ClassPlan transition {t!r} is not (link class, VC >= 0, link class, "
                        "VC >= 0)")
            for name in (t[0], t[2]):
                if name not in network.link_classes:
                    return (f"ClassPlan transition {t!r} names link class {name!r}, which this "
                            f"network does not have (it has: {', '.join(network.link_classes)})")
        return None
    return (f"the VC plan is a {type(plan).__name__}, not a TablePlan or ClassPlan "
            "(federation.plugin.components)")


def prove(network: Network, tables: RouteTables, n_vcs: int, plan: TablePlan | ClassPlan,
          owner: str = "the routing", declared: bool = True,
          longest: int | None = None) -> DeadlockProof:
    """The channel dependency graph of ``plan`` (with ``tables`` for a :class:`TablePlan`) on
    ``network`` with ``n_vcs`` VCs per port, and one of its cycles if it has any.  ``owner``
    names the routing in refusals of the equal-cost port sets (``spread``); ``declared``
    false says the plan is the engine's table routing, not a routing's declaration;
    ``longest`` is the longest table route in hops, if already known
    (:func:`federation.network.checks.route_walk`).  Raises ``ValueError`` for a plan
    :func:`plan_problem` refuses, :class:`VCShortfall` when the "VC = hops so far" shortcut
    finds a route longer than the VCs declared."""
    why = plan_problem(plan, network, n_vcs)
    if why:
        raise ValueError(why)
    t0 = time.perf_counter()
    n_ch = network.ports.n_ports * n_vcs
    if isinstance(plan, ClassPlan):
        src, dst = class_edges(network, plan, n_vcs)
        method, states = "declared class transitions", 0
    elif rising_vcs(network, tables):
        why = rising_shortfall(network, tables, plan, n_vcs, declared, longest)
        if why:
            raise VCShortfall(why)
        cables = int((network.ports.port_link >= 0).sum())
        return DeadlockProof("every cable raises the VC (VC = hops so far): every dependency "
                             "goes to a higher VC", cables * n_vcs, 0, 0,
                             time.perf_counter() - t0)
    else:
        try:
            src, dst, states = table_edges(network, tables, n_vcs, plan, owner)
        except VCOverflow as over:
            raise VCShortfall(overflow_text(network, over, n_vcs, tables, declared)) from None
        method = "route tables and declared plan" if declared else "route tables"
    used = np.zeros(n_ch, bool)
    used[src[src < n_ch]] = True
    used[dst[dst < n_ch]] = True
    cycle = find_cycle(src, dst, n_ch)
    return DeadlockProof(method, int(used.sum()), states, int(src.size),
                         time.perf_counter() - t0,
                         tuple(channel(network, int(c), n_vcs) for c in cycle))


def rising_vcs(network: Network, tables: RouteTables) -> bool:
    """Every cable port raises the VC level (``VC_COUNTER``): VC = hops so far, and the
    phase offsets, commitments and turns only add to it, so every dependency goes from a VC
    to a higher one and no cycle is possible (Dally and Seitz's channel numbering)."""
    if tables.vc_mode != VC_COUNTER or tables.port_vc_bump is None:
        return False
    cable = network.ports.port_link >= 0
    return bool((np.asarray(tables.port_vc_bump)[cable] != 0).all())


class VCShortfall(RoutingError):
    """A route needs a VC beyond those its routing declared (the run would stop on it)."""


def rising_shortfall(network: Network, tables: RouteTables, plan: TablePlan | ClassPlan,
                     n_vcs: int, declared: bool, longest: int | None) -> str | None:
    """Why the "VC = hops so far" shortcut does not hold on ``tables`` (None if it does).

    The shortcut proves that no cycle exists, not that a packet's VC stays within the VCs
    there are: a route of ``h`` hops leaves on VC ``h - 1`` (``h`` when the level goes up on
    the bumping hop itself, minimal's ``vc_step: on``).  Checked for plain table routes only
    (no Valiant phase, no equal-cost ports, no added levels: the longest table route between
    routers with nodes then bounds every packet's hops); the limit is the tables'
    ``vcs_required`` for the engine's table routing, ``n_vcs`` for a routing's own plan."""
    plain = (isinstance(plan, TablePlan) and plan.valiant == "none" and plan.spread == "none"
             and plan.detour == "none" and plan.commit_bump == plan.turn_bump == 0)
    if not plain:
        return None
    if longest is None:
        walk = route_walk(network, tables)
        if walk.problem:
            return f"has route tables that cannot deliver: {walk.problem}"
        longest = walk.longest
    on = bool(tables.extra.get("vc_on_bump", False))
    need = longest + 1 if on else longest
    limit, said = ((n_vcs, f"router.vcs gives it {n_vcs} per traffic class") if declared
                   else (int(tables.vcs_required), f"its tables declare vcs_required = "
                         f"{tables.vcs_required}"))
    if need <= limit:
        return None
    return (f"has routes of up to {longest} hops on which every cable raises the VC (VC = hops "
            f"so far{', raised on the hop itself' if on else ''}), so a packet may be given "
            f"VC {need - 1} and needs {need} VCs, but {said}; the declared VC count is wrong")


def overflow_text(network: Network, over: VCOverflow, n_vcs: int, tables: RouteTables,
                  declared: bool) -> str:
    """Why a walk that found hops beyond the VCs refuses: the highest VC a packet may be
    given and one hop that gives it (what the run would stop on)."""
    top = int(over.vc.max())
    port = int(over.port[over.vc == top].min())
    hop = channel(network, port, 1)
    where = f"router {hop.router} port {port} ({hop.link_class} to router {hop.peer})"
    n_hops = np.unique(over.port * (top + 1) + over.vc).size
    said = (f"router.vcs gives it {n_vcs} per traffic class" if declared else
            f"router.vcs gives it {n_vcs} (its tables declare vcs_required = "
            f"{tables.vcs_required})")
    return (f"gives packets VCs the machine does not have: followed with their VC rule, its "
            f"routes make {n_hops} hop(s) on VC {n_vcs} or above (VC {top} leaving {where}), "
            f"but {said}; the declared VC count is wrong")


def channel(network: Network, code: int, n_vcs: int) -> Channel:
    pt = network.ports
    port, vc = divmod(code, n_vcs)
    return Channel(port, vc, int(pt.port_router[port]), int(pt.port_router[pt.port_peer[port]]),
                   network.link_classes[int(pt.port_class[port])])


# --------------------------------------------------------------------------- class transitions


def class_edges(network: Network, plan: ClassPlan, n_vcs: int) -> tuple[np.ndarray, np.ndarray]:
    """Channel codes (``port * n_vcs + vc``) of every dependency the transitions allow: at each
    router, every (arriving cable, leaving cable) pair whose classes a transition names.
    Transitions to or from a VC at or above ``n_vcs`` cannot happen (the engine refuses such
    a VC) and terminal channels cannot be in a cycle: both are left out."""
    pt = network.ports
    cp = cable_ports(network)
    deg = np.diff(cp.indptr)
    # every ordered pair (q1, q2) of one router's cable ports: in on q1's cable, out on q2
    n_pairs = deg * deg
    owner = np.repeat(np.arange(network.n_routers), n_pairs)
    k = np.arange(int(n_pairs.sum())) - np.repeat(np.cumsum(n_pairs) - n_pairs, n_pairs)
    d = deg[owner]
    q1 = cp.port[cp.indptr[owner] + k // np.maximum(d, 1)]
    q2 = cp.port[cp.indptr[owner] + k % np.maximum(d, 1)]
    inbound = pt.port_peer[q1].astype(np.int64)  # the cable's far end sends into this router
    out = q2.astype(np.int64)
    cls_in, cls_out = pt.port_class[inbound], pt.port_class[out]
    src, dst = [], []
    for a, va, b, vb in {tuple(t) for t in plan.transitions}:
        if va >= n_vcs or vb >= n_vcs or "terminal" in (a, b):
            continue
        sel = (cls_in == network.class_index(a)) & (cls_out == network.class_index(b))
        src.append(inbound[sel] * n_vcs + va)
        dst.append(out[sel] * n_vcs + vb)
    if not src:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(src), np.concatenate(dst)


# --------------------------------------------------------------------------- cycles


def acyclic(a: np.ndarray, b: np.ndarray, n: int) -> bool:
    """Whether the graph of ``n`` vertices with edges ``a -> b`` has no cycle: Kahn's
    algorithm a layer at a time (every vertex left with no edge in, then its edges removed),
    each step on the edges of the layer only, so the whole is linear in the edges and
    vectorised; a cycle leaves vertices that never lose their last edge in."""
    order = np.argsort(a, kind="stable")
    heads = b[order]
    first = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(a, minlength=n), out=first[1:])
    left = np.bincount(b, minlength=n)
    layer = np.flatnonzero(left == 0)
    done = 0
    while layer.size:
        done += layer.size
        lens = first[layer + 1] - first[layer]
        total = int(lens.sum())
        if total == 0:
            break
        at = np.repeat(first[layer] - np.cumsum(lens) + lens, lens) + np.arange(total)
        hit, count = np.unique(heads[at], return_counts=True)
        left[hit] -= count
        layer = hit[left[hit] == 0]
    return done == n


def find_cycle(src: np.ndarray, dst: np.ndarray, n_channels: int) -> list[int]:
    """The channel vertices (ids below ``n_channels``) of one cycle of the graph with edges
    ``src -> dst``, in order; empty when it has none.  Every cycle passes
    through a channel (routing states at one router form none), so the cycle printed is the
    shortest one through the lowest channel of a strongly connected component with a cycle."""
    if src.size == 0:
        return []
    # only vertices with an edge (most routing states were contracted into their channel)
    nodes = distinct(np.concatenate([src, dst]))
    a, b = np.searchsorted(nodes, src), np.searchsorted(nodes, dst)
    n = nodes.size
    if acyclic(a, b, n):
        return []
    import scipy.sparse as sp  # only to name a cycle: 20 MB and 0.15 s that a proof spares
    from scipy.sparse import csgraph

    graph = sp.csr_matrix((np.ones(a.size, np.int8), (a, b)), shape=(n, n))
    _, labels = csgraph.connected_components(graph, directed=True, connection="strong")
    size = np.bincount(labels)
    looped = np.zeros(n, bool)
    looped[a[a == b]] = True  # a self-loop is a cycle of one
    cyclic = (size[labels] > 1) | looped
    starts = np.nonzero(cyclic & (nodes < n_channels))[0]
    if starts.size == 0:
        return []
    v = int(starts[0])
    inside = np.nonzero(labels == labels[v])[0]
    local = np.full(n, -1, np.int64)
    local[inside] = np.arange(inside.size)
    keep = (local[a] >= 0) & (local[b] >= 0)
    la, lb = local[a[keep]], local[b[keep]]
    sub = sp.csr_matrix((np.ones(la.size, np.int8), (la, lb)), shape=(inside.size,) * 2)
    lv = int(local[v])
    dist, pred = csgraph.shortest_path(sub, indices=lv, unweighted=True,
                                       return_predecessors=True)
    into = la[lb == lv]  # vertices with an edge back to v
    u = int(into[np.argmin(dist[into])])
    path = [u]
    while path[-1] != lv:
        path.append(int(pred[path[-1]]))
    path.reverse()  # v ... u, and u -> v closes it
    codes = nodes[inside[np.asarray(path)]]
    return [int(c) for c in codes if c < n_channels]
