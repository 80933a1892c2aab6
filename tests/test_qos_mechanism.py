"""QoS traffic classes at router output ports: closed forms on one shared link.

The machine: a dragonfly of 2 routers per group, 2 nodes per router, every link at 1 GB/s
with no router delay, 1000 B packets: a packet takes exactly 1 us on any link.  Nodes 2 (even:
class 0) and 3 (odd: class 1) share router 1 and send to node 0 on router 0, so both classes
meet at router 1's port towards router 0 (the *bottleneck*).  The NICs inject at 2 GB/s over
terminal links of 0.5 us, so the first packets reach router 1 at 1 us and a saturating class
always has a packet waiting there when the bottleneck frees (no ties between an arrival and
the port's choice); the local links have no latency.  A packet that starts on the bottleneck
at ``t`` reaches node 0 at ``t + 2.5 us`` (1 us there, 1 us on node 0's ejection port, which
it has to itself, 0.5 us of terminal cable), so the tests read the bottleneck's send times
(in us, whole numbers) off the packets table.  Static windows start at t = 0.
"""

from __future__ import annotations

import types

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from federation import hookimpl
from federation.errors import ConfigError
from federation.pipeline.load import load_experiment
from federation.pipeline.point import prepare
from federation.plugin.registry import FederationPlugins
from federation.plugins.qos.bandwidth_caps import BandwidthCaps
from federation.plugins.qos.strict_priority import StrictPriorityQos
from federation.plugins.qos.weighted_round_robin import WeightedRoundRobin

US = 1_000_000  # ps
PKT = 1000


def by_parity(messages):  # noqa: ANN001
    return (messages.src % 2).astype(np.int16)


class ParityCaps(BandwidthCaps):
    name = "parity_caps"
    traffic_class = staticmethod(by_parity)  # type: ignore[assignment]


class ParityStrict(StrictPriorityQos):
    name = "parity_strict"
    traffic_class = staticmethod(by_parity)  # type: ignore[assignment]


class ParityWrr(WeightedRoundRobin):
    name = "parity_wrr"
    traffic_class = staticmethod(by_parity)  # type: ignore[assignment]


@hookimpl
def federation_register_qos(register) -> None:  # noqa: ANN001
    for cls in (ParityCaps, ParityStrict, ParityWrr):
        register(cls)


def plugins() -> FederationPlugins:
    module = types.ModuleType("qos_parity")
    module.federation_register_qos = federation_register_qos
    pm = FederationPlugins(load_entrypoints=False)
    pm.add(module, "qos_parity", "tests")
    return pm


def experiment(tmp_path, qos: dict, messages: list[dict], vcs: int = 4, **machine) -> object:
    link = {"bandwidth": "1GB/s", "latency": "0ns"}
    doc = {"machine": {"topology": {"kind": "dragonfly", "p": 2, "a": 2, "h": 1},
                       "links": {"terminal": {**link, "latency": "500ns"}, "local": link,
                                 "global": link},
                       "nic": {"bandwidth": "2GB/s"},
                       "router": {"vcs": vcs, "delay": "0ns"}, "packet_size": PKT,
                       "qos": qos, **machine},
           "routing": {"algorithm": "minimal"},
           "workload": {"kind": "messages", "messages": messages},
           "stop": {"warmup": "0ns", "measure": "500us"}}
    path = tmp_path / "e.yaml"
    path.write_text(yaml.safe_dump(doc))
    return load_experiment(path, plugins=plugins()).points[0]


def run(tmp_path, qos: dict, messages: list[dict], **kw):
    """``(bottleneck send times of class 0, of class 1, the raw result, the prepared
    point)``: times in us."""
    point = experiment(tmp_path, qos, messages, **kw)
    prep = prepare(point)
    raw = point.engine.run(prep.job)
    p = raw.packets.packets
    src = np.asarray(p["src"])
    start = np.asarray(p["delivered_ps"]) - 5 * US // 2
    assert (start % US == 0).all()
    t = start // US
    return np.sort(t[src % 2 == 0]), np.sort(t[src % 2 == 1]), raw, prep


