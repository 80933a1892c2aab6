"""Open-loop background traffic beside rank programs (experiment field ``background``).

The ping-pong's closed form comes from ``test_rank_programs_engine`` (itself checked there to
the picosecond): ``iterations x 2 x`` the one-way latency of one packet on its own path.  A
background whose paths share no link with the ping-pong's must leave that figure exactly as
it is; one on the same links must make it strictly larger.  On the machine used here (a
dragonfly of 9 groups of 4 routers with 8 nodes each, 32 nodes per group) minimal routes stay
inside the source and destination groups, so traffic between groups 1 to 7 never touches the
ping-pong between node 0 (group 0) and node 287 (group 8).
"""

from __future__ import annotations

import jsonschema
import numpy as np
import pytest
import yaml
from conftest import zero_load_bound_ps
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_rank_programs_engine import MACHINE, one_way_ps

from federation.errors import ConfigError
from federation.pipeline.load import load_experiment
from federation.pipeline.point import prepare
from federation.pipeline.run import run_experiment
from federation.pipeline.summary import message_table, summarize, window_of

FAR = 8 * 4 * 9 - 1  # node 287, in the last group
SIZE, ITERS = 512, 3  # one packet per message: the closed form is per packet


def experiment(background: dict | None = None, workload: dict | None = None,
               stop: dict | None = None, **extra) -> dict:
    doc = {"machine": MACHINE, "routing": {"algorithm": "minimal"},
           "workload": workload or {"kind": "pingpong", "sizes": [SIZE], "iterations": ITERS,
                                    "nodes": [0, FAR]},
           "stop": stop or {"warmup": "0ns", "measure": "10us"}, **extra}
    if background is not None:
        doc["background"] = background
    return doc


def load(tmp_path, doc: dict, name: str = "e.yaml"):  # noqa: ANN201
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc))
    return load_experiment(path)


def run(tmp_path, doc: dict, name: str = "e.yaml"):  # noqa: ANN201
    """Prepared point, raw result, summary and the background's rows of the packets table
    (the programs' rows follow them: ``tests/test_program_packets.py``)."""
    point = load(tmp_path, doc, name).points[0]
    prep = prepare(point)
    raw = point.engine.run(prep.job)
    summary, table, _ = summarize(prep, raw)
    packets = {k: np.asarray(table[k]) for k in table}
    bg = packets["background"]
    assert int((~bg).sum()) == int(raw.programs.pstat[0])
    return prep, raw, summary, {k: v[bg] for k, v in packets.items()}


@pytest.fixture(scope="module")
def closed_form_ps(tmp_path_factory) -> int:
    """The ping-pong's completion on an idle network."""
    return ITERS * 2 * one_way_ps(tmp_path_factory.mktemp("probe"), 0, FAR, SIZE)


def test_no_background_is_the_closed_form(tmp_path, closed_form_ps):
    prep, raw, summary, _ = run(tmp_path, experiment())
    assert prep.job.packets.count == 0 and prep.messages.count == 0
    assert int(raw.programs.rank_finish.max()) == closed_form_ps


def test_background_on_disjoint_nodes_leaves_the_programs_exact(tmp_path, closed_form_ps):
    """Traffic from groups 1, 3 and 5 to the next group, all delivered during the ping-pong:
    the completion is the idle closed form to the picosecond."""
    msgs = [{"at": f"{i * 50}ns", "src": 32 * (1 + 2 * (i % 3)) + i % 8,
             "dst": 32 * (2 + 2 * (i % 3)) + 31 - i % 8, "size": "1KiB"} for i in range(24)]
    prep, raw, summary, packets = run(tmp_path, experiment({"kind": "messages",
                                                            "messages": msgs}))
    assert int(raw.programs.rank_finish.max()) == closed_form_ps
    assert prep.job.packets.count == 24 * 2
    assert (raw.pkt_deliver >= 0).all()  # all delivered before the programs finished
    program_packets = ITERS * 2 * SIZE // 512
    assert summary.packets_generated == 24 * 2 + program_packets
    assert summary.packets_delivered == summary.packets_generated
    assert summary.bytes_delivered == 24 * 1024 + ITERS * 2 * SIZE


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 5000), st.integers(32, 255), st.integers(32, 255),
                          st.integers(1, 20_000)), min_size=1, max_size=30))
