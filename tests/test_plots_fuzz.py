"""Fuzz 45's defects of ``plot`` and ``report`` reading results folders.

4. a ``link_series`` class number far above the point's classes made the class-share figure
   allocate one series per number up to it (2**40: the OOM killer);
5. a valid run sweeping the machine was refused (every point checked against the first
   point's machine), and its figures named the first machine for every point;
6. the engine overlay compared a native run of one machine with a SimGrid run of another;
7. impossible figures (utilisation far above 1, duplicated rows, accepted load above what the
   links deliver, p99 above the maximum, counts beyond the engine's, an incomplete run without
   missing points, an unknown ``files`` entry) were drawn;
8. the class-share figures of points after the first were neither listed nor embedded;
9. matplotlib warnings on stderr, a CSV ``nan`` called an empty cell, a swept output switch
   splitting series.

Each refusal names the file, the field (or column) and the limit.
"""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest
from conftest import one_error, run_cli

from federation.errors import ConfigError

EXPERIMENT = """name: fuzz45
machine: {topology: {kind: dragonfly, p: 1, a: 2, h: 1}}
routing: {algorithm: minimal}
workload: {kind: synthetic, pattern: uniform, load: 0.3}
seed: 1
stop: {warmup: 0.5us, measure: 2us}
sweep: {workload.load: [0.2, 0.6]}
outputs: {format: parquet, link_series: {interval: 0.5us}}
"""


def _run(tmp: Path, name: str, overrides: list[str] | None = None, text: str = EXPERIMENT
         ) -> Path:
    from federation.pipeline.load import load_experiment
    from federation.pipeline.run import run_experiment

    (tmp / f"{name}.yaml").write_text(text)
    run_experiment(load_experiment(tmp / f"{name}.yaml", overrides or []), tmp / name)
    return tmp / name


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """``base``: a 2-point load sweep of a 6-router dragonfly with link series; ``big``: the
    same on the 20-router one (a = 4); ``machines``: a sweep over the machine (a = 2, 4)."""
    tmp = tmp_path_factory.mktemp("fuzz45")
    return {"base": _run(tmp, "base"),
            "big": _run(tmp, "big", ["machine.topology.a=4"]),
            "machines": _run(tmp, "machines", [
                "sweep={workload.load: [0.2], machine.topology.a: [2, 4]}"])}


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def _doc(path: Path) -> dict[str, Any]:
    return json.loads((path / "results.json").read_text())


def _write_doc(path: Path, doc: dict[str, Any]) -> None:
    (path / "results.json").write_text(json.dumps(doc))


def _edit_table(path: Path, column: str, change, keep_type: bool = True) -> None:
    t = pq.read_table(path)
    v = t.column(column).to_numpy(zero_copy_only=False).copy()
    v = change(v)
    kind = t.schema.field(column).type if keep_type else None
    pq.write_table(t.set_column(t.schema.get_field_index(column), column,
                                pa.array(v, type=kind)), path)


def _refusal(path: Path) -> str:
    from federation.plots.data import load_folder

    with pytest.raises(ConfigError) as exc:
        load_folder(path)
    return str(exc.value)


def _draw(folders: list[Path], out: Path):
    from federation.plots.data import load_folders
    from federation.plots.standard import draw_all

    return draw_all(load_folders(folders), out, "png")


# ----------------------------------------------------------------- 4: class numbers
def test_a_class_beyond_the_points_classes_is_refused_before_drawing(runs, tmp_path):
    dst = _copy(runs["base"], tmp_path / "cls")

    def big(v: np.ndarray) -> np.ndarray:
        v = v.astype(np.int64)
        v[0] = 2**40
        return v

    _edit_table(dst / "link_series-0.parquet", "class", big, keep_type=False)
    assert _refusal(dst) == (
        f"{dst}/link_series-0.parquet: class: class 1099511627776 is outside 0..0: the point "
        "has 1 traffic class (summary.classes, or 1 when it lists none)")
    out = tmp_path / "out"
    line = one_error(run_cli("plot", str(dst), "--out", str(out), cwd=tmp_path))
    assert "link_series-0.parquet: class: class 1099511627776" in line
    assert not out.exists()  # nothing half-made left behind


