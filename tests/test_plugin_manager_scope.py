"""The plugin manager given to ``load_experiment(..., plugins=M)`` (as docs/plugins.md's
"Testing a plugin" does) is the one every lookup of that experiment uses, while it is loaded,
checked and run: components named inside another's parameters (a synthetic workload's
``pattern``), the origins ``results.json`` records.  Nothing registered on the process-wide
manager leaks into it, and a file without ``jobs:`` does not need the placements plugin."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest
import yaml

from federation import Params, TrafficPattern, hookimpl, load_experiment, run_experiment
from federation.errors import ConfigError
from federation.plugin.components import Controller
from federation.plugin.registry import FederationPlugins, get_plugins, reset_plugins
from federation.plugins.topologies.dragonfly import Dragonfly


class NextNode(TrafficPattern):
    """Node i sends to node i + 1."""

    name = "next_node"

    class Params(Params):
        pass

    def destinations(self, src: np.ndarray, ctx: object, rng: object) -> np.ndarray:
        return (src + 1) % ctx.n_nodes  # type: ignore[attr-defined]


class OwnDragonfly(Dragonfly):
    """The built-in dragonfly under another name, registered by a local plugin."""

    name = "own_dragonfly"


def _module(name: str, hook: str, cls: type) -> types.ModuleType:
    module = types.ModuleType(name)

    @hookimpl(specname=hook)
    def register(register: object) -> None:
        register(cls)  # type: ignore[operator]

    setattr(module, hook, register)
    return module


PATTERN = _module("next_node_plugin", "federation_register_patterns", NextNode)
TOPOLOGY = _module("own_dragonfly_plugin", "federation_register_topologies", OwnDragonfly)

SMALL = {"stop": {"warmup": "200ns", "measure": "2us"}, "seed": 3,
         "outputs": {"packets": False, "messages": False, "ports": False, "nics": False}}


@pytest.fixture
def process_wide():
    """The process-wide manager, forgotten afterwards (a test may add to it)."""
    reset_plugins()
    yield get_plugins()
    reset_plugins()


def _file(tmp_path: Path, name: str, doc: dict) -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump({**SMALL, **doc}))
    return path


def test_a_pattern_registered_on_the_given_manager_is_found(tmp_path, process_wide):
    mine = FederationPlugins()
    mine.add(PATTERN, "next_node", "local")
    path = _file(tmp_path, "p.yaml", {
        "machine": {"topology": {"kind": "dragonfly", "p": 2, "a": 4, "h": 2}},
        "workload": {"kind": "synthetic", "pattern": "next_node", "load": 0.2}})
    result = run_experiment(load_experiment(path, plugins=mine))
    assert result.points[0].summary.packets_delivered > 0
    # and not through the process-wide manager, which lacks it
    with pytest.raises(ConfigError, match="unknown traffic pattern 'next_node'"):
        load_experiment(path)


def test_the_process_wide_manager_does_not_leak_into_a_given_one(tmp_path, process_wide):
    process_wide.add(PATTERN, "next_node", "local")  # an earlier notebook cell did this
    path = _file(tmp_path, "p.yaml", {
        "machine": {"topology": {"kind": "dragonfly", "p": 2, "a": 4, "h": 2}},
        "workload": {"kind": "synthetic", "pattern": "next_node", "load": 0.2}})
    load_experiment(path)  # found where it was registered
    with pytest.raises(ConfigError, match="unknown traffic pattern 'next_node'"):
        load_experiment(path, plugins=FederationPlugins())


def test_results_record_the_loading_managers_origins(tmp_path, process_wide):
    """The same experiment, the same manager, run twice in one process with the plugin
    added to the process-wide manager in between: the same results document, naming the
    plugin that registered the topology (it said 'unregistered' the first time)."""
    mine = FederationPlugins()
    mine.add(TOPOLOGY, "own", "local")
    path = _file(tmp_path, "t.yaml", {
        "machine": {"topology": {"kind": "own_dragonfly", "p": 2, "a": 4, "h": 2}},
        "workload": {"kind": "synthetic", "pattern": "uniform", "load": 0.2}})
    loaded = load_experiment(path, plugins=mine)
    run_experiment(loaded, tmp_path / "one")
    process_wide.add(TOPOLOGY, "own", "local")
    run_experiment(load_experiment(path, plugins=mine), tmp_path / "two")
    one = (tmp_path / "one" / "results.json").read_bytes()
    assert one == (tmp_path / "two" / "results.json").read_bytes()
    origin = json.loads(one)["points"][0]["components"]["topology"]
    assert (origin["plugin"], origin["source"]) == ("own", "local")


def test_a_file_without_jobs_runs_with_the_placements_plugin_disabled(tmp_path):
    """Its workload runs on every node without naming a placement: a fresh process raised a
    KeyError ("unknown placement 'all'") as a traceback, exit 1 (a process that had made
    such a point before kept the placement and ran)."""
    path = _file(tmp_path, "a.yaml", {
        "machine": {"topology": {"kind": "dragonfly", "p": 2, "a": 4, "h": 2}},
        "workload": {"kind": "synthetic", "pattern": "uniform", "load": 0.2}})
    env = {k: v for k, v in os.environ.items() if not k.startswith("FEDERATION_")}
    env["FEDERATION_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    summaries = []
    for disabled in ("", "placements"):
        out = tmp_path / f"out{disabled}"
        r = subprocess.run([sys.executable, "-c", "from federation.cli import entry; entry()",
                            "run", str(path), "--out", str(out)], capture_output=True,
                           text=True, env={**env, "FEDERATION_DISABLE_PLUGINS": disabled},
                           timeout=300)
        assert r.returncode == 0, r.stderr
        summaries.append(json.loads((out / "results.json").read_text())["points"][0]["summary"])
    assert summaries[0] == summaries[1]


def _every_first_mode(sim: object, state: object, node: int, size: int, mode: int) -> int:
    return 0


class FirstMode(Controller):
    """Every message with the routing's first mode (prepare only: never compiled here)."""

    name = "first_mode"
    Params = Params
    function = _every_first_mode


CONTROLLER = _module("first_mode_plugin", "federation_register_controllers", FirstMode)


def test_a_controller_registered_on_the_given_manager_reaches_prepare(tmp_path, process_wide):
    """docs/plugins.md's way of testing a plugin (load with a manager, then ``prepare``) for
    a routing controller: it is resolved with the point's other components; it was looked
    up in the process-wide manager when the point was prepared, and was unknown there."""
    import mode_probe

    from federation.pipeline.point import prepare

    mine = FederationPlugins()
    mine.add(mode_probe, "mode_probe")
    mine.add(CONTROLLER, "first_mode", "local")
    path = _file(tmp_path, "c.yaml", {
        "machine": {"topology": {"kind": "torus", "dims": [4], "nodes_per_router": 1},
                    "router": {"vcs": 2}},
        "routing": {"algorithm": "mode_probe"},
        "workload": {"kind": "pingpong", "sizes": [1000], "iterations": 2, "nodes": [0, 2]},
        "routing_controller": {"kind": "first_mode"}})
    point = load_experiment(path, plugins=mine).points[0]
    assert "first_mode" not in get_plugins().controllers.items
    prep = prepare(point)
    assert prep.job.controller is _every_first_mode
