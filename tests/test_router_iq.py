"""``router.model: booksim_iq`` against closed forms: its pipeline, its allocators' conflicts on one
router and its internal speedup (see :mod:`federation.engine.iq`).

A BookSim-like machine: one cycle = 1 ns = one 64-byte packet on every link, terminal links of
1 cycle, local 10, global 100.  A packet injected in cycle ``t`` reaches its first router in
``t + 1 + 1``; with speedup 2 a router forwards it in one cycle (VC allocation and switch
allocation in the two steps of its arrival cycle, the switch in the next, sent at that cycle's
end), so each channel costs its latency plus one and each router one cycle: BookSim2's own
zero-load figures (its dragonfly's shortest packet, node to node on one router, takes 5).
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import yaml
from conftest import from_almost_nothing, simulate

from federation.engine.iq import cycle_bounds
from federation.errors import ConfigError
from federation.pipeline.load import load_experiment

NS = 1000  # ps


def machine(speedup: float = 2.0, **router) -> dict:
    return {
        "topology": {"kind": "dragonfly", "p": 4, "a": 2, "h": 1},
        "links": {c: {"bandwidth": "64GB/s", "latency": f"{lat}ns", "buffer": "16KiB"}
                  for c, lat in (("terminal", 1), ("local", 10), ("global", 100))},
        "router": {"model": "booksim_iq", "vcs": 2, "speedup": speedup,
                   "credit_delay": "2ns", **router},
        "packet_size": "64B",
    }


def run(tmp_path, messages: list[tuple[int, int, int]], speedup: float = 2.0, **router):
    """Deliveries (ps) of one 64-byte packet per ``(cycle created, src, dst)``, by packet."""
    doc = {"machine": machine(speedup, **router),
           "workload": {"kind": "messages", "messages": [
               {"at": f"{t}ns", "src": s, "dst": d, "size": "64B"} for t, s, d in messages]},
           "stop": {"warmup": "0ns", "measure": "1us"},
           "outputs": {"packets": True, "messages": False}}
    _, raw, _, packets, _ = simulate(tmp_path, doc)
    order = packets["packet"].argsort()
    return [int(x) for x in packets["delivered_ps"][order]], raw


def test_zero_load_latency_is_booksims(tmp_path):
    # nodes 0-3 on router 0, 4-7 on router 1 (group 0), 8-11 on router 2 (group 1)
    got, _ = run(tmp_path, [(0, 0, 1)])
    assert got == [5 * NS]  # 2 channels of 1 + 1, one router
    got, _ = run(tmp_path, [(0, 0, 5)])  # terminal, local, terminal channels, two routers
    assert got == [((1 + 1) + (10 + 1) + (1 + 1) + 2) * NS]


def test_the_default_cycle_sends_a_packet_a_cycle_on_the_fastest_link(tmp_path):
    """``router.cycle`` defaults to one packet on the fastest link, rounded to whole ps; that
    link then takes exactly one cycle a packet.  (Before stop 47, 512 B at 5.25 GiB/s, 90,826.4
    ps rounded down to 90,826, took two cycles: half the bandwidth, the first packet at 5
    cycles.)"""
    link = {"bandwidth": "5.25GiB/s", "latency": "1ns"}
    doc = {"machine": {"topology": {"kind": "dragonfly", "p": 4, "a": 2, "h": 1},
                       "links": {c: link for c in ("terminal", "local", "global")},
                       "router": {"model": "booksim_iq", "vcs": 3}, "packet_size": "512B"},
           "workload": {"kind": "messages",
                        "messages": [{"at": "0ns", "src": 1, "dst": 0, "size": "5KiB"}]},
           "stop": {"warmup": "0ns", "measure": "2us"},
           "outputs": {"packets": True, "messages": False}}
    _, _, _, packets, _ = simulate(tmp_path, doc)
    cycle = round(512 * 1e12 / (5.25 * 2**30))
    assert cycle == 90826
    got = np.sort(packets["delivered_ps"])
    assert len(got) == 10
    # two channels of one cycle each (their 1 ns latency is 0 cycles) and one router cycle
    assert got[0] == 3 * cycle
    assert (np.diff(got) == cycle).all()  # the terminal link: a packet a cycle


def test_two_inputs_one_output_one_waits_a_cycle(tmp_path):
    # two NICs of router 0 send to one node of it in the same cycle: they arrive together,
    # and the output port (one packet per cycle) takes one, then the other
    got, _ = run(tmp_path, [(0, 0, 3), (0, 1, 3)])
    assert sorted(got) == [5 * NS, 6 * NS]


def test_speedup_one_adds_a_cycle_per_router(tmp_path):
    # with one internal step per cycle, VC allocation, switch allocation and the switch take
    # a cycle each: arrival in cycle 2, sent at the end of cycle 4, at the node in cycle 6
    # (speedup 2: 5), so a router costs two cycles in the zero-load sum of the module
    # docstring, where a channel's "+ 1" counts its arrival cycle (docs/architecture.md)
    got, _ = run(tmp_path, [(0, 0, 1)], speedup=1.0)
    assert got == [6 * NS]


def test_speedup_bounds_an_input_vc(tmp_path):
    # one input VC (injection VC zero) forwards a packet per two internal steps: one a cycle
    # with speedup 2, one every two cycles with speedup 1
    burst = [(t, 0, 1) for t in range(6)]
    got, _ = run(tmp_path, burst, injection_vc="zero")
    assert got == [(5 + t) * NS for t in range(6)]
    got, _ = run(tmp_path, burst, speedup=1.0, injection_vc="zero")
    assert got == [(6 + 2 * t) * NS for t in range(6)]


@pytest.mark.parametrize(("router", "message"), [
    ({"speedup": 3.0}, "machine.router: speedup apply to router.model: booksim_iq only"),
    ({"model": "booksim_iq", "delay": "5ns"},
     "machine.router: router.delay applies to the default router model"),
    ({"model": "booksim_iq", "switching": "cut_through"},
     "switching: cut_through applies to the default router model"),
])
def test_router_model_fields_are_checked(tmp_path, router, message):
    doc = {"machine": {"topology": {"kind": "dragonfly", "p": 2, "a": 2, "h": 1},
                       "router": router}}
    path = tmp_path / "x.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_experiment(path)


@pytest.mark.parametrize("router", [{}, {"model": "booksim_iq", "speedup": 1.5}])
def test_router_block_round_trips(router):
    """A resolved document names the fields of the model in use only, and loads again."""
    from federation.models.machine import RouterConfig

    dumped = RouterConfig.model_validate(router).model_dump(mode="json")
    assert RouterConfig.model_validate(dumped).model_dump(mode="json") == dumped
    if not router:
        assert not {"model", "cycle", "speedup", "credit_delay"} & set(dumped)
    else:
        assert "delay" not in dumped and dumped["speedup"] == 1.5


def test_an_overloaded_network_is_slow_not_deadlocked(tmp_path):
    """Far past saturation (worst-case traffic at 20 times minimal routing's saturation), with
    one packet of buffer per VC, the global links' long credit round trips and random
    injection VCs, the routers hold packets for long stretches in which little moves; the
    routing is proved deadlock-free, so the deadlock watch (``iq.quiet``) must not fire, and
    every packet is delivered."""
    doc = {"machine": machine(injection_vc="random"),
           "routing": {"algorithm": "minimal"},
           "workload": {"kind": "synthetic", "pattern": "group_shift", "load": 0.6},
           "stop": {"warmup": "200ns", "measure": "1us"},
           "outputs": {"packets": False, "messages": False}}
    for link in doc["machine"]["links"].values():
        link["buffer"] = "64B"
    _, raw, s, _, _ = simulate(tmp_path, doc)
    assert s.packets_delivered == s.packets_generated > 1000
    assert s.accepted_load < 0.1  # saturated: the global links carry the whole load


def test_a_crowded_cycle_fits_queue_and_pool_grown_from_nothing(tmp_path, monkeypatch):
    """One booksim_iq router cycle pushes an event per grant and per send and births a packet
    per NIC: far more than the ``ROOM`` events and the few rows the default model's events
    need.  Started from an event queue and a packet pool of almost nothing, the driver must
    grow both before such a cycle, not let it write past their ends: the run is the same,
    packet for packet, as one started at the usual sizes."""
    doc = {"machine": machine(2.0),
           "routing": {"algorithm": "minimal"},
           "workload": {"kind": "synthetic", "pattern": "uniform", "load": 0.9},
           "stop": {"warmup": "0ns", "measure": "300ns"},
           "outputs": {"packets": True, "messages": False}}
    # 16 nodes and 16 + 3 + 2 = 21 ports per router: up to 64 events and 16 births a cycle
    doc["machine"]["topology"] = {"kind": "dragonfly", "p": 16, "a": 4, "h": 2}
    prep, _, usual, packets, _ = simulate(tmp_path, doc)
    net = prep.job.network
    assert cycle_bounds(2.0, net.ports.router_port_start, net.node_router) == (21 * 3 + 1, 16)
    from_almost_nothing(monkeypatch, records=4096)  # the queue and pool are the subject here
    _, _, grown, packets2, _ = simulate(tmp_path, doc)
    assert usual.packets_delivered == grown.packets_delivered > 10_000
    for column in ("packet", "src", "dst", "created_ps", "delivered_ps", "hops"):
        assert np.array_equal(packets[column], packets2[column]), column


@pytest.mark.parametrize(("router", "count", "note"), [
    ({"model": "booksim_iq"}, 1, "links of class 'global' (4.7GiB/s) hold a 512 B packet 2 "
     "cycle(s) of 90826 ps for 101455 ps of data, so they carry 56% of their bandwidth"),
    ({"model": "booksim_iq", "cycle": "1ns"}, 0, None),  # 91 and 102 cycles: 99.8, 99.5 %
    ({"model": "booksim_iq", "cycle": "200ns"}, 4, "the NICs (5.25GiB/s) hold a 512 B "
     "packet 1 cycle(s) of 200000 ps for 90826 ps of data, so they carry 45%"),
    ({}, 0, None),
])
def test_a_link_the_cycle_slows_is_noted(tmp_path, router, count, note):
    """booksim_iq sends whole cycles a packet: at the default cycle (one 512 B packet on the
    5.25 GiB/s links) a 4.7 GiB/s global link takes two cycles, 56 % of its bandwidth.  That
    was documented but silent; the loader now says it, naming the class, for validate and
    run alike, and nothing when every link keeps 99 % of its bandwidth."""
    from conftest import run_cli

    doc = {"machine": {"topology": {"kind": "dragonfly", "p": 2, "a": 4, "h": 2},
                       "router": router, "packet_size": 512},
           "workload": {"kind": "synthetic", "load": 0.1},
           "stop": {"warmup": "0.1us", "measure": "0.2us"}}
    (tmp_path / "e.yaml").write_text(yaml.safe_dump(doc))
    r = run_cli("validate", "e.yaml", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    notes = [x for x in r.stderr.splitlines() if x.startswith("note: router.model")]
    assert len(notes) == count and all("common divisor" in x for x in notes)
    assert note is None or any(note in x for x in notes)


@pytest.mark.parametrize(("workload", "nic", "note"), [
    ({"kind": "synthetic", "load": 0.1, "message_size": 64}, None,
     "the NICs (5.25GiB/s) hold a 64 B packet 1 cycle(s) of 90826 ps for 11353 ps of data, so "
     "they carry 12% of their bandwidth; its messages are shorter than packet_size 512 B"),
    ({"kind": "messages", "messages": [{"src": 0, "dst": 5, "size": 512}]}, "25GB/s",
     "the NICs (23.3GiB/s) hold a 512 B packet 3 cycle(s) of 8000 ps for 20480 ps of data, so "
     "they carry 85% of their bandwidth"),
])
def test_the_note_uses_the_cycle_the_engine_runs(tmp_path, workload, nic, note):
    """The default cycle is one ``packet_size`` packet on the fastest link whatever the
    messages (``iq.default_cycle`` of the machine's packet size): the note took the messages'
    size for it (a cycle of 11,353 ps where the engine ran 90,826, and nothing said of links
    carrying 12 %), and said nothing for a ``messages`` workload."""
    from conftest import run_cli

    m = {"topology": {"kind": "dragonfly", "p": 2, "a": 4, "h": 2},
         "router": {"model": "booksim_iq"}, "packet_size": 512}
    if nic:
        m["links"] = {c: {"bandwidth": "64GB/s"} for c in ("terminal", "local", "global")}
        m["nic"] = {"bandwidth": nic}
    doc = {"machine": m, "workload": workload, "stop": {"warmup": "0ns", "measure": "0.2us"}}
    (tmp_path / "e.yaml").write_text(yaml.safe_dump(doc))
    r = run_cli("validate", "e.yaml", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert any(note in x for x in r.stderr.splitlines()), r.stderr


def _checked(tmp_path, doc: dict) -> None:
    """``validate``'s checks of ``doc`` (the preflight of every point)."""
    from federation.pipeline.point import preflight

    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(doc))
    preflight(load_experiment(path), 8 * 2**30)


@pytest.mark.parametrize("cycle", ["0.1ps", "0.6ps", "10s"])
def test_a_cycle_outside_the_engines_range_is_refused_with_the_file(tmp_path, cycle):
    """The engine clocks whole picoseconds up to its clock range: 0.1 ps was a
    ZeroDivisionError while the file was read, 0.6 ps and 10 s passed ``validate`` and were
    refused by the run (10 s naming no field)."""
    m = machine(cycle=cycle)
    with pytest.raises(ConfigError, match=r"machine\.router\.cycle: .* is outside 1 ps \.\. "):
        _checked(tmp_path, {"machine": m, "workload": {"kind": "synthetic", "load": 0.1},
                            "stop": {"warmup": "0ns", "measure": "1us"}})


@pytest.mark.parametrize("jobs", [False, True])
def test_rank_programs_are_refused_before_the_run(tmp_path, jobs):
    """They were refused only by the engine when the run started (a sweep's earlier points
    had run), naming no field."""
    pingpong = {"kind": "pingpong", "sizes": [64], "iterations": 2, "nodes": [0, 5]}
    doc = {"machine": machine()}
    if jobs:
        doc["jobs"] = [{"name": "uniform", "workload": {"kind": "synthetic", "load": 0.1},
                        "placement": {"kind": "contiguous", "count": 4}},
                       {"name": "pp", "workload": pingpong,
                        "placement": {"kind": "contiguous", "count": 2}}]
        doc["stop"] = {"warmup": "0ns", "measure": "1us"}
    else:
        doc["workload"] = pingpong
    what = "job 'pp' ('pingpong')" if jobs else "its workload ('pingpong')"
    with pytest.raises(ConfigError, match=re.escape(
            f"machine.router.model: router.model booksim_iq clocks the NICs of open-loop "
            f"traffic only; {what} runs rank programs")):
        _checked(tmp_path, doc)


def _late(at: str) -> dict:
    """A cycle of 0.1 s, every figure one cycle: a packet from node 4 (router 1) to node 12
    (router 3) crosses the machine's longest route, local -> global -> local, in 14 cycles
    (5 channels of 2, 4 routers of 1); it is listed at ``at``, past a 1 s window."""
    link = {"bandwidth": "640B/s", "latency": "0.1s", "buffer": "16KiB"}
    m = machine(cycle="0.1s")
    m["links"] = {c: link for c in ("terminal", "local", "global")}
    m["router"].pop("credit_delay")
    return {"machine": m,
            "workload": {"kind": "messages", "messages": [
                {"at": "0s", "src": 1, "dst": 2, "size": "64B"},
                {"at": at, "src": 4, "dst": 12, "size": "64B"}]},
            "stop": {"warmup": "0s", "measure": "1s"},
            "outputs": {"packets": True, "messages": False}}


def test_the_clock_bound_is_the_zero_load_trip_in_whole_cycles(tmp_path):
    """The preflight follows the latest packet along the longest route in the router's whole
    cycles, and a listed message past the window is followed too: at 7.3 s it is delivered
    at 8.7 s, exactly that bound; at 7.4 s (8.8 s, past the clock's 8.796 s) it is refused
    before the run, naming the workload.  The bound counted one cycle per router and the
    exact serialisations (7 cycles here) from the window's end, so a 1 s cycle or a late
    message ran until the engine refused an event at the clock's end."""
    _, _, _, packets, _ = simulate(tmp_path, _late("7.3s"))
    assert packets["delivered_ps"].tolist() == [500_000_000_000, 8_700_000_000_000]
    with pytest.raises(ConfigError, match=re.escape(
            "workload: a packet created at 7.4s (the last message listed) needs 1.4s more at "
            "zero load")):
        _checked(tmp_path, _late("7.4s"))
