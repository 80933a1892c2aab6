"""Minimal routing tables spread uniform traffic over the links of each class (issue 6, item 3).

For every shipped machine and small instances of every topology kind, the exact per-port load of
uniform all-to-all traffic walked through the minimal tables
(:func:`~federation.network.routes.channel_load`) is grouped by link class, and the busiest
port of each class may carry at most a stated multiple of the class mean.  The bounds are the
values the tables reach (rounded up), each with the reason it is not 1.0; where a class mixes
links that carry different loads whatever the routing (the rings of a torus with unequal
dimensions, the levels of a fat tree), the finer grouping (per dimension, per level pair) is
checked too.  "Before" figures are those of the tables this issue replaced; each bound is
below them, so the test fails if the concentration comes back.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from federation.network.routes import channel_load, class_loads
from federation.pipeline.load import load_machine
from federation.plugins.topologies.aries import Aries
from federation.plugins.topologies.circulant import Circulant
from federation.plugins.topologies.dragonfly import Dragonfly
from federation.plugins.topologies.fattree import FatTree
from federation.plugins.topologies.graph_file import GraphFile
from federation.plugins.topologies.megafly import Megafly
from federation.plugins.topologies.random_shortcut import RandomShortcut
from federation.plugins.topologies.torus import Hypercube, Torus

MACHINES = Path(__file__).resolve().parent.parent / "schemas" / "machines"
EPS = 1e-9


def ratios(net, tables, by: str = "class", load=None) -> dict[str, float]:
    """Busiest / mean cable-port load per group: ``class``, ``dim`` (torus dimension, from the
    tables' ``port_dim``) or ``level`` (fat-tree level pair ``"lower->upper"``, directed)."""
    load = channel_load(net, tables) if load is None else load
    if by == "class":
        return {k: v.ratio for k, v in class_loads(net, load).items()}
    pt = net.ports
    cab = np.nonzero(pt.port_link[:pt.n_router_ports] >= 0)[0]
    if by == "dim":
        label = np.array([f"dim{d}" for d in tables.port_dim[cab]])
    else:
        lvl = net.coords["level"]
        a, b = lvl[pt.port_router[cab]], lvl[pt.port_router[pt.port_peer[cab]]]
        label = np.array([f"{x}->{y}" for x, y in zip(a, b, strict=True)])
    out = {}
    for key in sorted(set(label.tolist())):
        sel = load[cab[label == key]]
        out[key] = float(sel.max() / sel.mean())
    return out


def check(got: dict[str, float], bounds: dict[str, float]) -> None:
    assert set(got) == set(bounds), f"groups {sorted(got)} vs bounds {sorted(bounds)}"
    over = {k: round(v, 4) for k, v in got.items() if v > bounds[k] * (1 + EPS)}
    assert not over, f"busiest/mean {over} above the bounds {bounds}"


# --------------------------------------------------------------------------- shipped machines

SHIPPED: dict[str, dict[str, float]] = {
    # every router owns exactly one (2-tile) link to each of the 5 other groups: no choice left
    "aries-xc": {"intra_chassis": 1.0, "inter_chassis": 1.0, "global": 1.0},
    # one ring length, ties split k/2-periodically (before: 1.25, ties all went one way)
    "bluegene-p-8x8x8": {"torus": 1.0},
    # one class for rings of 8, 4 and 2: a link of the 8-ring carries twice the load of a link
    # of a 4-ring whatever the routing, 1024 / (mean 563.2) = 1.82; per dimension below
    "bluegene-q-8x4x4x4x2": {"torus": 1024 / 563.2},
    # ECMP (every flow split evenly over all shortest paths) reaches 1.38; the hashed spread
    # 1.43 (before, lowest port: 1.84)
    "circulant-g1024-10": {"network": 1.45},
    "codes-dragonfly": {"local": 1.0, "global": 1.0},
    # 31 links per group pair over 18 routers: each router owns one or two links to a group but
    # per-group tables use one, so 18 of 31 carry the traffic: 31/18 (before: local 1.6)
    "manynode-dragonfly-5x18": {"local": 1.0, "global": 31 / 18},
    # 95 other leaves over 24 up-links: 23 carry 4 destination leaves, one carries 3
    "manynode-fattree-96-96-48": {"leaf": 4 * 24 / 95, "spine": 1.0},
    # the last dimension (k = 4, 4 parallel cables) has at most 2 destinations ahead of a link,
    # each on one cable: 4x the mean of that dimension (per dimension below)
    "manynode-torus-5x5x4": {"torus": 3.53},
    # 2 owners and 14 non-owners per target group (before: local 1.61, global 1.13)
    "megafly-qos-dragonfly": {"local": 1.04, "global": 1.0},
    # the machine: leaves used 1-2 of their 16 up-links (before: local 7.8)
    "megafly-qos-megafly": {"local": 1.01, "global": 1.0},
    "quickstart-dragonfly": {"local": 1.0, "global": 1.0},
    # ECMP reaches 1.21 / 1.24; hashed spread 1.32 / 1.39 (before: 1.33 / 2.17)
    "random-shortcut-1024-d19": {"ring": 1.45, "shortcut": 1.45},
    # router 15 of each group leaves one global port empty (63 links from 64 ports), so its
    # group sends and receives a little less over the local links at router 15
    "thesis-dragonfly-64x16": {"local": 1.02, "global": 1.0},
}

MACHINE_FILES = sorted(MACHINES.glob("*.yaml"))


def test_every_shipped_machine_has_bounds():
    assert {p.stem for p in MACHINE_FILES} == set(SHIPPED)


@pytest.mark.parametrize("path", MACHINE_FILES, ids=[p.stem for p in MACHINE_FILES])
def test_shipped_machine_spreads_uniform_traffic(path):
    rm = load_machine(path)
    net = rm.topology.build()
    tables = rm.topology.minimal_routes(net)
    load = channel_load(net, tables)
    check(ratios(net, tables, load=load), SHIPPED[path.stem])
    if path.stem in TORUS_DIMS:
        check(ratios(net, tables, "dim", load), TORUS_DIMS[path.stem])
    if path.stem == "circulant-g1024-10":
        # rotation-invariant tables: every port of one jump carries the same load
        pt = net.ports
        cab = np.nonzero(pt.port_link[:pt.n_router_ports] >= 0)[0]
        jump = (pt.port_router[pt.port_peer[cab]] - pt.port_router[cab]) % net.n_routers
        for j in np.unique(jump):
            sel = load[cab[jump == j]]
            assert sel.max() == sel.min(), j


TORUS_DIMS = {
    # the rings of 8 and 4 are exact; the E dimension (k = 2, 2 cables) is last: one
    # destination per link, on one of the two cables
    "bluegene-q-8x4x4x4x2": {"dim0": 1.0, "dim1": 1.0, "dim2": 1.0, "dim3": 1.0, "dim4": 2.0},
    "manynode-torus-5x5x4": {"dim0": 1.0, "dim1": 1.0, "dim2": 4.0},
}


# --------------------------------------------------------------------------- small instances

SMALL = [
    # dragonfly, one link per group pair: exact for every arrangement
    (Dragonfly, {"p": 2, "a": 4, "h": 2}, "class", {"local": 1.0, "global": 1.0}),
    (Dragonfly, {"p": 2, "a": 4, "h": 2, "arrangement": "relative"}, "class",
     {"local": 1.0, "global": 1.0}),
    (Dragonfly, {"p": 2, "a": 4, "h": 2, "arrangement": "circulant"}, "class",
     {"local": 1.0, "global": 1.0}),
    # 4 links per pair from 4 different routers
    (Dragonfly, {"p": 1, "a": 4, "h": 2, "g": 3}, "class", {"local": 1.0, "global": 1.0}),
    # 4 links per pair, owners of a target are the 4 routers of one parity, so the hops of
    # non-owners to owners use only odd-even local links: 1.25 (before: local 3.3, global 1.5)
    (Dragonfly, {"p": 2, "a": 8, "h": 4, "g": 9}, "class", {"local": 1.26, "global": 1.0}),
    # 8 links per pair, every router owns 2 and per-group tables use one: 2.0
    (Dragonfly, {"p": 2, "a": 4, "h": 4, "g": 3}, "class", {"local": 1.0, "global": 2.0}),
    # megafly: intra-group leaf -> spine (i + j) mod spines adds a little (before: 3.7)
    (Megafly, {"leaves": 8, "spines": 8, "nodes_per_leaf": 4, "global_links_per_spine": 4,
               "groups": 9}, "class", {"local": 1.02, "global": 1.0}),
    (Megafly, {"leaves": 4, "spines": 4, "nodes_per_leaf": 4, "global_links_per_spine": 2},
     "class", {"local": 1.03, "global": 1.0}),
    # each spine owns 2 of the 4 links to the other groups and uses one: global 2.0; which one
    # is chosen by landing load (before: local 1.82)
    (Megafly, {"leaves": 4, "spines": 2, "nodes_per_leaf": 2, "global_links_per_spine": 4,
               "groups": 3}, "class", {"local": 1.1, "global": 2.0}),
    # aries: every router owns one link per target group
    (Aries, {"groups": 3, "chassis": 2, "blades": 4, "global_tiles": 2, "inter_chassis_tiles": 1,
             "processor_tiles": 2}, "class",
     {"intra_chassis": 1.0, "inter_chassis": 1.0, "global": 1.0}),
    (Aries, {"groups": 3, "chassis": 2, "blades": 4, "global_tiles": 4, "inter_chassis_tiles": 1,
             "processor_tiles": 2, "tiles_per_global_link": 2}, "class",
     {"intra_chassis": 1.0, "inter_chassis": 1.0, "global": 1.0}),
    # half the routers own a link to a given group: each owner serves one non-owner (before:
    # global 1.5, intra-chassis 1.96); the owners are the even or the odd blades, so the hops
    # to them use part of the intra-chassis links
    (Aries, {"groups": 5, "chassis": 2, "blades": 4, "global_tiles": 2, "inter_chassis_tiles": 1,
             "processor_tiles": 2}, "class",
     {"intra_chassis": 1.18, "inter_chassis": 1.0, "global": 1.0}),
    # fat trees per level pair: a leaf's other leaves do not divide evenly over its up-links
    # (15 over 4: 4/3.75; 7 over 2: 4/3.5; 23 over 6: 4/3.83); above the leaves exact
    (FatTree, {"k": 4, "n": 3}, "level",
     {"1->2": 4 / 3.75, "2->1": 4 / 3.75, "2->3": 1.0, "3->2": 1.0}),
    (FatTree, {"k": 4, "n": 3, "up": 2}, "level",
     {"1->2": 1.067, "2->1": 1.067, "2->3": 1.0, "3->2": 1.0}),
    (FatTree, {"k": 2, "n": 4}, "level",
     {"1->2": 4 / 3.5, "2->1": 4 / 3.5, "2->3": 1.0, "3->2": 1.0, "3->4": 1.0, "4->3": 1.0}),
    (FatTree, {"switch_radix": 12, "nodes_per_leaf": 6, "leaves": 24}, "level",
     {"1->2": 4 / (23 / 6), "2->1": 4 / (23 / 6), "2->3": 1.0, "3->2": 1.0}),
    # 3 up-links per level-2 switch to 2 roots (bundles of 2 and 1): up 1.25 (before 1.5);
    # the down cables follow how each pod's 8 leaves fall into the bundles: 1.5
    (FatTree, {"switch_radix": 8, "nodes_per_leaf": 4, "leaves": 16, "spine_up": 3}, "level",
     {"1->2": 1.067, "2->1": 1.067, "2->3": 1.25, "3->2": 1.5}),
    # tori per dimension (before: 1.25 on rings of 8, 1.5 on rings of 4, 1.33 on rings of 6)
    (Torus, {"dims": [8, 8]}, "dim", {"dim0": 1.0, "dim1": 1.0}),
    (Torus, {"dims": [4, 4, 4]}, "dim", {"dim0": 1.0, "dim1": 1.0, "dim2": 1.0}),
    # last dimension, k/2 = 3 odd: + links get 2 of 3 tie routes, - links 1
    (Torus, {"dims": [6, 6]}, "dim", {"dim0": 1.0, "dim1": 1.112}),
    # parallel cables: lanes by (d_i + higher digits) mod p are exact except in the last
    # dimension, where each link has one destination per lane at most (before: 2.0 and 3.0)
    (Torus, {"dims": [4, 4], "parallel": 2}, "dim", {"dim0": 1.0, "dim1": 2.0}),
    # 3 higher-digit values over 2 lanes in dimension 1: 4/3
    (Torus, {"dims": [5, 4, 3], "parallel": 2}, "dim", {"dim0": 1.0, "dim1": 1.334, "dim2": 2.0}),
    # a mesh loads its middle links more whatever the routing: 1.2 on a line of 4
    (Torus, {"dims": [4, 3], "mesh": True}, "dim", {"dim0": 1.2, "dim1": 1.0}),
    (Hypercube, {"n": 5}, "dim", {f"dim{i}": 1.0 for i in range(5)}),
    # before: 2.0 in every dimension (d mod 2 constant after dimension 0)
    (Hypercube, {"n": 4, "parallel": 2}, "dim",
     {"dim0": 1.0, "dim1": 1.0, "dim2": 1.0, "dim3": 2.0}),
    # circulants: ECMP reaches 1.30 / 1.07 (before: 1.71 / 1.62)
    (Circulant, {"preset": {"k": 6}}, "class", {"network": 1.31}),
    (Circulant, {"n": 20, "jumps": [1, 3, 10]}, "class", {"network": 1.22}),
    # random shortcuts: ECMP reaches 1.25 / 1.41 (before: 1.42 / 1.81)
    (RandomShortcut, {"n": 256, "degree": 10, "seed": 2}, "class",
     {"ring": 1.42, "shortcut": 1.56}),
]


@pytest.mark.parametrize(("cls", "params", "by", "bounds"), SMALL,
                         ids=[f"{c.name}-{i}" for i, (c, *_) in enumerate(SMALL)])
def test_small_instance_spreads_uniform_traffic(cls, params, by, bounds):
    topo = cls(cls.Params(**params))
    net = topo.build()
    check(ratios(net, topo.minimal_routes(net), by), bounds)


def test_graph_file_spreads_equal_cost_paths(tmp_path):
    """A 6-cube given as an edge list with shuffled router ids: 6! shortest paths between
    antipodes.  The hashed spread reaches 1.91 (a pseudo-random choice per router and
    destination; ECMP would reach 1.0, e-cube routing too); the lowest-port rule reached 7.6."""
    perm = np.random.default_rng(3).permutation(64)
    edges = [(a, a ^ (1 << i)) for a in range(64) for i in range(6) if a < a ^ (1 << i)]
    path = tmp_path / "cube6.txt"
    path.write_text("".join(f"{perm[a]} {perm[b]}\n" for a, b in edges))
    topo = GraphFile(GraphFile.Params(path=str(path)))
    net = topo.build()
    tables = topo.minimal_routes(net)
    check(ratios(net, tables), {"link": 1.91})
    # deterministic: a second build gives the same tables
    np.testing.assert_array_equal(tables.gnext, topo.minimal_routes(net).gnext)
