"""``minimal``'s ``vc_step: on`` (BookSim2's VC plan: a VC-bumping hop itself travels on the
level it raises) and the VCs it needs: one more than the most bumping hops on a route.

On a dragonfly that is its one global hop, so 2 VCs either way.  On a graph routed with VC =
hop index (a circulant ring of 8 routers: every cable port bumps, diameter 4) the last hop of
a 4-hop route travels on VC 4: 5 VCs, where ``vc_step: after`` needs 4.  The routing once
declared the topology's 4 there, and the loop refused the run only when a packet reached VC 4
("the routing's declared VC count is wrong"), after it had started.
"""

from __future__ import annotations

import pytest
import yaml
from conftest import one_error, run_cli, simulate

from federation.network.routes import most_vc_bumps

RING = {"topology": {"kind": "circulant", "n": 8, "jumps": [1]}}
DRAGONFLY = {"topology": {"kind": "dragonfly", "p": 2, "a": 4, "h": 2}}


def doc(machine: dict, vcs: int, step: str) -> dict:
    return {"machine": {**machine, "router": {"vcs": vcs}},
            "routing": {"algorithm": "minimal", "vc_step": step},
            "workload": {"kind": "synthetic", "pattern": "uniform", "load": 0.3},
            "stop": {"warmup": "0ns", "measure": "2us"}}


@pytest.mark.parametrize(("machine", "step", "bumps", "vcs"), [
    (RING, "after", 4, 4), (RING, "on", 4, 5),
    (DRAGONFLY, "after", 1, 2), (DRAGONFLY, "on", 1, 2)])
def test_the_vcs_needed_are_one_more_than_the_bumps_on_a_route(tmp_path, machine, step,
                                                                 bumps, vcs):
    prep, _, summary, _, _ = simulate(tmp_path, doc(machine, vcs, step))
    tables = prep.job.tables
    assert most_vc_bumps(prep.job.network, tables) == bumps
    assert tables.vcs_required == vcs
    assert summary.packets_delivered == summary.packets_generated > 40


def test_one_vc_short_is_refused_before_the_run(tmp_path):
    path = tmp_path / "e.yaml"
    path.write_text(yaml.safe_dump(doc(RING, 4, "on")))
    line = one_error(run_cli("run", str(path), "--out", str(tmp_path / "out"), cwd=tmp_path))
    assert "machine.router.vcs" in line and "needs 5 virtual channels" in line
    assert not (tmp_path / "out").exists()


def test_vc_step_on_unquoted_is_on(tmp_path):
    """YAML 1.1 reads the value ``on`` as ``true``: the documented ``vc_step: on`` was refused
    with "Input should be 'after' or 'on'"."""
    from federation.pipeline.load import load_experiment

    (tmp_path / "e.yaml").write_text(
        "machine: {topology: {kind: dragonfly, p: 1, a: 2, h: 1}}\n"
        "routing: {algorithm: minimal, vc_step: on}\n")
    point = load_experiment(tmp_path / "e.yaml").points[0]
    assert point.routing.params.vc_step == "on"