def saturating(size: int, at: str = "0ns") -> list[dict]:
    return [{"at": at, "src": 2, "dst": 0, "size": size},
            {"at": at, "src": 3, "dst": 0, "size": size}]


def per_window(times: np.ndarray, w: int, n: int) -> list[int]:
    return [int(((times >= k * w) & (times < (k + 1) * w)).sum()) for k in range(n)]


def caps(c0: float, c1: float, window: str = "10us", kind: str = "static") -> dict:
    return {"kind": "parity_caps", "window": window, "window_kind": kind,
            "classes": [{"name": "high", "cap": c0}, {"name": "low", "cap": c1}]}


def bottleneck(prep) -> int:  # noqa: ANN001
    """Router 1's port towards router 0."""
    pt = prep.network.ports
    first, end = pt.router_port_start[1], pt.router_port_start[2]
    for o in range(first, end):
        if pt.port_router[pt.port_peer[o]] == 0:
            return int(o)
    raise AssertionError("no port from router 1 to router 0")


def test_caps_share_the_link_07_03_over_whole_windows(tmp_path):
    hi, lo, raw, prep = run(tmp_path, caps(0.7, 0.3), saturating(60 * PKT))
    # window 0 has 9 slots (1..9 us): 7 for the high class, the 2 left for the low one; every
    # whole window after it: exactly 7 and 3 (10 slots)
    assert per_window(hi, 10, 6)[:5] == [7, 7, 7, 7, 7]
    assert per_window(lo, 10, 6)[:5] == [2, 3, 3, 3, 3]
    assert list(hi[:8]) == [1, 2, 3, 4, 5, 6, 7, 10]
    o = bottleneck(prep)
    assert raw.port_class_bytes[o].tolist() == [60 * PKT, 60 * PKT]
    # inactive: the high class from its 8th slot to the window's end (2 us in window 0, 3 us
    # in windows 1..7; in window 8 it runs out of packets first); the low class reaches its
    # cap only at the window's last slot, and is served before the next arbitration
    assert raw.port_class_inactive[o].tolist() == [(2 + 7 * 3) * US, 0]


def test_window_reset_serves_the_inactive_class_at_the_reset_time(tmp_path):
    hi, lo, raw, prep = run(tmp_path, caps(0.7, 0.3), saturating(30 * PKT))
    # window [10, 20): the high class sends 10..16, turns inactive (cap reached while the low
    # class waits), the low class sends 17..19; at the reset, 20 us, the high class again
    assert list(hi[7:14]) == [10, 11, 12, 13, 14, 15, 16]
    assert list(lo[2:5]) == [17, 18, 19]
    assert hi[14] == 20
    # high: inactive from 8 (window 0) until 10, then from the 8th slot of windows 1, 2 and
    # 3 to their ends; 2 packets are left for window 4
    assert raw.port_class_inactive[bottleneck(prep)].tolist() == [(2 + 3 * 3) * US, 0]


def test_a_class_below_its_cap_leaves_the_rest_to_the_other(tmp_path):
    # the high class offers 0.4 of the link (a packet every 2.5 us), the low one saturates
    msgs = [{"at": f"{2500 * k}ns", "src": 2, "dst": 0, "size": PKT} for k in range(16)]
    msgs.append({"at": "0ns", "src": 3, "dst": 0, "size": 60 * PKT})
    hi, lo, raw, prep = run(tmp_path, caps(0.7, 0.3), msgs)
    counts_hi = per_window(hi, 10, 4)
    counts_lo = per_window(lo, 10, 4)
    assert counts_hi[1:4] == [4, 4, 4]  # every packet of the high class as it comes
    assert [a + b for a, b in zip(counts_hi, counts_lo, strict=True)][1:4] == [10, 10, 10]
    assert counts_lo[1:4] == [6, 6, 6]  # twice its cap: the link is never idle


