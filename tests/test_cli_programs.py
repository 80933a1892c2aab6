"""``federation run`` on rank programs: the printed table against ``results.json``, and the
rank-program workload of ``docs/plugins.md`` installed as a plugin and run from the CLI."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import fake_distribution

from federation.cli.run import format_summary
from federation.programs import RankPrograms
from federation.results.model import RunResult

REPO = Path(__file__).resolve().parent.parent
QUICKSTART = REPO / "schemas" / "machines" / "quickstart-dragonfly.yaml"
PLUGINS_DOC = REPO / "docs" / "plugins.md"


def fenced(text: str, lang: str, first_line: str) -> str:
    """The fenced ``lang`` block of ``text`` whose first line starts with ``first_line``."""
    blocks = re.findall(rf"^```{lang}\n(.*?)^```$", text, flags=re.S | re.M)
    found = [b for b in blocks if b.startswith(first_line)]
    assert len(found) == 1, f"no single ```{lang} block starting {first_line!r}"
    return found[0]


def cli(*args: str, cwd: Path, site: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FEDERATION_")}
    env.pop("PYTHONPATH", None)
    if site is None:
        env["FEDERATION_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    else:  # only the example's entry point, whatever else the machine has installed
        env.update(PYTHONPATH=str(site), FEDERATION_DISABLE_PLUGIN_AUTOLOAD="0",
                   FEDERATION_LOAD_PLUGINS="shift")
    r = subprocess.run([sys.executable, "-c", "from federation.cli import entry; entry()",
                        *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=900)
    assert r.returncode == 0, r.stderr
    return r


def write(path: Path, doc: dict) -> Path:
    path.write_text(yaml.safe_dump(doc))
    return path


def pingpong(tmp_path: Path, name: str, nodes: list[int], iterations: int,
             size: str = "8B", **extra) -> tuple[str, dict]:
    e = write(tmp_path / f"{name}.yaml", {
        "schema_version": 1, "name": name, "machine": str(QUICKSTART),
        "workload": {"kind": "pingpong", "sizes": [size], "iterations": iterations,
                     "nodes": nodes}, **extra})
    r = cli("run", str(e), "--out", str(tmp_path / name), cwd=tmp_path)
    return r.stdout, json.loads((tmp_path / name / "results.json").read_text())


def ps(ns: float) -> int:
    return round(ns * 1000)


# --------------------------------------------------------------------------- the printed table


def test_pingpong_table_is_results_json(tmp_path):
    out, doc = pingpong(tmp_path, "pp", [0, 71], 3)
    s = doc["points"][0]["summary"]
    pg = s["programs"]
    assert (pg["ranks"], pg["operations"], pg["messages"]) == (2, 12, 6)
    # 3 round trips on an idle network: 6 one-way trips, each a message's completion
    assert ps(pg["completion_ns"]) == 6 * ps(s["message_completion_ns_mean"])
    assert ps(pg["completion_ns"]) == ps(max(pg["rank_finish_ns"]))
    lines = out.splitlines()
    assert lines[0].startswith("experiment pp: dragonfly machine quickstart-dragonfly "
                               "(36 routers, 72 nodes; ")
    head = lines[2].split()
    assert head[:5] == ["routing", "ranks", "ops", "msgs", "completion"]
    assert "lat" not in head and "offered" not in head  # not the open-loop table
    fin = pg["rank_finish_ns"]
    row = lines[3].split()
    assert row[:-1] == ["minimal", "2", "12", "6", f"{pg['completion_ns']:.1f}",
                        f"{min(fin):.1f}", f"{sum(fin) / 2:.1f}", f"{max(fin):.1f}",
                        f"{s['message_completion_ns_mean']:.1f}",
                        *(f"{v[k]:{f}}" for v in [pg["message_completion_ns"]]
                          for k, f in (("median", ".1f"), ("qcd", ".3f"),
                                       ("max_over_median", ".2f"))),
                        f"{s['mean_hops']:.2f}", str(s["packets_delivered"])]
    assert lines[5] == "busiest links over the run, until the programs completed:"
    links = s["busiest_links"]
    assert len(links) == 5
    for line, lk in zip(lines[6:11], links, strict=True):
        src = f"router {lk['router']}" if lk["router"] is not None else "NIC"
        assert line == (f"  {src} -> {lk['peer']} [{lk['link_class']}] port {lk['port']}: "
                        f"{100 * lk['utilization_run']:.1f}% busy, {lk['bytes']} bytes")
        assert lk["bytes"] == 3 * 8  # each link of the path carries the 3 messages one way
    assert lines[-1] == f"results: {tmp_path / 'pp'}/results.json"


def test_sweep_prints_one_row_per_point(tmp_path):
    out, doc = pingpong(tmp_path, "sw", [0, 71], 1,
                        sweep={"workload.iterations": [1, 2, 4]})
    rows = [ln.split() for ln in out.splitlines()[3:6]]
    done = [p["summary"]["programs"]["completion_ns"] for p in doc["points"]]
    assert [r[0] for r in rows] == ["1", "2", "4"]
    assert [r[5] for r in rows] == [f"{c:.1f}" for c in done]
    assert ps(done[1]) == 2 * ps(done[0]) and ps(done[2]) == 4 * ps(done[0])
    assert "(workload.iterations=4):" in out


def test_open_loop_table_unchanged_and_mixed_sweeps_print_both(tmp_path):
    _, closed = pingpong(tmp_path, "pp", [0, 1], 1)
    (tmp_path / "o.yaml").write_text(
        "machine: {topology: {kind: dragonfly, p: 1, a: 2, h: 1}}\n"
        "workload: {kind: synthetic, load: 0.2}\nstop: {warmup: 0.5us, messages: 200}\n")
    r = cli("run", "o.yaml", "--out", "o", cwd=tmp_path)
    open_doc = json.loads((tmp_path / "o" / "results.json").read_text())
    s = open_doc["points"][0]["summary"]
    lines = r.stdout.splitlines()
    assert lines[2].split() == ["routing", "offered", "accepted", "lat", "mean", "ns", "p50",
                                "p99", "hops", "nonmin", "measured", "wall", "s"]
    assert lines[3].split()[:9] == [
        "minimal", f"{s['offered_load']:.3f}", f"{s['accepted_load']:.3f}",
        f"{s['latency_ns']['mean']:.1f}", f"{s['latency_ns']['p50']:.1f}",
        f"{s['latency_ns']['p99']:.1f}", f"{s['mean_hops']:.2f}",
        f"{s['nonminimal_fraction']:.2f}", str(s["packets_measured"])]
    assert lines[5] == "busiest links in the measurement window (the run):"
    # both kinds of point in one result: both tables, open loop first
    mixed = RunResult.model_validate(open_doc)
    point = RunResult.model_validate(closed).points[0]
    mixed = mixed.model_copy(update={"points": [*mixed.points, point]})
    text = format_summary(mixed, None).splitlines()
    assert "lat mean ns" in text[2] and "completion ns" in text[5]
    done = closed["points"][0]["summary"]["programs"]["completion_ns"]
    assert text[6].split()[4] == f"{done:.1f}"
    # a swept mapping (a mixed sweep swaps whole workloads) heads the busiest links as the
    # table's cell does, compact JSON, not a Python dict
    swept = point.model_copy(update={"sweep": {"workload": {"kind": "pingpong",
                                                            "iterations": 1}}})
    text = format_summary(mixed.model_copy(update={"points": [swept]}), None).splitlines()
    assert ('busiest links over the run, until the programs completed '
            '(workload={"kind":"pingpong","iterations":1}):') in text


# --------------------------------------------------------------------------- the docs' example


@pytest.fixture(scope="module")
def shift_site(tmp_path_factory) -> Path:
    source = fenced(PLUGINS_DOC.read_text(), "python", "# federation_shift.py")
    return fake_distribution(tmp_path_factory.mktemp("shift") / "site", "shift", source)


def test_docs_example_runs_from_the_cli(shift_site, tmp_path):
    (tmp_path / "shift.yaml").write_text(
        fenced(PLUGINS_DOC.read_text(), "yaml", "# shift.yaml"))
    r = cli("run", "shift.yaml", "--out", "out", cwd=tmp_path, site=shift_site)
    doc = json.loads((tmp_path / "out" / "results.json").read_text())
    s = doc["points"][0]["summary"]
    pg = s["programs"]
    # 8 ranks x 3 passes x (compute, irecv, send)
    assert (pg["ranks"], pg["operations"], pg["messages"]) == (8, 72, 24)
    assert s["bytes_delivered"] == 24 * 4096
    assert min(pg["rank_finish_ns"]) > 3000  # three 1 us computes, one after the other
    row = r.stdout.splitlines()[3].split()
    assert row[:5] == ["minimal", "8", "72", "24", f"{pg['completion_ns']:.1f}"]
    # the table shown in the docs is this run's
    shown = fenced(PLUGINS_DOC.read_text(), "text", "routing  ranks")
    assert shown.splitlines()[1].split()[:-1] == row[:-1]


def test_docs_example_is_half_a_pingpong(shift_site, tmp_path):
    """Two ranks shifting k times on idle links is k one-way trips, a pingpong's 2k: each
    pass waits for the other rank's message, and the two directions share no port."""
    e = write(tmp_path / "s.yaml", {"schema_version": 1, "machine": str(QUICKSTART),
                                    "workload": {"kind": "shift", "ranks": 2, "size": "8B",
                                                 "iterations": 5}})
    cli("run", str(e), "--out", "s", cwd=tmp_path, site=shift_site)
    shift = json.loads((tmp_path / "s" / "results.json").read_text())
    _, pp = pingpong(tmp_path, "pp", [0, 1], 5)
    a = shift["points"][0]["summary"]["programs"]["completion_ns"]
    b = pp["points"][0]["summary"]["programs"]["completion_ns"]
    assert 2 * ps(a) == ps(b) > 0


