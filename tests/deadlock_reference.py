"""A per-packet reference for the deadlock proof's channel dependencies (tests only).

It follows every packet the engine's table routing (``federation/engine/tables_route.py``) and
the built-in compiled routings may route, one at a time, in plain Python: every source and
destination router, every intermediate the plan allows, every choice of the plan (minimal or
Valiant, a commitment at any router of the source group, any equal-cost port), with the VC
rule written out as the engine has it.  Each pair of consecutive hops is a dependency.  Slow
(small machines only), but independent of the state walk of
:mod:`federation.network.dependencies`, whose channel dependencies must be exactly these.

As the walk does, a Valiant packet forgets its destination in its first phase: from its
intermediate it may head for any destination outside the intermediate's group (a packet's
second phase never starts in its source or destination group; the walk does not track which
source group a packet came from, so its second phase may also head back there).  Likewise a
detour hop (``detour: source``) from a source router forgets the destination: from the
neighbour it reached, a level up, it may head for any router of the group carrying nodes.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from federation.network.equal_cost import equal_cost_ports
from federation.network.tables import VC_COUNTER


class Reference:
    """One routing's packets on one machine, followed one by one (see the module docstring)."""

    def __init__(self, net, t, n_vcs: int, plan) -> None:  # noqa: ANN001
        pt = net.ports
        self.t, self.V, self.plan = t, n_vcs, plan
        self.peer = pt.port_router[pt.port_peer].astype(int)
        self.owner = np.where(pt.port_link >= 0, pt.port_router, -1)[:pt.n_router_ports]
        self.group, self.local = t.router_group.astype(int), t.router_local.astype(int)
        self.G = t.gnext.shape[1]
        self.counter = t.vc_mode == VC_COUNTER
        self.bump = (np.zeros(pt.n_ports, int) if t.port_vc_bump is None
                     else np.asarray(t.port_vc_bump, int))
        self.pdim = (np.full(pt.n_ports, -1) if t.port_dim is None
                     else np.asarray(t.port_dim, int))
        self.dline = (np.zeros(pt.n_ports, int) if t.port_dateline is None
                      else np.asarray(t.port_dateline))
        self.masks = equal_cost_ports(net, t, "reference") if plan.spread != "none" else None
        self.carriers = sorted(set(net.node_router.tolist()))
        self.routers_of = {g: [r for r in range(net.n_routers) if self.group[r] == g]
                           for g in range(self.G)}
        self.edges: set[tuple[int, int]] = set()
        self.seen: set[tuple] = set()
        self.over: set[int] = set()  #: ports some hop leaves on a VC at or above n_vcs

    def table_port(self, r: int, d: int) -> int:
        g, t = self.group, self.t
        return int(t.gnext[r, g[d]] if g[r] != g[d] else t.lnext[r, self.local[d]])

    def equal_cost(self, r: int, d: int) -> list[int]:
        g, m = self.group, self.masks
        bits = int(m.gmask[r, g[d]] if g[r] != g[d] else m.lmask[r, self.local[d]])
        return [int(m.port[m.first[r] + k]) for k in range(64) if bits >> k & 1]

    def hop(self, o: int, level: int, dim: int, off: int) -> tuple[int, int, int] | None:
        """``tables_route.vc_rule``: (vc, level, dim) after leaving on ``o``."""
        if self.counter:
            vc, level = level + off, level + int(self.bump[o])
        else:
            if self.pdim[o] != dim:
                dim, level = int(self.pdim[o]), 0
            if self.dline[o]:
                level = 1
            vc = level + off
        if vc >= self.V:  # the engine stops the run on this VC
            self.over.add(o)
            return None
        return vc, level, dim

    def moves(self, r: int, d: int, via: int, phase: int, hops: int, undecided: bool,
              src_group: int) -> list[tuple[int, int, int, bool, bool]]:
        """(via, phase, level bump, undecided after, equal-cost ports allowed) per choice."""
        plan = self.plan
        if not undecided:
            return [(via, phase, 0, False, plan.spread == "all")]
        out = [(-1, 0, 0, True, plan.spread != "none")]  # one more minimal hop
        for g in range(self.G):  # or a commitment to another group
            if g not in (src_group, self.group[d]):
                out.append((g, 0, plan.commit_bump if hops > 0 else 0, False, False))
        return out

    def walk(self, r: int, d: int, via: int, phase: int, level: int, dim: int, hops: int,
             undecided: bool, src_group: int, prev: int) -> None:
        key = (r, d, via, phase, level, dim, hops > 0, undecided, src_group, prev)
        if r == d and (via < 0 or phase == 1) or key in self.seen:
            return
        self.seen.add(key)
        plan, group, t = self.plan, self.group, self.t
        for v, ph, extra, und, spread in self.moves(r, d, via, phase, hops, undecided,
                                                     src_group):
            lvl = level + extra
            turned = False
            if plan.valiant == "router" and v >= 0:
                if ph == 0 and r == v:  # route_via_router: the turn
                    ph, lvl, turned = 1, lvl + plan.turn_bump, True
            elif v >= 0 and ph == 0 and group[r] == v:  # follow: reached the group
                ph, turned = 1, True
            if turned:  # the second phase: any destination outside this group; the turn
                # forgets the dimension (dateline levels start afresh: tables_route.follow)
                for d2 in self.carriers:
                    if group[d2] != group[r]:
                        self.walk(r, d2, v, ph, lvl, -1, hops, False, src_group, prev)
                continue
            if plan.valiant == "group" and v >= 0 and ph == 0:
                ports = [int(t.gnext[r, v])]
            elif spread and (v < 0 or ph == 1):
                ports = self.equal_cost(r, d)
            else:
                ports = [self.table_port(r, d if v < 0 or ph == 1 else v)]
            off = t.phase_vc_offset if v >= 0 and ph == 1 else 0
            for o in ports:
                h = self.hop(o, lvl, dim, off) if o >= 0 else None
                if h is None:
                    continue
                ch = o * self.V + h[0]
                if prev >= 0:
                    self.edges.add((prev, ch))
                z = int(self.peer[o])
                self.walk(z, d, v, ph, h[1], h[2], hops + 1, und and group[z] == src_group,
                          src_group, ch)

    def detour(self, s: int, gs: int) -> None:
        """A first hop from ``s`` to any neighbour in its group, then minimal a level up."""
        for o in np.nonzero(self.owner == s)[0]:
            z = int(self.peer[o])
            if z < 0 or self.group[z] != gs:
                continue
            h = self.hop(int(o), 0, -1, 0)
            if h is None:
                continue
            for d in self.carriers:
                if self.group[d] == gs:
                    self.walk(z, d, -1, 0, h[1] + self.plan.detour_bump, h[2], 1, False, gs,
                              int(o) * self.V + h[0])

    def run(self) -> set[tuple[int, int]]:
        plan, group = self.plan, self.group
        for s in self.carriers:
            for d in self.carriers:
                if s == d:
                    continue
                gs, gd = group[s], group[d]
                self.walk(s, d, -1, 0, 0, -1, 0, False, gs, -1)  # minimal
                if plan.detour == "source" and gs == gd:
                    self.detour(s, gs)
                if plan.valiant == "none":
                    continue
                if plan.decide == "source_group":
                    if gs != gd:
                        self.walk(s, d, -1, 0, 0, -1, 0, True, gs, -1)
                    continue
                for g in range(self.G):
                    if g in (gs, gd):
                        continue
                    for v in ([g] if plan.valiant == "group" else self.routers_of[g]):
                        self.walk(s, d, v, 0, 0, -1, 0, False, gs, -1)
        return self.edges


