"""The SimGrid adapter: platform, closed-form figures, results, refusals, locating the module.

SimGrid is required: a test that needs it *fails* when it is missing (see
:mod:`federation.adapters.simgrid.testing`), unless ``FEDERATION_SIMGRID_OPTIONAL=1``.
The platform and refusal tests need no SimGrid at all.

Machine of most tests: the 72-node dragonfly ``p: 2, a: 4, h: 2`` with the dragonfly's default
figures (terminal and local 5.25 GiB/s, global 4.7 GiB/s; latencies 10, 30 and 100 ns; router
delay 50 ns).  Node 0 to node 43 crosses three cables (local, global, local).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from types import SimpleNamespace

import numpy as np
import pytest
import yaml
from conftest import one_error, run_cli, simulate

from federation.adapters.simgrid import locate
from federation.adapters.simgrid.engine import SimGrid
from federation.adapters.simgrid.platform import (
    MAX_NETPOINTS,
    node_routes,
    platform_xml,
    port_figures,
    router_path,
)
from federation.adapters.simgrid.testing import require_simgrid
from federation.errors import ConfigError

DRAGONFLY = {"topology": {"kind": "dragonfly", "p": 2, "a": 4, "h": 2}}


def experiment(messages: list[dict], engine: str = "simgrid", **extra: object) -> dict:
    return {"machine": DRAGONFLY, "engine": {"kind": engine},
            "workload": {"kind": "messages", "messages": messages},
            "stop": {"warmup": "0ns", "measure": "1us"}, **extra}


@pytest.fixture
def simgrid() -> None:
    require_simgrid()


def closed_form_ps(prep, src: int, dst: int, size: int) -> float:
    """An idle flow: the path's summed latency plus size over its slowest link."""
    job = prep.job
    routes, _ = node_routes(job.network, job.tables, np.array([src]), np.array([dst]))
    bw, lat = port_figures(job.network, job.links, job.nic_bandwidth, job.router_delay_s)
    path = routes.path(0)
    return (lat[path].sum() + size / bw[path].min()) * 1e12


# --------------------------------------------------------------------------- platform


def test_platform_has_our_links_and_routes(tmp_path):
    """Hosts, routers, one split-duplex link per cable, two one-way links per node, and every
    route exactly the ports our minimal tables choose, with the router delay on links into a
    router."""
    prep, *_ = simulate(tmp_path, experiment([{"src": 0, "dst": 43, "size": 64}], "native"))
    job, net = prep.job, prep.network
    src = np.array([0, 0, 5, 43, 71])
    dst = np.array([43, 1, 60, 0, 2])
    routes, pair_of = node_routes(net, job.tables, src, dst)
    root = ET.fromstring(platform_xml(net, job.links, job.nic_bandwidth, job.router_delay_s,
                                      routes))
    zone = root.find("zone")
    assert zone.get("routing") == "Full"
    assert len(zone.findall("host")) == net.n_nodes == 72
    assert len(zone.findall("router")) == net.n_routers == 36
    links = {e.get("id"): e for e in zone.findall("link")}
    split = [k for k, e in links.items() if e.get("sharing_policy") == "SPLITDUPLEX"]
    assert len(split) == net.n_links and len(links) == net.n_links + 2 * net.n_nodes
    delay = job.router_delay_s
    for cls, fig in job.links.items():
        c = int(np.nonzero(net.link_class == net.class_index(cls))[0][0]) if cls != "terminal" \
            else None
        if c is not None:  # a cable: class figures, router delay in its latency
            e = links[f"c{c}"]
            assert float(e.get("bandwidth").removesuffix("Bps")) == fig.bandwidth
            assert float(e.get("latency").removesuffix("s")) == fig.latency + delay
    pt = net.ports
    nic, term = links[f"p{pt.nic_port[0]}"], links[f"p{pt.node_port[0]}"]
    assert float(nic.get("latency").removesuffix("s")) == job.links["terminal"].latency + delay
    assert float(term.get("latency").removesuffix("s")) == job.links["terminal"].latency
    assert float(nic.get("bandwidth").removesuffix("Bps")) == job.nic_bandwidth
    # routes: only the pairs used, each the NIC, our cables in order, the terminal port
    xml_routes = zone.findall("route")
    assert len(xml_routes) == len(set(zip(src.tolist(), dst.tolist(), strict=True)))
    for r in xml_routes:
        s, d = int(r.get("src")[1:]), int(r.get("dst")[1:])
        cables = router_path(net, job.tables, int(net.node_router[s]), int(net.node_router[d]))
        ids = [(c.get("id"), c.get("direction")) for c in r.findall("link_ctn")]
        assert ids[0] == (f"p{pt.nic_port[s]}", None)
        assert ids[-1] == (f"p{pt.node_port[d]}", None)
        assert [int(i[1:]) for i, _ in ids[1:-1]] == [int(pt.port_link[p]) for p in cables]
        for (_, direction), p in zip(ids[1:-1], cables, strict=True):
            up = int(pt.port_router[p]) == int(net.link_src[pt.port_link[p]])
            assert direction == ("UP" if up else "DOWN")
    assert routes.hops[pair_of[0]] == 3  # 0 -> 43: local, global, local


