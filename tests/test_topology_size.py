"""``Topology.size()`` of every built-in topology: the counts the memory check uses before
anything is built must be the counts of the built network, and must come instantly, without
allocating, for machines far too large to build.

Small parameter sets are drawn with hypothesis (derandomized, so the suite is reproducible);
every shipped machine file is checked too.  The one documented inexact case is
``random_shortcut`` with ``degree = n - 1`` (an upper bound, see its ``size`` docstring).
"""

from __future__ import annotations

import json
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from federation.errors import ConfigError, TopologyError
from federation.pipeline.bounds import check_machine_memory, check_memory, estimate_network
from federation.pipeline.load import load_machine
from federation.plugin.components import Topology, TopologySize
from federation.plugins.topologies.aries import Aries
from federation.plugins.topologies.circulant import Circulant
from federation.plugins.topologies.dragonfly import Dragonfly
from federation.plugins.topologies.fattree import FatTree
from federation.plugins.topologies.graph_file import GraphFile
from federation.plugins.topologies.megafly import Megafly
from federation.plugins.topologies.random_shortcut import RandomShortcut
from federation.plugins.topologies.torus import Hypercube, Torus

MACHINES_DIR = Path(__file__).resolve().parent.parent / "schemas" / "machines"
MACHINES = sorted(MACHINES_DIR.glob("*.yaml"))
EXAMPLES = 60
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])

ARRANGEMENTS = st.sampled_from(["absolute", "relative", "circulant"])


def built_counts(topo: Topology) -> TopologySize:
    net = topo.build()
    return TopologySize(net.n_routers, net.n_nodes, net.n_links, net.n_groups)


def topology(cls: type[Topology], params: dict[str, Any]) -> Topology:
    """The topology for ``params``, discarding the example when the parameters are refused."""
    params = {k: v for k, v in params.items() if v is not None}
    try:
        return cls(cls.Params(**params))
    except ValidationError:
        assume(False)
        raise  # unreachable: assume(False) ends the example


def assert_size_matches(cls: type[Topology], params: dict[str, Any],
                        builds: bool = False) -> None:
    """``builds``: parameters the model accepts must build a valid network (the fat tree's
    three-level form gave roots more cables than ports: skipping the example hid it)."""
    topo = topology(cls, params)
    try:
        built = built_counts(topo)
    except TopologyError:
        if builds:
            raise
        assume(False)
        return
    assert topo.size() == built, params


def test_every_builtin_topology_implements_size(plugins):
    """A built-in that forgot size() would silently skip the check before building."""
    names = plugins.topologies.names()
    assert {"dragonfly", "megafly", "aries", "fattree", "torus", "hypercube", "circulant",
            "random_shortcut", "graph_file"} <= set(names)
    for name in names:
        assert plugins.topologies.get(name).size is not Topology.size, name


# --------------------------------------------------------------------------- dragonfly family


@SETTINGS
@given(p=st.integers(1, 3), a=st.integers(1, 6), h=st.integers(1, 3),
       g=st.none() | st.integers(2, 19), arrangement=ARRANGEMENTS,
       links_per_pair=st.none() | st.integers(1, 4))
def test_dragonfly(p, a, h, g, arrangement, links_per_pair):
    assert_size_matches(Dragonfly, dict(p=p, a=a, h=h, g=g, arrangement=arrangement,
                                        links_per_pair=links_per_pair))


@SETTINGS
@given(leaves=st.integers(1, 4), spines=st.integers(1, 4), nodes_per_leaf=st.integers(1, 3),
       global_links_per_spine=st.integers(1, 3), groups=st.none() | st.integers(2, 13),
       arrangement=ARRANGEMENTS, links_per_pair=st.none() | st.integers(1, 3))
def test_megafly(leaves, spines, nodes_per_leaf, global_links_per_spine, groups, arrangement,
                 links_per_pair):
    assert_size_matches(Megafly, dict(
        leaves=leaves, spines=spines, nodes_per_leaf=nodes_per_leaf,
        global_links_per_spine=global_links_per_spine, groups=groups, arrangement=arrangement,
        links_per_pair=links_per_pair))


@SETTINGS
@given(groups=st.integers(1, 6), chassis=st.integers(1, 3), blades=st.integers(1, 4),
       nodes_per_router=st.integers(1, 4), global_tiles=st.integers(0, 10),
       tiles_per_global_link=st.integers(1, 3), inter_chassis_tiles=st.integers(1, 3),
       arrangement=ARRANGEMENTS, links_per_pair=st.none() | st.integers(1, 3))
def test_aries(groups, chassis, blades, nodes_per_router, global_tiles, tiles_per_global_link,
               inter_chassis_tiles, arrangement, links_per_pair):
    assert_size_matches(Aries, dict(
        groups=groups, chassis=chassis, blades=blades, nodes_per_router=nodes_per_router,
        global_tiles=global_tiles, tiles_per_global_link=tiles_per_global_link,
        inter_chassis_tiles=inter_chassis_tiles, arrangement=arrangement,
        links_per_pair=links_per_pair))


