"""Jobs sharing a machine (issue 21 items 1 and 5): the old form is one job, per-job figures
add up to the run's, a job alone with ``slowdown`` gives 1.0, open-loop traffic stays inside
its job's nodes, ``start`` delays a job exactly, and the tables name each row's job."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml
from conftest import REPO, run_cli

from federation.pipeline.load import load_experiment
from federation.pipeline.messages import merged_batches
from federation.pipeline.run import run_experiment
from federation.plugin.components import Messages

QUICK = str(REPO / "schemas" / "machines" / "quickstart-dragonfly.yaml")  # 72 nodes
STOP = {"warmup": "0us", "measure": "4us"}


def write(tmp_path, doc: dict, name: str = "e.yaml"):  # noqa: ANN201
    path = tmp_path / name
    path.write_text(yaml.safe_dump({"machine": QUICK, **doc}))
    return path


def run(tmp_path, doc: dict, name: str = "e.yaml"):  # noqa: ANN201
    """The point's summary and tables, as the runner makes them."""
    loaded = load_experiment(write(tmp_path, doc, name))
    result = run_experiment(loaded, tmp_path / f"out-{name}", overwrite=True)
    return result.points[0], tmp_path / f"out-{name}"


def table(folder, name: str) -> dict:
    import pyarrow.parquet as pq

    return pq.read_table(folder / f"{name}-0.parquet").to_pydict()


def figures(point) -> dict:  # noqa: ANN001
    out = point.summary.model_dump(mode="json")
    out.pop("jobs", None)
    return out


@pytest.mark.parametrize(("old", "jobs"), [
    ({"workload": {"kind": "synthetic", "load": 0.3, "pattern": "group_shift"}},
     [{"name": "w", "workload": {"kind": "synthetic", "load": 0.3, "pattern": "group_shift"},
       "placement": "all"}]),
    ({"workload": {"kind": "allreduce", "size": "2KiB", "iterations": 2}},
     [{"name": "w", "workload": {"kind": "allreduce", "size": "2KiB", "iterations": 2},
       "placement": "rest"}]),
    ({"workload": {"kind": "pingpong", "sizes": [4096], "iterations": 4, "nodes": [0, 70]},
      "background": {"kind": "synthetic", "load": 0.4}},
     [{"name": "fg", "placement": "all", "shared": True,
       "workload": {"kind": "pingpong", "sizes": [4096], "iterations": 4, "nodes": [0, 70]}},
      {"name": "bg", "placement": "all", "shared": True,
       "workload": {"kind": "synthetic", "load": 0.4}}]),
])
def test_the_old_form_is_one_job(tmp_path, old, jobs):
    """``workload`` (and ``background``) and the same as jobs on every node give the same
    figures and tables; the jobs form adds the per-job summary and the tables' job column."""
    a, fa = run(tmp_path, {**old, "stop": STOP}, "old.yaml")
    b, fb = run(tmp_path, {"jobs": jobs, "stop": STOP}, "new.yaml")
    assert a.summary.jobs is None and b.summary.jobs is not None
    assert figures(a) == figures(b)
    for name in ("packets", "messages", "ports"):
        ta, tb = table(fa, name), table(fb, name)
        tb.pop("job", None)
        assert ta == tb, name


def mixed(**extra) -> dict:
    return {"jobs": [
        {"name": "ar", "workload": {"kind": "allreduce", "size": "4KiB", "iterations": 2},
         "placement": {"kind": "random_nodes", "count": 16}},
        {"name": "pp", "workload": {"kind": "pingpong", "sizes": [512, 16384], "iterations": 3},
         "placement": {"kind": "list", "nodes": [5, 66]}},
        {"name": "bg", "workload": {"kind": "synthetic", "load": 0.3},
         "placement": "rest"},
    ], "stop": STOP, **extra}