def reference_dependencies(net, t, n_vcs: int, plan) -> set[tuple[int, int]]:  # noqa: ANN001
    """Every ``(channel, next channel)`` pair, channels as ``port * n_vcs + vc``."""
    return Reference(net, t, n_vcs, plan).run()


def projected_dependencies(src: np.ndarray, dst: np.ndarray,
                           n_channels: int) -> set[tuple[int, int]]:
    """The channel dependencies of the walk's graph (vertex codes, channels below
    ``n_channels``): ``c -> c'`` when a path of states (no channel in between) joins them."""
    codes = np.union1d(np.union1d(src, dst), np.arange(n_channels))
    n = codes.size
    src, dst = np.searchsorted(codes, src), np.searchsorted(codes, dst)
    m = sp.csr_matrix((np.ones(src.size, bool), (src, dst)), shape=(n, n)).astype(np.int32)
    ch = codes < n_channels
    cc = m[ch][:, ch]
    cs, ss, sc = m[ch][:, ~ch], m[~ch][:, ~ch], m[~ch][:, ch]
    reach = sc.copy()  # states -> channels through states
    for _ in range(16):  # state paths at one router are short
        nxt = ((ss @ reach + sc) > 0).astype(np.int32)
        if (nxt != reach).nnz == 0:
            break
        reach = nxt
    total = ((cc + cs @ reach) > 0).tocoo()
    return set(zip(total.row.tolist(), total.col.tolist(), strict=True))
