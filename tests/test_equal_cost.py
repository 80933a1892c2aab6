"""Every equal-cost minimal port (federation.network.equal_cost) and ``minimal``'s ``spread``
option.

Facts: on a megafly each group pair is joined by ``spines * global_links_per_spine / (groups -
1)`` links, from as many spines, so a leaf has that many equal-cost ports towards another group
and ``spines`` towards a leaf of its own group; a dragonfly with one link per group pair has a
single minimal port per entry; the tables' own port is always among the equal-cost ones;
dimension-order tori are refused.  Concentrating every destination on the lowest-numbered port
starves the others, so ``lowest`` accepts far less than ``random`` under uniform traffic.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import simulate

from federation.errors import RoutingError
from federation.network.equal_cost import equal_cost_ports
from federation.pipeline.build import build_network
from federation.pipeline.load import load_experiment

MEGAFLY = {"kind": "megafly", "groups": 5, "leaves": 4, "spines": 4, "nodes_per_leaf": 4,
           "global_links_per_spine": 4, "radix": 8}


def built(tmp_path, topology: dict):
    import yaml

    (tmp_path / "m.yaml").write_text(yaml.safe_dump({
        "machine": {"topology": topology}, "routing": {"algorithm": "minimal"},
        "workload": {"kind": "synthetic"}, "stop": {"warmup": "0ns", "measure": "1us"}}))
    point = load_experiment(tmp_path / "m.yaml").points[0]
    net = build_network(point)
    return net, point.machine.topology.minimal_routes(net)


def popcount(m: np.ndarray) -> np.ndarray:
    return np.array([bin(int(x)).count("1") for x in m.ravel()]).reshape(m.shape)


def table_bit(ec, tables, col: np.ndarray, r: int, g: int) -> int:
    port = int(col[r, g])
    k = int(np.nonzero(ec.port[ec.first[r]:ec.first[r + 1]] == port)[0][0])
    return 1 << k


def test_megafly_leaves_see_every_spine_that_reaches_a_group(tmp_path):
    net, t = built(tmp_path, MEGAFLY)
    ec = equal_cost_ports(net, t, "test")
    counts = popcount(ec.gmask)
    leaves = [r for r in range(net.n_routers) if (net.ports.port_node[
        net.ports.router_port_start[r]:net.ports.router_port_start[r + 1]] >= 0).any()]
    per_pair = 4 * 4 // (5 - 1)  # links between two groups, one per spine
    for r in leaves:
        own = int(t.router_group[r])
        others = [g for g in range(5) if g != own]
        assert (counts[r, others] == per_pair).all(), counts[r]
    # the tables' own choice is always one of them
    for r in range(net.n_routers):
        for g in range(5):
            if t.gnext[r, g] >= 0:
                assert int(ec.gmask[r, g]) & table_bit(ec, t, t.gnext, r, g)


def test_a_dragonfly_with_one_link_per_group_pair_has_one_port_per_entry(tmp_path):
    net, t = built(tmp_path, {"kind": "dragonfly", "p": 2, "a": 4, "h": 2})
    ec = equal_cost_ports(net, t, "test")
    counts = popcount(ec.gmask)
    assert (counts[t.gnext >= 0] == 1).all()
    assert ec.bytes_per_router == 8 * (t.gnext.shape[1] + t.lnext.shape[1])


def test_dimension_order_tori_are_refused(tmp_path):
    net, t = built(tmp_path, {"kind": "torus", "dims": [4, 4]})
    with pytest.raises(RoutingError, match="dimension-order routing has one minimal port"):
        equal_cost_ports(net, t, "routing 'minimal' (spread: hash)")


def run(tmp_path, spread: str, seed: int = 2):
    return simulate(tmp_path, {
        "machine": {"topology": MEGAFLY, "router": {"vcs": 2}},
        "routing": {"algorithm": "minimal", "spread": spread},
        "workload": {"kind": "synthetic", "load": 0.7},
        "stop": {"warmup": "1us", "measure": "4us"}, "seed": seed})


def test_spreads_deliver_everything_and_lowest_starves_the_other_ports(tmp_path):
    acc = {}
    for spread in ("table", "lowest", "hash", "random"):
        _, raw, s, _, _ = run(tmp_path, spread)
        assert (raw.pkt_deliver >= 0).all()
        assert s.nonminimal_fraction == 0
        acc[spread] = s.accepted_load
    assert acc["random"] > 2 * acc["lowest"], acc
    assert acc["hash"] > 2 * acc["lowest"], acc


def test_random_spread_is_reproducible(tmp_path):
    a = run(tmp_path, "random", seed=5)[3]
    b = run(tmp_path, "random", seed=5)[3]
    assert (a["delivered_ps"] == b["delivered_ps"]).all()


def test_spread_on_a_torus_is_refused_before_the_run(tmp_path):
    from conftest import one_error, run_cli

    (tmp_path / "t.yaml").write_text(
        "machine: {topology: {kind: torus, dims: [4, 4]}}\n"
        "routing: {algorithm: minimal, spread: hash}\n"
        "workload: {kind: synthetic}\nstop: {warmup: 0ns, measure: 1us}\n")
    line = one_error(run_cli("run", "t.yaml", "--out", "o", cwd=tmp_path))
    assert "t.yaml: routing: routing 'minimal' (spread: hash): dimension-order" in line
    assert not (tmp_path / "o").exists()