def test_docs_vectorised_path_gives_the_builders_programs(shift_site, monkeypatch):
    import importlib.util

    spec = importlib.util.spec_from_file_location("federation_shift",
                                                  shift_site / "federation_shift.py")
    mod = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "federation_shift", mod)  # pydantic resolves names there
    spec.loader.exec_module(mod)
    scope: dict = {}
    exec(fenced(PLUGINS_DOC.read_text(), "python", "# shift, vectorised"), scope)  # noqa: S102

    class Ctx:
        class network:  # noqa: N801
            n_nodes = 100

    for n, k in [(2, 1), (3, 3), (7, 4), (64, 2)]:
        built = mod.Shift(mod.ShiftParams(ranks=n, size=100, iterations=k)).programs(Ctx)
        blocks: RankPrograms = scope["shift_blocks"](n, 100, k)
        for f in ("rank_first", "op_kind", "op_peer", "op_bytes", "op_tag", "op_time_ps"):
            assert np.array_equal(getattr(built, f), getattr(blocks, f)), f

        def edges(p: RankPrograms) -> set:
            return set(zip(p.dep_before.tolist(), p.dep_after.tolist(), p.dep_kind.tolist(),
                           strict=True))

        assert edges(built) == edges(blocks) and built.n_deps == blocks.n_deps