# --------------------------------------------------------------------------- fat trees


@SETTINGS
@given(k=st.integers(1, 4), n=st.integers(1, 4), up=st.none() | st.integers(1, 4))
def test_fattree_k_ary_n_tree(k, n, up):
    assert_size_matches(FatTree, dict(k=k, n=n, up=up))


@SETTINGS
@given(switch_radix=st.integers(2, 12), data=st.data())
def test_fattree_three_level(switch_radix, data):
    R = switch_radix
    draw = data.draw
    nodes_per_leaf = draw(st.integers(1, R - 1))
    leaf_up = draw(st.none() | st.integers(1, R - nodes_per_leaf))
    pod_leaves = draw(st.none() | st.integers(1, R - 1))
    pl = pod_leaves if pod_leaves is not None else R // 2
    spine_up = draw(st.none() | st.integers(0, R - pl))
    su = spine_up if spine_up is not None else R - pl
    leaves = pl * (draw(st.integers(1, R)) if su else 1)
    assert_size_matches(FatTree, dict(
        switch_radix=switch_radix, nodes_per_leaf=nodes_per_leaf, leaves=leaves,
        leaf_up=leaf_up, pod_leaves=pod_leaves, spine_up=spine_up), builds=True)


# --------------------------------------------------------------------------- flat topologies


@SETTINGS
@given(dims=st.lists(st.integers(1, 5), min_size=1, max_size=4), mesh=st.booleans(),
       data=st.data(), nodes_per_router=st.integers(1, 3))
def test_torus_and_mesh(dims, mesh, data, nodes_per_router):
    parallel = data.draw(st.integers(1, 3) | st.lists(st.integers(1, 3), min_size=len(dims),
                                                      max_size=len(dims)))
    assert_size_matches(Torus, dict(dims=dims, mesh=mesh, parallel=parallel,
                                    nodes_per_router=nodes_per_router))


@pytest.mark.parametrize("n", range(1, 8))
@pytest.mark.parametrize("parallel", [1, 3])
def test_hypercube(n, parallel):
    assert_size_matches(Hypercube, dict(n=n, parallel=parallel, nodes_per_router=2))


