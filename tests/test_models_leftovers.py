"""Inputs the last session left accepted where they had no effect or were misread:

1. the experiment's ``collective_modes`` for a collective no workload runs (a job's own entry
   was already refused: tests/test_routing_modes.py);
2. ``collective_modes`` for a skeleton or a trace (program file), which run collectives the
   modes never reach: refused naming the kinds they apply to (the job's entry used to say the
   skeleton "runs no collective"; the experiment's was silently ignored);
3. a file's sweep key with a list position written ``jobs[0]`` (as ``--set`` and the error
   messages write it): refused as ``jobs[0]: unknown key``;
4. a nested component's relative ``DocumentPath`` (a pattern's file inside ``synthetic``):
   resolved against the working directory instead of the experiment file's folder;
5. the shipped JSON Schema files: byte for byte what ``federation schema --out`` writes.
"""

from __future__ import annotations

import importlib
import sys
import types
from pathlib import Path

import mode_probe
import pytest
import yaml
from conftest import fake_distribution, one_error, run_cli
from conftest import validated as validate

from federation.errors import ConfigError

REPO = Path(__file__).resolve().parent.parent
NONE, ALPHA, BETA, GAMMA = 0, 1, 2, 3  # columns of mode_probe's counts (mode + 1)
TORUS = {"topology": {"kind": "torus", "dims": [4], "nodes_per_router": 1},
         "router": {"vcs": 2}}
DRAGONFLY = {"topology": {"kind": "dragonfly", "p": 2, "a": 4, "h": 2}, "router": {"vcs": 4}}
RING = str(REPO / "tests" / "data" / "dumpi" / "ring")  # 3 ranks, one MPI_Allreduce
#: what a refusal of collective_modes where no workload takes them adds
RULE = ("collective_modes apply only to workloads of kind collective (to its op) and "
        "allreduce: a skeleton's or a program file's collectives are not told apart by "
        "collective and take routing_mode")


@pytest.fixture
def probe():
    from federation.plugin.registry import get_plugins

    plugins = get_plugins()
    if "mode_probe" not in plugins.routings.items:
        plugins.add(mode_probe, "mode_probe")
    return plugins


def write(tmp_path: Path, doc: dict, name: str = "exp.yaml") -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc))
    return path


def refusal(tmp_path: Path, doc: dict) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        validate(write(tmp_path, doc))
    assert info.value.source and info.value.source.endswith("exp.yaml")
    return info.value


def coll(op: str, size: int = 64) -> dict:
    return {"kind": "collective", "op": op, "size": size}


def probe_doc(**extra) -> dict:
    return {"machine": TORUS, "routing": {"algorithm": "mode_probe"}, **extra}


def job(name: str, workload: dict, nodes: list[int], **extra) -> dict:
    return {"name": name, "workload": workload,
            "placement": {"kind": "list", "nodes": nodes}, **extra}


# --------------------------------------------------------------- 1. the experiment's entries


def test_an_experiments_collective_mode_no_workload_runs_is_refused(probe, tmp_path):
    """An alltoall mode beside an allreduce workload marked no message and the run went on
    (old: validate passed)."""
    err = refusal(tmp_path, probe_doc(workload=coll("allreduce"),
                                      collective_modes={"alltoall": "GAMMA"}))
    assert err.path == "collective_modes.alltoall"
    assert err.message == ("no workload of the experiment runs alltoall (workload "
                           "'collective' runs allreduce): the mode would apply to no message")


