"""Traffic classes reach packets and results (issue 22, items 2 and 3): classification by job
(``jobs[i].class``), by the operation that sent a packet (``class_by``), by a workload's own
field; the packets table's ``class`` column, per-class figures in the summary, the ports
table's per-class columns, and the link series (sampling changes no figure).

The QoS mechanism itself is another branch's; here a test-only policy with two classes
(``twoclass``: ``high``, ``low``) makes the engine count per class.
"""

from __future__ import annotations

import os
import subprocess
import sys
import types

import numpy as np
import pytest
import yaml
from conftest import REPO, fake_distribution, one_error

from federation import Params, QosPolicy, hookimpl
from federation.pipeline.load import load_experiment
from federation.pipeline.run import run_experiment
from federation.plugin.registry import get_plugins

QUICK = str(REPO / "schemas" / "machines" / "quickstart-dragonfly.yaml")  # 72 nodes
STOP = {"warmup": "0us", "measure": "3us"}
TWO = {"kind": "twoclass"}


class TwoClasses(QosPolicy):
    """Two classes by name; the policy's own class of every message is ``low`` (1)."""

    name = "twoclass"

    class Params(Params):
        pass

    def class_names(self) -> list[str]:
        return ["high", "low"]

    def traffic_class(self, messages):  # noqa: ANN001, ANN201
        return np.ones(messages.count, dtype=np.int16)


@hookimpl
def federation_register_qos(register) -> None:  # noqa: ANN001
    register(TwoClasses)


#: a module holding the hook, importable by a CLI subprocess too (see ``SITE``)
PLUGIN_SOURCE = '''
import numpy as np
from federation import Params, QosPolicy, hookimpl


class TwoClasses(QosPolicy):
    name = "twoclass"

    class Params(Params):
        pass

    def class_names(self):
        return ["high", "low"]

    def traffic_class(self, messages):
        return np.ones(messages.count, dtype=np.int16)


@hookimpl
def federation_register_qos(register):
    register(TwoClasses)
'''


@pytest.fixture(scope="module", autouse=True)
def two_classes() -> None:
    plugins = get_plugins()
    if "twoclass" not in plugins.qos.names():
        mod = types.ModuleType("qos_twoclass_test")
        mod.federation_register_qos = federation_register_qos
        sys.modules[mod.__name__] = mod
        plugins.add(mod, "twoclass-test")


def machine(qos: dict | None = None) -> dict:
    """The quickstart machine with 4 VCs: two classes x minimal routing's two each."""
    doc = yaml.safe_load(open(QUICK).read())
    doc["router"] = {"vcs": 4}
    if qos is not None:
        doc["qos"] = qos
    return doc


def run(tmp_path, doc: dict, name: str = "e.yaml"):  # noqa: ANN201
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc))
    loaded = load_experiment(path)
    result = run_experiment(loaded, tmp_path / f"out-{name}", overwrite=True)
    return result, tmp_path / f"out-{name}"


def table(folder, name: str, i: int = 0) -> dict:
    import pyarrow.parquet as pq

    return pq.read_table(folder / f"{name}-{i}.parquet").to_pydict()


ALLREDUCE = {"kind": "allreduce", "size": "2KiB", "iterations": 2}
PINGPONG = {"kind": "pingpong", "sizes": [4096], "iterations": 3, "nodes": [0, 1]}