def test_any_background_inside_groups_1_to_7_leaves_the_programs_exact(
        tmp_path, closed_form_ps, msgs):
    bg = [{"at": f"{at}ns", "src": s, "dst": d, "size": n} for at, s, d, n in msgs]
    _, raw, _, _ = run(tmp_path, experiment({"kind": "messages", "messages": bg}))
    assert int(raw.programs.rank_finish.max()) == closed_form_ps


def test_background_after_the_end_is_never_created(tmp_path, closed_form_ps):
    """Messages due after the programs finish: the run ends with the programs, before they
    are created, so they are neither generated nor listed (only the programs' messages)."""
    late = [{"at": "1ms", "src": 1, "dst": 2, "size": 1500}, {"at": "2ms", "src": 3, "dst": 4,
                                                                "size": 8}]
    prep, raw, summary, packets = run(tmp_path, experiment({"kind": "messages",
                                                            "messages": late},
                                                           stop={"warmup": "0ns",
                                                                 "measure": "5ms"}))
    assert int(raw.programs.rank_finish.max()) == closed_form_ps
    assert summary.simulated_time_ns * 1000 == pytest.approx(closed_form_ps, abs=0.5)
    assert packets["packet"].size == 0
    assert summary.packets_generated == summary.packets_delivered
    table = message_table(prep, raw)
    assert not table["background"].any() and len(table["background"]) == 2 * ITERS
    assert table["measured"].all()


def test_a_synthetic_background_shorter_than_one_slot_sends_nothing(tmp_path, closed_form_ps):
    """A window (1 ns) shorter than the time one background message takes at the NIC: the
    process has no slot to draw, so the background is empty (it once ended the run with a
    traceback joining no batches), and the ping-pong is the idle closed form."""
    prep, raw, summary, packets = run(tmp_path, experiment(
        {"kind": "synthetic", "pattern": "uniform", "load": 0.01},
        stop={"warmup": "0ns", "measure": "1ns"}))
    assert prep.messages.count == 0 and packets["packet"].size == 0
    assert int(raw.programs.rank_finish.max()) == closed_form_ps
    assert summary.packets_generated == summary.packets_delivered == ITERS * 2 * SIZE // 512


def test_background_in_flight_at_the_end_is_undelivered(tmp_path, closed_form_ps):
    """A background message created before the programs finish but still in the network
    then: generated, undelivered, unmeasured, listed with completion -1."""
    t_end_ns = closed_form_ps // 1000
    late = [{"at": f"{t_end_ns - 1}ns", "src": 40, "dst": 200, "size": 65536}]  # groups 1, 6
    prep, raw, summary, packets = run(tmp_path, experiment({"kind": "messages",
                                                            "messages": late},
                                                           stop={"warmup": "0ns",
                                                                 "measure": "5ms"}))
    assert int(raw.programs.rank_finish.max()) == closed_form_ps
    n = packets["packet"].size
    assert n >= 1 and (packets["delivered_ps"] == -1).all() and not packets["measured"].any()
    assert summary.packets_generated - summary.packets_delivered == n
    table = message_table(prep, raw)
    assert table["background"].tolist() == [True] + [False] * (2 * ITERS)
    assert table["completed_ps"][0] == -1 and not table["measured"][0]
    assert table["created_ps"][0] == (t_end_ns - 1) * 1000
    assert table["src_rank"][0] == -1
    # offered counts what was created in the window (the whole run), delivered or not:
    # it was the delivered bytes only, equal to accepted (the fuzz run's 0.0006 for 0.3)
    w0, w1 = window_of(prep, raw)
    capacity = (w1 - w0) / 1e12 * prep.job.nic_bandwidth * prep.network.n_nodes
    assert (summary.offered_load - summary.accepted_load) * capacity == pytest.approx(65536)
    # node 40's NIC started its first packet 1 ns before the end: busy 1 ns of the run, not
    # the packet's whole serialisation (a link was reported 119 % busy over a run)
    nic = int(prep.network.ports.nic_port[40])
    assert int(raw.port_busy[nic]) == 1000
    assert (raw.port_busy <= raw.end_ps).all()