# --------------------------------------------------------------------------- figures


@pytest.mark.parametrize("size", [64, 2**20])
def test_zero_load_message_is_latency_plus_size_over_bottleneck(simgrid, tmp_path, size):
    """A single flow on an idle path completes at its summed latency plus size over the slowest
    link, to the picosecond."""
    prep, raw, s, packets, ports = simulate(
        tmp_path, experiment([{"src": 0, "dst": 43, "size": size}]))
    want = closed_form_ps(prep, 0, 43, size)
    assert abs(int(raw.pkt_deliver.max()) - want) <= 1
    assert (packets["hops"] == 3).all()
    # every byte accounted once on each port of the path, nowhere else
    path = node_routes(prep.network, prep.job.tables, np.array([0]), np.array([43]))[0].path(0)
    assert (ports["bytes"][path] == size).all() and ports["bytes"].sum() == size * path.size


def test_two_flows_share_a_saturated_cable_fairly(simgrid, tmp_path):
    """Nodes 0 and 1 send S each through the one local cable from router 0 to router 1: each
    gets half of it, so both finish together at latency + 2 S / bandwidth."""
    size = 2**19
    prep, raw, *_ = simulate(tmp_path, experiment([{"src": 0, "dst": 2, "size": size},
                                                   {"src": 1, "dst": 3, "size": size}]))
    local = prep.job.links["local"].bandwidth
    lat = closed_form_ps(prep, 0, 2, 0)
    want = lat + 2 * size / local * 1e12
    done = np.unique(raw.pkt_deliver)
    assert done.size == 1 and abs(int(done[0]) - want) <= 1000  # 1 ns: SimGrid's precision


def test_sharing_is_weighted_by_each_flows_route_latency(simgrid, tmp_path):
    """SimGrid's CM02 gives each flow the sharing penalty of its route's summed latency
    (``weight-S`` 0 drops only the bandwidth term), so max-min shares a link in proportion to
    1 / latency: node 0 sends 1 MiB to node 1 (its own router) and to node 2 (a local cable
    away), both through its NIC link.  The first flow runs alone until the second's latency
    has passed, then the two share the link in the ratio of their inverse latencies, then the
    second runs alone: SimGrid's times to the picosecond, not an equal split's."""
    size = 2**20
    doc = experiment([{"src": 0, "dst": 1, "size": size}, {"src": 0, "dst": 2, "size": size}],
                     engine="simgrid")
    doc["engine"] = {"kind": "simgrid", "precision": "1ps"}
    prep, raw, *_ = simulate(tmp_path, doc)
    l1, l2 = (closed_form_ps(prep, 0, d, 0) / 1e12 for d in (1, 2))
    bw = prep.job.links["terminal"].bandwidth
    assert prep.job.links["local"].bandwidth == bw == prep.job.nic_bandwidth and l1 < l2
    r1 = bw * (1 / l1) / (1 / l1 + 1 / l2)  # while both share the NIC link
    t1 = l2 + (size - bw * (l2 - l1)) / r1
    t2 = t1 + (size - (bw - r1) * (t1 - l2)) / bw
    done = np.sort(np.unique(raw.pkt_deliver))
    assert done.size == 2 and abs(done - np.array([t1, t2]) * 1e12).max() <= 2
    equal = l2 + 2 * (size - bw * (l2 - l1)) / bw  # the first flow's end in an equal split
    assert done[0] < equal * 1e12 - 50e6  # ... 50 us later (the link is busy to t2 in both)


