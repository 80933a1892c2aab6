"""``--set key=value``: read as the file reads values, and never silently beaten by the sweep.

Issue 17, case 7: ``--set workload.load=0.3`` was ignored when the file swept
``workload.load``; ``--set workload.load=.nan`` passed ``validate`` (the sweep replaced it);
``--set x=5e8`` was a string where the same ``5e8`` in a file is a number.  The rule now: an
override fixes the value it gives in every point (see :mod:`federation.pipeline.overrides`).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import one_error, run_cli

from federation.errors import ConfigError
from federation.pipeline.load import load_experiment

MACHINE = "topology: {kind: dragonfly, p: 2, a: 4, h: 2}\n"


def _files(tmp: Path, sweep: str = "{workload.load: [0.1, 0.2, 0.3]}",
           machine: str = "m.yaml") -> Path:
    (tmp / "m.yaml").write_text(MACHINE)
    (tmp / "m2.yaml").write_text(MACHINE + "links: {global: {latency: 300ns}}\n")
    e = tmp / "e.yaml"
    e.write_text(f"machine: {machine}\nrouting: {{algorithm: minimal}}\n"
                 "workload: {kind: synthetic, pattern: uniform, load: 0.1}\n"
                 f"stop: {{warmup: 0.1us, measure: 0.5us}}\nsweep: {sweep}\n")
    return e


def _loads(loaded) -> list[float]:
    return [p.workload.params.load for p in loaded.points]


def _refused(e: Path, *sets: str) -> str:
    with pytest.raises(ConfigError) as exc:
        load_experiment(e, list(sets))
    return str(exc.value)


def test_override_of_a_swept_key_replaces_the_axis(tmp_path):
    e = _files(tmp_path)
    loaded = load_experiment(e, ["workload.load=0.3"])
    assert _loads(loaded) == [0.3] and loaded.points[0].sweep == {}
    assert loaded.experiment.sweep == {}
    assert loaded.notes == [f"--set workload.load=0.3 replaces the sweep over workload.load "
                            f"(3 values) in {e}: every point has workload.load = 0.3"]
    # the other axes stay: one point per routing, all at 0.3
    e2 = _files(tmp_path, "{workload.load: [0.1, 0.2], routing.algorithm: [minimal, valiant]}")
    loaded = load_experiment(e2, ["workload.load=0.3"])
    assert _loads(loaded) == [0.3, 0.3]
    assert [p.sweep for p in loaded.points] == [{"routing.algorithm": "minimal"},
                                                {"routing.algorithm": "valiant"}]


def test_cli_notes_the_replaced_axis_and_the_run_records_the_value(tmp_path):
    _files(tmp_path, sweep="{workload.load: [0.1, 0.2]}")
    r = run_cli("run", "e.yaml", "--set", "workload.load=0.25", "--out", "o", "--set",
                "outputs={packets: false, ports: false, messages: false}", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stderr.splitlines()[0] == (
        "note: --set workload.load=0.25 replaces the sweep over workload.load (2 values) in "
        "e.yaml: every point has workload.load = 0.25")
    doc = json.loads((tmp_path / "o" / "results.json").read_text())
    (point,) = doc["points"]
    assert point["sweep"] == {} and point["resolved"]["workload"]["load"] == 0.25
    assert "sweep" not in point["resolved"]


def test_nan_override_is_refused_even_where_the_sweep_would_hide_it(tmp_path):
    e = _files(tmp_path)
    for text in (".nan", ".inf", "-.inf"):
        msg = _refused(e, f"workload.load={text}")
        assert msg.startswith("--set: workload.load: ") and "not a finite number" in msg
    msg = _refused(e, "sweep.workload.load=[0.1, .nan]")
    assert msg.startswith("--set: sweep.workload.load[1]: nan is not a finite number")
    line = one_error(run_cli("validate", "e.yaml", "--set", "workload.load=.nan",
                             cwd=tmp_path))
    assert line.startswith("error: --set: workload.load: nan is not a finite number")


def test_values_are_read_as_in_a_file(tmp_path):
    e = _files(tmp_path)
    # 5e8 is a number in a file (YAML 1.2 rule of read_document) and so on the command line
    loaded = load_experiment(e, ["machine.links.global.bandwidth=5e8"])
    assert loaded.points[0].machine.machine.links["global"].bandwidth == 5e8
    (tmp_path / "m3.yaml").write_text(MACHINE + "links: {global: {bandwidth: 5e8}}\n")
    in_file = load_experiment(_files(tmp_path, machine="m3.yaml"))
    assert in_file.points[0].machine.machine.links["global"].bandwidth == 5e8
    assert _loads(load_experiment(e, ["sweep.workload.load=[5e-1, 1e-1]"])) == [0.5, 0.1]
    # a key twice in a mapping, and text that is not YAML, are refused as in a file
    msg = _refused(e, "workload={kind: synthetic, kind: messages}")
    assert msg.startswith("--set: workload: duplicate key 'kind'")
    assert _refused(e, "name=[x").startswith("--set: name: invalid YAML at line 1")
    # an empty value is null, as after 'name:' in a file
    assert load_experiment(e, ["name="]).experiment.name is None


def test_sweep_keys_are_axes(tmp_path):
    e = _files(tmp_path)
    loaded = load_experiment(e, ["sweep.workload.load=[0.4, 0.5]"])
    assert _loads(loaded) == [0.4, 0.5]
    loaded = load_experiment(e, ["sweep.routing.algorithm=[minimal, valiant]"])
    assert len(loaded.points) == 6
    assert load_experiment(e, ["sweep={}"]).points[0].sweep == {}
    msg = _refused(e, "sweep.workload.load=0.4")
    assert "sweep.workload.load" in msg and "valid list" in msg
    assert "(the value comes from --set sweep.workload.load=0.4)" in msg


def test_contradicting_overrides_are_refused_naming_both(tmp_path):
    e = _files(tmp_path)
    assert _refused(e, "workload.load=0.3", "sweep.workload.load=[0.1]") == (
        "--set: --set workload.load=0.3 fixes workload.load, which --set "
        "sweep.workload.load=[0.1] sweeps; give one of them")  # named since stop 48
    assert _refused(e, "workload.load=0.3", "sweep={workload.load: [0.1]}").endswith(
        "which --set sweep={workload.load: [0.1]} sweeps; give one of them")
    assert _refused(e, "workload.load=0.3", "workload.load=0.4") == (
        "--set: workload.load is given twice (--set workload.load=0.3 and --set "
        "workload.load=0.4); give it once")
    assert _refused(e, "workload={kind: synthetic, load: 0.4}", "workload.load=0.2") == (
        "--set: --set workload={kind: synthetic, load: 0.4} and --set workload.load=0.2 both "
        "give workload.load; give it once")
    assert "both give sweep.workload.load" in _refused(
        e, "sweep={workload.load: [0.1]}", "sweep.workload.load=[0.2]")


def test_ancestor_override_keeps_the_axes_it_does_not_give(tmp_path):
    e = _files(tmp_path)
    loaded = load_experiment(e, ["workload={kind: synthetic, pattern: group_shift}"])
    assert _loads(loaded) == [0.1, 0.2, 0.3] and not loaded.notes
    assert {p.workload.params.pattern.kind for p in loaded.points} == {"group_shift"}
    loaded = load_experiment(e, ["workload={kind: synthetic, pattern: group_shift, load: 0.05}"])
    assert _loads(loaded) == [0.05] and len(loaded.notes) == 1


def test_machine_overrides_reach_a_machine_file_and_a_swept_machine(tmp_path):
    e = _files(tmp_path)
    loaded = load_experiment(e, ["machine.links.global.latency=50ns"])
    assert [p.machine.machine.links["global"].latency for p in loaded.points] == [
        pytest.approx(50e-9)] * 3
    # the file sweeps whole machine files: the override applies inside each
    e2 = _files(tmp_path, sweep="{machine: [m.yaml, m2.yaml]}")
    loaded = load_experiment(e2, ["machine.router.vcs=4"])
    assert [p.machine.machine.router.vcs for p in loaded.points] == [4, 4]
    assert [p.sweep["machine"] for p in loaded.points] == ["m.yaml", "m2.yaml"]
    assert loaded.points[1].machine.machine.links["global"].latency == pytest.approx(300e-9)
    assert "global" not in loaded.points[0].machine.machine.links
    # replacing the machine replaces the axis over machines
    loaded = load_experiment(e2, ["machine=m2.yaml"])
    assert len(loaded.points) == 1 and loaded.points[0].sweep == {}
    # the file's other fields stay: a sweep inside an overridden machine applies on top
    e3 = _files(tmp_path, sweep="{machine.router.vcs: [3, 4]}")
    loaded = load_experiment(e3, ["machine=m2.yaml"])
    assert [p.machine.machine.router.vcs for p in loaded.points] == [3, 4]
    assert [p.machine.machine.links["global"].latency for p in loaded.points] == [
        pytest.approx(300e-9)] * 2


def test_errors_name_the_file_and_the_override_that_gave_the_value(tmp_path):
    e = _files(tmp_path)
    m = tmp_path / "m.yaml"
    assert _refused(e, "foo.bar=1") == (
        f"{e}: foo: unknown key (the value comes from --set foo.bar=1)")
    # a field of the machine file is named in that file, as loading it would
    assert _refused(e, "machine.routr.vcs=1") == (
        f"{m}: routr: unknown key (the value comes from --set machine.routr.vcs=1)")
    assert _refused(e, "machine.links.global.bandwidth=-5") == (
        f"{m}: links.global.bandwidth: must be positive, got -5 (the value comes from --set "
        "machine.links.global.bandwidth=-5)")
    assert _refused(e, "machine.topology.p=0") == (
        f"{m}: topology.p: Input should be greater than or equal to 1 (the value comes from "
        "--set machine.topology.p=0)")
    # an error the file makes by itself is not blamed on an unrelated override
    m.write_text(MACHINE.replace("p: 2", "p: 0"))
    assert _refused(e, "workload.load=0.2") == (
        f"{m}: topology.p: Input should be greater than or equal to 1")


def test_an_override_that_breaks_several_fields_is_one_line_naming_it(tmp_path):
    """A mapping given by --set that breaks several of its fields listed them on lines of
    their own, without the note every other --set error carries; now one line, the note
    once when one override gave every problem, else after each problem it gave."""
    e = _files(tmp_path)
    typed = "workload={kind: synthetic, load: banana, pattern: 7}"
    assert _refused(e, typed) == (
        f"{e}: workload.pattern: Input should be a valid dictionary or instance of PatternSpec; "
        f"workload.load: Input should be a valid number (the value comes from --set {typed})")
    assert _refused(e, "seed=-1", "stop.measure=x") == (
        f"{e}: seed: Input should be greater than or equal to 0 (the value comes from --set "
        "seed=-1); stop.measure: 'x' is not a time: write a number with s, ms, us, ns or ps, "
        "e.g. '100ns' (the value comes from --set stop.measure=x)")
    line = one_error(run_cli("validate", "e.yaml", "--set", typed, cwd=tmp_path))
    assert line == (f"error: e.yaml: workload.pattern: Input should be a valid dictionary or "
                    "instance of PatternSpec; workload.load: Input should be a valid number "
                    f"(the value comes from --set {typed})")
    # the file's own problems stay listed as before when no override gave any of them
    e.write_text(e.read_text() + "seed: -1\nname: [1]\n")
    assert _refused(e, "routing.algorithm=valiant") == (
        f"{e}: \n  name: Input should be a valid string\n  seed: Input should be greater than "
        "or equal to 0")


def _jobs_file(tmp: Path) -> Path:
    (tmp / "m.yaml").write_text(MACHINE)
    e = tmp / "j.yaml"
    e.write_text("machine: m.yaml\nstop: {warmup: 0, measure: 0.5us}\njobs:\n"
                 "  - {name: a, workload: {kind: synthetic, load: 0.3}, "
                 "placement: {kind: contiguous, count: 8}}\n"
                 "  - {name: b, workload: {kind: synthetic, load: 0.2}, placement: {kind: rest}}\n")
    return e


def test_list_positions_as_error_messages_write_them(tmp_path):
    """``--set jobs[0].x=...``, the path as error messages write it, was an unknown key
    ``jobs[0]``: it is the same key as ``jobs.0.x``; and an error in a list item given by
    position or by name carries the override's note too."""
    e = _jobs_file(tmp_path)
    loaded = load_experiment(e, ["jobs[1].workload.load=0.5"])
    assert [j.workload.params.load for j in loaded.points[0].jobs] == [0.3, 0.5]
    loaded = load_experiment(e, ["sweep.jobs[0].workload.load=[0.1, 0.2]"])
    assert [p.jobs[0].workload.params.load for p in loaded.points] == [0.1, 0.2]
    assert loaded.points[0].sweep == {"jobs.0.workload.load": 0.1}
    for key in ("jobs[1].workload.load", "jobs.1.workload.load", "jobs.b.workload.load"):
        assert _refused(e, f"{key}=banana") == (
            f"{e}: jobs[1].workload.load: Input should be a valid number (the value comes "
            f"from --set {key}=banana)")
    # the same key twice, once in each form, is one key given twice
    assert "given twice" in _refused(e, "jobs[0].seed=1", "jobs.0.seed=2")


