"""Program runs keep their packets table (issue 19 item 5).

With ``outputs.packets`` every delivered rank-program packet has a row like an open-loop
packet's, plus ``background`` (false), ``message`` (the program message's row in the messages
table), ``rank`` (the rank whose NIC sent it) and ``control`` (a rendezvous request or reply);
background packets beside the programs come first with ``rank`` -1, as in the messages table.
Without it the loop writes no record and every figure stays as it was.

The ping-pong here runs on ``test_rank_programs_engine``'s dragonfly (512 B packets) with the
eager limit at 2 KiB: 8 B is one packet, 1,500 B three, 4 KiB eight data packets behind a
request and a reply of 64 B.
"""

from __future__ import annotations

import json
import math
import shutil

import numpy as np
import pytest
import yaml
from conftest import REPO, simulate, zero_load_bound_ps
from test_rank_programs_engine import MACHINE

from federation.pipeline.load import load_experiment
from federation.pipeline.run import run_experiment
from federation.pipeline.summary import message_table

FAR = 8 * 4 * 9 - 1  # node 287, in the last group
SIZES, ITERS = [8, 1500, 4096], 2
EAGER = 2048
CONTROL = 64
M = {**MACHINE, "nic": {"eager_threshold": EAGER}}


def pingpong(**extra) -> dict:
    return {"machine": M, "routing": {"algorithm": "minimal"},
            "workload": {"kind": "pingpong", "sizes": SIZES, "iterations": ITERS,
                         "nodes": [0, FAR]}, **extra}


def columns(table) -> dict[str, np.ndarray]:  # noqa: ANN001
    return {k: np.asarray(table[k]) for k in table}


@pytest.fixture(scope="module")
def pp(tmp_path_factory):  # noqa: ANN201
    """The ping-pong's prepared point, raw result, summary and packets table."""
    prep, raw, summary, packets, _ = simulate(tmp_path_factory.mktemp("pp"), pingpong())
    return prep, raw, summary, columns(packets)


def test_one_row_per_packet_with_its_message_rank_and_nodes(pp):
    prep, raw, summary, pk = pp
    t = prep.job.programs
    size = t.msg_size
    rdv = size > EAGER
    data = sum(math.ceil(s / 512) for s in size.tolist())
    assert pk["packet"].size == data + 2 * int(rdv.sum()) == int(raw.programs.pstat[0])
    assert data == 2 * ITERS * (1 + 3 + 8)
    assert (pk["packet"] == np.arange(pk["packet"].size)).all()  # delivery order
    assert (np.diff(pk["delivered_ps"]) >= 0).all()
    assert not pk["background"].any() and pk["measured"].all()
    assert list(pk)[:4] == ["packet", "background", "message", "rank"]
    m = pk["message"]
    ctl = pk["control"]
    assert int(ctl.sum()) == 2 * int(rdv.sum()) and (pk["size"][ctl] == CONTROL).all()
    assert rdv[m[ctl]].all()
    # data and requests leave the message's source; replies its destination
    reply = ctl & (pk["src"] == t.msg_dst[m])
    assert int(reply.sum()) == int(rdv.sum())
    sender = np.where(reply, t.msg_dst_rank[m], t.msg_src_rank[m])
    assert (pk["rank"] == sender).all()
    assert (pk["src"] == np.where(pk["rank"] == 0, 0, FAR)).all()
    assert (pk["dst"] == np.where(pk["rank"] == 0, FAR, 0)).all()
    assert set(pk["src"].tolist()) == {0, FAR}
    # sizes add up to what was delivered, and the summary is what it always was
    assert int(pk["size"].sum()) == summary.bytes_delivered == int(raw.programs.pstat[1])
    assert summary.packets_delivered == pk["packet"].size
    assert summary.latency_ns.p50 is None and summary.latency_ns.p99 is None
    lat = pk["delivered_ps"] - pk["created_ps"]
    assert int(lat.sum()) == int(raw.programs.pstat[2])
    assert int(lat.max()) == int(raw.programs.pstat[4])
    assert int(pk["hops"].sum()) == int(raw.programs.pstat[5])
    assert (lat >= zero_load_bound_ps(prep, pk)).all()
    assert (pk["injected_ps"] >= pk["created_ps"]).all()