def test_all_over_cap_round_robin(tmp_path):
    hi, lo, raw, prep = run(tmp_path, caps(0.3, 0.3), saturating(60 * PKT))
    # each reaches its cap (3 packets), then the two alternate: 5 and 5 per whole window.
    # The round-robin pointer carries over windows: window 0's last (9 us) served the high
    # class, so window 1's round-robin starts with the low one
    assert per_window(hi, 10, 5)[1:5] == [5, 5, 5, 5]
    assert per_window(lo, 10, 5)[1:5] == [5, 5, 5, 5]
    assert list(hi[:5]) == [1, 2, 3, 7, 9]
    assert list(hi[hi >= 10][:5]) == [10, 11, 12, 17, 19]
    assert list(lo[lo >= 10][:5]) == [13, 14, 15, 16, 18]


def bursty(kind: str, tmp_path):
    """The high class (cap 0.3 of a 10 us window) sends a burst of 6 packets that reaches the
    bottleneck at 7..12 us, straddling the edge at 10 us; the low class (cap 1) saturates."""
    msgs = [{"at": "6us", "src": 2, "dst": 0, "size": 6 * PKT},
            {"at": "0ns", "src": 3, "dst": 0, "size": 40 * PKT}]
    return run(tmp_path, caps(0.3, 1.0, kind=kind), msgs)


def test_static_window_lets_twice_the_cap_through_around_its_edge(tmp_path):
    hi, _, raw, prep = bursty("static", tmp_path)
    assert list(hi) == [7, 8, 9, 10, 11, 12]


def test_sliding_window_holds_the_burst_to_its_cap(tmp_path):
    hi, lo, raw, prep = bursty("sliding", tmp_path)
    # at 10 us the sends at 7, 8, 9 fill the last 10 us: inactive until the one at 7 expires
    # (17 us), then a send each time one expires
    assert list(hi) == [7, 8, 9, 17, 18, 19]
    for t in range(0, 30):
        assert ((hi >= t) & (hi < t + 10)).sum() <= 3
    inactive = raw.port_class_inactive[bottleneck(prep)]
    assert inactive.tolist() == [7 * US, 0]  # inactive from 10 to 17 us


def test_sliding_window_rings_grow(tmp_path):
    # a cap of 40 packets in a 100 us window: the ring of sends (8 slots at first) doubles
    hi, lo, raw, prep = run(tmp_path, caps(0.4, 0.6, window="100us", kind="sliding"),
                            saturating(120 * PKT))
    assert per_window(hi, 100, 2)[1] == 40
    assert per_window(lo, 100, 2)[1] == 60


def test_strict_priority(tmp_path):
    qos = {"kind": "parity_strict", "classes": [{"name": "high"}, {"name": "low"}]}
    hi, lo, raw, prep = run(tmp_path, qos, saturating(20 * PKT))
    assert list(hi) == list(range(1, 21))  # the high class never waits
    assert list(lo) == list(range(21, 41))
    assert raw.port_class_inactive is None


def test_weighted_round_robin_shares(tmp_path):
    qos = {"kind": "parity_wrr", "classes": [{"name": "a", "weight": 3},
                                             {"name": "b", "weight": 1}]}
    hi, lo, raw, prep = run(tmp_path, qos, saturating(60 * PKT))
    both = np.concatenate([hi, lo])
    assert len(np.unique(both)) == len(both)  # one packet per slot
    # deficit round-robin with 1000 B packets and 768 / 256 B quanta: 3 : 1 over the 80
    # slots in which both saturate (the high class's last packet leaves at 79 us)
    assert ((hi <= 80).sum(), (lo <= 80).sum()) == (60, 20)
    assert hi[-1] == 79 and list(lo[:4]) == [4, 8, 12, 17]