def test_window_counters_spread_a_flow_over_its_transfer(simgrid, tmp_path):
    """A 1 MiB flow over a 1 us window: each port of its path counts the share of its bytes
    and packets the window holds of the transfer, below what the port carries in 1 us.  Every
    byte of a flow that started in the window counted before: 1 MiB, 190 times the link's
    capacity, beside a utilisation of 0.999."""
    size = 2**20
    prep, raw, s, _, ports = simulate(tmp_path, experiment([{"src": 0, "dst": 2,
                                                             "size": size}]))
    fin = int(raw.pkt_deliver.max())
    share = 1e6 / fin  # the window [0, 1 us) of the transfer [0, fin)
    path = node_routes(prep.network, prep.job.tables, np.array([0]), np.array([2]))[0].path(0)
    bw, _ = port_figures(prep.network, prep.job.links, prep.job.nic_bandwidth,
                         prep.job.router_delay_s)
    assert raw.port_pkts[path[0]] > 1
    for p in path:
        assert ports["bytes_window"][p] == round(size * share) <= bw[p] * 1e-6
        assert ports["packets_window"][p] == round(raw.port_pkts[p] * share)
    others = np.setdiff1d(np.arange(ports["bytes_window"].shape[0]), path)
    assert (ports["bytes_window"][others] == 0).all()


def test_synthetic_traffic_runs_and_reports_like_native(simgrid, tmp_path):
    """Synthetic traffic on SimGrid: every packet delivered, never before the idle flow's
    bound, and minimal hops equal to the native engine's for the same seed."""
    doc = experiment([], **{"workload": {"kind": "synthetic", "pattern": "uniform",
                                         "load": 0.2},
                            "stop": {"warmup": "0.5us", "measure": "2us"}})
    prep, raw, s, packets, _ = simulate(tmp_path, doc)
    nprep, nraw, ns, npackets, _ = simulate(tmp_path, {**doc, "engine": {"kind": "native"}},
                                            name="native.yaml")
    assert s.packets_delivered == s.packets_generated == ns.packets_generated > 0
    assert (packets["hops"] == npackets["hops"]).all()
    assert s.mean_hops == ns.mean_hops
    assert (raw.pkt_deliver > packets["created_ps"]).all()


def test_results_record_simgrid_and_are_byte_identical(simgrid, tmp_path):
    """results.json says engine simgrid and its version; the same experiment twice gives the
    same bytes."""
    exp = tmp_path / "e.yaml"
    exp.write_text(yaml.safe_dump(experiment([{"src": 0, "dst": 43, "size": 4096},
                                              {"at": "10ns", "src": 5, "dst": 43,
                                               "size": 4096}])))
    docs = []
    for out in ("a", "b"):
        r = run_cli("run", str(exp), "--out", str(tmp_path / out), cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        docs.append((tmp_path / out / "results.json").read_bytes())
    assert docs[0] == docs[1]
    point = json.loads(docs[0])["points"][0]
    assert point["engine"] == "simgrid"
    assert point["components"]["engine"]["program"].startswith("SimGrid ")
    assert (tmp_path / "a" / "messages-0.parquet").read_bytes() == \
        (tmp_path / "b" / "messages-0.parquet").read_bytes()


# --------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(("algorithm", "command"), [("valiant", "run"), ("ugal", "validate"),
                                                    ("par", "validate"),
                                                    ("ugal_global", "validate")])
