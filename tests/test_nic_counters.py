"""Aries' NIC counters (issue 23): request packets, request flits, the stall of a ready packet
held back by back-pressure, the cumulative request latency; per NIC in ``sim.nic_ctr``, exact
at any event (read through ``api.nic_counter``), over the window in the results, per job.

Small machines with hand-computed timelines: one router, terminal links of 10 ns at 5.12 GB/s
(a 512 B packet takes 100 ns), router delay 50 ns, so a packet between two nodes of the router
has a network latency of 100 + 10 + 50 + 100 + 10 = 270 ns at zero load.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from federation.engine import api
from federation.engine.native import LinkFigures, NativeRun, Packets, run_native
from federation.network import NetworkBuilder
from federation.network.routes import shortest_path_routes
from federation.plugin.components import RoutingProgram

BW = 5.12e9  # 512 B = 100 ns exactly
NS = 1000  # ps


def one_router(sends: list[tuple[int, int, int]], nodes: int, buffer: int = 64 * 512,
               window: tuple[int, int] | None = None, flit: int = 16,
               program: RoutingProgram | None = None) -> NativeRun:
    """``sends``: (creation ns, source, destination) of 512 B packets on one router."""
    b = NetworkBuilder([])
    b.add_routers(1, radix=nodes)
    b.attach_nodes(0, nodes)
    net = b.build()
    t, s, d = (np.array(x, dtype=np.int64) for x in zip(*sends, strict=True))
    n = t.size
    packets = Packets(time_ps=t * NS, src=s, dst=d, size=np.full(n, 512, np.int64),
                      msg=np.arange(n), via=np.full(n, -1))
    fig = LinkFigures(bandwidth=BW, latency=10e-9, buffer=buffer)
    return NativeRun(net, {"terminal": fig}, BW, 50e-9, 1, shortest_path_routes(net), packets,
                     window, nic_flit=flit, program=program)


def col(ctr: np.ndarray, k: int) -> list[int]:
    return [int(x) for x in ctr[:, k]]


def test_a_stream_counts_its_packets_flits_and_latency():
    """Node 0 sends 20 packets of 512 B, one every 200 ns, to node 1: 20 request packets of
    32 flits (16 B), no stall (the link is free long before each packet), 270 ns each."""
    sends = [(200 * k, 0, 1) for k in range(20)]
    raw = run_native(one_router(sends, 2))
    c = raw.nic_ctr
    assert col(c, api.NC_REQ_PKTS) == [20, 0]
    assert col(c, api.NC_REQ_FLITS) == [20 * 32, 0]
    assert col(c, api.NC_STALL) == [0, 0]
    assert col(c, api.NC_RSP_LAT) == [20 * 270 * NS, 0]
    # the latency is the packets' network latency, summed on their source NIC
    lat = raw.pkt_deliver - raw.pkt_inject
    assert int(lat.sum()) == c[0, api.NC_RSP_LAT]
    # nic.flit: ceil(512 / 100) = 6 flits a packet
    assert col(run_native(one_router(sends, 2, flit=100)).nic_ctr, api.NC_REQ_FLITS) == [120, 0]


def test_the_window_counts_what_happened_in_it():
    """Over [1050, 3050) ns: the 10 packets that left node 0's NIC at 1200 .. 3000 ns, and
    the latency of the 10 delivered in it (at 200k + 270 ns: k = 4 .. 13)."""
    sends = [(200 * k, 0, 1) for k in range(20)]
    raw = run_native(one_router(sends, 2, window=(1050 * NS, 3050 * NS)))
    w = raw.window_ports.nics
    assert col(w, api.NC_REQ_PKTS) == [10, 0]
    assert col(w, api.NC_REQ_FLITS) == [320, 0]
    assert col(w, api.NC_RSP_LAT) == [10 * 270 * NS, 0]


def two_into_one(**kw) -> NativeRun:
    """Nodes 0 and 1 each send two packets to node 2 at time 0, behind input buffers of one
    packet: the second packets wait at their NICs for credit.  Node 3 sends to node 0 at 200
    and 480 ns (a path of its own: it disturbs nothing; its first packet's credit is back at
    470 ns, so it never stalls)."""
    sends = [(0, 0, 2), (0, 0, 2), (0, 1, 2), (0, 1, 2), (200, 3, 0), (480, 3, 0)]
    return one_router(sends, 4, buffer=512, **kw)


def test_stall_behind_a_shared_ejection_port_has_the_closed_form():
    """Timeline (ns).  Both NICs send their first packet (A from node 0, B from node 1) over
    [0, 100); both reach the router at 110 and are routed at 160.  The port to node 2 sends A
    over [160, 260), then B over [260, 360).  Each packet's credit leaves with its tail and
    crosses the 10 ns cable: node 0's is back at 270, node 1's at 370.  So node 0's second
    packet, ready at 100, stalls 170 ns; node 1's stalls 270 ns.  Latencies: A 270; B 370
    (delivered at 370); A2 leaves at 270, is routed at 430, sent [430, 530), delivered at 540:
    270; B2 leaves at 370, routed at 530, sent [530, 630), delivered at 640: 270."""
    raw = run_native(two_into_one())
    c = raw.nic_ctr
    assert col(c, api.NC_STALL) == [170 * NS, 270 * NS, 0, 0]
    assert col(c, api.NC_REQ_PKTS) == [2, 2, 0, 2]
    assert col(c, api.NC_REQ_FLITS) == [64, 64, 0, 64]
    assert col(c, api.NC_RSP_LAT) == [540 * NS, 640 * NS, 0, 540 * NS]
    # the NIC port's own stall counter (the output side of the NIC) says the same
    nic = job_nic_ports(raw, two_into_one())
    assert [int(x) for x in raw.port_stall[nic]] == col(c, api.NC_STALL)


def job_nic_ports(raw, job: NativeRun) -> np.ndarray:
    return job.network.ports.nic_port


def test_a_window_edge_inside_a_stall_counts_its_part():
    """Window [0, 200 ns): both NICs have stalled since 100 ns; [200 ns, end): the rest."""
    first = run_native(two_into_one(window=(0, 200 * NS))).window_ports.nics
    assert col(first, api.NC_STALL) == [100 * NS, 100 * NS, 0, 0]
    assert col(first, api.NC_REQ_PKTS) == [1, 1, 0, 0]  # node 3's leaves at 200 ns
    rest = run_native(two_into_one(window=(200 * NS, 2**40))).window_ports.nics
    assert col(rest, api.NC_STALL) == [70 * NS, 170 * NS, 0, 0]
    assert col(first + rest, api.NC_RSP_LAT) == [540 * NS, 640 * NS, 0, 540 * NS]


def test_counters_read_during_the_run_are_the_final_counts_so_far():
    """A routing's NIC hook reads every NIC's counters through ``api.nic_counter`` at each
    injection (what a controller reading them at each send sees).  Node 3's packets leave at
    200 ns (both other NICs are in their stall since 100 ns: the open stall counts) and at
    480 ns (the stalls ended at 270 and 370, A and B were delivered at 270 and 370, node 3's
    first packet at 470)."""
    import nic_probe

    tables = nic_probe.tables(4, 16)
    prog = RoutingProgram(route=nic_probe.route, inject=nic_probe.inject, tables=tables,
                          vcs_required=1, description="counter probe")
    raw = run_native(two_into_one(program=prog))
    log = tables[0][:int(tables[1][0])]
    assert len(log) == 6
    rows = {(int(r[0]) // NS, int(r[1])): r[2:].reshape(4, api.NC_COLS) for r in log}
    at200, at480 = rows[(200, 3)], rows[(480, 3)]
    assert col(at200, api.NC_STALL) == [100 * NS, 100 * NS, 0, 0]
    assert col(at200, api.NC_REQ_PKTS) == [1, 1, 0, 1]  # its own packet counts as it leaves
    assert col(at200, api.NC_RSP_LAT) == [0, 0, 0, 0]
    assert col(at480, api.NC_STALL) == [170 * NS, 270 * NS, 0, 0]
    assert col(at480, api.NC_REQ_PKTS) == [2, 2, 0, 2]
    assert col(at480, api.NC_RSP_LAT) == [270 * NS, 370 * NS, 0, 270 * NS]
    # the NIC whose stall ends as it sends reads that stall once (at 270 and 370 ns)
    assert rows[(270, 0)][0, api.NC_STALL] == 170 * NS
    assert rows[(370, 1)][1, api.NC_STALL] == 270 * NS
    # every reading is a prefix of the final counts, and counts 32 flits a packet
    assert (log[:, 2:] <= raw.nic_ctr.reshape(-1)).all()
    assert (log[:, 2 + api.NC_REQ_FLITS::api.NC_COLS]
            == 32 * log[:, 2 + api.NC_REQ_PKTS::api.NC_COLS]).all()


@pytest.mark.parametrize("flit", [0, -16])
def test_a_flit_below_one_byte_is_refused(flit):
    from pydantic import ValidationError

    from federation.errors import SimulationError
    from federation.models.machine import NicConfig

    with pytest.raises(ValidationError, match="flit"):
        NicConfig(flit=flit)
    with pytest.raises(SimulationError, match=r"nic\.flit .* is outside 1 \.\. "):
        run_native(one_router([(0, 0, 1)], 2, flit=flit))  # the engine's own guard


def test_results_table_and_job_sums_agree_with_the_ports_and_packets(tmp_path):
    """Two closed-loop jobs and an open-loop background on the quickstart dragonfly, through
    the runner: the ``nics`` table has a row per node; each NIC's packets and stall are its
    NIC port's (the ports table), its latency the sum over the packets it sent (packets
    table), its flits ceil(size / 16) per packet; a job's counters are the sum over its
    nodes' rows; the point's, the sum over all."""
    from test_jobs import mixed, run, table

    point, folder = run(tmp_path, mixed())
    nics, ports, packets = (table(folder, n) for n in ("nics", "ports", "packets"))
    n = len(nics["node"])
    assert nics["node"] == list(range(n)) and n == 72
    nic_rows = [i for i, r in enumerate(ports["router"]) if r < 0]
    by_node = {ports["node"][i]: i for i in nic_rows}
    order = [by_node[k] for k in range(n)]
    for ours, theirs in (("request_packets", "packets"), ("stall_ps", "stall_ps"),
                         ("request_packets_window", "packets_window"),
                         ("stall_ps_window", "stall_ps_window")):
        assert nics[ours] == [ports[theirs][i] for i in order], ours
    # incoming bytes: a NIC's are what its router's port to the node sent it, and back
    to_node = {ports["node"][i]: i for i, r in enumerate(ports["router"]) if r >= 0
               and ports["node"][i] >= 0}
    for k in range(n):
        for col_ in ("bytes_in", "bytes_in_window"):
            assert ports[col_][by_node[k]] == ports[col_.replace("_in", "")][to_node[k]]
            assert ports[col_][to_node[k]] == ports[col_.replace("_in", "")][by_node[k]]
    src, size = np.array(packets["src"]), np.array(packets["size"])
    done = np.array(packets["delivered_ps"]) >= 0
    lat = np.array(packets["delivered_ps"]) - np.array(packets["injected_ps"])
    assert nics["latency_ps"] == np.bincount(src[done], lat[done], minlength=n).astype(
        np.int64).tolist()
    sent = np.array(packets["injected_ps"]) >= 0
    assert nics["request_flits"] == np.bincount(src[sent], (size[sent] + 15) // 16,
                                                minlength=n).astype(np.int64).tolist()
    s = point.summary
    jobs = {j.name: j for j in s.jobs}
    for name, j in jobs.items():
        rows = [i for i in range(n) if nics["job"][i] == name]
        assert sorted(rows) == sorted(j.nodes), name
        w = j.nics
        assert w.request_packets == sum(nics["request_packets_window"][i] for i in rows)
        assert w.request_flits == sum(nics["request_flits_window"][i] for i in rows)
        assert w.stall_ns * 1e3 == pytest.approx(sum(nics["stall_ps_window"][i] for i in rows))
        assert w.latency_ns * 1e3 == pytest.approx(sum(nics["latency_ps_window"][i]
                                                       for i in rows))
        assert w.mean_latency_ns == pytest.approx(w.latency_ns / w.request_packets)
    assert s.nics.request_packets == sum(nics["request_packets_window"])
    assert s.nics.request_packets == sum(j.nics.request_packets for j in jobs.values())
    assert s.nics.stall_per_flit_ns == pytest.approx(s.nics.stall_ns / s.nics.request_flits)


def test_outputs_nics_off_writes_no_table(tmp_path):
    from test_jobs import run

    doc = {"workload": {"kind": "synthetic", "load": 0.2}, "stop": {"warmup": "0us",
                                                                     "measure": "1us"},
           "outputs": {"nics": False}}
    point, folder = run(tmp_path, doc)
    assert "nics" not in point.files and not list(folder.glob("nics-*"))
    assert point.summary.nics.request_packets > 0  # the summary keeps its totals


def test_booksim_iq_nics_count_the_same_way(tmp_path):
    """``router.model: booksim_iq``: a NIC adds a cycle to its stall per cycle its due packet
    finds no credit, as its port's counter does; packets and latency as with the default."""
    from conftest import simulate
    from test_router_iq import machine

    m = machine()
    m["links"] = {c: {**f, "buffer": "64B"} for c, f in m["links"].items()}
    msgs = [{"at": "0ns", "src": s, "dst": 3, "size": "64B"} for s in (0, 1) for _ in range(10)]
    doc = {"machine": m, "workload": {"kind": "messages", "messages": msgs},
           "stop": {"warmup": "0ns", "measure": "1us"}, "outputs": {"packets": True}}
    prep, raw, _, packets, _ = simulate(tmp_path, doc)
    nic = prep.network.ports.nic_port
    c = raw.nic_ctr
    assert c[:, api.NC_STALL].tolist() == raw.port_stall[nic].tolist()
    assert c[0, api.NC_STALL] > 0 and c[1, api.NC_STALL] > 0
    assert c[:, api.NC_REQ_PKTS].tolist()[:4] == [10, 10, 0, 0]
    assert c[:, api.NC_REQ_FLITS].tolist()[:4] == [40, 40, 0, 0]
    lat = packets["delivered_ps"] - packets["injected_ps"]
    assert c[:, api.NC_RSP_LAT].tolist()[:2] == [int(lat[packets["src"] == s].sum())
                                                 for s in (0, 1)]