@pytest.mark.parametrize("vcs", [1, 2, 3, 8])
def test_vcs_must_be_classes_times_the_routings_need(tmp_path, vcs):
    """Below the routing's own need (1) the refusal is this one too: it was the routing's
    "set router.vcs: 2 or more", and 2 is refused here."""
    point = experiment(tmp_path, caps(0.7, 0.3), saturating(PKT), vcs=vcs)
    with pytest.raises(ConfigError) as exc:
        prepare(point)
    msg = str(exc.value)
    assert "machine.router.vcs" in msg and "'parity_caps' has 2 traffic classes" in msg
    assert f"router.vcs must be 2 x 2 = 4; it is {vcs}" in msg


def test_qos_policy_refuses_another_arbiter(tmp_path):
    with pytest.raises(ConfigError) as exc:
        experiment(tmp_path, caps(0.7, 0.3), saturating(PKT),
                   router={"vcs": 4, "delay": "0ns", "arbiter": {"kind": "round_robin"}})
    msg = str(exc.value)
    assert "machine.router.arbiter" in msg and "'parity_caps'" in msg
    assert "'round_robin'" in msg


def test_class_names_must_be_unique_and_at_needs_router_outputs(tmp_path):
    with pytest.raises(ConfigError) as exc:
        experiment(tmp_path, {"kind": "parity_strict", "classes": [{"name": "x"},
                                                                   {"name": "x"}]}, [])
    assert "machine.qos.classes" in str(exc.value) and "'x'" in str(exc.value)
    with pytest.raises(ConfigError) as exc:
        experiment(tmp_path, {**caps(0.7, 0.3), "at": ["injection"]}, [])
    assert "machine.qos.at" in str(exc.value) and "router_outputs" in str(exc.value)


def test_booksim_iq_takes_no_classes(tmp_path):
    point = experiment(tmp_path, caps(0.7, 0.3), saturating(PKT),
                       router={"vcs": 4, "model": "booksim_iq"})
    with pytest.raises(ConfigError) as exc:
        prepare(point)
    assert "machine.router.model" in str(exc.value)


def test_qos_none_gives_mains_quickstart_figures():
    """``qos: none`` runs the loop without QoS code: the quickstart's figures (measured on
    main before QoS, commit b15d135, at ``stop.measure=4us``) are unchanged, but for the
    packets created in the last 0.05 slot before the horizon (5 us = 55.05 slots), which the
    synthetic workload did not draw then: 2399 and 4279 delivered packets then, 4 and 6 more
    now (mean latency 851.4492623979912 and 1660.2579587123862 ns, 16557 and 38155 events,
    5610 and 9923 hops, 5328896 and 9462272 port bytes)."""
    from federation.pipeline.summary import summarize

    main = {0.5: (2403, 851.2840037570444, 0.5020666374731316, 16583, 5620, 5338112),
            0.9: (4285, 1659.6904790502795, 0.7534153247005726, 38208, 9938, 9476096)}
    exp = load_experiment(None, ["stop.measure=4us", "machine.qos.kind=none"])
    points = [p for p in exp.points if p.sweep["workload.load"] in main]
    assert len(points) == 2
    for point in points:
        prep = prepare(point)
        raw = point.engine.run(prep.job)
        s, _, ports = summarize(prep, raw)
        got = (int(s.packets_delivered), float(s.latency_ns.mean), float(s.accepted_load),
               int(raw.events), int(raw.packet_hops), int(ports["bytes"].sum()))
        assert got == main[point.sweep["workload.load"]]


