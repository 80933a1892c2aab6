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
    # a model-level check of one field named it: "(top level): links.local.buffer (256 B)"
    "buffer below a packet": (DRAGONFLY + "links: {local: {buffer: 256}}\n", EXPERIMENT,
                              ["m.yaml: links.local.buffer: 256 B is smaller than "
                               "packet_size (512 B)"]),
    "control packet above a packet": (DRAGONFLY + "nic: {control_bytes: 1024}\n", EXPERIMENT,
                                      ["m.yaml: nic.control_bytes: 1024 B is larger than "
                                       "packet_size (512 B)"]),
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
    # fuzz 3, item 1: a buffer above 2**63 B wrapped in the engine's int64 credits (a false
    # deadlock); at most 2**60 B, what a NIC's unlimited input holds
    "buffer 1e19": (DRAGONFLY + "links: {global: {buffer: 1e19}}\n", EXPERIMENT,
                    ["m.yaml: links.global.buffer: 1e+19 = 1e+19 B is more than the engine's "
                     "credit counters hold per VC (2**60 = 1152921504606846976 B)"]),
    "buffer 1e300": (DRAGONFLY + "links: {terminal: {buffer: 1e300}}\n", EXPERIMENT,
                     ["m.yaml: links.terminal.buffer: 1e+300 = 1e+300 B", "2**60"]),
    # fuzz 3, item 2a: the clock bound covers the longest route (every router's delay, every
    # hop, the last credit back), not one link: the run stopped half-way at 10 s
    "router.delay 5s": (DRAGONFLY + "router: {delay: 5s}\n", EXPERIMENT,
                        ["m.yaml: router.delay: a packet created at 600ns (the end of the "
                         "traffic) needs 20s more at zero load",
                         "(4 routers; router-to-router links: local -> global -> local): "
                         "4 x router.delay 20s", "beyond the engine's clock range"]),
    "global latency 8s": (DRAGONFLY + "links: {global: {latency: 8s}}\n", EXPERIMENT,
                          ["m.yaml: links.global.latency: ", "needs 16s more",
                           "2 x links.global.latency 16s", "clock range"]),
    "global latency 4s with valiant": (
        DRAGONFLY + "links: {global: {latency: 4s}}\n",
        EXPERIMENT + "routing: {algorithm: valiant}\n",
        ["m.yaml: links.global.latency: ", "twice for a Valiant path",
         "3 x links.global.latency 12s", "ends at 12s, beyond"]),
    # fuzz 3, item 2b: stop.messages past the message limit was refused by run only
    "stop.messages 1e14": (DRAGONFLY, EXPERIMENT.replace(
        "stop: {warmup: 0.1us, measure: 0.5us}",
        "stop: {warmup: 0.1us, messages: 100000000000000}"),
        ["e.yaml: stop.messages: 1e+14 messages would be generated whole before the run "
         "starts (limit 2e+08 when they are generated whole)"]),
    # fuzz 3, item 2c: a job starting after the traffic ends blamed stop.measure, in run only
    "job starts after the end": (DRAGONFLY, EXPERIMENT.replace(
        "workload: {kind: synthetic, load: 0.1}\n",
        "jobs: [{name: a, workload: {kind: synthetic, load: 0.3}, "
        "placement: {kind: contiguous, count: 8}, start: 30us}]\n"),
        ["e.yaml: jobs[0].start: job 'a' starts at 30us, at or after the end of the open-loop "
         "traffic (stop.warmup + stop.measure = 600ns)"]),
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


@pytest.mark.parametrize("machine", [
    "links: {global: {latency: 4s}}\n",  # minimal: one global hop, its credit back by ~8 s
    "links: {global: {buffer: 8e17}}\n",  # below 2**60 B
])
def test_figures_the_engine_holds_still_validate(tmp_path, machine):
    """The longest-route clock bound and the buffer limit refuse no run the engine can do."""
    (tmp_path / "m.yaml").write_text(DRAGONFLY + machine)
    (tmp_path / "e.yaml").write_text(EXPERIMENT)
    r = run_cli("validate", "e.yaml", cwd=tmp_path)
    assert r.returncode == 0, r.stderr