def test_per_job_figures_add_up_to_the_run(tmp_path):
    point, folder = run(tmp_path, mixed())
    s = point.summary
    jobs = {j.name: j for j in s.jobs}
    for key in ("packets_delivered", "bytes_delivered"):
        assert sum(getattr(j, key) for j in jobs.values()) == getattr(s, key), key
    assert jobs["ar"].messages + jobs["pp"].messages == s.programs.messages
    assert jobs["ar"].operations + jobs["pp"].operations == s.programs.operations
    assert jobs["ar"].ranks == 16 and jobs["pp"].ranks == 2
    assert max(jobs["ar"].completion_ns, jobs["pp"].completion_ns) == s.programs.completion_ns
    ports = table(folder, "ports")
    nic = np.array(ports["bytes"])[np.array(ports["node"]) >= 0]
    nic_rows = [i for i, r in enumerate(ports["router"]) if r < 0]
    assert sum(j.injection_bytes for j in jobs.values()) == int(
        np.array(ports["bytes"])[nic_rows].sum()) and nic.size
    # two closed-loop jobs: the engine's sums over program packets cannot be split by job
    assert jobs["ar"].latency_ns is None and jobs["pp"].mean_hops is None
    assert jobs["bg"].latency_ns.p99 is not None
    msgs = table(folder, "messages")
    assert set(msgs["job"]) == {"ar", "pp", "bg"}
    for name in ("ar", "pp"):
        rows = [i for i, j in enumerate(msgs["job"]) if j == name]
        assert len(rows) == jobs[name].messages


def test_open_loop_jobs_add_up_and_keep_their_percentiles(tmp_path):
    """Two open-loop jobs: per-job packets, bytes and mean latency recombine into the run's;
    each job's percentiles are its own packets' (from the packets table)."""
    doc = {"jobs": [
        {"name": "a", "workload": {"kind": "synthetic", "load": 0.5,
                                   "pattern": {"kind": "shift", "offset": 3}},
         "placement": {"kind": "random_routers", "count": 24}},
        {"name": "b", "workload": {"kind": "synthetic", "load": 0.2,
                                   "injection": "poisson"}, "placement": "rest"}],
        "stop": STOP}
    point, folder = run(tmp_path, doc)
    s = point.summary
    a, b = s.jobs
    assert a.packets_delivered + b.packets_delivered == s.packets_delivered
    assert a.packets_generated + b.packets_generated == s.packets_generated
    assert a.bytes_injected + b.bytes_injected == s.bytes_injected
    pk = table(folder, "packets")
    measured = np.array(pk["measured"])
    lat = (np.array(pk["delivered_ps"]) - np.array(pk["created_ps"]))[measured] / 1e3
    job = np.array(pk["job"])[measured]
    for j in (a, b):
        mine = lat[job == j.name]
        assert j.latency_ns.mean == pytest.approx(mine.mean(), rel=1e-12)
        assert j.latency_ns.p99 == pytest.approx(float(np.percentile(mine, 99)), rel=1e-12)
    n = a.packets_delivered + b.packets_delivered
    assert s.latency_ns.mean == pytest.approx(
        (a.latency_ns.mean * len(lat[job == "a"]) + b.latency_ns.mean * len(lat[job == "b"]))
        / len(lat), rel=1e-12) and n


def test_confined_traffic_never_leaves_its_nodes(tmp_path):
    """A synthetic job's uniform traffic stays among its own nodes, every destination of
    them drawn."""
    doc = {"jobs": [{"name": "u", "workload": {"kind": "synthetic", "load": 0.6},
                     "placement": {"kind": "random_nodes", "count": 10}},
                    {"name": "other", "workload": {"kind": "allreduce"},
                     "placement": {"kind": "contiguous", "count": 8}}],
           "stop": STOP}
    point, folder = run(tmp_path, doc)
    nodes = set(point.summary.jobs[0].nodes)
    msgs = table(folder, "messages")
    mine = [i for i, j in enumerate(msgs["job"]) if j == "u"]
    assert mine and {msgs["src"][i] for i in mine} == nodes
    assert {msgs["dst"][i] for i in mine} == nodes
    assert all(msgs["src"][i] != msgs["dst"][i] for i in mine)
    pk = table(folder, "packets")
    own = [i for i, j in enumerate(pk["job"]) if j == "u"]  # the allreduce's follow
    assert own and {pk["src"][i] for i in own} | {pk["dst"][i] for i in own} <= nodes