def test_an_experiments_collective_mode_no_job_runs_is_refused(probe, tmp_path):
    """With jobs: none runs alltoall, or the one that does gives its own collective_modes
    (which replace the experiment's): the entry reaches no message."""
    pp = {"kind": "pingpong", "sizes": [8]}
    d = probe_doc(collective_modes={"alltoall": "GAMMA"},
                  jobs=[job("a", pp, [0, 2]), job("b", coll("allreduce"), [1, 3])])
    err = refusal(tmp_path, d)
    assert err.path == "collective_modes.alltoall"
    assert err.message == ("no workload of the experiment runs alltoall (job 'a' takes no "
                           "collective_modes; job 'b' runs allreduce): the mode would apply "
                           f"to no message; {RULE}")
    d["jobs"][1] = job("b", coll("alltoall"), [1, 3], collective_modes={"alltoall": "ALPHA"})
    err = refusal(tmp_path, d)
    assert err.path == "collective_modes.alltoall"
    assert "job 'b' gives its own collective_modes" in err.message


def test_cli_refuses_an_experiments_collective_mode_no_workload_runs(tmp_path):
    """As a user sees it: exit 2, one line, for validate and run (which writes nothing)."""
    write(tmp_path, {"machine": DRAGONFLY, "routing": {"algorithm": "aries"},
                     "workload": coll("allreduce"), "collective_modes": {"alltoall": "ADAPTIVE_1"}},
          "e.yaml")
    want = ("error: e.yaml: collective_modes.alltoall: no workload of the experiment runs "
            "alltoall (workload 'collective' runs allreduce): the mode would apply to no "
            "message")
    assert one_error(run_cli("validate", "e.yaml", cwd=tmp_path)) == want
    assert one_error(run_cli("run", "e.yaml", "--out", "o", cwd=tmp_path)) == want
    assert not (tmp_path / "o").exists()


def test_a_sweep_over_the_workloads_keeps_the_default_for_the_points_that_run_it(probe,
                                                                                 tmp_path):
    """As MPICH_GNI_A2A_ROUTING_MODE over a set of runs (the aries noise paper's
    fig8_9_aa.yaml): the alltoall point's packets take the mode, the allreduce point's the
    routing's own; a sweep that leaves the collectives alone is refused as without one."""
    import numpy as np

    from federation.pipeline.bounds import default_max_memory
    from federation.pipeline.point import BuildCache, prepare

    d = probe_doc(workload=coll("allreduce"), collective_modes={"alltoall": "GAMMA"},
                  sweep={"workload": [coll("allreduce"), coll("alltoall")]})
    loaded = validate(write(tmp_path, d))
    cache = BuildCache(default_max_memory())
    seen = []
    for point in loaded.points:
        prep = prepare(point, cache)
        counts = np.array(prep.job.program.tables[1])  # the probe's counts go on adding up
        point.engine.run(prep.job)
        seen.append(np.array(prep.job.program.tables[1]) - counts)
    assert seen[0][:, NONE].sum() == seen[0].sum() > 0
    assert seen[1][:, GAMMA].sum() == seen[1].sum() > 0
    d["sweep"] = {"workload.size": [64, 128]}
    err = refusal(tmp_path, d)
    assert err.path == "collective_modes.alltoall"
    assert err.message.startswith("no workload of the experiment runs alltoall")


# ------------------------------------------------------- 2. skeletons' and traces' collectives


@pytest.mark.parametrize("workload, name, nodes", [
    ({"kind": "lammps", "ranks": 4}, "lammps", [0, 1, 2, 3]),  # allreduces, by Writer
    ({"kind": "program", "path": RING, "format": "dumpi"}, "program", [0, 1, 2]),
])
def test_collective_modes_for_a_skeleton_or_a_trace_are_refused(probe, tmp_path, workload,
                                                                 name, nodes):
    """Both run allreduces, marked as a collective's sends (``op_coll``, for class_by) but
    not by which collective, so no mode can reach them: a job's entry used to be refused
    saying the workload "runs no collective", the experiment's was ignored."""
    d = probe_doc(jobs=[job("a", workload, nodes, collective_modes={"allreduce": "GAMMA"})])
    err = refusal(tmp_path, d)
    assert err.path == "jobs[0].collective_modes.allreduce"
    assert err.message == (f"job 'a': its workload {name!r} takes no collective_modes: the "
                           f"mode would apply to no message; {RULE}")
    d = probe_doc(workload=workload, collective_modes={"allreduce": "GAMMA"})
    err = refusal(tmp_path, d)
    assert err.path == "collective_modes.allreduce"
    assert err.message == (f"no workload of the experiment runs allreduce (workload {name!r} "
                           f"takes no collective_modes): the mode would apply to no message; "
                           f"{RULE}")


