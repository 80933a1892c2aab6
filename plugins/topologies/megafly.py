"""Topology ``megafly``: the megafly / dragonfly+ (Flajslik et al. ISC 2018; Shpiner et al.).

Each of ``groups`` groups is a two-level fat tree: ``leaves`` leaf routers, each with
``nodes_per_leaf`` nodes, and ``spines`` spine routers, each with ``global_links_per_spine``
global ports; every leaf is connected to every spine of its group (link class ``local``), leaves
have no global links, spines have no nodes, and routers of the same level are not connected.

Global links join spines of different groups.  Spine ``s`` owns the group's global ports
``s*hs .. s*hs + hs-1`` (``hs = global_links_per_spine``) and the ``spines*hs`` ports of a group
are wired with the dragonfly arrangements ``absolute`` (default), ``relative`` or ``circulant``
defined in :mod:`federation.plugins.topologies.dragonfly`, with ``links_per_pair`` (default
``spines*hs // (groups-1)``) links between every pair of groups; spare ports stay unconnected.
The default ``groups = spines*hs + 1`` gives one link per pair.  Example (megafly QoS paper,
Table I): 33 groups of 16 leaves and 16 spines, 16 nodes per leaf and 16 global links per spine,
256 global ports per group, 8 links per pair; with ``absolute`` the 8 links of a pair leave
from 8 different spines.

Router ids: group-major; inside a group the leaves (local index ``0..leaves-1``) then the spines
(``leaves..leaves+spines-1``).  Nodes: leaf-major.  ``Network.coords``: ``group``, ``level``
(0 leaf, 1 spine) and ``index`` (leaf or spine number inside the group), per router.  The
radix of every router is ``radix`` (default ``max(nodes_per_leaf + spines, leaves + hs)``).

Minimal routing: leaf, spine owning a link to the target group, global link, spine, leaf (at
most 4 router hops).  Towards target group ``t``, leaf ``l`` uses the ``((l + t) mod n)``-th
(in router order) of the ``n`` spines of its group owning a link to ``t``: the choice depends on
the target, so a leaf spreads its outgoing traffic over all its up-links, and on the leaf, so the
leaves of a group share the ``n`` spines (and their global links to ``t``) evenly; ``t`` is
counted as its rank among the target groups served by the same spines (:func:`target_rank
<federation.plugins.topologies.dragonfly.target_rank>`).  Before, leaf ``l`` took the ``(l mod
n)``-th spine for every target, so all traffic leaving a leaf used one or two of its up-links
(megafly QoS machine: busiest leaf-spine link 7.8x the mean, now 1.002x).  A spine uses its
own link to ``t``; the tables are per (router, target group), so a spine with several links to
one group uses one of them, chosen by :func:`balance_owned_links
<federation.plugins.topologies.dragonfly.balance_owned_links>`.  Inside a group leaf ``i``
reaches leaf ``j`` through spine ``(i + j) mod spines``.  A spine without a link to the target
group (only met by Valiant packets in their intermediate group) goes down to leaf ``(s + t) mod
leaves`` (``s`` its spine index).  VC = global hops so far: 2 VCs minimal, 3 Valiant.

Default figures: 25 GiB/s on every link and 32 KiB of buffer per VC (megafly QoS paper Table I
and the CODES ``dfp_8k.conf``); latencies (not in the paper) 10 ns terminal, 30 ns local,
100 ns global, as this project's dragonfly plugin.
"""

from __future__ import annotations

from typing import ClassVar, Literal

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
from federation.network.wiring import (
    ARRANGEMENT_FIELD_DOC,
    check_global_ports,
    global_cable_count,
    global_wiring,
)
from federation.plugin.components import TopologySize

from .dragonfly import (
    exit_owners,
    exit_signature,
    global_exits,
    group_minimal_tables,
    local_port_matrix,
    target_rank,
)

GIB = 2**30
KIB = 2**10