@SETTINGS
@given(n=st.integers(2, 40), data=st.data(), nodes_per_router=st.integers(1, 3))
def test_circulant(n, data, nodes_per_router):
    jumps = data.draw(st.lists(st.integers(1, n // 2), min_size=1, max_size=5, unique=True))
    assert_size_matches(Circulant, dict(n=n, jumps=jumps, nodes_per_router=nodes_per_router))


@pytest.mark.parametrize("k", range(1, 9))
def test_circulant_preset(k):
    assert_size_matches(Circulant, dict(preset={"k": k}))


@SETTINGS
@given(n=st.integers(4, 40), data=st.data(), seed=st.integers(0, 1000),
       nodes_per_router=st.integers(1, 3))
def test_random_shortcut(n, data, seed, nodes_per_router):
    degree = data.draw(st.integers(2, n - 2))
    assert_size_matches(RandomShortcut, dict(n=n, degree=degree, seed=seed,
                                             nodes_per_router=nodes_per_router))


@pytest.mark.parametrize("n", [4, 5, 7, 10])
@pytest.mark.parametrize("seed", range(0, 200, 7))
def test_random_shortcut_complete_graph_is_an_upper_bound(n, seed):
    """degree = n - 1: the generator may leave a few stubs unpaired; size() counts them all."""
    topo = RandomShortcut(RandomShortcut.Params(n=n, degree=n - 1, seed=seed))
    net = topo.build()
    size = topo.size()
    missing = sum(m for _, m in net.info["short_vertices"])
    assert (size.routers, size.nodes, size.groups) == (n, n, n)
    assert size.cables == n * (n - 1) // 2
    assert size.cables - net.n_links == missing // 2 >= 0


# --------------------------------------------------------------------------- graph files


@st.composite
def connected_edges(draw: st.DrawFn) -> list[tuple[int, int, str | None]]:
    """Cables of a connected graph (the build validates connectivity): a random spanning tree
    over routers ``0..n-1``, then extra cables, parallel ones included, shuffled; no loops."""
    n = draw(st.integers(2, 30))
    cls = st.sampled_from([None, "link", "fast"])
    edges = [(i, draw(st.integers(0, i - 1)), draw(cls)) for i in range(1, n)]
    for _ in range(draw(st.integers(0, 20))):
        a = draw(st.integers(0, n - 1))
        edges.append((a, (a + draw(st.integers(1, n - 1))) % n, draw(cls)))
    return draw(st.permutations(edges))


@SETTINGS
@given(edges=connected_edges(), comments=st.booleans(),
       nodes_per_router=st.none() | st.integers(1, 3))
def test_graph_file_edge_list(edges, comments, nodes_per_router):
    lines = ["# a generated graph"] if comments else []
    for a, b, cls in edges:
        lines.append(f"{a} {b}" + (f" {cls}" if cls else "") + ("  # cable" if comments else ""))
        if comments:
            lines.append("")
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "g.txt"
        path.write_text("\n".join(lines) + "\n")
        assert_size_matches(GraphFile, dict(path=str(path), nodes_per_router=nodes_per_router))


@SETTINGS
@given(edges=connected_edges(), data=st.data(), nodes_per_router=st.none() | st.integers(1, 3))
def test_graph_file_json(edges, data, nodes_per_router):
    routers = 1 + max(max(a, b) for a, b, _ in edges)
    file_nodes = data.draw(st.none() | st.integers(1, 3)
                           | st.lists(st.integers(0, 3), min_size=routers, max_size=routers))
    doc: dict[str, Any] = {"routers": routers,
                           "links": [[a, b, c] if c else [a, b] for a, b, c in edges]}
    if file_nodes is not None:
        doc["nodes_per_router"] = file_nodes
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "g.json"
        path.write_text(json.dumps(doc))
        assert_size_matches(GraphFile, dict(path=str(path), nodes_per_router=nodes_per_router))


@pytest.mark.parametrize("text", ["", "# only a comment\n", "0 1 x y\n", "0 one\n", "0 -1\n"])
def test_graph_file_that_does_not_parse_has_no_size(tmp_path, text):
    """The build reports what is wrong, with the line; size() just declines to count."""
    path = tmp_path / "g.txt"
    path.write_text(text)
    topo = GraphFile(GraphFile.Params(path=str(path)))
    assert topo.size() is None
    with pytest.raises(TopologyError):
        topo.build()


def test_graph_file_missing_has_no_size(tmp_path):
    assert GraphFile(GraphFile.Params(path=str(tmp_path / "nope.txt"))).size() is None


@pytest.mark.parametrize("name, text, cables", [
    ("g.txt", "0 1\n1 1000000000\n", 2),
    # JSON: the declared router count, whatever ids the links use
    ("g.json", '{"routers": 1000000001, "links": [[0, 1]]}', 1),
])
def test_graph_file_with_a_huge_id_is_refused_before_building(tmp_path, name, text, cables):
    """Router id 10**9 is 10**9 + 1 routers: refused by the memory check, never built."""
    (tmp_path / name).write_text(text)
    machine = tmp_path / "m.yaml"
    machine.write_text(f"topology: {{kind: graph_file, path: '{tmp_path / name}'}}\n")
    rm = load_machine(machine)
    assert rm.topology.size() == TopologySize(10**9 + 1, 10**9 + 1, cables, 10**9 + 1)
    with pytest.raises(ConfigError, match="needs about"):
        check_machine_memory(rm, 64 * 2**30)


# --------------------------------------------------------------------------- shipped machines


@pytest.mark.parametrize("path", MACHINES, ids=[p.name for p in MACHINES])
def test_shipped_machine(path):
    rm = load_machine(path)
    assert rm.topology.size() == built_counts(rm.topology)


# --------------------------------------------------------------------------- huge machines


HUGE = {
    "dragonfly a=100000": (Dragonfly, dict(p=2, a=100000, h=2)),
    "torus 1024x1024": (Torus, dict(dims=[1024, 1024])),
    "mesh 1024x1024 x4 lanes": (Torus, dict(dims=[1024, 1024], mesh=True, parallel=4)),
    "hypercube n=20": (Hypercube, dict(n=20)),
    # 10,000 groups need >= 9,999 global ports per group: 1,000 routers x 10 global links
    "aries 10000 groups": (Aries, dict(groups=10000, chassis=10, blades=100, router_tiles=256)),
    "megafly 100000 spines": (Megafly, dict(leaves=1000, spines=100000, nodes_per_leaf=64,
                                            global_links_per_spine=2)),
    "fattree k=64 n=8": (FatTree, dict(k=64, n=8)),
    "fattree 1000-port three-level": (FatTree, dict(switch_radix=1000, nodes_per_leaf=500,
                                                    leaves=500000)),
    "circulant 2^20": (Circulant, dict(preset={"k": 20})),
    "random shortcut 10^8": (RandomShortcut, dict(n=10**8, degree=100)),
}


@pytest.mark.parametrize("case", sorted(HUGE))
def test_huge_size_is_instant_and_allocates_nothing(case):
    cls, params = HUGE[case]
    topo = cls(cls.Params(**params))
    tracemalloc.start()
    try:
        t0 = time.perf_counter()
        size = topo.size()
        elapsed = time.perf_counter() - t0
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert size is not None and size.routers >= 2**20
    assert elapsed < 0.1, elapsed
    assert peak < 64 * 2**10, peak  # no per-router array
    with pytest.raises(ConfigError, match="needs about"):
        check_memory(estimate_network(size, 2), 64 * 2**30, "this machine", "m.yaml",
                     "topology")


def test_default_aries_with_10000_groups_is_refused_by_its_parameters():
    """The default Aries shape has 960 global ports per group: 10,000 groups cannot be wired,
    which the parameters already say (instantly) before size() is asked."""
    t0 = time.perf_counter()
    with pytest.raises(ValidationError, match="global ports"):
        Aries.Params(groups=10000)
    assert time.perf_counter() - t0 < 0.5
