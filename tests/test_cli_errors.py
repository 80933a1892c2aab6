"""Every class of bad input ends with one message naming file and field, exit 2, no traceback,
and nothing written."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

MACHINE = "topology: {kind: dragonfly, p: 2, a: 4, h: 2}\n"


def run_cli(*args, cwd=None):
    env = {**os.environ, "FEDERATION_DISABLE_PLUGIN_AUTOLOAD": "1"}
    return subprocess.run([sys.executable, "-c", "from federation.cli import entry; entry()",
                           *args], capture_output=True, text=True, cwd=cwd, env=env)


def experiment(machine: str = "machine: m.yaml", extra: str = "") -> str:
    return (f"{machine}\nrouting: {{algorithm: minimal}}\n"
            "workload: {kind: synthetic, pattern: uniform, load: 0.1}\n"
            f"stop: {{warmup: 0.1us, measure: 0.5us}}\n{extra}")


CASES = {
    "unknown key": (
        MACHINE + "routerz: {vcs: 3}\n", "m.yaml", ["routerz", "unknown key"]),
    "wrong unit": (
        MACHINE + "links: {local: {bandwidth: 5GHz}}\n", "m.yaml",
        ["links.local.bandwidth", "not a data rate"]),
    "negative bandwidth": (
        MACHINE + "links: {global: {bandwidth: -4GiB/s}}\n", "m.yaml",
        ["links.global.bandwidth", "must be positive"]),
    "time where a size belongs": (
        MACHINE + "packet_size: 10ns\n", "m.yaml", ["packet_size", "not a size"]),
    "unknown topology kind": (
        "topology: {kind: dragonfy, p: 2}\n", "m.yaml",
        ["topology.kind", "unknown topology 'dragonfy'", "dragonfly"]),
    "bad topology parameter": (
        "topology: {kind: dragonfly, p: 0, a: 4, h: 2}\n", "m.yaml",
        ["topology.p", "greater than or equal to 1"]),
    "unknown topology parameter": (
        "topology: {kind: dragonfly, p: 2, a: 4, h: 2, q: 1}\n", "m.yaml",
        ["topology.q", "unknown key"]),
    "unknown link class": (
        MACHINE + "links: {optical: {latency: 1ns}}\n", "m.yaml",
        ["links.optical", "no link class 'optical'"]),
    "invalid YAML": (
        "topology: {kind: dragonfly, p: 2\n", "m.yaml", ["m.yaml", "invalid YAML"]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_machine_file(tmp_path, case):
    machine, _, expected = CASES[case]
    (tmp_path / "m.yaml").write_text(machine)
    (tmp_path / "e.yaml").write_text(experiment())
    out = tmp_path / "out"
    for cmd in (["run", "e.yaml", "--out", str(out)], ["validate", "e.yaml"]):
        r = run_cli(*cmd, cwd=tmp_path)
        assert r.returncode == 2, r.stderr
        assert "Traceback" not in r.stderr
        assert r.stdout == ""
        err = r.stderr.strip()
        assert err.startswith("error: ")
        assert "m.yaml" in err
        for piece in expected:
            assert piece in err, (piece, err)
    assert not out.exists()


EXPERIMENT_CASES = {
    "unknown routing": ("routing: {algorithm: ugal-x}", ["routing.algorithm", "unknown routing"]),
    "unknown workload kind": ("workload: {kind: trace}", ["workload.kind", "unknown workload"]),
    "bad load": ("workload: {kind: synthetic, load: 1.5}", ["workload.load", "less than or equal"]),
    "bad pattern": ("workload: {kind: synthetic, pattern: spiral}",
                    ["workload.pattern.kind", "unknown traffic pattern 'spiral'"]),
    "negative time": ("stop: {warmup: -1us, measure: 1us}", ["stop.warmup", "negative"]),
    "both stop rules": ("stop: {measure: 1us, messages: 10}", ["stop", "not both"]),
    "unknown engine": ("engine: {kind: booksim}", ["engine.kind", "unknown engine"]),
}


@pytest.mark.parametrize("case", sorted(EXPERIMENT_CASES))
def test_bad_experiment_file(tmp_path, case):
    line, expected = EXPERIMENT_CASES[case]
    (tmp_path / "m.yaml").write_text(MACHINE)
    (tmp_path / "e.yaml").write_text("machine: m.yaml\n" + line + "\n")
    r = run_cli("run", "e.yaml", "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    err = r.stderr.strip()
    assert "e.yaml" in err
    for piece in expected:
        assert piece in err, (piece, err)
    assert not (tmp_path / "out").exists()


def test_missing_experiment_file(tmp_path):
    r = run_cli("run", "nope.yaml", cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.strip() == "error: nope.yaml: file not found"


def test_missing_machine_file(tmp_path):
    (tmp_path / "e.yaml").write_text(experiment("machine: gone.yaml"))
    r = run_cli("run", "e.yaml", cwd=tmp_path)
    assert r.returncode == 2
    assert "e.yaml: machine: machine file 'gone.yaml' not found" in r.stderr
    assert "Traceback" not in r.stderr


def test_bad_set_override(tmp_path):
    (tmp_path / "m.yaml").write_text(MACHINE)
    (tmp_path / "e.yaml").write_text(experiment())
    r = run_cli("run", "e.yaml", "--set", "workload.load=2", cwd=tmp_path)
    assert r.returncode == 2
    assert "workload.load" in r.stderr
    r = run_cli("run", "e.yaml", "--set", "nonsense", cwd=tmp_path)
    assert r.returncode == 2
    assert "--set" in r.stderr and "key=value" in r.stderr


def test_set_override_reaches_into_machine_file(tmp_path):
    (tmp_path / "m.yaml").write_text(MACHINE)
    (tmp_path / "e.yaml").write_text(experiment())
    r = run_cli("run", "e.yaml", "--set", "machine.router.vcs=1", cwd=tmp_path)
    assert r.returncode == 2
    assert "needs 2 virtual channels" in r.stderr and "router.vcs" in r.stderr


def test_too_few_vcs_refused_before_run(tmp_path):
    (tmp_path / "m.yaml").write_text(MACHINE + "router: {vcs: 2}\n")
    (tmp_path / "e.yaml").write_text(experiment().replace("minimal", "valiant"))
    r = run_cli("validate", "e.yaml", cwd=tmp_path)
    assert r.returncode == 2
    assert "needs 3 virtual channels" in r.stderr


def test_machine_file_given_to_run(tmp_path):
    (tmp_path / "m.yaml").write_text(MACHINE)
    r = run_cli("run", "m.yaml", cwd=tmp_path)
    assert r.returncode == 2
    assert "machine file" in r.stderr


def test_validate_good_files(tmp_path):
    (tmp_path / "m.yaml").write_text(MACHINE)
    (tmp_path / "e.yaml").write_text(experiment())
    r = run_cli("validate", "m.yaml", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "36 routers, 72 nodes" in r.stdout
    r = run_cli("validate", "e.yaml", cwd=tmp_path)
    assert r.returncode == 0, r.stderr


def test_runaway_window_is_refused_before_allocating(tmp_path):
    (tmp_path / "m.yaml").write_text(MACHINE)
    (tmp_path / "e.yaml").write_text(experiment().replace("measure: 0.5us", "measure: 5s"))
    r = run_cli("run", "e.yaml", cwd=tmp_path)
    assert r.returncode == 2
    # synthetic traffic is generated a chunk at a time, so only the tables it would keep
    # grow with the window: the refusal names the field that lets it run
    assert "e.yaml: outputs.packets: this point (" in r.stderr
    assert "with its packets and messages tables" in r.stderr and "needs about" in r.stderr
