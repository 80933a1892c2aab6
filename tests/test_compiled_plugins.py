"""Routings and arbiters compiled into the event loop by third parties.

``tests/distributions/federation-adaptive`` is pip-installed into a private folder, as a user
would, and its ``most_credit`` routing and ``random_pick`` arbiter run from the CLI.  Faulty
routings (fake distributions) must end with one message naming the plugin, never a crash or
a hang.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import fake_distribution, one_error, pip_build_flags

DIST = Path(__file__).resolve().parent / "distributions" / "federation-adaptive"


def cli(*args: str, sites: list[Path], cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FEDERATION_")}
    env["PYTHONPATH"] = os.pathsep.join(str(s) for s in sites)
    env["FEDERATION_DISABLE_PLUGIN_AUTOLOAD"] = "0"
    return subprocess.run([sys.executable, "-c", "from federation.cli import entry; entry()",
                           *args], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=900)


@pytest.fixture(scope="module")
def adaptive_site(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("adaptive")
    src = tmp / "federation-adaptive"
    shutil.copytree(DIST, src, ignore=shutil.ignore_patterns("build", "*.egg-info",
                                                             "__pycache__"))
    site = tmp / "site"
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q",
                        "--disable-pip-version-check", "--no-deps", *pip_build_flags(),
                        "--target", str(site), str(src)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    return site


def test_third_party_adaptive_routing_and_arbiter_run_reproducibly(adaptive_site, tmp_path):
    exp = DIST / "adaptive-torus.yaml"
    docs = []
    for k in range(2):
        out = tmp_path / f"out{k}"
        r = cli("run", str(exp), "--out", str(out), sites=[adaptive_site], cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        docs.append((out / "results.json").read_bytes())
    assert docs[0] == docs[1]  # the arbiter's random stream is seeded
    res = json.loads(docs[0])
    point = res["points"][0]
    s = point["summary"]
    assert s["packets_delivered"] == s["packets_generated"] > 100
    assert s["bytes_delivered"] == s["bytes_injected"]
    # minimal on a 4x4 torus: at most 4 hops, mean 2 hops per uniform packet (2 x 4/4 ... )
    assert 0 < s["mean_hops"] <= 4
    assert s["nonminimal_fraction"] == 0
    resolved = point["resolved"]
    assert resolved["routing"]["algorithm"] == "most_credit"
    assert resolved["machine"]["router"]["arbiter"]["kind"] == "random_pick"
    # ... and results.json names the plugin behind the arbiter as behind the routing
    comps = point["components"]
    assert comps["arbiter"]["name"] == "random_pick"
    assert comps["arbiter"]["source"] == comps["routing"]["source"]
    assert not comps["arbiter"]["source"].startswith("hpc-federation")


FAULTY = '''
import numpy as np
from numba import njit
from federation import Params, Routing, hookimpl
from federation.plugin.components import RoutingProgram
from federation.engine import api


@njit(cache=True)
def route(sim, tables, r, ip, pk):
    mode = tables[0][0]
    first, end = api.router_ports(sim, r)
    if mode == 0:
        return end, 0  # the first port of the next router
    if mode == 1:
        return end - 1, 99  # a VC far beyond router.vcs
    if mode == 2:
        return -1, 0  # no route
    # mode 3: always the last cable port: packets go round forever
    return end - 1, 0


@njit(cache=True)
def inject(sim, tables, node, pk):
    return


@njit(cache=True)
def untyped(sim, tables, r, ip, pk):
    return {"a": [1, "x"]}, 0  # numba cannot type this


class Faulty(Routing):
    name = "faulty"

    class Params(Params):
        mode: int = 0

    def tables(self, network, topology, machine):
        return topology.minimal_routes(network)

    def program(self, network, topology, machine, tables):
        fn = untyped if self.params.mode == 9 else route
        return RoutingProgram(route=fn, inject=inject, vcs_required=1,
                              tables=(np.array([self.params.mode], dtype=np.int64),))


@hookimpl
def federation_register_routings(register):
    register(Faulty)
'''


@pytest.fixture(scope="module")
def faulty_site(tmp_path_factory) -> Path:
    return fake_distribution(tmp_path_factory.mktemp("faulty") / "site", "faulty", FAULTY)


@pytest.mark.parametrize("mode, words", [
    (0, "which is not one of router"),
    (1, "was given VC 99, outside 0..1"),
    (2, "got no output port (-1)"),
    (3, "without arriving: the routing sends packets in circles"),
    (9, "do not compile inside the engine's loop"),
])
def test_a_faulty_routing_ends_with_one_message_naming_it(faulty_site, tmp_path, mode, words):
    (tmp_path / "e.yaml").write_text(textwrap.dedent(f"""
        machine:
          topology: {{kind: torus, dims: [4], nodes_per_router: 1}}
          router: {{vcs: 2}}
        routing: {{algorithm: faulty, mode: {mode}}}
        workload: {{kind: messages, messages: [{{at: 0ns, src: 0, dst: 2, size: 64}}]}}
        stop: {{warmup: 0ns, measure: 1us}}
        """))
    # the faults are the engine's to catch: the routing declares no VC plan, so the proof
    # before the run is switched off (tests/test_deadlock.py covers it)
    r = cli("run", str(tmp_path / "e.yaml"), "--out", str(tmp_path / "out"),
            "--no-deadlock-check", sites=[faulty_site], cwd=tmp_path)
    line = one_error(r)
    assert "routing 'faulty' (plugin faulty)" in line, line
    assert words in line, line
    assert not (tmp_path / "out").exists()  # nothing half-written


def test_docs_show_the_adaptive_example_verbatim():
    """The docs show the distribution's module as it is, in today's import paths (the
    distribution itself keeps the paths of release 0.1: it proves they still work)."""
    from federation._moved import MOVED

    source = (DIST / "federation_adaptive.py").read_text()
    for old in sorted(MOVED, key=len, reverse=True):
        source = re.sub(rf"(?<![\w.]){re.escape(old)}(?!\w)", MOVED[old], source)
    docs = (Path(__file__).resolve().parent.parent / "docs" / "plugins.md").read_text()
    assert f"```python\n{source}```" in docs


def test_a_compiled_routing_is_held_to_its_own_vc_count(faulty_site, tmp_path):
    """``RoutingProgram.vcs_required`` is what is checked (docs/plugins.md): the routing's
    tables' count was checked too, so a routing declaring 1 VC beside tables of 2 (a torus's
    dateline rule, which it does not follow) was refused at ``router.vcs: 1``, and with QoS
    classes no ``router.vcs`` passed both checks.  Mode 3 on a ring of three routers takes
    router 0's last cable port, to router 2, the destination, on VC 0."""
    (tmp_path / "e.yaml").write_text(textwrap.dedent("""
        machine:
          topology: {kind: torus, dims: [3], nodes_per_router: 1}
          router: {vcs: 1}
        routing: {algorithm: faulty, mode: 3}
        workload: {kind: messages, messages: [{at: 0ns, src: 0, dst: 2, size: 64}]}
        stop: {warmup: 0ns, measure: 1us}
        """))
    r = cli("run", str(tmp_path / "e.yaml"), "--out", str(tmp_path / "out"),
            "--no-deadlock-check", sites=[faulty_site], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    s = json.loads((tmp_path / "out" / "results.json").read_text())["points"][0]["summary"]
    assert s["packets_delivered"] == 1
