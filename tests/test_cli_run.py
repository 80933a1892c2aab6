"""``federation run`` end to end: stdout data, quiet stderr off a terminal, result files."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pyarrow.parquet as pq


def run_cli(*args, cwd):
    env = {**os.environ, "FEDERATION_DISABLE_PLUGIN_AUTOLOAD": "1"}
    return subprocess.run([sys.executable, "-c", "from federation.cli import entry; entry()",
                           *args], capture_output=True, text=True, cwd=cwd, env=env)


def test_quickstart_runs_and_writes_results(tmp_path):
    r = run_cli("run", "--set", "stop.measure=4us", "--out", "out", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""  # no progress bar when stderr is not a terminal
    assert "busiest links" in r.stdout and "lat mean ns" in r.stdout
    out = tmp_path / "out"
    doc = json.loads((out / "results.json").read_text())
    assert doc["schema_name"] == "hpc-federation.results" and doc["schema_version"] == 6
    assert [p["sweep"]["workload.load"] for p in doc["points"]] == [0.1, 0.3, 0.5, 0.7, 0.9]
    for p in doc["points"]:
        s = p["summary"]
        assert s["packets_delivered"] == s["packets_generated"]
        packets = pq.read_table(out / p["files"]["packets"])
        ports = pq.read_table(out / p["files"]["ports"])
        messages = pq.read_table(out / p["files"]["messages"])
        assert packets.num_rows == s["packets_generated"]
        # router ports (72 terminal + 2 x 54 local + 2 x 36 global) plus 72 NIC ports
        assert ports.num_rows == 72 + 108 + 72 + 72
        assert set(ports.column("link_class").to_pylist()) == {"terminal", "local", "global"}
        assert messages.num_rows == packets.num_rows  # single-packet messages
        assert min(messages.column("completion_ps").to_pylist()) > 0
    # the offered load tracks the sweep value
    offered = [p["summary"]["offered_load"] for p in doc["points"]]
    assert all(abs(o - w) < 0.05 for o, w in zip(offered, [0.1, 0.3, 0.5, 0.7, 0.9], strict=True))
    perf = json.loads((out / "performance.json").read_text())
    assert len(perf) == 5 and all(p["wall_seconds"] > 0 for p in perf)


def test_json_output_and_csv_tables(tmp_path):
    (tmp_path / "e.yaml").write_text(
        "machine: {topology: {kind: dragonfly, p: 1, a: 2, h: 1}}\n"
        "workload: {kind: synthetic, load: 0.2}\n"
        "stop: {warmup: 0.5us, messages: 300}\n"
        "outputs: {format: csv}\n")
    r = run_cli("run", "e.yaml", "--json", "--out", "o", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    s = doc["points"][0]["summary"]
    assert s["packets_measured"] == 300  # stop after N messages (single-packet messages)
    assert s["packets_delivered"] == s["packets_generated"]
    assert (tmp_path / "o" / "packets-0.csv").exists()
    assert (tmp_path / "o" / "ports-0.csv").exists()


def test_a_warm_open_loop_run_imports_neither_numba_nor_scipy_stats(tmp_path):
    """What a warm run's process pays before its first packet (issue 20: half a second and
    90 MB for numba, 0.3 s for scipy.stats): the compiled loop is loaded as a native library,
    and the modules that compile their own kernels import numba only when they run them."""
    code = ("import sys\nfrom federation.cli import main\n"
            "try:\n    main(['run', '--set', 'stop.measure=1us', '--set', 'sweep={}', "
            "'--out', 'out', '--json'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('numba', 'llvmlite', 'scipy.stats', 'matplotlib', 'dask')"
            " if m in sys.modules), file=sys.stderr)")
    env = {**os.environ, "FEDERATION_DISABLE_PLUGIN_AUTOLOAD": "1"}
    for _ in range(2):  # the first run may compile the loop (and import numba to do so)
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           cwd=tmp_path, env=env)
        assert r.returncode == 0, r.stderr
    assert r.stderr.strip().splitlines()[-1] == "[]"
