"""Inputs the engine cannot represent, or that would measure nothing, are refused before the run
with one message naming the file, the field and the limit (exit 2, nothing written)."""

from __future__ import annotations

import pytest
from conftest import one_error, run_cli

MACHINE = "topology: {kind: dragonfly, p: 2, a: 4, h: 2}\n"


def files(tmp_path, machine_extra="", exp_extra="",
          workload="{kind: synthetic, pattern: uniform, load: 0.1}",
          stop="{warmup: 0.1us, measure: 0.5us}"):
    (tmp_path / "m.yaml").write_text(MACHINE + machine_extra)
    (tmp_path / "e.yaml").write_text(
        f"machine: m.yaml\nworkload: {workload}\nstop: {stop}\n{exp_extra}")


CLOCK_CASES = {
    # a plain number is seconds: 100 for 100 ns is 100 s
    "latency 100": ("links: {global: {latency: 100}}\n", "m.yaml: links.global.latency: 100s is "
                    "beyond the engine's clock range (8796093022208 ps = 8.796 s"),
    "latency 1e99ns": ("links: {global: {latency: 1e99ns}}\n", "m.yaml: links.global.latency: "),
    "delay 1e18ps": ("router: {delay: 1e18ps}\n", "m.yaml: router.delay: 1e+06s is beyond"),
    "delay 65": ("router: {delay: 65}\n", "m.yaml: router.delay: 65s is beyond"),
    "slow NIC": ("nic: {bandwidth: 3B/s}\n", "m.yaml: nic.bandwidth: one 512 B packet takes "
                 "170.7s to leave a NIC"),
    "slow link": ("links: {local: {bandwidth: 10B/s}}\n", "m.yaml: links.local.bandwidth: one "
                  "512 B packet takes 51.2s to cross a link"),
}


@pytest.mark.parametrize("case", sorted(CLOCK_CASES))
def test_times_beyond_the_clock_are_refused(tmp_path, case):
    extra, expected = CLOCK_CASES[case]
    files(tmp_path, machine_extra=extra)
    for cmd in ("run", "validate"):
        line = one_error(run_cli(cmd, "e.yaml", "--out", "o", cwd=tmp_path) if cmd == "run"
                         else run_cli(cmd, "e.yaml", cwd=tmp_path))
        assert expected in line, line
    assert not (tmp_path / "o").exists()


def test_swept_time_beyond_the_clock_blames_the_sweep(tmp_path):
    files(tmp_path, exp_extra="sweep: {machine.router.delay: [50ns, 20s]}\n")
    line = one_error(run_cli("run", "e.yaml", "--out", "o", cwd=tmp_path))
    assert "e.yaml: sweep.machine.router.delay: 20s is beyond the engine's clock range" in line
    assert "(sweep point 1: machine.router.delay=20s)" in line
    assert not (tmp_path / "o").exists()


#: fuzz 43, item 5: a swept value refused by the static models (or a plugin's Params) blamed
#: the base field, which is fine in the file ("e.yaml: workload.load: ...")
SWEPT_VALUES = {
    "{workload.load: [0.1, -1]}": "e.yaml: sweep.workload.load: Input should be greater than 0 "
                                  "(sweep point 1: workload.load=-1)",
    "{seed: [1, -1]}": "e.yaml: sweep.seed: Input should be greater than or equal to 0 (sweep "
                       "point 1: seed=-1)",
    "{machine.topology.a: [4, 0]}": "e.yaml: sweep.machine.topology.a: Input should be greater "
                                    "than or equal to 1 (sweep point 1: machine.topology.a=0)",
    "{machine.router.vcs: [3, 0]}": "e.yaml: sweep.machine.router.vcs: Input should be greater "
                                    "than or equal to 1 (sweep point 1: machine.router.vcs=0)",
    "{workload: [{kind: synthetic, load: -1}]}": "e.yaml: sweep.workload: workload.load: Input "
                                                 "should be greater than 0",
}


@pytest.mark.parametrize("sweep", sorted(SWEPT_VALUES))
def test_swept_value_refused_by_the_models_blames_the_sweep(tmp_path, sweep):
    files(tmp_path, exp_extra=f"sweep: {sweep}\n")
    for args in (["validate", "e.yaml"], ["run", "e.yaml", "--out", "o"]):
        assert one_error(run_cli(*args, cwd=tmp_path)) == f"error: {SWEPT_VALUES[sweep]}"
    assert not (tmp_path / "o").exists()


