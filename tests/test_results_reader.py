"""The one reader of results folders (``federation/plots/reader.py``), behind ``plot``,
``report`` and ``run --plot``.

Issue 17, cases 9 and 14: ``plot``/``report`` accepted NaN loads, duplicate point indices and
tables from another run, followed ``files`` entries to any path (``/etc/hostname``), and a ports
table without its ``router`` column ended in ``KeyError: 'router'``.  Each reported case is
refused here with one message naming the file and the field (exit 2 from the CLI), and a
property test mutates a real folder at random: every folder either draws or is refused with a
:class:`FederationError`, and the mutations that make it wrong are always refused.
"""

from __future__ import annotations

import json
import math
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest
from conftest import one_error, run_cli

from federation.errors import ConfigError

SWEEP = [0.2, 0.6]


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """A real two-point run of a small dragonfly (72 nodes), every table written."""
    from federation.pipeline.load import load_experiment
    from federation.pipeline.run import run_experiment

    tmp = tmp_path_factory.mktemp("reader")
    (tmp / "e.yaml").write_text(
        "name: reader\nmachine: {topology: {kind: dragonfly, p: 2, a: 4, h: 2}}\n"
        "workload: {kind: synthetic, pattern: uniform, load: 0.2}\n"
        f"stop: {{warmup: 0.2us, measure: 1us}}\nsweep: {{workload.load: {SWEEP}}}\n")
    run_experiment(load_experiment(tmp / "e.yaml"), tmp / "run")
    return tmp / "run"


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def _doc(path: Path) -> dict[str, Any]:
    return json.loads((path / "results.json").read_text())


def _write_doc(path: Path, doc: dict[str, Any]) -> None:
    (path / "results.json").write_text(json.dumps(doc))  # NaN and Infinity as Python writes


def _refusal(path: Path) -> str:
    from federation.plots.data import load_folder

    with pytest.raises(ConfigError) as exc:
        load_folder(path)
    return str(exc.value)


# ----------------------------------------------------------------- the reported cases
def test_a_valid_folder_is_read_with_the_columns_the_figures_use(folder):
    from federation.plots.data import load_folder
    from federation.plots.reader import TABLE_COLUMNS

    f = load_folder(folder)
    assert [p.sweep["workload.load"] for p in f.result.points] == SWEEP
    for p in f.result.points:
        assert set(p.files) == {"packets", "ports", "messages", "nics"}
        for name, cols in TABLE_COLUMNS.items():
            if name not in p.files:  # link_series: only with outputs.link_series
                continue
            t = f.table(p, name)
            assert list(t) == list(cols)  # only these are loaded
            assert (t["point"] == p.index).all()
    assert len(f.performance) == 2 and f.performance[0]["wall_seconds"] >= 0


def test_nan_load_is_refused(folder, tmp_path):
    for where in ("sweep", "summary"):
        dst = _copy(folder, tmp_path / where)
        doc = _doc(dst)
        if where == "sweep":
            doc["points"][1]["sweep"]["workload.load"] = math.nan
            field = "points[1].sweep.workload.load"
        else:
            doc["points"][1]["summary"]["offered_load"] = math.nan
            field = "points[1].summary.offered_load"
        _write_doc(dst, doc)
        assert _refusal(dst) == f"{dst}/results.json: {field}: nan is not a finite number"
    dst = _copy(folder, tmp_path / "inf")
    text = (dst / "results.json").read_text()
    doc = _doc(dst)
    old = json.dumps(doc["points"][0]["summary"]["accepted_load"])
    (dst / "results.json").write_text(text.replace(f'"accepted_load": {old}',
                                                   '"accepted_load": 1e999', 1))
    assert _refusal(dst) == (f"{dst}/results.json: points[0].summary.accepted_load: inf is not "
                             "a finite number")


