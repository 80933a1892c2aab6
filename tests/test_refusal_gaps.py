"""Inputs ``run`` refused (or ran wrongly) that ``validate`` passed, each now refused by both
with the same one line naming the file, the field and the limit.

* A link or NIC faster than one byte per picosecond (the engine's clock unit): a small
  packet's transmission rounded to 0 ps, and ``nic.bandwidth: 1e300`` was refused by ``run``
  only, blaming ``outputs.packets`` (the synthetic workload's slot, clamped to 1 ps, made a
  packet count of 1e+290).
* ``stop.messages`` whose first generation (half as long again as the messages' time at the
  load) the synthetic workload estimated above the limit of messages generated whole (2e8),
  a background whose horizon did, and a count the load cannot create before the end of the
  clock: ``run`` refused them after building (the last after generating every message).

Each case asks ``validate`` first: on the old code it passed at once.
"""

from __future__ import annotations

import pytest
import yaml
from conftest import one_error, run_cli

from federation.errors import ConfigError
from federation.models.limits import MAX_BANDWIDTH
from federation.models.machine import LinkClass, Machine, NicConfig

DRAGONFLY = "topology: {kind: dragonfly, p: 2, a: 4, h: 2}\n"  # 72 nodes, 5.25 GiB/s terminals
EXPERIMENT = ("machine: m.yaml\nworkload: {kind: synthetic, load: 0.1}\n"
              "stop: {warmup: 0.1us, measure: 0.5us}\n")
TOO_FAST = ("is more than the engine's clock resolves: a byte would take {ps} ps, less than "
            "its clock unit (1 ps: times are whole picoseconds), so a one-byte packet's "
            "transmission would round to 0 or 1 ps; at most 1e+12 B/s (1 TB/s, one byte per ps)")


def refused_alike(tmp_path, machine: str, experiment: str, *args: str) -> str:
    """``validate`` refuses with one line, and ``run`` with the same line, writing nothing."""
    (tmp_path / "m.yaml").write_text(machine)
    (tmp_path / "e.yaml").write_text(experiment)
    line = one_error(run_cli("validate", "e.yaml", *args, cwd=tmp_path))
    assert one_error(run_cli("run", "e.yaml", "--out", "o", *args, cwd=tmp_path)) == line
    assert not (tmp_path / "o").exists()
    return line


# --------------------------------------------------------------------------- bandwidth


def test_nic_bandwidth_past_one_byte_per_ps_is_refused_naming_it(tmp_path):
    line = refused_alike(tmp_path, DRAGONFLY + "nic: {bandwidth: 1e300}\n", EXPERIMENT)
    assert line == ("error: m.yaml: nic.bandwidth: 1e+300 = 1e+300 B/s "
                    + TOO_FAST.format(ps="1e-288"))


def test_nic_bandwidth_given_by_set_is_refused_naming_it(tmp_path):
    """The field of the machine file the override reaches into, and the override."""
    line = refused_alike(tmp_path, DRAGONFLY, EXPERIMENT, "--set", "machine.nic.bandwidth=1e300")
    assert line == ("error: m.yaml: nic.bandwidth: 1e+300 = 1e+300 B/s "
                    + TOO_FAST.format(ps="1e-288")
                    + " (the value comes from --set machine.nic.bandwidth=1e300)")


@pytest.mark.parametrize("cls", ["terminal", "local", "global"])
def test_link_bandwidth_past_one_byte_per_ps_is_refused_naming_it(tmp_path, cls):
    line = refused_alike(tmp_path, DRAGONFLY + f"links: {{{cls}: {{bandwidth: 2TB/s}}}}\n",
                         EXPERIMENT)
    assert line == (f"error: m.yaml: links.{cls}.bandwidth: '2TB/s' = 2e+12 B/s "
                    + TOO_FAST.format(ps="0.5"))


def test_a_machine_file_alone_is_refused_too(tmp_path):
    (tmp_path / "m.yaml").write_text(DRAGONFLY + "nic: {bandwidth: 1.5e12}\n")
    line = one_error(run_cli("validate", "m.yaml", cwd=tmp_path))
    assert line == ("error: m.yaml: nic.bandwidth: 1500000000000.0 = 1.5e+12 B/s "
                    + TOO_FAST.format(ps="0.667"))


