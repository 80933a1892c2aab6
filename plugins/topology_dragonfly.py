"""Topology ``dragonfly``: the 1-D dragonfly of Kim, Dally, Scott and Abts (ISCA 2008).

``g`` groups of ``a`` routers; routers inside a group are fully connected by *local* links; each
router has ``p`` terminals and ``h`` *global* links, so a group has ``a*h`` global ports and the
router radix is ``a + p + h - 1``.  The default ``g = a*h + 1`` gives exactly one global link per
pair of groups (the balanced configuration of CODES, with ``a = 2p = 2h``).

Global-link arrangement (``absolute``, the consecutive layout of CODES and merlin):
group ``i`` numbers its global ports ``k = 0 .. a*h-1``, port ``k`` sitting on router ``k // h``.
Port ``k`` of group ``i`` leads to group ``k`` if ``k < i`` else ``k + 1`` (the other groups in
order), and arrives on the port of that group which leads back to ``i``.  With fewer groups than
``a*h + 1`` the ports are dealt round-robin over the other groups, giving ``a*h // (g-1)`` links per
pair (``a*h`` must then be a multiple of ``g-1``).

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
from federation.components import VC_COUNTER
from federation.errors import TopologyError

GIB = 2**30


class DragonflyParams(Params):
    p: int = Field(ge=1, description="terminals (nodes) per router")
    a: int = Field(ge=1, description="routers per group, fully connected by local links")
    h: int = Field(ge=1, description="global links per router")
    g: int | None = Field(None, ge=2, description="number of groups; default a*h + 1")
    arrangement: str = Field("absolute", description="global-link arrangement (absolute)")

    @model_validator(mode="after")
    def _check(self) -> DragonflyParams:
        g = self.groups
        ports = self.a * self.h
        if g - 1 > ports:
            raise ValueError(
                f"g={g} groups need at least g-1={g - 1} global ports per group, but a*h={ports}"
            )
        if ports % (g - 1):
            raise ValueError(
                f"a*h={ports} global ports per group cannot be dealt evenly over the g-1={g - 1} "
                "other groups; choose g-1 dividing a*h"
            )
        if self.arrangement not in ("absolute",):
            raise ValueError(f"unknown arrangement {self.arrangement!r} (known: absolute)")
        return self

    @property
    def groups(self) -> int:
        return self.g if self.g is not None else self.a * self.h + 1


class Dragonfly(Topology):
    """1-D dragonfly: p terminals per router, a routers per group, h global links per router."""

    name = "dragonfly"
    Params = DragonflyParams
    link_defaults: ClassVar[dict[str, LinkDefaults]] = {
        "terminal": LinkDefaults(bandwidth=5.25 * GIB, latency=10e-9, buffer=8 * 2**10),
        "local": LinkDefaults(bandwidth=5.25 * GIB, latency=30e-9, buffer=8 * 2**10),
        "global": LinkDefaults(bandwidth=4.7 * GIB, latency=100e-9, buffer=16 * 2**10),
    }
    params: DragonflyParams

    def build(self) -> Network:
        p, a, h = self.params.p, self.params.a, self.params.h
        g = self.params.groups
        b = NetworkBuilder(["local", "global"])
        radix = a + p + h - 1
        for grp in range(g):
            routers = b.add_routers(a, radix=radix, group=grp)
            for r in routers:
                b.attach_nodes(r, p)
        for grp in range(g):
            base = grp * a
            for i in range(a):
                for j in range(i + 1, a):
                    b.add_link(base + i, base + j, "local")
        for src_g, k, dst_g, k2 in self.global_ports(a, h, g):
            if (src_g, k) < (dst_g, k2):
                b.add_link(src_g * a + k // h, dst_g * a + k2 // h, "global")
        coords = {
            "group": np.repeat(np.arange(g), a).astype(np.int32),
            "router_in_group": np.tile(np.arange(a), g).astype(np.int32),
        }
        return b.build(group_routing=True, coords=coords,
                       info={"p": p, "a": a, "h": h, "g": g, "links_per_pair": a * h // (g - 1)})

    @staticmethod
    def global_ports(a: int, h: int, g: int) -> list[tuple[int, int, int, int]]:
        """All (group, port, peer group, peer port) of the absolute arrangement."""
        ports = a * h
        per_pair = ports // (g - 1)
        out = []
        for i in range(g):
            for k in range(ports):
                rank, copy = k % (g - 1), k // (g - 1)
                t = rank if rank < i else rank + 1
                back = i if i < t else i - 1
                out.append((i, k, t, back + copy * (g - 1)))
        assert per_pair * (g - 1) == ports
        return out

    def minimal_routes(self, network: Network) -> RouteTables:
        """At most one global hop: local to the router owning a link to the target group.

        With several links between a pair of groups, a router that owns one uses it (lowest port),
        other routers go to the owner of the lowest-numbered such link.  VC = global hops so far
        (CODES): 2 VCs for minimal, 3 for Valiant.
        """
        return dragonfly_tables(network)


def dragonfly_tables(network: Network) -> RouteTables:
    """Group-level next-hop tables for any topology whose groups are fully connected inside."""
    pt = network.ports
    R = network.n_routers
    G = network.n_groups
    group = network.router_group
    # local index of each router in its group
    local = np.zeros(R, dtype=np.int32)
    counts = np.zeros(G, dtype=np.int32)
    for r in range(R):
        local[r] = counts[group[r]]
        counts[group[r]] += 1
    S = int(counts.max())
    gcls = network.class_index("global") if "global" in network.link_classes else -1
    rp = pt.n_router_ports
    cable = np.nonzero(pt.port_link[:rp] >= 0)[0]
    owner = pt.port_router[cable]
    peer = pt.port_router[pt.port_peer[cable]]
    lnext = np.full((R, S), -1, dtype=np.int32)
    gnext = np.full((R, G), -1, dtype=np.int32)
    # direct neighbours inside the group; global exits per (router, group)
    exits: dict[tuple[int, int], int] = {}  # (group, target group) -> lowest port
    for port, o, q in zip(cable.tolist(), owner.tolist(), peer.tolist(), strict=True):
        go, gq = int(group[o]), int(group[q])
        if go == gq:
            if lnext[o, local[q]] < 0:
                lnext[o, local[q]] = port
        else:
            if gnext[o, gq] < 0:
                gnext[o, gq] = port
            key = (go, gq)
            if key not in exits or port < exits[key]:
                exits[key] = port
    for (go, gq), port in exits.items():
        ex_router = int(pt.port_router[port])
        members = np.nonzero(group == go)[0]
        for r in members.tolist():
            if gnext[r, gq] >= 0:
                continue
            hop = lnext[r, local[ex_router]]
            if hop < 0:
                raise TopologyError(
                    f"router {r} has no local link to router {ex_router}, which owns the "
                    f"global link from group {go} to group {gq}"
                )
            gnext[r, gq] = hop
    for r in range(R):
        for t in range(G):
            if t != group[r] and gnext[r, t] < 0:
                raise TopologyError(f"group {group[r]} has no global link to group {t}")
    bump = np.zeros(pt.n_ports, dtype=np.uint8)
    if gcls >= 0:
        bump[:rp][pt.port_class[:rp] == gcls] = 1
    return RouteTables(
        gnext=gnext,
        lnext=lnext,
        router_group=group.astype(np.int32),
        router_local=local,
        vcs_required=2,
        vc_mode=VC_COUNTER,
        port_vc_bump=bump,
        description="dragonfly minimal (local-global-local), VC = global hops so far",
    )


@hookimpl
def federation_register_topologies(register) -> None:  # noqa: ANN001
    register(Dragonfly)
