"""The stores the loop fills and the driver grows: the event queue (its side and overflow
heaps, the calendar's blocks and its run), the packet rows, the credit returns' pool and the
delivery records.  The loop keeps room before each event for what that event may add
(``queue.ROOM`` events, two births, two credit returns, one record; a booksim_iq router's
cycle more, ``iq.cycle_bounds``) and hands back to the driver when it runs short.  An event
that could add more than the loop kept room for would write past an array's end: the run
would crash, or silently reuse a row or a block.  So each scenario here runs twice, once at
the usual starting sizes and once from almost nothing (every store grows many times during
the run), and must give the same packets, to the picosecond.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import from_almost_nothing, simulate

LINKS = {c: {"bandwidth": "4GB/s", "latency": "20ns", "buffer": "2KiB"}
         for c in ("terminal", "local", "global")}
#: 16 nodes per router: a NIC's injection, a router's arbitration and credit returns all
#: crowd here (72 routers of 16 + 3 + 2 ports)
WIDE = {"topology": {"kind": "dragonfly", "p": 16, "a": 4, "h": 2}, "links": LINKS,
        "router": {"vcs": 4, "delay": "10ns"}, "packet_size": "256B"}
SMALL = {**WIDE, "topology": {"kind": "dragonfly", "p": 4, "a": 4, "h": 2}}
CAPS = {"kind": "bandwidth_caps", "classes": [{"name": "high", "cap": 0.7},
                                              {"name": "low", "cap": 0.3}],
        "window": "1us", "at": ["router_outputs", "injection"]}
STOP = {"warmup": "0ns", "measure": "2us"}
OUT = {"packets": True, "messages": False}
ALLREDUCE = {"kind": "allreduce", "size": "8KiB", "iterations": 2}

SCENARIOS = {
    "open_loop_uniform": {"machine": WIDE, "routing": {"algorithm": "minimal"},
                          "workload": {"kind": "synthetic", "pattern": "uniform", "load": 0.9}},
    "ugal_programs_and_background": {
        "machine": SMALL, "routing": {"algorithm": "ugal"},
        "jobs": [{"name": "ar", "workload": ALLREDUCE,
                  "placement": {"kind": "contiguous", "count": 64}},
                 {"name": "bg", "workload": {"kind": "synthetic", "load": 0.7},
                  "placement": "rest"}]},
    "qos_caps_classes_by_operation": {
        "machine": {**SMALL, "qos": CAPS}, "routing": {"algorithm": "minimal"},
        "jobs": [{"name": "ar", "class_by": {"collective": "high", "point_to_point": "low"},
                  "workload": ALLREDUCE, "placement": {"kind": "contiguous", "count": 64}},
                 {"name": "bg", "class": "low", "workload": {"kind": "synthetic", "load": 0.8},
                  "placement": "rest"}]},
    "cut_through_torus": {
        "machine": {"topology": {"kind": "torus", "dims": [4, 4, 4]},
                    "links": {c: LINKS["local"] for c in ("terminal", "torus")},
            "router": {"vcs": 2, "delay": "10ns", "switching": "cut_through"},
            "packet_size": "256B"},
        "workload": {"kind": "synthetic", "pattern": "uniform", "load": 0.6}},
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_a_run_grown_from_almost_nothing_is_the_same_run(tmp_path, monkeypatch, name):
    doc = {**SCENARIOS[name], "stop": STOP, "outputs": OUT}
    _, usual_raw, usual, packets, _ = simulate(tmp_path, doc)
    from_almost_nothing(monkeypatch)
    _, grown_raw, grown, packets2, _ = simulate(tmp_path, doc)
    assert usual.packets_delivered == grown.packets_delivered > 1_000
    assert usual_raw.events == grown_raw.events
    for column in ("packet", "src", "dst", "created_ps", "delivered_ps", "hops"):
        assert np.array_equal(packets[column], packets2[column]), column