def test_a_job_given_by_name_and_by_position_is_one_key(tmp_path):
    """A job named ``b`` at position 1: ``jobs.b.x``, ``jobs.1.x`` and ``jobs[1].x`` are one
    field.  Before stop 47 they were compared as text: ``--set jobs.1.workload.load=0.4``
    against a file sweeping ``jobs.b.workload.load`` kept the axis, so the point labelled 0.1
    ran at 0.4; a file sweeping both spellings, and two overrides, one in each, passed."""
    e = _jobs_file(tmp_path)
    text = e.read_text()
    e.write_text(text + "sweep: {jobs.b.workload.load: [0.1, 0.4]}\n")
    loaded = load_experiment(e, ["jobs.1.workload.load=0.5"])
    assert [p.jobs[1].workload.params.load for p in loaded.points] == [0.5]
    assert [p.sweep for p in loaded.points] == [{}]
    assert loaded.notes == ["--set jobs.1.workload.load=0.5 replaces the sweep over "
                            f"jobs.b.workload.load (2 values) in {e}: every point has "
                            "jobs.b.workload.load = 0.5"]
    # the command line's axis replaces the file's, whichever spelling each uses
    loaded = load_experiment(e, ["sweep.jobs[1].workload.load=[0.25]"])
    assert [(p.sweep, p.jobs[1].workload.params.load) for p in loaded.points] == [
        ({"jobs.1.workload.load": 0.25}, 0.25)]
    assert "given twice" in _refused(e, "jobs.1.workload.load=0.4", "jobs.b.workload.load=0.3")
    e.write_text(text + "sweep: {jobs.b.workload.load: [0.1], jobs.1.workload.load: [0.7]}\n")
    assert "are the same axis (jobs.1.workload.load)" in _refused(e)