class MegaflyParams(Params):
    groups: int | None = Field(
        None, ge=2, description="number of groups; default spines*global_links_per_spine + 1")
    leaves: int = Field(ge=1, description="leaf routers per group (they hold the nodes)")
    spines: int = Field(ge=1, description="spine routers per group (they hold the global links)")
    nodes_per_leaf: int = Field(ge=1, description="nodes attached to each leaf router")
    global_links_per_spine: int = Field(ge=1, description="global ports of each spine router")
    arrangement: Literal["absolute", "relative", "circulant"] = Field(
        "absolute", description=ARRANGEMENT_FIELD_DOC)
    links_per_pair: int | None = Field(
        None, ge=1, description="global links between each pair of groups; default "
        "spines*global_links_per_spine // (groups-1) (leftover ports stay unconnected)")
    radix: int | None = Field(
        None, ge=1, description="ports per router; default max(nodes_per_leaf + spines, "
        "leaves + global_links_per_spine)")

    @model_validator(mode="after")
    def _check(self) -> MegaflyParams:
        msg = check_global_ports(
            self.spines, self.global_links_per_spine, self.n_groups, self.links_per_pair,
            f"spines*global_links_per_spine = {self.spines}*{self.global_links_per_spine}")
        if msg:
            raise ValueError(f"megafly: {msg}; add spines or global links, or lower groups")
        leaf, spine = self.nodes_per_leaf + self.spines, self.leaves + self.global_links_per_spine
        if self.radix is not None and max(leaf, spine) > self.radix:
            raise ValueError(
                f"radix={self.radix} is too small: a leaf needs nodes_per_leaf + spines = {leaf} "
                f"ports and a spine leaves + global_links_per_spine = {spine}")
        return self

    @property
    def n_groups(self) -> int:
        if self.groups is not None:
            return self.groups
        return self.spines * self.global_links_per_spine + 1

    @property
    def router_radix(self) -> int:
        if self.radix is not None:
            return self.radix
        return max(self.nodes_per_leaf + self.spines, self.leaves + self.global_links_per_spine)


class Megafly(Topology):
    """Megafly / dragonfly+: groups of leaf and spine routers, global links on the spines.

    Parameters: ``groups`` (default ``spines*global_links_per_spine + 1``), ``leaves``,
    ``spines``, ``nodes_per_leaf``, ``global_links_per_spine``, ``arrangement``,
    ``links_per_pair``, ``radix``.  Link classes ``local`` (leaf-spine) and ``global``.
    Wiring and routing: see the module docstring.
    """

    name = "megafly"
    Params = MegaflyParams
    link_defaults: ClassVar[dict[str, LinkDefaults]] = {
        "terminal": LinkDefaults(bandwidth=25 * GIB, latency=10e-9, buffer=32 * KIB),
        "local": LinkDefaults(bandwidth=25 * GIB, latency=30e-9, buffer=32 * KIB),
        "global": LinkDefaults(bandwidth=25 * GIB, latency=100e-9, buffer=32 * KIB),
    }
    params: MegaflyParams

    def build(self) -> Network:
        pr = self.params
        G, L, S = pr.n_groups, pr.leaves, pr.spines
        hs = pr.global_links_per_spine
        n = pr.nodes_per_leaf
        T = L + S
        b = NetworkBuilder(["local", "global"])
        for grp in range(G):
            rs = b.add_routers(T, radix=pr.router_radix, group=grp)
            for r in rs[:L]:
                b.attach_nodes(r, n)
        base = (np.arange(G) * T)[:, None, None]
        leaf = np.arange(L)[None, :, None]
        spine = L + np.arange(S)[None, None, :]
        b.add_links(np.broadcast_to(base + leaf, (G, L, S)).ravel(),
                    np.broadcast_to(base + spine, (G, L, S)).ravel(), "local")
        w = global_wiring(S, hs, G, pr.arrangement, pr.links_per_pair)
        b.add_links(w.src_group * T + L + w.src_owner, w.dst_group * T + L + w.dst_owner,
                    "global")
        loc = np.arange(G * T) % T
        coords = {
            "group": np.repeat(np.arange(G), T).astype(np.int32),
            "level": (loc >= L).astype(np.int32),
            "index": np.where(loc < L, loc, loc - L).astype(np.int32),
        }
        info = {"groups": G, "leaves": L, "spines": S, "nodes_per_leaf": n,
                "global_links_per_spine": hs, "arrangement": pr.arrangement,
                "links_per_pair": w.links_per_pair,
                "spare_global_ports_per_group": w.spare_per_group}
        return b.build(group_routing=True, coords=coords, info=info)

    def size(self) -> TopologySize:
        """Counts from the parameters alone: per group ``leaves + spines`` routers and a
        complete leaf-spine bipartite graph, plus ``links_per_pair`` global cables per pair of
        groups."""
        pr = self.params
        G, L, S = pr.n_groups, pr.leaves, pr.spines
        cables = G * L * S + global_cable_count(S, pr.global_links_per_spine, G,
                                                pr.links_per_pair)
        return TopologySize(routers=G * (L + S), nodes=G * L * pr.nodes_per_leaf, cables=cables,
                            groups=G)

    def minimal_routes(self, network: Network) -> RouteTables:
        """Leaf, spine, global, spine, leaf; VC = global hops so far (2 VCs)."""
        return megafly_tables(network, self.params.leaves, self.params.spines)


