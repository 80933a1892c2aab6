"""Traffic classes (``machine.qos``) on the other engines (issue 22, item 5).

SST merlin runs ``strict_priority`` between two classes of open-loop jobs: each job's
endpoints confined to it by a node id map and carried on its class's VN, the routers'
output ports arbitrated by ``merlin.arb.output.qos.multi`` with ``[100, 0]`` (see
``adapters/sst/qos.py``, ``adapters/sst/jobs.py`` and docs/sst.md, "QoS").  Every other
policy, three classes, and any policy on rank programs (ember) are refused before anything
runs, naming the machine file, ``qos.kind``, the policy and why.  SimGrid keeps refusing every
policy the same way.  The configurations are checked by running them against a stand-in
``sst`` module; no SST is needed.

The QoS policies themselves (``strict_priority``, ``bandwidth_caps``,
``weighted_round_robin``, with the syntax of issue 22) are the qos-engine's; where they are not
installed, stand-ins of the same names and parameters are registered here.
"""

from __future__ import annotations

import dataclasses
import shutil
import types
from pathlib import Path

import pytest
import yaml
from conftest import run_cli
from test_sst_ember_output import fake_sst

from federation import Params, QosPolicy, hookimpl
from federation.errors import ConfigError
from federation.plugin.registry import FederationPlugins


class _Class(Params):
    name: str
    cap: float | None = None
    weight: float | None = None


def _stand_in(kind: str) -> type[QosPolicy]:
    class StandIn(QosPolicy):
        name = kind

        class Params(Params):
            classes: list[_Class]
            window: str | None = None
            window_kind: str | None = None
            at: list[str] | None = None

        def class_names(self) -> list[str]:
            return [c.name for c in self.params.classes]

    return StandIn


KINDS = ("strict_priority", "bandwidth_caps", "weighted_round_robin")


def plugins() -> FederationPlugins:
    pm = FederationPlugins(load_entrypoints=False)
    missing = [k for k in KINDS if k not in pm.qos.items]
    if missing:

        @hookimpl
        def federation_register_qos(register) -> None:  # noqa: ANN001
            for k in missing:
                register(_stand_in(k))

        module = types.ModuleType("qos_stand_ins")
        module.federation_register_qos = federation_register_qos
        pm.add(module, "qos_stand_ins", "tests")
    return pm


QOS = {
    "strict_priority": {"kind": "strict_priority", "classes": [{"name": "high"},
                                                               {"name": "low"}]},
    "bandwidth_caps": {"kind": "bandwidth_caps", "window": "5us",
                       "classes": [{"name": "high", "cap": 0.7}, {"name": "low", "cap": 0.3}]},
    "weighted_round_robin": {"kind": "weighted_round_robin",
                             "classes": [{"name": "a", "weight": 3}, {"name": "b", "weight": 1}]},
}

WHY = {
    "strict_priority": "not three or more: its second, work-conserving pass serves the lower "
                       "VNs least-recently-used first",
    "bandwidth_caps": "has a fixed window of 100 flit cycles and serves the VNs within budget "
                      "least-recently-used first, not by priority",
    "weighted_round_robin": "not its packet-by-packet order",
}


def point(tmp_path: Path, kind: str, engine: str, workload: dict):
    from federation.pipeline.load import load_experiment

    machine = {"topology": {"kind": "dragonfly", "p": 2, "a": 4, "h": 2},
               "router": {"vcs": 4}, "qos": QOS[kind]}  # 2 classes x minimal's 2 VCs
    (tmp_path / "m.yaml").write_text(yaml.safe_dump(machine))
    doc = {"machine": "m.yaml", "engine": {"kind": engine}, "workload": workload,
           "stop": {"warmup": "1us", "measure": "3us"}}
    (tmp_path / "e.yaml").write_text(yaml.safe_dump(doc))
    return load_experiment(tmp_path / "e.yaml", plugins=plugins()).points[0]


OPEN = {"kind": "synthetic", "load": 0.3}
CLOSED = {"kind": "pingpong", "sizes": ["64KiB"], "iterations": 1, "nodes": [0, 71]}


def refusal(p) -> str:
    from federation.adapters.sst import build_config
    from federation.pipeline.build import build_network

    with pytest.raises(ConfigError) as e:
        build_config(p, build_network(p), p.engine.params)
    return str(e.value)


ENDING = ("use qos: none, or strict_priority with two classes on open-loop jobs, with engine "
          "sst (docs/sst.md, QoS)")


