"""Facts about the native engine: closed-form latencies, conservation, saturation, determinism."""

from __future__ import annotations

import re

import numpy as np
import pytest

from federation.models.units import PS_PER_S

# Figures chosen so every serialization time is an exact number of picoseconds:
# 512 B at 5.12 GB/s = 100 ns.
BW = 5.12e9
LAT = {"terminal": 10e-9, "local": 30e-9, "global": 100e-9}
DELAY = 50e-9


def machine(p=2, a=4, h=2, vcs=3, global_bw=BW, **topo):
    return {
        "topology": {"kind": "dragonfly", "p": p, "a": a, "h": h, **topo},
        "links": {
            "terminal": {"bandwidth": BW, "latency": LAT["terminal"]},
            "local": {"bandwidth": BW, "latency": LAT["local"]},
            "global": {"bandwidth": global_bw, "latency": LAT["global"]},
        },
        "router": {"delay": DELAY, "vcs": vcs},
        "packet_size": 512,
    }


def walk(prep, src_node: int, dst_node: int, via: int) -> list[str]:
    """Link classes along the route the tables give (independent of the engine)."""
    net, t = prep.network, prep.job.tables
    pt = net.ports
    r = int(net.node_router[src_node])
    dr = int(net.node_router[dst_node])
    classes = ["terminal"]
    phase = 0 if via >= 0 else 1
    for _ in range(20):
        if r == dr:
            break
        if phase == 0 and t.router_group[r] == via:
            phase = 1
        if phase == 0:
            port = t.gnext[r, via]
        elif t.router_group[r] != t.router_group[dr]:
            port = t.gnext[r, t.router_group[dr]]
        else:
            port = t.lnext[r, t.router_local[dr]]
        classes.append(net.link_classes[pt.port_class[port]])
        r = int(pt.port_router[pt.port_peer[port]])
    assert r == dr
    classes.append("terminal")
    return classes


def closed_form_ps(classes: list[str], size: int = 512) -> int:
    ser = round(size / BW * PS_PER_S)
    routers = len(classes) - 1
    return sum(ser + round(LAT[c] * PS_PER_S) for c in classes) + routers * round(DELAY * PS_PER_S)


def one_message(src, dst, routing="minimal", size=512, **m):
    return {
        "machine": machine(**m),
        "routing": {"algorithm": routing},
        "workload": {"kind": "messages", "messages": [{"at": "1us", "src": src, "dst": dst,
                                                       "size": size}]},
        "stop": {"warmup": 0, "measure": "10us"},
    }


@pytest.mark.parametrize("dst", [1, 3, 9, 17, 71])
def test_zero_load_latency_minimal_equals_closed_form(sim, dst):
    prep, raw, s, packets, _ = sim(one_message(0, dst))
    classes = walk(prep, 0, dst, -1)
    expected = closed_form_ps(classes)
    assert packets["delivered_ps"][0] - packets["created_ps"][0] == expected
    # network latency equals total latency at zero load (the NIC was idle)
    assert packets["injected_ps"][0] == packets["created_ps"][0]
    assert s.mean_hops == len(classes) - 2


def test_same_router_path_is_two_terminal_links_and_one_router():
    # node 0 -> node 1 share router 0: 2 x (100 ns + 10 ns) + 50 ns
    assert closed_form_ps(["terminal", "terminal"]) == 270_000


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_zero_load_latency_valiant_equals_closed_form(sim, seed):
    doc = one_message(0, 71, routing="valiant")
    doc["seed"] = seed
    prep, raw, s, packets, _ = sim(doc)
    via = int(packets["via_group"][0])
    assert via not in (0, 8)  # neither the source nor the destination group
    classes = walk(prep, 0, 71, via)
    assert classes.count("global") == 2  # non-minimal: two global hops
    assert not packets["minimal"][0]
    assert packets["delivered_ps"][0] - packets["created_ps"][0] == closed_form_ps(classes)