def test_refuses_routing_without_one_path_per_pair(tmp_path, algorithm, command):
    exp = tmp_path / "e.yaml"
    doc = experiment([{"src": 0, "dst": 43, "size": 64}],
                     routing={"algorithm": algorithm})
    doc["machine"] = {**DRAGONFLY, "router": {"vcs": 6}}
    exp.write_text(yaml.safe_dump(doc))
    args = ("--out", str(tmp_path / "o")) if command == "run" else ()
    line = one_error(run_cli(command, str(exp), *args, cwd=tmp_path))
    assert line.startswith(f"error: {exp}: routing.algorithm: the simgrid engine needs one "
                           "path per source and destination")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(("spread", "how"), [
    ("random", "draws a random one per packet and hop"),
    ("hash", "picks one by a hash of the destination and the current router"),
    ("lowest", "takes the lowest-numbered one")])
def test_refuses_minimal_spread_naming_spread_not_the_algorithm(tmp_path, spread, how):
    """``minimal`` with a ``spread`` other than ``table`` was refused as "routing.algorithm:
    ... 'minimal' is adaptive; use routing: {algorithm: minimal}", which it already was."""
    exp = tmp_path / "e.yaml"
    doc = experiment([{"src": 0, "dst": 43, "size": 64}],
                     routing={"algorithm": "minimal", "spread": spread})
    exp.write_text(yaml.safe_dump(doc))
    line = one_error(run_cli("validate", str(exp), cwd=tmp_path))
    assert line == (f"error: {exp}: routing.spread: the simgrid engine routes every source and "
                    f"destination along the one path of the route tables; spread {spread!r} "
                    f"of routing 'minimal' {how} among the equal-cost minimal ports; the "
                    "simgrid engine supports spread: table only (the default: leave spread "
                    "out, or use the native engine)")


def test_refuses_a_swept_spread_naming_the_sweep_entry(tmp_path):
    exp = tmp_path / "e.yaml"
    doc = experiment([{"src": 0, "dst": 43, "size": 64}],
                     routing={"algorithm": "minimal"},
                     sweep={"routing.spread": ["table", "random"]})
    exp.write_text(yaml.safe_dump(doc))
    line = one_error(run_cli("validate", str(exp), cwd=tmp_path))
    assert line.startswith(f"error: {exp}: sweep.routing.spread: the simgrid engine routes "
                           "every source"), line
    assert line.endswith("(sweep point 1: routing.spread=random)"), line


@pytest.mark.parametrize(("router", "field"), [
    ({"arbiter": {"kind": "round_robin"}}, "arbiter"),
    # it once ran, giving the default router's figure (no allocators in a flow model)
    ({"model": "booksim_iq"}, "model")])
def test_refuses_an_arbiter_or_router_model_it_cannot_model(tmp_path, router, field):
    exp = tmp_path / "e.yaml"
    doc = experiment([{"src": 0, "dst": 43, "size": 64}])
    doc["machine"] = {**DRAGONFLY, "router": router}
    exp.write_text(yaml.safe_dump(doc))
    line = one_error(run_cli("validate", str(exp), cwd=tmp_path))
    assert line.startswith(f"error: {exp}: machine.router.{field}: the simgrid engine shares "
                           "links fluidly"), line


def test_every_sweep_point_is_checked_before_the_first_runs(tmp_path):
    """A sweep whose second point SimGrid cannot represent is refused before the first point
    runs, naming the sweep entry and the point; nothing is written."""
    exp = tmp_path / "e.yaml"
    doc = experiment([{"src": 0, "dst": 43, "size": 64}],
                     sweep={"routing.algorithm": ["minimal", "valiant"]})
    doc["machine"] = {**DRAGONFLY, "router": {"vcs": 6}}
    exp.write_text(yaml.safe_dump(doc))
    line = one_error(run_cli("run", str(exp), "--out", str(tmp_path / "o"), cwd=tmp_path))
    assert line.startswith(f"error: {exp}: sweep.routing.algorithm: the simgrid engine needs")
    assert line.endswith("(sweep point 1: routing.algorithm=valiant)")
    assert not (tmp_path / "o").exists()