def test_one_byte_per_ps_is_the_limit():
    assert LinkClass(bandwidth="1TB/s").bandwidth == MAX_BANDWIDTH == 1e12
    assert NicConfig(bandwidth=MAX_BANDWIDTH).bandwidth == 1e12
    with pytest.raises(ValueError, match="at most 1e"):
        LinkClass(bandwidth=1.000001e12)
    with pytest.raises(ValueError, match="at most 1e"):
        Machine.model_validate({"topology": {"kind": "torus", "dims": [4]},
                                "nic": {"bandwidth": "8.1Tb/s"}})


def test_a_topology_default_past_the_limit_is_refused_by_the_preflight(tmp_path, monkeypatch):
    """A plugin's ``link_defaults`` never pass the machine model: the clock check refuses
    them, naming the link class the default is for."""
    from federation.pipeline.bounds import check_clock
    from federation.pipeline.load import load_experiment
    from federation.plugin.components import LinkDefaults
    from federation.plugin.registry import get_plugins

    dragonfly = get_plugins().topologies.get("dragonfly")
    monkeypatch.setattr(dragonfly, "link_defaults", {
        **dragonfly.link_defaults, "global": LinkDefaults(bandwidth=4e12, latency=1e-7)})
    (tmp_path / "m.yaml").write_text(DRAGONFLY)
    (tmp_path / "e.yaml").write_text(EXPERIMENT)
    point = load_experiment(tmp_path / "e.yaml").points[0]
    with pytest.raises(ConfigError) as exc:
        check_clock(point)
    assert str(exc.value) == (f"{tmp_path / 'm.yaml'}: links.global.bandwidth: 4e+12 B/s (the "
                              "default of topology 'dragonfly') " + TOO_FAST.format(ps="0.25"))


def test_fast_figures_under_the_limit_still_run(tmp_path):
    """1 TB/s links and NICs: every transmission is whole picoseconds (512 ps a packet)."""
    (tmp_path / "m.yaml").write_text(
        DRAGONFLY + "links: {terminal: {bandwidth: 1TB/s}, local: {bandwidth: 1TB/s}, "
        "global: {bandwidth: 1TB/s}}\nnic: {bandwidth: 1e12}\n")
    (tmp_path / "e.yaml").write_text(EXPERIMENT)
    r = run_cli("run", "e.yaml", "--out", "o", cwd=tmp_path)
    assert r.returncode == 0, r.stderr


# --------------------------------------------------------------------------- stop.messages


def test_stop_messages_whose_generation_passes_the_limit_is_refused_by_validate(tmp_path):
    """72 nodes at load 0.1 of 5.25 GiB/s with 512 B messages (a 91 ps slot): 1.4e8
    messages are generated over 1.5 x their time, about 2.1e8 messages, beyond 2e8."""
    line = refused_alike(tmp_path, DRAGONFLY, EXPERIMENT.replace(
        "measure: 0.5us", "messages: 140000000"))
    assert line == ("error: e.yaml: stop.messages: warm-up plus measurement would create about "
                    "2.1e+08 messages (limit 2e+08 when they are generated whole); shorten "
                    "stop.warmup or stop.messages, or lower the load")


def test_stop_messages_in_a_job_is_refused_naming_the_job(tmp_path):
    experiment = ("machine: m.yaml\njobs: [{name: a, workload: {kind: synthetic, load: 0.1}, "
                  "placement: {kind: contiguous, count: 72}}]\n"
                  "stop: {warmup: 0.1us, messages: 140000000}\n")
    line = refused_alike(tmp_path, DRAGONFLY, experiment)
    assert line.startswith("error: e.yaml: stop.messages: warm-up plus measurement would "
                           "create about 2.1e+08 messages (limit 2e+08")
    # the job named (the path does not) with the node count the estimate is made of; not its
    # node numbers, which the refusal is not about
    assert line.endswith("or lower the load (job 'a' has 72 nodes)")


def test_stop_messages_the_load_cannot_create_before_the_clock_ends(tmp_path):
    """At load 0.01 the 72 nodes create about 7e7 messages in the clock's 8.8 s, fewer than
    1e8: ``run`` generated all of them (gigabytes) before it refused."""
    line = refused_alike(tmp_path, DRAGONFLY, EXPERIMENT.replace(
        "load: 0.1", "load: 0.01").replace("measure: 0.5us", "messages: 100000000"))
    assert line == ("error: e.yaml: stop.messages: at load 0.01 of a 5.63714e+09 B/s NIC with "
                    "512 B messages, the 72 nodes create about 6.97e+07 messages after the "
                    "warm-up before the end of the engine's clock range (8796093022208 ps = "
                    "8.796 s of simulated time), fewer than stop.messages (100000000); lower "
                    "stop.messages or raise the load")