def test_a_skeletons_collectives_are_marked_but_not_by_which(tmp_path):
    """Why the modes cannot reach them through the collective workload's mechanism (one op
    per workload): the programs say which sends a collective made, not which collective
    (npb_ft runs an alltoall and a reduce; their sends carry the same flag)."""
    from federation.pipeline.bounds import default_max_memory
    from federation.pipeline.load import load_experiment
    from federation.pipeline.point import BuildCache

    d = {"machine": TORUS, "workload": {"kind": "npb_ft", "ranks": 4}}
    point = load_experiment(write(tmp_path, d)).points[0]
    cache = BuildCache(default_max_memory())
    progs = cache.programs.get(point, cache.get(point))
    assert sorted(set(progs.op_coll[progs.op_kind == 0].tolist())) == [1]


# ----------------------------------------------------------------- 3. sweep keys in a file


def jobs_sweep_doc(axis: str) -> dict:
    synth = {"kind": "synthetic", "load": 0.1}
    return {"machine": TORUS,
            "jobs": [job("a", synth, [0, 1]), job("b", synth, [2, 3])],
            "sweep": {axis: [0.2, 0.3]}}


def loads(loaded) -> list[tuple[float, float]]:
    return [(p.jobs[0].workload.params.load, p.jobs[1].workload.params.load)
            for p in loaded.points]


def test_a_files_sweep_key_takes_either_spelling_of_a_list_position(tmp_path):
    """``jobs[0].workload.load`` under a file's sweep was refused (``jobs[0]: unknown key``)
    while ``--set jobs[0].workload.load=...`` was accepted; both spellings are one key."""
    from federation.pipeline.load import load_experiment

    bracket = load_experiment(write(tmp_path, jobs_sweep_doc("jobs[0].workload.load")))
    dots = load_experiment(write(tmp_path, jobs_sweep_doc("jobs.0.workload.load"), "d.yaml"))
    named = load_experiment(write(tmp_path, jobs_sweep_doc("jobs.a.workload.load"), "n.yaml"))
    assert loads(bracket) == loads(dots) == loads(named) == [(0.2, 0.1), (0.3, 0.1)]
    assert [p.sweep for p in bracket.points] == [{"jobs[0].workload.load": 0.2},
                                                 {"jobs[0].workload.load": 0.3}]


def test_a_bracket_axis_meets_the_overrides_and_the_checks_as_a_dotted_one(tmp_path):
    from federation.pipeline.load import load_experiment

    path = write(tmp_path, jobs_sweep_doc("jobs[0].workload.load"))
    fixed = load_experiment(path, ["jobs.0.workload.load=0.5"])
    assert loads(fixed) == [(0.5, 0.1)]
    assert fixed.notes[0].startswith("--set jobs.0.workload.load=0.5 replaces the sweep over "
                                     "jobs[0].workload.load (2 values)")
    again = load_experiment(path, ["sweep.jobs.0.workload.load=[0.4]"])  # replaces the axis
    assert loads(again) == [(0.4, 0.1)]
    bad = jobs_sweep_doc("jobs[0].workload.load")
    bad["sweep"]["jobs[0].workload.load"] = [0.2, -1]
    with pytest.raises(ConfigError) as info:
        load_experiment(write(tmp_path, bad))
    assert info.value.path == "sweep.jobs[0].workload.load"
    assert info.value.message == ("Input should be greater than 0 (sweep point 1: "
                                  "jobs[0].workload.load=-1)")


