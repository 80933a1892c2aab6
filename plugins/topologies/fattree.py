"""Topology ``fattree``: k-ary n-trees and three-level folded-Clos trees, with optional tapering.

Two parameter forms (give the keys of exactly one):

**k-ary n-tree** (Petrini and Vanneschi), ``{k, n, up}``: ``n`` levels of switches, ``k`` nodes
per leaf switch and ``k`` children per higher switch, ``up`` parents per non-root switch
(default ``k``; ``up < k`` tapers every level, giving the extended generalised fat tree
XGFT(n; k..k; 1, up..up)).  Level ``l`` (1 = leaves) has ``k^(n-l) * up^(l-1)`` switches, so the
plain k-ary n-tree has ``n * k^(n-1)`` switches, ``k^n`` nodes and ``(n-1) * k^n`` cables.
Switch ``(A, B)`` of level ``l`` (``A < k^(n-l)``, ``B < up^(l-1)``, id ``A * up^(l-1) + B``
within the level) connects through up-port ``j`` to switch ``(A // k, B + j * up^(l-1))`` of
level ``l + 1``.  Radix ``k + up``.

**Three-level tree** ``{switch_radix, nodes_per_leaf, leaves, leaf_up, pod_leaves, spine_up}``,
the form of the many-node paper (Eyerman et al., §6.2: 48-port switches, 24 nodes per leaf,
"96 leaf + 96 second-level + 48 root" switches for up to 2,048 nodes; 96 x 24 = 2,304 node
ports):

* ``leaves`` leaf switches with ``nodes_per_leaf`` nodes and ``leaf_up`` up-links each (default
  ``switch_radix - nodes_per_leaf``; fewer tapers the leaf level);
* the leaves form *pods* of ``pod_leaves`` leaves (default ``switch_radix / 2``); a pod has
  ``leaf_up`` level-2 switches and every leaf of the pod has one cable to each of them;
* each level-2 switch has ``spine_up`` up-links (default ``switch_radix - pod_leaves``; fewer
  tapers; 0 gives a two-level tree, which must then be a single pod);
* the level-2 switches with the same index ``j`` in their pods form *plane* ``j``, served by
  ``rpp = ceil(spine_up * pods / switch_radix)`` root switches; up-port ``t`` of level-2 switch
  ``j`` goes to root ``j * rpp + t mod rpp``.  So every root links to one level-2 switch per pod,
  with ``spine_up / rpp`` parallel cables (1 in the full-size tree of ``switch_radix`` pods; 12
  in the paper's 4-pod tree, where each of the 48 roots uses all 48 ports).  Where ``rpp`` does
  not divide ``spine_up`` and that rule would give a root more than ``switch_radix`` cables
  (``ceil(spine_up / rpp)`` from every pod: 16 ports, 6 pods, ``spine_up`` 5: 18), pod ``p``'s
  ports start one root further on each time, port ``t`` to root ``j * rpp + (p * spine_up +
  t) mod rpp``, which gives every root of the plane all its pods' cables within one.

For 48/24/96: 4 pods of 24 leaves, 96 level-2 switches and 24 planes of 2 roots: 48 roots, full
bisection at every level (2,304 cables per level).

Router ids: level by level from the leaves up, pods in order; nodes: leaf-major.
``coords["level"]`` (1 = leaf) and ``coords["index"]`` (index within the level).  Link classes:
``leaf`` (leaf <-> level 2) and ``spine`` (all higher cables).

Minimal routing: up*/down* through a nearest common ancestor: a packet climbs while its
destination is not below the current switch, then descends.  The neighbour *switch* (among the
usable ones, in port order: parents that lead to the destination while climbing, counted once
per cable so that a parent reached by more parallel cables gets proportionally more
destinations; children above it while descending) for destination router ``d`` is candidate
``key mod count``:

* at a leaf ``r``: ``key = index(r) + index(d)``, the d-mod-k choice rotated by the source leaf.
  The tables are per destination *router* (a leaf of many nodes), so plain d-mod-k would send
  all traffic for one leaf down a single link; the rotation spreads the sources of one leaf
  over all its down-links;
* climbing from level ``l >= 2``: ``key = index(d) // s_l`` with ``s_2 = 1`` and ``s_(l+1) =
  s_l * (parents per level-l switch)``: digit ``l - 2`` of the destination, as in d-mod-k;
* descending: ``key = index(r) + index(d)`` (down paths are unique in both forms).

Where several parallel cables lead to the chosen neighbour, the cable is chosen once per
``(r, d)`` by least load of a uniform all-to-all flow pushed through the tables
(deterministic).  Under uniform traffic every cable of a level carries the same load within one
unit on the full k-ary n-trees and on the 48/24/96 tree (busiest leaf cable 1.011x the mean,
every spine cable the mean).  Counting parents per cable matters where the roots per plane do
not divide ``spine_up`` (8 ports, 16 leaves, ``spine_up: 3``: bundles of 2 and 1 cables; the
level-2 up cables went from 1.5x to 1.25x the mean).  Tapered trees keep some imbalance: the
leaf rotation gives a level-2 switch one or two sources per destination when the leaves of a pod
are not a multiple of its up-links, and that weight follows the destination's low digit, which
the next level also uses (XGFT(3; 3,3; 1,2,2): 1.78x on the level-2 up cables), and the down
cables from the roots follow how the leaves of each pod fall into the bundles (1.5x there).

Up*/down* paths have no cycle in the channel dependency graph, so 1 VC suffices (``VC_COUNTER``
with no bumps).  Leaf-to-leaf routes take at most ``2 * (levels - 1)`` hops; only leaves hold
nodes, and table entries towards a non-leaf switch that no up*/down* path reaches (e.g. root to
root) are -1.
"""

