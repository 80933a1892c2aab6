"""Flat topologies (circulant, random shortcut, torus, hypercube, fat tree, graph file):
closed-form counts, diameters and ASPL, table walks for every router pair, VC needs, the
machine files of the papers, and short native-engine runs that deliver every packet."""

from __future__ import annotations

from math import ceil
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
import yaml
from pydantic import ValidationError
from scipy.sparse import csgraph

from federation.errors import ConfigError
from federation.network import NetworkBuilder
from federation.network.route_kernels import _spread
from federation.network.routes import (
    cable_ports,
    graph_stats,
    hop_distances,
    shortest_path_routes,
)
from federation.plugin.components import VC_COUNTER
from federation.plugins.topologies.circulant import Circulant
from federation.plugins.topologies.fattree import FatTree
from federation.plugins.topologies.random_shortcut import RandomShortcut
from federation.plugins.topologies.torus import Hypercube, Torus

MACHINES = Path(__file__).resolve().parent.parent / "schemas" / "machines"


def make(cls, **params):
    topo = cls(cls.Params(**params))
    net = topo.build()
    net.validate()
    return topo, net


def degrees(net) -> np.ndarray:
    return (np.bincount(net.link_src, minlength=net.n_routers)
            + np.bincount(net.link_dst, minlength=net.n_routers))


def walk_all(net, t, dests=None) -> tuple[np.ndarray, int]:
    """Follow the tables from every router to every destination router, applying the VC rule
    exactly as the engine does; returns the hop matrix (R x len(dests)) and the largest VC."""
    pt = net.ports
    R = net.n_routers
    D = np.arange(R) if dests is None else np.asarray(dests)
    src = np.repeat(np.arange(R), D.size)
    dst = np.tile(D, R)
    cur = src.copy()
    hops = np.zeros(src.size, dtype=np.int64)
    lvl = np.zeros(src.size, dtype=np.int64)
    dim = np.full(src.size, -1, dtype=np.int64)
    grp, loc = t.router_group, t.router_local
    max_vc = 0
    for _ in range(R + 1):
        act = cur != dst
        if not act.any():
            break
        c, d = cur[act], dst[act]
        port = np.where(grp[c] != grp[d], t.gnext[c, grp[d]], t.lnext[c, loc[d]])
        assert (port >= 0).all(), "a table entry on a route is missing"
        if t.vc_mode == VC_COUNTER:
            vc = lvl[act]
            lvl[act] += t.port_vc_bump[port]
        else:
            pd = t.port_dim[port].astype(np.int64)
            level = np.where(pd != dim[act], 0, lvl[act])
            level = np.where(t.port_dateline[port] == 1, 1, level)
            lvl[act], dim[act], vc = level, pd, level
        max_vc = max(max_vc, int(vc.max()))
        hops[act] += 1
        cur[act] = pt.port_router[pt.port_peer[port]]
    else:
        raise AssertionError("a route loops")
    return hops.reshape(R, D.size), max_vc


def assert_minimal(topo, net) -> None:
    """Every route reaches its destination in exactly the BFS distance, VCs within budget."""
    t = topo.minimal_routes(net)
    hops, max_vc = walk_all(net, t)
    np.testing.assert_array_equal(hops, hop_distances(net))
    assert max_vc < t.vcs_required


# --------------------------------------------------------------------------- counts


@pytest.mark.parametrize("dims", [[4], [5, 5], [3, 4, 5], [8, 8, 8]])
def test_torus_counts(dims):
    _, net = make(Torus, dims=dims)
    n, R = len(dims), int(np.prod(dims))
    assert net.n_routers == R and net.n_nodes == R
    assert (degrees(net) == 2 * n).all()  # 2n cable ports per router
    assert net.n_links == n * R
    assert (net.radix == 2 * n + 1).all()


