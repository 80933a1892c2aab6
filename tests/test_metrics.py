"""Exact topology metrics against closed forms, the ``federation topology`` command, and
``Network.validate()`` errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from itertools import combinations
from pathlib import Path

import numpy as np
import pytest
from scipy.sparse import csgraph

from federation.errors import TopologyError
from federation.network import NetworkBuilder
from federation.network.metrics import hop_counts, moore_bound, router_graph, topology_metrics

REPO = Path(__file__).resolve().parent.parent
QUICKSTART_MACHINE = REPO / "schemas" / "machines" / "quickstart-dragonfly.yaml"
METHODS = ["bits", "bits-irregular", "scipy"]


def graph(n: int, edges, nodes_per_router=1, radix: int | None = None, cls: str = "net"):
    """A network of ``n`` routers from an edge list (pairs may repeat: parallel cables)."""
    edges = list(edges)
    b = NetworkBuilder([cls])
    per = nodes_per_router if isinstance(nodes_per_router, list) else [nodes_per_router] * n
    deg = np.zeros(n, dtype=int)
    for a, c in edges:
        deg[a] += 1
        deg[c] += 1
    for r in range(n):
        b.add_routers(1, radix=radix if radix is not None else int(deg[r]) + per[r])
        b.attach_nodes(r, per[r])
    for a, c in edges:
        b.add_link(a, c, cls)
    return b.build()


def ring(n: int):
    return [(i, (i + 1) % n) for i in range(n)]


def hypercube(k: int):
    return [(v, v | (1 << i)) for v in range(2**k) for i in range(k) if not v & (1 << i)]


def petersen():
    outer = [(i, (i + 1) % 5) for i in range(5)]
    spokes = [(i, i + 5) for i in range(5)]
    inner = [(5 + i, 5 + (i + 2) % 5) for i in range(5)]
    return outer + spokes + inner


def brute_force(net):
    """Distances by SciPy's all-pairs search: the oracle for the histograms."""
    d = csgraph.shortest_path(router_graph(net), unweighted=True).astype(np.int64)
    return d


# --------------------------------------------------------------------------- closed forms


@pytest.mark.parametrize("method", [None, *METHODS])
@pytest.mark.parametrize("n", [3, 4, 9, 10, 64, 101])
def test_ring(n, method):
    m = topology_metrics(graph(n, ring(n)), method=method)
    assert m.diameter == n // 2
    # sum of distances from one vertex: n^2/4 (n even), (n^2 - 1)/4 (n odd)
    expected = n * n / (4 * (n - 1)) if n % 2 == 0 else (n + 1) / 4
    assert m.aspl == pytest.approx(expected, rel=1e-12)
    assert m.neighbours == (2, 2) and m.cable_degree == (2, 2)
    assert m.links == {"terminal": n, "net": n}
    assert m.cables == n and m.parallel_cables == 0
    assert sum(m.hop_histogram) == n * n
    assert m.node_mean_hops == pytest.approx(m.aspl, rel=1e-12)  # one node per router


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("n", [2, 5, 17])
def test_complete_graph(n, method):
    m = topology_metrics(graph(n, combinations(range(n), 2)), method=method)
    assert m.diameter == 1
    assert m.aspl == 1.0
    assert m.neighbours == (n - 1, n - 1)
    assert m.moore_diameter == 1 and m.moore_aspl == 1.0


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("k", [1, 2, 3, 6, 10])
def test_hypercube(k, method):
    m = topology_metrics(graph(2**k, hypercube(k)), method=method)
    assert m.routers == 2**k
    assert m.cables == k * 2 ** (k - 1)
    assert m.diameter == k
    assert m.aspl == pytest.approx(k * 2 ** (k - 1) / (2**k - 1), rel=1e-12)
    # binomial distance distribution: C(k, j) routers at distance j from each router
    from math import comb

    assert m.hop_histogram == tuple(2**k * comb(k, j) for j in range(k + 1))


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("n", [2, 3, 7, 50])
def test_path(n, method):
    m = topology_metrics(graph(n, [(i, i + 1) for i in range(n - 1)]), method=method)
    assert m.diameter == n - 1
    assert m.aspl == pytest.approx((n + 1) / 3, rel=1e-12)
    assert m.neighbours == ((1, 2) if n > 2 else (1, 1))


def test_single_router():
    b = NetworkBuilder([])
    b.add_routers(1, radix=4)
    b.attach_nodes(0, 3)
    m = topology_metrics(b.build())
    assert (m.routers, m.nodes, m.diameter, m.aspl) == (1, 3, 0, 0.0)
    assert m.node_mean_hops == 0.0 and m.node_diameter == 0
    assert m.cables == 0 and m.links == {"terminal": 3}