@pytest.mark.parametrize("key", ["jobs[0.workload.load", "[0].x", "jobs[a].x", "jobs[0]x",
                                 "jobs]0[.x"])
def test_malformed_list_positions_say_how_to_write_one(tmp_path, key):
    msg = _refused(_jobs_file(tmp_path), f"{key}=1")
    assert msg == (f"--set: {key!r}: a list position is a whole number after a field name: "
                   "write jobs.0.workload.load (or jobs[0].workload.load)")


@pytest.mark.parametrize("text, words", [
    ("nonsense", "expected key=value"), ("=3", "empty key"),
    ("a..b=1", "'a..b' has an empty field name"), ("workload.=1", "empty field name"),
])
def test_malformed_overrides(tmp_path, text, words):
    e = _files(tmp_path)
    msg = _refused(e, text)
    assert msg.startswith("--set: ") and words in msg


def test_sst_config_notes_the_replaced_axis_as_run_does(tmp_path):
    """``federation sst config`` (and ``sst run``) read files as ``federation run`` does, and
    now say so: the note of an override that replaced a sweep axis, then the files."""
    _files(tmp_path, sweep="{workload.load: [0.1, 0.2]}")
    r = run_cli("sst", "config", "e.yaml", "--set", "workload.load=0.25", "--out", "c",
                cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stderr.splitlines()[0] == (
        "note: --set workload.load=0.25 replaces the sweep over workload.load (2 values) in "
        "e.yaml: every point has workload.load = 0.25")
    assert r.stdout.split() == ["c/config-0.py"]


def test_per_experiment_fields_cannot_be_swept_but_per_point_outputs_can(tmp_path):
    """An experiment writes every point into one folder, in one format: a sweep over
    ``outputs.format``/``outputs.dir``/``name`` was recorded in each point's ``resolved`` and
    never applied.  It is refused, from the file or from ``--set sweep...``; the per-point
    outputs (``outputs.packets``, ``outputs.link_series``) stay sweepable, and an axis that
    gives the experiment's own value changes nothing and passes."""
    e = _files(tmp_path, sweep="{outputs.format: [csv, parquet]}")
    assert _refused(e).startswith(f"{e}: sweep.outputs.format: outputs.format cannot be swept")
    e = _files(tmp_path)
    assert _refused(e, "sweep.outputs.dir=[a, b]") == (
        f"{e}: sweep.outputs.dir: outputs.dir cannot be swept: an experiment's outputs are the "
        "same for every point (all of them are written into one folder), so every point would "
        "get the experiment's outputs.dir (not set), not the swept a; set outputs.dir outside "
        "the sweep, or run one experiment per value (the value comes from --set "
        "sweep.outputs.dir=[a, b])")
    # --set outputs.format=... fixes the value in every point: the axis is dropped, as any
    loaded = load_experiment(_files(tmp_path, sweep="{outputs.format: [csv, parquet]}"),
                             ["outputs.format=csv"])
    assert loaded.experiment.outputs.format == "csv" and len(loaded.points) == 1
    loaded = load_experiment(_files(tmp_path, sweep="{outputs.packets: [true, false], "
                                    "outputs.format: [parquet]}"))
    assert [p.experiment.outputs.packets for p in loaded.points] == [True, False]


@pytest.mark.parametrize("axis", ["workload..load", "", "."])
def test_an_axis_with_an_empty_part_names_the_sweep_entry(tmp_path, axis):
    """``sweep: {"workload..load": [1]}`` was refused as ``workload.: unknown key`` (the
    ``sweep.`` lost), and an empty axis as an unknown key of the top level."""
    e = _files(tmp_path, sweep=f'{{"{axis}": [1]}}')
    assert _refused(e) == (f"{e}: sweep.{axis}: an axis is a dotted field path "
                           "(workload.load); this one has an empty part")


def test_a_list_override_holding_a_swept_value_replaces_the_axis(tmp_path):
    """``--set jobs=[...]`` gives ``jobs.bg.workload.load`` as surely as ``--set
    jobs.bg={...}`` does; it kept the file's axis (2 points at 0.1 and 0.4, not 0.9)."""
    from federation.pipeline.load import load_experiment

    (tmp_path / "e.yaml").write_text(
        "machine: {topology: {kind: dragonfly, p: 1, a: 2, h: 1}}\n"
        "jobs:\n- {name: fg, workload: {kind: synthetic, load: 0.2}, placement: {kind: "
        "contiguous, count: 4}}\n- {name: bg, workload: {kind: synthetic, load: 0.2}, "
        "placement: rest}\nstop: {warmup: 0us, measure: 1us}\n"
        "sweep: {jobs.bg.workload.load: [0.1, 0.4]}\n")
    jobs = ("jobs=[{name: fg, workload: {kind: synthetic, load: 0.2}, placement: {kind: "
            "contiguous, count: 4}}, {name: bg, workload: {kind: synthetic, load: 0.9}, "
            "placement: rest}]")
    loaded = load_experiment(tmp_path / "e.yaml", [jobs])
    assert len(loaded.points) == 1
    assert loaded.points[0].jobs[1].workload.params.load == 0.9
    assert any("replaces the sweep over jobs.bg.workload.load (2 values)" in n
               for n in loaded.notes)