def test_a_background_generated_whole_past_the_limit_is_refused_by_validate(tmp_path):
    """Beside rank programs a background is generated whole over warm-up + measure: 1 s at
    load 1 on 72 nodes is about 7.9e8 messages."""
    experiment = yaml.safe_dump({
        "machine": "m.yaml", "seed": 1, "stop": {"warmup": "0s", "measure": "1s"},
        "workload": {"kind": "pingpong", "sizes": [8], "iterations": 1, "nodes": [0, 71]},
        "background": {"kind": "synthetic", "load": 1.0}})
    line = refused_alike(tmp_path, DRAGONFLY, experiment)
    assert line == ("error: e.yaml: stop.measure: warm-up plus measurement would create about "
                    "7.93e+08 messages (limit 2e+08 when they are generated whole); shorten "
                    "stop.warmup or stop.measure, or lower the load")


def test_streamed_and_small_counts_still_validate(tmp_path):
    """A long window is streamed (no limit); a small count is generated as before.  Not
    kept: the packets and messages tables of the long window's 8e7 packets (about 19 GiB)
    are checked against --max-memory by validate as by run."""
    (tmp_path / "m.yaml").write_text(DRAGONFLY)
    for stop in ("{warmup: 0s, measure: 1s}", "{warmup: 0.1us, messages: 1000}"):
        (tmp_path / "e.yaml").write_text(EXPERIMENT.replace(
            "{warmup: 0.1us, measure: 0.5us}", stop))
        r = run_cli("validate", "e.yaml", "--set", "outputs.packets=false", "--set",
                    "outputs.messages=false", cwd=tmp_path)
        assert r.returncode == 0, (stop, r.stderr)


# --------------------------------------------------------------------------- a machine file alone


@pytest.mark.parametrize("field, yaml_text, why", [
    ("links.terminal.latency", "links: {terminal: {latency: 100}}",
     "100s is beyond the engine's clock range (8796093022208 ps = 8.796 s of simulated time); "
     "plain numbers are seconds (write '100ns', not 100)"),
    ("router.delay", "router: {delay: 50}",
     "50s is beyond the engine's clock range (8796093022208 ps = 8.796 s of simulated time); "
     "plain numbers are seconds (write '50ns', not 50)"),
])
def test_validate_of_a_machine_file_checks_its_figures_against_the_clock(tmp_path, field,
                                                                          yaml_text, why):
    """``validate m.yaml`` called a machine whose terminal latency is 100 s valid (the clock
    checks ran for experiments only); an experiment on it was refused by both."""
    (tmp_path / "m.yaml").write_text(DRAGONFLY + yaml_text + "\n")
    line = one_error(run_cli("validate", "m.yaml", cwd=tmp_path))
    assert line == f"error: m.yaml: {field}: {why}"
    (tmp_path / "e.yaml").write_text(EXPERIMENT)
    assert one_error(run_cli("validate", "e.yaml", cwd=tmp_path)) == line


def test_validate_of_a_graph_file_machine_checks_its_link_classes(tmp_path):
    """A graph file's link classes are known once it is read: ``validate m.yaml`` called a
    machine valid whose ``links`` named a class the graph lacks (every experiment on it was
    refused)."""
    links = "{global: {latency: 10ns}}"
    line = "links.global: the network has no link class 'global' (it has: terminal, link)"
    (tmp_path / "g.txt").write_text("0 1\n1 2\n2 0\n")
    (tmp_path / "m.yaml").write_text(f"topology: {{kind: graph_file, path: g.txt}}\n"
                                     f"links: {links}\n")
    assert one_error(run_cli("validate", "m.yaml", cwd=tmp_path)) == f"error: m.yaml: {line}"
    (tmp_path / "e.yaml").write_text(EXPERIMENT)
    assert one_error(run_cli("validate", "e.yaml", cwd=tmp_path)) == f"error: m.yaml: {line}"