def test_duplicate_point_indices_are_refused(folder, tmp_path):
    dst = _copy(folder, tmp_path / "dup")
    doc = _doc(dst)
    doc["points"][1]["index"] = doc["points"][0]["index"]
    _write_doc(dst, doc)
    assert _refusal(dst) == (f"{dst}/results.json: points[1].index: 0 is also points[0]'s "
                             "index: each point of a sweep appears once, by its position")
    doc["points"][1]["index"] = 1
    doc.update(status="incomplete", missing_points=[1])
    _write_doc(dst, doc)
    assert _refusal(dst) == (f"{dst}/results.json: missing_points[0]: 1 is a finished point "
                             "(points[1])")


@pytest.mark.parametrize("entry, words", [
    ("/etc/hostname", "is not a file name inside the results folder"),
    ("../../../../../../etc/hostname", "is not a file name inside the results folder"),
    ("./ports-1.parquet", "is not a file name inside the results folder"),
    ("nope.parquet", "is not a file in the results folder"),
    ("performance.json", "is not a table file (.parquet or .csv)"),
])
def test_files_entries_stay_inside_the_folder(folder, tmp_path, entry, words):
    dst = _copy(folder, tmp_path / "r")
    doc = _doc(dst)
    doc["points"][1]["files"]["ports"] = entry
    _write_doc(dst, doc)
    assert _refusal(dst) == f"{dst}/results.json: points[1].files.ports: {entry!r} {words}" + (
        " (a relative path of plain names: no '..', no leading '/')" if "inside" in words
        else "")


def test_a_symbolic_link_leading_out_is_refused(folder, tmp_path):
    dst = _copy(folder, tmp_path / "r")
    outside = tmp_path / "outside.parquet"
    shutil.copy(dst / "ports-1.parquet", outside)
    (dst / "ports-1.parquet").unlink()
    os.symlink(outside, dst / "ports-1.parquet")
    msg = _refusal(dst)
    assert msg.startswith(f"{dst}/results.json: points[1].files.ports: 'ports-1.parquet' leads "
                          f"outside the results folder (to {outside})")
    # a link inside the folder is a file of the folder
    (dst / "ports-1.parquet").unlink()
    shutil.copy(outside, dst / "real.parquet")
    os.symlink("real.parquet", dst / "ports-1.parquet")
    from federation.plots.data import load_folder

    load_folder(dst)


def test_tables_of_another_point_or_run_are_refused(folder, tmp_path):
    dst = _copy(folder, tmp_path / "swap")
    shutil.copy(dst / "ports-0.parquet", dst / "ports-1.parquet")
    assert _refusal(dst) == (f"{dst}/ports-1.parquet: point: holds point 0, but results.json "
                             "names this file for point 1: a table of another point or run")
    # another run's table of the same point (its point column right): its figures disagree
    # with this point's summary
    for name, field in (("packets", "measured"), ("ports", "utilization_window"),
                        ("messages", "completion_ps")):
        dst = _copy(folder, tmp_path / f"foreign-{name}")
        t = pq.read_table(dst / f"{name}-0.parquet")
        t = t.set_column(t.schema.get_field_index("point"), "point",
                         pa.array([1] * t.num_rows, pa.int64()))
        pq.write_table(t, dst / f"{name}-1.parquet")
        msg = _refusal(dst)
        assert msg.startswith(f"{dst}/{name}-1.parquet: {field}: ")
        assert msg.endswith("not this point's table")


@pytest.mark.parametrize("column", ["router", "link_class", "utilization_window", "point"])
def test_a_ports_table_missing_a_column_is_refused(folder, tmp_path, column):
    dst = _copy(folder, tmp_path / "r")
    t = pq.read_table(dst / "ports-0.parquet").drop_columns([column])
    pq.write_table(t, dst / "ports-0.parquet")
    assert _refusal(dst) == (f"{dst}/ports-0.parquet: {column}: missing column (a ports table "
                             "has point, port, router, link_class, utilization_window)")