CLOCK = "the engine's clock range (8796093022208 ps = 8.796 s of simulated time)"
JOB = "(job 'b' has 64 nodes; its workload's node numbers are the job's)"
JOBS = ("machine: m.yaml\njobs:\n  - {name: a, workload: {kind: collective, op: allreduce, "
        "size: 1KiB}, placement: {kind: contiguous, count: 8}}\n  - {name: b, workload: "
        "WORKLOAD, placement: rest, start: START}\nstop: {warmup: 0us, measure: 1us}\n")


def _jobs(workload: str = "{kind: synthetic, load: 0.2}", start: str = "0") -> str:
    return JOBS.replace("WORKLOAD", workload).replace("START", start)


# fuzz 43b: huge but finite values converted to int without a range check (OverflowError or
# ValueError tracebacks, exit 1, some only in run); each refused, exactly, by both commands
EXACT = {
    "job start 1e300": (DRAGONFLY, _jobs(start="1e300"),
                        f"e.yaml: jobs[1].start: 1e+300s is past {CLOCK}"),
    "job start 1e20": (DRAGONFLY, _jobs(start="1e20"),
                       f"e.yaml: jobs[1].start: 1e+20s is past {CLOCK}"),
    "message_size 1e18": (DRAGONFLY, _jobs("{kind: synthetic, load: 0.2, message_size: 1e18}"),
                          "e.yaml: jobs[1].workload.message_size: message_size is 1e+18 B, "
                          "beyond the largest message (1099511627775 B)"),
    "message_size 1e12": (DRAGONFLY, _jobs("{kind: synthetic, load: 0.2, message_size: 1e12}"),
                          "e.yaml: jobs[1].workload.message_size: message_size is "
                          "1000000000000 B, which takes at least 177.4s to leave a NIC at "
                          f"5.25GiB/s, beyond {CLOCK}"),
    "message of 1e300 B": (DRAGONFLY, _jobs("{kind: messages, messages: [{src: 0, dst: 1, "
                                            "size: 8}, {src: 1, dst: 0, size: 1e300}]}"),
                           "e.yaml: jobs[1].workload.messages[1].size: size is 1e+300 B, "
                           "beyond the largest message (1099511627775 B)"),
    "packet_size 1e300": (DRAGONFLY + "packet_size: 1e300\n", EXPERIMENT,
                          "m.yaml: packet_size: 1e+300 = 1e+300 B is more than the engine "
                          "stores in a packet (2147483647 B)"),
}


@pytest.mark.parametrize("case", sorted(EXACT))
def test_huge_finite_values_are_refused_exactly(tmp_path, case):
    machine, experiment, message = EXACT[case]
    (tmp_path / "m.yaml").write_text(machine)
    (tmp_path / "e.yaml").write_text(experiment)
    line = one_error(run_cli("run", "e.yaml", "--out", "o", cwd=tmp_path))
    assert line == f"error: {message}"
    assert not (tmp_path / "o").exists()
    assert one_error(run_cli("validate", "e.yaml", cwd=tmp_path)) == line


def test_only_a_refusal_about_node_numbers_in_a_job_says_they_are_the_jobs(tmp_path):
    """A job's workload refused for a node number or count says the job has 64 nodes and
    that the workload's node numbers are the job's ("the machine has 64 nodes" is its share);
    one refused for its message size (EXACT above) said so too, sending the user to its
    nodes, and now says nothing of nodes (its path names the job)."""
    (tmp_path / "m.yaml").write_text(DRAGONFLY)
    (tmp_path / "e.yaml").write_text(_jobs("{kind: pingpong, nodes: [0, 70]}"))
    line = one_error(run_cli("validate", "e.yaml", cwd=tmp_path))
    assert line == ("error: e.yaml: jobs[1].workload.nodes[1]: node 70 does not exist (the "
                    f"machine has 64 nodes) {JOB}")
    (tmp_path / "e.yaml").write_text(_jobs("{kind: pingpong, sizes: [2TiB], nodes: [0, 1]}"))
    line = one_error(run_cli("validate", "e.yaml", cwd=tmp_path))
    assert line.startswith("error: e.yaml: jobs[1].workload.sizes[0]: ")
    assert "nodes" not in line and "job 'b'" not in line


# --------------------------------------------------------------- found by stop 48's fuzz round