@pytest.mark.parametrize("kind", ["bandwidth_caps", "weighted_round_robin"])
def test_sst_refuses_caps_and_wrr_open_loop_naming_qos_and_why(tmp_path, kind):
    msg = refusal(point(tmp_path, kind, "sst", OPEN))
    assert msg.startswith(f"{tmp_path / 'm.yaml'}: qos.kind: engine sst: QoS policy "
                          f"{kind!r} (2 classes) is not mapped to merlin: "), msg
    assert WHY[kind] in msg and msg.endswith(ENDING), msg


@pytest.mark.parametrize("kind", KINDS)
def test_sst_refuses_every_policy_on_rank_programs(tmp_path, kind):
    msg = refusal(point(tmp_path, kind, "sst", CLOSED))
    assert msg == (f"{tmp_path / 'm.yaml'}: qos.kind: engine sst: QoS policy {kind!r} (2 "
                   "classes) is not mapped to merlin: firefly's NIC chooses a packet's VN by "
                   "protocol (get responses, shmem), not by job or operation, so no class "
                   f"reaches its VN; {ENDING}")


def test_sst_refuses_strict_priority_with_three_classes(tmp_path):
    from federation.pipeline.load import load_experiment

    machine = {"topology": {"kind": "dragonfly", "p": 2, "a": 4, "h": 2}, "router": {"vcs": 6},
               "qos": {"kind": "strict_priority",
                       "classes": [{"name": "a"}, {"name": "b"}, {"name": "c"}]}}
    (tmp_path / "m.yaml").write_text(yaml.safe_dump(machine))
    doc = {"machine": "m.yaml", "engine": {"kind": "sst"}, "workload": OPEN,
           "stop": {"warmup": "1us", "measure": "3us"}}
    (tmp_path / "e.yaml").write_text(yaml.safe_dump(doc))
    msg = refusal(load_experiment(tmp_path / "e.yaml").points[0])
    assert msg.startswith(f"{tmp_path / 'm.yaml'}: qos.kind: engine sst: QoS policy "
                          "'strict_priority' (3 classes) is not mapped to merlin: "), msg
    assert WHY["strict_priority"] in msg and msg.endswith(ENDING), msg


def test_sst_maps_no_qos_to_one_vn(tmp_path):
    from federation.adapters.sst import build_config
    from federation.pipeline.build import build_network
    from federation.pipeline.load import load_experiment

    doc = {"machine": {"topology": {"kind": "dragonfly", "p": 2, "a": 4, "h": 2},
                       "qos": {"kind": "none"}},
           "engine": {"kind": "sst"}, "workload": OPEN,
           "stop": {"warmup": "1us", "measure": "3us"}}
    (tmp_path / "e.yaml").write_text(yaml.safe_dump(doc))
    p = load_experiment(tmp_path / "e.yaml").points[0]
    text = build_config(p, build_network(p), p.engine.params).text
    assert "'num_vns': 1" in text and "qos" not in text.split("ROUTER_PARAMS", 1)[1]


def test_simgrid_refuses_qos_naming_the_file_and_field(tmp_path):
    from federation.pipeline.build import build_network

    p = point(tmp_path, "strict_priority", "simgrid", {
        "kind": "messages", "messages": [{"at": "0ns", "src": 0, "dst": 9, "size": 64}]})
    with pytest.raises(ConfigError) as e:
        p.engine.check(p, types.SimpleNamespace(network=build_network(p)))
    assert str(e.value) == (f"{tmp_path / 'm.yaml'}: qos.kind: the simgrid engine has no QoS "
                            "model; qos 'strict_priority' cannot be represented (use qos: none, "
                            "or the native engine)")


# --------------------------------------------------------------------------- mapped: jobs


STRICT = {"kind": "strict_priority", "classes": [{"name": "high"}, {"name": "low"}]}


def two_jobs(tmp_path: Path, qos: dict, counts=(36, 36), **extra):
    """Two open-loop uniform jobs on random nodes of the 72-node dragonfly: 'app' in class
    high at 0.3, 'bg' in class low at 0.8; their configuration run against a stand-in sst."""
    from federation.adapters.sst.run import generate
    from federation.pipeline.load import load_experiment

    machine = {"topology": {"kind": "dragonfly", "p": 2, "a": 4, "h": 2},
               "router": {"vcs": 4}, "qos": qos}
    jobs = [{"name": "app", "workload": {"kind": "synthetic", "load": 0.3},
             "placement": {"kind": "random_nodes", "count": counts[0]}, "class": "high"},
            {"name": "bg", "workload": {"kind": "synthetic", "load": 0.8},
             "placement": {"kind": "random_nodes", "count": counts[1]}, "class": "low"}]
    for job, more in zip(jobs, extra.get("job_extra", [{}, {}]), strict=True):
        job.update(more)
    doc = {"machine": machine, "engine": {"kind": "sst"}, "jobs": jobs,
           "stop": {"warmup": "1us", "measure": "3us"}}
    (tmp_path / "e.yaml").write_text(yaml.safe_dump(doc))
    loaded = load_experiment(tmp_path / "e.yaml")
    (p, cfg), = generate(loaded)
    return p, cfg