from __future__ import annotations

from math import ceil
from typing import ClassVar

import numpy as np
from pydantic import Field, model_validator

from federation import (
    LinkDefaults,
    Network,
    NetworkBuilder,
    Params,
    RouteTables,
    Topology,
    hookimpl,
)
from federation.errors import TopologyError
from federation.network.routes import cable_ports
from federation.plugin.components import VC_COUNTER, TopologySize

_TREE_KEYS = ("k", "n", "up")
_THREE_KEYS = ("switch_radix", "nodes_per_leaf", "leaves", "leaf_up", "pod_leaves", "spine_up")


class FatTreeParams(Params):
    # k-ary n-tree
    k: int | None = Field(None, ge=1, description="k-ary n-tree: nodes per leaf and children "
                                                  "per switch")
    n: int | None = Field(None, ge=1, le=8, description="k-ary n-tree: levels of switches")
    up: int | None = Field(None, ge=1, description="k-ary n-tree: parents per non-root switch; "
                                                   "default k, fewer tapers")
    # three-level tree
    switch_radix: int | None = Field(None, ge=2, description="three-level tree: switch ports")
    nodes_per_leaf: int | None = Field(None, ge=1, description="three-level tree: nodes per leaf")
    leaves: int | None = Field(None, ge=1, description="three-level tree: leaf switches")
    leaf_up: int | None = Field(None, ge=1, description="three-level tree: up-links per leaf; "
                                                        "default switch_radix - nodes_per_leaf")
    pod_leaves: int | None = Field(None, ge=1, description="three-level tree: leaves per pod "
                                                           "(= level-2 down-links); default "
                                                           "switch_radix / 2")
    spine_up: int | None = Field(None, ge=0, description="three-level tree: up-links per "
                                                         "level-2 switch; default switch_radix "
                                                         "- pod_leaves; 0 = no root level")

    @model_validator(mode="after")
    def _check(self) -> FatTreeParams:
        tree = [key for key in _TREE_KEYS if getattr(self, key) is not None]
        three = [key for key in _THREE_KEYS if getattr(self, key) is not None]
        if tree and three:
            raise ValueError(
                f"mixes the k-ary n-tree form ({', '.join(tree)}) with the three-level form "
                f"({', '.join(three)}); give the keys of one form only")
        if tree or not three:
            if self.k is None or self.n is None:
                raise ValueError(
                    "give 'k' and 'n' (k-ary n-tree, e.g. k: 4, n: 3) or 'switch_radix', "
                    "'nodes_per_leaf' and 'leaves' (three-level tree, e.g. 48, 24, 96)")
            if self.up is not None and self.up > self.k:
                raise ValueError(f"up = {self.up} exceeds k = {self.k}; a fat tree does not "
                                 "widen towards the root")
            return self
        if self.switch_radix is None or self.nodes_per_leaf is None or self.leaves is None:
            raise ValueError("the three-level form needs 'switch_radix', 'nodes_per_leaf' and "
                             "'leaves'")
        R = self.switch_radix
        lu, pl, su = self.three_level
        if lu < 1:
            raise ValueError(f"nodes_per_leaf = {self.nodes_per_leaf} leaves no up-link port "
                             f"on a {R}-port switch")
        if self.nodes_per_leaf + lu > R:
            raise ValueError(f"a leaf needs nodes_per_leaf + leaf_up = {self.nodes_per_leaf} + "
                             f"{lu} ports but switch_radix is {R}")
        if pl + su > R:
            raise ValueError(f"a level-2 switch needs pod_leaves + spine_up = {pl} + {su} ports "
                             f"but switch_radix is {R}")
        if self.leaves % pl:
            raise ValueError(f"leaves = {self.leaves} is not a whole number of pods of "
                             f"pod_leaves = {pl} leaves")
        if su == 0 and self.leaves > pl:
            raise ValueError("spine_up = 0 (no root level) needs a single pod: "
                             f"leaves = {self.leaves} > pod_leaves = {pl}")
        pods = self.leaves // pl
        if su > 0 and pods > R:
            raise ValueError(f"{pods} pods cannot all reach one {R}-port root switch")
        return self

    @property
    def form(self) -> str:
        return "three_level" if self.switch_radix is not None else "k_ary_n_tree"

    @property
    def three_level(self) -> tuple[int, int, int]:
        """(leaf_up, pod_leaves, spine_up) with defaults applied."""
        R = int(self.switch_radix or 0)
        lu = self.leaf_up if self.leaf_up is not None else R - int(self.nodes_per_leaf or 0)
        pl = self.pod_leaves if self.pod_leaves is not None else R // 2
        su = self.spine_up if self.spine_up is not None else R - pl
        return lu, pl, su


