"""Topology ``dragonfly``: the 1-D dragonfly of Kim, Dally, Scott and Abts (ISCA 2008).

``g`` groups of ``a`` routers; routers inside a group are fully connected by *local* links; each
router has ``p`` terminals and ``h`` *global* ports, so a group has ``a*h`` global ports and the
router radix is ``a + p + h - 1``.  The default ``g = a*h + 1`` gives exactly one global link per
pair of groups (the balanced configuration of CODES, with ``a = 2p = 2h``).

The global ports, the links per pair and the three arrangements of the global cables are those of
:mod:`federation.network.wiring` (shared with ``aries`` and ``megafly``).

Minimal routing (:func:`dragonfly_tables`): a router owning a link to the target group ``t``
uses it; any other router ``r`` goes over one local hop to the ``(u + v) mod n``-th (in router
order) of the ``n`` routers of its group owning a link to ``t``, where ``u`` is the rank of
``r`` among the routers of its group owning none and ``v`` the rank of ``t`` among the target
groups served by the same owners (:func:`target_rank`).  So every owner serves the same number
of non-owners (within one), and, because the choice varies with ``t``, each router spreads its
traffic over all its local links (``l mod n`` alone sent router ``l`` to a fixed subset of the
owners: megafly QoS dragonfly, busiest local link 1.6x the mean, now 1.03x).  Tables are per
(router, target group), so a router owning several links to ``t`` uses one of them for all
that traffic: :func:`balance_owned_links` picks the one landing on the router of ``t`` that has
received the least traffic so far (the lowest port, used before, piled the landing traffic on a
few routers: 5 groups of 18 with 31 links per pair, busiest local link 1.6x the mean, now 1.0x).
The other links to ``t`` stay idle, which bounds the global balance of such machines
(``links_per_pair / owners``: 31/18 = 1.72 there).  VC = global hops so far: 2 VCs minimal, 3
Valiant.

Router ids: group-major (``router = group*a + index``); nodes: router-major
(``node = router*p + terminal``).
"""

from __future__ import annotations

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
from federation.network.wiring import (
    ARRANGEMENT_FIELD_DOC,
    Arrangement,
    check_global_ports,
    global_cable_count,
    global_wiring,
)
from federation.plugin.components import VC_COUNTER, TopologySize

GIB = 2**30

class DragonflyParams(Params):
    p: int = Field(ge=1, description="terminals (nodes) per router")
    a: int = Field(ge=1, description="routers per group, fully connected by local links")
    h: int = Field(ge=1, description="global ports per router")
    g: int | None = Field(None, ge=2, description="number of groups; default a*h + 1")
    arrangement: Arrangement = Field("absolute", description=ARRANGEMENT_FIELD_DOC)
    links_per_pair: int | None = Field(
        None, ge=1,
        description="global links between each pair of groups; default a*h // (g-1) "
        "(global ports left over stay unconnected)",
    )

    @model_validator(mode="after")
    def _check(self) -> DragonflyParams:
        msg = check_global_ports(self.a, self.h, self.groups, self.links_per_pair,
                                 f"a*h = {self.a}*{self.h}")
        if msg:
            raise ValueError(f"dragonfly p={self.p}, a={self.a}, h={self.h}, g={self.groups}: "
                             f"{msg}; increase a or h, or lower g")
        return self

    @property
    def groups(self) -> int:
        return self.g if self.g is not None else self.a * self.h + 1