def run_config(text: str, monkeypatch: pytest.MonkeyPatch):
    from test_sst_adapter import execute

    return execute(text, monkeypatch)


def placed_nodes(p):
    from federation.pipeline.bounds import default_max_memory
    from federation.pipeline.build import build
    from federation.pipeline.jobs import place_jobs

    placed = place_jobs(p, build(p, default_max_memory()))
    return [placed.of(j).nodes.tolist() for j in p.jobs]


def test_strict_priority_two_jobs_map_to_two_vns(tmp_path, monkeypatch):
    p, cfg = two_jobs(tmp_path, STRICT)
    fake = run_config(cfg.text, monkeypatch)
    for rtr in fake.of_type("merlin.hr_router"):
        assert rtr.params["num_vns"] == 2
        assert rtr.params["portcontrol.output_arb"] == "merlin.arb.output.qos.multi"
        assert rtr.params["portcontrol.arbitration.qos_settings"] == [100, 0]
    eps = fake.of_type("merlin.offered_load")
    assert len(eps) == 72
    nodes = placed_nodes(p)
    assert sorted(nodes[0] + nodes[1]) == list(range(72))
    for j, (load, vn) in enumerate([(0.3, 0), (0.8, 1)]):
        for logical, node in enumerate(nodes[j]):
            ep = fake.components[f"nic{node}"]
            assert ep.params["offered_load"] == load and ep.params["num_peers"] == 36
            nic = ep.subs["networkIF"]
            assert {k: nic.params[k] for k in ("job_id", "job_size", "use_nid_remap",
                                               "vn_remap", "logical_nid")} == {
                "job_id": j, "job_size": 36, "use_nid_remap": "true", "vn_remap": [vn],
                "logical_nid": logical}
    assert cfg.classes == ["high", "low"]
    assert cfg.jobs == [(0.3, 0, nodes[0]), (0.8, 1, nodes[1])]
    assert any("qos.multi [100, 0]" in n for n in cfg.notes)


def test_nodes_of_no_job_get_no_endpoint(tmp_path, monkeypatch):
    p, cfg = two_jobs(tmp_path, STRICT, counts=(20, 30))
    fake = run_config(cfg.text, monkeypatch)
    nodes = placed_nodes(p)
    assert sorted(c.name for c in fake.of_type("merlin.offered_load")) == sorted(
        f"nic{n}" for n in nodes[0] + nodes[1])
    idle = set(range(72)) - set(nodes[0]) - set(nodes[1])
    hosts = {n: (r, port) for n, r, port in cfg.network.hosts}
    for n in idle:  # the router port of an idle node is left unconnected
        r, port = hosts[n]
        assert (f"rtr{r}", f"port{port}") not in fake.ports


def test_jobs_without_qos_share_vn_zero(tmp_path, monkeypatch):
    _, cfg = two_jobs(tmp_path, {"kind": "none"})
    fake = run_config(cfg.text, monkeypatch)
    assert {r.params["num_vns"] for r in fake.of_type("merlin.hr_router")} == {1}
    assert all("portcontrol.output_arb" not in r.params
               for r in fake.of_type("merlin.hr_router"))
    assert {tuple(c.subs["networkIF"].params["vn_remap"])
            for c in fake.of_type("merlin.offered_load")} == {(0,)}
    assert cfg.classes == []


def test_one_workload_in_class_zero_keeps_the_plain_endpoints(tmp_path, monkeypatch):
    from federation.adapters.sst.run import generate
    from federation.pipeline.load import load_experiment

    doc = {"machine": {"topology": {"kind": "dragonfly", "p": 2, "a": 4, "h": 2},
                       "router": {"vcs": 4}, "qos": STRICT},
           "engine": {"kind": "sst"}, "workload": OPEN,
           "stop": {"warmup": "1us", "measure": "3us"}}
    (tmp_path / "e.yaml").write_text(yaml.safe_dump(doc))
    (_, cfg), = generate(load_experiment(tmp_path / "e.yaml"))
    fake = run_config(cfg.text, monkeypatch)
    assert "JOB_OF" not in cfg.text
    assert {r.params["num_vns"] for r in fake.of_type("merlin.hr_router")} == {2}
    assert all("vn_remap" not in c.subs["networkIF"].params
               for c in fake.of_type("merlin.offered_load"))