def test_refuses_a_platform_above_the_netpoint_limit(tmp_path):
    exp = tmp_path / "e.yaml"
    doc = experiment([{"src": 0, "dst": 1, "size": 64}])
    doc["machine"] = {"topology": {"kind": "dragonfly", "p": 4, "a": 8, "h": 8}}  # 65 groups
    exp.write_text(yaml.safe_dump(doc))
    line = one_error(run_cli("validate", str(exp), cwd=tmp_path))
    assert f"machine.topology: the simgrid engine builds a Full zone of at most {MAX_NETPOINTS}" \
        in line and "2080 nodes and 520 routers" in line


def test_refuses_more_routes_than_the_limit_before_simgrid_starts(simgrid, tmp_path,
                                                                  monkeypatch):
    """One route per node pair the traffic uses: above the limit the run stops before any
    platform is written (the limit is lowered here to 1 pair instead of 200,000)."""
    from federation.adapters.simgrid import engine

    monkeypatch.setattr(engine, "MAX_ROUTES", 1)
    monkeypatch.setattr(engine, "_run_worker", lambda *a: pytest.fail("SimGrid started"))
    with pytest.raises(ConfigError, match="the traffic uses 2 distinct node pairs; the simgrid "
                       "engine writes one route per pair and stops at 1"):
        simulate(tmp_path, experiment([{"src": 0, "dst": 43, "size": 64},
                                       {"src": 0, "dst": 44, "size": 64}]))


def test_refuses_qos_by_its_field():
    point = SimpleNamespace(source="e.yaml", sweep={}, routing=SimpleNamespace(name="minimal"),
                            machine=SimpleNamespace(source="m.yaml",
                                                    qos=SimpleNamespace(name="strict")))
    with pytest.raises(ConfigError) as e:
        SimGrid(SimGrid.Params()).check(point, None)
    assert str(e.value).startswith("m.yaml: qos.kind: the simgrid engine has no QoS model")


def test_not_installed_is_refused_naming_the_engine(tmp_path):
    exp = tmp_path / "e.yaml"
    exp.write_text(yaml.safe_dump(experiment([{"src": 0, "dst": 1, "size": 64}])))
    r = run_cli("validate", str(exp), cwd=tmp_path,
                env={locate.ENV_MODULE: str(tmp_path / "missing.so")})
    line = one_error(r)
    assert line.startswith(f"error: {exp}: engine.kind: engine 'simgrid' is not installed "
                           "here: install it with 'apt-get install -y python3-simgrid'")


# --------------------------------------------------------------------------- locating


def test_explicit_module_path_wins_and_missing_means_not_found(tmp_path, monkeypatch):
    fake = tmp_path / "simgrid.so"
    fake.write_bytes(b"")
    monkeypatch.setenv(locate.ENV_MODULE, str(fake))
    assert locate.module_file() == str(fake)
    monkeypatch.setenv(locate.ENV_MODULE, str(tmp_path / "absent.so"))
    assert locate.module_file() is None and not SimGrid.found()


def test_import_adds_no_system_folder_to_the_path(simgrid):
    """Loading Debian's module brings in that one file: numpy and pydantic still come from
    this environment, and no dist-packages folder joins sys.path."""
    code = ("import sys, numpy, pydantic; "
            "from federation.adapters.simgrid.locate import import_simgrid; "
            "sg = import_simgrid(); import numpy as n2; "
            "print(sg.simgrid_version); print(numpy.__file__); print(pydantic.__file__); "
            "print(any('dist-packages' in p for p in sys.path))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={**os.environ}, timeout=120)
    assert r.returncode == 0, r.stderr
    version, np_file, pd_file, on_path = r.stdout.split()
    assert version.split(".")[0] in ("3", "4")
    assert np_file.startswith(sys.prefix) and pd_file.startswith(sys.prefix)
    assert on_path == "False"
