"""Topology ``aries``: the Cray XC (Aries, "Cascade") dragonfly.

Structure (De Sensi, Di Girolamo and Hoefler, SC'19, §2.1, after the Cray XC white paper): a
*group* is ``chassis`` (6) chassis of ``blades`` (16) blades; a blade holds one Aries router and
``nodes_per_router`` (4) nodes.  Inside a group the routers form a 2-D all-to-all:

* ``intra_chassis``: every router is connected to the other 15 routers of its chassis, one tile
  each (the paper's "column");
* ``inter_chassis``: every router is connected to the router in the same slot of each of the
  other 5 chassis, ``inter_chassis_tiles`` (3) tiles each (the "row");
* ``global``: ``global_tiles`` (up to 10) optical tiles per router go to other groups, bundled
  ``tiles_per_global_link`` tiles per global link;
* ``terminal``: ``processor_tiles`` (8) tiles serve the 4 NICs.

Tile budget: ``(blades-1) + (chassis-1)*inter_chassis_tiles + global_tiles + processor_tiles``
must not exceed ``router_tiles`` (48): 15 + 15 + 10 + 8 = 48 for the default shape.

Bundling model: a bundle of tiles is **one cable whose bandwidth is the sum of its tiles** (an
inter-chassis link is one cable of 3 x 5.25 GB/s, a global link one cable of
``tiles_per_global_link`` x 4.7 GB/s, a node's terminal link carries
``processor_tiles / nodes_per_router`` tiles).  Parallel cables would leave all but one idle,
because routing tables name one output port per destination.  ``Network.radix`` is the tile
count (48); the number of cable ports per router is
``nodes_per_router + (blades-1) + (chassis-1) + global_tiles // tiles_per_global_link``.

Default figures (``link_defaults``, scaled per instance by the bundling): tiles run at 5.25 GB/s
(electrical: processor, intra- and inter-chassis) or 4.7 GB/s (optical: global) per direction,
decimal GB as in the paper; the paper gives "4.7 to 5.25 GB/s depending on whether the link is
optical or electrical", the optical/electrical mapping is the Cray white paper's.  Latencies and
buffers are not in the paper: 10 ns terminal, 30 ns intra/inter-chassis, 100 ns global, 8 KiB
per VC (16 KiB on global links), the figures of this project's dragonfly plugin.

Global links: the group's ``blades*chassis*global_links_per_router`` global ports are wired
with the dragonfly arrangements (``absolute``, ``relative``, ``circulant``; see
:mod:`federation.plugins.topologies.dragonfly`), router ``l`` (local index) owning ports
``l*hg .. l*hg + hg-1``; ``links_per_pair`` defaults to all ports, spare ports stay unconnected.

Numbering: router ``((group*chassis + chassis_index)*blades + blade)``; local index in the group
``chassis_index*blades + blade``; nodes router-major.  ``Network.coords``: per router ``group``,
``chassis``, ``blade``; per node ``node_group``, ``node_chassis``, ``node_blade`` and ``node``
(the NIC index on its blade, 0..3).

Minimal routing: inside a group dimension-ordered, first within the chassis (to the router of
the target's slot), then across chassis: at most 2 local hops.  Towards another group ``t`` a
router owning a link there uses it; else, if routers of the same slot (other chassis) own one,
it goes to one of them in one inter-chassis hop; else it goes within its chassis to a slot that
has owners, whose router owns a link or crosses chassis to an owner.  Each choice is the
``((rank of the router among those choosing from the same candidates) + (rank of t among the
targets with the same owners)) mod (candidates)``-th candidate (owners by chassis, slots by
blade): the candidates share the routers evenly, and a router's choices vary with ``t``, so it
uses all its local links.  (The local index plus ``t``, used before, sent the odd blades of a
chassis to half of its even ones: 11 groups with 2-tile global links, busiest global link 1.5x
the mean, now 1.0x.)  A router owning several links to ``t`` uses the one chosen by
:func:`~federation.plugins.topologies.dragonfly.balance_owned_links`.  So a minimal path is at
most local-local-global-local-local (5 router hops), intra-chassis hops always before
inter-chassis hops in each group; VC = global hops so far (2 VCs; Valiant 3).
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

ELECTRICAL_TILE = 5.25e9  # bytes/s per direction (Cray XC white paper: electrical tiles)
OPTICAL_TILE = 4.7e9  # bytes/s per direction (optical tiles)
KIB = 2**10


class AriesParams(Params):
    groups: int = Field(ge=1, description="number of groups (a Cray XC group is 2 cabinets)")
    chassis: int = Field(6, ge=1, description="chassis per group")
    blades: int = Field(16, ge=1, description="blades (Aries routers) per chassis")
    nodes_per_router: int = Field(4, ge=1, description="nodes (NICs) per Aries router")
    global_tiles: int = Field(10, ge=0, description="optical tiles per router used for "
                              "global links (Aries: up to 10)")
    tiles_per_global_link: int = Field(1, ge=1, description="tiles bundled into one global link")
    inter_chassis_tiles: int = Field(3, ge=1, description="tiles bundled into each "
                                     "inter-chassis link")
    processor_tiles: int = Field(8, ge=1, description="processor tiles shared by the NICs")
    router_tiles: int = Field(48, ge=1, description="tiles (ports) of an Aries router")
    arrangement: Literal["absolute", "relative", "circulant"] = Field(
        "absolute", description=ARRANGEMENT_FIELD_DOC)
    links_per_pair: int | None = Field(
        None, ge=1, description="global links between each pair of groups; default: as many "
        "as the global ports allow (leftover ports stay unconnected)")

    @model_validator(mode="after")
    def _check(self) -> AriesParams:
        if self.global_tiles % self.tiles_per_global_link:
            raise ValueError(
                f"global_tiles={self.global_tiles} is not a multiple of "
                f"tiles_per_global_link={self.tiles_per_global_link}")
        used = self.tiles_per_router
        if used > self.router_tiles:
            raise ValueError(
                f"an Aries router of this shape needs {used} tiles: (blades-1) = "
                f"{self.blades - 1} intra-chassis + (chassis-1)*inter_chassis_tiles = "
                f"{(self.chassis - 1) * self.inter_chassis_tiles} inter-chassis + global_tiles "
                f"= {self.global_tiles} + processor_tiles = {self.processor_tiles}, but "
                f"router_tiles = {self.router_tiles}")
        if self.groups > 1:
            if self.global_links_per_router == 0:
                raise ValueError(f"groups={self.groups} needs global links, but global_tiles=0")
            msg = check_global_ports(
                self.chassis * self.blades, self.global_links_per_router, self.groups,
                self.links_per_pair,
                f"chassis*blades*(global_tiles/tiles_per_global_link) = {self.chassis}*"
                f"{self.blades}*{self.global_links_per_router}")
            if msg:
                raise ValueError(msg)
        return self

    @property
    def global_links_per_router(self) -> int:
        return self.global_tiles // self.tiles_per_global_link

    @property
    def tiles_per_router(self) -> int:
        return (self.blades - 1 + (self.chassis - 1) * self.inter_chassis_tiles
                + self.global_tiles + self.processor_tiles)


def aries_link_defaults(p: AriesParams) -> dict[str, LinkDefaults]:
    """Default figures of each link class for this shape (bandwidth = tiles x tile rate)."""
    return {
        "terminal": LinkDefaults(
            bandwidth=p.processor_tiles / p.nodes_per_router * ELECTRICAL_TILE,
            latency=10e-9, buffer=8 * KIB),
        "intra_chassis": LinkDefaults(bandwidth=ELECTRICAL_TILE, latency=30e-9, buffer=8 * KIB),
        "inter_chassis": LinkDefaults(bandwidth=p.inter_chassis_tiles * ELECTRICAL_TILE,
                                      latency=30e-9, buffer=8 * KIB),
        "global": LinkDefaults(bandwidth=p.tiles_per_global_link * OPTICAL_TILE,
                               latency=100e-9, buffer=16 * KIB),
    }


class Aries(Topology):
    """Cray XC (Aries) dragonfly: groups of 6 chassis x 16 routers, 4 nodes per router.

    Parameters: ``groups`` (required), ``chassis`` (6), ``blades`` (16), ``nodes_per_router``
    (4), ``global_tiles`` (10), ``tiles_per_global_link`` (1), ``inter_chassis_tiles`` (3),
    ``processor_tiles`` (8), ``router_tiles`` (48), ``arrangement``, ``links_per_pair``.
    Link classes ``intra_chassis``, ``inter_chassis``, ``global``; a bundle of tiles is one
    cable with the tiles' summed bandwidth.  Wiring and routing: see the module docstring.
    """

    name = "aries"
    Params = AriesParams
    link_defaults: ClassVar[dict[str, LinkDefaults]] = aries_link_defaults(
        AriesParams(groups=1))
    params: AriesParams

    def __init__(self, params: AriesParams) -> None:
        super().__init__(params)
        # bundled links: the defaults follow the tile counts of this instance
        self.link_defaults = aries_link_defaults(params)  # type: ignore[misc]

    def build(self) -> Network:
        pr = self.params
        G, C, B, n = pr.groups, pr.chassis, pr.blades, pr.nodes_per_router
        S = C * B
        hg = pr.global_links_per_router
        b = NetworkBuilder(["intra_chassis", "inter_chassis", "global"])
        for grp in range(G):
            for r in b.add_routers(S, radix=pr.router_tiles, group=grp):
                b.attach_nodes(r, n)
        base = (np.arange(G) * S)[:, None]
        # intra-chassis: all pairs of blades in each chassis
        iu, ju = np.triu_indices(B, k=1)
        cb = (np.arange(C) * B)[:, None]
        src = (base[:, :, None] + (cb + iu)[None]).ravel()
        dst = (base[:, :, None] + (cb + ju)[None]).ravel()
        b.add_links(src, dst, "intra_chassis")
        # inter-chassis: all pairs of chassis for each slot
        iu, ju = np.triu_indices(C, k=1)
        slot = np.arange(B)[:, None]
        src = (base[:, :, None] + (iu * B + slot)[None]).ravel()
        dst = (base[:, :, None] + (ju * B + slot)[None]).ravel()
        b.add_links(src, dst, "inter_chassis")
        w = global_wiring(S, hg, G, pr.arrangement, pr.links_per_pair) if G > 1 else None
        if w is not None:
            b.add_links(w.src_group * S + w.src_owner, w.dst_group * S + w.dst_owner, "global")
        R = G * S
        rid = np.arange(R)
        rgroup, loc = rid // S, rid % S
        node_router = np.repeat(rid, n)
        coords = {
            "group": rgroup.astype(np.int32),
            "chassis": (loc // B).astype(np.int32),
            "blade": (loc % B).astype(np.int32),
            "node_group": rgroup[node_router].astype(np.int32),
            "node_chassis": (loc // B)[node_router].astype(np.int32),
            "node_blade": (loc % B)[node_router].astype(np.int32),
            "node": np.tile(np.arange(n), R).astype(np.int32),
        }
        info = {
            "groups": G, "chassis": C, "blades": B, "nodes_per_router": n,
            "global_links_per_router": hg, "tiles_per_router": pr.tiles_per_router,
            "arrangement": pr.arrangement,
            "links_per_pair": w.links_per_pair if w is not None else 0,
            "spare_global_ports_per_group": w.spare_per_group if w is not None else 0,
        }
        return b.build(group_routing=True, coords=coords, info=info)

    def size(self) -> TopologySize:
        """Counts from the shape alone: per group ``chassis*blades`` routers, a clique of
        intra-chassis cables per chassis and one of inter-chassis cables per slot, plus
        ``links_per_pair`` global cables per pair of groups."""
        pr = self.params
        G, C, B = pr.groups, pr.chassis, pr.blades
        local = C * (B * (B - 1) // 2) + B * (C * (C - 1) // 2)
        glob = global_cable_count(C * B, pr.global_links_per_router, G, pr.links_per_pair)
        return TopologySize(routers=G * C * B, nodes=G * C * B * pr.nodes_per_router,
                            cables=G * local + glob, groups=G)

    def minimal_routes(self, network: Network) -> RouteTables:
        """Dimension-ordered inside groups (chassis first), at most one global hop; 2 VCs."""
        return aries_tables(network, self.params.chassis, self.params.blades)


def aries_tables(network: Network, chassis: int, blades: int) -> RouteTables:
    """Hierarchical minimal tables for an Aries network (see the module docstring)."""
    B = blades
    S = chassis * blades
    R = network.n_routers
    G = network.n_groups
    group = network.router_group.astype(np.int64)
    rid = np.arange(R)
    local = (rid % S).astype(np.int32)
    if not (group == rid // S).all():
        raise TopologyError("aries tables need routers numbered group-major")
    rc, rs = local // B, local % B
    nbr = local_port_matrix(network, local, S)
    # intra-group: within the chassis to the target's slot, then across chassis
    j = np.arange(S)
    jc, js = j // B, j % B
    tgt = np.where(js[None, :] != rs[:, None], rc[:, None] * B + js[None, :],
                   np.where(jc[None, :] != rc[:, None], jc[None, :] * B + rs[:, None], -1))
    lnext = np.where(tgt >= 0, np.take_along_axis(nbr, np.maximum(tgt, 0), axis=1), -1)
    lnext = lnext.astype(np.int32)
    own, key, ports = global_exits(network)
    gnext = own.copy()
    r_, t_ = np.nonzero((gnext < 0) & (group[:, None] != np.arange(G)[None, :]))
    if r_.size:
        okey_k, okey_r = exit_owners(network, key, ports)  # distinct owners per (group, target)
        q = group[r_] * G + t_
        st = np.searchsorted(okey_k, q, side="left")
        cnt = np.searchsorted(okey_k, q, side="right") - st
        if (cnt == 0).any():
            k = int(np.nonzero(cnt == 0)[0][0])
            raise TopologyError(
                f"group {int(group[r_[k]])} has no global link to group {int(t_[k])}")
        # every choice is (rank of r among the routers choosing from the same candidates + rank
        # of t among the targets with the same owners) mod (candidates): the candidates share
        # the choosers evenly, and a router's choices vary with the target group
        rank_t = target_rank(G, exit_signature(G, okey_k, okey_r))[q]
        oloc = okey_r % S
        # owners in the same slot as r (other chassis), sorted by chassis: one inter-chassis hop
        skey = np.sort((okey_k * B + oloc % B) * chassis + oloc // B)
        sq = (q * B + rs[r_]) * chassis
        st2 = np.searchsorted(skey, sq, side="left")
        cnt2 = np.searchsorted(skey, sq + chassis, side="left") - st2
        same = cnt2 > 0
        u2 = rc[r_] - (np.searchsorted(skey, sq + rc[r_]) - st2)  # rank among slot non-owners
        i2 = np.nonzero(same)[0]
        pick_c = skey[st2[i2] + (u2[i2] + rank_t[i2]) % cnt2[i2]] % chassis
        hop = np.empty(r_.shape[0], dtype=np.int64)
        hop[i2] = nbr[r_[i2], pick_c * B + rs[r_[i2]]]
        # no owner in r's slot: within the chassis to a slot that has owners, which then owns a
        # link or crosses chassis to an owner (rank among the chassis' routers of such slots)
        slots = np.unique(okey_k * B + oloc % B)
        st3 = np.searchsorted(slots, q * B, side="left")
        cnt3 = np.searchsorted(slots, q * B + B, side="left") - st3
        u3 = rs[r_] - (np.searchsorted(slots, q * B + rs[r_]) - st3)
        i3 = np.nonzero(~same)[0]
        slot = slots[st3[i3] + (u3[i3] + rank_t[i3]) % cnt3[i3]] % B
        hop[i3] = nbr[r_[i3], rc[r_[i3]] * B + slot]
        if (hop < 0).any():
            k = int(np.nonzero(hop < 0)[0][0])
            raise TopologyError(f"router {int(r_[k])} has no route towards group {int(t_[k])}")
        gnext[r_, t_] = hop
    return group_minimal_tables(
        network, gnext, lnext, local, "aries minimal (intra-chassis, inter-chassis, global, "
        "intra-chassis, inter-chassis), VC = global hops so far")


@hookimpl
def federation_register_topologies(register) -> None:  # noqa: ANN001
    register(Aries)