def test_torus_parallel_mesh_and_short_dimensions():
    _, net = make(Torus, dims=[5, 5, 4], parallel=4, nodes_per_router=24)
    assert (net.n_routers, net.n_nodes, net.n_links) == (100, 2400, 1200)
    assert (degrees(net) == 24).all() and (net.radix == 48).all()
    # length 2: one cable per pair, not two; length 1: no cable
    _, net = make(Torus, dims=[3, 2, 1])
    assert net.n_links == 6 + 3
    assert (degrees(net) == 3).all()
    _, net = make(Torus, dims=[2, 2], parallel=[1, 3])
    assert net.n_links == 2 + 2 * 3
    # mesh: k-1 cables per line
    _, net = make(Torus, dims=[4, 3], mesh=True)
    assert net.n_links == 3 * 3 + 4 * 2
    _, net = make(Torus, dims=[1])
    assert (net.n_routers, net.n_links) == (1, 0)


@pytest.mark.parametrize("n", [1, 2, 3, 5, 7])
def test_hypercube_counts(n):
    _, net = make(Hypercube, n=n)
    assert net.n_routers == 2**n
    assert net.n_links == n * 2 ** (n - 1)
    assert (degrees(net) == n).all()


@pytest.mark.parametrize(("k", "n"), [(2, 2), (2, 4), (3, 3), (4, 3), (4, 2)])
def test_kary_ntree_counts(k, n):
    _, net = make(FatTree, k=k, n=n)
    assert net.info["switches_per_level"] == [k ** (n - 1)] * n
    assert net.n_routers == n * k ** (n - 1)
    assert net.n_nodes == k**n
    assert net.n_links == (n - 1) * k**n
    level = net.coords["level"]
    deg = degrees(net) + np.bincount(net.node_router, minlength=net.n_routers)
    assert (deg[level < n] == 2 * k).all() and (deg[level == n] == k).all()


def test_tapered_trees():
    _, net = make(FatTree, k=4, n=3, up=2)  # XGFT(3; 4,4,4; 1,2,2)
    assert net.info["switches_per_level"] == [16, 8, 4]
    assert net.n_links == 16 * 2 + 8 * 2
    _, net = make(FatTree, switch_radix=8, nodes_per_leaf=5, leaves=8)  # 5 down, 3 up
    assert net.info["switches_per_level"] == [8, 6, 3]
    _, net = make(FatTree, switch_radix=8, nodes_per_leaf=4, leaves=4, spine_up=0)
    assert net.info["switches_per_level"] == [4, 4]  # two levels, one pod


def test_three_level_tree_of_the_many_node_paper():
    # many-node-simulation.md §2: 48-port switches, 24 nodes per leaf, 96 + 96 + 48 switches
    _, net = make(FatTree, switch_radix=48, nodes_per_leaf=24, leaves=96)
    assert net.info["switches_per_level"] == [96, 96, 48]
    assert net.n_nodes == 96 * 24
    assert net.n_links == 2 * 2304  # full bisection: 2,304 cables per level
    assert (degrees(net) + np.bincount(net.node_router, minlength=240) == 48).all()


@pytest.mark.parametrize(("n", "jumps", "deg"), [
    (16, [1, 2, 4, 8], 7), (20, [1, 3], 4), (20, [1, 3, 10], 5), (7, [1, 2, 3], 6), (2, [1], 1),
])
def test_circulant_degree(n, jumps, deg):
    _, net = make(Circulant, n=n, jumps=jumps)
    assert (degrees(net) == deg).all()
    assert net.n_links == n * deg // 2
    assert (net.radix == deg + 1).all()


@pytest.mark.parametrize("k", [1, 3, 6, 10])
def test_high_radix_preset(k):
    _, net = make(Circulant, preset={"k": k})
    assert net.n_routers == 2**k
    assert (degrees(net) == 2 * k - 1).all()