def test_swept_kind_and_plugin_parameters_blame_the_sweep(tmp_path):
    """A plugin's refusal of a swept value, at loading (an unknown kind) or in the checks
    before the run (a GOAL calc unit), names the sweep entry and the point too."""
    files(tmp_path, exp_extra="sweep: {workload.kind: [synthetic, bogus]}\n")
    line = one_error(run_cli("validate", "e.yaml", cwd=tmp_path))
    assert line.startswith("error: e.yaml: sweep.workload.kind: unknown workload 'bogus' "
                           "(installed: "), line
    assert line.endswith(") (sweep point 1: workload.kind=bogus)"), line
    (tmp_path / "p.goal").write_text("num_ranks 2\nrank 0 {\nl1: send 8b to 1\n}\n"
                                     "rank 1 {\nl1: recv 8b from 0\n}\n")
    files(tmp_path, workload="{kind: program, path: p.goal}",
          exp_extra="sweep: {workload.calc_unit: [1ns, 0.5ps], seed: [1, 2]}\n")
    assert one_error(run_cli("validate", "e.yaml", cwd=tmp_path)) == (
        "error: e.yaml: sweep.workload.calc_unit: 0.5ps is not a whole number of picoseconds "
        "(at least 1ps) (sweep point 2: workload.calc_unit=0.5ps, seed=1)")
    files(tmp_path, workload="{kind: program, path: p.goal, calc_unit: 1.0000004us}")
    assert one_error(run_cli("validate", "e.yaml", cwd=tmp_path)) == (
        "error: e.yaml: workload.calc_unit: 1000000.4ps is not a whole number of picoseconds "
        "(at least 1ps)")


def test_swept_values_are_blamed_in_jobs_machine_files_and_overrides(tmp_path):
    """A job named in the axis, a field of a machine file the sweep reaches into, an axis the
    command line gives, and an error listing several problems."""
    from federation.errors import ConfigError
    from federation.pipeline.load import load_experiment

    def refused(*sets: str) -> str:
        with pytest.raises(ConfigError) as exc:
            load_experiment(tmp_path / "e.yaml", list(sets))
        return str(exc.value)

    e = tmp_path / "e.yaml"
    files(tmp_path, workload="{kind: synthetic, load: 0.1}",
          exp_extra="sweep: {machine.topology.h: [2, -2]}\n")
    assert refused() == (f"{e}: sweep.machine.topology.h: Input should be greater than or "
                         "equal to 1 (sweep point 1: machine.topology.h=-2)")
    assert refused("sweep.workload.load=[0.5, 2]") == (
        f"{e}: sweep.workload.load: Input should be less than or equal to 1 (sweep point 1: "
        "machine.topology.h=2, workload.load=2) (the value comes from --set "
        "sweep.workload.load=[0.5, 2])")
    files(tmp_path, exp_extra="sweep: {workload: [{kind: synthetic, load: 2, x: 1}]}\n")
    assert refused() == (f"{e}: \n  sweep.workload: workload.load: Input should be less than or "
                         "equal to 1\n  sweep.workload: workload.x: unknown key")
    (tmp_path / "e.yaml").write_text(
        "machine: m.yaml\nstop: {warmup: 0.1us, measure: 0.5us}\njobs:\n"
        "  - {name: a, workload: {kind: synthetic, load: 0.1}, placement: {kind: contiguous, "
        "count: 4}}\n  - {name: bg, workload: {kind: synthetic, load: 0.1}, placement: rest}\n"
        "sweep: {jobs.bg.workload.load: [0.1, -2]}\n")
    assert refused() == (f"{e}: sweep.jobs.bg.workload.load: Input should be greater than 0 "
                         "(sweep point 1: jobs.bg.workload.load=-2)")


def test_window_beyond_the_clock_is_refused(tmp_path):
    files(tmp_path, stop="{warmup: 1s, measure: 8s}")
    line = one_error(run_cli("validate", "e.yaml", cwd=tmp_path))
    assert "e.yaml: stop.measure: warmup + measure = 9s is beyond the engine's clock" in line


