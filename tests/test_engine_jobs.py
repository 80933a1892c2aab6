"""Jobs on the external engines (issue 21 item 7): SimGrid runs several closed-loop jobs as
one set of rank actors on their nodes and refuses open-loop traffic beside them naming the
job; SST runs one job (ember's indexed allocation on its nodes) and refuses the rest by field.

The SimGrid tests run SimGrid: they fail when it is missing (see
:mod:`federation.adapters.simgrid.testing`), unless ``FEDERATION_SIMGRID_OPTIONAL=1``.
"""

from __future__ import annotations

import json

import pytest
import yaml
from conftest import one_error, run_cli

DRAGONFLY = {"topology": {"kind": "dragonfly", "p": 2, "a": 4, "h": 2}}
PINGPONG = {"kind": "pingpong", "sizes": [512, 8192], "iterations": 2}


def two_pingpongs(engine: str, nodes: tuple[list[int], list[int]]) -> dict:
    return {"machine": DRAGONFLY, "engine": {"kind": engine}, "jobs": [
        {"name": "near", "workload": PINGPONG, "placement": {"kind": "list", "nodes": nodes[0]}},
        {"name": "far", "workload": PINGPONG, "placement": {"kind": "list", "nodes": nodes[1]},
         "start": "1us"}]}


def test_simgrid_runs_closed_loop_jobs_on_their_nodes(tmp_path):
    """Two ping-pongs on disjoint nodes share no link: on SimGrid each completes as the same
    ping-pong alone does (the old form, on the same nodes), the later one counted from its
    start."""
    from federation.adapters.simgrid.testing import require_simgrid

    require_simgrid()

    def summary(doc: dict, name: str) -> dict:
        (tmp_path / name).write_text(yaml.safe_dump(doc))
        r = run_cli("run", name, "--out", name + ".out", "--json", cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)["points"][0]["summary"]

    jobs = {j["name"]: j for j in summary(two_pingpongs("simgrid", ([0, 1], [40, 71])),
                                          "jobs.yaml")["jobs"]}
    for name, nodes in (("near", [0, 1]), ("far", [40, 71])):
        alone = summary({"machine": DRAGONFLY, "engine": {"kind": "simgrid"},
                         "workload": {**PINGPONG, "nodes": nodes}}, f"{name}.yaml")
        assert jobs[name]["completion_ns"] == pytest.approx(
            alone["programs"]["completion_ns"], abs=1e-3), name
    assert jobs["far"]["nodes"] == [40, 71] and jobs["far"]["start_ns"] == 1000.0


def test_simgrid_refuses_open_loop_jobs_beside_closed_ones(tmp_path):
    doc = two_pingpongs("simgrid", ([0, 1], [40, 71]))
    doc["jobs"].append({"name": "bg", "workload": {"kind": "synthetic", "load": 0.1},
                        "placement": "rest"})
    (tmp_path / "e.yaml").write_text(yaml.safe_dump(doc))
    line = one_error(run_cli("validate", "e.yaml", cwd=tmp_path))
    assert "e.yaml: jobs[2]: the simgrid engine runs rank programs without background " \
        "traffic" in line and "'bg'" in line, line


@pytest.mark.parametrize(("jobs", "path", "words"), [
    ([{"name": "a", "workload": PINGPONG, "placement": {"kind": "list", "nodes": [3, 50]}},
      {"name": "b", "workload": PINGPONG, "placement": {"kind": "list", "nodes": [4, 9]}}],
     "jobs[1]", "runs rank programs (ember) as one job"),
    ([{"name": "a", "workload": PINGPONG, "placement": "rest", "start": "1us"}],
     "jobs[0].start", "start"),
    ([{"name": "a", "workload": {"kind": "synthetic", "load": 0.2},
       "placement": {"kind": "contiguous", "count": 10}},
      {"name": "b", "workload": PINGPONG, "placement": {"kind": "list", "nodes": [40, 50]}}],
     "jobs[1]", "is closed-loop beside other jobs"),
    ([{"name": "a", "workload": {"kind": "collective", "op": "bcast"}, "placement": "rest"}],
     "jobs[0].workload.kind", "no ember motif twin"),
])
def test_sst_refuses_what_it_cannot_express_naming_the_field(tmp_path, jobs, path, words):
    doc = {"machine": DRAGONFLY, "engine": {"kind": "sst"}, "jobs": jobs}
    (tmp_path / "e.yaml").write_text(yaml.safe_dump(doc))
    for args in (("validate", "e.yaml"), ("sst", "config", "e.yaml", "--out", "c")):
        line = one_error(run_cli(*args, cwd=tmp_path))
        assert f"e.yaml: {path}: engine sst: " in line and words in line, line


def test_sst_places_an_ember_job_on_its_nodes(tmp_path):
    """A ping-pong job on nodes 3 and 50: ember's indexed allocation puts rank 0 on node 3
    and rank 1 on node 50 (the configuration's placement table)."""
    doc = {"machine": DRAGONFLY, "engine": {"kind": "sst"},
           "jobs": [{"name": "pp", "workload": PINGPONG,
                     "placement": {"kind": "list", "nodes": [50, 3]},
                     "ranks": {"order": "placement"}}]}
    (tmp_path / "e.yaml").write_text(yaml.safe_dump(doc))
    r = run_cli("sst", "config", "e.yaml", "--out", "c", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    import ast

    tree = ast.parse((tmp_path / "c" / "config-0.py").read_text())
    value = next(n.value for n in tree.body if isinstance(n, ast.Assign)
                 and getattr(n.targets[0], "id", None) == "PLACEMENT")
    placement = ast.literal_eval(value)
    ranks = {node: rank for node, (job, rank) in enumerate(placement) if job == 0}
    assert ranks == {50: 0, 3: 1}


def test_simgrid_runs_open_loop_jobs_as_one_message_list(tmp_path):
    """Two open-loop jobs (one starting later) on SimGrid: their packets add up to the run's,
    each job's traffic inside its own nodes."""
    from federation.adapters.simgrid.testing import require_simgrid

    require_simgrid()
    doc = {"machine": DRAGONFLY, "engine": {"kind": "simgrid"}, "jobs": [
        {"name": "a", "workload": {"kind": "synthetic", "load": 0.2},
         "placement": {"kind": "contiguous", "count": 30}},
        {"name": "b", "workload": {"kind": "synthetic", "load": 0.3,
                                   "pattern": {"kind": "shift", "offset": 5}},
         "placement": "rest", "start": "1us"}],
        "stop": {"warmup": "1us", "measure": "3us"}}
    (tmp_path / "e.yaml").write_text(yaml.safe_dump(doc))
    r = run_cli("run", "e.yaml", "--out", "o", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)["points"][0]["summary"]
    a, b = s["jobs"]
    assert a["packets_delivered"] + b["packets_delivered"] == s["packets_delivered"] > 0
    import pyarrow.parquet as pq

    t = pq.read_table(tmp_path / "o" / "messages-0.parquet").to_pydict()
    for src, dst, job in zip(t["src"], t["dst"], t["job"], strict=True):
        assert (src < 30) == (dst < 30) == (job == "a")