def test_multi_packet_message_pipelines(sim):
    # 4 packets on an idle path: the last arrives 3 bottleneck serializations after the first
    prep, raw, s, packets, _ = sim(one_message(0, 1, size=2048))
    d = np.sort(packets["delivered_ps"])
    assert len(d) == 4
    assert np.all(np.diff(d) == 100_000)
    assert s.message_completion_ns_mean == pytest.approx(270 + 300)


@pytest.mark.parametrize("routing", ["minimal", "valiant"])
def test_conservation_every_byte_delivered_and_link_bytes_add_up(sim, routing):
    doc = {
        "machine": machine(),
        "routing": {"algorithm": routing},
        "workload": {"kind": "synthetic", "pattern": "uniform", "load": 0.6},
        "stop": {"warmup": "1us", "measure": "5us"},
    }
    prep, raw, s, packets, ports = sim(doc)
    pt = prep.network.ports
    assert s.packets_delivered == s.packets_generated > 1000
    assert s.bytes_delivered == s.bytes_injected
    size = packets["size"]
    router_ports = (pt.port_router >= 0) & (pt.port_router[pt.port_peer] >= 0)
    assert ports["bytes"][router_ports].sum() == (packets["hops"] * size).sum()
    nic = pt.port_router < 0
    assert ports["bytes"][nic].sum() == size.sum()  # injected
    to_nic = (pt.port_router >= 0) & (pt.port_router[pt.port_peer] < 0)
    assert ports["bytes"][to_nic].sum() == size.sum()  # ejected
    assert ports["packets"][nic].sum() == len(size)
    # per-port counters are consistent
    assert np.all(ports["busy_ps"] <= raw.end_ps)
    assert np.all(ports["peak_input_occupancy_bytes"] >= 0)


def worst_case(routing: str, load: float):
    return {
        "machine": machine(),
        "routing": {"algorithm": routing},
        "workload": {"kind": "synthetic", "pattern": "group_shift", "load": load},
        "stop": {"warmup": "5us", "measure": "20us"},
    }


def test_worst_case_minimal_saturates_near_one_over_ap_and_valiant_near_half(sim):
    a, p = 4, 2
    _, _, smin, _, _ = sim(worst_case("minimal", 0.6))
    _, _, sval, _, _ = sim(worst_case("valiant", 0.6))
    # one global link per group pair carries all a*p nodes' traffic: 1/(a*p) = 0.125
    assert smin.accepted_load == pytest.approx(1 / (a * p), rel=0.15)
    # Valiant crosses two global links per packet: theory just under 0.5
    assert 0.38 < sval.accepted_load < 0.5
    assert sval.accepted_load > 3 * smin.accepted_load
    assert smin.packets_delivered == smin.packets_generated
    assert sval.packets_delivered == sval.packets_generated


def test_uniform_low_load_minimal_latency_below_valiant(sim):
    def doc(routing):
        return {
            "machine": machine(),
            "routing": {"algorithm": routing},
            "workload": {"kind": "synthetic", "pattern": "uniform", "load": 0.1},
            "stop": {"warmup": "1us", "measure": "10us"},
        }

    _, _, smin, _, _ = sim(doc("minimal"))
    _, _, sval, _, _ = sim(doc("valiant"))
    assert smin.latency_ns.mean < sval.latency_ns.mean
    assert smin.mean_hops < sval.mean_hops
    assert smin.nonminimal_fraction == 0
    assert sval.nonminimal_fraction > 0.8


def test_minimal_needs_two_vcs_valiant_three(sim):
    from federation.errors import ConfigError

    doc = worst_case("valiant", 0.1)
    doc["machine"] = machine(vcs=2)
    with pytest.raises(ConfigError, match="machine.router.vcs: .*needs 3 virtual channels"):
        sim(doc)
    doc = worst_case("minimal", 0.1)
    doc["machine"] = machine(vcs=1)
    with pytest.raises(ConfigError, match="machine.router.vcs: .*needs 2 virtual channels"):
        sim(doc)