@pytest.mark.parametrize(("routing", "field"), [
    ("aries, mode: ADAPTIVE_3", "bias_high"), ("aries", "bias_low"), ("aries", "bias_step"),
    ("prog_adaptive", "threshold"), ("ugal", "bias"), ("par", "bias"), ("ugal_global", "bias"),
])
def test_an_adaptive_bias_past_its_bound_is_refused_naming_it(tmp_path, routing, field):
    """The costs are int64 sums of queued bytes and the bias: 1e30 was an OverflowError
    traceback in ``validate`` (found by a fuzz run), and so was prog_adaptive's threshold of
    1e19; the UGAL family's bias of 1e19 was refused as the plugin's invalid route tables,
    naming neither the file nor the field."""
    (tmp_path / "m.yaml").write_text("topology: {kind: dragonfly, p: 1, a: 4, h: 1}\n"
                                     "router: {vcs: 4}\n")
    (tmp_path / "e.yaml").write_text(
        f"machine: m.yaml\nrouting: {{algorithm: {routing}, {field}: 1e30}}\n"
        "workload: {kind: synthetic, load: 0.1}\nstop: {warmup: 0ns, measure: 1us}\n")
    line = one_error(run_cli("validate", "e.yaml", cwd=tmp_path))
    assert line == (f"error: e.yaml: routing.{field}: 1e+30 B is more than "
                    "1099511627776 B (2**40, 1 TiB): the routing's costs are int64 sums of "
                    "queued bytes and the bias")
    assert one_error(run_cli("run", "e.yaml", "--out", "o", cwd=tmp_path)) == line
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("routing", ["prog_adaptive", "aries", "minimal, spread: random"])
def test_a_routing_that_spreads_over_equal_cost_ports_is_refused_on_a_torus(tmp_path, routing):
    """The refusal advised "use spread: table", an option prog_adaptive and aries lack."""
    (tmp_path / "e.yaml").write_text(
        f"machine: {{topology: {{kind: torus, dims: [4, 4]}}, router: {{vcs: 8}}}}\n"
        f"routing: {{algorithm: {routing}}}\n"
        "workload: {kind: synthetic, load: 0.1}\nstop: {warmup: 0ns, measure: 1us}\n")
    line = one_error(run_cli("validate", "e.yaml", cwd=tmp_path))
    assert line.startswith("error: e.yaml: routing: routing '") and line.endswith(
        "so routings that choose among equal-cost minimal ports (prog_adaptive, aries, "
        "minimal with a spread other than table) do not run on it"), line


def test_a_message_listed_past_the_window_near_the_clocks_end_is_refused(tmp_path):
    """Listed messages after the window are sent; the latest is followed along the longest
    route (865 ns at zero load here) as a packet created at the window's end is: one at
    8.7960929 s passed ``validate`` and stopped the run with the engine's refusal of an
    ARRIVE at the clock's end; 8.796092 s still runs."""
    late = ("machine: m.yaml\nworkload: {kind: messages, messages: ["
            "{at: 0s, src: 1, dst: 2, size: 64B}, {at: AT, src: 0, dst: 40, size: 64B}]}\n"
            "stop: {warmup: 0s, measure: 1us}\n")
    line = refused_alike(tmp_path, DRAGONFLY, late.replace("AT", "8.7960929s"))
    assert ("e.yaml: workload: a packet created at 8.796s (the last message listed) needs "
            "864.8ns more at zero load") in line
    (tmp_path / "e.yaml").write_text(late.replace("AT", "8.796092s"))
    r = run_cli("run", "e.yaml", "--out", "ok", cwd=tmp_path)
    assert r.returncode == 0, r.stderr


def test_with_stop_messages_the_late_check_follows_the_nth_message(tmp_path):
    """The run ends at the N-th message after the warm-up, so a later one is never sent:
    it was followed all the same and the file refused; the N-th itself is followed."""
    late = ("machine: m.yaml\nworkload: {kind: messages, messages: ["
            "{at: 2us, src: 1, dst: 2, size: 64B}, {at: 3us, src: 0, dst: 40, size: 64B}, "
            "{at: 8.7960929s, src: 0, dst: 40, size: 64B}]}\n"
            "stop: {warmup: 1us, messages: N}\n")
    (tmp_path / "m.yaml").write_text(DRAGONFLY)
    (tmp_path / "e.yaml").write_text(late.replace("N", "2"))
    r = run_cli("run", "e.yaml", "--out", "ok", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    line = refused_alike(tmp_path, DRAGONFLY, late.replace("N", "3"))
    assert "e.yaml: workload: a packet created at 8.796s" in line