def _kary_ntree(k: int, n: int, up: int) -> tuple[NetworkBuilder, list[np.ndarray], dict]:
    b = NetworkBuilder(["leaf", "spine"])
    counts = [k ** (n - lvl) * up ** (lvl - 1) for lvl in range(1, n + 1)]
    offs = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    levels = []
    for lvl, c in enumerate(counts, start=1):
        b.add_routers(c, radix=k + up)
        levels.append(np.full(c, lvl, dtype=np.int32))
    for leaf in range(counts[0]):
        b.attach_nodes(leaf, k)
    for lvl in range(1, n):
        c = counts[lvl - 1]
        wl = up ** (lvl - 1)
        i = np.arange(c, dtype=np.int64)
        A, B = i // wl, i % wl
        parent = ((A // k) * (wl * up) + B)[:, None] + np.arange(up)[None, :] * wl
        s = np.repeat(offs[lvl - 1] + i, up)  # every switch's up-ports in j order
        d = (offs[lvl] + parent).reshape(-1)
        b.add_links(s, d, "leaf" if lvl == 1 else "spine")
    info = {"form": "k_ary_n_tree", "k": k, "n": n, "up": up, "levels": n,
            "switches_per_level": counts}
    return b, levels, info


def _three_level(radix: int, npl: int, leaves: int, lu: int, pl: int,
                 su: int) -> tuple[NetworkBuilder, list[np.ndarray], dict]:
    b = NetworkBuilder(["leaf", "spine"])
    pods = leaves // pl
    n2 = pods * lu
    rpp = ceil(su * pods / radix) if su else 0  # roots per plane
    roots = lu * rpp
    counts = [leaves, n2] + ([roots] if roots else [])
    levels = []
    for lvl, c in enumerate(counts, start=1):
        b.add_routers(c, radix=radix)
        levels.append(np.full(c, lvl, dtype=np.int32))
    for leaf in range(leaves):
        b.attach_nodes(leaf, npl)
    leaf = np.arange(leaves, dtype=np.int64)
    pod = leaf // pl
    src = np.repeat(leaf, lu)
    dst = leaves + np.repeat(pod * lu, lu) + np.tile(np.arange(lu), leaves)
    b.add_links(src, dst, "leaf")
    if roots:
        l2 = np.arange(n2, dtype=np.int64)
        t = np.arange(su, dtype=np.int64)
        turn = t[None, :] + (l2 // lu * su)[:, None] if _overfull(pods, su, rpp, radix) \
            else np.broadcast_to(t, (n2, su))  # the pod's first port on the next root
        root = ((l2 % lu) * rpp)[:, None] + turn % rpp
        b.add_links(np.repeat(leaves + l2, su), (leaves + n2 + root).reshape(-1), "spine")
    info = {"form": "three_level", "switch_radix": radix, "nodes_per_leaf": npl,
            "leaves": leaves, "leaf_up": lu, "pod_leaves": pl, "spine_up": su, "pods": pods,
            "roots_per_plane": rpp, "levels": len(counts), "switches_per_level": counts}
    return b, levels, info


def _overfull(pods: int, su: int, rpp: int, radix: int) -> bool:
    """Whether up-port ``t -> root t mod rpp`` would give a root more cables than its ports:
    ``ceil(su / rpp)`` from each pod (16 ports, 6 pods, ``spine_up`` 5 over 2 roots: 18)."""
    return rpp > 0 and pods * -(-su // rpp) > radix


def _pick(mask: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Row of the ``idx mod count``-th True entry of each column of ``mask`` (-1 if none)."""
    cnt = mask.sum(axis=0)
    k = idx % np.maximum(cnt, 1)
    cs = np.cumsum(mask, axis=0)
    row = np.argmax(cs > k[None, :], axis=0)
    return np.where(cnt > 0, row, -1)


def updown_routes(network: Network, level: np.ndarray, index: np.ndarray) -> RouteTables:
    """Up*/down* tables through nearest common ancestors (see the module docstring)."""
    R = network.n_routers
    cp = cable_ports(network)
    owner = np.repeat(np.arange(R), np.diff(cp.indptr))
    lp = level[cp.peer]
    if (level[owner] == lp).any():
        raise TopologyError("a fat-tree cable joins two switches of the same level")
    top = int(level.max())
    by_level = [np.nonzero(level == lvl)[0].tolist() for lvl in range(top + 1)]
    # below[r, x]: x is reachable from r going only down (r itself included)
    below = np.eye(R, dtype=bool)
    for lvl in range(2, top + 1):
        for r in by_level[lvl]:
            ks = slice(cp.indptr[r], cp.indptr[r + 1])
            below[r] |= below[cp.peer[ks][lp[ks] < lvl]].any(axis=0)
    # reach[r, x]: x is reachable from r by an up*/down* path
    reach = below.copy()
    for lvl in range(top - 1, 0, -1):
        for r in by_level[lvl]:
            ks = slice(cp.indptr[r], cp.indptr[r + 1])
            parents = cp.peer[ks][lp[ks] > lvl]
            if parents.size:
                reach[r] |= reach[parents].any(axis=0)
    gnext = np.full((R, R), -1, dtype=np.int32)
    dkey = index.astype(np.int64)
    # d-mod-k digit strides: level l >= 2 climbs by digit l-2 of the destination's index, in
    # the base of the number of parents per switch (the levels' up-fan-outs)
    fan = [1] * (top + 1)
    for lvl in range(1, top):
        r0 = by_level[lvl][0]
        peers0 = cp.peer[cp.indptr[r0]:cp.indptr[r0 + 1]]
        fan[lvl] = max(1, np.unique(peers0[level[peers0] > lvl]).size)
    stride = [1] * (top + 1)
    for lvl in range(3, top + 1):
        stride[lvl] = stride[lvl - 1] * fan[lvl - 1]
    lanes: list[dict[int, np.ndarray]] = []  # per router: neighbour switch -> its cable ports
    for r in range(R):
        ks = slice(cp.indptr[r], cp.indptr[r + 1])
        ports, peers = cp.port[ks], cp.peer[ks]
        uniq, first = np.unique(peers, return_index=True)
        nbrs = uniq[np.argsort(first, kind="stable")]  # neighbour switches in port order
        lanes.append({q: ports[peers == q] for q in nbrs.tolist()})
        if nbrs.size == 0:
            continue
        cnt = np.array([lanes[r][q].size for q in nbrs.tolist()], dtype=np.int64)
        table = np.full((nbrs.size, int(cnt.max())), -1, dtype=np.int64)
        for i, q in enumerate(nbrs.tolist()):
            table[i, :cnt[i]] = lanes[r][q]
        down = level[nbrs] < level[r]
        lvl = int(level[r])
        up_key = dkey // stride[lvl] + (int(index[r]) if lvl == 1 else 0)
        side_choice = []
        for side, usable, key in ((down, below, int(index[r]) + dkey), (~down, reach, up_key)):
            if not side.any():
                side_choice.append(np.full(R, -1))
                continue
            # one candidate per cable (a neighbour reached by c parallel cables counts c
            # times), so that unequal bundles (three-level trees whose roots per plane do not
            # divide spine_up) get destinations in proportion to their cables; interleaved
            # (a, b, a, b, a), so that equal bundles choose exactly as one candidate each
            cand = np.repeat(np.flatnonzero(side), cnt[side])
            copy = np.arange(cand.size) - np.repeat(np.cumsum(cnt[side]) - cnt[side], cnt[side])
            cand = cand[np.lexsort((cand, copy))]
            pick = _pick(usable[nbrs[cand]], key)
            side_choice.append(np.where(pick >= 0, cand[np.maximum(pick, 0)], -1))
        choice = np.where(below[r], side_choice[0], side_choice[1])
        c = np.maximum(choice, 0)
        row = np.where(choice >= 0, table[c, dkey % cnt[c]], -1)
        row[r] = -1
        gnext[r] = row
    weight = np.bincount(network.node_router, minlength=R).astype(np.int64)
    leaves = np.nonzero(weight > 0)[0]
    miss = gnext[:, leaves] < 0
    miss[leaves, np.arange(leaves.size)] = False
    if miss.any():
        r, j = np.argwhere(miss)[0]
        raise TopologyError(f"no up*/down* route from switch {int(r)} to leaf switch "
                            f"{int(leaves[j])}")
    if any(v.size > 1 for m in lanes for v in m.values()):
        _balance_lanes(gnext, network, lanes, index, below, weight, leaves, by_level)
    return RouteTables(
        gnext=gnext,
        lnext=np.full((R, 1), -1, dtype=np.int32),
        router_group=np.arange(R, dtype=np.int32),
        router_local=np.zeros(R, dtype=np.int32),
        vcs_required=1,
        vc_mode=VC_COUNTER,
        port_vc_bump=np.zeros(network.ports.n_ports, dtype=np.uint8),
        description=f"fat-tree up*/down* ({top} levels, rotated d-mod-k), 1 VC",
    )


def _balance_lanes(gnext: np.ndarray, network: Network, lanes: list[dict[int, np.ndarray]],
                   index: np.ndarray, below: np.ndarray, weight: np.ndarray,
                   leaves: np.ndarray, by_level: list[list[int]]) -> None:
    """Choose among parallel cables to the chosen neighbour by least accumulated load.

    Destination by destination, the uniform all-to-all flow (one unit per source node) follows
    the tables; a switch with several cables to its chosen neighbour puts the flow on the one
    with the least load so far (ties: the first from a ``d``-rotated start).  Parallel cables
    are equivalent paths, so this only evens out cable loads.
    """
    pt = network.ports
    load = np.zeros(pt.n_ports, dtype=np.int64)
    top = len(by_level) - 1
    for d in leaves.tolist():
        flow = weight.copy()
        flow[d] = 0
        # each switch decides once, after all its inflow is known: the switches d is not below
        # (climbing) from the leaves up, then the switches above d (descending) from the top
        order = [r for lvl in range(1, top + 1) for r in by_level[lvl] if not below[r, d]]
        order += [r for lvl in range(top, 1, -1) for r in by_level[lvl] if below[r, d] and r != d]
        for r in order:
            if flow[r] == 0:
                continue
            p = int(gnext[r, d])
            q = int(pt.port_router[pt.port_peer[p]])
            cand = lanes[r][q]
            if cand.size > 1:
                rot = np.roll(cand, -(int(index[d]) % cand.size))
                p = int(rot[int(np.argmin(load[rot]))])
                gnext[r, d] = p
            load[p] += flow[r]
            flow[q] += flow[r]


class FatTree(Topology):
    """k-ary n-tree or three-level fat tree (optionally tapered); up*/down* routing, 1 VC."""

    name = "fattree"
    Params = FatTreeParams
    link_defaults: ClassVar[dict[str, LinkDefaults]] = {
        "terminal": LinkDefaults(),
        "leaf": LinkDefaults(),
        "spine": LinkDefaults(),
    }
    params: FatTreeParams

    def build(self) -> Network:
        p = self.params
        if p.form == "three_level":
            lu, pl, su = p.three_level
            b, levels, info = _three_level(int(p.switch_radix), int(p.nodes_per_leaf),
                                           int(p.leaves), lu, pl, su)
        else:
            k, n = int(p.k), int(p.n)
            b, levels, info = _kary_ntree(k, n, p.up if p.up is not None else k)
        level = np.concatenate(levels)
        index = np.concatenate([np.arange(x.size, dtype=np.int32) for x in levels])
        return b.build(coords={"level": level, "index": index}, info=info)

    def size(self) -> TopologySize:
        """Counts from the parameters alone (the level sizes of :func:`_kary_ntree` and
        :func:`_three_level`); every switch is its own routing group."""
        p = self.params
        if p.form == "three_level":
            radix, npl, leaves = int(p.switch_radix), int(p.nodes_per_leaf), int(p.leaves)
            lu, pl, su = p.three_level
            pods = leaves // pl
            n2 = pods * lu
            rpp = ceil(su * pods / radix) if su else 0  # roots per plane
            roots = lu * rpp
            routers = leaves + n2 + roots
            nodes = leaves * npl
            cables = leaves * lu + (n2 * su if roots else 0)
        else:
            k, n = int(p.k), int(p.n)
            up = p.up if p.up is not None else k
            counts = [k ** (n - lvl) * up ** (lvl - 1) for lvl in range(1, n + 1)]
            routers = sum(counts)
            nodes = counts[0] * k
            cables = sum(counts[:-1]) * up  # every non-root switch has ``up`` parents
        return TopologySize(routers=routers, nodes=nodes, cables=cables, groups=routers)

    def minimal_routes(self, network: Network) -> RouteTables:
        return updown_routes(network, network.coords["level"], network.coords["index"])


@hookimpl
def federation_register_topologies(register) -> None:  # noqa: ANN001
    register(FatTree)