@pytest.mark.parametrize("model", ["default", "booksim_iq"])
def test_deadlock_is_reported_naming_ports(model):
    """A routing that declares too few VCs deadlocks; the engine names the stuck ports.  The
    booksim_iq routers turn cycles while they hold packets, so their deadlock is a quiet:
    nothing lands for ``quiet_cycles`` cycles (without it the run turned cycles until the
    clock's end: over ten minutes at p = 4)."""
    from federation.engine.iq import quiet_cycles
    from federation.engine.native import LinkFigures, NativeRun, Packets, run_native
    from federation.errors import SimulationError
    from federation.models.machine import RouterConfig

    # a 4-router ring with shortest paths all on VC 0 and tiny buffers deadlocks under load
    from federation.network import NetworkBuilder
    from federation.network.routes import shortest_path_routes
    from federation.plugin.components import RouteTables

    b = NetworkBuilder(["ring"])
    rs = b.add_routers(4, radix=4)
    for r in rs:
        b.attach_nodes(r, 1)
        b.add_link(r, (r + 1) % 4, "ring")
    net = b.build()
    t: RouteTables = shortest_path_routes(net)
    # force clockwise 2-hop routes (0->2 via 1, 1->3 via 2, ...) all on VC 0: a cycle
    nbr = {}
    pt = net.ports
    for port in range(pt.n_router_ports):
        if pt.port_link[port] >= 0:
            nbr[(int(pt.port_router[port]), int(pt.port_router[pt.port_peer[port]]))] = port
    for r in range(4):
        for d in range(4):
            if r != d:
                t.gnext[r, d] = nbr[(r, (r + 1) % 4)]
    t.port_vc_bump[:] = 0
    n = 400
    src = np.arange(n) % 4
    packets = Packets(time_ps=np.zeros(n, np.int64), src=src, dst=(src + 2) % 4,
                      size=np.full(n, 512, np.int64), msg=np.arange(n), via=np.full(n, -1))
    fig = LinkFigures(bandwidth=BW, latency=1e-8, buffer=512)
    router = None if model == "default" else RouterConfig(model="booksim_iq", vcs=1)
    job = NativeRun(net, {"terminal": fig, "ring": fig}, BW, 5e-8, 1, t, packets,
                    router=router)
    with pytest.raises(SimulationError,
                       match=r"deadlock.*undelivered.*Stuck ports: router") as e:
        run_native(job)
    # each router's ring output waits for credit (booksim_iq: its VC held by a packet that
    # cannot cross; the message counted none before)
    assert "4 output ports wait for credits" in str(e.value), str(e.value)
    if model == "booksim_iq":
        # one cycle = one packet on the link (100 ns); the last credit lands 2 cycles after
        # the last grant, and the routers hold packets quiet_cycles later
        quiet = quiet_cycles(1, False)
        assert f"held packets {quiet} cycles later" in str(e.value), str(e.value)
        m = re.search(r"nothing moved or landed after cycle (\d+)", str(e.value))
        assert m, str(e.value)
        last = int(m.group(1))
        now = int(re.search(r"deadlock at t=(\d+)ps", str(e.value)).group(1))
        assert (now - 1) // 100_000 == last + quiet + 1


def test_same_seed_identical_other_seed_different(sim):
    doc = {
        "machine": machine(),
        "routing": {"algorithm": "valiant"},
        "workload": {"kind": "synthetic", "pattern": "uniform", "load": 0.5},
        "stop": {"warmup": "1us", "measure": "4us"},
        "seed": 7,
    }
    r1 = sim(doc)
    r2 = sim(doc)
    for k in r1[3]:
        assert np.array_equal(r1[3][k], r2[3][k]), k
    for k in r1[4]:
        assert np.array_equal(r1[4][k], r2[4][k]), k
    assert r1[2] == r2[2]
    r3 = sim({**doc, "seed": 8})
    assert not np.array_equal(r1[3]["delivered_ps"], r3[3]["delivered_ps"]) or not np.array_equal(
        r1[3]["dst"], r3[3]["dst"])


