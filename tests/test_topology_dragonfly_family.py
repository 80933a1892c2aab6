"""The dragonfly family: dragonfly arrangements, Aries (Cray XC) and megafly (dragonfly+).

Closed-form counts, valid global arrangements, minimal-table walks (hop bounds, VCs below what
the tables declare, also under Valiant), the shipped machine files against the papers' numbers,
and short native-engine runs.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
import yaml
from pydantic import ValidationError

from federation.errors import ConfigError
from federation.network.routes import hop_distances
from federation.pipeline.load import load_experiment, load_machine
from federation.pipeline.run import run_experiment
from federation.plugins.routings.valiant import Valiant
from federation.plugins.topologies.aries import Aries, AriesParams
from federation.plugins.topologies.dragonfly import Dragonfly, DragonflyParams, global_wiring
from federation.plugins.topologies.megafly import Megafly, MegaflyParams

REPO = Path(__file__).resolve().parent.parent
MACHINES = REPO / "schemas" / "machines"


def build(cls, **params):
    topo = cls(cls.Params(**params))
    net = topo.build()
    net.validate()
    return topo, net


def class_counts(net) -> dict[str, int]:
    return {c: int((net.link_class == i).sum()) for i, c in enumerate(net.link_classes)
            if c != "terminal"}


def walk(net, tables, src, dst, via, max_steps=30):
    """Follow the tables like the engine; returns (router hops, max VC used) per route."""
    pt = net.ports
    cur = np.asarray(src, dtype=np.int64).copy()
    dst = np.asarray(dst, dtype=np.int64)
    via = np.asarray(via, dtype=np.int64)
    phase = (via < 0).astype(np.int64)
    level = np.zeros_like(cur)
    hops = np.zeros_like(cur)
    maxvc = np.zeros_like(cur)
    grp, loc = tables.router_group, tables.router_local
    classes = [[] for _ in range(cur.size)] if cur.size <= 5000 else None
    for _ in range(max_steps):
        act = cur != dst
        if not act.any():
            break
        c = cur[act]
        ph = phase[act]
        ph = np.where((ph == 0) & (grp[c] == via[act]), 1, ph)
        phase[act] = ph
        d = dst[act]
        o = np.where(ph == 0, tables.gnext[c, np.maximum(via[act], 0)],
                     np.where(grp[c] != grp[d], tables.gnext[c, grp[d]], tables.lnext[c, loc[d]]))
        assert (o >= 0).all(), "a table entry on the path is undefined"
        maxvc[act] = np.maximum(maxvc[act], level[act])
        level[act] += tables.port_vc_bump[o]
        hops[act] += 1
        if classes is not None:
            for k, port in zip(np.nonzero(act)[0].tolist(), o.tolist(), strict=True):
                classes[k].append(net.link_classes[pt.port_class[port]])
        cur[act] = pt.port_router[pt.port_peer[o]]
    assert (cur == dst).all(), "some routes do not reach their destination"
    return hops, maxvc, classes


def all_pairs(net):
    r = np.arange(net.n_routers)
    has_nodes = np.bincount(net.node_router, minlength=net.n_routers) > 0
    s, d = np.meshgrid(r, r[has_nodes], indexing="ij")
    return s.ravel(), d.ravel()


def check_tables(topo, net, max_hops):
    """Minimal and Valiant walks over every (source router, destination router[, group])."""
    t = topo.minimal_routes(net)
    s, d = all_pairs(net)
    hops, vc, _ = walk(net, t, s, d, np.full(s.size, -1))
    assert hops.max() <= max_hops
    assert vc.max() < t.vcs_required
    v = Valiant(Valiant.Params()).tables(net, topo, None)
    G = net.n_groups
    gs, gd = net.router_group[s], net.router_group[d]
    ss, dd, vv = [], [], []
    for via in range(G):
        k = (gs != via) & (gd != via) & (gs != gd)
        ss.append(s[k])
        dd.append(d[k])
        vv.append(np.full(int(k.sum()), via))
    hv, vcv, _ = walk(net, v, np.concatenate(ss), np.concatenate(dd), np.concatenate(vv))
    assert vcv.max() < v.vcs_required
    assert hv.max() <= 2 * max_hops
    return t, v, hops


# --------------------------------------------------------------------------- dragonfly

DF_CASES = [
    dict(p=2, a=4, h=2),  # balanced, g = 9
    dict(p=1, a=4, h=2, g=5),  # 2 links per pair
    dict(p=2, a=6, h=2, g=4, arrangement="relative"),  # 4 links per pair
    dict(p=1, a=4, h=3, g=7, arrangement="circulant"),  # 2 links per pair
    dict(p=1, a=4, h=2, g=6, arrangement="circulant"),  # 1 link per pair + 3 spare ports
    dict(p=1, a=5, h=2, g=4, arrangement="relative"),  # 3 links per pair + 1 spare port
    dict(p=3, a=2, h=1, g=3),
]


@pytest.mark.parametrize("arrangement", ["absolute", "relative", "circulant"])
@pytest.mark.parametrize("case", DF_CASES, ids=lambda c: "-".join(f"{k}{v}" for k, v in c.items()))
def test_dragonfly_closed_forms(case, arrangement):
    case = {**case, "arrangement": arrangement}
    _, net = build(Dragonfly, **case)
    p, a, h = case["p"], case["a"], case["h"]
    g = case.get("g", a * h + 1)
    m = a * h // (g - 1)
    assert net.n_groups == g
    assert net.n_routers == a * g
    assert net.n_nodes == a * p * g
    assert (net.radix == a + p + h - 1).all()
    assert class_counts(net) == {"local": g * a * (a - 1) // 2, "global": g * (g - 1) * m // 2}
    assert net.info["links_per_pair"] == m
    assert net.info["spare_global_ports_per_group"] == a * h - m * (g - 1)
    assert (net.router_degree() <= net.radix).all()
    # each pair of groups joined exactly m times, never a group to itself
    gl = net.link_class == net.class_index("global")
    ga, gb = net.router_group[net.link_src[gl]], net.router_group[net.link_dst[gl]]
    assert (ga != gb).all()
    pair = np.zeros((g, g), dtype=int)
    np.add.at(pair, (ga, gb), 1)
    pair = pair + pair.T
    assert (pair[~np.eye(g, dtype=bool)] == m).all()
    # no router exceeds h global ports
    glob_deg = np.bincount(net.link_src[gl], minlength=net.n_routers) + np.bincount(
        net.link_dst[gl], minlength=net.n_routers)
    assert glob_deg.max() <= h


@pytest.mark.parametrize("arrangement", ["absolute", "relative", "circulant"])
@pytest.mark.parametrize("a,h,g,m", [(4, 2, 9, None), (4, 2, 5, None), (4, 3, 7, None),
                                     (16, 4, 64, None), (18, 7, 5, None), (4, 2, 5, 1)])
def test_arrangement_is_a_valid_port_matching(arrangement, a, h, g, m):
    w = global_wiring(a, h, g, arrangement, m)
    m = w.links_per_pair
    ends = np.concatenate([w.src_group * a * h + w.src_port, w.dst_group * a * h + w.dst_port])
    assert np.unique(ends).size == ends.size  # every global port used at most once
    assert ends.size == g * m * (g - 1)
    assert w.spare_per_group == a * h - m * (g - 1)
    assert (w.src_group != w.dst_group).all()
    pairs = np.minimum(w.src_group, w.dst_group) * g + np.maximum(w.src_group, w.dst_group)
    assert (np.bincount(pairs, minlength=g * g).reshape(g, g)[np.triu_indices(g, 1)] == m).all()
    # owners hold consecutive used ports and never more than h
    assert w.used_per_owner.max() <= h and w.used_per_owner.sum() == m * (g - 1)
    if arrangement == "relative":  # port q of group i goes to group (i + q mod (g-1) + 1) mod g
        assert ((w.src_group + w.src_port % (g - 1) + 1) % g == w.dst_group).all()
    if arrangement == "circulant":
        assert ((w.src_group - w.src_port % (g - 1) - 1) % g == w.dst_group).all()
        assert (w.src_port + w.dst_port == m * (g - 1) - 1).all()


def test_palm_tree_mirrors_routers():
    """Balanced circulant: router r of one group meets router a-1-r of the other (palm tree)."""
    a, h = 4, 2
    _, net = build(Dragonfly, p=1, a=a, h=h, arrangement="circulant")
    gl = net.link_class == net.class_index("global")
    ra, rb = net.link_src[gl] % a, net.link_dst[gl] % a
    assert (ra + rb == a - 1).all()


def test_dragonfly_absolute_wiring_is_consecutive():
    """Absolute (CODES): group 0's port k (router k // h) goes to group k + 1."""
    a, h = 4, 2
    _, net = build(Dragonfly, p=1, a=a, h=h)
    gl = np.nonzero(net.link_class == net.class_index("global"))[0]
    from0 = gl[net.router_group[net.link_src[gl]] == 0]
    assert net.link_src[from0].tolist() == [k // h for k in range(a * h)]
    assert net.router_group[net.link_dst[from0]].tolist() == list(range(1, a * h + 1))


def test_unbalanced_64x16x4_dragonfly():
    """64 groups of 16 routers, 4 global ports each: one link per pair and one spare port."""
    topo, net = build(Dragonfly, p=1, a=16, h=4, g=64)
    assert (net.n_routers, net.n_nodes) == (1024, 1024)
    assert class_counts(net) == {"local": 64 * 120, "global": 64 * 63 // 2}
    assert net.info["spare_global_ports_per_group"] == 1
    rr = net.router_degree() - 1  # router-router degree
    local_idx = np.arange(1024) % 16
    assert (rr[local_idx != 15] == 19).all() and (rr[local_idx == 15] == 18).all()
    assert hop_distances(net).max() == 3
    t = topo.minimal_routes(net)
    rng = np.random.default_rng(0)
    s, d = rng.integers(0, 1024, 20000), rng.integers(0, 1024, 20000)
    hops, vc, _ = walk(net, t, s, d, np.full(s.size, -1))
    assert hops.max() <= 3 and vc.max() < t.vcs_required == 2


@pytest.mark.parametrize("params,words", [
    (dict(p=1, a=4, h=2, g=10), ["g-1 = 9", "a*h = 4*2 = 8", "p=1, a=4, h=2, g=10"]),
    (dict(p=1, a=4, h=2, g=5, links_per_pair=3), ["links_per_pair=3", "a*h = 4*2 = 8"]),
    (dict(p=1, a=4, h=2, arrangement="twisted"), ["arrangement", "circulant"]),
])
def test_impossible_dragonfly_is_a_clear_error(params, words):
    with pytest.raises(ValidationError) as exc:
        DragonflyParams(**params)
    text = str(exc.value)
    for w in words:
        assert w in text


def test_impossible_arrangement_in_a_machine_file(write):
    path = write("m.yaml", "topology: {kind: dragonfly, p: 1, a: 3, h: 2, g: 8}\n")
    with pytest.raises(ConfigError, match=r"topology.*g-1 = 7.*a\*h = 3\*2 = 6"):
        load_machine(path)


@pytest.mark.parametrize("case", DF_CASES + [dict(p=1, a=4, h=2, arrangement="circulant")],
                         ids=lambda c: "-".join(f"{k}{v}" for k, v in c.items()))
def test_dragonfly_tables_walk(case):
    topo, net = build(Dragonfly, **case)
    t, v, _ = check_tables(topo, net, max_hops=3)
    assert (t.vcs_required, v.vcs_required) == (2, 3)
    if net.info["links_per_pair"] == 1:
        assert hop_distances(net).max() == 3


def test_dragonfly_spreads_parallel_links():
    """With several links per pair, the routers of a group do not all use the same one."""
    topo, net = build(Dragonfly, p=1, a=4, h=2, g=3)  # 4 links per pair
    t = topo.minimal_routes(net)
    pt = net.ports
    used = set()
    for r in range(4):  # group 0 towards group 1: follow to the global port
        x = r
        while net.router_group[pt.port_router[pt.port_peer[t.gnext[x, 1]]]] == 0:
            x = int(pt.port_router[pt.port_peer[t.gnext[x, 1]]])
        used.add(int(t.gnext[x, 1]))
    assert len(used) == 4


# --------------------------------------------------------------------------- aries


def test_aries_default_group_counts_and_tiles():
    topo, net = build(Aries, groups=3, tiles_per_global_link=2)
    assert net.n_routers == 3 * 96 and net.n_nodes == 3 * 384
    assert np.bincount(net.router_group).tolist() == [96] * 3
    assert np.bincount(net.node_group).tolist() == [384] * 3
    # 6 chassis x C(16, 2) intra-chassis, 16 slots x C(6, 2) inter-chassis, 96*5 ports / 2 groups
    assert class_counts(net) == {"intra_chassis": 3 * 720, "inter_chassis": 3 * 240,
                                 "global": 3 * 480 // 2}
    assert net.info["tiles_per_router"] == 15 + 15 + 10 + 8 == 48
    assert (net.radix == 48).all()
    assert (net.router_degree() == 4 + 15 + 5 + 5).all()
    c = net.coords
    assert c["chassis"].max() == 5 and c["blade"].max() == 15 and c["node"].max() == 3
    assert (c["node_group"] == net.node_group).all()
    r = np.arange(net.n_routers)
    assert (r == (c["group"] * 6 + c["chassis"]) * 16 + c["blade"]).all()
    # bundles are one cable of summed bandwidth
    d = topo.link_defaults
    assert d["inter_chassis"].bandwidth == pytest.approx(3 * 5.25e9)
    assert d["global"].bandwidth == pytest.approx(2 * 4.7e9)
    assert d["terminal"].bandwidth == pytest.approx(2 * 5.25e9)


def test_aries_links_are_dimension_structured():
    _, net = build(Aries, groups=2, chassis=3, blades=4, nodes_per_router=1, global_tiles=2)
    c = net.coords
    for cls, same_chassis in (("intra_chassis", True), ("inter_chassis", False)):
        k = net.link_class == net.class_index(cls)
        s, d = net.link_src[k], net.link_dst[k]
        assert (c["group"][s] == c["group"][d]).all()
        assert ((c["chassis"][s] == c["chassis"][d]) == same_chassis).all()
        assert ((c["blade"][s] == c["blade"][d]) != same_chassis).all()


@pytest.mark.parametrize("params", [
    dict(groups=3, chassis=3, blades=4, nodes_per_router=1, global_tiles=2),
    dict(groups=4, chassis=2, blades=3, nodes_per_router=2, global_tiles=4,
         tiles_per_global_link=2, arrangement="circulant"),
    dict(groups=5, chassis=2, blades=2, nodes_per_router=1, global_tiles=1,
         arrangement="relative"),
    dict(groups=3, tiles_per_global_link=5),  # full-size groups, 288 routers
])
def test_aries_tables_walk(params):
    topo, net = build(Aries, **params)
    t, v, hops = check_tables(topo, net, max_hops=5)
    assert (t.vcs_required, v.vcs_required) == (2, 3)
    # dimension order inside each group: no intra-chassis hop after an inter-chassis hop
    s, d = all_pairs(net)
    k = np.random.default_rng(1).choice(s.size, size=min(s.size, 3000), replace=False)
    _, _, classes = walk(net, t, s[k], d[k], np.full(k.size, -1))
    for path in classes:
        for seg in " ".join(path).split("global"):
            words = seg.split()
            if "inter_chassis" in words:
                assert "intra_chassis" not in words[words.index("inter_chassis"):]
            assert len(words) <= 2


@pytest.mark.parametrize("params,words", [
    (dict(groups=2, global_tiles=11), ["49 tiles", "router_tiles = 48"]),
    (dict(groups=2, global_tiles=10, tiles_per_global_link=3), ["global_tiles=10",
                                                               "tiles_per_global_link=3"]),
    (dict(groups=20, chassis=1, blades=2, global_tiles=2), ["g-1 = 19", "1*2*2"]),
])
def test_impossible_aries_is_a_clear_error(params, words):
    with pytest.raises(ValidationError) as exc:
        AriesParams(**params)
    for w in words:
        assert w in str(exc.value)


# --------------------------------------------------------------------------- megafly


@pytest.mark.parametrize("params", [
    dict(groups=5, leaves=3, spines=2, nodes_per_leaf=2, global_links_per_spine=2),
    dict(groups=3, leaves=4, spines=4, nodes_per_leaf=1, global_links_per_spine=2,
         arrangement="circulant"),
    dict(leaves=2, spines=3, nodes_per_leaf=1, global_links_per_spine=1,
         arrangement="relative"),
    dict(groups=4, leaves=2, spines=3, nodes_per_leaf=1, global_links_per_spine=2),  # spare
])
def test_megafly_counts_and_tables(params):
    topo, net = build(Megafly, **params)
    pr = topo.params
    G, L, S, n, hs = (pr.n_groups, pr.leaves, pr.spines, pr.nodes_per_leaf,
                      pr.global_links_per_spine)
    m = S * hs // (G - 1)
    assert net.n_routers == G * (L + S)
    assert net.n_nodes == G * L * n
    assert class_counts(net) == {"local": G * L * S, "global": G * (G - 1) * m // 2}
    assert (net.radix == max(n + S, L + hs)).all()
    leaf = net.coords["level"] == 0
    assert set(np.unique(net.node_router).tolist()) == set(np.nonzero(leaf)[0].tolist())
    gl = net.link_class == net.class_index("global")
    assert (~leaf[net.link_src[gl]]).all() and (~leaf[net.link_dst[gl]]).all()
    t, v, _ = check_tables(topo, net, max_hops=4)
    assert (t.vcs_required, v.vcs_required) == (2, 3)


def test_megafly_paper_instance_spreads_over_spines():
    topo, net = build(Megafly, groups=33, leaves=16, spines=16, nodes_per_leaf=16,
                      global_links_per_spine=16)
    assert net.info["links_per_pair"] == 8
    gl = net.link_class == net.class_index("global")
    src = net.link_src[gl]
    g0 = net.router_group[src] == 0
    to1 = g0 & (net.router_group[net.link_dst[gl]] == 1)
    assert np.unique(src[to1]).size == 8  # the 8 links of a pair leave from 8 spines
    t = topo.minimal_routes(net)
    s, d = all_pairs(net)
    k = np.random.default_rng(2).choice(s.size, 50000, replace=False)
    hops, vc, _ = walk(net, t, s[k], d[k], np.full(k.size, -1))
    assert hops.max() <= 4 and vc.max() < 2


def test_impossible_megafly_is_a_clear_error():
    with pytest.raises(ValidationError, match=r"34 groups.*spines\*global_links_per_spine"):
        MegaflyParams(groups=34, leaves=2, spines=2, nodes_per_leaf=1, global_links_per_spine=16)
    with pytest.raises(ValidationError, match=r"radix=8 is too small"):
        MegaflyParams(leaves=4, spines=4, nodes_per_leaf=8, global_links_per_spine=1, radix=8)


# --------------------------------------------------------------------------- machine files

# (file, groups, routers, nodes, links per class, max radix)
PAPER_MACHINES = [
    # codes-torus-dragonfly.md §1.2: a=8, p=4, h=4 -> 33 groups, 264 routers, 1,056 nodes,
    # radix 15, one global link per pair
    ("codes-dragonfly", 33, 264, 1056, {"local": 33 * 28, "global": 33 * 32 // 2}, 15),
    # megafly-qos.md §1 Table I: 65 groups, 8,320 nodes, 128 global connections per group
    # (2 per pair), 16 routers per group (1,040), radix 32 of which a+p+h-1 = 31 used
    ("megafly-qos-dragonfly", 65, 1040, 8320, {"local": 65 * 120, "global": 65 * 128 // 2}, 31),
    # megafly-qos.md §1 Table I: 33 groups, 8,448 nodes, 256 global connections per group,
    # 16 leaves + 16 spines per group (1,056 routers), radix 32
    ("megafly-qos-megafly", 33, 1056, 8448, {"local": 33 * 256, "global": 33 * 256 // 2}, 32),
    # aries-routing-noise.md §1: 96 routers and 384 nodes per group, 48 tiles; 6 groups hold
    # Piz Daint's 257-router allocation across 6 groups
    ("aries-xc", 6, 576, 2304,
     {"intra_chassis": 6 * 720, "inter_chassis": 6 * 240, "global": 6 * 480 // 2}, 48),
    # circulant-shortcut-collectives.md §1.3: 1,024 switches in 64 groups of 16, 1 node each,
    # 4 global links per switch; 2,016 group pairs each joined once
    ("thesis-dragonfly-64x16", 64, 1024, 1024, {"local": 64 * 120, "global": 2016}, 20),
    # many-node-simulation.md §2: 90 switches (5 groups of 18), 24 nodes per switch,
    # 17 intra-group + 7 inter-group links (48 ports); 31 links per group pair
    ("manynode-dragonfly-5x18", 5, 90, 2160, {"local": 5 * 153, "global": 10 * 31}, 48),
]


@pytest.mark.parametrize("name,groups,routers,nodes,links,radix", PAPER_MACHINES,
                         ids=[m[0] for m in PAPER_MACHINES])
def test_machine_file_matches_paper(name, groups, routers, nodes, links, radix):
    m = load_machine(MACHINES / f"{name}.yaml")
    assert m.machine.name == name
    assert len(m.machine.description) > 200
    net = m.topology.build()
    net.validate()
    assert (net.n_groups, net.n_routers, net.n_nodes) == (groups, routers, nodes)
    assert class_counts(net) == links
    assert int(net.radix.max()) == radix
    if name == "aries-xc":
        assert net.info["tiles_per_router"] == 48
        assert (net.router_degree() <= 48).all()
    else:
        assert (net.router_degree() <= net.radix).all()


def test_paper_machines_route_minimally():
    for name in ("megafly-qos-dragonfly", "megafly-qos-megafly", "aries-xc"):
        m = load_machine(MACHINES / f"{name}.yaml")
        net = m.topology.build()
        t = m.topology.minimal_routes(net)
        s, d = all_pairs(net)
        k = np.random.default_rng(3).choice(s.size, 30000, replace=False)
        hops, vc, _ = walk(net, t, s[k], d[k], np.full(k.size, -1))
        assert hops.max() <= {"megafly-qos-megafly": 4, "aries-xc": 5}.get(name, 3)
        assert vc.max() < t.vcs_required == 2


# --------------------------------------------------------------------------- engine runs

SMALL = {
    "dragonfly-circulant": {"kind": "dragonfly", "p": 1, "a": 4, "h": 2, "g": 5,
                            "arrangement": "circulant"},
    "dragonfly-unbalanced": {"kind": "dragonfly", "p": 2, "a": 4, "h": 2, "g": 6,
                             "arrangement": "relative"},
    "aries": {"kind": "aries", "groups": 3, "chassis": 2, "blades": 3, "nodes_per_router": 2,
              "global_tiles": 2},
    "megafly": {"kind": "megafly", "groups": 5, "leaves": 2, "spines": 2, "nodes_per_leaf": 2,
                "global_links_per_spine": 2},
}


@pytest.mark.parametrize("routing", ["minimal", "valiant"])
@pytest.mark.parametrize("name", list(SMALL))
def test_native_engine_delivers_everything(tmp_path, name, routing):
    doc = {
        "machine": {"topology": SMALL[name], "router": {"vcs": 3}},
        "routing": {"algorithm": routing},
        "workload": {"kind": "synthetic", "pattern": "uniform", "load": 0.2},
        "stop": {"warmup": "0.5us", "measure": "2us"},
        "outputs": {"packets": False, "ports": False, "messages": False},
    }
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(doc))
    r = run_experiment(load_experiment(path))
    s = r.points[0].summary
    assert s.packets_generated > 0
    assert s.packets_delivered == s.packets_generated


def test_every_arrangement_builds_connected_networks():
    for arr, (a, h) in itertools.product(["absolute", "relative", "circulant"], [(2, 1), (3, 2)]):
        _, net = build(Dragonfly, p=1, a=a, h=h, arrangement=arr)
        assert hop_distances(net).max() == 3
