"""``federation schema``, ``topology`` and ``plugins --text`` on the inputs a fuzz round found
mishandled (fuzz 44): each either does what was asked or is refused with one line naming the
option, exit 2, nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import one_error, run_cli

MACHINE = "topology: {kind: dragonfly, p: 2, a: 4, h: 2}\n"


def entries(folder: Path) -> list[str]:
    """Everything in ``folder``, hidden names (a temporary file left behind) included."""
    return sorted(p.name for p in folder.iterdir())


# ---------------------------------------------------------------------- schema --out
def test_schema_writes_both_files_or_neither(tmp_path):
    """A folder named like the second schema file was found after the first was written: the
    refusal left a new machine.schema.json beside no experiment schema, and told the user to
    "give a file name" for an option that takes a folder."""
    out = tmp_path / "s"
    (out / "experiment.schema.json").mkdir(parents=True)
    (out / "machine.schema.json").write_text("stale\n")
    line = one_error(run_cli("schema", "--out", "s", cwd=tmp_path))
    assert line.startswith("error: --out: s/experiment.schema.json is a folder; choose another "
                           "folder"), line
    assert "file name" not in line
    assert entries(out) == ["experiment.schema.json", "machine.schema.json"]  # no temporary
    assert (out / "machine.schema.json").read_text() == "stale\n"  # not replaced alone
    # and written both, replacing stale files, when nothing is in the way
    (out / "experiment.schema.json").rmdir()
    r = run_cli("schema", "--out", "s", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["s/machine.schema.json", "s/experiment.schema.json"]
    assert entries(out) == ["experiment.schema.json", "machine.schema.json"]
    assert json.loads((out / "machine.schema.json").read_text())["type"] == "object"


def test_schema_out_that_is_a_file_is_refused(tmp_path):
    (tmp_path / "f").write_text("mine\n")
    line = one_error(run_cli("schema", "--out", "f", cwd=tmp_path))
    assert line == "error: --out: f exists and is not a folder"
    assert (tmp_path / "f").read_text() == "mine\n"


def test_schema_empty_out_is_refused(tmp_path):
    """typer turned ``--out ''`` into ``.``: the schemas went into the current folder."""
    line = one_error(run_cli("schema", "--out", "", cwd=tmp_path))
    assert line.startswith("error: --out: is empty; give the folder"), line
    assert entries(tmp_path) == []


@pytest.mark.parametrize("args, what", [
    (["run"], "the output folder ('.' for the current folder)"),
    (["plot", "res"], "the folder for the figures ('.' for the current folder)"),
    (["report", "res"], "the HTML file to write"),
    (["export", "x.goal"], "the GOAL file to write"),
], ids=["run", "plot", "report", "export"])
def test_every_empty_out_is_refused(tmp_path, args, what):
    """The same for every command's ``--out``: ``plot --out ''`` drew its figures into the
    current folder, ``run --out ''`` refused it as not empty, and ``report`` / ``export``
    called it a folder; nothing is read or written."""
    (tmp_path / "res").mkdir()
    (tmp_path / "x.goal").write_text("num_ranks 1\nrank 0 {\n}\n")
    line = one_error(run_cli(*args, "--out", "", cwd=tmp_path))
    assert line == f"error: --out: is empty; give {what}", line
    assert entries(tmp_path) == ["res", "x.goal"]
    assert entries(tmp_path / "res") == []


# ---------------------------------------------------------------------- topology
def test_topology_takes_the_max_memory_its_refusal_advises(tmp_path):
    """The memory refusal advises --max-memory, which topology did not accept."""
    (tmp_path / "m.yaml").write_text(MACHINE)
    tiny = {"FEDERATION_MAX_MEMORY": "1KiB"}
    line = one_error(run_cli("topology", "m.yaml", cwd=tmp_path, env=tiny))
    assert line.startswith("error: m.yaml: topology: this machine (36 routers"), line
    assert "--max-memory" in line
    r = run_cli("topology", "m.yaml", "--max-memory", "1GiB", cwd=tmp_path, env=tiny)
    assert r.returncode == 0, r.stderr
    assert "36 in 9 groups" in r.stdout
    line = one_error(run_cli("topology", "m.yaml", "--max-memory", "1KiB", cwd=tmp_path))
    assert "more than the limit of" in line and "--max-memory" in line
    line = one_error(run_cli("topology", "m.yaml", "--max-memory", "lots", cwd=tmp_path))
    assert line.startswith("error: --max-memory: "), line


def test_topology_says_only_the_network_is_valid(tmp_path):
    """An experiment whose run is refused (too few VCs for its routing) printed "-- valid"."""
    (tmp_path / "m.yaml").write_text(MACHINE)
    (tmp_path / "e.yaml").write_text(
        "machine: {topology: {kind: dragonfly, p: 2, a: 4, h: 2}, router: {vcs: 1}}\n"
        "routing: {algorithm: minimal}\nworkload: {kind: synthetic, load: 0.1}\n"
        "stop: {warmup: 0.1us, measure: 0.5us}\n")
    assert "machine.router.vcs" in one_error(run_cli("validate", "e.yaml", cwd=tmp_path))
    r = run_cli("topology", "e.yaml", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    first = r.stdout.splitlines()[0]
    assert first == ("e.yaml: dragonfly (p=2, a=4, h=2) -- network valid "
                     "(`federation validate` checks the experiment)")
    r = run_cli("topology", "m.yaml", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == "m.yaml: dragonfly (p=2, a=4, h=2) -- network valid"


# ---------------------------------------------------------------------- plugins --text
def test_plugins_text_columns_fit_the_longest_name(tmp_path):
    """qos_weighted_round_robin was longer than the fixed 16-character column."""
    r = run_cli("plugins", "--text", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    rows = r.stdout.splitlines()
    assert any(row.startswith("qos_weighted_round_robin ") for row in rows)
    # the source and the provides columns each start at one place on every row
    sources = {row.index(" builtin ") + 1 for row in rows}
    provides = {len(row) - len(row.split(" builtin ", 1)[1].lstrip()) for row in rows}
    assert len(sources) == 1 and len(provides) == 1, rows


def test_topology_counts_an_aries_radix_in_tiles(tmp_path):
    """An Aries router's radix is its 48 tiles, bundled into fewer cable ports: the summary
    said "ports used 29, free 19" of a router whose tiles are all used (15 + 15 + 10 + 8)."""
    (tmp_path / "m.yaml").write_text("topology: {kind: aries, groups: 2}\n")
    r = run_cli("topology", "m.yaml", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "radix       48 tiles (48 used; their bundles make 34 cable ports)" in r.stdout


def test_validate_takes_set_on_a_machine_file(tmp_path):
    """``validate MACHINE --set router.vcs=4`` was refused as "this is a machine file ... use
    'federation validate'": the help and the README say ``--set`` works on ``validate``."""
    (tmp_path / "m.yaml").write_text(MACHINE)
    r = run_cli("validate", "m.yaml", "--set", "topology.p=3", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("m.yaml: valid machine (dragonfly: 36 routers, 108 nodes")
    line = one_error(run_cli("validate", "m.yaml", "--set", "router.vcs=0", cwd=tmp_path))
    assert line == ("error: m.yaml: router.vcs: Input should be greater than or equal to 1 "
                    "(the value comes from --set router.vcs=0)")
    line = one_error(run_cli("validate", "m.yaml", "--set", "sweep.router.vcs=[1, 2]",
                             cwd=tmp_path))
    assert "a machine file has no sweep" in line


def test_a_results_document_is_refused_in_one_line_where_an_experiment_is_read(tmp_path):
    """Read as an experiment it was fifteen lines of schema errors ("the file says 6")."""
    (tmp_path / "results.json").write_text(json.dumps(
        {"schema_name": "hpc-federation.results", "schema_version": 6,
         "federation_version": "0", "machine": {"links": {"global": 1}}, "points": []}))
    for command in ("validate", "run", "hops", "topology"):
        line = one_error(run_cli(command, "results.json", cwd=tmp_path))
        assert line.startswith("error: results.json: is a federation run's results document")


def test_validate_refuses_an_outputs_dir_that_is_a_file(tmp_path):
    """``run`` refused it at once; ``validate`` said the file was valid."""
    (tmp_path / "m.yaml").write_text(MACHINE)
    (tmp_path / "afile").write_text("")
    (tmp_path / "e.yaml").write_text(
        "machine: m.yaml\nworkload: {kind: synthetic, load: 0.1}\n"
        "stop: {warmup: 0.1us, measure: 0.5us}\noutputs: {dir: afile}\n")
    line = one_error(run_cli("validate", "e.yaml", cwd=tmp_path))
    assert line.startswith("error: e.yaml: outputs.dir: ")
    assert line.endswith("afile exists and is not a folder")


def test_validate_names_runs_option_for_the_default_folder(tmp_path):
    """The folder ``run`` would name after the file is checked by ``validate`` too, whose
    refusal said "give --out", an option validate does not have."""
    import os

    (tmp_path / "m.yaml").write_text(MACHINE)
    name = os.fsdecode(b"bad\xff.yaml")
    (tmp_path / name).write_text("machine: m.yaml\nworkload: {kind: synthetic, load: 0.1}\n"
                                 "stop: {warmup: 0.1us, measure: 0.5us}\n")
    line = one_error(run_cli("validate", name, cwd=tmp_path))
    assert "(its name gives the output folder; give run --out)" in line
    line = one_error(run_cli("run", name, cwd=tmp_path))
    assert "(its name gives the output folder; give --out)" in line
