"""``federation plot``, ``report`` and ``run --plot`` on small real runs.

Every figure kind is drawn (headless), its file decoded, and the data behind it compared with
the result tables: the latency curve's points are the summary's values, the marked saturation
load is the first load where accepted < offered by the margin, the utilisation boxes and the
heatmap hold the ports table, the distributions reproduce the summary's percentiles.
"""

from __future__ import annotations

import json
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from conftest import one_error, run_cli

SHORT = ["--set", "stop.warmup=1us", "--set", "stop.measure=3us"]


RUN_PLOT: dict[str, str] = {}


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """Two real runs of the quickstart machine: a load sweep with ``--plot`` (``qs``) and a sweep
    over loads and routings (``two``: minimal and valiant at 0.3 and 0.9)."""
    tmp = tmp_path_factory.mktemp("runs")
    r = run_cli("run", *SHORT, "--set", "sweep={workload.load: [0.1, 0.5, 0.9]}",
                "--out", "qs", "--plot", cwd=tmp)
    assert r.returncode == 0, r.stderr
    RUN_PLOT.update(stdout=r.stdout, stderr=r.stderr)
    r = run_cli("run", *SHORT, "--set",
                "sweep={workload.load: [0.3, 0.9], routing.algorithm: [minimal, valiant]}",
                "--out", "two", cwd=tmp)
    assert r.returncode == 0, r.stderr
    return {"qs": tmp / "qs", "two": tmp / "two"}


@pytest.fixture(scope="module")
def drawn_qs(runs, tmp_path_factory):
    """The standard figures of the load sweep, drawn once for the data checks."""
    return _draw([runs["qs"]], tmp_path_factory.mktemp("drawn"))


def _doc(folder: Path) -> dict:
    return json.loads((folder / "results.json").read_text())


def _draw(folders: list[Path], out: Path, fmt: str = "png", **kw):
    from federation.plots.data import load_folders
    from federation.plots.standard import draw_all

    return draw_all(load_folders(folders), out, fmt, **kw)


def _decodes(path: Path) -> None:
    assert path.is_file() and path.stat().st_size > 0, path
    if path.suffix == ".png":
        import matplotlib.image

        img = matplotlib.image.imread(path)
        assert img.ndim == 3 and img.shape[0] > 200 and img.shape[1] > 200
    elif path.suffix == ".svg":
        root = ET.parse(path).getroot()
        assert root.tag.endswith("svg")
    else:
        assert path.read_bytes().startswith(b"%PDF-")


KINDS = {"latency", "throughput", "utilisation", "heatmap", "latency_distribution", "hops",
         "message_completion"}


