"""Two inputs accepted where they did harm:

1. the experiment's ``collective_modes`` for a collective no point of its sweep runs: each
   point's check passes a point whose sweep varies the workloads (another point may run the
   collective), and nothing looked at the points together, so the modes were silently
   ignored; the loader now refuses such an entry (``load._check_collective_modes``), and
   still accepts it when one point runs the collective;
2. the files an experiment names were not inputs of the output check: ``run --out DIR
   --overwrite`` replaced a results folder holding the machine file (or a program, graph or
   the experiment file itself) whole, and ``export --out`` wrote over a program file the
   experiment names; every file the experiment reads is now one
   (``inputs.experiment_inputs``).

Each refusal is one line naming the file and field (or option), exit 2, before any run and
with nothing written.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from conftest import one_error, run_cli
from conftest import validated as validate

from federation.errors import ConfigError
from federation.results.outputs import check_not_input

REPO = Path(__file__).resolve().parent.parent
DRAGONFLY = {"topology": {"kind": "dragonfly", "p": 2, "a": 4, "h": 2}, "router": {"vcs": 4}}
SMALL = "topology: {kind: dragonfly, p: 1, a: 2, h: 1}\n"
OPEN_LOOP = {"workload": {"kind": "synthetic", "load": 0.1},
             "stop": {"warmup": "0.2us", "measure": "1us"}}
PINGPONG = REPO / "tests" / "data" / "programs" / "pingpong.ti"  # 2 ranks


def coll(op: str, size: int = 64) -> dict:
    return {"kind": "collective", "op": op, "size": size}


def job(name: str, workload: dict, nodes: list[int], **extra) -> dict:
    return {"name": name, "workload": workload,
            "placement": {"kind": "list", "nodes": nodes}, **extra}


def aries(**extra) -> dict:
    """An experiment on a dragonfly with aries routing, whose modes include ADAPTIVE_1."""
    return {"machine": DRAGONFLY, "routing": {"algorithm": "aries"}, **extra}


def write(tmp_path: Path, doc: dict, name: str = "e.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc))
    return path


def refusal(tmp_path: Path, doc: dict, overrides: list[str] | None = None) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        validate(write(tmp_path, doc), overrides)
    assert info.value.source is not None and info.value.source.endswith("e.yaml")
    return info.value


# ----------------------------------------------------- 1. collective_modes across a sweep


def test_a_sweep_no_point_of_which_runs_the_collective_is_refused(tmp_path):
    """Old: every point passed (its sweep varies the workloads) and the run went on, the
    alltoall mode marking no message."""
    d = aries(workload=coll("allreduce"), collective_modes={"alltoall": "ADAPTIVE_1"},
              sweep={"workload": [coll("allreduce"), coll("barrier"), coll("allreduce", 128)]})
    err = refusal(tmp_path, d)
    assert err.path == "collective_modes.alltoall"
    assert err.message == (
        "no workload of the experiment runs alltoall in any of the sweep's 3 points (sweep "
        "points 0, 2: workload 'collective' runs allreduce; sweep point 1: workload "
        "'collective' runs barrier): the mode would apply to no message")


def test_a_sweep_over_a_jobs_workload_no_point_of_which_runs_it_is_refused(tmp_path):
    """The jobs form, swept as ``--set`` and the messages write a job (``jobs[0]``)."""
    pp = {"kind": "pingpong", "sizes": [8]}
    d = aries(collective_modes={"alltoall": "ADAPTIVE_1"},
              jobs=[job("a", coll("allreduce"), [0, 1, 2, 3]), job("b", pp, [4, 5])],
              sweep={"jobs[0].workload": [coll("allreduce"), coll("bcast")]})
    err = refusal(tmp_path, d)
    assert err.path == "collective_modes.alltoall"
    assert err.message.startswith(
        "no workload of the experiment runs alltoall in any of the sweep's 2 points (sweep "
        "point 0: job 'a' runs allreduce, job 'b' takes no collective_modes; sweep point 1: "
        "job 'a' runs bcast, job 'b' takes no collective_modes): the mode would apply to "
        "no message; collective_modes apply only to workloads of kind collective")
    d["sweep"] = {"jobs.a.workload.op": ["allreduce", "alltoall"]}  # by name: one runs it
    assert len(validate(write(tmp_path, d)).points) == 2


def test_a_sweep_one_point_of_which_runs_the_collective_is_accepted(tmp_path):
    """The entries are defaults for every point (MPICH_GNI_A2A_ROUTING_MODE over a set of
    runs): one point that runs the collective is enough."""
    d = aries(workload=coll("allreduce"), collective_modes={"alltoall": "ADAPTIVE_1"},
              sweep={"workload.op": ["allreduce", "barrier", "alltoall"]})
    assert len(validate(write(tmp_path, d)).points) == 3
    # given by --set, the entry is checked across the file's sweep all the same
    d = aries(workload=coll("allreduce"), sweep={"workload.op": ["allreduce", "barrier"]})
    err = refusal(tmp_path, d, ["collective_modes.alltoall=ADAPTIVE_1"])
    assert err.path == "collective_modes.alltoall"
    assert "in any of the sweep's 2 points" in err.message
    assert err.message.endswith("(the value comes from --set "
                                "collective_modes.alltoall=ADAPTIVE_1)")


def test_points_that_all_say_the_same_are_refused_as_one_point(tmp_path):
    """A sweep over whole workloads that all run allreduce: every point gives one reason,
    worded as without a sweep."""
    d = aries(workload=coll("allreduce"), collective_modes={"alltoall": "ADAPTIVE_1"},
              sweep={"workload": [coll("allreduce", 64), coll("allreduce", 128)]})
    err = refusal(tmp_path, d)
    assert err.path == "collective_modes.alltoall"
    assert err.message == ("no workload of the experiment runs alltoall (workload "
                           "'collective' runs allreduce): the mode would apply to no message")


def test_a_bad_name_is_still_refused_as_such_across_a_sweep(tmp_path):
    """An entry naming no mode of the routing is the preflight's to refuse, by its name."""
    d = aries(workload=coll("allreduce"), collective_modes={"alltoall": "NO_SUCH_MODE"},
              sweep={"workload.op": ["allreduce", "barrier"]})
    err = refusal(tmp_path, d)
    assert err.path == "collective_modes.alltoall"
    assert "'NO_SUCH_MODE' is not a mode of routing 'aries'" in err.message