def test_classes_by_job_every_packet_of_a_job_in_its_class(tmp_path):
    """Mechanism I: an allreduce job in ``high``, a ping-pong job in ``low``, a background
    without a class of its own in the policy's class (``low``): the packets table's class of
    every packet is its job's."""
    doc = {"machine": machine(TWO), "stop": STOP, "jobs": [
        {"name": "ar", "class": "high", "workload": ALLREDUCE,
         "placement": {"kind": "contiguous", "count": 8}},
        {"name": "pp", "class": "low", "workload": PINGPONG,
         "placement": {"kind": "list", "nodes": [40, 41]}},
        {"name": "bg", "workload": {"kind": "synthetic", "load": 0.1}, "placement": "rest"}]}
    result, out = run(tmp_path, doc)
    pk = table(out, "packets")
    job = np.array(pk["job"])
    cls = np.array(pk["class"])
    assert set(cls[job == "ar"].tolist()) == {0}
    assert set(cls[job == "pp"].tolist()) == {1}
    assert set(cls[job == "bg"].tolist()) == {1}
    assert (job == "ar").sum() > 0 and (job == "pp").sum() > 0
    classes = result.points[0].summary.classes
    assert [c.name for c in classes] == ["high", "low"]
    assert classes[0].packets == int((job == "ar").sum())


def test_rank_programs_without_a_class_take_the_policys(tmp_path):
    """Rule 3 for rank programs too: a closed-loop job naming no class is in the policy's
    ``traffic_class`` of its sends (``low`` here), as an open-loop one is; it was class 0,
    the first served, whatever the policy said."""
    doc = {"machine": machine(TWO), "stop": STOP, "jobs": [
        {"name": "ar", "workload": ALLREDUCE, "placement": {"kind": "contiguous", "count": 8}},
        {"name": "pp", "class": "high", "workload": PINGPONG,
         "placement": {"kind": "list", "nodes": [40, 41]}}]}
    _, out = run(tmp_path, doc)
    pk = table(out, "packets")
    job, cls = np.array(pk["job"]), np.array(pk["class"])
    assert (job == "ar").sum() == 2 * 3 * 8 * 4 and set(cls[job == "ar"].tolist()) == {1}
    assert set(cls[job == "pp"].tolist()) == {0}


def test_class_by_operation_kind_collectives_high_point_to_point_low(tmp_path):
    """Mechanism II: an allreduce's every packet is a collective's (``high``), a ping-pong's
    a point-to-point send's (``low``); the packets table says so packet by packet."""
    by = {"collective": "high", "point_to_point": "low"}
    doc = {"machine": machine(TWO), "stop": STOP, "jobs": [
        {"name": "ar", "class_by": by, "workload": ALLREDUCE,
         "placement": {"kind": "contiguous", "count": 8}},
        {"name": "pp", "class_by": by, "workload": PINGPONG,
         "placement": {"kind": "list", "nodes": [40, 41]}}]}
    result, out = run(tmp_path, doc)
    pk = table(out, "packets")
    job, cls = np.array(pk["job"]), np.array(pk["class"])
    # 8 ranks, recursive doubling: 3 steps of 8 sends of 2 KiB (4 packets of 512 B), twice
    assert (job == "ar").sum() == 2 * 3 * 8 * 4
    assert set(cls[job == "ar"].tolist()) == {0}
    # 3 round trips of 4 KiB: 6 messages of 8 packets
    assert (job == "pp").sum() == 6 * 8 and set(cls[job == "pp"].tolist()) == {1}
    classes = result.points[0].summary.classes
    assert (classes[0].packets, classes[1].packets) == (192, 48)
    assert (classes[0].bytes, classes[1].bytes) == (192 * 512, 48 * 512)