def test_class_shares_are_one_series_per_class_of_the_point(runs):
    """The figure's classes are the point's, whatever numbers the table holds."""
    from federation.plots.classes import busiest_shares
    from federation.plots.data import load_folder

    f = load_folder(runs["base"])
    p = f.result.points[0]
    table = dict(f.table(p, "link_series"))
    table["class"] = table["class"].copy()
    table["class"][0] = 10**12  # past the reader: still no allocation by the largest number
    shares = busiest_shares(table, p)
    assert shares and all(list(s.by_class) == ["class 0"] for s in shares)


# ----------------------------------------------------------------- 5: machine sweeps
def test_a_sweep_over_the_machine_is_read_point_by_point(runs, tmp_path):
    from federation.plots.data import figure_title, load_folder

    f = load_folder(runs["machines"])
    routers = {p.sweep["machine.topology.a"]: f.machine_of(p).routers for p in f.result.points}
    assert routers == {2: 6, 4: 20}
    assert f.result.machine.routers == 6  # the summary: the first point's
    for p in f.result.points:
        title = figure_title("x", [f], [p])
        assert f"{routers[p.sweep['machine.topology.a']]} routers" in title
    drawn = _draw([runs["machines"]], tmp_path / "figs")
    assert {h.point for h in drawn.figures["heatmap"]} == {0, 1}
    from federation.plots.report import folder_section

    page = "".join(folder_section(f, heading=False))
    assert ("The sweep runs several machines (above: the first point's): (dragonfly, 6 "
            "routers, 6 nodes): point 0; (dragonfly, 20 routers, 20 nodes): point 1.") in page
    # the command too (it refused: ports-1.parquet: router: a router outside -1..5)
    r = run_cli("plot", str(runs["machines"]), "--out", str(tmp_path / "cli"), cwd=tmp_path)
    assert r.returncode == 0 and "Warning" not in r.stderr, r.stderr


def test_machine_counts_that_the_topology_does_not_build_are_refused(runs, tmp_path):
    for field, value, want in (("routers", 2**62, "outside 1..2147483647"),
                               ("routers", 7, "7, but the machine's topology "
                                "(points[0].resolved.machine.topology) builds 6 routers"),
                               ("nodes", 0, "outside 1..2147483647")):
        dst = _copy(runs["base"], tmp_path / f"{field}-{value}")
        doc = _doc(dst)
        doc["machine"][field] = value
        if field == "nodes":
            doc["machine"]["links"]["terminal"] = 0
        _write_doc(dst, doc)
        msg = _refusal(dst)
        assert msg.startswith(f"{dst}/results.json: machine.{field}: {value}"), msg
        assert want in msg, msg


def test_a_point_checked_against_its_own_machine(runs, tmp_path):
    """Router 10 is in the 20-router point's range, not the 6-router one's."""
    dst = _copy(runs["machines"], tmp_path / "own")
    doc = _doc(dst)
    small = next(p for p in doc["points"] if p["sweep"]["machine.topology.a"] == 2)
    _edit_table(dst / small["files"]["ports"], "router",
                lambda v: np.where(v == 5, 10, v))
    msg = _refusal(dst)
    assert msg.startswith(f"{dst}/{small['files']['ports']}: router: router 10 is outside "
                          "-1..5"), msg