def test_wrong_types_empty_cells_and_bad_values_are_refused(folder, tmp_path):
    def rewrite(name: str, column: str, values: pa.Array) -> Path:
        dst = _copy(folder, tmp_path / f"{name}-{column}-{len(list(tmp_path.iterdir()))}")
        t = pq.read_table(dst / f"{name}-0.parquet")
        t = t.set_column(t.schema.get_field_index(column), column, values)
        pq.write_table(t, dst / f"{name}-0.parquet")
        return dst

    n = pq.read_metadata(folder / "ports-0.parquet").num_rows
    dst = rewrite("ports", "router", pa.array([str(i) for i in range(n)]))
    assert _refusal(dst) == (f"{dst}/ports-0.parquet: router: column of type string, expected "
                             "integers")
    dst = rewrite("ports", "utilization_window", pa.array([None] + [0.5] * (n - 1), pa.float64()))
    assert _refusal(dst) == (f"{dst}/ports-0.parquet: utilization_window: 1 empty cell(s); every "
                             "row of a ports table has a value")
    dst = rewrite("ports", "utilization_window", pa.array([math.nan] * n))
    assert _refusal(dst) == (f"{dst}/ports-0.parquet: utilization_window: a NaN (not a "
                             "number): a utilisation is a finite number >= 0")
    hops = pq.read_table(folder / "packets-0.parquet").column("hops").to_pylist()
    dst = rewrite("packets", "hops", pa.array([10**6] * len(hops), pa.int32()))
    assert _refusal(dst) == (f"{dst}/packets-0.parquet: hops: a measured packet with hops "
                             "outside 0..152 (the engine's hop limit for 36 routers)")
    (dst / "packets-0.parquet").write_bytes(b"not a table")
    assert _refusal(dst).startswith(f"{dst}/packets-0.parquet: cannot read the packets table: ")


def test_csv_folders_are_read_like_parquet_ones(folder, tmp_path):
    from federation.plots.data import load_folder

    dst = _copy(folder, tmp_path / "csv")
    _to_csv(dst, 0, "ports")
    _to_csv(dst, 1, "packets")
    a, b = load_folder(folder), load_folder(dst)
    for pa_, pb in zip(a.result.points, b.result.points, strict=True):
        for name in ("ports", "packets"):
            ta, tb = a.table(pa_, name), b.table(pb, name)
            assert all((ta[c] == tb[c]).all() for c in ta)


def _to_csv(dst: Path, index: int, name: str) -> None:
    doc = _doc(dst)
    pcsv.write_csv(pq.read_table(dst / f"{name}-{index}.parquet"), dst / f"{name}-{index}.csv")
    (dst / f"{name}-{index}.parquet").unlink()
    doc["points"][index]["files"][name] = f"{name}-{index}.csv"
    _write_doc(dst, doc)


@pytest.fixture(scope="module")
def csv_folder(tmp_path_factory) -> Path:
    """A one-point CSV run with a link series (the format a hand edit reaches first)."""
    from federation.pipeline.load import load_experiment
    from federation.pipeline.run import run_experiment

    tmp = tmp_path_factory.mktemp("reader-csv")
    (tmp / "e.yaml").write_text(
        "machine: {topology: {kind: dragonfly, p: 2, a: 4, h: 2}}\n"
        "workload: {kind: synthetic, pattern: uniform, load: 0.3}\n"
        "stop: {warmup: 0, measure: 1us}\n"
        "outputs: {format: csv, link_series: {interval: 200ns}}\n")
    run_experiment(load_experiment(tmp / "e.yaml"), tmp / "run")
    return tmp / "run"


def _edit_csv(src: Path, dst: Path, name: str, edit: Callable[[dict[str, list]], None]) -> Path:
    """A copy of ``src`` whose point-0 ``name`` table ``edit`` changed (columns as lists)."""
    _copy(src, dst)
    cols = pcsv.read_csv(dst / f"{name}-0.csv").to_pydict()
    edit(cols)
    pcsv.write_csv(pa.table(cols), dst / f"{name}-0.csv")
    return dst