def test_class_by_marks_only_the_collectives_sends():
    """A program of point-to-point calls around a collective: ``op_coll`` marks exactly the
    collective's operations, on every way of writing programs (builder, assembler, DUMPI's
    per-rank sink), and survives the jobs' merge."""
    from federation.pipeline.traffic import concatenated, delayed
    from federation.programs.assembler import ProgramAssembler
    from federation.programs.builder import ProgramBuilder
    from federation.programs.collectives import allreduce, barrier
    from federation.programs.model import SEND

    b = ProgramBuilder(4)
    b.rank(0).send(1, 8)
    b.rank(1).recv(0, 8)
    barrier(b, range(4), tag=10)
    b.rank(2).send(3, 8)
    b.rank(3).recv(2, 8)
    p = b.build()
    sends = np.nonzero(p.op_kind == SEND)[0]
    coll = p.collective_sends()
    # dissemination barrier of 4 ranks: 2 rounds of 4 empty messages
    assert coll.sum() == 8 and (~coll).sum() == 2
    # sends in operation order: rank 0's own (0), 2 barrier sends per rank, rank 2's own
    # after its two (7)
    assert np.nonzero(~coll)[0].tolist() == [0, 7]
    assert p.op_coll[p.rank_first[1]] == 0  # rank 1's receive before the barrier
    a = ProgramAssembler(4)
    a.op(np.array([0]), SEND, peer=1, nbytes=8)
    a.op(np.array([1]), 1, peer=0, nbytes=8)
    allreduce(a, np.arange(4), 64, algorithm="recursive_doubling", tag=5)
    q = a.build()
    assert q.collective_sends().sum() == 8 and (~q.collective_sends()).sum() == 1
    # a collective written by hand, marked by collective_ops
    from federation.programs.collective_ctx import collective_ops

    h = ProgramBuilder(2)
    with collective_ops(h, [0, 1]):
        h.rank(0).send(1, 8)
        h.rank(1).recv(0, 8)
    h.rank(1).send(0, 8)
    h.rank(0).recv(1, 8)
    assert h.build().op_coll.tolist() == [1, 0, 1, 0]
    both = concatenated([(delayed(p, 1000), np.arange(4)), (q, np.arange(4, 8))])
    assert both.collective_sends().tolist() == [*coll.tolist(), *q.collective_sends().tolist()]
    assert sends.size == coll.size


def test_a_workloads_own_class_and_per_class_figures_sum_to_the_totals(tmp_path):
    """The ``messages`` workload's per-message ``class``: each message's packets carry it
    (the others the policy's, ``low``); per-class packets and bytes add up to the measured
    totals."""
    msgs = [{"at": "0ns", "src": 0, "dst": 30, "size": 2048, "class": "high"},
            {"at": "10ns", "src": 1, "dst": 31, "size": 1000},
            {"at": "20ns", "src": 2, "dst": 60, "size": 512, "class": "high"}]
    doc = {"machine": machine(TWO), "stop": {"warmup": "0ns", "measure": "1us"},
           "workload": {"kind": "messages", "messages": msgs}}
    result, out = run(tmp_path, doc)
    pk = table(out, "packets")
    by_msg = {m: set(np.array(pk["class"])[np.array(pk["message"]) == m].tolist())
              for m in range(3)}
    assert by_msg == {0: {0}, 1: {1}, 2: {0}}
    s = result.points[0].summary
    assert [(c.packets, c.bytes) for c in s.classes] == [(5, 2560), (2, 1000)]
    assert sum(c.bytes for c in s.classes) == s.bytes_delivered == 3560
    assert sum(c.packets for c in s.classes) == s.packets_measured
    assert s.classes[0].latency_ns.p99 is not None
    ports = table(out, "ports")
    assert sum(ports["bytes_class_0"]) > 0 and "inactive_ps_class_0" not in ports


def test_without_qos_the_jobs_classes_are_all_class_0_and_results_unchanged(tmp_path):
    """One file sweeps ``machine.qos`` with and without classes: without, every packet is
    class 0 and the document has no per-class figures; the jobs' completion and slowdown
    are reported side by side for both points."""
    doc = {"machine": machine(), "stop": STOP, "slowdown": True,
           "sweep": {"machine.qos": [{"kind": "none"}, TWO]}, "jobs": [
               {"name": "ar", "class": "high", "workload": ALLREDUCE,
                "placement": {"kind": "contiguous", "count": 8}},
               {"name": "bg", "class": "low", "workload": {"kind": "synthetic", "load": 0.2},
                "placement": "rest"}]}
    result, out = run(tmp_path, doc)
    none, two = result.points
    assert none.summary.classes is None and [c.name for c in two.summary.classes] == \
        ["high", "low"]
    assert set(table(out, "packets", 0)["class"]) == {0}
    for p in (none, two):
        ar = next(j for j in p.summary.jobs if j.name == "ar")
        assert ar.completion_ns > 0 and ar.slowdown is not None and ar.slowdown >= 1.0