def test_an_explicit_format_reads_a_schedule_whatever_its_name(tmp_path):
    """A TI trace named ``.json`` with ``--format ti`` was read as an experiment ("invalid
    JSON at line 1"): the extension decided before the format given was looked at."""
    from conftest import run_cli

    trace = tmp_path / "pp.json"
    trace.write_text((REPO / "tests" / "data" / "programs" / "pingpong.ti").read_text())
    r = run_cli("comm", "pp.json", "--format", "ti", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    same = run_cli("comm", str(REPO / "tests" / "data" / "programs" / "pingpong.ti"),
                   "--json", cwd=tmp_path)
    assert json.loads(r.stdout)["ranks"] == json.loads(same.stdout)["ranks"]


def test_a_calc_unit_past_the_clock_is_refused_in_one_line(tmp_path):
    """``export --calc-unit 1e7s`` (2**63 ps and more) was an OverflowError traceback."""
    from conftest import one_error, run_cli

    line = one_error(run_cli("export", str(REPO / "tests" / "data" / "programs" / "hand.goal"),
                             "--out", "x.goal", "--calc-unit", "1e7s", cwd=tmp_path))
    assert line.startswith("error: --calc-unit: 1e7s is beyond the engine's clock range")
    assert not (tmp_path / "x.goal").exists()