@pytest.mark.parametrize("axes, path, words", [
    ({"jobs.0.workload.load": [0.2], "jobs[0].workload.load": [0.3]},
     "sweep.jobs[0].workload.load",
     "'jobs.0.workload.load' and 'jobs[0].workload.load' are the same axis "
     "(jobs.0.workload.load); give it once"),
    ({"jobs[x].workload.load": [0.2]}, "sweep.jobs[x].workload.load",
     "a list position is a whole number after a field name"),
])
def test_a_files_sweep_key_written_twice_or_malformed_is_refused(tmp_path, axes, path, words):
    from federation.pipeline.load import load_experiment

    d = jobs_sweep_doc("seed")
    d["sweep"] = axes
    with pytest.raises(ConfigError) as info:
        load_experiment(write(tmp_path, d))
    assert info.value.source.endswith("exp.yaml") and info.value.path == path
    assert words in info.value.message


def test_cli_validates_a_files_bracket_sweep_key(tmp_path):
    write(tmp_path, jobs_sweep_doc("jobs[1].workload.load"), "e.yaml")
    r = run_cli("validate", "e.yaml", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "valid experiment (2 point(s))" in r.stdout


def test_a_key_changes_only_its_field_when_the_file_aliases_the_mapping(tmp_path):
    """``workload: *w`` (a YAML alias of job a's workload) shared job a's mapping: ``--set
    jobs.0.workload.load`` and a sweep of job b's load changed both jobs."""
    from federation.pipeline.load import load_experiment

    path = tmp_path / "e.yaml"
    path.write_text(yaml.safe_dump({"machine": TORUS}) + """
jobs:
  - {name: a, workload: &w {kind: synthetic, load: 0.1}, placement: {kind: list, nodes: [0, 1]}}
  - {name: b, workload: *w, placement: {kind: list, nodes: [2, 3]}}
sweep:
  jobs.1.workload.load: [0.3, 0.4]
""")
    assert loads(load_experiment(path)) == [(0.1, 0.3), (0.1, 0.4)]
    assert loads(load_experiment(path, ["jobs.0.workload.load=0.5"])) == [(0.5, 0.3),
                                                                        (0.5, 0.4)]


# ------------------------------------------------- 4. a nested component's relative paths

#: a pattern that reads its destinations' offsets from a file named relative to the
#: experiment file (a DocumentPath), as a third-party plugin would
OFFSET_TABLE = '''
from pathlib import Path

import numpy as np
from pydantic import Field

from federation import DocumentPath, Params, TrafficPattern, hookimpl
from federation.errors import ConfigError


class OffsetTableParams(Params):
    path: DocumentPath = Field(description="offsets, one per line (relative to the file)")


class OffsetTable(TrafficPattern):
    name = "offset_table"
    Params = OffsetTableParams

    def __init__(self, params):
        super().__init__(params)
        try:
            text = Path(params.path).read_text()
        except OSError:
            raise ConfigError(f"cannot read {params.path}", path="path") from None
        self.offsets = np.array([int(x) for x in text.split()], dtype=np.int64)

    def destinations(self, src, ctx, rng):
        return (src + self.offsets[src % self.offsets.shape[0]]) % ctx.n_nodes


@hookimpl
def federation_register_patterns(register):
    register(OffsetTable)
'''


def nested_doc() -> dict:
    return {"machine": TORUS,
            "workload": {"kind": "synthetic", "load": 0.1,
                         "pattern": {"kind": "offset_table", "path": "offsets.txt"}}}


def experiment_in(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "offsets.txt").write_text("1\n3\n")
    return write(folder, nested_doc())


@pytest.fixture
def offset_table(monkeypatch):
    """A plugin manager of the built-ins plus the offset_table pattern, for this test."""
    from federation.plugin import registry

    module = types.ModuleType("offset_table_plugin")
    monkeypatch.setitem(sys.modules, module.__name__, module)  # pydantic reads its names
    exec(compile(OFFSET_TABLE, "offset_table_plugin.py", "exec"), module.__dict__)
    plugins = registry.FederationPlugins()
    plugins.add(module, "offset_table")
    monkeypatch.setattr(registry, "_MANAGER", plugins)
    return plugins


def test_a_nested_components_path_is_relative_to_its_file(offset_table, tmp_path,
                                                          monkeypatch):
    """Loaded from another folder, the pattern's ``offsets.txt`` is the one beside the
    experiment (old: looked up in the working directory, ``cannot read offsets.txt``)."""
    from federation.pipeline.load import load_experiment

    path = experiment_in(tmp_path / "sub")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    point = load_experiment(Path("..") / "sub" / "exp.yaml").points[0]
    pattern = point.workload.pattern
    assert Path(pattern.params.path).resolve() == (tmp_path / "sub" / "offsets.txt").resolve()
    assert pattern.offsets.tolist() == [1, 3]
    resolved = point.experiment.model_dump(mode="json")["workload"]["pattern"]
    assert resolved == {"kind": "offset_table", "path": "offsets.txt"}
    (tmp_path / "sub" / "offsets.txt").unlink()
    with pytest.raises(ConfigError) as info:
        load_experiment(path)
    assert info.value.path == "workload.pattern.path"  # its own refusal, under its field
    assert info.value.source == str(path)


def test_cli_validates_a_nested_components_path_from_another_folder(tmp_path,
                                                                    tmp_path_factory):
    site = fake_distribution(tmp_path_factory.mktemp("offset_table") / "site",
                             "offset_table", OFFSET_TABLE)
    experiment_in(tmp_path / "sub")
    env = {"PYTHONPATH": str(site), "FEDERATION_DISABLE_PLUGIN_AUTOLOAD": "0",
           "FEDERATION_LOAD_PLUGINS": "offset_table"}
    r = run_cli("validate", str(Path("sub") / "exp.yaml"), cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    assert "valid experiment (1 point(s))" in r.stdout
    importlib.invalidate_caches()
    sys.modules.pop("federation_offset_table", None)


# ----------------------------------------------------------------- 5. the shipped schemas


def test_shipped_schema_files_are_what_the_schema_command_writes(tmp_path):
    """Byte for byte, by the command itself in a process of its own (no test plugin
    registered; tests/test_units_and_schema.py compares the parsed documents): regenerate
    with ``federation schema --out schemas``."""
    r = run_cli("schema", "--out", "fresh", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    for name in ("machine.schema.json", "experiment.schema.json"):
        fresh = (tmp_path / "fresh" / name).read_bytes()
        assert (REPO / "schemas" / name).read_bytes() == fresh, \
            f"regenerate schemas/{name}: federation schema --out schemas"


def test_the_schema_describes_where_collective_modes_apply():
    import json

    doc = json.loads((REPO / "schemas" / "experiment.schema.json").read_text())
    top = doc["properties"]["collective_modes"]["description"]
    assert "collective (its op) or allreduce only" in top and "refused" in top
    per_job = doc["$defs"]["Job"]["properties"]["collective_modes"]["anyOf"]
    assert per_job and "refused" in doc["$defs"]["Job"]["properties"]["collective_modes"][
        "description"]


def test_an_experiment_file_that_is_a_pipe_is_refused_at_once(tmp_path) -> None:  # noqa: ANN001
    """A FIFO named as the experiment blocked ``run`` forever (its read waits for a writer)."""
    import os
    import subprocess
    import sys

    fifo = tmp_path / "e.yaml"
    os.mkfifo(fifo)
    out = subprocess.run([sys.executable, "-c", "from federation.cli import entry; entry()",
                          "validate", str(fifo)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2, out.stderr
    assert "is not a regular file" in out.stderr and "Traceback" not in out.stderr
    assert fifo.is_fifo()