def test_link_series_sampling_changes_no_figure(tmp_path):
    """``outputs.link_series``: the loop stops at every interval to read the counters; the
    summary is the same as without, and the table's bytes add up to the ports' per-class
    bytes of the router-to-router ports."""
    doc = {"machine": machine(TWO), "stop": STOP, "jobs": [
        {"name": "ar", "class": "high", "workload": ALLREDUCE,
         "placement": {"kind": "contiguous", "count": 8}},
        {"name": "bg", "workload": {"kind": "synthetic", "load": 0.3}, "placement": "rest"}]}
    plain, _ = run(tmp_path, doc, "plain.yaml")
    sampled, out = run(tmp_path, {**doc, "outputs": {"link_series": {"interval": "250ns"}}},
                       "sampled.yaml")
    a = plain.points[0].summary.model_dump(mode="json")
    b = sampled.points[0].summary.model_dump(mode="json")
    assert a == b
    series = table(out, "link_series")
    ports = table(out, "ports")
    router = [i for i, (r, peer) in enumerate(zip(ports["router"], ports["peer_router"],
                                                  strict=True)) if r >= 0 and peer >= 0]
    for k in (0, 1):
        want = sum(ports[f"bytes_class_{k}"][i] for i in router)
        got = sum(b for b, c in zip(series["bytes"], series["class"], strict=True) if c == k)
        assert got == want > 0
    ends = sorted(set(series["end_ps"]))
    assert ends[0] % 250_000 == 0 and all(e - s <= 250_000 for s, e in
                                          zip(series["start_ps"], series["end_ps"], strict=True))
    # bytes count when their packet starts: an interval holds at most one 512 B packet more
    # than the slowest link (4.7 GiB/s global) carries in 250 ns
    assert max(series["utilization"]) <= 1.0 + 512 / (4.7 * 2**30 * 250e-9)
    # the plot draws the table's figures: the busiest link's bytes over its capacity
    from federation.plots.data import load_folders
    from federation.plots.standard import draw_all

    drawn = draw_all(load_folders([out]), tmp_path / "plots")
    fig = drawn.figures["link_classes"][0]
    assert fig.path.name == "link-classes-p0.png" and fig.path.is_file()
    top = fig.links[0]
    rows = np.array(series["port"]) == top.port
    assert sum(float(u.sum()) for u in top.by_class.values()) == pytest.approx(
        float(np.array(series["utilization"])[rows].sum()))
    assert list(top.by_class) == ["high", "low"]


@pytest.fixture(scope="module")
def site(tmp_path_factory):  # noqa: ANN201
    return fake_distribution(tmp_path_factory.mktemp("qos") / "site", "twoclass",
                             PLUGIN_SOURCE)


def cli(site, *args: str, cwd) -> subprocess.CompletedProcess:  # noqa: ANN001
    env = {k: v for k, v in os.environ.items() if not k.startswith("FEDERATION_")}
    env["PYTHONPATH"] = str(site) if site is not None else ""
    env["FEDERATION_DISABLE_PLUGIN_AUTOLOAD"] = "0"
    return subprocess.run([sys.executable, "-c", "from federation.cli import entry; entry()",
                           *args], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=300)


SYN = {"kind": "synthetic", "load": 0.1}
MSGS = {"kind": "messages", "messages": [{"src": 0, "dst": 5, "size": 64},
                                         {"src": 1, "dst": 5, "size": 64, "class": "urgent"}]}
KNOWN = "is not one of machine.qos's classes"