def _quiet_row(folder: Path) -> int:
    """A row of point 0's ports table that is not one of its busiest links (those the
    reader matches against the summary, which would refuse an edit for another reason)."""
    busiest = {lk["port"] for lk in _doc(folder)["points"][0]["summary"]["busiest_links"]}
    ports = pcsv.read_csv(folder / "ports-0.csv").column("port").to_pylist()
    return next(i for i, p in enumerate(ports) if p not in busiest)


def test_negative_or_repeated_ports_and_negative_counts_are_refused(csv_folder, tmp_path):
    """fuzz 2: a ports table with a negative port number was drawn (the heatmap orders a
    router's ports by number: a wrong figure that looks right); a link series' negative byte
    count was refused naming the utilization column.  Each is one line naming file and
    column, exit 2, and nothing is drawn."""
    row = _quiet_row(csv_folder)

    def negative_port(c: dict[str, list]) -> None:
        c["port"][row] = -3

    def repeated_port(c: dict[str, list]) -> None:
        c["port"][row], c["router"][row] = c["port"][row + 1], c["router"][row + 1]

    dst = _edit_csv(csv_folder, tmp_path / "neg", "ports", negative_port)
    assert _refusal(dst) == f"{dst}/ports-0.csv: port: -3 is negative: ports are numbered from 0"
    before = sorted(p.name for p in dst.iterdir())
    line = one_error(run_cli("plot", "neg", cwd=tmp_path))
    assert line == "error: neg/ports-0.csv: port: -3 is negative: ports are numbered from 0"
    assert sorted(p.name for p in dst.iterdir()) == before  # no plots/
    dst = _edit_csv(csv_folder, tmp_path / "twice", "ports", repeated_port)
    assert _refusal(dst).startswith(f"{dst}/ports-0.csv: port: port ")
    assert "has 2 rows; a ports table has one row per port" in _refusal(dst)
    for col, words in (("port", "ports are numbered from 0"),
                       ("class", "traffic classes are numbered from 0"),
                       ("bytes", "it counts the bytes a port sent"),
                       ("start_ps", None), ("end_ps", None)):
        def negative(c: dict[str, list], col: str = col) -> None:
            c[col][0] = -5

        dst = _edit_csv(csv_folder, tmp_path / f"ls-{col}", "link_series", negative)
        msg = _refusal(dst)
        if words is not None:
            assert msg == f"{dst}/link_series-0.csv: {col}: -5 is negative: {words}"
        elif col == "start_ps":
            assert msg == (f"{dst}/link_series-0.csv: start_ps: an interval starting before "
                           "time 0")
        else:
            assert msg == (f"{dst}/link_series-0.csv: end_ps: an interval that ends at or "
                           "before its start")


def test_malformed_performance_is_refused(folder, tmp_path):
    dst = _copy(folder, tmp_path / "perf")
    (dst / "performance.json").write_text('[{"wall_seconds": -1}, null]')
    assert _refusal(dst) == f"{dst}/performance.json: [0].wall_seconds: -1 is not a finite " \
                            "number >= 0"
    (dst / "performance.json").write_text("[null]")
    assert _refusal(dst) == (f"{dst}/performance.json: expected a list of 2 entries (one per "
                             "point of results.json)")
    (dst / "performance.json").unlink()  # optional: the report shows no wall times
    from federation.plots.data import load_folder

    assert load_folder(dst).performance == []