def test_aliases_that_expand_past_the_limit_are_refused_at_once(tmp_path):
    """A 400-byte file of anchors each aliasing the one before nine times, ten levels deep,
    holds 9^10 values: the depth check walked every one of them (hours, no output).  Shared
    lists are now walked once and the expansion refused; a file reusing an anchor a few
    times reads as before."""
    (tmp_path / "m.yaml").write_text(DRAGONFLY)
    levels = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    for prev, name in zip("abcdefghi", "bcdefghij", strict=True):
        levels.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 9) + "]")
    (tmp_path / "e.yaml").write_text(EXPERIMENT + "\n".join(levels) + "\n")
    line = one_error(run_cli("validate", "e.yaml", cwd=tmp_path))
    assert line == ("error: e.yaml: holds 4,412,961,512 values once its aliases are expanded, "
                    "more than the 20,000,000 a file may hold (a YAML alias repeats its "
                    "anchor's values)")
    (tmp_path / "e.yaml").write_text(EXPERIMENT + "r: &r [*r]\n")  # a list inside itself
    assert "nested deeper than 100 levels" in one_error(
        run_cli("validate", "e.yaml", cwd=tmp_path))
    shared = ("machine: {topology: {kind: dragonfly, p: 2, a: 4, h: 2}, links: {local: &l "
              "{bandwidth: 5e9, latency: 30ns}, global: *l}}\n"
              "workload: {kind: synthetic, load: 0.1}\nstop: {warmup: 0.1us, measure: 0.5us}\n")
    (tmp_path / "s.yaml").write_text(shared)
    assert run_cli("validate", "s.yaml", cwd=tmp_path).returncode == 0


@pytest.mark.parametrize(("args", "words"), [
    (["validate", "e.yaml", "--set", "jobs.\u00b2.workload.load=0.3"],
     "error: --set: cannot set 'jobs.\u00b2.workload.load': jobs has no item '\u00b2'"),
    (["validate", "big.yaml"], "error: big.yaml: invalid YAML: an integer of more than 4,300 "
     "digits"),
    (["validate", "big.json"], "error: big.json: invalid JSON: an integer of more than 4,300 "
     "digits"),
    (["validate", "surrogate.yaml"], "error: surrogate.yaml: name: '\\ud800' is not valid "
     "UTF-8"),
])
def test_inputs_that_raised_tracebacks(tmp_path, args, words):
    """Each of these ended in a Python traceback, exit 1: a superscript digit is a digit to
    ``str.isdigit`` but not to ``int``; Python refuses to read integers of more than 4,300
    digits; a lone surrogate cannot be encoded to show the name it refuses."""
    (tmp_path / "e.yaml").write_text(
        "machine: {topology: {kind: dragonfly, p: 2, a: 4, h: 2}}\n"
        "jobs: [{name: a, workload: {kind: synthetic, load: 0.1}}]\n"
        "stop: {warmup: 0.1us, measure: 0.5us}\n")
    (tmp_path / "big.yaml").write_text(f"seed: {'1' * 5000}\n")
    (tmp_path / "big.json").write_text(f'{{"seed": {"1" * 5000}}}')
    (tmp_path / "surrogate.yaml").write_text('name: "\\ud800"\n' + EXPERIMENT.replace(
        "machine: m.yaml", "machine: {topology: {kind: dragonfly, p: 2, a: 4, h: 2}}"))
    assert one_error(run_cli(*args, cwd=tmp_path)).startswith(words)


@pytest.mark.parametrize(("override", "tail"), [
    ("machine.links.global.latency=100", "m.yaml: links.global.latency: 100s is beyond"),
    ("stop.measure=20", "e.yaml: stop.measure: warmup + measure = 20s is beyond"),
    ("name=a/b", "e.yaml: name: 'a/b' is not a plain name"),
])
def test_a_value_from_set_refused_after_loading_says_so(tmp_path, override, tail):
    """The loader's refusals say "(the value comes from --set ...)"; the checks after it (the
    clock, the output folder's name) named the file alone, where the user finds no such
    value."""
    (tmp_path / "m.yaml").write_text(DRAGONFLY)
    (tmp_path / "e.yaml").write_text(EXPERIMENT)
    line = one_error(run_cli("validate", "e.yaml", "--set", override, cwd=tmp_path))
    assert line.startswith(f"error: {tail}") and line.endswith(
        f"(the value comes from --set {override})")