@pytest.mark.parametrize(("doc", "where", "words"), [
    ({"jobs": [{"name": "a", "class": "urgent", "workload": SYN, "placement": "rest"}]},
     "jobs[0].class", f"traffic class 'urgent' {KNOWN} (twoclass: high, low)"),
    ({"jobs": [{"name": "a", "class_by": {"collective": "high", "point_to_point": "bulk"},
                "workload": ALLREDUCE, "placement": "rest"}]},
     "jobs[0].class_by.point_to_point", f"traffic class 'bulk' {KNOWN}"),
    ({"jobs": [{"name": "a", "class_by": {"collective": "high", "point_to_point": "low"},
                "workload": SYN, "placement": "rest"}]},
     "jobs[0].class_by", "'a' is open-loop (give it 'class')"),
    ({"workload": SYN, "classes": {"workload": "urgent"}},
     "classes.workload", f"traffic class 'urgent' {KNOWN}"),
    ({"workload": ALLREDUCE, "class_by": {"collective": "top", "point_to_point": "low"}},
     "class_by.collective", f"traffic class 'top' {KNOWN}"),
    ({"workload": SYN, "classes": {"background": "low"}},
     "classes.background", "the experiment has none"),
    ({"workload": MSGS}, "workload.messages[1].class", f"traffic class 'urgent' {KNOWN}"),
    ({"jobs": [{"name": "a", "class": "high", "workload": SYN, "placement": "rest",
                "class_by": {"collective": "high", "point_to_point": "low"}}]},
     "jobs[0]", "give 'class' or 'class_by', not both"),
    ({"jobs": [{"name": "a", "workload": SYN, "placement": "rest"}],
      "classes": {"workload": "high"}}, "", "with jobs, give each job its 'class'"),
])
def test_unknown_or_misplaced_classes_are_refused_naming_the_field(site, tmp_path, doc, where,
                                                                   words):
    (tmp_path / "e.yaml").write_text(yaml.safe_dump({"machine": machine(TWO), **doc}))
    for cmd in ("validate", "run"):
        line = one_error(cli(site, cmd, "e.yaml", "--out", "o", cwd=tmp_path)
                         if cmd == "run" else cli(site, cmd, "e.yaml", cwd=tmp_path))
        assert f"e.yaml: {where}" in line and words in line, line
    assert not (tmp_path / "o").exists()


def test_link_series_on_another_engine_is_refused(tmp_path):
    (tmp_path / "e.yaml").write_text(yaml.safe_dump({
        "machine": machine(), "engine": {"kind": "simgrid"}, "workload": ALLREDUCE,
        "outputs": {"link_series": {"interval": "1us"}}}))
    line = one_error(cli(None, "validate", "e.yaml", cwd=tmp_path))
    assert "e.yaml: outputs.link_series: the simgrid engine does not sample link series" \
        in line, line


def test_class_by_on_a_skeleton_follows_each_send_packet_by_packet(tmp_path):
    """Nekbone (a gather-scatter of point-to-point messages and two allreduces per
    iteration) with ``class_by``: every packet, rendezvous control packets included, is in
    its message's class, and a message is ``high`` exactly when the skeleton's collectives
    sent it (their tags are COLLECTIVE_TAG and up); the messages table says the same."""
    from federation.plugins.workloads.skeleton_base import COLLECTIVE_TAG

    doc = {"machine": machine(TWO), "stop": STOP, "workload":
           {"kind": "nekbone", "ranks": 8, "iterations": 2},
           "class_by": {"collective": "high", "point_to_point": "low"}}
    result, out = run(tmp_path, doc)
    msgs = table(out, "messages")
    tag, mcls = np.array(msgs["tag"]), np.array(msgs["class"])
    assert (mcls == np.where(tag >= COLLECTIVE_TAG, 0, 1)).all()
    assert (mcls == 0).sum() > 0 and (mcls == 1).sum() > 0
    pk = table(out, "packets")
    assert (np.array(pk["class"]) == mcls[np.array(pk["message"])]).all()
    classes = result.points[0].summary.classes
    assert [c.packets for c in classes] == [int((np.array(pk["class"]) == k).sum())
                                            for k in (0, 1)]