def test_message_joins_the_messages_table(pp):
    prep, raw, _, pk = pp
    msgs = columns(message_table(prep, raw))
    assert not msgs["background"].any()
    data = ~pk["control"]
    got = np.bincount(pk["message"][data], weights=pk["size"][data],
                      minlength=msgs["message"].size)
    assert (got == msgs["size"][msgs["message"]]).all()
    # each message's last data packet arrived when the messages table says it completed
    last = np.full(msgs["message"].size, -1)
    np.maximum.at(last, pk["message"][data], pk["delivered_ps"][data])
    assert (last == msgs["completed_ps"]).all()
    assert (pk["rank"] == np.where(pk["control"] & (pk["src"] == msgs["dst"][pk["message"]]),
                                   msgs["dst_rank"][pk["message"]],
                                   msgs["src_rank"][pk["message"]])).all()


def test_records_change_no_figure(tmp_path, pp):
    """Without the table the loop records nothing; the programs' times and sums are the
    same."""
    from federation.pipeline.point import prepare

    _, raw, _, _ = pp
    path = tmp_path / "e.yaml"
    path.write_text(yaml.safe_dump(pingpong(outputs={"packets": False, "messages": False})))
    point = load_experiment(path).points[0]
    job = prepare(point).job
    assert not job.keep_program_packets
    off = point.engine.run(job)
    assert off.packets.program_packets is None and off.packets.packets is None
    assert (off.programs.pstat == raw.programs.pstat).all()
    assert (off.programs.rank_finish == raw.programs.rank_finish).all()
    assert off.events == raw.events


def test_background_rows_come_first(tmp_path):
    doc = pingpong(background={"kind": "synthetic", "pattern": "uniform", "load": 0.2},
                   stop={"warmup": "0ns", "measure": "2us"})
    prep, raw, summary, packets, _ = simulate(tmp_path, doc)
    pk = columns(packets)
    bg = pk["background"]
    n_bg = int(bg.sum())
    assert n_bg == raw.packets.packets.rows > 0
    assert bg[:n_bg].all() and not bg[n_bg:].any()
    assert (pk["rank"][bg] == -1).all() and not pk["control"][bg].any()
    assert (pk["rank"][~bg] >= 0).all()
    assert int((~bg).sum()) == int(raw.programs.pstat[0])
    # the background's rows are the open-loop rows as they were
    assert (pk["packet"][bg] == np.arange(n_bg)).all()
    assert (pk["packet"][~bg] == np.arange(int((~bg).sum()))).all()
    for k in ("message", "src", "dst", "size", "created_ps", "delivered_ps", "measured"):
        assert (pk[k][bg] == np.asarray(raw.packets.packets[k])).all(), k
    assert (pk["src"][~bg] != pk["dst"][~bg]).all()
    assert set(pk["src"][~bg].tolist()) == {0, FAR}
    assert summary.packets_generated >= n_bg + int((~bg).sum())


def test_jobs_name_each_packet(tmp_path):
    quick = str(REPO / "schemas" / "machines" / "quickstart-dragonfly.yaml")
    doc = {"machine": quick, "stop": {"warmup": "0us", "measure": "2us"}, "jobs": [
        {"name": "ar", "workload": {"kind": "allreduce", "size": "1KiB", "iterations": 1},
         "placement": {"kind": "list", "nodes": [1, 2, 3, 40]}},
        {"name": "pp", "workload": {"kind": "pingpong", "sizes": [600], "iterations": 2},
         "placement": {"kind": "list", "nodes": [5, 66]}},
        {"name": "bg", "workload": {"kind": "synthetic", "load": 0.1}, "placement": "rest"}]}
    prep, raw, _, packets, _ = simulate(tmp_path, doc)
    pk = columns(packets)
    msgs = columns(message_table(prep, raw))
    assert list(pk)[-1] == "job"
    bg = pk["background"]
    assert set(pk["job"][bg].tolist()) == {"bg"}
    P = int(prep.job.programs.prog.packet_size)
    for name in ("ar", "pp"):
        mine = (msgs["job"] == name) & ~msgs["background"]
        want = sum(math.ceil(s / P) for s in msgs["size"][mine].tolist())
        rows = ~bg & (pk["job"] == name)
        assert int(rows.sum()) == want > 0, name
        assert set(pk["src"][rows].tolist()) <= set(msgs["src"][mine].tolist())
    assert set(pk["job"][~bg].tolist()) == {"ar", "pp"}


def run_cli_like(tmp_path, doc: dict, name: str):  # noqa: ANN201
    """Run ``doc`` as ``federation run`` does, from ``tmp_path/name/e.yaml`` (the same file
    name each time: results.json names it) into ``tmp_path/name/out``."""
    (tmp_path / name).mkdir()
    path = tmp_path / name / "e.yaml"
    path.write_text(yaml.safe_dump(doc))
    out = tmp_path / name / "out"
    run_experiment(load_experiment(path), out, overwrite=True)
    return out


