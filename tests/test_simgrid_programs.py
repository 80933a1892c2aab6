"""Rank programs on the SimGrid engine: closed forms, dependency semantics, matching order,
stuck programs, results, and agreement with the native engine.

These tests run SimGrid: they *fail* when it is missing (see
:mod:`federation.adapters.simgrid.testing`), unless ``FEDERATION_SIMGRID_OPTIONAL=1``.

Machine: the 72-node dragonfly ``p: 2, a: 4, h: 2`` with its default figures (terminal and
local 5.25 GiB/s, global 4.7 GiB/s; latencies 10, 30 and 100 ns; router delay 50 ns; eager
threshold 64 KiB; control packets 64 B).  Node 0 to node 43 crosses three cables.

Closed forms under CM02 with our configuration (latency and bandwidth factors 1, no TCP
window): an idle flow of ``S`` bytes on a route of summed latency ``L`` (router delays
included) and slowest link ``B`` completes ``L + S / B`` after it starts.  An eager message is
one flow; a rendezvous message is a request (``c`` bytes), a reply on the reverse route, then
the data.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml
from conftest import one_error, run_cli
from test_rank_programs_engine import Prog, unchecked
from test_rank_programs_engine import run as run_programs
from test_simgrid_adapter import closed_form_ps

from federation.adapters.simgrid.testing import require_simgrid
from federation.errors import ConfigError, SimulationError
from federation.pipeline.summary import message_table
from federation.programs.model import COMPUTE, RECV, SEND

DRAGONFLY = {"topology": {"kind": "dragonfly", "p": 2, "a": 4, "h": 2}}


@pytest.fixture(autouse=True)
def simgrid() -> None:
    require_simgrid()


def run(tmp_path, progs, engine: str = "simgrid", **nic):
    """Run ``progs`` on the dragonfly with ``engine``; (prepared, raw, summary, messages)."""
    prep, raw, summary, _ = run_programs(tmp_path, progs, DRAGONFLY, engine, **nic)
    return prep, raw, summary, message_table(prep, raw)


flow_ps = closed_form_ps  # CM02 on an idle route: summed latency plus size over the slowest link


def one_send(size: int) -> Prog:
    p = Prog(2)
    p.op(0, SEND, 1, size)
    p.op(1, RECV, 0, size)
    return p


@pytest.mark.parametrize("size", [8, 2**20])
def test_one_send_completes_at_the_cm02_closed_form(tmp_path, size):
    """8 B is eager: one flow.  1 MiB is rendezvous: request, reply back, then the data.  The
    send finishes when its data would have left the NIC: the data's start plus size / NIC
    bandwidth."""
    prep, raw, summary, msgs = run(tmp_path, one_send(size).build(rank_node=[0, 43]))
    data = flow_ps(prep, 0, 43, size)
    ctl = flow_ps(prep, 0, 43, 64) + flow_ps(prep, 43, 0, 64) if size > 65536 else 0.0
    pg = raw.programs
    assert abs(int(pg.rank_finish[1]) - (ctl + data)) <= 3  # ps: SimGrid's clock, rounded
    nic = size / prep.job.nic_bandwidth * 1e12
    assert abs(int(pg.rank_finish[0]) - (ctl + nic)) <= 3
    assert summary.programs.completion_ns == pytest.approx((ctl + data) / 1e3, abs=0.005)
    assert summary.programs.ranks == 2 and summary.programs.messages == 1
    assert msgs["rendezvous"].tolist() == [size > 65536]
    assert int(msgs["created_ps"][0]) == 0
    assert abs(int(msgs["started_ps"][0]) - ctl) <= 2
    assert int(msgs["completed_ps"][0]) == int(pg.rank_finish[1])


def test_overheads_are_added_to_every_trip(tmp_path):
    """``send_overhead`` delays the hand-over to the network, ``recv_overhead`` the receive's
    finish: an 8 B ping-pong of two round trips takes 4 (flow + 150 ns)."""
    p = Prog(2)
    p.chain(0, *[(SEND, 1, 8), (RECV, 1, 8)] * 2)
    p.chain(1, *[(RECV, 0, 8), (SEND, 0, 8)] * 2)
    prep, raw, *_ = run(tmp_path, p.build(rank_node=[0, 1]), send_overhead="100ns",
                        recv_overhead="50ns")
    want = 4 * (flow_ps(prep, 0, 1, 8) + 150_000)
    assert abs(int(raw.programs.rank_finish.max()) - want) <= 4


@pytest.mark.parametrize("blocking", [True, False])
def test_isend_overlaps_a_compute_and_a_blocking_send_does_not(tmp_path, blocking):
    """A 32 KiB send (eager) then a 10 us compute on rank 0.  Blocking (FINISH edge): the
    compute begins once the send's data left the NIC.  Non-blocking (START edge): it begins at
    0, and the rank finishes when the later of the two does."""
    size, compute = 32768, 10_000_000
    p = Prog(2)
    s = p.op(0, SEND, 1, size)
    c = p.op(0, COMPUTE, time_ps=compute, **({"after": (s,)} if blocking else {"started": (s,)}))
    p.op(1, RECV, 0, size)
    prep, raw, *_ = run(tmp_path, p.build(rank_node=[0, 43]))
    pg = raw.programs
    nic = round(size / prep.job.nic_bandwidth * 1e12)
    if blocking:
        assert int(pg.op_start[p.gid(c)]) == int(pg.op_finish[p.gid(s)]) == nic
        assert int(pg.rank_finish[0]) == nic + compute
    else:
        assert int(pg.op_start[p.gid(c)]) == 0 and int(pg.op_finish[p.gid(s)]) == nic
        assert int(pg.rank_finish[0]) == compute


def test_compute_only_program_runs_one_compute_at_a_time(tmp_path):
    """Rank 0: three computes without dependencies (1, 2, 3 us) run one after another in
    operation order; rank 1: a chain of two.  Completion is exact to the picosecond."""
    p = Prog(2)
    ops = [p.op(0, COMPUTE, time_ps=t) for t in (1_000_000, 2_000_000, 3_000_000)]
    p.chain(1, (COMPUTE, -1, 0, 0, 500_000), (COMPUTE, -1, 0, 0, 250_000))
    _, raw, summary, _ = run(tmp_path, p.build())
    pg = raw.programs
    assert [int(pg.op_start[p.gid(o)]) for o in ops] == [0, 1_000_000, 3_000_000]
    assert pg.rank_finish.tolist() == [6_000_000, 750_000]
    assert summary.programs.completion_ns == 6000.0 and summary.programs.messages == 0


def test_one_channel_does_not_overtake(tmp_path):
    """Three isends on one channel: 200 KB (rendezvous), then 8 B and 8 B (eager), and three
    irecvs.  The k-th send started matches the k-th receive posted although the eager
    messages arrive first: receive 0 takes the rendezvous message and finishes last."""
    p = Prog(2)
    s0 = p.op(0, SEND, 1, 200_000)
    s1 = p.op(0, SEND, 1, 8, started=(s0,))
    p.op(0, SEND, 1, 8, started=(s1,))
    r0 = p.op(1, RECV, 0, 200_000)
    r1 = p.op(1, RECV, 0, 8, started=(r0,))
    r2 = p.op(1, RECV, 0, 8, started=(r1,))
    _, raw, _, msgs = run(tmp_path, p.build(rank_node=[0, 43]))
    pg = raw.programs
    recvs = [p.gid(r) for r in (r0, r1, r2)]
    assert pg.op_msg[recvs].tolist() == [0, 1, 2]
    assert pg.msg_recv[:3].tolist() == recvs
    fin = pg.op_finish[recvs]
    assert fin[1] == fin[2] < fin[0]  # the two eager flows share the NIC and end together
    assert msgs["rendezvous"].tolist() == [True, False, False]


def test_head_to_head_receives_are_reported_with_the_operation_named(tmp_path, monkeypatch):
    """Both ranks receive first: refused before the run (for every engine); past that check,
    SimGrid finds nothing left to happen, and the report is the native engine's, naming the
    rank and operation."""
    p = Prog(2)
    p.chain(0, (RECV, 1, 8), (SEND, 1, 8))
    p.chain(1, (RECV, 0, 8), (SEND, 0, 8))
    with pytest.raises(ConfigError, match=r"cannot finish \(a deadlock, before any run\)"):
        run(tmp_path, p.build())
    unchecked(monkeypatch)
    with pytest.raises(SimulationError, match=r"cannot finish: at t=0ps nothing is left to "
                       r"happen, and 4 operations on 2 ranks never finished; rank 0 operation 0 "
                       r"\(recv 8 B from rank 1 tag 0\) started at 0ps: no send on its channel "
                       "started"):
        run(tmp_path, p.build())


def test_rendezvous_send_send_is_stuck_and_eager_is_not(tmp_path, monkeypatch):
    p = Prog(2)
    p.chain(0, (SEND, 1, 200_000), (RECV, 1, 200_000))
    p.chain(1, (SEND, 0, 200_000), (RECV, 0, 200_000))
    with pytest.raises(ConfigError, match=r"above nic.eager_threshold \(65536 B\)"):
        run(tmp_path, p.build())
    unchecked(monkeypatch)
    with pytest.raises(SimulationError, match="rank 0 operation 0 .* its rendezvous request "
                       "was never answered"):
        run(tmp_path, p.build())
    _, raw, summary, _ = run(tmp_path, p.build(), eager_threshold="1MB")
    assert summary.programs.messages == 2 and (raw.programs.rank_finish > 0).all()


def test_a_receive_without_a_send_is_refused_before_simgrid_starts(tmp_path, monkeypatch):
    from federation.adapters.simgrid import engine

    monkeypatch.setattr(engine, "_run_worker", lambda *a: pytest.fail("SimGrid started"))
    p = Prog(2)
    p.op(1, RECV, 0, 8)
    with pytest.raises(ConfigError, match=r"rank 1 operation 0 \(recv 8 B from rank 0 tag 0\)"):
        run(tmp_path, p.build())


@pytest.mark.parametrize(("ranks", "tolerance_ns"), [(16, 50.0), (64, 75.0)])
def test_allreduce_agrees_with_native_within_the_suites_tolerance(tmp_path, ranks,
                                                                  tolerance_ns):
    """8 B allreduce by recursive doubling, two iterations: the native engine is later by the
    extra store-and-forward serialisations of 8 B (1.42 ns each, at most 4 per step), never
    earlier (the tolerances of native-vs-simgrid.crossval.yaml)."""
    from conftest import simulate

    doc = {"machine": DRAGONFLY, "engine": {"kind": "simgrid"},
           "workload": {"kind": "allreduce", "ranks": ranks, "size": "8B", "iterations": 2}}
    _, _, sg, _, _ = simulate(tmp_path, doc)
    _, _, nat, _, _ = simulate(tmp_path, {**doc, "engine": {"kind": "native"}}, name="n.yaml")
    diff = nat.programs.completion_ns - sg.programs.completion_ns
    assert 0 <= diff <= tolerance_ns
    assert sg.programs.messages == nat.programs.messages == ranks * 2 * int(np.log2(ranks))


def test_cli_results_say_simgrid_and_list_program_messages(tmp_path):
    """``federation run`` on SimGrid: engine and version in results.json, the programs'
    summary, and the messages table with the native engine's columns."""
    import pyarrow.parquet as pq

    exp = tmp_path / "e.yaml"
    doc = {"machine": DRAGONFLY, "engine": {"kind": "simgrid"},
           "workload": {"kind": "pingpong", "sizes": ["8B"], "iterations": 2,
                        "nodes": [0, 43]}}
    exp.write_text(yaml.safe_dump(doc))
    r = run_cli("run", str(exp), "--out", str(tmp_path / "o"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    point = json.loads((tmp_path / "o" / "results.json").read_text())["points"][0]
    assert point["engine"] == "simgrid"
    assert point["components"]["engine"]["program"].startswith("SimGrid ")
    progs = point["summary"]["programs"]
    assert progs["ranks"] == 2 and progs["operations"] == 8 and progs["messages"] == 4
    assert progs["completion_ns"] == max(progs["rank_finish_ns"])
    table = pq.read_table(tmp_path / "o" / "messages-0.parquet")
    assert {"created_ps", "started_ps", "completed_ps", "src_rank", "dst_rank", "tag",
            "rendezvous", "background"} <= set(table.column_names)
    assert table.num_rows == 4


def test_refuses_background_with_programs_naming_the_field(tmp_path):
    exp = tmp_path / "e.yaml"
    doc = {"machine": DRAGONFLY, "engine": {"kind": "simgrid"},
           "workload": {"kind": "pingpong", "sizes": ["8B"], "nodes": [0, 43]},
           "background": {"kind": "synthetic", "pattern": "uniform", "load": 0.1},
           "stop": {"measure": "1us"}}
    exp.write_text(yaml.safe_dump(doc))
    line = one_error(run_cli("validate", str(exp), cwd=tmp_path))
    assert line.startswith(f"error: {exp}: background: the simgrid engine runs rank programs "
                           "without background traffic"), line


def _rows(table) -> list[dict]:
    """A packets table (Table or dict of columns) as a list of rows."""
    if isinstance(table, dict):
        return [dict(zip(table, v, strict=True)) for v in zip(*table.values(), strict=True)]
    return [dict(zip(c, v, strict=True)) for c in table.chunks()
            for v in zip(*c.values(), strict=True)]


def test_packets_table_has_every_program_packet_as_native_counts_them(tmp_path):
    """The packets table of a rank-program run on SimGrid holds every packet native would send
    (it was empty while the summary counted them): a 1,300 B rendezvous message (threshold
    1 KiB) is a 64 B request, a 64 B reply and data of 512 + 512 + 276 B; an 8 B eager
    message is one packet.  Each is delivered when its flow finishes, with native's columns,
    and the rows match native's row for row but for the times."""
    p = Prog(2)
    p.chain(0, (SEND, 1, 1300, 5), (RECV, 1, 8, 6))
    p.chain(1, (RECV, 0, 1300, 5), (SEND, 0, 8, 6))
    progs = p.build(rank_node=[0, 43])
    prep, raw, summary, packets = run_programs(tmp_path, progs, DRAGONFLY, "simgrid",
                                               eager_threshold="1KiB")
    rows = _rows(packets)
    assert summary.packets_delivered == len(rows) == 6
    assert [r["packet"] for r in rows] == list(range(6))
    key = ("message", "rank", "src", "dst", "size", "control")
    assert [tuple(r[k] for k in key) for r in rows] == [
        (0, 0, 0, 43, 64, True), (0, 1, 43, 0, 64, True),
        (0, 0, 0, 43, 512, False), (0, 0, 0, 43, 512, False), (0, 0, 0, 43, 276, False),
        (1, 1, 43, 0, 8, False)]
    assert all(r["hops"] == 3 and r["minimal"] and r["via_group"] == -1 and r["measured"]
               and not r["background"] and r["created_ps"] == r["injected_ps"]
               < r["delivered_ps"] for r in rows)
    assert sum(r["size"] for r in rows) == summary.bytes_delivered == 1300 + 8 + 2 * 64
    # every packet of a flow is delivered when the flow finishes: the data at the
    # messages table's completion
    msgs = message_table(prep, raw)
    done = dict(zip(msgs["message"].tolist(), msgs["completed_ps"].tolist(), strict=True))
    assert {r["delivered_ps"] for r in rows if r["message"] == 0 and not r["control"]} \
        == {done[0]}
    assert rows[-1]["delivered_ps"] == done[1]
    _, _, _, native = run_programs(tmp_path, progs, DRAGONFLY, "native",
                                   eager_threshold="1KiB")
    nat = _rows(native)
    same = [k for k in rows[0] if not k.endswith("_ps") and k != "packet"]
    assert sorted(tuple(r[k] for k in same) for r in rows) == \
        sorted(tuple(r[k] for k in same) for r in nat)