class Dragonfly(Topology):
    """1-D dragonfly: p terminals per router, a routers per group, h global links per router.

    Parameters: ``p``, ``a``, ``h``, ``g`` (default ``a*h + 1``), ``arrangement`` (``absolute``,
    ``relative`` or ``circulant``), ``links_per_pair`` (default ``a*h // (g-1)``; leftover global
    ports stay unconnected).  Link classes ``local`` and ``global``.  The wiring is documented
    in the module docstring.
    """

    name = "dragonfly"
    Params = DragonflyParams
    link_defaults: ClassVar[dict[str, LinkDefaults]] = {
        "terminal": LinkDefaults(bandwidth=5.25 * GIB, latency=10e-9, buffer=8 * 2**10),
        "local": LinkDefaults(bandwidth=5.25 * GIB, latency=30e-9, buffer=8 * 2**10),
        "global": LinkDefaults(bandwidth=4.7 * GIB, latency=100e-9, buffer=16 * 2**10),
    }
    params: DragonflyParams

    def build(self) -> Network:
        pr = self.params
        p, a, h = pr.p, pr.a, pr.h
        g = pr.groups
        b = NetworkBuilder(["local", "global"])
        radix = a + p + h - 1
        for grp in range(g):
            routers = b.add_routers(a, radix=radix, group=grp)
            for r in routers:
                b.attach_nodes(r, p)
        iu, ju = np.triu_indices(a, k=1)
        base = (np.arange(g) * a)[:, None]
        b.add_links((base + iu).ravel(), (base + ju).ravel(), "local")
        w = global_wiring(a, h, g, pr.arrangement, pr.links_per_pair)
        b.add_links(w.src_group * a + w.src_owner, w.dst_group * a + w.dst_owner, "global")
        coords = {
            "group": np.repeat(np.arange(g), a).astype(np.int32),
            "router_in_group": np.tile(np.arange(a), g).astype(np.int32),
        }
        info = {"p": p, "a": a, "h": h, "g": g, "arrangement": pr.arrangement,
                "links_per_pair": w.links_per_pair, "spare_global_ports_per_group":
                w.spare_per_group}
        return b.build(group_routing=True, coords=coords, info=info)

    def size(self) -> TopologySize:
        """Counts from ``p, a, h, g`` alone: ``g*a`` routers, each group a clique of local
        cables, plus ``links_per_pair`` global cables per pair of groups."""
        pr = self.params
        p, a, g = pr.p, pr.a, pr.groups
        cables = g * (a * (a - 1) // 2) + global_cable_count(a, pr.h, g, pr.links_per_pair)
        return TopologySize(routers=g * a, nodes=g * a * p, cables=cables, groups=g)

    def minimal_routes(self, network: Network) -> RouteTables:
        """At most one global hop: local to a router owning a link to the target group.

        See :func:`dragonfly_tables` for how parallel links between two groups are shared.
        VC = global hops so far (CODES): 2 VCs for minimal, 3 for Valiant.
        """
        return dragonfly_tables(network)


# --------------------------------------------------------------------------- table helpers


def group_local_index(group: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Index of each router inside its group (in router order) and the size of each group."""
    R = group.shape[0]
    G = int(group.max()) + 1 if R else 0
    order = np.argsort(group, kind="stable")
    counts = np.bincount(group, minlength=G)
    first = np.zeros(G + 1, dtype=np.int64)
    np.cumsum(counts, out=first[1:])
    local = np.empty(R, dtype=np.int32)
    local[order] = np.arange(R) - first[group[order]]
    return local, counts


def cable_ports(network: Network) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every router-router port with its owning router and the router at the other end."""
    pt = network.ports
    rp = pt.n_router_ports
    port = np.nonzero(pt.port_link[:rp] >= 0)[0]
    owner = pt.port_router[port].astype(np.int64)
    peer = pt.port_router[pt.port_peer[port]].astype(np.int64)
    return port, owner, peer


def local_port_matrix(network: Network, local: np.ndarray, size: int) -> np.ndarray:
    """``[r, j]``: lowest port of router ``r`` to the router of local index ``j`` in its group."""
    group = network.router_group
    port, owner, peer = cable_ports(network)
    same = group[owner] == group[peer]
    m = np.full((network.n_routers, size), -1, dtype=np.int32)
    po, oo, qq = port[same][::-1], owner[same][::-1], peer[same][::-1]
    m[oo, local[qq]] = po  # reversed assignment: the lowest port wins
    return m


def global_exits(network: Network) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Inter-group ports sorted by (source group, target group, port).

    Returns ``(own, key, ports)``: ``own[r, t]`` is the lowest port of router ``r`` to group
    ``t`` (-1 if none); ``key = src_group * G + dst_group`` and ``ports`` list every
    inter-group port in that order.
    """
    group = network.router_group.astype(np.int64)
    G = network.n_groups
    port, owner, peer = cable_ports(network)
    go, gq = group[owner], group[peer]
    cross = go != gq
    port, owner, go, gq = port[cross], owner[cross], go[cross], gq[cross]
    own = np.full((network.n_routers, G), -1, dtype=np.int32)
    own[owner[::-1], gq[::-1]] = port[::-1]
    key = go * G + gq
    o = np.lexsort((port, key))
    return own, key[o], port[o]


def check_group_reach(gnext: np.ndarray, group: np.ndarray) -> None:
    """Raise :class:`TopologyError` naming a group pair without a route."""
    G = gnext.shape[1]
    bad = (gnext < 0) & (group[:, None] != np.arange(G)[None, :])
    if bad.any():
        r, t = (int(x[0]) for x in np.nonzero(bad))
        raise TopologyError(f"group {int(group[r])} has no route to group {t} (router {r})")


def global_bump(network: Network) -> np.ndarray:
    """``port_vc_bump`` flagging the ports of the ``global`` link class."""
    pt = network.ports
    bump = np.zeros(pt.n_ports, dtype=np.uint8)
    if "global" in network.link_classes:
        rp = pt.n_router_ports
        bump[:rp][pt.port_class[:rp] == network.class_index("global")] = 1
    return bump


def dragonfly_tables(network: Network) -> RouteTables:
    """Group-level next-hop tables for any topology whose groups are fully connected inside.

    A router owning a link to the target group uses it (which one: :func:`balance_owned_links`);
    another router goes over one local hop to the ``((rank of r among the non-owners) + (rank
    of t among the targets reached through the same owners)) mod n``-th of the ``n`` routers of
    its group owning a link to ``t`` (see :func:`target_rank`).  Minimal paths are therefore
    local-global-local; VC = global hops so far (2 VCs).
    """
    G = network.n_groups
    group = network.router_group.astype(np.int64)
    local, counts = group_local_index(network.router_group)
    S = int(counts.max())
    lnext = local_port_matrix(network, local, S)
    own, key, ports = global_exits(network)
    gnext = own.copy()
    rs, ts = np.nonzero((gnext < 0) & (group[:, None] != np.arange(G)[None, :]))
    if rs.size:
        R = network.n_routers
        okey_k, okey_r = exit_owners(network, key, ports)
        q = group[rs] * G + ts
        start = np.searchsorted(okey_k, q, side="left")
        n = np.searchsorted(okey_k, q, side="right") - start
        if (n == 0).any():
            k = int(np.nonzero(n == 0)[0][0])
            raise TopologyError(
                f"group {int(group[rs[k]])} has no global link to group {int(ts[k])}")
        # owner ((rank of r among the non-owners) + (rank of t among the targets reached
        # through the same owners)) mod n: every owner gets the same number of non-owners
        # (within one), and each router spreads its targets evenly over the owners (a choice
        # that ignores t sends router l's traffic to a fixed subset of them).  Owners, not
        # links: a router owning several links to t uses one of them (per-group tables)
        below = np.searchsorted(okey_k * R + okey_r, q * R + rs) - start
        rank_t = target_rank(G, exit_signature(G, okey_k, okey_r))[q]
        ex_router = okey_r[start + (local[rs] - below + rank_t) % n]
        hop = lnext[rs, local[ex_router]]
        if (hop < 0).any():
            k = int(np.nonzero(hop < 0)[0][0])
            raise TopologyError(
                f"router {int(rs[k])} has no local link to router {int(ex_router[k])}, which "
                f"owns a global link from group {int(group[rs[k]])} to group {int(ts[k])}")
        gnext[rs, ts] = hop
    return group_minimal_tables(
        network, gnext, lnext, local,
        "dragonfly minimal (local-global-local), VC = global hops so far")


def exit_owners(network: Network, key: np.ndarray,
                ports: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct owners of the inter-group ports of :func:`global_exits`: ``(okey_k, okey_r)``,
    ``okey_k = src_group * G + dst_group`` and the owning router, sorted by both."""
    R = network.n_routers
    owner = network.ports.port_router[ports].astype(np.int64)
    okey = np.unique(key * R + owner)
    return okey // R, okey % R


def exit_signature(G: int, okey_k: np.ndarray, okey_r: np.ndarray) -> np.ndarray:
    """Per ``g*G + t``: (first owner, owner count) as one number, -1 without owners; the
    signature of the exit set that :func:`target_rank` groups targets by."""
    qa = np.arange(G * G)
    sa = np.searchsorted(okey_k, qa, side="left")
    na = np.searchsorted(okey_k, qa, side="right") - sa
    first = okey_r[np.minimum(sa, max(okey_r.size - 1, 0))] if okey_r.size else np.zeros_like(qa)
    return np.where(na > 0, first * (na.max() + 1) + na, -1)


def target_rank(G: int, sig: np.ndarray) -> np.ndarray:
    """``rank[g*G + t]``: how many groups ``t' < t`` have the same signature ``sig[g*G + t']``.

    ``sig`` identifies the set of exits from group ``g`` to group ``t`` (e.g. first port and
    count).  Routers choose exit ``(own rank + rank of t) mod n``: among the targets served by one
    set of exits, consecutive ranks take consecutive exits, so each router's traffic spreads
    evenly over them whatever the arrangement numbers the groups (``t`` itself would skip a
    value at the source group and overload one exit).
    """
    g = np.repeat(np.arange(G, dtype=np.int64), G)
    t = np.tile(np.arange(G, dtype=np.int64), G)
    o = np.lexsort((t, sig, g))
    gs, ss = g[o], sig[o]
    new = np.ones(G * G, dtype=bool)
    new[1:] = (gs[1:] != gs[:-1]) | (ss[1:] != ss[:-1])
    pos = np.arange(G * G)
    run_start = np.maximum.accumulate(np.where(new, pos, 0))
    rank = np.empty(G * G, dtype=np.int64)
    rank[o] = pos - run_start
    return rank


def balance_owned_links(network: Network, gnext: np.ndarray) -> None:
    """Where a router owns several links to one group, choose the one it uses (in place).

    Tables are per (router, target group), so such a router uses one of its links to ``t``
    for all its traffic there and for that of the routers it serves; the others stay idle.
    The choice decides which router of ``t`` receives the traffic, and that router spreads it
    over its local links: taking the lowest port piled it on a few routers (5 groups of 18
    with 31 links per pair: busiest local link 1.6x the mean).  Here every (router, target)
    exit carries the nodes of the routers whose table path leaves the group there; exits with
    one link count first, then the others, heaviest first, take the link whose landing router
    has received the least traffic so far (ties: lowest port).  Deterministic.
    """
    pt = network.ports
    R, G = gnext.shape
    group = network.router_group.astype(np.int64)
    _, key, ports = global_exits(network)
    pair = pt.port_router[ports].astype(np.int64) * G + key % G  # (owner, target group)
    o = np.lexsort((ports, pair))
    pair, ports = pair[o], ports[o]
    multi = np.unique(pair[np.nonzero(pair[1:] == pair[:-1])[0]])
    if multi.size == 0:
        return
    # weight[o, t]: nodes of the routers whose path to t leaves the group at o
    nodes = np.bincount(network.node_router, minlength=R).astype(np.float64)
    rr, tt = np.nonzero((nodes[:, None] > 0) & (group[:, None] != np.arange(G)[None, :]))
    cur = rr.copy()
    weight = np.zeros(R * G)
    for _ in range(R):
        if cur.size == 0:
            break
        nxt = pt.port_router[pt.port_peer[gnext[cur, tt]]].astype(np.int64)
        out = group[nxt] != group[cur]
        np.add.at(weight, cur[out] * G + tt[out], nodes[rr[out]])
        cur, tt, rr = nxt[~out], tt[~out], rr[~out]
    land = pt.port_router[pt.port_peer[ports]].astype(np.int64)
    received = np.zeros(R)
    single = ~np.isin(pair, multi)
    np.add.at(received, land[single], weight[pair[single]])
    start = np.searchsorted(pair, multi, side="left")
    stop = np.searchsorted(pair, multi, side="right")
    for i in np.lexsort((multi, -weight[multi])).tolist():
        cand = np.arange(start[i], stop[i])
        k = int(cand[np.argmin(received[land[cand]])])
        received[land[k]] += weight[multi[i]]
        gnext[multi[i] // G, multi[i] % G] = ports[k]


def group_minimal_tables(network: Network, gnext: np.ndarray, lnext: np.ndarray,
                         local: np.ndarray, description: str) -> RouteTables:
    """Minimal tables of a grouped topology (at most one global hop), after checking that every
    router reaches every other group and choosing, for routers owning several links to one
    group, the link used (:func:`balance_owned_links`); VC = global hops so far, hence 2 VCs
    (CODES)."""
    check_group_reach(gnext, network.router_group)
    balance_owned_links(network, gnext)
    return RouteTables(
        gnext=gnext,
        lnext=lnext,
        router_group=network.router_group.astype(np.int32),
        router_local=local,
        vcs_required=2,
        vc_mode=VC_COUNTER,
        port_vc_bump=global_bump(network),
        description=description,
    )


@hookimpl
def federation_register_topologies(register) -> None:  # noqa: ANN001
    register(Dragonfly)
