"""Three more ways a hand-edited or corrupted results folder drew a wrong figure instead of
being refused (``federation/plots/wiring.py``, ``checks.py``, ``sweeps.py``):

1. a ports (or link-series) table whose router or port ids were permuted, or that lists a
   port twice or not at all, was drawn: its heatmap rows were the wrong routers.  Each row
   now states its port as the point's own machine wires it (router, link class, node, far
   end, number on its router), and a native table lists each port once;
2. an SST point's ports had no utilisation bound: a link cannot carry more than its
   bandwidth over the measurement window (and one packet begun at its end);
3. a sweep listing one load twice in a series whose two points measured different figures
   (not one run's: the runner runs a repeated load as the same simulation) drew a zig-zag.

Each refusal names the file and the field; what the runner writes stays readable.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest
from conftest import one_error, run_cli
from test_plots_fuzz import EXPERIMENT, _copy, _doc, _edit_table, _refusal, _run, _write_doc

#: merlin's statistics for the 6-router dragonfly (p 1, a 2, h 1: three ports a router),
#: what the stand-in ``sst`` writes: port k of every router sent k + 1 packets of 512 B
SST_EXPERIMENT = """name: sst-small
machine: {topology: {kind: dragonfly, p: 1, a: 2, h: 1}}
engine: {kind: sst, sst_binary: SST}
workload: {kind: synthetic, load: 0.3}
stop: {warmup: 1us, measure: 3us}
"""
FAKE_SST = '''
import sys
if not sys.argv[-1].endswith("config.py"):  # asked its version: write nothing here
    print("SST-Core Version (14.0.0)")
    sys.exit(0)
H = ("ComponentName, StatisticName, StatisticSubId, StatisticType, SimTime, Rank, Sum.u64, "
     "SumSQ.u64, Count.u64, Min.u64, Max.u64")
rows = [H]
for r in range(6):
    for p in range(3):
        rows.append(f"rtr{r}, send_bit_count, port{p}, Accumulator, 4000000, 0, "
                    f"{4096 * (p + 1)}, 0, {p + 1}, 4096, 4096")
        rows.append(f"rtr{r}, send_packet_count, port{p}, Accumulator, 4000000, 0, {p + 1}, "
                    f"0, {p + 1}, 1, 1")
for n in range(6):
    rows.append(f"nic{n}, send_bit_count, , Accumulator, 4000000, 0, 61440, 0, 15, 4096, 4096")
    rows.append(f"nic{n}, packet_latency, , Accumulator, 4000000, 0, 3000, 0, 10, 250, 400")
open("stats.csv", "w").write("\\n".join(rows) + "\\n")
print("nic0:   Offered   Average\\nnic0:     Load    Latency\\nnic0:      0.30         412.5 ns"
      "\\nnic0:\\nSimulation is complete, simulated time: 4.00012 us")
'''
#: a sweep the runner writes with a load twice in each series: the repeats are one simulation
REPEATS = EXPERIMENT.replace(
    "sweep: {workload.load: [0.2, 0.6]}",
    "sweep: {workload.load: [0.2, 0.2, 0.6], seed: [1, 2], outputs.ports: [true, false]}")


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """``base``: test_plots_fuzz's 2-point sweep of a 6-router dragonfly with link series;
    ``machines``: a sweep over the machine (6 and 20 routers); ``repeats``: :data:`REPEATS`;
    ``sst``: one point through a stand-in ``sst`` (statistics in SST's formats)."""
    tmp = tmp_path_factory.mktemp("more")
    fake = tmp / "fake-sst"
    fake.write_text(f"#!{sys.executable}\n{FAKE_SST}")
    fake.chmod(0o755)
    return {"base": _run(tmp, "base"),
            "machines": _run(tmp, "machines", [
                "sweep={workload.load: [0.2], machine.topology.a: [2, 4]}"]),
            "repeats": _run(tmp, "repeats", text=REPEATS),
            "sst": _run(tmp, "sst", text=SST_EXPERIMENT.replace("SST", str(fake)))}


def _columns(path: Path, *names: str) -> list[np.ndarray]:
    t = pq.read_table(path)
    return [t.column(n).to_numpy(zero_copy_only=False) for n in names]


def _quiet_router(dst: Path, busy: set[int], classes: tuple[str, str]) -> tuple[int, int]:
    """Two ports of one router, of the two ``classes``, neither a busiest link (so that the
    summary's check of the busiest links cannot be what refuses)."""
    port, router, cls = _columns(dst / "ports-0.parquet", "port", "router", "link_class")
    for r in range(int(router.max()) + 1):
        mine = {c: int(port[(router == r) & (cls == c)][0]) for c in classes}
        if not busy & set(mine.values()):
            return mine[classes[0]], mine[classes[1]]
    raise AssertionError("every router has a busiest link")


def _busy(dst: Path) -> set[int]:
    return {lk["port"] for lk in _doc(dst)["points"][0]["summary"]["busiest_links"]}


# ----------------------------------------------------------------- 1: the ports' wiring
def test_a_ports_table_with_its_routers_permuted_is_refused(runs, tmp_path):
    """The routers' rows rolled by one router: every router id in range and each (router,
    port) once, so it passed; port 0 is router 0's."""
    dst = _copy(runs["base"], tmp_path / "roll")

    def roll(v: np.ndarray) -> np.ndarray:
        v = v.copy()
        v[v >= 0] = np.roll(v[v >= 0], 3)
        return v

    _edit_table(dst / "ports-0.parquet", "router", roll)
    assert _refusal(dst) == (
        f"{dst}/ports-0.parquet: router: 5 on the row of port 0, but port 0 of the point's "
        "machine is router 0's port 0 (terminal, to node 0): the rows are permuted or of "
        "another machine")
    line = one_error(run_cli("plot", str(dst), "--out", str(tmp_path / "figs"), cwd=tmp_path))
    assert "ports-0.parquet: router: 5 on the row of port 0" in line
    assert not (tmp_path / "figs").exists()


def test_a_ports_table_with_two_port_ids_swapped_is_refused(runs, tmp_path):
    """A router's local and global port ids swapped (the rows keep their classes): the
    heatmap would draw the local cable's utilisation in the global column."""
    dst = _copy(runs["base"], tmp_path / "swap")
    local, glob = _quiet_router(dst, _busy(dst), ("local", "global"))
    _edit_table(dst / "ports-0.parquet", "port",
                lambda v: np.where(v == local, glob, np.where(v == glob, local, v)))
    msg = _refusal(dst)
    assert msg.startswith(f"{dst}/ports-0.parquet: link_class: 'local' on the row of port "
                          f"{glob}, but port {glob} of the point's machine is router "), msg
    assert "(global, to router " in msg and msg.endswith("permuted or of another machine")


def test_a_port_listed_twice_or_missing_is_refused(runs, tmp_path):
    """A row relabelled as another router's port: each (router, port) pair is still once,
    but port ``b`` has two rows and port ``a`` none."""
    dst = _copy(runs["base"], tmp_path / "twice")
    port, router, cls = _columns(dst / "ports-0.parquet", "port", "router", "link_class")
    busy = _busy(dst)
    ra, rb = [r for r in range(6)
              if int(port[(router == r) & (cls == "terminal")][0]) not in busy][:2]
    a, b = (int(port[(router == r) & (cls == "terminal")][0]) for r in (ra, rb))
    _edit_table(dst / "ports-0.parquet", "port", lambda v: np.where(v == b, a, v))
    assert _refusal(dst) == (f"{dst}/ports-0.parquet: port: port {a} (router {ra}'s port 0 "
                             f"(terminal, to node {ra})) has 2 rows; a ports table has one "
                             "row per port")
    dst = _copy(runs["base"], tmp_path / "missing")
    t = pq.read_table(dst / "ports-0.parquet")
    keep = t.column("port").to_numpy() != b
    pq.write_table(t.filter(keep), dst / "ports-0.parquet")
    assert _refusal(dst) == (f"{dst}/ports-0.parquet: port: port {b} (router {rb}'s port 0 "
                             f"(terminal, to node {rb})) has no row: the engine lists each of the "
                             "point's machine's 24 ports once ((dragonfly, 6 routers, 6 "
                             "nodes))")


def test_far_ends_and_local_numbers_are_the_machines(runs, tmp_path):
    """The columns that restate the wiring (peer_router, local_port, node) are checked
    too: a table of another machine of the same size differs there first."""
    for col, change in (("peer_router", lambda v: np.where(v >= 0, (v + 1) % 6, v)),
                        ("local_port", lambda v: (v + 1) % 3),
                        ("node", lambda v: np.where(v >= 0, (v + 1) % 6, v))):
        dst = _copy(runs["base"], tmp_path / col)
        _edit_table(dst / "ports-0.parquet", col, change)
        msg = _refusal(dst)
        assert msg.startswith(f"{dst}/ports-0.parquet: {col}: "), msg
        assert msg.endswith("the rows are permuted or of another machine"), msg


def test_busiest_links_named_as_the_machine_wires_them(runs, tmp_path):
    dst = _copy(runs["base"], tmp_path / "busiest")
    doc = _doc(dst)
    lk = doc["points"][0]["summary"]["busiest_links"][0]
    lk["peer"] = "router 99" if lk["peer"] != "router 99" else "router 98"
    _write_doc(dst, doc)
    msg = _refusal(dst)
    assert msg.startswith(f"{dst}/results.json: points[0].summary.busiest_links[0].peer: "
                          f"'{lk['peer']}', but port {lk['port']} of the point's machine "
                          "is "), msg


def test_a_link_series_with_its_routers_permuted_is_refused(runs, tmp_path):
    dst = _copy(runs["base"], tmp_path / "series")
    _edit_table(dst / "link_series-0.parquet", "router",
                lambda v: np.where(v >= 0, (v + 1) % 6, v))
    msg = _refusal(dst)
    assert msg.startswith(f"{dst}/link_series-0.parquet: router: "), msg
    assert msg.endswith("the rows are permuted or of another machine"), msg


def test_each_point_is_checked_against_its_own_machines_wiring(runs, tmp_path):
    """A sweep over the machine: the 20-router point's table is its machine's (it passes),
    and its routers permuted are refused naming that machine's port."""
    from federation.plots.data import load_folder

    assert len(load_folder(runs["machines"]).result.points) == 2
    dst = _copy(runs["machines"], tmp_path / "own")
    big = next(p for p in _doc(dst)["points"] if p["sweep"]["machine.topology.a"] == 4)
    _edit_table(dst / big["files"]["ports"], "router",
                lambda v: np.where(v >= 0, (v + 1) % 20, v))
    assert _refusal(dst).startswith(
        f"{dst}/{big['files']['ports']}: router: 1 on the row of port 0, but port 0 of the "
        "point's machine is router 0's port 0")


# ----------------------------------------------------------------- 2: SST's utilisation
def _sst_row(dst: Path, router: int, port: int) -> np.ndarray:
    r, p = _columns(dst / "ports-0.parquet", "router", "port")
    return (r == router) & (p == port)


def test_an_sst_folder_stays_readable(runs):
    from federation.plots.data import load_folder

    f = load_folder(runs["sst"])
    p = f.result.points[0]
    assert p.engine == "sst" and f.table(p, "ports")["utilization_window"].max() > 0


@pytest.mark.parametrize("scale, words", [
    (100.0, "more than its link can carry: at most "),  # bytes and utilisation both x100
    (1.5, "but its 2304 bytes_window over the 3e-06 s window at its link's "),
])
def test_sst_port_utilisation_is_bounded_by_its_link(runs, tmp_path, scale, words):
    """Router 0's global port sent 3 packets in the 3 us window; a hundredfold, utilisation
    and bytes together, is more than its link carries (it passed: SST was not bounded); half
    as much again in bytes only disagrees with its utilisation."""
    dst = _copy(runs["sst"], tmp_path / "sst")
    row = _sst_row(dst, 0, 2)
    _edit_table(dst / "ports-0.parquet", "bytes_window",
                lambda v: np.where(row, (v * scale).astype(np.int64), v))
    if scale > 10:
        _edit_table(dst / "ports-0.parquet", "utilization_window",
                    lambda v: np.where(row, v * scale, v))
    msg = _refusal(dst)
    assert msg.startswith(f"{dst}/ports-0.parquet: utilization_window: "), msg
    assert "on port 2 of router 0" in msg and words in msg and msg.endswith("sst engine)"), msg


def test_sst_utilisation_alone_above_the_link_is_refused(runs, tmp_path):
    dst = _copy(runs["sst"], tmp_path / "sst-u")
    row = _sst_row(dst, 3, 1)
    _edit_table(dst / "ports-0.parquet", "utilization_window", lambda v: np.where(row, 5.0, v))
    msg = _refusal(dst)
    assert msg.startswith(f"{dst}/ports-0.parquet: utilization_window: 5 on port 1 of router "
                          "3 (local), more than its link can carry: at most 1.0"), msg


def test_sst_ports_carry_the_adapters_link_classes(runs, tmp_path):
    dst = _copy(runs["sst"], tmp_path / "sst-cls")
    cls, = _columns(dst / "ports-0.parquet", "link_class")
    swap = {"local": "global", "global": "local"}
    _edit_table(dst / "ports-0.parquet", "link_class",
                lambda v: np.array([swap.get(c, c) for c in v.tolist()], dtype=object))
    assert _refusal(dst) == (f"{dst}/ports-0.parquet: link_class: 'global' on port 1 of "
                             "router 0, but the SST adapter wires that port as 'local': the "
                             "rows are permuted or of another machine")
    assert set(cls.tolist()) == {"terminal", "local", "global"}


# ----------------------------------------------------------------- 3: repeated loads
def test_a_load_the_runner_ran_twice_is_read(runs):
    """``[0.2, 0.2, 0.6]`` over two seeds and an output switch: each series holds its load
    0.2 four times, all one simulation."""
    from federation.plots.data import load_folders, series_of

    series = series_of(load_folders([runs["repeats"]]))
    assert sorted(len(s.points) for s in series) == [6, 6]
    for s in series:
        at = [p for p in s.points if p.sweep["workload.load"] == 0.2]
        assert len(at) == 4 and len({p.summary.offered_load for p in at}) == 1


def _relabel(doc: dict[str, Any], i: int, load: float) -> None:
    """Point ``i`` said to have run at ``load`` everywhere results.json names it."""
    p = doc["points"][i]
    p["sweep"]["workload.load"] = load
    p["resolved"]["workload"]["load"] = load
    p["workload"]["load"] = load


def test_one_load_twice_with_different_figures_is_refused(runs, tmp_path):
    dst = _copy(runs["base"], tmp_path / "dup")
    doc = _doc(dst)
    _relabel(doc, 1, 0.2)
    _write_doc(dst, doc)
    a, b = (p["summary"]["offered_load"] for p in doc["points"])
    assert _refusal(dst) == (
        f"{dst}/results.json: points[1].sweep.workload.load: points[0] and points[1] are both "
        "workload.load=0.2 of one series (engine native, routing minimal, the same swept "
        f"values), but their summary.offered_load differ ({a!r} and {b!r}): a load listed "
        "twice runs the same simulation twice, so one of them is not this run's point")
    line = one_error(run_cli("report", str(dst), "--out", str(tmp_path / "r.html"),
                             cwd=tmp_path))
    assert "points[0] and points[1] are both workload.load=0.2" in line


def test_a_repeat_with_another_seed_is_refused(runs, tmp_path):
    """The repeats of one series are one simulation: a point of the same load and figures
    but another seed was not written by this run."""
    dst = _copy(runs["repeats"], tmp_path / "seed")
    doc = _doc(dst)
    first = doc["points"][0]
    j = next(i for i, p in enumerate(doc["points"][1:], 1)
             if p["sweep"] == first["sweep"])
    doc["points"][j]["seed"] = first["seed"] + 7
    _write_doc(dst, doc)
    assert f"points[{j}].sweep.workload.load: points[0] and points[{j}]" in _refusal(dst)
    assert "their seed differ" in _refusal(dst)