def test_results_files_byte_identical_for_same_seed(tmp_path):
    from federation.cli import main

    outs = []
    for i in range(2):
        out = tmp_path / f"o{i}"
        assert main(["run", "--set", "stop.measure=3us", "--out", str(out)]) == 0
        outs.append(out)
    for name in ["results.json", "packets-0.parquet", "ports-4.parquet"]:
        assert (outs[0] / name).read_bytes() == (outs[1] / name).read_bytes(), name


@pytest.mark.parametrize("topology,vcs,classes", [
    ({"kind": "torus", "dims": [8]}, 4, ["torus"]),
    ({"kind": "torus", "dims": [4, 4]}, 4, ["torus"]),
    ({"kind": "fattree", "k": 2, "n": 3}, 2, ["leaf", "spine"]),
])
def test_valiant_phases_use_separate_vcs_and_never_deadlock(sim, tmp_path, topology, vcs,
                                                            classes):
    """Dateline and up/down rules restart in Valiant's second phase, so it gets its own VCs
    (the proof passes: on a torus since stop 33, when the turn began to forget the packet's
    dimension, tests/test_deadlock.py), and a run at 0.95 load with one packet per VC buffer
    delivers everything."""
    from federation.errors import ConfigError

    doc = {
        "machine": {"topology": topology, "router": {"vcs": vcs},
                    "links": {c: {"buffer": 512} for c in classes}},  # one packet per VC
        "routing": {"algorithm": "valiant"},
        "workload": {"kind": "synthetic", "pattern": "uniform", "load": 0.95},
        "stop": {"warmup": "0.5us", "measure": "5us"},
    }
    prep, raw, s, _, _ = sim(doc)
    assert prep.job.tables.vcs_required == vcs
    assert s.packets_delivered == s.packets_generated
    doc["machine"]["router"]["vcs"] = vcs - 1
    with pytest.raises(ConfigError, match=f"needs {vcs} virtual channels"):
        sim(doc)


def test_ugal_reads_queue_occupancy_minimal_when_idle_valiant_under_adversarial_load(sim):
    """UGAL decides per packet from the occupancy of the first minimal and Valiant ports."""
    def doc(pattern, load, routing="ugal"):
        return {
            "machine": machine(),
            "routing": {"algorithm": routing},
            "workload": {"kind": "synthetic", "pattern": pattern, "load": load},
            "stop": {"warmup": "5us", "measure": "20us"},
        }

    _, _, idle, _, _ = sim(doc("uniform", 0.05))
    _, _, wc, _, _ = sim(doc("group_shift", 0.3))
    _, _, wc_min, _, _ = sim(doc("group_shift", 0.3, "minimal"))
    # empty queues: (almost) everything minimal, as minimal routing would
    assert idle.nonminimal_fraction < 0.05
    # the single global link saturates at 1/(a*p) = 0.125 with minimal routing; UGAL senses the
    # queue and diverts enough traffic to carry the whole offered load
    assert wc_min.accepted_load < 0.14
    assert wc.accepted_load == pytest.approx(wc.offered_load, rel=0.05)
    assert wc.nonminimal_fraction > 0.4
    assert wc.latency_ns.mean < wc_min.latency_ns.mean / 5


def test_traffic_beyond_the_clock_range_is_refused(sim):
    from federation.errors import ConfigError

    doc = one_message(0, 1)
    doc["workload"]["messages"][0]["at"] = "1s"  # past the clock: refused by the loader
    doc["stop"] = {"warmup": 0, "measure": "10s"}
    with pytest.raises(ConfigError, match=r"stop.measure: .*clock range \(8796093022208 ps"):
        sim(doc)
    # inside the window but too close to its end for the packet to arrive
    doc["stop"] = {"warmup": 0, "measure": "8.7s"}
    doc["workload"]["messages"][0]["at"] = "8.7s"
    doc["machine"]["links"]["global"]["latency"] = "0.2s"
    with pytest.raises(ConfigError, match="stop.measure: a packet created at the end of the"):
        sim(doc)