def test_random_shortcut_degrees_and_seed():
    _, a = make(RandomShortcut, n=256, degree=9, seed=3)
    d = degrees(a)
    assert d.max() - d.min() <= 1 and d.max() == 9
    assert a.info["short_vertices"] == [[int(r), int(9 - d[r])] for r in np.nonzero(d < 9)[0]]
    _, b = make(RandomShortcut, n=256, degree=9, seed=3)
    _, c = make(RandomShortcut, n=256, degree=9, seed=4)
    assert np.array_equal(a.link_src, b.link_src) and np.array_equal(a.link_dst, b.link_dst)
    assert not (np.array_equal(a.link_src, c.link_src) and np.array_equal(a.link_dst, c.link_dst))
    # ring links come first, then shortcuts; no duplicate links, no self-loops
    keys = np.minimum(a.link_src, a.link_dst) * 256 + np.maximum(a.link_src, a.link_dst)
    assert np.unique(keys).size == a.n_links
    # an odd number of stubs leaves one switch one link short, reported in info
    _, odd = make(RandomShortcut, n=101, degree=7, seed=5)
    short = odd.info["short_vertices"]
    assert len(short) == 1 and short[0][1] == 1
    assert sorted(np.unique(degrees(odd)).tolist()) == [6, 7]


def test_random_shortcut_8192_is_fast():
    import time

    t0 = time.perf_counter()
    _, net = make(RandomShortcut, n=8192, degree=25, seed=1)
    assert time.perf_counter() - t0 < 10
    d = degrees(net)
    assert d.max() - d.min() <= 1


# --------------------------------------------------------------------------- diameter, ASPL


@pytest.mark.parametrize("n", [2, 3, 4, 6])
def test_hypercube_diameter_aspl(n):
    _, net = make(Hypercube, n=n)
    s = graph_stats(net)
    assert s.diameter == n
    assert s.aspl == pytest.approx(n * 2 ** (n - 1) / (2**n - 1))


# circulant-shortcut-collectives.md §1.5: exact G(2^k, k) values (diameter = ceil(k/2))
G_ASPL = {3: 1.2857, 4: 1.5333, 5: 1.8387, 6: 2.1429, 7: 2.4646, 8: 2.7882, 9: 3.1174,
          10: 3.4477}


@pytest.mark.parametrize("k", sorted(G_ASPL))
def test_high_radix_circulant_diameter_aspl(k):
    topo, net = make(Circulant, preset={"k": k})
    s = graph_stats(net, sources=[0])  # vertex-transitive: one BFS root is exact
    assert s.diameter == ceil(k / 2)
    assert s.aspl == pytest.approx(G_ASPL[k], abs=1e-4)
    if k <= 6:
        assert graph_stats(net) == s


@pytest.mark.parametrize(("dims", "mesh"), [([4, 4], False), ([5, 3, 2], False), ([6], False),
                                            ([4, 4], True), ([5, 3, 2], True), ([3, 1, 4], False)])