def test_cli_draws_every_figure_kind(runs, tmp_path):
    """SVG here; PNG through ``run --plot`` and the report, PDF in-process below."""
    r = run_cli("plot", str(runs["two"]), "--out", str(tmp_path / "f"), "--format", "svg",
                cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    paths = [Path(line) for line in r.stdout.split()]
    # 2 load figures + utilisation + per series (minimal, valiant): heatmap, 3 distributions
    assert len(paths) == 3 + 2 * 4, paths
    assert {p.suffix for p in paths} == {".svg"}
    for p in paths:
        _decodes(p)


def test_pdf(runs, tmp_path):
    fmt = "pdf"
    from federation.plots import distributions, links
    from federation.plots.data import load_folders, series_of

    folders = load_folders([runs["qs"]])
    (s,) = series_of(folders)
    for fig in (links.draw_heatmap(s, folders, tmp_path, fmt, "heat"),
                distributions.draw_hops(s, folders, tmp_path, fmt, "hops")):
        assert fig.path.suffix == f".{fmt}"
        _decodes(fig.path)


def test_latency_curve_points_are_the_summary_values(runs, tmp_path, drawn_qs):
    from federation.plots import curves
    from federation.plots.data import load_folders, series_of

    assert set(drawn_qs.figures) == KINDS
    folders = load_folders([runs["two"]])
    lat = curves.draw_latency(series_of(folders), folders, tmp_path, "png")
    thr = curves.draw_throughput(series_of(folders), folders, tmp_path, "png")
    assert [c.label for c in lat.curves] == ["minimal", "valiant"]
    doc = _doc(runs["two"])
    for curve in lat.curves + thr.curves:
        pts = [p for p in doc["points"] if p["routing"] == curve.label]
        pts.sort(key=lambda p: p["summary"]["offered_load"])
        assert curve.point_indices == [p["index"] for p in pts]
        assert curve.offered == [p["summary"]["offered_load"] for p in pts]
        assert curve.accepted == [p["summary"]["accepted_load"] for p in pts]
        assert curve.latency_mean_ns == [p["summary"]["latency_ns"]["mean"] for p in pts]
        assert curve.latency_p99_ns == [p["summary"]["latency_ns"]["p99"] for p in pts]


@pytest.mark.parametrize("margin", [0.0, 0.05, 0.2, 0.99])
def test_saturation_mark_is_the_first_load_where_accepted_falls_below_offered(
        runs, tmp_path, margin):
    from federation.plots.curves import load_curves
    from federation.plots.data import load_folders, series_of

    doc = _doc(runs["qs"])
    pts = sorted(doc["points"], key=lambda p: p["summary"]["offered_load"])
    expected = next((p["summary"]["offered_load"] for p in pts
                     if p["summary"]["accepted_load"]
                     < p["summary"]["offered_load"] * (1 - margin)), None)
    (curve,) = load_curves(series_of(load_folders([runs["qs"]])), margin)
    assert curve.saturation_load == expected
    if margin == 0.2:  # the quickstart saturates below 0.9 with minimal routing (0.75 of
        # offered is accepted there; at 0.5, 0.95 in this 3 us window, whose last packets are
        # created up to its end and cannot all arrive in it: 0.05 would mark 0.5)
        assert expected == pts[-1]["summary"]["offered_load"]
    if margin == 0.99:
        assert curve.saturation_load is None


def test_utilisation_boxes_and_heatmap_hold_the_ports_table(runs, drawn_qs):
    drawn = drawn_qs
    (util,) = drawn.figures["utilisation"]
    doc = _doc(runs["qs"])
    assert util.classes == ["terminal: NIC to router", "terminal: router to node", "local",
                            "global"]
    for p in doc["points"]:
        ports = pq.read_table(runs["qs"] / p["files"]["ports"]).to_pydict()
        u = np.array(ports["utilization_window"])
        mine = [b for b in util.boxes if b.point == p["index"]]
        assert sum(b.values.size for b in mine) == u.size
        assert np.isclose(sum(b.values.sum() for b in mine), u.sum())
        glob = [b for b in mine if b.link_class == "global"][0]
        cls = np.array(ports["link_class"])
        assert sorted(glob.values) == sorted(u[cls == "global"])
    (heat,) = drawn.figures["heatmap"]
    last = max(doc["points"], key=lambda p: p["summary"]["offered_load"])
    assert heat.point == last["index"] and heat.rows == "router"
    ports = pq.read_table(runs["qs"] / last["files"]["ports"]).to_pydict()
    router = np.array(ports["router"])
    u = np.array(ports["utilization_window"])[router >= 0]
    assert heat.matrix.shape[0] == 36
    assert np.count_nonzero(~np.isnan(heat.matrix)) == u.size
    assert np.isclose(np.nansum(heat.matrix), u.sum())
    # the busiest link of the summary is the brightest cell
    assert np.isclose(np.nanmax(heat.matrix), max(u))


def test_heatmap_is_aggregated_by_group_above_the_limit(runs, tmp_path, drawn_qs):
    from federation.plots import links
    from federation.plots.data import load_folders, series_of

    folders = load_folders([runs["qs"]])
    (s,) = series_of(folders)
    heat = links.draw_heatmap(s, folders, tmp_path, "png", "heat", limit=10)
    _decodes(heat.path)
    assert heat.rows == "group" and heat.matrix.shape[0] == 9  # 9 groups of 4 routers
    full = drawn_qs.figures["heatmap"][0].matrix
    assert np.allclose(heat.matrix[0], np.nanmean(full[:4], axis=0), equal_nan=True)


def test_distributions_reproduce_the_summary(runs, drawn_qs):
    drawn = drawn_qs
    doc = _doc(runs["qs"])
    by_index = {p["index"]: p["summary"] for p in doc["points"]}
    (lat,) = drawn.figures["latency_distribution"]
    (hops,) = drawn.figures["hops"]
    (msg,) = drawn.figures["message_completion"]
    assert len(lat.dists) == len(hops.dists) == len(msg.dists) == 3
    for d in lat.dists:
        s = by_index[d.point]
        assert d.values.size == s["packets_measured"]
        assert np.isclose(np.percentile(d.values, 50), s["latency_ns"]["p50"])
        assert np.isclose(np.percentile(d.values, 99), s["latency_ns"]["p99"])
        assert np.isclose(d.values.mean(), s["latency_ns"]["mean"])
    for d in hops.dists:
        assert np.isclose(d.values.mean(), by_index[d.point]["mean_hops"])
    for d in msg.dists:
        assert np.isclose(d.values.mean(), by_index[d.point]["message_completion_ns_mean"])


def _as_engine(src: Path, dst: Path, engine: str, scale: float) -> Path:
    """A copy of a result folder as another engine would report it (same schema), with its
    mean latencies scaled: what the SimGrid adapter's folder looks like to the figures.  Its
    packets tables are left out: they would disagree with the scaled means (and the reader
    refuses a table that disagrees with its point's summary)."""
    shutil.copytree(src, dst)
    doc = _doc(dst)
    for p in doc["points"]:
        p["engine"] = engine
        p["summary"]["latency_ns"]["mean"] *= scale
        (dst / p["files"].pop("packets")).unlink()
    (dst / "results.json").write_text(json.dumps(doc))
    return dst


def test_engine_overlay_compares_matching_points(runs, tmp_path):
    from federation.plots import curves, engines
    from federation.plots.data import load_folders, series_of

    other = _as_engine(runs["two"], tmp_path / "sg", "simgrid", 1.25)
    folders = load_folders([runs["two"], other])
    series = series_of(folders)
    eng = engines.draw_engines(series, folders, tmp_path / "f", "png")
    _decodes(eng.path)
    assert eng.engines == ["native", "simgrid"]
    assert set(eng.curves) == {"minimal", "valiant"}
    assert set(eng.rel_diff["latency_mean_ns"]) == set(eng.rel_diff["accepted"]) == {
        "minimal", "valiant"}
    for key, per_engine in eng.rel_diff["latency_mean_ns"].items():
        diffs = [d for _, d in per_engine["simgrid"]]
        assert len(diffs) == 2 and np.allclose(diffs, 0.25), key
    for key, per_engine in eng.rel_diff["accepted"].items():  # accepted load left as it was
        assert [d for _, d in per_engine["simgrid"]] == [0.0, 0.0], key
    # the reference engine's offered loads are the x of the differences
    doc = _doc(runs["two"])
    offered = sorted(p["summary"]["offered_load"] for p in doc["points"]
                     if p["routing"] == "minimal")
    assert [x for x, _ in eng.rel_diff["accepted"]["minimal"]["simgrid"]] == offered
    assert [c.label for c in curves.load_curves(series)] == [
        "two native minimal", "two native valiant", "sg simgrid minimal", "sg simgrid valiant"]


@pytest.mark.parametrize("fmt", ["png", "svg", "pdf"])
def test_same_results_give_the_same_files(runs, tmp_path, fmt):
    """The heatmap has text, lines and an embedded image: all that could carry ids or dates."""
    from federation.plots import links
    from federation.plots.data import load_folders, series_of

    files = []
    for d in ("a", "b"):
        folders = load_folders([runs["qs"]])
        series = series_of(folders)
        files.append(links.draw_heatmap(series[0], folders, tmp_path / d, fmt, "heat").path)
    assert files[0].read_bytes() == files[1].read_bytes()


def test_report_is_one_self_contained_page(runs, tmp_path):
    r = run_cli("report", str(runs["qs"]), "--out", "r.html", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    page = (tmp_path / "r.html").read_text()
    assert "quickstart-dragonfly" in page and "<table>" in page
    imgs = re.findall(r'<img[^>]*src="([^"]*)"', page)
    assert len(imgs) == 7 and all(s.startswith("data:image/png;base64,") for s in imgs)
    # nothing loaded from elsewhere: every src/href is an embedded image
    refs = re.findall(r"""(?:src|href)\s*=\s*["']?([^"'\s>]*)""", page)
    assert len(refs) == 7 and all(x.startswith("data:") for x in refs)
    assert "<script" not in page and "<link" not in page
    # the resolved machine is there with its defaults filled in
    assert "packet_size: 512" in page and "vcs: 3" in page


def test_report_and_plot_refuse_to_replace_files_without_overwrite(runs, tmp_path):
    """Fuzz 43, item 8: ``report --out`` replaced any file (a text file became the HTML page,
    exit 0) and ``plot --out`` the same-named files of a user's folder; like ``run``,
    ``export``, ``crossval`` and ``comm --plot`` they now need ``--overwrite``, and a refusal
    leaves everything as it was."""
    keep = tmp_path / "important.txt"
    keep.write_text("precious data")
    line = one_error(run_cli("report", str(runs["qs"]), "--out", str(keep), cwd=tmp_path))
    assert line == f"error: --out: {keep} exists; choose another file or pass --overwrite"
    assert keep.read_text() == "precious data"
    r = run_cli("report", str(runs["qs"]), "--out", str(keep), "--overwrite", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert keep.read_text().startswith("<!DOCTYPE html>")
    # the default page too: a second report of the folder
    r = run_cli("report", str(runs["qs"]), "--out", "r.html", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    line = one_error(run_cli("report", str(runs["qs"]), "--out", "r.html", cwd=tmp_path))
    assert line == "error: --out: r.html exists; choose another file or pass --overwrite"

    figs = tmp_path / "figs"
    figs.mkdir()
    (figs / "latency-load.png").write_text("mine")
    (figs / "notes.txt").write_text("mine too")
    line = one_error(run_cli("plot", str(runs["qs"]), "--out", "figs", cwd=tmp_path))
    assert line == ("error: --out: figs/latency-load.png exists; choose another folder or pass "
                    "--overwrite")
    assert sorted(p.name for p in figs.iterdir()) == ["latency-load.png", "notes.txt"]
    assert (figs / "latency-load.png").read_text() == "mine"
    r = run_cli("plot", str(runs["qs"]), "--out", "figs", "--overwrite", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert len(r.stdout.split()) == 7 and (figs / "notes.txt").read_text() == "mine too"
    _decodes(figs / "latency-load.png")
    line = one_error(run_cli("plot", str(runs["qs"]), "--out", "figs", cwd=tmp_path))
    assert line == ("error: --out: figs/hops.png exists (7 of the 7 figures are there already); "
                    "choose another folder or pass --overwrite")
    assert sorted(p.name for p in figs.iterdir()) == sorted(
        [Path(p).name for p in r.stdout.split()] + ["notes.txt"])


def test_run_plot_draws_into_the_output_folder(runs):
    assert RUN_PLOT["stderr"] == ""
    assert "plots: qs/plots/ (7 figures)" in RUN_PLOT["stdout"]
    files = sorted((runs["qs"] / "plots").iterdir())
    assert [f.name for f in files] == [
        "hops.png", "latency-distribution.png", "latency-load.png", "link-utilisation.png",
        "message-completion.png", "port-heatmap.png", "throughput.png"]
    for f in files:
        _decodes(f)


def test_commands_that_draw_nothing_do_not_import_matplotlib(tmp_path):
    code = ("import sys\nfrom federation.cli import main\n"
            "main(['validate', 'schemas/quickstart.yaml'])\nmain(['--help'])\n"
            "print(sorted(m for m in ('matplotlib', 'pyarrow') if m in sys.modules))")
    import subprocess
    import sys

    repo = Path(__file__).resolve().parent.parent
    r = subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True, text=True,
                       env={"FEDERATION_DISABLE_PLUGIN_AUTOLOAD": "1", "PATH": "/usr/bin"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "[]"


def _wrong_version(tmp: Path, src: Path) -> Path:
    dst = tmp / "old"
    dst.mkdir()
    doc = _doc(src)
    doc["schema_version"] = 2
    (dst / "results.json").write_text(json.dumps(doc))
    return dst


def test_bad_folders_are_refused_naming_the_path(runs, tmp_path):
    from federation.errors import ConfigError
    from federation.plots.data import load_folder

    (tmp_path / "empty").mkdir()
    (tmp_path / "file.txt").write_text("x")
    (tmp_path / "notjson").mkdir()
    (tmp_path / "notjson" / "results.json").write_text("{")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "results.json").write_text('{"schema_name": "x"}')
    old = _wrong_version(tmp_path, runs["qs"])
    cases = {"missing": "no such folder", "file.txt": "not a folder",
             "empty": "holds no results.json", "notjson": "cannot read results.json",
             "other": "not an hpc-federation results document", "old": "schema_version 2"}
    for name, words in cases.items():
        with pytest.raises(ConfigError) as exc:
            load_folder(tmp_path / name)
        assert str(exc.value).startswith(f"{tmp_path / name}: ") and words in str(exc.value)
    assert old.name == "old"


@pytest.mark.parametrize("command", ["plot", "report"])
def test_bad_folders_are_refused_in_one_line(runs, tmp_path, command):
    line = one_error(run_cli(command, str(runs["qs"]), "missing", cwd=tmp_path))
    assert line == "error: missing: no such folder"
    old = _wrong_version(tmp_path, runs["qs"])
    line = one_error(run_cli(command, str(old), cwd=tmp_path))
    assert line.startswith(f"error: {old}: results.json has schema_version 2;")


def test_bad_options_are_refused_in_one_line(runs, tmp_path):
    (tmp_path / "taken").write_text("x")
    line = one_error(run_cli("plot", str(runs["qs"]), "--out", "taken/figs", cwd=tmp_path))
    assert line == "error: --out: cannot write taken/figs: Not a directory"
    line = one_error(run_cli("plot", str(runs["qs"]), "--out", "taken", cwd=tmp_path))
    assert line == "error: --out: taken exists and is not a folder"
    assert (tmp_path / "taken").read_text() == "x"
    line = one_error(run_cli("plot", str(runs["qs"]), "--format", "jpg", cwd=tmp_path))
    assert line == "error: --format: must be one of png, svg, pdf, got 'jpg'"
    line = one_error(run_cli("report", str(runs["qs"]), "--saturation-margin", "1.5",
                             cwd=tmp_path))
    assert line.startswith("error: --saturation-margin: must be a fraction")


def test_csv_tables_give_the_same_data(runs, tmp_path):
    """``outputs: {format: csv}`` folders read like Parquet ones."""
    import pyarrow.csv as pcsv

    from federation.plots.data import load_folder, measured_latency_ns
    from federation.plots.links import port_matrix

    dst = tmp_path / "csv"
    shutil.copytree(runs["qs"], dst)
    doc = _doc(dst)
    for p in doc["points"]:
        for name, f in p["files"].items():
            pcsv.write_csv(pq.read_table(dst / f), dst / f"{name}-{p['index']}.csv")
            (dst / f).unlink()
            p["files"][name] = f"{name}-{p['index']}.csv"
    (dst / "results.json").write_text(json.dumps(doc))
    a, b = load_folder(runs["qs"]), load_folder(dst)
    for pa, pb in zip(a.result.points, b.result.points, strict=True):
        assert np.array_equal(measured_latency_ns(a.table(pa, "packets")),
                              measured_latency_ns(b.table(pb, "packets")))
        ma, ca, _ = port_matrix(a.table(pa, "ports"))
        mb, cb, _ = port_matrix(b.table(pb, "ports"))
        assert ca == cb and np.allclose(ma, mb, equal_nan=True)


def test_incomplete_run_without_tables_draws_what_it_can(runs, tmp_path):
    """A run stopped after its first point, with the tables turned off: the load figures are
    drawn from results.json, the rest is skipped with the reason, on stderr."""
    dst = tmp_path / "part"
    dst.mkdir()
    doc = _doc(runs["qs"])
    doc.update(status="incomplete", missing_points=[1, 2], error="interrupted")
    doc["points"] = doc["points"][:1]
    doc["points"][0]["files"] = {}
    (dst / "results.json").write_text(json.dumps(doc))
    r = run_cli("plot", "part", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["part/plots/latency-load.png", "part/plots/throughput.png"]
    notes = r.stderr.splitlines()
    assert notes[0] == ("note: part: incomplete run (points [1, 2] missing); drawing its 1 "
                        "finished points")
    assert "note: not drawn: utilisation: no ports tables (outputs.ports was off)" in notes
    assert "note: not drawn: hops: minimal: no packets tables (outputs.packets was off)" in notes
    assert len(notes) == 1 + 5  # utilisation, heatmap, latency distribution, hops, messages


def test_names_are_text_never_mathtext(runs, tmp_path):
    """An experiment, machine or routing named with dollar signs is drawn as written (with
    mathtext on, an unknown command such as ``\\x`` failed the whole figure)."""
    dst = tmp_path / "dollars"
    shutil.copytree(runs["two"], dst)
    doc = _doc(dst)
    doc["experiment"] = "cost $\\x{1}$ run"
    for p in doc["points"]:
        p["routing"] = f"$\\{p['routing']}$"
    (dst / "results.json").write_text(json.dumps(doc))
    drawn = _draw([dst], tmp_path / "f")
    assert [c.label for c in drawn.figures["latency"][0].curves] == ["$\\minimal$",
                                                                      "$\\valiant$"]
    for p in drawn.paths:
        _decodes(p)


def test_program_completion_figure_is_the_programs_summary(tmp_path):
    """Fuzz 47, defect 2: beside a ``background``, a rank-program run's completion figure
    pooled the background's messages with the programs', so its labels (162 samples, median
    1761.9 ns) were not the summary's ``programs.message_completion_ns`` (132, 1915.7 ns).
    The point's sample is the programs' messages, its figures the summary's exactly; the
    background's is drawn apart, and the two pooled give the point's mean completion."""
    from federation.plots.data import load_folder, series_of
    from federation.plots.distributions import draw_message_completion, spread_label

    (tmp_path / "e.yaml").write_text(
        "machine: {topology: {kind: torus, dims: [2, 4]}}\n"
        "routing: {algorithm: minimal}\n"
        "workload: {kind: collective, op: alltoall, size: 4KiB, ranks: 8, algorithm: auto}\n"
        "background: {kind: synthetic, pattern: uniform, load: 0.2}\n"
        "stop: {warmup: 0us, measure: 2us}\n")
    r = run_cli("run", "e.yaml", "--out", "o", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    summary = _doc(tmp_path / "o")["points"][0]["summary"]
    want = summary["programs"]["message_completion_ns"]
    folder = load_folder(tmp_path / "o")
    (series,) = series_of([folder])
    fig = draw_message_completion(series, [folder], tmp_path / "figs", "png", "mc")
    _decodes(fig.path)
    programs, background = fig.dists
    assert not programs.background and background.background
    assert programs.job is background.job is None
    got = programs.stats.model_dump(mode="json")
    assert (got["samples"], got["median"], got["qcd"]) == (want["samples"], want["median"],
                                                           want["qcd"])
    assert got == want
    assert programs.values.size == want["samples"] == summary["programs"]["messages"]
    assert f"median {want['median']:.4g}" in spread_label(programs)
    assert background.values.size > 0 and background.label.endswith(", background")
    pooled = np.concatenate([programs.values, background.values])
    assert np.isclose(pooled.mean(), summary["message_completion_ns_mean"], rtol=1e-9)
    # a rank-program run's messages table is checked against the programs' summary now that
    # the figure tells them from the background: one program row gone is another table
    t = pq.read_table(tmp_path / "o" / "messages-0.parquet")
    bg = np.asarray(t.column("background").to_pylist(), dtype=bool)
    keep = np.ones(t.num_rows, dtype=bool)
    keep[np.flatnonzero(~bg)[-1]] = False
    pq.write_table(t.filter(keep), tmp_path / "o" / "messages-0.parquet")
    line = one_error(run_cli("plot", "o", "--out", "figs2", cwd=tmp_path))
    assert line.startswith(f"error: o/messages-0.parquet: completion_ps: the programs' "
                           f"completed messages are {want['samples'] - 1} (max ")
    assert line.endswith(f"but the point's summary counts {want['samples']} (max "
                         f"{want['max']:g} ns): not this point's table")


def test_latency_figure_of_rank_program_runs_on_a_log_scale(tmp_path):
    """Rank-program runs have no latency percentiles: two whose mean latencies differ more
    than 20x (9 against about 620 ns) put the 99th-percentile panel on a log scale with no value
    above 0 (matplotlib's "Data cannot be log-scaled", a traceback from ``plot`` and
    ``report``).  The panel stays linear and says it has no values."""
    fast = "router: {delay: 1ns}, links: {terminal: {latency: 1ns}, torus: {latency: 1ns}}, "
    for name, machine in (("fast", fast), ("slow", "links: {torus: {latency: 500ns}}, ")):
        (tmp_path / f"{name}.yaml").write_text(
            f"machine: {{{machine}topology: {{kind: torus, dims: [2]}}}}\n"
            "workload: {kind: pingpong, sizes: [8B], iterations: 2}\n")
        r = run_cli("run", f"{name}.yaml", "--out", name, cwd=tmp_path)
        assert r.returncode == 0, r.stderr
    drawn = _draw([tmp_path / "fast", tmp_path / "slow"], tmp_path / "figs")
    _decodes(tmp_path / "figs" / "latency-load.png")
    assert drawn is not None


@pytest.mark.parametrize("command", ["plot", "report"])
def test_a_folder_given_twice_is_refused(runs, tmp_path, command):
    """``plot out out`` drew every series twice (files ending in ``-2``)."""
    line = one_error(run_cli(command, str(runs["qs"]), str(runs["qs"]) + "/.", "--out", "x",
                             cwd=tmp_path))
    assert line == f"error: {runs['qs']}: this results folder is given twice; give each " \
        "folder once"
    assert not (tmp_path / "x").exists()
