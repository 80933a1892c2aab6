"""``federation comm`` and ``federation export`` take ``--max-memory`` as ``validate``,
``topology`` and ``hops`` do (``cli.run.MaxMemory``, read by ``cli.run.memory_limit``).

Each declared its own option ("as for 'run': the memory the programs may need") and read it
only for an experiment file, so a bad value given with a schedule file passed without a word,
and a bad one given with an experiment was read after ``export`` had prepared its output.
"""

from __future__ import annotations

import typer.main
import yaml
from conftest import one_error, run_cli

from federation.cli import comm, export, hops, inspect, topology  # noqa: F401 - registered
from federation.cli.app import app
from federation.cli.run import MaxMemory

GOAL = "num_ranks 2\nrank 0 {\nl1: send 64b to 1\n}\nrank 1 {\nl1: recv 64b from 0\n}\n"
TINY = {"FEDERATION_MAX_MEMORY": "1KiB"}  # the default a bad environment gives: too small


def experiment(tmp_path) -> str:
    doc = {"machine": {"topology": {"kind": "dragonfly", "p": 2, "a": 4, "h": 2}},
           "workload": {"kind": "allreduce", "ranks": 8, "size": "8B", "iterations": 1}}
    (tmp_path / "e.yaml").write_text(yaml.safe_dump(doc))
    return "e.yaml"


def option_help(command: str) -> str:
    """The help of ``command``'s ``--max-memory``, as the CLI declares it."""
    click = typer.main.get_command(app)
    (param,) = [p for p in click.commands[command].params if "--max-memory" in p.opts]
    return param.help


def test_every_command_that_checks_memory_declares_the_same_option():
    shared = MaxMemory.__metadata__[0].help
    for command in ("comm", "export", "validate", "topology", "hops"):
        assert option_help(command) == shared, command


def test_comm_and_export_accept_a_size_and_apply_it(tmp_path):
    e = experiment(tmp_path)
    (tmp_path / "s.goal").write_text(GOAL)
    for args in (["comm", e], ["comm", "s.goal"],
                 ["export", e, "--out", "a.goal"], ["export", "s.goal", "--out", "b.goal"]):
        r = run_cli(*args, "--max-memory", "1GiB", cwd=tmp_path, env=TINY)
        assert r.returncode == 0, (args, r.stderr)
    assert (tmp_path / "a.goal").read_text().startswith("num_ranks 8")
    # the limit is the one the point is built under: the environment's, refused, without it
    for args in (["comm", e], ["export", e, "--out", "c.goal"]):
        line = one_error(run_cli(*args, cwd=tmp_path, env=TINY))
        assert "more than the limit of" in line and "--max-memory" in line, line
    assert not (tmp_path / "c.goal").exists()


def test_comm_and_export_refuse_a_bad_size_before_reading_anything(tmp_path):
    e = experiment(tmp_path)
    (tmp_path / "s.goal").write_text(GOAL)
    refs = {bad: one_error(run_cli("validate", e, "--max-memory", bad, cwd=tmp_path))
            for bad in ("lots", "0")}
    assert all(line.startswith("error: --max-memory: ") for line in refs.values())
    for args in (["comm", e], ["comm", "s.goal"], ["comm", "missing.goal"],
                 ["comm", e, "--plot", "heat.png"],
                 ["export", e, "--out", "x.goal"], ["export", "s.goal", "--out", "x.goal"]):
        for bad, ref in refs.items():  # validate's refusal, word for word
            assert one_error(run_cli(*args, "--max-memory", bad, cwd=tmp_path)) == ref, args
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.yaml", "s.goal"]
