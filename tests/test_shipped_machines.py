"""Every shipped machine file loads, builds, validates, and carries a short uniform-traffic run
on the native engine with minimal routing, delivering every packet.

The files are globbed when the tests are collected, so a machine file added to
``schemas/machines/`` is tested without touching this module.  The run is short (0.2 us warm-up,
1 us measured, load 0.1) so that even the 8k-node machines take seconds.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from federation.network.metrics import topology_metrics
from federation.pipeline.load import load_experiment, load_machine
from federation.pipeline.run import run_experiment

MACHINES_DIR = Path(__file__).resolve().parent.parent / "schemas" / "machines"
MACHINES = sorted(MACHINES_DIR.glob("*.yaml"))


def test_machines_are_shipped():
    assert any(p.name == "quickstart-dragonfly.yaml" for p in MACHINES)


@pytest.mark.parametrize("path", MACHINES, ids=[p.name for p in MACHINES])
def test_machine_builds_and_validates(path):
    rm = load_machine(path)
    net = rm.topology.build()
    net.validate()
    m = topology_metrics(net)
    assert m.routers == net.n_routers > 0
    assert m.nodes == net.n_nodes > 0
    assert m.ports_used.max <= m.radix.max
    assert sum(m.links.values()) == net.n_links + net.n_nodes


@pytest.mark.parametrize("path", MACHINES, ids=[p.name for p in MACHINES])
def test_short_uniform_run_delivers_every_packet(path, tmp_path):
    exp = {
        "name": f"smoke-{path.stem}",
        "machine": str(path.resolve()),
        "routing": {"algorithm": "minimal"},
        "workload": {"kind": "synthetic", "pattern": "uniform", "load": 0.1},
        "engine": {"kind": "native"},
        "stop": {"warmup": "0.2us", "measure": "1us"},
        "seed": 1,
    }
    exp_path = tmp_path / "exp.yaml"
    exp_path.write_text(yaml.safe_dump(exp))
    s = run_experiment(load_experiment(exp_path)).points[0].summary
    assert s.packets_generated > 0
    assert s.packets_delivered == s.packets_generated
    assert s.bytes_delivered == s.bytes_injected
