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
source group a packet came from, so its second phase may also head back there).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from federation.network.equal_cost import equal_cost_ports
from federation.network.tables import VC_COUNTER


def reference_dependencies(net, t, n_vcs: int, plan) -> set[tuple[int, int]]:  # noqa: ANN001
    """Every ``(channel, next channel)`` pair, channels as ``port * n_vcs + vc``."""
    pt = net.ports
    peer = pt.port_router[pt.port_peer].astype(int)
    group, local = t.router_group.astype(int), t.router_local.astype(int)
    G = t.gnext.shape[1]
    counter = t.vc_mode == VC_COUNTER
    bump = (np.zeros(pt.n_ports, int) if t.port_vc_bump is None
            else np.asarray(t.port_vc_bump, int))
    pdim = np.full(pt.n_ports, -1) if t.port_dim is None else np.asarray(t.port_dim, int)
    dline = np.zeros(pt.n_ports, int) if t.port_dateline is None else np.asarray(t.port_dateline)
    masks = equal_cost_ports(net, t, "reference") if plan.spread != "none" else None
    carriers = sorted(set(net.node_router.tolist()))
    routers_of = {g: [r for r in range(net.n_routers) if group[r] == g] for g in range(G)}
    edges: set[tuple[int, int]] = set()
    seen: set[tuple] = set()

    def table_port(r: int, d: int) -> int:
        return int(t.gnext[r, group[d]] if group[r] != group[d] else t.lnext[r, local[d]])

    def equal_cost(r: int, d: int) -> list[int]:
        m = int(masks.gmask[r, group[d]] if group[r] != group[d] else masks.lmask[r, local[d]])
        return [int(masks.port[masks.first[r] + k]) for k in range(64) if m >> k & 1]

    def hop(o: int, level: int, dim: int, off: int) -> tuple[int, int, int] | None:
        """``tables_route.vc_rule``: (vc, level, dim) after leaving on ``o``."""
        if counter:
            vc, level = level + off, level + int(bump[o])
        else:
            if pdim[o] != dim:
                dim, level = int(pdim[o]), 0
            if dline[o]:
                level = 1
            vc = level + off
        return (vc, level, dim) if vc < n_vcs else None

    def walk(r: int, d: int, via: int, phase: int, level: int, dim: int, hops: int,
             undecided: bool, src_group: int, prev: int) -> None:
        key = (r, d, via, phase, level, dim, hops > 0, undecided, src_group, prev)
        if r == d and (via < 0 or phase == 1) or key in seen or level >= n_vcs:
            return
        seen.add(key)
        moves = []  # (port, via, phase, level bump, undecided after, spread allowed)
        if undecided:  # progressive: a minimal hop, or a commitment to any other group
            moves.append((None, -1, 0, 0, True, plan.spread != "none"))
            for g in range(G):
                if g not in (src_group, group[d]):
                    bumped = plan.commit_bump if hops > 0 else 0
                    moves.append((None, g, 0, bumped, False, False))
        else:
            moves.append((None, via, phase, 0, False, plan.spread == "all"))
        for _, v, ph, extra, und, spread in moves:
            lvl = level + extra
            if lvl >= n_vcs:
                continue
            turned = False
            if plan.valiant == "router" and v >= 0:
                if ph == 0 and r == v:  # route_via_router: the turn
                    ph, lvl, turned = 1, lvl + plan.turn_bump, True
            elif v >= 0 and ph == 0 and group[r] == v:  # follow: reached the group
                ph, turned = 1, True
            if turned:  # the second phase: any destination outside this group
                for d2 in carriers:
                    if group[d2] != group[r]:
                        walk(r, d2, v, ph, lvl, dim, hops, False, src_group, prev)
                continue
            target = d if v < 0 or ph == 1 else v
            if plan.valiant == "group" and v >= 0 and ph == 0:
                ports = [int(t.gnext[r, v])]
            elif spread and (v < 0 or ph == 1):
                ports = equal_cost(r, target)
            else:
                ports = [table_port(r, target)]
            off = t.phase_vc_offset if v >= 0 and ph == 1 else 0
            for o in ports:
                if o < 0 or lvl >= n_vcs:
                    continue
                h = hop(o, lvl, dim, off)
                if h is None:
                    continue
                vc, lvl2, dim2 = h
                ch = o * n_vcs + vc
                if prev >= 0:
                    edges.add((prev, ch))
                z = int(peer[o])
                still = und and group[z] == src_group
                walk(z, d, v, ph, lvl2, dim2, hops + 1, still, src_group, ch)

    others = range(G)
    for s in carriers:
        for d in carriers:
            if s == d:
                continue
            gs, gd = group[s], group[d]
            walk(s, d, -1, 0, 0, -1, 0, False, gs, -1)  # minimal
            if plan.valiant == "none":
                continue
            if plan.decide == "source_group":
                if gs != gd:
                    walk(s, d, -1, 0, 0, -1, 0, True, gs, -1)
                continue
            for g in others:
                if g in (gs, gd):
                    continue
                for v in ([g] if plan.valiant == "group" else routers_of[g]):
                    walk(s, d, v, 0, 0, -1, 0, False, gs, -1)
    return edges


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