def test_two_jobs_on_one_node_are_refused(tmp_path):
    listed = {"kind": "list", "nodes": [0, 1, 2]}
    with pytest.raises(ConfigError) as e:
        two_jobs(tmp_path, STRICT, job_extra=[{"placement": listed, "shared": True},
                                              {"placement": listed, "shared": True}])
    assert str(e.value) == (f"{tmp_path / 'e.yaml'}: jobs[1].placement: engine sst: jobs "
                            "'app' and 'bg' share node 0: a merlin host port has one endpoint")


def test_a_jobs_workload_refusal_names_the_job(tmp_path):
    with pytest.raises(ConfigError) as e:
        two_jobs(tmp_path, STRICT, job_extra=[{}, {"workload": {
            "kind": "synthetic", "load": 0.8, "pattern": {"kind": "group_shift"}}}])
    assert str(e.value).startswith(f"{tmp_path / 'e.yaml'}: jobs[1].workload.pattern: engine "
                                   "sst: pattern 'group_shift'"), str(e.value)


DATA = Path(__file__).resolve().parent / "data" / "sst"
QOS_RUN = DATA / "qos-two-jobs"


def kept_config():
    """The configuration of the kept experiment (``tests/data/sst/qos-two-jobs.yaml``)."""
    from federation.adapters.sst.run import generate
    from federation.pipeline.load import load_experiment

    (p, cfg), = generate(load_experiment(DATA / "qos-two-jobs.yaml"))
    return p, cfg


def test_class_figures_from_real_sst_output():
    """The kept output of a real sst run (``tests/data/sst/qos-two-jobs``): each job's table
    attributed by its load, packets per class from the host ports of the class's nodes,
    latencies as offered_load printed them."""
    from federation.adapters.sst.results import (
        SstStdout,
        job_latencies,
        parse_stats_csv,
        parse_stdout,
        summarize,
    )

    _, cfg = kept_config()
    rows = parse_stats_csv((QOS_RUN / "stats.csv").read_text())
    out = parse_stdout((QOS_RUN / "sst.stdout").read_text())
    assert [(r.load, r.behind) for r in out.loads] == [(0.3, False), (0.9, True)]
    assert job_latencies(cfg, out) == [783.599, 2913.57]
    s = summarize(cfg, rows, out, 512)
    assert [(c.name, c.packets, c.bytes, c.latency_ns.mean) for c in s.classes] == [
        ("high", 1185, 1185 * 512, 783.599), ("low", 2460, 2460 * 512, 2913.57)]
    assert s.latency_ns.mean == (783.599 * 1185 + 2913.57 * 2460) / (1185 + 2460)
    assert s.packets_delivered == 1185 + 2460
    # the tables come in no known order (a real run printed app's first with bg's first
    # node lower, and with it higher): a row goes to the job of its load
    swapped = SstStdout(out.simulated_time_s, out.loads[::-1])
    assert job_latencies(cfg, swapped) == [783.599, 2913.57]
    # two jobs of one load, or a load no job has: no job gets a latency
    same = dataclasses.replace(cfg, jobs=[(0.3, 0, cfg.jobs[0][2]), (0.3, 1, cfg.jobs[1][2])])
    assert job_latencies(same, out) == [None, None]
    other = SstStdout(out.simulated_time_s, [out.loads[0], dataclasses.replace(
        out.loads[1], load=0.8)])
    assert job_latencies(cfg, other) == [None, None]
    assert summarize(cfg, rows, other, 512).classes[0].latency_ns.mean is None


def test_crossval_compares_the_high_class_with_sst(tmp_path, monkeypatch):
    """The QoS scenario of the shipped native-vs-sst suite, SST replayed from the kept
    output: the high class's latency and packets agree within the suite's tolerances."""
    import sys

    from federation.crossval.run import SuiteRunner
    from federation.schemas import crossval as shipped

    suite = yaml.safe_load((Path(shipped.__file__).parent
                            / "native-vs-sst.crossval.yaml").read_text())
    suite["scenarios"] = [s for s in suite["scenarios"]
                          if s["name"] == "strict-priority-two-jobs"]
    exp = yaml.safe_load((DATA / "qos-two-jobs.yaml").read_text())
    exp.pop("engine")
    exp.pop("name")
    assert suite["scenarios"][0]["experiment"] == exp  # the kept run is the suite's scenario
    path = tmp_path / "s.crossval.yaml"
    path.write_text(yaml.safe_dump(suite))
    fake_sst(tmp_path / "bin", QOS_RUN)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{Path(sys.executable).parent}:/usr/bin:/bin")
    res = SuiteRunner(path).run_all()
    assert [(c.metric, c.status) for c in res.checks] == [
        ("class_latency_mean_ns[high]", "pass"), ("class_packets[high]", "pass")]
    lat, pkts = res.checks
    # the native reference: 788.639 ns and 1204 packets before the synthetic workload drew
    # the last 0.12 slot before the horizon (12 us = 132.12 slots)
    assert (lat.value, lat.reference, pkts.value, pkts.reference) == (783.599, pytest.approx(
        788.777, abs=1e-3), 1185.0, 1208.0)