def test_a_table_linked_to_itself_is_refused_by_plot(tmp_path):
    """A results folder whose table is a symbolic link to itself: ``resolve`` raises
    RuntimeError (not OSError) before Python 3.13, and plot and report ended in a traceback."""
    (tmp_path / "m.yaml").write_text(DRAGONFLY)
    (tmp_path / "e.yaml").write_text(EXPERIMENT)
    assert run_cli("run", "e.yaml", "--out", "r", cwd=tmp_path).returncode == 0
    table = tmp_path / "r" / "ports-0.parquet"
    table.unlink()
    table.symlink_to(table)
    for command, out in (("plot", "p"), ("report", "p.html")):
        line = one_error(run_cli(command, "r", "--out", out, cwd=tmp_path))
        assert "'ports-0.parquet' cannot be opened" in line, line
        assert not (tmp_path / out).exists()


def test_a_value_of_neither_member_of_a_union_is_one_problem(tmp_path):
    """``parallel`` is a number or a list: 1.5 was refused as two problems, each named with a
    pydantic label (``topology.parallel.constrained-int``, ``...list[constrained-int]``)."""
    (tmp_path / "m.yaml").write_text("topology: {kind: torus, dims: [2, 2], parallel: 1.5}\n")
    (tmp_path / "e.yaml").write_text(EXPERIMENT)
    assert one_error(run_cli("validate", "e.yaml", cwd=tmp_path)) == (
        "error: m.yaml: topology.parallel: Input should be a valid integer or a valid list")


@pytest.mark.parametrize(("machine", "words"), [
    ("/dev/null", "'/dev/null' is not a regular file (a pipe, device or socket)"),
    ("x" * 300 + ".yaml", "cannot be opened: File name too long"),
    (".", "'.' is not a machine file"),
])
def test_a_machine_path_the_system_refuses_names_the_experiments_field(tmp_path, machine,
                                                                       words):
    """``machine: /dev/null`` was refused naming ``/dev/null`` as if the user had given it on
    the command line, a name too long for the file system as ``xxx...: File name too long``;
    the value is the experiment's ``machine`` field."""
    (tmp_path / "e.yaml").write_text(EXPERIMENT.replace("m.yaml", machine))
    line = one_error(run_cli("validate", "e.yaml", cwd=tmp_path))
    assert line.startswith("error: e.yaml: machine: ") and words in line, line


@pytest.mark.parametrize("order", [0, 1])
def test_the_most_precise_set_is_blamed(tmp_path, order):
    """``--set machine=m2.yaml --set machine.router.vcs=1``: the refused VC count is the
    second's, in either order; the first was blamed when it came first."""
    (tmp_path / "m.yaml").write_text(DRAGONFLY)
    (tmp_path / "m2.yaml").write_text(DRAGONFLY)
    (tmp_path / "e.yaml").write_text(EXPERIMENT)
    sets = ["machine=m2.yaml", "machine.router.vcs=1"][::1 - 2 * order]
    line = one_error(run_cli("validate", "e.yaml", "--set", sets[0], "--set", sets[1],
                             "--set", "routing.algorithm=valiant", cwd=tmp_path))
    assert line.startswith("error: m2.yaml: router.vcs: ") and line.endswith(
        "(the value comes from --set machine.router.vcs=1)"), line


@pytest.mark.parametrize(("placement", "line"), [
    ("{kind: list, nodes: [1, 100000000000000000000]}, shared: true",
     "e.yaml: jobs[1].placement.nodes[1]: job 'b': node 100000000000000000000 does not exist "
     "(the machine has 12 nodes)"),
    ("{kind: list, nodes: [0, 1, 2, 3, 4, 5, 6, 7, 8]}",
     "e.yaml: jobs[1].placement.nodes: job 'b' asks for 9 nodes; with the other's (job 'a') "
     "that is 13, but the machine has 12"),
])
def test_a_listed_placement_is_refused_at_its_nodes(tmp_path, placement, line):
    """A shared list of a node past 2**63 was an OverflowError traceback (the preflight's
    check skips shared jobs, and NumPy refused the number first); a list too long beside
    another job was refused at ``placement.count``, a field a list has not."""
    (tmp_path / "e.yaml").write_text(
        "machine: {topology: {kind: dragonfly, p: 2, a: 2, h: 1}, packet_size: 512}\n"
        "jobs:\n"
        "- {name: a, workload: {kind: synthetic, load: 0.1}, placement: {kind: contiguous, "
        "count: 4, start: 8}}\n"
        f"- {{name: b, workload: {{kind: synthetic, load: 0.1}}, placement: {placement}}}\n"
        "stop: {warmup: 0us, measure: 1us}\n")
    assert one_error(run_cli("validate", "e.yaml", cwd=tmp_path)) == f"error: {line}"