def test_ugal_with_two_classes_delivers_everything(tmp_path):
    """An adaptive routing reads credits through the api in its packet's class's VCs; the run
    with two classes is proved deadlock-free with one class's VCs and delivers every packet."""
    from federation.pipeline.summary import summarize

    doc = {"machine": {"topology": {"kind": "dragonfly", "p": 2, "a": 4, "h": 2},
                       "router": {"vcs": 6}, "qos": caps(0.7, 0.3, window="500ns")},
           "routing": {"algorithm": "ugal"},
           "workload": {"kind": "synthetic", "pattern": "uniform", "load": 0.6},
           "stop": {"warmup": "0ns", "measure": "2us"}}
    path = tmp_path / "u.yaml"
    path.write_text(yaml.safe_dump(doc))
    point = load_experiment(path, plugins=plugins()).points[0]
    prep = prepare(point)
    raw = point.engine.run(prep.job)
    s, _, ports = summarize(prep, raw)
    assert s.packets_delivered == s.packets_generated > 500
    assert (raw.port_class_bytes.sum(axis=1) == raw.port_bytes).all()
    assert raw.port_class_bytes[:, 0].sum() > 0 and raw.port_class_bytes[:, 1].sum() > 0


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(c0=st.integers(1, 20), c1=st.integers(1, 20), w=st.sampled_from([4, 7, 10]),
       sliding=st.booleans())
