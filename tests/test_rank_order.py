"""Rank order within a job (issue 21 items 3 and 4): two-opt never raises its objective, its
incremental cost equals a full recomputation after every swap (hypothesis), the search and the
static figures through ``federation hops``, and the circulant thesis' Table 4.1 exactly."""

from __future__ import annotations

import json
from functools import cache

import numpy as np
import pytest
import yaml
from conftest import REPO, one_error, run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from federation.network.mapping import contention_of, edges_of, hops_of, router_paths, two_opt
from federation.pipeline.load import load_experiment
from federation.pipeline.point import BuildCache

QUICK = str(REPO / "schemas" / "machines" / "quickstart-dragonfly.yaml")
MACHINES = {
    "dragonfly": QUICK,
    "circulant": {"topology": {"kind": "circulant", "preset": {"k": 5}}, "router": {"vcs": 3}},
    "shortcut": {"topology": {"kind": "random_shortcut", "n": 40, "degree": 5, "seed": 3},
                 "router": {"vcs": 6}},
}


@cache
def built(name: str):  # noqa: ANN201
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:  # (mkdtemp left a folder per session)
        d = Path(tmp)
        (d / "e.yaml").write_text(yaml.safe_dump({"machine": MACHINES[name]}))
        point = load_experiment(d / "e.yaml").points[0]
        return BuildCache(2**32).get(point)


def full(objective: str, edges, pos, slot_router, paths) -> int:  # noqa: ANN001
    if objective == "hops":
        return hops_of(edges, pos, slot_router, paths.hops.astype(np.int64))
    return contention_of(edges, pos, slot_router, paths)[0]


@st.composite
def problems(draw):  # noqa: ANN001, ANN201
    name = draw(st.sampled_from(sorted(MACHINES)))
    b = built(name)
    n_nodes = b.network.n_nodes
    units = draw(st.integers(2, min(20, n_nodes)))
    seed = draw(st.integers(0, 2**31))
    rng = np.random.default_rng(seed)
    slots = rng.choice(n_nodes, size=units, replace=False)
    n_msgs = draw(st.integers(0, 60))
    src = rng.integers(0, units, size=n_msgs)
    dst = rng.integers(0, units, size=n_msgs)
    return name, slots, src, dst, seed


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems(), st.sampled_from(["hops", "contention"]), st.integers(0, 400))
def test_two_opt_never_raises_its_objective_and_its_increments_are_exact(problem, objective,
                                                                         iterations):
    name, slots, src, dst, seed = problem
    b = built(name)
    routers, slot_router = np.unique(b.network.node_router[slots], return_inverse=True)
    paths = router_paths(b.network, b.tables, routers)
    edges = edges_of(src, dst, slots.shape[0])
    pos = np.arange(slots.shape[0])
    start = full(objective, edges, pos, slot_router, paths)
    res = two_opt(edges, pos.copy(), slot_router, paths, objective, iterations,
                  np.random.default_rng(seed))
    assert res.before == start
    assert res.after <= res.before
    assert sorted(res.pos.tolist()) == list(range(slots.shape[0]))  # still a permutation
    assert res.after == full(objective, edges, res.pos, slot_router, paths)
    # swap by swap: each accepted swap's incremental change is the full recomputation's
    cur = pos.copy()
    rng = np.random.default_rng(seed + 1)
    for _ in range(min(iterations, 60)):
        step = two_opt(edges, cur, slot_router, paths, objective, 1, rng)
        assert step.after == full(objective, edges, step.pos, slot_router, paths)
        assert step.after <= step.before
        cur = step.pos