def test_without_the_table_results_stay_as_they_were(tmp_path):
    """``outputs.packets: false``: no packets file, and the summary (so results.json, but for
    its file list) is the one a run with the table writes."""
    on = run_cli_like(tmp_path, pingpong(outputs={"format": "csv"}), "on")
    off = run_cli_like(tmp_path, pingpong(outputs={"format": "csv", "packets": False}), "off")
    assert (on / "packets-0.csv").exists() and not list(off.glob("packets-*"))
    a = json.loads((on / "results.json").read_text())
    b = json.loads((off / "results.json").read_text())
    assert a["points"][0]["summary"] == b["points"][0]["summary"]
    assert (on / "messages-0.csv").read_bytes() == (off / "messages-0.csv").read_bytes()
    # the same file and seed twice (results.json names the file): byte-identical outputs
    first = {p.name: p.read_bytes() for p in on.iterdir() if p.name != "performance.json"}
    shutil.rmtree(on.parent)
    again = run_cli_like(tmp_path, pingpong(outputs={"format": "csv"}), "on")
    assert {p.name: p.read_bytes() for p in again.iterdir()
            if p.name != "performance.json"} == first
    head = (again / "packets-0.csv").read_text().splitlines()[0]
    assert head.startswith('"packet","background","message","rank","src","dst","size"')


def test_a_run_longer_than_the_record_buffer(tmp_path):
    """More program packets than the loop's record buffer holds (16 Ki): drained between
    slices, numbered on in delivery order, none lost."""
    from federation.engine.feed import REC_CAPACITY

    n = REC_CAPACITY // 2 + 100  # round trips: 2 one-packet messages each
    doc = {"machine": MACHINE, "routing": {"algorithm": "minimal"},
           "workload": {"kind": "pingpong", "sizes": [8], "iterations": n, "nodes": [0, 1]}}
    _, raw, summary, packets, _ = simulate(tmp_path, doc)
    pk = columns(packets)
    assert pk["packet"].size == 2 * n > REC_CAPACITY
    assert (pk["packet"] == np.arange(2 * n)).all()
    assert (np.diff(pk["delivered_ps"]) > 0).all()
    # rank 0's k-th send is message k, rank 1's message n + k; they alternate
    i = np.arange(2 * n)
    assert (pk["message"] == np.where(i % 2 == 0, i // 2, n + i // 2)).all()
    assert (pk["rank"] == np.arange(2 * n) % 2).all()
    assert int(pk["size"].sum()) == summary.bytes_delivered == 16 * n


def test_a_zero_byte_message_is_one_byte_on_the_wire_everywhere(tmp_path):
    """A zero-byte send (legal MPI; barriers are made of them) travels as one 1 B packet, the
    engine's smallest (a real network's header-only packet; the compiled loop has no empty
    packet).  The rule, documented in docs/programs.md: the messages table keeps the program's
    size, 0; every byte counter (packets table, summary, ports) counts the 1 B that crossed
    the wire, and they agree with each other."""
    (tmp_path / "z.goal").write_text("num_ranks 2\nrank 0 {\nl1: send 0b to 1 tag 1\n"
                                     "l2: send 8b to 1 tag 2\n}\nrank 1 {\n"
                                     "l1: recv 0b from 0 tag 1\nl2: recv 8b from 0 tag 2\n}\n")
    doc = {"machine": M, "routing": {"algorithm": "minimal"},
           "workload": {"kind": "program", "path": str(tmp_path / "z.goal")}}
    prep, raw, summary, packets, ports = simulate(tmp_path, doc)
    msgs = columns(message_table(prep, raw))
    pk = columns(packets)
    assert msgs["size"][np.argsort(msgs["tag"])].tolist() == [0, 8]
    by_message = dict(zip(pk["message"].tolist(), pk["size"].tolist(), strict=True))
    assert sorted((int(msgs["size"][m]), s) for m, s in by_message.items()) == [(0, 1), (8, 8)]
    assert summary.bytes_injected == summary.bytes_delivered == 9 == int(pk["size"].sum())
    pt = columns(ports)
    into_1 = (pt["link_class"] == "terminal") & (pt["node"] == 1)  # node 1 sends nothing
    assert int(pt["bytes"][into_1].sum()) == 9