def test_torus_and_mesh_diameter(dims, mesh):
    _, net = make(Torus, dims=dims, mesh=mesh)
    want = sum(k - 1 for k in dims) if mesh else sum(k // 2 for k in dims)
    assert graph_stats(net).diameter == want == net.info["diameter"]


def test_digest_mesh_torus_hypercube_aspl():
    # circulant-shortcut-collectives.md §1.4 (exact values)
    assert graph_stats(make(Torus, dims=[4, 4], mesh=True)[1]).aspl == pytest.approx(2.6667, 1e-4)
    assert graph_stats(make(Torus, dims=[4, 4])[1]).aspl == pytest.approx(2.1333, 1e-4)
    assert graph_stats(make(Hypercube, n=4)[1]).aspl == pytest.approx(2.1333, 1e-4)


# --------------------------------------------------------------------------- routing


def test_shortest_path_tables_match_a_reference():
    """Candidate ``spread((d - r) mod R, count)`` among the ports to neighbours one hop closer
    (scipy BFS), ordered by ``(peer - r) mod R`` then port, parallel cables included; every
    candidate of a router is used for some destination when it has several."""
    rng = np.random.default_rng(7)
    R = 30
    b = NetworkBuilder(["x", "y"])
    b.add_routers(R, radix=64)
    for r in range(R):
        b.attach_nodes(r, int(r % 3))
        b.add_link(r, (r + 1) % R, "x")
    for _ in range(25):
        a, c = rng.choice(R, 2, replace=False)
        b.add_link(int(a), int(c), "y", count=int(rng.integers(1, 3)))
    net = b.build()
    t = shortest_path_routes(net)
    dist = csgraph.shortest_path(sp.csr_matrix(net.adjacency), unweighted=True)
    pt = net.ports
    for r in range(R):
        for d in range(R):
            if r == d:
                assert t.gnext[r, d] == -1
                continue
            ports = [p for p in range(pt.router_port_start[r], pt.router_port_start[r + 1])
                     if pt.port_link[p] >= 0
                     and dist[pt.port_router[pt.port_peer[p]], d] == dist[r, d] - 1]
            ports.sort(key=lambda p: ((pt.port_router[pt.port_peer[p]] - r) % R, p))
            assert t.gnext[r, d] == ports[_spread((d - r) % R, len(ports))]
    # the spread uses more than the lowest port: most routers send through several neighbours
    used = [len({int(p) for p in t.gnext[r] if p >= 0}) for r in range(R)]
    assert np.mean(used) > 2
    assert t.vcs_required == int(dist.max())
    assert t.extra["aspl"] == pytest.approx(dist.sum() / (R * (R - 1)))


@pytest.mark.parametrize("params", [
    {"preset": {"k": 6}}, {"n": 20, "jumps": [1, 3, 10]}, {"n": 11, "jumps": [2, 5]},
])
def test_circulant_routes_are_minimal(params):
    assert_minimal(*make(Circulant, **params))


@pytest.mark.parametrize(("n", "d", "seed"), [(64, 6, 1), (101, 7, 5), (40, 3, 2)])
def test_random_shortcut_routes_are_minimal(n, d, seed):
    assert_minimal(*make(RandomShortcut, n=n, degree=d, seed=seed))


@pytest.mark.parametrize("n", [1, 3, 5])
def test_hypercube_routes_are_minimal_with_one_vc(n):
    topo, net = make(Hypercube, n=n, parallel=2)
    assert topo.minimal_routes(net).vcs_required == 1
    assert_minimal(topo, net)


@pytest.mark.parametrize(("dims", "mesh", "parallel", "vcs"), [
    ([6], False, 1, 2), ([4, 4], False, 1, 2), ([5, 4, 3], False, 2, 2), ([3, 1, 2], False, 1, 2),
    ([8, 4, 2], False, [1, 1, 2], 2), ([2, 2, 2], False, 3, 1), ([1], False, 1, 1),
    ([4, 3], True, 1, 1), ([5, 2, 3], True, 2, 1),
])
def test_torus_dimension_order_routes(dims, mesh, parallel, vcs):
    topo, net = make(Torus, dims=dims, mesh=mesh, parallel=parallel)
    t = topo.minimal_routes(net)
    assert t.vcs_required == vcs
    assert_minimal(topo, net)
    # dimension order: the dimensions a route uses never decrease
    coord = net.coords["coord"]
    pt = net.ports
    for s in range(net.n_routers):
        for d in range(net.n_routers):
            r, last = s, -1
            while r != d:
                p = t.gnext[r, d]
                assert t.port_dim[p] >= last
                last = t.port_dim[p]
                r = pt.port_router[pt.port_peer[p]]
    # a half-way tie on an even ring goes + when (c mod k/2) is even (no higher dimension):
    # the + set is k/2-periodic, so every window of k/2 tie routes has the same share of each
    # direction (this rule replaced "away from the wrap link", which loaded the + links of
    # c < k/2 with every tie route and those of c >= k/2 with none)
    if dims == [6]:
        for s in range(6):
            p = t.gnext[s, (s + 3) % 6]
            nxt = coord[pt.port_router[pt.port_peer[p]], 0]
            assert nxt == ((s + 1) % 6 if s % 3 % 2 == 0 else (s - 1) % 6)


def test_torus_parallel_cables_spread_by_destination():
    topo, net = make(Torus, dims=[5], parallel=4)
    t = topo.minimal_routes(net)
    used = {int(t.gnext[0, d]) for d in (1, 2)} | {int(t.gnext[0, d]) for d in (3, 4)}
    assert len(used) == 4


@pytest.mark.parametrize("params", [
    {"k": 2, "n": 3}, {"k": 3, "n": 3}, {"k": 4, "n": 3, "up": 2}, {"k": 2, "n": 4},
    {"switch_radix": 8, "nodes_per_leaf": 4, "leaves": 8},
    {"switch_radix": 8, "nodes_per_leaf": 5, "leaves": 8},
    {"switch_radix": 12, "nodes_per_leaf": 6, "leaves": 18, "spine_up": 3},
    {"switch_radix": 48, "nodes_per_leaf": 24, "leaves": 96},
    # roots per plane not dividing spine_up: the pods' ports rotate over the plane's roots
    {"switch_radix": 8, "nodes_per_leaf": 7, "leaves": 3, "pod_leaves": 1, "spine_up": 5},
    {"switch_radix": 16, "nodes_per_leaf": 8, "leaves": 48, "pod_leaves": 8, "spine_up": 5},
])
def test_fattree_updown_routes(params):
    topo, net = make(FatTree, **params)
    t = topo.minimal_routes(net)
    assert t.vcs_required == 1
    levels = net.info["levels"]
    leaves = np.nonzero(net.coords["level"] == 1)[0]
    hops, max_vc = walk_all(net, t, dests=leaves)
    assert max_vc == 0
    hl = hops[leaves]
    assert hl.max() <= 2 * (levels - 1)
    # up/down through the nearest common ancestor: the shortest leaf-to-leaf path
    np.testing.assert_array_equal(hl, hop_distances(net)[np.ix_(leaves, leaves)])
    # every route from any switch reaches every leaf
    assert (hops[:, :] >= 0).all()


@pytest.mark.parametrize("params", [
    {"switch_radix": 48, "nodes_per_leaf": 24, "leaves": 96}, {"k": 4, "n": 3}, {"k": 3, "n": 3},
    {"k": 2, "n": 4}, {"k": 8, "n": 2},
])
def test_fattree_spreads_uniform_traffic_evenly(params):
    """All-to-all between leaves loads every cable of one level within one unit."""
    topo, net = make(FatTree, **params)
    t = topo.minimal_routes(net)
    pt = net.ports
    leaves = np.nonzero(net.coords["level"] == 1)[0]
    src = np.repeat(leaves, leaves.size)
    dst = np.tile(leaves, leaves.size)
    keep = src != dst
    cur, dst = src[keep], dst[keep]
    load = np.zeros(pt.n_ports, dtype=np.int64)
    while (cur != dst).any():
        act = cur != dst
        port = t.gnext[cur[act], dst[act]]
        np.add.at(load, port, 1)
        cur[act] = pt.port_router[pt.port_peer[port]]
    lvl = net.coords["level"]
    cab = np.nonzero(pt.port_link[:pt.n_router_ports] >= 0)[0]
    a, b = lvl[pt.port_router[cab]], lvl[pt.port_router[pt.port_peer[cab]]]
    for key in {(int(x), int(y)) for x, y in zip(a, b, strict=True)}:
        sel = load[cab[(a == key[0]) & (b == key[1])]]
        assert sel.max() - sel.min() <= 1, key


def test_too_few_vcs_is_refused_before_the_run(tmp_path):
    from federation.pipeline.load import load_experiment
    from federation.pipeline.point import prepare

    cases = [({"kind": "circulant", "preset": {"k": 6}}, 2, 3),
             ({"kind": "torus", "dims": [4, 4]}, 1, 2),
             ({"kind": "random_shortcut", "n": 64, "degree": 4, "seed": 1}, 2, None)]
    for i, (topo, vcs, need) in enumerate(cases):
        doc = {"machine": {"topology": topo, "router": {"vcs": vcs}},
               "routing": {"algorithm": "minimal"},
               "workload": {"kind": "synthetic", "pattern": "uniform", "load": 0.2},
               "stop": {"warmup": "0.5us", "measure": "2us"}}
        path = tmp_path / f"e{i}.yaml"
        path.write_text(yaml.safe_dump(doc))
        with pytest.raises(ConfigError, match=r"needs (\d+) virtual channels") as exc:
            prepare(load_experiment(path).points[0])
        if need is not None:
            assert f"needs {need} virtual channels" in str(exc.value)
            assert f"router.vcs: {need}" in str(exc.value)


# --------------------------------------------------------------------------- parameters


@pytest.mark.parametrize(("cls", "params", "msg"), [
    (Circulant, {"n": 16}, "give 'n' and 'jumps'"),
    (Circulant, {"n": 16, "jumps": [1], "preset": {"k": 4}}, "not both"),
    (Circulant, {"n": 16, "jumps": [1, 9]}, "outside 1..n/2"),
    (Circulant, {"n": 16, "jumps": [2, 4]}, "disconnected"),
    (Circulant, {"n": 16, "jumps": [1, 1]}, "duplicate"),
    (RandomShortcut, {"n": 8, "degree": 8}, "at least degree"),
    (Torus, {"dims": [4, 4], "parallel": [1, 2, 3]}, "one per dimension"),
    (Torus, {"dims": []}, "at least 1"),
    (FatTree, {"k": 4, "n": 2, "leaves": 8}, "mixes"),
    (FatTree, {"k": 4}, "give 'k' and 'n'"),
    (FatTree, {"switch_radix": 48, "nodes_per_leaf": 24, "leaves": 90}, "whole number of pods"),
    (FatTree, {"switch_radix": 8, "nodes_per_leaf": 9, "leaves": 4}, "no up-link port"),
    (FatTree, {"switch_radix": 8, "nodes_per_leaf": 4, "leaf_up": 5, "leaves": 4},
     "a leaf needs nodes_per_leaf \\+ leaf_up = 4 \\+ 5 ports"),
])
def test_parameter_errors_are_clear(cls, params, msg):
    with pytest.raises(ValidationError, match=msg):
        cls.Params(**params)


# --------------------------------------------------------------------------- machine files


# (file, routers, nodes, router-router cables, VCs minimal routing needs)
PAPER_MACHINES = [
    # circulant-shortcut-collectives.md §1.2: G(1024,10), degree 19, 1 node per switch
    ("circulant-g1024-10", 1024, 1024, 1024 * 19 // 2, 5),
    # §1.1: 1,024 switches, degree 19 (2 ring + 17 shortcuts), 1 node per switch
    ("random-shortcut-1024-d19", 1024, 1024, 1024 * 19 // 2, 4),
    # many-node-simulation.md §2: 100 switches (5x5x4), 24 nodes each, 4 links per direction
    ("manynode-torus-5x5x4", 100, 2400, 100 * 6 * 4 // 2, 2),
    # §2: 96 leaf + 96 second-level + 48 root switches, 24 nodes per leaf, full bisection
    ("manynode-fattree-96-96-48", 240, 96 * 24, 2 * 96 * 24, 1),
    # codes-torus-dragonfly.md §1.3: BG/P 8x8x8, 512 nodes, 2n = 6 links per node
    ("bluegene-p-8x8x8", 512, 512, 512 * 6 // 2, 2),
    # §1.3: BG/Q 8x4x4x4x2, 1,024 nodes, 2n = 10 links per node
    ("bluegene-q-8x4x4x4x2", 1024, 1024, 1024 * 10 // 2, 2),
]


@pytest.mark.parametrize(("name", "routers", "nodes", "links", "vcs"), PAPER_MACHINES)
def test_paper_machine_files(name, routers, nodes, links, vcs):
    from federation.pipeline.load import load_machine

    rm = load_machine(MACHINES / f"{name}.yaml")
    assert rm.machine.name == name and rm.machine.description
    net = rm.topology.build()
    net.validate()
    assert (net.n_routers, net.n_nodes, net.n_links) == (routers, nodes, links)
    t = rm.topology.minimal_routes(net)
    assert t.vcs_required == vcs <= rm.machine.router.vcs
    if name.startswith("bluegene-q"):
        assert graph_stats(net, sources=[0]).diameter == 11  # 4+2+2+2+1, the paper's maximum
    if name.startswith("circulant"):
        assert (degrees(net) == 19).all()
    if name.startswith("random"):
        assert (degrees(net) == 19).all() and net.info["short_vertices"] == []


# --------------------------------------------------------------------------- native runs


SMALL = [
    ({"kind": "circulant", "n": 16, "jumps": [1, 4], "nodes_per_router": 2}, 4),
    ({"kind": "circulant", "preset": {"k": 4}}, 3),
    ({"kind": "random_shortcut", "n": 24, "degree": 4, "seed": 2}, 6),
    ({"kind": "torus", "dims": [4, 3, 2], "parallel": [2, 1, 1], "nodes_per_router": 2}, 2),
    ({"kind": "torus", "dims": [3, 3], "mesh": True}, 1),
    ({"kind": "hypercube", "n": 4}, 1),
    ({"kind": "fattree", "k": 2, "n": 3}, 1),
    ({"kind": "fattree", "switch_radix": 8, "nodes_per_leaf": 4, "leaves": 8}, 1),
    ({"kind": "graph_file", "path": "GRAPH"}, 5),
]


@pytest.mark.parametrize(("topology", "vcs"), SMALL)
def test_native_run_delivers_every_packet(tmp_path, topology, vcs):
    from federation.pipeline.load import load_experiment
    from federation.pipeline.run import run_experiment

    if topology.get("path") == "GRAPH":
        g = tmp_path / "g.txt"
        g.write_text("".join(f"{i} {(i + 1) % 10}\n" for i in range(10)) + "0 5 chord\n")
        topology = {**topology, "path": str(g)}
    doc = {"machine": {"topology": topology, "router": {"vcs": vcs}},
           "routing": {"algorithm": "minimal"},
           "workload": {"kind": "synthetic", "pattern": "uniform", "load": 0.2},
           "stop": {"warmup": "0.5us", "measure": "2us"}}
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(doc))
    s = run_experiment(load_experiment(path)).points[0].summary
    assert s.packets_generated > 0
    assert s.packets_delivered == s.packets_generated


@pytest.mark.parametrize(("radix", "npl", "leaves", "pl", "su", "loads"), [
    (8, 7, 3, 1, 5, [7, 8]),      # 3 pods, 2 roots per plane: 15 cables as 8 + 7
    (16, 8, 48, 8, 5, [15]),      # 6 pods, 2 roots: 30 as 15 + 15 (the old wiring: 18 + 12)
    (8, 4, 16, 4, 3, [4, 8]),     # fits the old rule (4 pods x 2 <= 8): wired as before
])
def test_fattree_roots_take_at_most_their_ports(radix, npl, leaves, pl, su, loads):
    """Up-port ``t -> root t mod rpp`` gave a root ``ceil(spine_up / rpp)`` cables from every
    pod: 18 on 16 ports, refused as the plugin's invalid network although every parameter
    was within its documented limits."""
    _, net = make(FatTree, switch_radix=radix, nodes_per_leaf=npl, leaves=leaves,
                  pod_leaves=pl, spine_up=su)
    roots = np.nonzero(net.coords["level"] == 3)[0]
    cp = cable_ports(net)
    per_root = sorted(int(x) for x in np.diff(cp.indptr)[roots])
    assert sorted(set(per_root)) == sorted(loads), per_root
