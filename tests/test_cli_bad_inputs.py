"""One CLI case per class of bad input found by trying the tool as a new user would: each ends
with exit 2, one line on stderr naming the file and the field, no traceback, nothing written.

(Clock range, empty traffic, memory and sweep-point checks: ``test_run_checks.py``; output
folders and partial runs: ``test_run_outputs.py``.)
"""

from __future__ import annotations

import pytest
from conftest import one_error, run_cli

DRAGONFLY = "topology: {kind: dragonfly, p: 2, a: 4, h: 2}\n"
EXPERIMENT = ("machine: m.yaml\nworkload: {kind: synthetic, load: 0.1}\n"
              "stop: {warmup: 0.1us, measure: 0.5us}\n")


# (machine file, experiment file, pieces of the one error line)
CASES = {
    # item 2: packet sizes are whole bytes from 1 to 2**31 - 1
    "packet_size 3GiB": (DRAGONFLY + "packet_size: 3GiB\n", EXPERIMENT,
                         ["m.yaml: packet_size: ", "2147483647"]),
    "packet_size 1b": (DRAGONFLY + "packet_size: 1b\n", EXPERIMENT,
                       ["m.yaml: packet_size: ", "whole"]),
    "packet_size 100.7": (DRAGONFLY + "packet_size: 100.7\n", EXPERIMENT,
                          ["m.yaml: packet_size: ", "whole"]),
    # item 8: silent coercions
    "boolean for an integer": ("topology: {kind: dragonfly, p: true, a: 4, h: 2}\n", EXPERIMENT,
                               ["m.yaml: topology.p: "]),
    "duplicate key": (DRAGONFLY + "packet_size: 512\npacket_size: 1024\n", EXPERIMENT,
                      ["m.yaml: ", "packet_size", "duplicate"]),
    "unknown schema_version": (DRAGONFLY + "schema_version: 99\n", EXPERIMENT,
                               ["m.yaml: schema_version: "]),
    # item 10: tracebacks
    "single node uniform traffic": ("topology: {kind: torus, dims: [1]}\n", EXPERIMENT,
                                    ["e.yaml: workload.pattern: ", "2 nodes"]),
    "group_shift on one router": ("topology: {kind: torus, dims: [1], nodes_per_router: 4}\n",
                                  EXPERIMENT.replace("0.1}", "0.1, pattern: group_shift}"),
                                  ["e.yaml: workload.pattern: ", "2 groups"]),
    "message at 1e99ns": (DRAGONFLY, EXPERIMENT.replace(
        "{kind: synthetic, load: 0.1}",
        "{kind: messages, messages: [{at: 1e99ns, src: 0, dst: 1, size: 8}]}"),
        ["e.yaml: workload.messages[0].at: "]),
    "huge dragonfly": ("topology: {kind: dragonfly, p: 2, a: 100000, h: 2}\n", EXPERIMENT,
                       ["m.yaml: topology: this machine", "needs about", "--max-memory"]),
    "huge torus": ("topology: {kind: torus, dims: [1024, 1024]}\n", EXPERIMENT,
                   ["m.yaml: topology: this machine", "needs about"]),
    "huge hypercube": ("topology: {kind: hypercube, n: 20}\n", EXPERIMENT,
                       ["m.yaml: topology: this machine", "needs about"]),
    "huge sweep": (DRAGONFLY, EXPERIMENT + "sweep: {seed: " + str(list(range(1000)))
                   + ", workload.load: " + str([0.1] * 1000) + "}\n",
                   ["e.yaml: sweep: ", "1000000 points", "10000"]),
    # item 12: exponent notation is a number
    # item 13: one message for an inline machine
    "inline machine": ("", EXPERIMENT.replace(
        "machine: m.yaml", "machine: {topology: {kind: dragonfly, p: 2, a: 4, h: 2}, "
        "links: {global: {bandwidth: 5GHz}}}"),
        ["e.yaml: machine.links.global.bandwidth: ", "not a data rate"]),
    # item 14: the field named is the one responsible
    "stop.messages 1e9": (DRAGONFLY, EXPERIMENT.replace(
        "stop: {warmup: 0.1us, measure: 0.5us}", "stop: {warmup: 0.1us, messages: 1e9}"),
        ["e.yaml: stop.messages: "]),
    "warmup 9s": (DRAGONFLY, EXPERIMENT.replace("warmup: 0.1us", "warmup: 9s"),
                  ["e.yaml: stop.warmup: "]),
    "NaN load": (DRAGONFLY, EXPERIMENT.replace("load: 0.1", "load: .nan"),
                 ["e.yaml: workload.load: ", "finite"]),
    "empty sweep": (DRAGONFLY, EXPERIMENT + "sweep: {workload.load: []}\n",
                    ["e.yaml: sweep.workload.load: "]),
    # fuzz 2, item 2: per-experiment fields swept were recorded per point, never applied
    "sweep over outputs.format": (
        DRAGONFLY, EXPERIMENT + "sweep: {outputs.format: [csv, parquet]}\n",
        ["e.yaml: sweep.outputs.format: outputs.format cannot be swept: an experiment's outputs "
         "are the same for every point", "the experiment's outputs.format (parquet), not the "
         "swept csv"]),
    "sweep over outputs.dir": (
        DRAGONFLY, EXPERIMENT + "sweep: {outputs.dir: [x, y]}\n",
        ["e.yaml: sweep.outputs.dir: outputs.dir cannot be swept: an experiment's outputs are "
         "the same for every point", "outputs.dir (not set), not the swept x"]),
    "sweep over outputs resetting the format": (
        DRAGONFLY, EXPERIMENT + "outputs: {format: csv}\nsweep: {outputs: [{packets: false}]}\n",
        ["e.yaml: sweep.outputs: outputs.format cannot be swept", "outputs.format (csv), not "
         "the swept parquet"]),
    "sweep over name": (
        DRAGONFLY, EXPERIMENT + "name: base\nsweep: {name: [a, b]}\n",
        ["e.yaml: sweep.name: name cannot be swept", "the experiment's name (base), not the "
         "swept a"]),
    "sweep over sweep": (
        DRAGONFLY, EXPERIMENT + "sweep: {sweep: [{seed: [1, 2]}]}\n",
        ["e.yaml: sweep.sweep: an experiment has one sweep"]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_is_refused_with_one_line(tmp_path, case):
    machine, experiment, pieces = CASES[case]
    if machine:
        (tmp_path / "m.yaml").write_text(machine)
    (tmp_path / "e.yaml").write_text(experiment)
    line = one_error(run_cli("run", "e.yaml", "--out", "o", cwd=tmp_path))
    for piece in pieces:
        assert piece in line, (piece, line)
    assert not (tmp_path / "o").exists()
    # validate refuses what run refuses, with the same line (it runs the same preflight)
    assert one_error(run_cli("validate", "e.yaml", cwd=tmp_path)) == line


def test_exponent_notation_is_a_number(tmp_path):
    (tmp_path / "m.yaml").write_text(
        DRAGONFLY + "links: {global: {bandwidth: 5e9, latency: 1e-7}}\n")
    (tmp_path / "e.yaml").write_text(EXPERIMENT)
    r = run_cli("run", "e.yaml", "--out", "o", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert '"bandwidth": 5000000000.0' in r.stdout and '"latency": 1e-07' in r.stdout


def test_paths_resolve_against_the_file_that_names_them(tmp_path):
    """graph_file.path in a machine file is relative to that file, wherever the run starts;
    a UTF-8 byte-order mark is not an error."""
    sub = tmp_path / "machines"
    sub.mkdir()
    (sub / "ring.txt").write_text("0 1\n1 2\n2 3\n3 0\n")
    (sub / "m.yaml").write_text("topology: {kind: graph_file, path: ring.txt, "
                                "nodes_per_router: 1}\n", encoding="utf-8-sig")
    (tmp_path / "e.yaml").write_text(
        EXPERIMENT.replace("machine: m.yaml", "machine: machines/m.yaml")
        .replace("measure: 0.5us", "measure: 5us"))
    (tmp_path / "elsewhere").mkdir()
    r = run_cli("run", "../e.yaml", "--out", "o", cwd=tmp_path / "elsewhere")
    assert r.returncode == 0, r.stderr