def hops_json(tmp_path, doc: dict) -> dict:
    (tmp_path / "e.yaml").write_text(yaml.safe_dump(doc))
    r = run_cli("hops", "e.yaml", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


COLLECTIVES = {"bcast": "binomial", "allreduce": "recursive_doubling", "alltoall": "bruck"}


@pytest.mark.parametrize("k", [6, 10])
def test_table_4_1_exactly(tmp_path, k):
    """Circulant thesis Table 4.1: on G(n, log n), every message of the binomial broadcast,
    the recursive-doubling allreduce and Bruck's alltoall takes one hop: n - 1, n log n and
    n log n hops in all (all nodes, ranks ascending)."""
    n = 2**k
    doc = {"machine": {"topology": {"kind": "circulant", "preset": {"k": k}},
                       "router": {"vcs": (k + 1) // 2}},
           "jobs": [{"name": op, "placement": "all", "shared": True,
                     "workload": {"kind": "collective", "op": op, "algorithm": alg,
                                  "size": 1024}} for op, alg in COLLECTIVES.items()]}
    jobs = {j["name"]: j for j in hops_json(tmp_path, doc)["points"][0]["jobs"]}
    assert jobs["bcast"]["total_hops"] == jobs["bcast"]["messages"] == n - 1
    for op in ("allreduce", "alltoall"):
        assert jobs[op]["total_hops"] == jobs[op]["messages"] == n * k
        assert jobs[op]["mean_hops"] == 1.0


def test_hops_reports_two_opt_before_and_after(tmp_path):
    """On the 40-switch random shortcut network, a random mapping of 32 ranks: the search
    lowers the allreduce's total hops, and the report's starting figures are the ascending
    order's (the same nodes, not searched)."""
    jobs = [{"name": name, "placement": {"kind": "random_nodes", "count": 32}, "shared": True,
             "workload": {"kind": "collective", "op": "allreduce",
                          "algorithm": "recursive_doubling"},
             "ranks": ranks} for name, ranks in (
                 ("searched", {"order": "two_opt", "iterations": 5000}),
                 ("plain", {"order": "ascending"}))]
    doc = {"machine": MACHINES["shortcut"], "jobs": jobs}
    out = {j["name"]: j for j in hops_json(tmp_path, doc)["points"][0]["jobs"]}
    s = out["searched"]
    assert s["two_opt"]["objective"] == "hops" and s["two_opt"]["iterations"] == 5000
    assert s["two_opt"]["before"] == s["initial"]["total_hops"]
    assert s["two_opt"]["after"] == s["total_hops"] < s["initial"]["total_hops"]
    assert s["messages"] == out["plain"]["messages"] == 32 * 5
    assert "two_opt" not in out["plain"]


def test_two_opt_is_the_runs_order(tmp_path):
    """The order federation hops reports is the one the run places ranks by: the job's nodes
    in results.json are the searched order, with the same figures."""
    job = {"name": "a", "placement": {"kind": "random_nodes", "count": 16},
           "workload": {"kind": "collective", "op": "alltoall", "algorithm": "bruck",
                        "size": 512},
           "ranks": {"order": "two_opt", "objective": "contention", "iterations": 3000}}
    doc = {"machine": MACHINES["shortcut"], "jobs": [job]}
    report = hops_json(tmp_path, doc)["points"][0]["jobs"][0]
    r = run_cli("run", "e.yaml", "--out", "o", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)["points"][0]["summary"]["jobs"][0]
    assert summary["two_opt"] == report["two_opt"]
    assert summary["two_opt"]["after"] <= summary["two_opt"]["before"]
    assert len(summary["nodes"]) == 16 and summary["rank_order"] == "two_opt"


def test_two_opt_of_a_job_too_large_is_refused(tmp_path, monkeypatch):
    import federation.pipeline.jobs as jobs

    monkeypatch.setattr(jobs, "MAX_TWO_OPT_PAIRS", 100)
    doc = {"machine": QUICK, "jobs": [{"name": "big", "placement": "rest",
                                       "workload": {"kind": "allreduce"},
                                       "ranks": {"order": "two_opt"}}]}
    (tmp_path / "e.yaml").write_text(yaml.safe_dump(doc))
    from federation.errors import ConfigError
    from federation.pipeline.point import preflight

    with pytest.raises(ConfigError) as e:
        preflight(load_experiment(tmp_path / "e.yaml"), 2**32)
    assert e.value.path == "jobs[0].ranks.order" and "36 routers" in e.value.message


def test_rank_order_fields_belong_to_two_opt(tmp_path):
    doc = {"machine": QUICK, "jobs": [{"name": "a", "placement": "rest",
                                       "workload": {"kind": "allreduce"},
                                       "ranks": {"order": "cco", "iterations": 5}}]}
    (tmp_path / "e.yaml").write_text(yaml.safe_dump(doc))
    line = one_error(run_cli("validate", "e.yaml", cwd=tmp_path))
    assert "jobs[0].ranks" in line and "two_opt only" in line
