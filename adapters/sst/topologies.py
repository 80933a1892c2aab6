"""Our built networks as SST merlin networks: router ports in merlin's numbering, one cable each.

merlin's topology subcomponents (``merlin.dragonfly``, ``merlin.torus``, ``merlin.fattree``)
do not look at the links of the configuration: each computes its next port from its own
numbering of ports (hosts first on a dragonfly, hosts last on a torus, down ports
before up ports on a fat tree).  A configuration is only right when every cable sits on the
port that numbering expects.  So each mapper here takes the network *our* topology built, puts
each of its cables on the merlin port that means the same thing, and then checks that merlin's
rules, applied to the result, reach what our cables reach (:func:`_check_ports_unique` and the
per-topology checks).  A machine that merlin's numbering cannot hold is refused with a
:class:`Refusal` naming the field, never approximated.

Node ``i`` of our network is endpoint ``i`` of merlin on every mapped topology (both number
nodes router-major, leaf-major on fat trees), so traffic matrices mean the same on both sides.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import prod
from typing import Any

import numpy as np

from federation.network import Network

#: merlin topologies this adapter emits (released sst-elements 16.0)
SUPPORTED = {"dragonfly": "merlin.dragonfly", "torus": "merlin.torus",
             "fattree": "merlin.fattree", "hypercube": "merlin.torus"}

#: why the other built-in topologies are refused (field ``topology.kind``)
REFUSED_KINDS = {
    "megafly": "merlin 16.0 has no megafly (dragonfly+) topology; its 'anytopo' (any graph with "
               "routing tables) exists only on the sst-elements devel branch",
    "aries": "merlin 16.0 has no Aries topology (6x16 rows/columns inside a group); "
             "'anytopo' exists only on the sst-elements devel branch",
    "circulant": "merlin 16.0 has no circulant topology; 'anytopo' exists only on the "
                 "sst-elements devel branch",
    "random_shortcut": "merlin 16.0 has no random-shortcut topology; 'anytopo' exists only on "
                       "the sst-elements devel branch",
    "graph_file": "merlin 16.0 routes only its own topologies; 'anytopo' (arbitrary graphs) "
                  "exists only on the sst-elements devel branch",
}


class Refusal(Exception):
    """The machine or experiment cannot be expressed exactly in merlin.

    ``field`` is the dotted path of the field responsible (``topology.kind``,
    ``links.global.bandwidth``, ``routing.algorithm``...) relative to its document; ``document``
    says which one (``machine`` or ``experiment``).
    """

    def __init__(self, field: str, message: str, document: str = "machine") -> None:
        super().__init__(message)
        self.field = field
        self.message = message
        self.document = document


@dataclass
class SstNetwork:
    """A merlin network: which topology subcomponent, its parameters, and every cable.

    ``cables`` rows are ``(link class, router a, port a, router b, port b)`` in merlin port
    numbers; ``hosts`` rows ``(node, router, port)``.  ``router_params`` holds parameters that
    differ per router (the dragonfly's ``global_link_map`` goes to router 0 only).
    """

    topology: str
    topo_params: dict[str, Any]
    num_ports: list[int]
    cables: list[tuple[str, int, int, int, int]]
    hosts: list[tuple[int, int, int]]
    vcs: int
    port_groups: bool = False  # merlin names host/group/global ports (per-class link_bw)
    router_params: dict[int, dict[str, Any]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def map_network(kind: str, params: Any, net: Network, routing: str) -> SstNetwork:
    """The merlin form of ``net`` built by topology ``kind`` with ``params``; ``routing`` is
    our routing algorithm's name.  Raises :class:`Refusal`."""
    if kind in REFUSED_KINDS:
        raise Refusal("topology.kind", f"topology {kind!r} cannot be expressed in SST merlin: "
                      f"{REFUSED_KINDS[kind]}")
    if kind == "dragonfly":
        out = map_dragonfly(params, net, routing)
    elif kind in ("torus", "hypercube"):
        out = map_torus(kind, params, net, routing)
    elif kind == "fattree":
        out = map_fattree(params, net, routing)
    else:
        raise Refusal("topology.kind", f"topology {kind!r} has no SST merlin counterpart in "
                      f"this adapter (supported: {', '.join(sorted(SUPPORTED))})")
    _check_ports_unique(out)
    return out


def _check_ports_unique(out: SstNetwork) -> None:
    """Every router port carries at most one cable or host, inside the router's radix."""
    seen: set[tuple[int, int]] = set()
    ends = [(r, p) for _, ra, pa, rb, pb in out.cables for r, p in ((ra, pa), (rb, pb))]
    ends += [(r, p) for _, r, p in out.hosts]
    for r, p in ends:
        if (r, p) in seen or not 0 <= p < out.num_ports[r]:
            raise AssertionError(f"SST mapping bug: router {r} port {p} used twice or outside "
                                 f"its {out.num_ports[r]} ports")
        seen.add((r, p))


def _router_cables(net: Network) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return (net.link_src.astype(np.int64), net.link_dst.astype(np.int64),
            net.link_class.astype(np.int64))


def _hosts_router_major(net: Network, first_port: Any) -> list[tuple[int, int, int]]:
    """Node ``i`` on port ``first_port(router) + (its rank on the router)``; refuses a
    network whose nodes are not numbered router-major (merlin derives the endpoint id)."""
    nr = net.node_router.astype(np.int64)
    if nr.size and (np.diff(nr) < 0).any():
        raise Refusal("topology", "nodes are not numbered router by router, which merlin's "
                      "endpoint numbering assumes")
    start = np.searchsorted(nr, nr, side="left")
    return [(int(i), int(r), int(first_port(int(r)) + i - s))
            for i, (r, s) in enumerate(zip(nr.tolist(), start.tolist(), strict=True))]


# --------------------------------------------------------------------------- dragonfly


def map_dragonfly(params: Any, net: Network, routing: str) -> SstNetwork:
    """``merlin.dragonfly`` with an explicit ``global_link_map`` built from our wiring.

    merlin numbers a router's ports hosts ``0..p-1``, local ``p..p+a-2`` (router ``j`` of the
    group on ``p + j`` below the router's own index, ``p + j - 1`` above), global
    ``p+a-1..p+a+h-2``.  ``global_link_map[r*h + k]`` tells what global port ``k`` of router
    ``r`` reaches, the same in every group: ``v % (g-1)`` is the target group's rank (the
    ``d``-th other group with ``global_route_mode: absolute``, ``d + 1`` groups further round
    with ``relative``), ``v // (g-1)`` which of the parallel links, -1 an unconnected port.
    Our ``absolute`` and ``relative`` arrangements are exactly merlin's modes; ``circulant``
    (group ``i - d - 1``) is ``relative`` with rank ``g - 2 - d``.  The map is written from our
    own wiring and then checked against every global cable of the built network.
    """
    from federation.network.wiring import global_wiring

    p, a, h, g = params.p, params.a, params.h, params.groups
    if g < 2:
        raise Refusal("topology.g", "merlin's dragonfly needs at least 2 groups")
    if a + p + h > 65535:
        raise Refusal("topology", "merlin's dragonfly stores router and port numbers in 16 "
                      "bits; this machine's groups are too large for it")
    w = global_wiring(a, h, g, params.arrangement, params.links_per_pair)
    m = w.links_per_pair
    ends = np.cumsum(w.used_per_owner)
    offset = ends - w.used_per_owner
    mode = "absolute" if params.arrangement == "absolute" else "relative"
    glm = [-1] * (a * h)
    for r in range(a):
        for k in range(int(w.used_per_owner[r])):
            q = int(offset[r]) + k
            d, c = q % (g - 1), q // (g - 1)
            rank = g - 2 - d if params.arrangement == "circulant" else d
            glm[r * h + k] = rank + c * (g - 1)
    gstart = p + a - 1
    src, dst, cls = _router_cables(net)
    names = net.link_classes
    cables: list[tuple[str, int, int, int, int]] = []
    lo = names.index("local")
    for u, v in zip(src[cls == lo].tolist(), dst[cls == lo].tolist(), strict=True):
        iu, iv = u % a, v % a
        cables.append(("local", u, p + iv - (iv > iu), v, p + iu - (iu > iv)))
    # global cables: ours, each with its used-port numbers q (src) and q' (dst)
    ours = sorted(zip((src[cls == names.index("global")]).tolist(),
                      (dst[cls == names.index("global")]).tolist(), strict=True))
    wired = sorted((int(i) * a + int(o), int(t) * a + int(o2)) for i, o, t, o2 in zip(
        w.src_group, w.src_owner, w.dst_group, w.dst_owner, strict=True))
    if ours != wired:
        raise AssertionError("SST mapping bug: dragonfly global wiring differs from the network")
    for i, q, t, q2 in zip(w.src_group.tolist(), w.src_port.tolist(), w.dst_group.tolist(),
                           w.dst_port.tolist(), strict=True):
        (ro, ko), (rt, kt) = _slot(ends, q), _slot(ends, q2)
        cables.append(("global", i * a + ro, gstart + ko, t * a + rt, gstart + kt))
    _check_global_map(glm, cables, a, h, g, m, gstart, mode)
    hosts = _hosts_router_major(net, lambda r: 0)
    algorithm = {"minimal": "minimal", "valiant": "valiant", "ugal": "ugal"}.get(routing)
    if algorithm is None:
        raise Refusal("routing.algorithm", f"routing {routing!r} has no merlin dragonfly "
                      "counterpart (merlin offers minimal, valiant, ugal, adaptive-local, min-a)",
                      document="experiment")
    vcs = 2 if algorithm == "minimal" or (algorithm == "valiant" and g <= 2) else 3
    topo = {"hosts_per_router": p, "routers_per_group": a, "intergroup_per_router": h,
            "intergroup_links": m, "intragroup_links": 1, "num_groups": g,
            "algorithm": algorithm, "global_route_mode": mode}
    notes = [f"global links: our {params.arrangement!r} arrangement as merlin "
             f"global_route_mode {mode!r} with an explicit global_link_map",
             "merlin takes the global link (source endpoint mod links per pair) and its owner; "
             "ours balances owners per target group (both local-global-local)"]
    if algorithm == "valiant" and g <= 2:
        notes.append("merlin's dragonfly runs valiant as minimal with 2 groups or fewer "
                     "(there is no third group to go through); ours is minimal there too")
    elif algorithm == "valiant":
        notes.append("merlin's valiant also sends intra-group traffic through a random router "
                     "of the group")
    elif algorithm == "ugal":
        notes.append("merlin's ugal may detour intra-group traffic through a random router of "
                     "the group, compares per-VC output queues in flits and decides again in "
                     "the source group; ours decides once at the source router")
    return SstNetwork("merlin.dragonfly", topo, [p + a - 1 + h] * net.n_routers, cables, hosts,
                      vcs, port_groups=True, router_params={0: {"global_link_map": glm}},
                      notes=notes)


def _slot(ends: np.ndarray, q: int) -> tuple[int, int]:
    """(owner, global port index on the owner) of used-port number ``q``; ``ends`` is the
    running total of used global ports per owner (owners with none are skipped)."""
    owner = int(np.searchsorted(ends, q, side="right"))
    start = int(ends[owner - 1]) if owner else 0
    return owner, q - start


def _check_global_map(glm: list[int], cables: list[tuple[str, int, int, int, int]], a: int,
                      h: int, g: int, m: int, gstart: int, mode: str) -> None:
    """merlin's reading of ``glm`` (rank, slice) -> port, in every group, lands on a cable to
    the group it means; every (rank, slice) is listed once."""
    reach: dict[tuple[int, int], int] = {}
    for _, ra, pa, rb, pb in cables:
        if pa >= gstart:
            reach[(ra, pa)] = rb // a
            reach[(rb, pb)] = ra // a
    seen = sorted(v for v in glm if v >= 0)
    if seen != list(range(m * (g - 1))):
        raise AssertionError("SST mapping bug: global_link_map does not list every "
                             "(group, slice) once")
    for i in range(g):
        for idx, v in enumerate(glm):
            if v < 0:
                continue
            rank = v % (g - 1)
            t = (rank + (rank >= i)) if mode == "absolute" else (i + rank + 1) % g
            if reach.get((i * a + idx // h, gstart + idx % h)) != t:
                raise AssertionError(f"SST mapping bug: group {i} global port {idx} does not "
                                     f"reach group {t}")


# --------------------------------------------------------------------------- torus / mesh


def map_torus(kind: str, params: Any, net: Network, routing: str) -> SstNetwork:
    """``merlin.torus``: ``shape`` ``AxBxC``, ``width`` parallel links per direction,
    ``local_ports`` nodes per router (meshes are refused: see the refusal below).

    merlin gives dimension ``d`` a block of ``width`` ``+`` ports then ``width`` ``-`` ports,
    and the hosts the last ports; router coordinates vary fastest in dimension 0, as ours.
    In a ring of length 2 both neighbours are the same router and merlin always takes the
    ``+`` ports (distance 1 both ways, ties go ``+``), so our single set of cables there joins
    the two routers' ``+`` ports and their ``-`` ports stay unconnected.  A hypercube is the
    torus ``2x2x...x2``.
    """
    if kind == "hypercube":
        dims, lanes, mesh = [2] * params.n, [params.parallel] * params.n, False
        npr = params.nodes_per_router
    else:
        dims, lanes, mesh = list(params.dims), params.lanes, params.mesh
        npr = params.nodes_per_router
    if mesh:
        raise Refusal("topology.mesh", "merlin.mesh (sst-elements 16.0) declares one VC per "
                      "virtual network but, with the dateline code it keeps from the torus, "
                      "moves a packet that turns into a dimension at coordinate 0 to VC 1, "
                      "which does not exist (mesh.h getVCsPerVN, mesh.cc route_packet); a mesh "
                      "is not generated until that is fixed or checked on a real merlin")
    if routing != "minimal":
        raise Refusal("routing.algorithm", "merlin's torus routes "
                      f"dimension-order only; routing {routing!r} has no counterpart there",
                      document="experiment")
    coord = net.coords["coord"].astype(np.int64)
    start = np.concatenate([[0], np.cumsum([2 * w for w in lanes])]).astype(np.int64)
    local_start = int(start[-1])
    used: dict[tuple[int, int, int], int] = {}
    cables: list[tuple[str, int, int, int, int]] = []
    src, dst, cls = _router_cables(net)
    for u, v, c in zip(src.tolist(), dst.tolist(), cls.tolist(), strict=True):
        d = int(np.nonzero(coord[u] != coord[v])[0][0])
        k = dims[d]
        plus_u = k == 2 or (coord[v, d] == (coord[u, d] + 1) % k)
        a_dir, b_dir = (0, 0) if k == 2 else ((0, 1) if plus_u else (1, 0))
        pa = _lane_port(used, u, d, a_dir, int(start[d]), lanes[d])
        pb = _lane_port(used, v, d, b_dir, int(start[d]), lanes[d])
        cables.append((net.link_classes[c], u, pa, v, pb))
    hosts = _hosts_router_major(net, lambda r: local_start)
    shape = "x".join(str(k) for k in dims)
    topo = {"shape": shape, "width": "x".join(str(w) for w in lanes), "local_ports": npr}
    if prod(dims) != net.n_routers:
        raise AssertionError("SST mapping bug: torus router count")
    notes = ["merlin breaks half-way ties towards + and picks the lane as distance mod width; "
             "ours alternates ties and picks the lane from the destination (same path lengths)"]
    return SstNetwork("merlin.torus", topo,
                      [local_start + npr] * net.n_routers, cables, hosts, 2, notes=notes)


def _lane_port(used: dict[tuple[int, int, int], int], r: int, d: int, direction: int,
               start: int, width: int) -> int:
    """Next free lane of router ``r``'s ports in dimension ``d``, ``direction`` 0 (+) / 1 (-)."""
    key = (r, d, direction)
    lane = used.get(key, 0)
    if lane >= width:
        raise AssertionError(f"SST mapping bug: router {r} has more than {width} cables in "
                             f"dimension {d}")
    used[key] = lane + 1
    return start + direction * width + lane


# --------------------------------------------------------------------------- fat tree


def fattree_shape(params: Any) -> tuple[list[int], list[int]]:
    """merlin's ``downs`` and ``ups`` per level for our fat tree, or a :class:`Refusal`.

    merlin's ``shape`` ``d0,u0:d1,u1:...:dL`` joins a switch to each of its children by one
    cable, and its routers per level are ``R[l] = R[l-1] * u[l-1] / d[l]``.  A k-ary n-tree is
    ``k,up:...:k,up:k``; the three-level form fits only when every root reaches each level-2
    switch of a pod by one cable (``spine_up`` roots per plane), and the two-level form always.
    """
    if params.form == "k_ary_n_tree":
        k, n = int(params.k), int(params.n)
        up = params.up if params.up is not None else k
        return [k] * n, [up] * (n - 1)
    npl, leaves = int(params.nodes_per_leaf), int(params.leaves)
    lu, pl, su = params.three_level
    if su == 0:
        return [npl, pl], [lu]
    pods = leaves // pl
    rpp = -(-su * pods // int(params.switch_radix))
    if rpp != su:
        raise Refusal("topology", f"each root switch reaches a level-2 switch by "
                      f"{su // rpp if su % rpp == 0 else f'{su}/{rpp}'} parallel cables "
                      f"(spine_up {su} over {rpp} roots per plane); merlin's fattree joins a "
                      "switch to each child by exactly one cable, so it cannot express this "
                      "tree (it would need spine_up x level-2 switches one-cable roots, "
                      "another machine)")
    return [npl, pl, pods], [lu, su]


def map_fattree(params: Any, net: Network, routing: str) -> SstNetwork:
    """``merlin.fattree``: per level, down ports first (child subtree ``j`` on port ``j``, host
    ``j`` at a leaf), then up ports.  Router ids level by level from the leaves, as ours;
    within a level merlin's ``id = group * R_grp + position``, where the routers of one group
    share their children and ``R_grp = u[0] * ... * u[l-1]``; up port ``j`` of a router at
    position ``c`` leads to the parent at position ``c + j * R_grp``.  Ours are placed into
    that numbering level by level (a switch's parents in our id order are its up ports
    ``0, 1, ...``) and every cable is then checked against merlin's rule.
    """
    if routing != "minimal":
        raise Refusal("routing.algorithm", f"merlin's fattree routes up/down (deterministic or "
                      f"adaptive up-ports); routing {routing!r} has no counterpart there",
                      document="experiment")
    downs, ups = fattree_shape(params)
    levels = len(downs)
    per_level = [net.n_nodes // downs[0]]
    for lvl in range(1, levels):
        per_level.append(per_level[-1] * ups[lvl - 1] // downs[lvl])
    level = net.coords["level"].astype(np.int64) - 1
    if [int((level == lvl).sum()) for lvl in range(levels)] != per_level:
        raise Refusal("topology", f"switches per level {per_level} (merlin) differ from ours")
    first = np.concatenate([[0], np.cumsum(per_level)]).astype(np.int64)
    grp = [prod(ups[:lvl]) for lvl in range(levels)]  # routers per group at each level
    src, dst, cls = _router_cables(net)
    up = level[src] < level[dst]
    lo, hi = np.where(up, src, dst), np.where(up, dst, src)
    parents: dict[int, list[int]] = {}
    for c, q in sorted(zip(lo.tolist(), hi.tolist(), strict=True)):
        parents.setdefault(c, []).append(q)
    ours_to_merlin = {r: r for r in range(per_level[0])}  # leaves: same order (leaf-major nodes)
    up_port: dict[tuple[int, int], list[int]] = {}
    for lvl in range(levels - 1):
        for r in range(int(first[lvl]), int(first[lvl + 1])):
            mr = ours_to_merlin[r] - int(first[lvl])
            group, pos = divmod(mr, grp[lvl])
            for j, q in enumerate(parents.get(r, [])):
                pgroup = group // downs[lvl + 1]
                mq = int(first[lvl + 1]) + pgroup * grp[lvl + 1] + pos + j * grp[lvl]
                if ours_to_merlin.setdefault(q, mq) != mq:
                    raise Refusal("topology", "this fat tree's wiring is not merlin's "
                                  "(a switch's parents do not follow merlin's numbering)")
                up_port.setdefault((r, q), []).append(downs[lvl] + j)
    names = net.link_classes
    cables = []
    for c, q, k in zip(lo.tolist(), hi.tolist(), cls.tolist(), strict=True):
        if len(up_port[(c, q)]) != 1:
            raise Refusal("topology", "two switches are joined by parallel cables; merlin's "
                          "fattree joins a switch to each child by one cable")
        mc, mq = ours_to_merlin[c], ours_to_merlin[q]
        lvl = int(level[c])
        group = (mc - int(first[lvl])) // grp[lvl]
        cables.append((names[k], mc, up_port[(c, q)][0], mq, group % downs[lvl + 1]))
    if sorted(ours_to_merlin.values()) != list(range(net.n_routers)):
        raise AssertionError("SST mapping bug: fat-tree router numbering is not a bijection")
    hosts = _hosts_router_major(net, lambda r: 0)
    num_ports = [downs[int(level[r])] + (ups[int(level[r])] if level[r] < levels - 1 else 0)
                 for r in sorted(ours_to_merlin, key=ours_to_merlin.__getitem__)]
    shape = ":".join([f"{d},{u}" for d, u in zip(downs, ups, strict=False)] + [str(downs[-1])])
    topo = {"shape": shape, "routing_alg": "deterministic"}
    notes = ["merlin climbs by destination mod up-ports (d-mod-k); ours rotates that choice by "
             "the source leaf (same path lengths)"]
    return SstNetwork("merlin.fattree", topo, num_ports, cables, hosts, 1, notes=notes)