def megafly_tables(network: Network, leaves: int, spines: int) -> RouteTables:
    """Hierarchical minimal tables for a megafly (see the module docstring)."""
    L, S = leaves, spines
    T = L + S
    R = network.n_routers
    G = network.n_groups
    group = network.router_group.astype(np.int64)
    rid = np.arange(R)
    if not (group == rid // T).all():
        raise TopologyError("megafly tables need routers numbered group-major")
    local = (rid % T).astype(np.int32)
    nbr = local_port_matrix(network, local, T)
    is_leaf = local < L
    # intra-group: leaf i -> spine (i+j) mod S -> leaf j; spine -> leaf directly;
    # spine i -> leaf (i+j) mod L -> spine j
    j = np.arange(T)
    ri = np.where(is_leaf, local, local - L)[:, None]
    jj = np.where(j < L, j, j - L)[None, :]
    j_leaf = (j < L)[None, :]
    via = np.where(is_leaf[:, None],
                   np.where(j_leaf, L + (ri + jj) % S, j[None, :]),
                   np.where(j_leaf, j[None, :], (ri + jj) % L))
    via = np.where(local[:, None] == j[None, :], -1, via)
    lnext = np.where(via >= 0, np.take_along_axis(nbr, np.maximum(via, 0), axis=1), -1)
    lnext = lnext.astype(np.int32)
    own, key, ports = global_exits(network)
    gnext = own.copy()
    r_, t_ = np.nonzero((gnext < 0) & (group[:, None] != np.arange(G)[None, :]))
    if r_.size:
        okey_k, okey_r = exit_owners(network, key, ports)  # owning spines per (group, target)
        q = group[r_] * G + t_
        st = np.searchsorted(okey_k, q, side="left")
        cnt = np.searchsorted(okey_k, q, side="right") - st
        if (cnt == 0).any():
            k = int(np.nonzero(cnt == 0)[0][0])
            raise TopologyError(
                f"group {int(group[r_[k]])} has no global link to group {int(t_[k])}")
        leaf_r = is_leaf[r_]
        hop = np.empty(r_.shape[0], dtype=np.int64)
        lr = r_[leaf_r]
        # leaf l -> the ((l + rank of t) mod n)-th of the n spines owning a link to group t: varies
        # with the target group (every up-link of a leaf is used) and with the leaf (the leaves
        # of a group share the n spines, hence the n global links, evenly)
        rank_t = target_rank(G, exit_signature(G, okey_k, okey_r))[q[leaf_r]]
        sp = okey_r[st[leaf_r] + (local[lr] + rank_t) % cnt[leaf_r]]
        hop[leaf_r] = nbr[lr, local[sp]]
        sr = r_[~leaf_r]
        # spine s without a link to t (Valiant's intermediate group): down to leaf (s + t) mod L
        hop[~leaf_r] = nbr[sr, (local[sr] - L + t_[~leaf_r]) % L]
        if (hop < 0).any():
            k = int(np.nonzero(hop < 0)[0][0])
            raise TopologyError(f"router {int(r_[k])} has no route towards group {int(t_[k])}")
        gnext[r_, t_] = hop
    return group_minimal_tables(
        network, gnext, lnext, local,
        "megafly minimal (leaf-spine-global-spine-leaf), VC = global hops so far")


@hookimpl
def federation_register_topologies(register) -> None:  # noqa: ANN001
    register(Megafly)