def test_rank_program_folders_are_read_and_their_packets_drawn(tmp_path):
    """A closed-loop run lists its packets (issue 19 item 5): its folder is read, the table's
    measured rows are the summary's packets, and their distributions are drawn."""
    from federation.cli.plot import draw_folders
    from federation.pipeline.load import load_experiment
    from federation.pipeline.run import run_experiment
    from federation.plots.data import load_folder

    (tmp_path / "e.yaml").write_text(
        "machine: {topology: {kind: dragonfly, p: 2, a: 4, h: 2}}\n"
        "workload: {kind: pingpong, sizes: [4KiB], iterations: 2, nodes: [0, 71]}\n")
    run_experiment(load_experiment(tmp_path / "e.yaml"), tmp_path / "pp")
    f = load_folder(tmp_path / "pp")
    (p,) = f.result.points
    t = f.table(p, "packets")
    assert t["point"].size == p.summary.packets_measured == 4 * 8 and t["measured"].all()
    assert draw_folders([tmp_path / "pp"], tmp_path / "plots", "png", 0.05)
    names = {x.name for x in (tmp_path / "plots").iterdir()}
    assert any(n.startswith("latency-distribution") for n in names), names
    assert any(n.startswith("hops") for n in names), names


def test_an_sst_folder_is_read(tmp_path):
    """The SST adapter's folder: its configuration filed as ``sst-0/config.py`` (a sub-folder
    is inside the folder), a ports table without ``local_port``, no busiest links."""
    from test_sst_results import CSV, STDOUT, fake_program, write_exp

    from federation.cli.plot import draw_folders
    from federation.plots.data import load_folder

    body = ("open('stats.csv', 'w').write('''" + CSV + "''')\n"
            "print('''" + STDOUT + "''')")
    e = write_exp(tmp_path, "quickstart-dragonfly.yaml",
                  engine={"kind": "sst", "sst_binary": str(fake_program(tmp_path, body))})
    r = run_cli("sst", "run", str(e), "--out", "out", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    f = load_folder(tmp_path / "out")
    (p,) = f.result.points
    assert p.files["sst_config"] == "sst-0/config.py" and f.table(p, "ports")["port"].size
    assert draw_folders([tmp_path / "out"], tmp_path / "plots", "png", 0.05)


def test_a_folder_whose_name_is_not_utf8_is_read(folder, tmp_path):
    """Python keeps such a name as surrogates, which pyarrow cannot encode: the reader opens
    tables itself (issue 17, case 19, the readers' side)."""
    from federation.cli.plot import draw_folders

    try:
        dst = _copy(folder, Path(os.fsdecode(bytes(tmp_path) + b"/r\xff")))
    except (OSError, UnicodeError):
        pytest.skip("the file system refuses names that are not UTF-8")
    paths = draw_folders([dst], dst / "plots", "png", 0.05)
    assert len(paths) == 7 and all(p.is_file() for p in paths)


@pytest.mark.parametrize("command", ["plot", "report"])
def test_cli_refuses_in_one_line_and_writes_nothing(folder, tmp_path, command):
    cases = {}
    dst = _copy(folder, tmp_path / "hostname")
    doc = _doc(dst)
    doc["points"][0]["files"]["ports"] = "/etc/hostname"
    _write_doc(dst, doc)
    cases[dst] = "hostname/results.json: points[0].files.ports: '/etc/hostname' is not a file"
    dst = _copy(folder, tmp_path / "norouter")
    pq.write_table(pq.read_table(dst / "ports-1.parquet").drop_columns(["router"]),
                   dst / "ports-1.parquet")
    cases[dst] = "norouter/ports-1.parquet: router: missing column"
    dst = _copy(folder, tmp_path / "nan")
    doc = _doc(dst)
    doc["points"][0]["sweep"]["workload.load"] = math.nan
    _write_doc(dst, doc)
    cases[dst] = "nan/results.json: points[0].sweep.workload.load: nan is not a finite number"
    for dst, words in cases.items():
        before = sorted(p.name for p in dst.iterdir())
        line = one_error(run_cli(command, dst.name, cwd=tmp_path))
        assert line.startswith(f"error: {words}"), line
        assert sorted(p.name for p in dst.iterdir()) == before  # no plots/, no report.html