def test_validate_checks_every_sweep_point(tmp_path):
    """Point 0 (minimal) fits 2 VCs; point 1 (valiant) needs 3: refused before any run."""
    files(tmp_path, machine_extra="router: {vcs: 2}\n",
          exp_extra="sweep: {routing.algorithm: [minimal, valiant]}\n")
    for args in (["validate", "e.yaml"], ["run", "e.yaml", "--out", "o"]):
        line = one_error(run_cli(*args, cwd=tmp_path))
        assert "m.yaml: router.vcs: routing 'valiant'" in line
        assert "needs 3 virtual channels" in line and "(sweep point 1: " in line
    assert not (tmp_path / "o").exists()


EMPTY_CASES = {
    "tiny load": ("{kind: synthetic, load: 1.0e-12}", "{warmup: 0.1us, measure: 0.5us}",
                  ["e.yaml: stop.measure: no packet was generated in the measurement window "
                   "[100ns, 600ns)", "the 72 nodes create about 3.96e-10 messages in it"]),
    "message before the window": (
        "{kind: messages, messages: [{at: 0, src: 0, dst: 5, size: 1GB}]}",
        "{warmup: 1us, measure: 1us}",
        ["e.yaml: stop.measure: no packet was generated in the measurement window [1us, 2us)",
         "1 message(s) are created between 0ps and 0ps, outside it"]),
}


@pytest.mark.parametrize("case", sorted(EMPTY_CASES))
def test_runs_that_generate_no_traffic_are_refused(tmp_path, case):
    workload, stop, expected = EMPTY_CASES[case]
    files(tmp_path, workload=workload, stop=stop)
    line = one_error(run_cli("run", "e.yaml", "--out", "o", cwd=tmp_path))
    for piece in expected:
        assert piece in line, line
    assert not (tmp_path / "o").exists()


def test_machine_too_large_for_memory_is_refused(tmp_path):
    files(tmp_path)
    line = one_error(run_cli("run", "e.yaml", "--out", "o", "--max-memory", "100KiB",
                             cwd=tmp_path))
    assert "m.yaml: topology: this machine (36 routers, 72 nodes, 90 cables) needs about" in line
    assert "more than the limit of 9.54e-05 GiB (--max-memory" in line
    line = one_error(run_cli("validate", "m.yaml", cwd=tmp_path,
                             env={"FEDERATION_MAX_MEMORY": "1KiB"}))
    assert "m.yaml: topology: this machine" in line
    line = one_error(run_cli("run", "e.yaml", "--max-memory", "lots", cwd=tmp_path))
    assert line.startswith("error: --max-memory: 'lots' is not a size")


def test_traffic_too_large_for_memory_is_refused(tmp_path):
    files(tmp_path, stop="{warmup: 0.1us, measure: 50us}")
    line = one_error(run_cli("run", "e.yaml", "--out", "o", "--max-memory", "1MiB",
                             cwd=tmp_path))
    assert "e.yaml: stop.measure: this point (" in line and "packets) with its packets and" in line
    assert "needs about" in line


def test_expected_packets_count_whole_packets(monkeypatch):
    """513 B messages on 512 B packets are two packets each: the estimate counted 1.002
    (24,257 of the 48,354 a run created)."""
    from types import SimpleNamespace

    from federation.pipeline import traffic_memory

    point = SimpleNamespace(machine=SimpleNamespace(machine=SimpleNamespace(packet_size=512)))
    built = SimpleNamespace(network=SimpleNamespace(n_nodes=10))
    monkeypatch.setattr(traffic_memory, "message_rate", lambda *a, **k: (0.5, 513.0, 1000.0))
    assert traffic_memory.packet_rate(point, built) == 1000.0 * 10 * 2


def test_stop_messages_beyond_memory_is_refused_before_generating(tmp_path):
    """validate accepted 1e7 messages under 100 MiB, and run generated them all (a peak of
    846 MB) before its own check refused them."""
    from conftest import one_error, run_cli

    (tmp_path / "e.yaml").write_text(
        "machine: {topology: {kind: dragonfly, p: 2, a: 4, h: 2}}\n"
        "workload: {kind: synthetic, load: 0.3}\nstop: {warmup: 1us, messages: 10000000}\n"
        "outputs: {packets: false, messages: false}\n")
    line = one_error(run_cli("validate", "e.yaml", "--max-memory", "100MiB", cwd=tmp_path))
    assert line.startswith("error: e.yaml: stop.messages: this point (15000237 packets) needs "
                           "about 0.926 GiB of memory"), line