def test_a_job_alone_with_slowdown_gives_one(tmp_path):
    doc = {"jobs": [{"name": "ar", "workload": {"kind": "allreduce", "size": "8KiB"},
                     "placement": {"kind": "random_nodes", "count": 12}}], "slowdown": True}
    point, _ = run(tmp_path, doc)
    (j,) = point.summary.jobs
    assert j.slowdown == 1.0 and j.completion_alone_ns == j.completion_ns > 0


def test_slowdown_beside_background(tmp_path):
    """Beside a loaded background the same job on the same nodes is slower; alone it takes
    what the job alone takes."""
    alone, _ = run(tmp_path, {"jobs": [mixed()["jobs"][0]]}, "alone.yaml")
    both, _ = run(tmp_path, {**mixed(slowdown=True),
                             "jobs": [mixed()["jobs"][0], {**mixed()["jobs"][2],
                                                           "workload": {"kind": "synthetic",
                                                                        "load": 0.9}}],
                             "stop": {"warmup": "0us", "measure": "40us"}}, "both.yaml")
    fg = both.summary.jobs[0]
    assert fg.completion_alone_ns == alone.summary.jobs[0].completion_ns
    assert fg.slowdown == fg.completion_ns / fg.completion_alone_ns > 1


def test_start_delays_a_job_exactly(tmp_path):
    """On an otherwise idle machine a job started later runs the same: its completion from
    its start is the one from 0, its ranks finish that much later."""
    base = {"name": "ar", "workload": {"kind": "allreduce", "size": "1KiB"},
            "placement": {"kind": "contiguous", "count": 8}}
    now, _ = run(tmp_path, {"jobs": [base]}, "now.yaml")
    later, _ = run(tmp_path, {"jobs": [{**base, "start": "3us"}]}, "later.yaml")
    assert later.summary.jobs[0].completion_ns == now.summary.jobs[0].completion_ns
    assert later.summary.jobs[0].start_ns == 3000.0
    assert later.summary.programs.completion_ns == now.summary.programs.completion_ns + 3000
    assert later.summary.jobs[0].operations == now.summary.jobs[0].operations
    # the run's count leaves out the start computes the runner adds, as the job's does
    # (it said 8 more: one per rank)
    assert later.summary.programs.operations == now.summary.programs.operations \
        == now.summary.jobs[0].operations


def test_open_loop_start_and_the_window(tmp_path):
    doc = {"jobs": [{"name": "a", "workload": {"kind": "synthetic", "load": 0.3},
                     "placement": {"kind": "contiguous", "count": 20}, "start": "2us"},
                    {"name": "b", "workload": {"kind": "synthetic", "load": 0.3},
                     "placement": "rest"}], "stop": STOP}
    _, folder = run(tmp_path, doc)
    msgs = table(folder, "messages")
    first = min(c for c, j in zip(msgs["created_ps"], msgs["job"], strict=True) if j == "a")
    assert first >= 2_000_000
    assert min(c for c, j in zip(msgs["created_ps"], msgs["job"], strict=True) if j == "b") \
        < 2_000_000