@settings(max_examples=15, deadline=None, derandomize=True)
@given(sends=st.lists(st.tuples(st.integers(0, 2000), st.integers(0, 3), st.integers(0, 3)),
                      min_size=1, max_size=25).map(
                          lambda xs: [(t, s, d) for t, s, d in sorted(xs) if s != d]),
       cut=st.integers(1, 3000), flit=st.sampled_from([1, 7, 16, 100]))
def test_counters_agree_with_the_packets_and_split_at_any_edge(sends, cut, flit):
    """Random 512 B packets among 4 nodes of one router behind one-packet buffers (so NICs
    stall): each NIC's counters are its packets' (count, ceil(512 / flit) flits each, latency
    summed by source), its stall is its NIC port's, and the windows [0, cut) and [cut, end)
    add up to the whole run, whatever instant ``cut`` falls on."""
    if not sends:
        return
    whole = run_native(one_router(sends, 4, buffer=512, flit=flit))
    c = whole.nic_ctr
    src = np.array([s for _, s, _ in sends])
    lat = whole.pkt_deliver - whole.pkt_inject
    assert c[:, api.NC_REQ_PKTS].tolist() == np.bincount(src, minlength=4).tolist()
    assert c[:, api.NC_REQ_FLITS].tolist() == (np.bincount(src, minlength=4)
                                               * -(-512 // flit)).tolist()
    assert c[:, api.NC_RSP_LAT].tolist() == np.bincount(src, lat, minlength=4).astype(
        np.int64).tolist()
    nic = one_router(sends, 4).network.ports.nic_port
    assert c[:, api.NC_STALL].tolist() == whole.port_stall[nic].tolist()
    first = run_native(one_router(sends, 4, buffer=512, flit=flit, window=(0, cut * NS)))
    rest = run_native(one_router(sends, 4, buffer=512, flit=flit, window=(cut * NS, 2**40)))
    assert (first.window_ports.nics + rest.window_ports.nics).tolist() == c.tolist()
    inj = whole.pkt_inject < cut * NS
    assert first.window_ports.nics[:, api.NC_REQ_PKTS].tolist() == np.bincount(
        src[inj], minlength=4).tolist()


def test_the_engine_switch_compiles_the_counters_out_and_changes_nothing_else(tmp_path):
    """``engine: {kind: native, nic_counters: false}``: the loop counts no NIC counters (the
    summary and the table have none), and every other figure is the same, to the last digit."""
    from test_jobs import run

    doc = {"workload": {"kind": "synthetic", "load": 0.3},
           "stop": {"warmup": "0us", "measure": "2us"}}
    on, _ = run(tmp_path, doc, "on.yaml")
    off, folder = run(tmp_path, {**doc, "engine": {"kind": "native", "nic_counters": False}},
                      "off.yaml")
    assert on.summary.nics is not None and on.summary.nics.request_packets > 0
    assert off.summary.nics is None and not list(folder.glob("nics-*"))
    a, b = on.summary.model_dump(), off.summary.model_dump()
    a.pop("nics", None), b.pop("nics", None)
    for ja, jb in zip(a.pop("jobs", None) or [], b.pop("jobs", None) or [], strict=True):
        ja.pop("nics", None), jb.pop("nics", None)
        assert ja == jb
    assert a == b