def test_parallel_cables_count_as_cables_not_as_neighbours():
    n = 8
    edges = ring(n) + ring(n) + [(0, 4), (0, 4), (0, 4)]
    m = topology_metrics(graph(n, edges))
    plain = topology_metrics(graph(n, ring(n) + [(0, 4)]))
    assert m.cables == 2 * n + 3 and m.links["net"] == 2 * n + 3
    assert m.parallel_cables == n + 2
    assert m.cable_degree == (4, 7)  # routers 0 and 4: 4 ring cables + 3 to each other
    assert m.ports_used == (5, 8)  # plus the terminal
    assert m.neighbours == (2, 3)  # distinct neighbours: parallel cables collapsed
    # distances ignore the second cable
    assert (m.diameter, m.aspl, m.hop_histogram) == (plain.diameter, plain.aspl,
                                                       plain.hop_histogram)


def test_port_figures():
    net = graph(4, ring(4), nodes_per_router=[3, 1, 0, 2], radix=8)
    m = topology_metrics(net)
    assert m.nodes == 6 and m.terminal_links == 6
    assert m.nodes_per_router == (0, 3)
    assert m.radix == (8, 8)
    assert m.ports_used == (2, 5)
    assert m.free_ports == (3, 6)
    assert np.array_equal(net.router_degree(), [5, 3, 2, 4])


def test_petersen_graph_meets_the_moore_bound():
    m = topology_metrics(graph(10, petersen()))
    assert (m.diameter, m.aspl) == (2, pytest.approx(15 / 9))
    assert (m.moore_diameter, m.moore_aspl) == (2, pytest.approx(15 / 9))


def test_moore_bound():
    assert moore_bound(1, 0) == (0, 0.0)
    assert moore_bound(2, 1) == (1, 1.0)
    assert moore_bound(3, 1) == (None, None)
    assert moore_bound(5, 2) == (2, pytest.approx(1.5))  # a 5-ring
    # G(2^k, k) circulant: degree 2k-1; n = 8192, degree 25: 1 + 25 + 600 < 8192 -> 3 levels
    d, a = moore_bound(8192, 25)
    assert d == 3 and a == pytest.approx((25 + 2 * 600 + 3 * (8191 - 625)) / 8191)


def test_star_with_nodes_on_leaves_only():
    """Irregular degrees and routers without nodes (a one-level fat tree)."""
    leaves, p = 12, 3
    net = graph(leaves + 1, [(0, i) for i in range(1, leaves + 1)],
                nodes_per_router=[0] + [p] * leaves)
    for method in [None, *METHODS]:
        m = topology_metrics(net, method=method)
        n = leaves + 1
        assert m.diameter == 2
        assert m.aspl == pytest.approx(2 * (n - 1) / n)
        big_n = leaves * p
        other_router_pairs = big_n * (big_n - 1) - leaves * p * (p - 1)
        assert m.node_mean_hops == pytest.approx(2 * other_router_pairs / (big_n * (big_n - 1)))
        assert m.node_diameter == 2


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_graphs_match_brute_force(seed):
    rng = np.random.default_rng(seed)
    n = 150
    edges = ring(n) + [tuple(e) for e in rng.integers(0, n, size=(200, 2)) if e[0] != e[1]]
    per = rng.integers(0, 4, size=n).tolist()
    per[0] = max(per[0], 1)
    net = graph(n, edges, nodes_per_router=per)
    d = brute_force(net)
    w = np.array(per)
    want = np.bincount(d.ravel())
    nodes = w.sum()
    same = (w * (w - 1)).sum()
    want_node_mean = float((w[:, None] * w[None, :] * d).sum() / (nodes * (nodes - 1)))
    carriers = np.nonzero(w)[0]
    for method in [None, *METHODS]:
        m = topology_metrics(net, method=method)
        assert m.hop_histogram == tuple(want.tolist())
        assert m.diameter == d.max()
        assert m.aspl == pytest.approx(d.sum() / (n * (n - 1)), rel=1e-12)
        assert m.node_mean_hops == pytest.approx(want_node_mean, rel=1e-12)
        assert m.node_diameter == d[np.ix_(carriers, carriers)].max()
        hist, node_hist = hop_counts(router_graph(net), w, method=method)
        assert node_hist[0] == same


def test_dragonfly_plugin(plugins):
    cls = plugins.topologies.get("dragonfly")
    net = cls(cls.Params(p=2, a=4, h=2)).build()
    net.validate()
    m = topology_metrics(net)
    assert (m.routers, m.nodes, m.groups) == (36, 72, 9)
    assert m.links == {"terminal": 72, "local": 54, "global": 36}
    assert m.cables == 90 and m.parallel_cables == 0
    assert m.radix == (7, 7) and m.ports_used == (7, 7) and m.free_ports == (0, 0)
    assert m.neighbours == (5, 5)
    assert m.diameter == 3
    assert m.hop_histogram == tuple(np.bincount(brute_force(net).ravel()).tolist())
    assert m.hop_histogram[1] == 36 * 5