def test_merged_streams_are_the_sorted_union():
    rng = np.random.default_rng(5)

    def stream(k: int):  # noqa: ANN202
        ends = np.sort(rng.integers(1, 10_000, size=5))
        parts, t0 = [], 0
        for e in ends.tolist():
            t = np.sort(rng.integers(t0, e, size=rng.integers(0, 30)))
            parts.append((e, Messages(t, np.full(t.size, k, np.int32),
                                      np.zeros(t.size, np.int32), np.ones(t.size, np.int64))))
            t0 = e
        return lambda: iter(parts)

    streams = [stream(k) for k in range(3)]
    merged = list(merged_batches(streams)())
    ends = [e for e, _ in merged]
    assert ends == sorted(ends)
    last = 0
    for e, m in merged:
        assert (m.time_ps >= last).all() and (m.time_ps < e).all()
        last = e
    got = np.concatenate([m.time_ps for _, m in merged])
    want = np.sort(np.concatenate([m.time_ps for s in streams for _, m in s()]))
    assert np.array_equal(got, want)


def test_results_name_every_job_and_its_nodes(tmp_path):
    e = write(tmp_path, mixed())
    r = run_cli("run", str(e), "--out", "o", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    p = doc["points"][0]
    names = [j["name"] for j in p["summary"]["jobs"]]
    assert names == ["ar", "pp", "bg"]
    nodes = [set(j["nodes"]) for j in p["summary"]["jobs"]]
    assert nodes[1] == {5, 66} and len(nodes[0]) == 16 and not nodes[0] & nodes[1]
    assert set().union(*nodes) == set(range(72))
    assert [j["name"] for j in p["workload"]["jobs"]] == names
    assert p["resolved"]["jobs"][0]["placement"] == {"kind": "random_nodes", "count": 16}
    # fuzz 43, item 13: no top-level `workload` slot (it was the first job's, recorded as the
    # file's); each job's workload and placement instead
    assert {k: c["name"] for k, c in p["components"].items()} == {
        "topology": "dragonfly", "qos": "none", "arbiter": "oldest_first",
        "routing": "minimal", "engine": "native",
        "jobs.ar.workload": "allreduce", "jobs.ar.placement": "random_nodes",
        "jobs.pp.workload": "pingpong", "jobs.pp.placement": "list",
        "jobs.bg.workload": "synthetic", "jobs.bg.placement": "rest"}
    from federation.plots.reader import load_folder
    from federation.plots.report import components_table

    folder = load_folder(tmp_path / "o")
    rows = components_table(folder.result.points)
    assert "<td class=l>workload</td>" not in rows
    assert "<td class=l>jobs.pp.workload</td><td class=l>pingpong</td>" in rows
    # the report shows what the terminal does: the programs' completion and each job's row
    # (it had the open-loop columns only)
    from federation.plots.report import program_tables

    html = "\n".join(program_tables(folder))
    s = p["summary"]
    assert f"<td>{s['programs']['completion_ns']:.1f}</td>" in html
    for j in s["jobs"]:
        assert f"<td class=l>{j['name']}</td><td>{j['workload']}</td><td>{len(j['nodes'])}" in html
    # the resolved document runs again to the same figures
    (tmp_path / "r.json").write_text(json.dumps(p["resolved"]))
    r2 = run_cli("run", "r.json", "--out", "o2", "--json", cwd=tmp_path)
    assert r2.returncode == 0, r2.stderr
    assert json.loads(r2.stdout)["points"][0]["summary"] == p["summary"]
    # the terminal table has a row per job
    r3 = run_cli("run", str(e), "--out", "o3", cwd=tmp_path)
    rows = [ln.split() for ln in r3.stdout.splitlines()]
    assert any(x[:2] == ["ar", "allreduce"] for x in rows)
    assert any(x[:2] == ["bg", "synthetic"] for x in rows)


def test_plot_draws_each_jobs_completion_and_slowdown(tmp_path):
    """``federation plot`` draws the jobs figure from summary.jobs: the bars are the
    summary's completion, alone and slowdown."""
    from federation.plots.data import series_of
    from federation.plots.jobs import draw_jobs
    from federation.plots.reader import load_folder

    point, folder = run(tmp_path, mixed(slowdown=True))
    fig = draw_jobs(series_of([load_folder(folder)]), [load_folder(folder)], tmp_path / "p",
                    "png")
    jobs = {j.name: j for j in point.summary.jobs}
    assert [b.job for b in fig.bars] == ["ar", "pp"]  # the closed-loop ones
    for b in fig.bars:
        j = jobs[b.job]
        assert (b.completion_ns, b.alone_ns, b.slowdown) == (
            j.completion_ns, j.completion_alone_ns, j.slowdown)
    assert fig.path.is_file()
    r = run_cli("plot", str(folder), "--out", str(tmp_path / "all"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "all" / "jobs.png").is_file()


#: job b of the deadlock test: rank 0's second receive (b) waits for z, which waits for y,
#: which waits for d, which waits for b (its first receive a takes x); not caught before the
#: run, because a and b post in an order that depends on timing
DEADLOCK_GOAL = """num_ranks 2
rank 0 {
 a: recv 8b from 1 tag 0
 c: calc 10
 b: recv 8b from 1 tag 0
 d: send 8b to 1 tag 5
 b requires c
 d requires b
}
rank 1 {
 x: send 8b to 0 tag 0
 y: recv 8b from 0 tag 5
 z: send 8b to 0 tag 0
 y requires x
 z requires y
}
"""


def test_a_deadlocked_job_names_the_job_its_file_and_its_own_ranks(tmp_path):
    """A deadlock in a run of several jobs said "rank 2 operation b (recv 8 B from rank 3
    tag 0, line 5)": run ranks, and a line of no file.  Each stuck operation now names its
    job, the job's rank numbers (those of its file), the run's rank and node, the file and
    the line."""
    from federation.errors import SimulationError

    (tmp_path / "a.goal").write_text((REPO / "tests" / "data" / "programs" / "hand.goal")
                                     .read_text())
    (tmp_path / "b.goal").write_text(DEADLOCK_GOAL)
    doc = {"jobs": [
        {"name": "a", "workload": {"kind": "program", "path": "a.goal"},
         "placement": {"kind": "contiguous", "count": 2}},
        {"name": "b", "workload": {"kind": "program", "path": "b.goal"},
         "placement": {"kind": "list", "nodes": [40, 71]}, "start": "1us"}]}
    with pytest.raises(SimulationError) as e:
        run(tmp_path, doc)
    b = tmp_path / "b.goal"
    text = str(e.value)
    assert "4 operations on 2 ranks never finished; job 'b' rank 0 (rank 2 of the run, node " \
           f"40) operation b (recv 8 B from rank 1 tag 0, {b}:5) started at " in text, text
    assert "; job 'b' rank 1 (rank 3 of the run, node 71) operation y (recv 8 B from rank 0 " \
           f"tag 5, {b}:12) started at " in text, text


@pytest.mark.parametrize("message, path, suffix", [
    # node numbers, counts of nodes or ranks: the job's own
    ("node 70 does not exist (the machine has 64 nodes)", "workload.nodes[1]", "full"),
    ("8 ranks but the machine has 4 nodes (rank i runs on node i unless rank_node places "
     "it)", "workload", "full"),
    ("row_length 10 is not a multiple of the 4 ranks", "workload.row_length", "full"),
    ("rank 0 operation 0 (send 8 B to rank 1 tag 0): node 3's outgoing messages add up",
     "workload", "full"),
    # anything else, the job named by the path: nothing (it misled, naming node numbers)
    ("message_size is 1e+18 B, beyond the largest message (1099511627775 B)",
     "workload.message_size", ""),
    ("rank 0 operation 3 (send 2000000000000 B to rank 1 tag 0): size 2000000000000 B is "
     "outside 0 .. 2**40 - 1 B", "workload", ""),
    ("a rank would compute for 1e+12s in all, past the clock", "workload.compute", ""),
    # anything else at a path outside the job: the job named, with its node count
    ("warm-up plus measurement would create about 2.1e+08 messages", "stop.messages",
     "short"),
])
def test_a_jobs_refusal_speaks_of_its_nodes_only_when_it_is_about_them(message, path, suffix):
    from types import SimpleNamespace

    from federation.errors import ConfigError
    from federation.pipeline.points import in_job

    point = SimpleNamespace(experiment=SimpleNamespace(jobs=[object(), object()]),
                            source="e.yaml")
    job = SimpleNamespace(name="b", field="jobs[1]", workload_field="jobs[1].workload")
    got = in_job(ConfigError(message, path=path), point, job, 64)
    want = {"full": " (job 'b' has 64 nodes; its workload's node numbers are the job's)",
            "short": " (job 'b' has 64 nodes)", "": ""}[suffix]
    assert got.message == message + want
    assert got.path == path.replace("workload", "jobs[1].workload", 1)
    old_form = SimpleNamespace(experiment=SimpleNamespace(jobs=None), source="e.yaml")
    assert in_job(ConfigError(message, path=path), old_form, job, 64).message == message


def test_open_loop_jobs_beside_rank_programs_add_up_to_the_run(tmp_path):
    """Two open-loop jobs beside a pingpong: their packets and bytes generated were null
    (only a run without rank programs was trusted to hold every packet in its table), yet
    their undelivered packets were given; the packets table holds every packet created by
    the end, so each job's figures are given and they add up to the run's."""
    point, _ = run(tmp_path, {"jobs": [
        {"name": "pp", "workload": {"kind": "pingpong", "sizes": ["8B"], "iterations": 10},
         "placement": {"kind": "list", "nodes": [71, 0]}},
        {"name": "b1", "workload": {"kind": "synthetic", "load": 0.3},
         "placement": {"kind": "contiguous", "count": 20, "start": 10}},
        {"name": "b2", "workload": {"kind": "synthetic", "load": 0.3}, "placement": "rest"}],
        "stop": {"warmup": "0us", "measure": "50us"}})
    s = point.summary
    jobs = s.jobs
    assert sum(j.packets_generated for j in jobs) == s.packets_generated
    assert sum(j.bytes_injected for j in jobs) == s.bytes_injected
    assert sum(j.packets_delivered for j in jobs) == s.packets_delivered
    for j in jobs:
        assert j.packets_undelivered == j.packets_generated - j.packets_delivered
    assert sum(j.packets_undelivered for j in jobs) > 0  # the programs ended the run first


def test_a_placement_giving_more_nodes_than_its_count_is_refused(tmp_path):
    """A plugin placement that returned 7 nodes for ``count() == 6`` ran its job on 7, and
    on a full machine the next job was blamed for the missing node."""
    import federation
    from federation import Placement, hookimpl
    from federation.errors import ConfigError
    from federation.pipeline.point import prepare
    from federation.plugin.registry import FederationPlugins

    class Greedy(Placement):
        name = "greedy"

        class Params(federation.Params):
            count: int = 2

        def count(self) -> int:
            return self.params.count

        def place(self, ctx):  # noqa: ANN001, ANN201
            return np.arange(self.params.count + 1)

    class Plugin:
        @hookimpl
        def federation_register_placements(self, register):  # noqa: ANN001, ANN201
            register(Greedy)

    plugins = FederationPlugins()
    plugins.add(Plugin(), "greedy")
    path = write(tmp_path, {"jobs": [{"name": "a", "workload": {"kind": "synthetic"},
                                      "placement": {"kind": "greedy", "count": 6}}],
                            "stop": STOP})
    point = load_experiment(path, plugins=plugins).points[0]
    with pytest.raises(ConfigError) as exc:
        prepare(point)
    assert exc.value.path == "jobs[0].placement"
    assert exc.value.message == ("placement 'greedy' of job 'a' returned 7 nodes where its "
                                 "count() says 6")