# ----------------------------------------------------------------- 6: engine overlay
def _as_simgrid(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    doc = _doc(dst)
    for p in doc["points"]:
        p["engine"] = "simgrid"
        for kind in ("packets", "link_series"):
            (dst / p["files"].pop(kind)).unlink()
    _write_doc(dst, doc)
    return dst


def test_engines_of_different_machines_are_not_compared(runs, tmp_path):
    other = _as_simgrid(runs["big"], tmp_path / "sg")
    drawn = _draw([runs["base"], other], tmp_path / "figs")
    assert "engines" not in drawn.figures
    note = next(s for s in drawn.skipped if s.startswith("engines:"))
    assert "(dragonfly, 6 routers, 6 nodes)" in note and "(dragonfly, 20 routers, 20 nodes)" \
        in note
    # the load figures still draw both, each labelled with its machine
    labels = [c.label for c in drawn.figures["latency"][0].curves]
    assert labels == ["base (dragonfly, 6 routers, 6 nodes) native",
                      "sg (dragonfly, 20 routers, 20 nodes) simgrid"]
    # the same machine on both engines is compared
    same = _as_simgrid(runs["base"], tmp_path / "sg-same")
    drawn = _draw([runs["base"], same], tmp_path / "figs2")
    assert drawn.figures["engines"][0].engines == ["native", "simgrid"]


# ----------------------------------------------------------------- 7: impossible figures
def _results(edit):
    def change(dst: Path) -> None:
        doc = _doc(dst)
        edit(doc)
        _write_doc(dst, doc)
    return change


def _table(name: str, column: str, change):
    return lambda dst: _edit_table(dst / f"{name}-0.parquet", column, change)


def _duplicate_rows(dst: Path) -> None:
    t = pq.read_table(dst / "link_series-0.parquet")
    pq.write_table(pa.concat_tables([t, t]), dst / "link_series-0.parquet")


def _first(value):
    def change(v: np.ndarray) -> np.ndarray:
        v = v.copy()
        v[0] = value
        return v
    return change


def _summary(key: str, value: Any):
    def edit(doc: dict[str, Any]) -> None:
        where = doc["points"][0]["summary"]
        *path, last = key.split(".")
        for k in path:
            where = where[k]
        where[last] = value
    return _results(edit)


def _not_busiest(dst: Path) -> None:
    busiest = {lk["port"] for lk in _doc(dst)["points"][0]["summary"]["busiest_links"]}
    t = pq.read_table(dst / "ports-0.parquet")
    port = t.column("port").to_numpy()
    _edit_table(dst / "ports-0.parquet", "utilization_window",
                lambda v: np.where(np.isin(port, list(busiest)), v, 1e9))


IMPOSSIBLE = {
    "ports utilisation 1e9": (_not_busiest, "ports-0.parquet: utilization_window: 1e+09 is "
                              "above 1"),
    "ports link class": (_table("ports", "link_class", _first("warp")),
                         "ports-0.parquet: link_class: 'warp' is not a link class"),
    "ports port 2**62": (_table("ports", "port", _first(2**62)),
                         "ports-0.parquet: port: port 4611686018427387904 is outside 0..23"),
    "series utilisation 1e300": (_table("link_series", "utilization", _first(1e300)),
                                 "link_series-0.parquet: utilization: 1e+300 on port"),
    "series utilisation x50": (_table("link_series", "utilization", lambda v: v * 50),
                               "link_series-0.parquet: utilization: "),
    "series bytes and utilisation x50": (
        lambda dst: (_table("link_series", "utilization", lambda v: v * 50)(dst),
                     _table("link_series", "bytes", lambda v: v * 50)(dst)),
        "link_series-0.parquet: bytes: port "),
    "series duplicated rows": (_duplicate_rows, "link_series-0.parquet: port: port "),
    "accepted load 5": (_summary("accepted_load", 5.0),
                        "results.json: points[0].summary.accepted_load: 5 of the NICs' "),
    "p50 above p99": (_summary("latency_ns.p50", 1e6),
                      "results.json: points[0].summary.latency_ns.p50: 1e+06 is above p99"),
    "p99 above max": (_summary("network_latency_ns.p99", 1e6),
                      "results.json: points[0].summary.network_latency_ns.p99: 1e+06 is "
                      "above max"),
    "events 10**400": (_summary("events", 10**400),
                       "results.json: points[0].summary.events: 1000"),
    "machine routers 2**62": (_results(lambda d: d["machine"].update(routers=2**62)),
                              "results.json: machine.routers: 4611686018427387904 is outside"),
    "incomplete without missing points": (
        _results(lambda d: d.update(status="incomplete")),
        "results.json: status: the run says it is incomplete but lists no missing point"),
    "complete with an error": (_results(lambda d: d.update(error="boom")),
                               "results.json: error: the run says it is complete but records"),
    "unknown files entry": (
        _results(lambda d: d["points"][0]["files"].update(bogus="nics-0.parquet")),
        "results.json: points[0].files.bogus: 'bogus' is not a table of a native run"),
    "swept load not the resolved one": (
        _results(lambda d: d["points"][0]["sweep"].update({"workload.load": 0.9})),
        "results.json: points[0].sweep.workload.load: 0.9, but the point's resolved document "
        "ran with 0.2"),
}


@pytest.mark.parametrize("case", list(IMPOSSIBLE))
def test_impossible_figures_are_refused_naming_file_field_and_limit(runs, tmp_path, case):
    edit, want = IMPOSSIBLE[case]
    dst = _copy(runs["base"], tmp_path / "f")
    edit(dst)
    msg = _refusal(dst)
    assert msg.startswith(f"{dst}/{want}"), msg


def test_impossible_figures_are_refused_by_the_cli_in_one_line(runs, tmp_path):
    dst = _copy(runs["base"], tmp_path / "f")
    _summary("accepted_load", 5.0)(dst)
    for command, out in (("plot", tmp_path / "figs"), ("report", tmp_path / "r.html")):
        line = one_error(run_cli(command, str(dst), "--out", str(out), cwd=tmp_path))
        assert "points[0].summary.accepted_load: 5 of the NICs' bandwidth" in line
        assert not out.exists()


def test_legitimate_folders_stay_readable(runs):
    """What the runs wrote passes every check (utilisation near 1, both loads)."""
    from federation.plots.data import load_folders

    folders = load_folders(list(runs.values()))
    assert sum(len(f.result.points) for f in folders) == 6


# ----------------------------------------------------------------- 8: every figure listed
def test_every_class_share_figure_is_listed_and_embedded(runs, tmp_path):
    from federation.plots.data import load_folders
    from federation.plots.report import render_report

    drawn = _draw([runs["base"]], tmp_path / "figs")
    names = sorted(p.name for p in drawn.paths if p.name.startswith("link-classes"))
    assert names == ["link-classes-p0.png", "link-classes-p1.png"]
    assert sorted(p.name for p in (tmp_path / "figs").iterdir()) == sorted(
        p.name for p in drawn.paths)
    page, _ = render_report(load_folders([runs["base"]]))
    assert 'alt="link classes p0"' in page and 'alt="link classes p1"' in page


# ----------------------------------------------------------------- 9: minor
def test_drawing_leaks_no_warning(runs, tmp_path, monkeypatch):
    from federation.plots import links

    draw = links.draw_utilisation

    def noisy(*args, **kw):
        warnings.warn("constrained_layout not applied", UserWarning, stacklevel=1)
        return draw(*args, **kw)

    monkeypatch.setattr(links, "draw_utilisation", noisy)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        _draw([runs["base"]], tmp_path / "figs")
    assert seen == []


def test_a_csv_nan_is_called_nan_not_an_empty_cell(runs, tmp_path):
    dst = _copy(runs["base"], tmp_path / "csv")
    doc = _doc(dst)
    t = pq.read_table(dst / "ports-0.parquet")
    u = t.column("utilization_window").to_numpy().astype(object)
    u[3] = "nan"
    t = t.set_column(t.schema.get_field_index("utilization_window"), "utilization_window",
                     pa.array([str(x) for x in u]))
    pcsv.write_csv(t, dst / "ports-0.csv", pcsv.WriteOptions(quoting_style="none"))
    (dst / "ports-0.parquet").unlink()
    doc["points"][0]["files"]["ports"] = "ports-0.csv"
    _write_doc(dst, doc)
    assert _refusal(dst) == (f"{dst}/ports-0.csv: utilization_window: a NaN (not a number): "
                             "a utilisation is a finite number >= 0")


def test_a_swept_output_switch_defines_no_series(runs, tmp_path):
    from federation.plots.data import load_folders, series_of

    dst = _copy(runs["base"], tmp_path / "outputs")
    doc = _doc(dst)
    for p, on in zip(doc["points"], (True, False), strict=True):
        p["sweep"]["outputs.packets"] = on
    _write_doc(dst, doc)
    series = series_of(load_folders([dst]))
    assert len(series) == 1 and len(series[0].points) == 2
    assert series[0].label == "minimal"


def test_two_swept_keys_of_one_last_part_are_told_apart_in_legends(runs, tmp_path):
    """Sweeping both links' latency labelled the series ``latency=100ns latency=30ns``; each
    key now keeps as many of its last parts as tell it from the others."""
    from federation.plots.data import load_folders, series_of, short_keys

    assert short_keys(["machine.links.global.latency", "machine.links.local.latency",
                       "workload.load"]) == {
        "machine.links.global.latency": "global.latency",
        "machine.links.local.latency": "local.latency", "workload.load": "load"}
    dst = _copy(runs["base"], tmp_path / "lat")
    doc = _doc(dst)
    for p, (g, loc) in zip(doc["points"], (("100ns", "30ns"), ("1us", "500ns")), strict=True):
        p["sweep"]["machine.links.global.latency"] = g
        p["sweep"]["machine.links.local.latency"] = loc
    _write_doc(dst, doc)
    labels = sorted(s.label for s in series_of(load_folders([dst])))
    assert labels == ["global.latency=100ns local.latency=30ns",
                      "global.latency=1us local.latency=500ns"]