def test_to_dict_is_json():
    m = topology_metrics(graph(6, ring(6), nodes_per_router=2))
    d = json.loads(json.dumps(m.to_dict()))
    assert d["routers"] == 6 and d["terminal_links"] == 12
    assert d["neighbours"] == {"min": 2, "max": 2}
    assert d["hop_histogram"] == [6, 12, 12, 6]
    assert d["links"] == {"terminal": 12, "net": 6}


# --------------------------------------------------------------------------- validation


def test_disconnected_graph_names_a_router():
    net = graph(6, [(0, 1), (1, 2), (2, 0), (3, 4), (4, 5), (5, 3)])
    with pytest.raises(TopologyError, match=r"not connected: router 3 cannot reach router 0"):
        net.validate()
    with pytest.raises(TopologyError, match=r"router 3"):
        topology_metrics(net)


def test_router_over_its_radix_names_the_router():
    b = NetworkBuilder(["net"])
    b.add_routers(3, radix=3)
    for r in range(3):
        b.attach_nodes(r, 1)
    b.add_link(0, 1, "net")
    b.add_link(1, 2, "net")
    b.add_link(1, 2, "net")
    with pytest.raises(TopologyError, match=r"router 1 uses 4 ports but its radix is 3"):
        b.build().validate()


def test_self_loop_names_the_router():
    net = graph(3, [(0, 1), (1, 2), (2, 2)], radix=8)
    with pytest.raises(TopologyError, match="router 2 has a cable to itself"):
        net.validate()
    assert topology_metrics(net).neighbours == (1, 2)  # the loop is no neighbour


# --------------------------------------------------------------------------- CLI


def cli(*args):
    return subprocess.run([sys.executable, "-c", "from federation.cli import entry; entry()",
                           *args], capture_output=True, text=True,
                          env={**os.environ,
                               "FEDERATION_DISABLE_PLUGIN_AUTOLOAD": "1"})


def test_cli_text():
    r = cli("topology", str(QUICKSTART_MACHINE))
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "dragonfly" in out and out.splitlines()[0].endswith(" -- network valid")
    assert "36 in 9 groups" in out
    assert "72 terminal, 54 local, 36 global" in out
    assert "diameter    3 router hops" in out
    assert "ASPL" in out and "2.3524" in out
    assert r.stderr == ""


def test_cli_json_machine_and_experiment(capsys):
    from federation.cli import main

    assert main(["topology", str(QUICKSTART_MACHINE), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert (d["routers"], d["nodes"], d["diameter"]) == (36, 72, 3)
    assert d["links"] == {"terminal": 72, "local": 54, "global": 36}
    assert d["radix"] == {"min": 7, "max": 7}
    assert d["topology"]["kind"] == "dragonfly"
    assert d["aspl"] == pytest.approx(2964 / 1260)
    # an experiment file: its machine
    assert main(["topology", str(REPO / "schemas" / "quickstart.yaml"), "--json"]) == 0
    d2 = json.loads(capsys.readouterr().out)
    assert {k: v for k, v in d2.items() if k != "source"} == {
        k: v for k, v in d.items() if k != "source"}


def test_cli_missing_file():
    r = cli("topology", "/nonexistent/machine.yaml")
    assert r.returncode == 2
    assert r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "file not found" in lines[0]
    assert "Traceback" not in r.stderr


def test_cli_invalid_network_is_one_error_line(monkeypatch, capsys):
    """A topology whose built graph breaks validate(): exit 2, one line naming the router."""
    from federation.cli import main
    from federation.plugins.topologies.dragonfly import Dragonfly

    def bad_build(self):
        b = NetworkBuilder(["local", "global"])
        b.add_routers(3, radix=2)
        for r in range(3):
            b.attach_nodes(r, 1)
        b.add_link(0, 1, "local")
        b.add_link(1, 2, "local")
        return b.build()

    monkeypatch.setattr(Dragonfly, "build", bad_build)
    assert main(["topology", str(QUICKSTART_MACHINE)]) == 2
    cap = capsys.readouterr()
    assert cap.out == ""
    lines = cap.err.strip().splitlines()
    assert len(lines) == 1
    assert "router 1 uses 3 ports but its radix is 2" in lines[0]
    assert "quickstart-dragonfly.yaml" in lines[0]


def test_cli_disconnected_machine_file(tmp_path, plugins):
    """With the ``graph_file`` plugin: a disconnected graph file is rejected naming a router."""
    if "graph_file" not in plugins.topologies.names():
        pytest.skip("the graph_file topology is not registered")
    cls = plugins.topologies.get("graph_file")
    fields = set(cls.Params.model_fields)
    if "path" not in fields:
        pytest.skip(f"graph_file parameters not recognised: {sorted(fields)}")
    (tmp_path / "g.txt").write_text("0 1\n1 2\n2 0\n3 4\n4 5\n5 3\n")
    graph_path = tmp_path / "g.txt"
    (tmp_path / "m.yaml").write_text(f"topology: {{kind: graph_file, path: {graph_path}}}\n")
    r = cli("topology", str(tmp_path / "m.yaml"))
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr
    assert "not connected" in lines[0] and "router 3" in lines[0]