def test_background_on_the_same_links_slows_the_pingpong(tmp_path, closed_form_ps):
    _, raw, summary, _ = run(tmp_path, experiment({"kind": "synthetic", "pattern": "uniform",
                                                   "load": 0.7}))
    assert int(raw.programs.rank_finish.max()) > closed_form_ps
    assert summary.programs.completion_ns * 1000 > closed_form_ps


def test_background_packets_have_physical_latencies(tmp_path):
    """Every delivered background packet took at least its zero-load bound; packets and
    messages add up between the packet table, the message table and the summary."""
    prep, raw, summary, packets = run(tmp_path, experiment(
        {"kind": "synthetic", "load": 0.5, "message_size": 1500},
        stop={"warmup": "2us", "measure": "40us"}))
    done = packets["delivered_ps"] >= 0
    assert done.any() and not done.all()  # the background outlasts the ping-pong
    lat = packets["delivered_ps"] - packets["created_ps"]
    assert (lat[done] >= zero_load_bound_ps(prep, packets)[done]).all()
    assert (packets["injected_ps"][done] >= packets["created_ps"][done]).all()
    assert (packets["measured"] == done).all()
    assert int(packets["created_ps"].max()) < 42_000_000  # generated up to warmup + measure
    n_prog = ITERS * 2 * SIZE // 512
    assert summary.packets_generated == prep.job.packets.count + n_prog
    assert summary.packets_delivered == int(done.sum()) + n_prog
    assert summary.packets_measured == int(done.sum()) + n_prog
    table = message_table(prep, raw)
    n_bg = prep.messages.count
    assert table["background"][:n_bg].all() and not table["background"][n_bg:].any()
    assert len(table["message"]) - n_bg == summary.programs.messages == 2 * ITERS
    # a background message is complete exactly when all its packets were delivered
    whole = np.ones(n_bg, dtype=bool)
    np.logical_and.at(whole, packets["message"], done)
    assert ((table["completed_ps"][:n_bg] >= 0) == whole).all()
    started = table["started_ps"][:n_bg]
    assert (started[whole] >= table["created_ps"][:n_bg][whole]).all()
    # a message starts when its first packet leaves its NIC, delivered by the end or not
    # (those in flight when the programs finished were left at -1)
    left = packets["injected_ps"] >= 0
    never = np.iinfo(np.int64).max
    first = np.full(n_bg, never)
    np.minimum.at(first, packets["message"][left], packets["injected_ps"][left])
    assert (started == np.where(first == never, -1, first)).all()
    assert (started[~whole] >= 0).any()


def test_same_file_same_results(tmp_path):
    doc = experiment({"kind": "synthetic", "load": 0.4}, seed=7)
    a = run(tmp_path, doc, "a.yaml")
    b = run(tmp_path, doc, "b.yaml")
    assert a[2] == b[2]
    for k in ("created_ps", "injected_ps", "delivered_ps", "hops", "dst"):
        assert (a[3][k] == b[3][k]).all()
    c = run(tmp_path, {**doc, "seed": 8}, "c.yaml")
    assert c[3]["created_ps"].tolist() != a[3]["created_ps"].tolist()


def test_sweep_over_background_load_and_resolved_document(tmp_path):
    doc = experiment({"kind": "synthetic", "load": 0.1},
                     sweep={"background.load": [0.2, 0.8]})
    loaded = load(tmp_path, doc)
    assert [p.background.params.load for p in loaded.points] == [0.2, 0.8]
    result = run_experiment(loaded)
    gen = [p.summary.packets_generated for p in result.points]
    assert gen[1] > gen[0]
    for point, value in zip(result.points, (0.2, 0.8), strict=True):
        bg = point.resolved["background"]
        assert bg["kind"] == "synthetic" and bg["load"] == value
        assert point.sweep == {"background.load": value}
        # both workloads' plugins are recorded (the background's was left out)
        assert {k: c.name for k, c in point.components.items()} == {
            "topology": "dragonfly", "qos": "none", "arbiter": "oldest_first",
            "routing": "minimal", "workload": "pingpong", "background": "synthetic",
            "engine": "native"}
    # the resolved document runs again to the same figures
    again = load(tmp_path, result.points[1].resolved, "again.yaml")
    rerun = run_experiment(again)
    assert rerun.points[0].summary == result.points[1].summary


