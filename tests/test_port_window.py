"""Per-port figures over the measurement window ``[w0, w1)``, like latency and throughput.

The engine stops before the first event at or after each edge of the window and reads its
per-port counters there; a transmission straddling an edge counts only its part inside.  The
whole-run figures stay in their own columns (``utilization_run``, ``bytes``, ``busy_ps``...).
"""

from __future__ import annotations

import numpy as np
import pytest

from federation.engine.native import LinkFigures, NativeRun, Packets, run_native
from federation.models.units import PS_PER_S
from federation.network import NetworkBuilder
from federation.network.routes import shortest_path_routes

BW = 5.12e9  # 512 B = 100 ns exactly
NS = 1000  # ps


def stream(n: int, period_ns: int, window: tuple[int, int] | None) -> NativeRun:
    """Node 0 sends one 512 B packet every ``period_ns`` to node 1 on the same router:
    terminal latency 10 ns, router delay 50 ns, buffers far larger than the stream needs."""
    b = NetworkBuilder([])
    b.add_routers(1, radix=4)
    b.attach_nodes(0, 2)
    net = b.build()
    packets = Packets(time_ps=np.arange(n, dtype=np.int64) * period_ns * NS,
                      src=np.zeros(n, np.int64), dst=np.ones(n, np.int64),
                      size=np.full(n, 512, np.int64), msg=np.arange(n), via=np.full(n, -1))
    fig = LinkFigures(bandwidth=BW, latency=10e-9, buffer=64 * 512)
    return NativeRun(net, {"terminal": fig}, BW, 50e-9, 1, shortest_path_routes(net), packets,
                     window)


def test_constant_stream_has_the_closed_form_window_utilization():
    """A 100 ns packet every 200 ns keeps both links of the path busy half the time.  The
    NIC port sends at [200k, 200k + 100) ns, the router's port to node 1 at [200k + 160,
    200k + 260) ns (NIC serialisation, terminal latency, router delay).  Over [1050, 3050) ns,
    a whole number of periods whose edges cut transmissions on both ports, each is busy
    exactly 1000 ns: utilisation 0.5.  Over the whole run (20 packets, last delivered at
    3800 + 270 ns) the NIC was busy 2000 of 4070 ns."""
    job = stream(20, 200, (1050 * NS, 3050 * NS))
    raw = run_native(job)
    pt = job.network.ports
    nic, out = int(pt.nic_port[0]), int(pt.node_port[1])
    w = raw.window_ports
    assert raw.window == (1050 * NS, 3050 * NS)
    assert raw.end_ps == 4070 * NS
    for port in (nic, out):
        assert w.busy[port] == 1000 * NS
        assert w.busy[port] / (2000 * NS) == 0.5
        assert w.packets[port] == 10  # started in it: 1200..3000 ns (NIC), 1160..2960 ns
        assert w.bytes[port] == 10 * 512
        assert w.stall[port] == 0
        assert raw.port_busy[port] == 20 * 100 * NS  # the whole run, unchanged
    assert raw.port_busy[nic] / raw.end_ps == pytest.approx(2000 / 4070)
    # ports nothing crossed
    idle = np.setdiff1d(np.arange(pt.n_ports), [nic, out])
    assert not w.busy[idle].any() and not w.bytes[idle].any()


@pytest.mark.parametrize("window", [None, (0, 4070 * NS), (0, 2**43)])
def test_a_window_covering_the_run_gives_the_whole_run_figures(window):
    raw = run_native(stream(20, 200, window))
    assert raw.window == (window or (0, raw.end_ps))
    w = raw.window_ports
    for got, whole in ((w.busy, raw.port_busy), (w.bytes, raw.port_bytes),
                       (w.packets, raw.port_pkts), (w.stall, raw.port_stall)):
        assert np.array_equal(got, whole)


def test_stopping_at_the_window_edges_changes_nothing_else():
    """The loop stops and resumes at each edge; every event still happens in the same order."""
    plain = run_native(stream(50, 130, None))
    edged = run_native(stream(50, 130, (777 * NS, 4321 * NS)))
    for name in ("pkt_inject", "pkt_deliver", "port_busy", "port_bytes", "port_stall"):
        assert np.array_equal(getattr(plain, name), getattr(edged, name)), name
    assert (plain.end_ps, plain.events) == (edged.end_ps, edged.events)


def overlap(start: np.ndarray, end: np.ndarray, w0: int, w1: int) -> np.ndarray:
    return np.clip(np.minimum(end, w1) - np.maximum(start, w0), 0, None)


def test_drain_dominated_run_reports_the_window_not_the_drain(sim):
    """Adversarial traffic at 0.9 of the NICs with minimal routing: the one global link per
    group pair saturates, the run drains for far longer than the 2 us window, and the busiest
    links are ranked and reported by their utilisation within the window."""
    from test_engine import machine

    prep, raw, s, packets, ports = sim({
        "machine": machine(),
        "routing": {"algorithm": "minimal"},
        "workload": {"kind": "synthetic", "pattern": "group_shift", "load": 0.9},
        "stop": {"warmup": "1us", "measure": "2us"},
    })
    w0, w1 = prep.window
    assert raw.window == (w0, w1)
    assert raw.end_ps - w1 > 3 * (w1 - w0)  # the drain dominates the run
    uw, ur = ports["utilization_window"], ports["utilization_run"]
    assert ((uw >= 0) & (uw <= 1)).all() and ((ur >= 0) & (ur <= 1)).all()
    assert np.array_equal(uw, ports["busy_ps_window"] / (w1 - w0))
    assert np.array_equal(ur, ports["busy_ps"] / raw.end_ps)
    assert np.abs(uw - ur).max() > 0.3
    # the window counters are part of the run's
    for col in ("bytes", "packets", "busy_ps", "stall_ps"):
        assert (ports[f"{col}_window"] <= ports[col]).all(), col
    assert ports["bytes_window"].sum() < ports["bytes"].sum()

    # independent check from the packet table: a NIC sends each of its packets from its
    # injection for one serialisation, and the router's port into a node sends it until one
    # terminal latency before its delivery
    pt = prep.network.ports
    ser = np.round(packets["size"] / BW * PS_PER_S).astype(np.int64)
    lat = round(10e-9 * PS_PER_S)
    for port_of, start in ((pt.nic_port[packets["src"]], packets["injected_ps"]),
                           (pt.node_port[packets["dst"]], packets["delivered_ps"] - lat - ser)):
        busy = np.bincount(port_of, weights=overlap(start, start + ser, w0, w1),
                           minlength=pt.n_ports)
        sent = np.bincount(port_of, weights=packets["size"] * ((start >= w0) & (start < w1)),
                           minlength=pt.n_ports)
        used = np.unique(port_of)
        assert np.array_equal(ports["busy_ps_window"][used], busy[used].astype(np.int64))
        assert np.array_equal(ports["bytes_window"][used], sent[used].astype(np.int64))

    # the summary ranks by the window: the saturated global links, busy all the window
    top = np.lexsort((ports["port"], -uw))[:5]
    assert [lk.port for lk in s.busiest_links] == top.tolist()
    assert [lk.utilization_window for lk in s.busiest_links] == uw[top].tolist()
    assert [lk.utilization_run for lk in s.busiest_links] == ur[top].tolist()
    assert [lk.bytes_window for lk in s.busiest_links] == ports["bytes_window"][top].tolist()
    assert s.busiest_links[0].link_class == "global"
    assert s.busiest_links[0].utilization_window > 0.97