def test_caps_property_work_conserving_and_guaranteed(tmp_path_factory, c0, c1, w, sliding):
    """Any caps (multiples of 0.05), window and kind: the bottleneck sends one packet per
    slot from 1 us on while packets wait (work-conserving); with static windows, in every
    whole window in which both classes still have packets, the high class gets at least its
    cap's packets and the low one at least its cap's of what is left.  Only windows whose
    caps hold a packet (cap x 1 GB/s x w >= 1000 B): shorter ones are refused
    (test_a_window_whose_caps_hold_less_than_a_packet_is_refused)."""
    assume(min(c0, c1) * w >= 20)
    tmp = tmp_path_factory.mktemp("prop")
    n = 30
    hi, lo, raw, prep = run(tmp, caps(c0 / 20, c1 / 20, window=f"{w}us",
                                      kind="sliding" if sliding else "static"),
                            saturating(n * PKT))
    both = np.sort(np.concatenate([hi, lo]))
    assert list(both) == list(range(1, 2 * n + 1))
    if sliding:
        return
    k0 = -(-round(c0 / 20 * w * PKT) // PKT)  # packets to reach the cap: ceil(capb / size)
    k1 = -(-round(c1 / 20 * w * PKT) // PKT)
    end = min(hi[-1], lo[-1])
    for k in range(1, end // w):
        if (k + 1) * w > end:
            break
        c_hi = int(((hi >= k * w) & (hi < (k + 1) * w)).sum())
        c_lo = int(((lo >= k * w) & (lo < (k + 1) * w)).sum())
        assert c_hi >= min(k0, w) and c_lo >= min(k1, w - k0)


def test_cli_refuses_a_wrong_vc_count_with_exit_2(tmp_path):
    """The shipped ``bandwidth_caps`` through ``federation run``: one message naming the file,
    ``router.vcs`` and both numbers; exit 2, no traceback, nothing written."""
    import os
    import subprocess
    import sys

    (tmp_path / "e.yaml").write_text(yaml.safe_dump({
        "machine": {"topology": {"kind": "dragonfly", "p": 1, "a": 2, "h": 1},
                    "router": {"vcs": 3},
                    "qos": {"kind": "bandwidth_caps", "window": "5us",
                            "classes": [{"name": "high", "cap": 0.7},
                                        {"name": "low", "cap": 0.3}]}},
        "workload": {"kind": "synthetic", "load": 0.2},
        "stop": {"warmup": "0ns", "measure": "1us"}}))
    env = {**os.environ, "FEDERATION_DISABLE_PLUGIN_AUTOLOAD": "1"}
    r = subprocess.run([sys.executable, "-c", "from federation.cli import entry; entry()",
                        "run", "e.yaml", "--out", "o"], capture_output=True, text=True,
                       cwd=tmp_path, env=env)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    assert "e.yaml" in r.stderr and "machine.router.vcs" in r.stderr
    assert "router.vcs must be 2 x 2 = 4; it is 3" in r.stderr
    assert not (tmp_path / "o" / "results.json").exists()


def test_a_job_run_twice_gives_the_same_result(tmp_path):
    """The loop writes into the arbiter's state (QoS counters, round-robin pointers): each
    run starts from a copy of the state its arbiter built, so a job run again (a benchmark's
    repeats) gives the same packets."""
    point = experiment(tmp_path, caps(0.7, 0.3, kind="sliding"), saturating(30 * PKT))
    prep = prepare(point)
    first = point.engine.run(prep.job)
    again = point.engine.run(prep.job)
    assert (np.asarray(first.packets.packets["delivered_ps"])
            == np.asarray(again.packets.packets["delivered_ps"])).all()
    assert (first.port_class_inactive == again.port_class_inactive).all()


@pytest.mark.parametrize(("n_vcs", "classes"), [(2, 2), (4, 2), (6, 3), (8, 4)])
def test_run_state_gives_each_input_queue_its_vcs_class(n_vcs: int, classes: int) -> None:
    """The arbitration reads a request's class off its input queue (``QosState.qclass``):
    class ``c`` owns VCs ``c * need .. (c + 1) * need - 1`` of every port, ``need = n_vcs /
    classes``, the VCs ``route_answer`` and the NICs put a class's packets on."""
    from federation.engine.qos import K_STRICT, new_state, run_state

    ports = 5
    st, is_qos = run_state(new_state(K_STRICT, ports, classes), np.ones(ports), n_vcs)
    assert is_qos
    need = n_vcs // classes
    qi = np.arange(ports * n_vcs)
    assert st.qclass.tolist() == ((qi % n_vcs) // need).tolist()


@pytest.mark.parametrize("kind", ["strict_priority", "weighted_round_robin"])
def test_a_nic_waiting_for_credit_keeps_its_packets_class_vcs(tmp_path, kind):
    """Terminal links ten times the network's: the NICs outrun the ring and wait for credit.
    With QoS at router outputs only, the NIC put its class's VC base on the waiting head
    packet at every try, so a class-1 head (base 2) tried VC 4 of 4 the second time and
    wrote past its port's rows (heap corruption; the process aborted after the results).
    Only one class is sent here, and the two classes' VCs are alike, so sending everything
    in class 1 must give exactly the run of class 0: the same packets at the same times."""
    from conftest import simulate

    from federation.plugins.qos import strict_priority, weighted_round_robin  # noqa: F401

    classes = [{"name": "high"}, {"name": "low"}]
    if kind == "weighted_round_robin":
        classes = [{**c, "weight": 1} for c in classes]

    def packets(cls: str) -> dict:
        doc = {"machine": {"topology": {"kind": "circulant", "n": 4, "jumps": [1]},
                           "links": {"terminal": {"bandwidth": "50GB/s"}},
                           "router": {"vcs": 4},
                           "qos": {"kind": kind, "classes": classes,
                                   "at": ["router_outputs"]}},
               "workload": {"kind": "synthetic", "pattern": "uniform", "load": 0.3},
               "classes": {"workload": cls},
               "stop": {"warmup": "0ns", "measure": "2us"}}
        _, raw, summary, table, ports = simulate(tmp_path, doc, name=f"{cls}.yaml")
        assert summary.packets_delivered == summary.packets_generated > 200
        assert int(np.asarray(ports["stall_ps"]).max()) > 0  # some port, a NIC too, waited
        return table

    high, low = packets("high"), packets("low")
    assert set(np.asarray(low["class"]).tolist()) == {1}
    for column in ("packet", "src", "dst", "created_ps", "delivered_ps", "hops"):
        assert np.array_equal(high[column], low[column]), column


# --------------------------------------------------------------------------- the window

CLI_DOC = {"machine": {"topology": {"kind": "dragonfly", "p": 1, "a": 2, "h": 1},
                       "router": {"vcs": 4},
                       "qos": {"kind": "bandwidth_caps", "window": "5us",
                               "classes": [{"name": "high", "cap": 0.7},
                                           {"name": "low", "cap": 0.3}]}},
           "workload": {"kind": "synthetic", "load": 0.2},
           "stop": {"warmup": "0ns", "measure": "1us"}}


@pytest.mark.parametrize("window", [1e-20, "0.1ps", "0.4ps", "0.6ps", "0.0009ns"])
@pytest.mark.parametrize("command", ["validate", "run"])
def test_cli_refuses_a_window_below_the_clock_unit(tmp_path, window, command):
    """The engine's window is whole ps: one below 1 ps ran as 1 ps while results.json kept
    the value written (fuzz 44).  ``validate`` and ``run`` refuse it in one line naming the
    field and the 1 ps minimum, and nothing is written."""
    from conftest import one_error, run_cli

    doc = {**CLI_DOC, "machine": {**CLI_DOC["machine"],
                                  "qos": {**CLI_DOC["machine"]["qos"], "window": window}}}
    (tmp_path / "e.yaml").write_text(yaml.safe_dump(doc))
    args = ["run", "e.yaml", "--out", "o"] if command == "run" else ["validate", "e.yaml"]
    line = one_error(run_cli(*args, cwd=tmp_path))
    assert "e.yaml: machine.qos.window: " in line
    assert "below the engine's clock unit (1ps" in line and "give at least 1ps" in line
    assert not (tmp_path / "o").exists()


def window_refusal(tmp_path, qos: dict, **machine) -> str:
    point = experiment(tmp_path, qos, saturating(PKT), **machine)
    with pytest.raises(ConfigError) as exc:
        prepare(point)
    return str(exc.value)


@pytest.mark.parametrize(("qos", "nic", "klass", "where", "least"), [
    # every link at 1 GB/s: 0.3 x 1 GB/s x W rounds to 1000 B from 3331667 ps on
    (caps(0.7, 0.3, window="1us"), "2GB/s", "'low' (cap 0.3, the smallest)", "link class",
     "3.331667us"),
    (caps(0.01, 0.99), "2GB/s", "'high' (cap 0.01, the smallest)", "link class", "99.95us"),
    # NICs slower than the links: with injection in `at` (the default) they bind ...
    (caps(0.7, 0.3, window="1us"), "0.5GB/s", "'low'", "the NICs", "6.663334us"),
    # ... at router outputs only, they are not arbitrated by the policy
    ({**caps(0.7, 0.3, window="1us"), "at": ["router_outputs"]}, "0.5GB/s", "'low'",
     "link class", "3.331667us"),
])
def test_a_window_whose_caps_hold_less_than_a_packet_is_refused(tmp_path, qos, nic, klass,
                                                                  where, least):
    """A window in which some class's byte cap at some port the policy arbitrates is less
    than a packet made the caps meaningless: caps 0.7 / 0.3 and 0.01 / 0.99 gave the same
    packets, byte for byte (fuzz 44).  Refused before the run, naming the field, the class
    of the smallest cap, the slowest port and the shortest window that works."""
    msg = window_refusal(tmp_path, qos, nic={"bandwidth": nic})
    assert "e.yaml: machine.qos.window: " in msg
    assert f"class {klass}" in msg and f"at {where}" in msg
    assert "less than one 1000 B packet (packet_size)" in msg
    assert msg.endswith(f"give at least {least}")


def test_a_window_no_clock_can_hold_says_what_to_change(tmp_path):
    """Caps of 0.001 at 1 MB/s hold a 10000 B packet only from 9.9995 s on, past the clock range
    (2**43 ps): the refusal says so instead of asking for a window the field refuses."""
    link = {"bandwidth": "1MB/s", "latency": "0ns", "buffer": "20000B"}
    msg = window_refusal(tmp_path, caps(0.999, 0.001, window="1s"), packet_size=10_000,
                         links={"terminal": link, "local": link, "global": link})
    assert "class 'low' (cap 0.001, the smallest)" in msg
    assert "it would take 9.9995s, beyond the engine's clock range" in msg
    assert msg.endswith("raise the bandwidth or the cap, or lower packet_size")


@pytest.mark.parametrize("kind", ["static", "sliding"])
def test_a_window_at_exactly_the_minimum_is_accepted(tmp_path, kind):
    """The minimum the refusal gives is exact (whole ps, the engine's rounding of the caps):
    a window 1 ps shorter is refused, and at the minimum the run delivers everything and
    the caps shape it (swapped caps give other send times, which a too-short window did
    not)."""
    assert "give at least 3.331667us" in window_refusal(
        tmp_path, caps(0.7, 0.3, window="3.331666us", kind=kind))
    hi, lo, _, _ = run(tmp_path, caps(0.7, 0.3, window="3.331667us", kind=kind),
                       saturating(20 * PKT))
    assert len(hi) == len(lo) == 20
    hi2, _, _, _ = run(tmp_path, caps(0.3, 0.7, window="3.331667us", kind=kind),
                       saturating(20 * PKT))
    assert list(hi) != list(hi2)


def test_cli_refuses_a_short_window_in_a_machine_file(tmp_path):
    """The check needs only the machine: ``validate`` of the machine file alone refuses it,
    as ``validate`` and ``run`` of an experiment on it do (the same line), nothing written."""
    from conftest import one_error, run_cli

    machine = {**CLI_DOC["machine"], "qos": {**CLI_DOC["machine"]["qos"], "window": "10ns"}}
    (tmp_path / "m.yaml").write_text(yaml.safe_dump(machine))
    (tmp_path / "e.yaml").write_text(yaml.safe_dump({**CLI_DOC, "machine": "m.yaml"}))
    line = one_error(run_cli("validate", "m.yaml", cwd=tmp_path))
    # the dragonfly's global links (4.7 GiB/s) are the slowest; 512 B packets
    assert line.startswith("error: m.yaml: qos.window: a window of 10ns gives class 'low'")
    assert "link class 'global'" in line and line.endswith("give at least 337.853ns")
    assert one_error(run_cli("validate", "e.yaml", cwd=tmp_path)) == line
    assert one_error(run_cli("run", "e.yaml", "--out", "o", cwd=tmp_path)) == line
    assert not (tmp_path / "o").exists()
    machine["qos"]["window"] = "337.853ns"
    (tmp_path / "m.yaml").write_text(yaml.safe_dump(machine))
    r = run_cli("validate", "e.yaml", cwd=tmp_path)
    assert r.returncode == 0, r.stderr


@settings(max_examples=300, deadline=None)
@given(cap=st.floats(1e-3, 1.0), bw=st.floats(1e6, 1e12), packet=st.integers(1, 100_000))
def test_min_window_is_the_engines_own_cap_boundary(cap, bw, packet):
    """``min_window_ps`` answers what the engine does: at that window the byte cap the run
    sets (``set_caps``) holds the packet, one ps shorter it does not (windows the clock can
    hold: a longer minimum is only reported as beyond it)."""
    from federation.engine.qos import K_CAPS, new_state, set_caps
    from federation.models.limits import TIME_LIMIT_PS
    from federation.plugins.qos.bandwidth_caps import min_window_ps

    ser = np.array([1e12 / bw])
    w = min_window_ps(cap, float(ser[0]), packet)
    if w >= TIME_LIMIT_PS:
        return

    def capb(window: int) -> int:
        st_ = new_state(K_CAPS, 1, 1, window_ps=window, caps=[cap])
        set_caps(st_, ser)
        return int(st_.capb[0])

    assert capb(w) >= packet
    assert w == 1 or capb(w - 1) < packet