def test_resolved_document_without_background_says_none(tmp_path):
    result = run_experiment(load(tmp_path, experiment()))
    assert result.points[0].resolved["background"] is None


@pytest.mark.parametrize("doc,path,words", [
    (experiment({"kind": "synthetic", "load": 0.2},
                workload={"kind": "synthetic", "load": 0.3}),
     "background", "workload 'synthetic' is open loop"),
    (experiment({"kind": "pingpong", "nodes": [5, 6]}), "background.kind",
     "background 'pingpong' is rank programs"),
    (experiment({"kind": "synthetic", "load": 0.2}, stop={"messages": 100}),
     "stop.measure", "needs a horizon"),
    (experiment({"kind": "synthetic", "load": 1.5}), "background.load", "less than or equal"),
    (experiment({"kind": "nonesuch"}), "background.kind", "nonesuch"),
    (experiment({"kind": "synthetic", "load": 0.2},
                sweep={"background.load": [0.2, 1.5]}), "sweep.background.load",
     "(sweep point 1: background.load=1.5)"),
    (experiment({"load": 0.2}), "background", "missing 'kind'"),
])
def test_refusals_name_the_field(tmp_path, doc, path, words):
    with pytest.raises(ConfigError) as info:
        load(tmp_path, doc)
    assert info.value.path == path and words in info.value.message
    assert info.value.source and info.value.source.endswith("e.yaml")


def test_a_background_workloads_own_errors_are_reported_at_background(tmp_path):
    doc = experiment({"kind": "messages", "messages": [{"src": 0, "dst": 9999, "size": 8}]})
    point = load(tmp_path, doc).points[0]
    with pytest.raises(ConfigError) as info:
        prepare(point)
    assert info.value.path == "background.messages[0].dst"
    assert "9999" in info.value.message and info.value.source.endswith("e.yaml")


def test_json_schema_offers_open_loop_kinds_only(plugins):
    from federation.plugin.jsonschema import experiment_schema

    schema = experiment_schema(plugins)
    bare, objects = schema["properties"]["background"]["anyOf"][0]["anyOf"]
    kinds = {v["properties"]["kind"]["const"] for v in objects["oneOf"]}
    assert "synthetic" in kinds and "messages" in kinds
    assert "synthetic" in bare["enum"] and set(bare["enum"]) <= kinds
    assert not kinds & {"pingpong", "allreduce", "halo3d", "program"}
    ok = {"machine": "m.yaml", "workload": {"kind": "pingpong"},
          "background": {"kind": "synthetic", "load": 0.2}}
    jsonschema.validate(ok, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**ok, "background": {"kind": "pingpong"}}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**ok, "background": "pingpong"}, schema)


def test_programs_with_more_packets_than_the_initial_pool(tmp_path):
    """An allreduce of 12,288 packets (the pool starts at 1,024 rows) beside a background:
    every program packet arrives, and the background delays the allreduce."""
    allreduce = {"kind": "allreduce", "ranks": 64, "size": "16KiB"}
    _, _, alone, _ = run(tmp_path, experiment(workload=allreduce), "alone.yaml")
    prep, raw, summary, packets = run(tmp_path, experiment(
        {"kind": "synthetic", "load": 0.5}, workload=allreduce), "loaded.yaml")
    n_prog = 64 * 6 * 32
    assert prep.job.programs.n_packets == n_prog
    done = int((packets["delivered_ps"] >= 0).sum())
    assert summary.packets_delivered == done + n_prog
    assert summary.programs.messages == alone.programs.messages == 64 * 6
    assert summary.programs.completion_ns > alone.programs.completion_ns