def test_cli_refuses_a_sweep_that_never_runs_the_collective(tmp_path):
    """As a user sees it: validate and run, one line naming the file and field, exit 2,
    nothing written."""
    write(tmp_path, aries(workload=coll("allreduce"), collective_modes={"alltoall": "ADAPTIVE_1"},
                          sweep={"workload.op": ["allreduce", "barrier"]}))
    want = ("error: e.yaml: collective_modes.alltoall: no workload of the experiment runs "
            "alltoall in any of the sweep's 2 points (sweep point 0: workload 'collective' "
            "runs allreduce; sweep point 1: workload 'collective' runs barrier): the mode "
            "would apply to no message")
    assert one_error(run_cli("validate", "e.yaml", cwd=tmp_path)) == want
    assert one_error(run_cli("run", "e.yaml", "--out", "o", cwd=tmp_path)) == want
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.yaml"]


# ------------------------------------------------------------- 2. the experiment's files


@pytest.fixture()
def results(tmp_path) -> Path:
    """``tmp_path`` with a machine file ``m.yaml``, an experiment ``e.yaml`` naming it and a
    results folder ``r`` of that experiment (which ``--overwrite`` may replace)."""
    (tmp_path / "m.yaml").write_text(SMALL)
    write(tmp_path, {"machine": "m.yaml", **OPEN_LOOP})
    r = run_cli("run", "e.yaml", "--out", "r", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    return tmp_path


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


def test_run_never_replaces_a_folder_holding_its_machine_file(results):
    """Old: the folder held results.json, so --overwrite replaced it whole, the machine
    file with it."""
    shutil.copy(results / "m.yaml", results / "r" / "m.yaml")
    write(results, {"machine": "r/m.yaml", **OPEN_LOOP}, "e2.yaml")
    before = snapshot(results)
    for out in ("r", "./r/../r"):
        line = one_error(run_cli("run", "e2.yaml", "--out", out, "--overwrite", cwd=results))
        assert line == (f"error: --out: {out.removeprefix('./')} holds r/m.yaml, which this "
                        "command reads: the folder is replaced whole (--overwrite), the input "
                        "with it; choose another place")
    # a machine inlined from that file for an override is read from it all the same
    line = one_error(run_cli("run", "e2.yaml", "--set", "machine.links.global.latency=5ns",
                             "--out", "r", "--overwrite", cwd=results))
    assert "r holds r/m.yaml, which this command reads" in line
    # outputs.dir names the folder: refused by validate too, naming the field
    line = one_error(run_cli("validate", "e2.yaml", "--set", "outputs.dir=r", cwd=results))
    assert line.startswith("error: e2.yaml: outputs.dir: r holds r/m.yaml")
    assert snapshot(results) == before


def test_run_never_writes_over_its_machine_file_or_itself(results):
    before = snapshot(results)
    line = one_error(run_cli("run", "e.yaml", "--out", "m.yaml", "--overwrite", cwd=results))
    assert line == ("error: --out: m.yaml is a file this command reads: writing it would "
                    "replace the input; choose another name")
    shutil.copy(results / "e.yaml", results / "r" / "e.yaml")
    shutil.copy(results / "m.yaml", results / "r" / "m.yaml")
    line = one_error(run_cli("run", "r/e.yaml", "--out", "r", "--overwrite", cwd=results))
    assert line.startswith("error: --out: r holds r/e.yaml, which this command reads")
    assert snapshot(results) == {**before, "r/e.yaml": before["e.yaml"],
                                 "r/m.yaml": before["m.yaml"]}


def test_a_machine_file_of_a_sweep_is_an_input_too(results):
    """Every point's machine: a sweep over machine files names the second one only there."""
    shutil.copy(results / "m.yaml", results / "r" / "m2.yaml")
    write(results, {"machine": "m.yaml", **OPEN_LOOP,
                    "sweep": {"machine": ["m.yaml", "r/m2.yaml"]}}, "e2.yaml")
    line = one_error(run_cli("run", "e2.yaml", "--out", "r", "--overwrite", cwd=results))
    assert line.startswith("error: --out: r holds r/m2.yaml, which this command reads")
    assert (results / "r" / "m2.yaml").read_text() == SMALL


def test_graph_and_program_files_are_inputs_resolved_as_the_loader_does(results):
    """A path inside a machine file is relative to that file, and one inside the experiment
    to the experiment: both are found where the loader read them, whatever the working
    directory."""
    from federation.pipeline.inputs import experiment_inputs
    from federation.pipeline.load import load_experiment

    t = results
    (t / "mm").mkdir()
    (t / "g.txt").write_text("0 1\n1 2\n2 0\n")
    (t / "mm" / "gm.yaml").write_text("topology: {kind: graph_file, path: ../g.txt}\n")
    shutil.copy(PINGPONG, t / "r" / "pp.ti")
    write(t, {"machine": "mm/gm.yaml", "workload": {"kind": "program", "path": "r/pp.ti"}},
          "e2.yaml")
    found = {p.resolve() for p in experiment_inputs(load_experiment(t / "e2.yaml"))}
    assert found == {(t / n).resolve() for n in ("e2.yaml", "mm/gm.yaml", "g.txt", "r/pp.ti")}
    before = snapshot(t)
    line = one_error(run_cli("run", "e2.yaml", "--out", "g.txt", "--overwrite", cwd=t))
    assert line.startswith("error: --out: g.txt is a file this command reads (")
    line = one_error(run_cli("run", "e2.yaml", "--out", "r", "--overwrite", cwd=t))
    assert line.startswith(f"error: --out: r holds {t / 'r' / 'pp.ti'}, which this command "
                           "reads")
    line = one_error(run_cli("export", "e2.yaml", "--out", "r/pp.ti", "--overwrite", cwd=t))
    assert line.startswith("error: --out: r/pp.ti is a file this command reads (")
    assert snapshot(t) == before
    assert not list(t.rglob(".federation-*"))


def test_an_unrelated_folder_is_still_replaced(results):
    """The check refuses only what the experiment reads: the results folder beside the
    machine file is replaced as before."""
    r = run_cli("run", "e.yaml", "--out", "r", "--overwrite", cwd=results)
    assert r.returncode == 0, r.stderr
    assert (results / "m.yaml").read_text() == SMALL


def test_check_not_input_of_a_folder_replaced_whole(tmp_path):
    (tmp_path / "out" / "sub").mkdir(parents=True)
    (tmp_path / "alias").symlink_to("out")
    with pytest.raises(ConfigError, match="holds .*m.yaml, which this command reads"):
        check_not_input(tmp_path / "alias", "--out", files=[tmp_path / "out/sub/m.yaml"],
                        whole=True)
    with pytest.raises(ConfigError, match="holds .*sub, which this command reads"):
        check_not_input(tmp_path / "out", "--out", within=[tmp_path / "out" / "sub"],
                        whole=True)
    # without ``whole`` (a file output, or files added to a folder) a folder holding an
    # input is no input
    check_not_input(tmp_path / "out", "--out", files=[tmp_path / "out/sub/m.yaml"])
    check_not_input(tmp_path / "other", "--out", files=[tmp_path / "out/sub/m.yaml"],
                    whole=True)


@pytest.mark.parametrize("command", ["config", "run"])
def test_sst_commands_never_replace_a_folder_holding_the_machine_file(results, command):
    """``federation sst config`` and ``sst run`` replace their folder whole too: a results
    folder (``r``, which ``--overwrite`` may replace) that holds the machine file is refused
    before anything is written (old: ``sst config`` replaced it, the machine file with it)."""
    shutil.copy(results / "m.yaml", results / "r" / "m.yaml")
    write(results, {"machine": "r/m.yaml", **OPEN_LOOP}, "e2.yaml")
    before = snapshot(results)
    line = one_error(run_cli("sst", command, "e2.yaml", "--out", "r", "--overwrite",
                             cwd=results))
    assert line == ("error: --out: r holds r/m.yaml, which this command reads: the folder is "
                    "replaced whole (--overwrite), the input with it; choose another place")
    assert snapshot(results) == before


@pytest.mark.parametrize("axis", ["jobs.fg.placement", "jobs.0.placement",
                                  "jobs[0].placement"])
def test_a_refusal_after_loading_names_a_job_axis_however_spelled(tmp_path, axis):
    """A refused swept placement named the base field (``jobs[0].placement.count``, fine in
    the file) when the axis named the job by name or as ``jobs.0``; only ``jobs[0]``
    matched the refusal's spelling."""
    (tmp_path / "e.yaml").write_text(
        "machine: {topology: {kind: dragonfly, p: 1, a: 2, h: 1}}\n"
        "jobs:\n- {name: fg, workload: {kind: synthetic, load: 0.2}, placement: {kind: "
        "contiguous, count: 4}}\n- {name: bg, workload: {kind: synthetic, load: 0.2}, "
        "placement: rest}\nstop: {warmup: 0us, measure: 1us}\n"
        f"sweep:\n  {axis}: [{{kind: contiguous, count: 4}}, {{kind: contiguous, count: 40}}]\n")
    line = one_error(run_cli("validate", "e.yaml", cwd=tmp_path))
    assert line.startswith(f"error: e.yaml: sweep.{axis}: jobs[0].placement.count: job 'fg' "
                           "asks for 40 nodes"), line


def test_a_clock_refusal_under_a_swept_machine_names_the_field(tmp_path):
    """``sweep: {machine: [m.yaml, bad.yaml]}`` with a 100 s latency in bad.yaml said
    ``sweep.machine: 100s is beyond ...``, naming no field."""
    (tmp_path / "m.yaml").write_text("topology: {kind: dragonfly, p: 1, a: 2, h: 1}\n")
    (tmp_path / "bad.yaml").write_text("topology: {kind: dragonfly, p: 1, a: 2, h: 1}\n"
                                       "links: {global: {latency: 100}}\n")
    (tmp_path / "e.yaml").write_text(
        "machine: m.yaml\nworkload: {kind: synthetic, load: 0.3}\n"
        "stop: {warmup: 0.5us, measure: 1us}\nsweep: {machine: [m.yaml, bad.yaml]}\n")
    line = one_error(run_cli("validate", "e.yaml", cwd=tmp_path))
    assert line.startswith("error: e.yaml: sweep.machine: machine.links.global.latency: 100s "
                           "is beyond the engine's clock range"), line
    assert line.endswith("(sweep point 1: machine=bad.yaml)")


@pytest.mark.parametrize(("sets", "line"), [
    (["machine.topology.h=1"],
     "error: m4.yaml: topology.h: unknown key (sweep point 1: machine=m4.yaml) (the value "
     "comes from --set machine.topology.h=1)"),
    (["sweep.machine=[m4.yaml]", "machine.topology.h=1"],
     "error: m4.yaml: topology.h: unknown key (the value comes from --set "
     "machine.topology.h=1)"),
    (["machine.links.terminal.latency=100"],
     "error: m.yaml: links.terminal.latency: 100s is beyond the engine's clock range "
     "(8796093022208 ps = 8.796 s of simulated time); plain numbers are seconds (write "
     "'100ns', not 100) (sweep point 0: machine=m.yaml) (the value comes from --set "
     "machine.links.terminal.latency=100)"),
    (["machine.links.global.latency=1ns"],  # the torus has no global class
     "error: m4.yaml: links.global: topology 'torus' has no link class 'global' (it has: "
     "terminal, torus) (sweep point 1: machine=m4.yaml) (the value comes from --set "
     "machine.links.global.latency=1ns)"),
])
def test_a_set_under_a_swept_field_is_blamed_not_the_sweep(tmp_path, sets, line):
    """``--set machine.topology.h=1`` beside ``sweep: {machine: [m.yaml, m4.yaml]}`` was
    refused as ``sweep.machine: machine.topology.h: unknown key``, with no word of the
    override (or naming the --set of the sweep), though the swept files are fine."""
    (tmp_path / "m.yaml").write_text("topology: {kind: dragonfly, p: 1, a: 2, h: 1}\n")
    (tmp_path / "m4.yaml").write_text("topology: {kind: torus, dims: [4]}\n")  # has no h
    (tmp_path / "e.yaml").write_text(
        "machine: m.yaml\nworkload: {kind: synthetic, load: 0.3}\n"
        "stop: {warmup: 0.5us, measure: 1us}\nsweep: {machine: [m.yaml, m4.yaml]}\n")
    args = [a for s in sets for a in ("--set", s)]
    assert one_error(run_cli("validate", "e.yaml", *args, cwd=tmp_path)) == line


@pytest.mark.parametrize(("axis", "line"), [
    ("stop.foo.bar: [1]", "error: e.yaml: sweep.stop.foo.bar: stop.foo: unknown key"),
    ("jobs.0.workload.load: [0.1, 0.2]", "error: e.yaml: sweep.jobs.0.workload.load: jobs: "
     "Input should be a valid list (sweep point 0: jobs.0.workload.load=0.1)"),
])
def test_an_axis_that_makes_a_missing_parent_is_named(tmp_path, axis, line):
    """An axis below a field the file lacks made that field, and its refusal named the base
    field (``stop.foo: unknown key``), which the file does not have."""
    (tmp_path / "e.yaml").write_text(
        "machine: {topology: {kind: dragonfly, p: 1, a: 2, h: 1}}\n"
        "workload: {kind: synthetic, load: 0.1}\nstop: {warmup: 0us, measure: 1us}\n"
        f"sweep: {{{axis}}}\n")
    assert one_error(run_cli("validate", "e.yaml", cwd=tmp_path)) == line