def test_federation_run_reports_classes_and_jobs_from_sst(tmp_path, monkeypatch):
    """``federation run`` of the kept experiment, sst replayed from its kept output: the
    results document has each class and each job, with what merlin's statistics say."""
    import json
    import sys

    fake_sst(tmp_path / "bin", QOS_RUN)
    env = {"PATH": f"{tmp_path / 'bin'}:{Path(sys.executable).parent}:/usr/bin:/bin"}
    r = run_cli("run", str(DATA / "qos-two-jobs.yaml"), "--out", "o", cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    (pt,) = json.loads((tmp_path / "o" / "results.json").read_text())["points"]
    s = pt["summary"]
    assert [(c["name"], c["packets"], c["latency_ns"]["mean"]) for c in s["classes"]] == [
        ("high", 1185, 783.599), ("low", 2460, 2913.57)]
    app, bg = s["jobs"]
    assert (app["name"], app["placement"], app["packets_delivered"], app["latency_ns"]["mean"]
            ) == ("app", "random_nodes", 1185, 783.599)
    assert (bg["name"], bg["placement"], bg["packets_delivered"], bg["latency_ns"]["mean"]
            ) == ("bg", "rest", 2460, 2913.57)
    assert len(app["nodes"]) == len(bg["nodes"]) == 36
    assert sorted(app["nodes"] + bg["nodes"]) == list(range(72))
    assert app["bytes_delivered"] == 1185 * 512
    assert app["bytes_injected"] + bg["bytes_injected"] == s["bytes_injected"]


def test_sst_run_notes_the_replaced_axis(tmp_path):
    """``federation sst run`` prints the notes ``federation run`` prints, once every point
    passed its checks (here: an override that replaced a sweep axis)."""
    import sys

    exp = yaml.safe_load((DATA / "qos-two-jobs.yaml").read_text())
    exp["sweep"] = {"jobs.bg.workload.load": [0.5, 0.9]}
    (tmp_path / "e.yaml").write_text(yaml.safe_dump(exp))
    fake_sst(tmp_path / "bin", QOS_RUN)
    env = {"PATH": f"{tmp_path / 'bin'}:{Path(sys.executable).parent}:/usr/bin:/bin"}
    r = run_cli("sst", "run", "e.yaml", "--set", "jobs.bg.workload.load=0.9", "--out", "o",
                cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stderr.splitlines()[0].startswith(
        "note: --set jobs.bg.workload.load=0.9 replaces the sweep over jobs.bg.workload.load "
        "(2 values) in e.yaml"), r.stderr


SST = shutil.which("sst")


@pytest.mark.skipif(SST is None, reason="sst is not on PATH (SST is in no package registry; "
                    "build sst-core and sst-elements outside the repository to run this)")
def test_real_sst_runs_two_classes_as_kept(tmp_path):
    """The kept experiment on real sst gives the kept statistics (SST is deterministic)."""
    r = run_cli("run", str(DATA / "qos-two-jobs.yaml"), "--out", "o", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    kept = (QOS_RUN / "stats.csv").read_text()
    assert (tmp_path / "o" / "sst-0" / "stats.csv").read_text() == kept


def test_crossval_class_metrics_name_a_class():
    from pydantic import ValidationError

    from federation.crossval.models import MetricSpec

    m = MetricSpec.model_validate({"metric": "class_latency_mean_ns", "class": "high",
                                   "tolerance": {"relative": 0.1}})
    assert m.label == "class_latency_mean_ns[high]" and m.unit == "ns"
    with pytest.raises(ValidationError, match="needs 'class: <name>'"):
        MetricSpec.model_validate({"metric": "class_packets", "tolerance": {"relative": 0.1}})
    with pytest.raises(ValidationError, match="'class' applies to"):
        MetricSpec.model_validate({"metric": "accepted_load", "class": "high",
                                   "tolerance": {"relative": 0.1}})
