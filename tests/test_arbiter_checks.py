"""An arbiter's answers are checked by the loop (issue 22, item 4).

A third-party arbiter, installed as a plugin author would (``federation-picky``), answers
wrongly on purpose in the ways reported: it ignores credit (which silently over-filled the
buffers downstream), gives a wrong ``prev`` (which was reported as a deadlock, blaming no
one), or names a queue that does not exist (which crashed the process), or one that is not
waiting for the port.  Each run stops with one message naming the arbiter and its plugin, the
port, and what was wrong; nothing is written.  Its well-behaved mode, written with the
accessors of ``federation.engine.api`` only, runs; ``engine: {kind: native, check_arbiter:
false}`` compiles the check out (the faulty answer then goes through).

One arbiter function with its mode in its state, so every mode shares one compiled loop.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import fake_distribution, one_error

PICKY = '''
import numpy as np
from numba import njit
from federation import Params, hookimpl
from federation.components import Arbiter
from federation.engine import api

MODES = {"fair": 0, "credit": 1, "prev": 2, "nowhere": 3, "stranger": 4, "idle": 5}


@njit(cache=True)
def picky(sim, state, o):
    mode = state[0][0]
    first = api.port_requests(sim, o)
    if first < 0:
        return -1, -1
    if mode == 1:  # ignores credit: always the oldest request
        return first, -1
    if mode == 2:  # the second request, claiming it is the first
        second = api.request_next(sim, first)
        if second >= 0:
            return second, -1
    if mode == 3:  # a queue id far past the arrays
        return 1 << 40, -1
    if mode == 4:  # the last queue id: a NIC's input, never waiting at a router
        return state[1][0] - 1, -1
    if mode == 5:  # never sends (lawful: -1 lets the port wait; but nothing wakes it)
        return -1, -1
    # fair: by class (0 first), then by age (the earliest created), among those with credit
    best, best_prev, best_key = -1, -1, np.int64(1) << 62
    qi, prev = first, -1
    while qi >= 0:
        if api.request_credit_ok(sim, o, qi):
            pk = api.request_head(sim, qi)
            key = (api.pkt_class(sim, pk) << 50) + api.pkt_created(sim, pk)
            if key < best_key:
                best, best_prev, best_key = qi, prev, key
        prev, qi = qi, api.request_next(sim, qi)
    return best, best_prev


class Picky(Arbiter):
    name = "picky"
    function = picky

    class Params(Params):
        mode: str = "fair"

    def state(self, network, n_vcs):
        return (np.array([MODES[self.params.mode]], dtype=np.int64),
                np.array([network.ports.n_ports * n_vcs], dtype=np.int64))


@hookimpl
def federation_register_arbiters(register):
    register(Picky)
'''


@pytest.fixture(scope="module")
def picky_site(tmp_path_factory) -> Path:
    return fake_distribution(tmp_path_factory.mktemp("picky") / "site", "picky", PICKY)


def run(site: Path, tmp_path: Path, mode: str, engine: str = "") -> subprocess.CompletedProcess:
    """16 nodes send 4 KiB each to node 0 at once on a 72-node dragonfly: the ports towards
    node 0 hold several requests, and run out of credit."""
    msgs = ", ".join(f"{{at: 0ns, src: {s}, dst: 0, size: 4KiB}}" for s in range(8, 72, 4))
    (tmp_path / "e.yaml").write_text(textwrap.dedent(f"""
        machine:
          topology: {{kind: dragonfly, p: 2, a: 4, h: 2}}
          router: {{arbiter: {{kind: picky, mode: {mode}}}}}
        routing: {{algorithm: minimal}}
        workload: {{kind: messages, messages: [{msgs}]}}
        stop: {{warmup: 0ns, measure: 1us}}
        {engine}
        """))
    env = {k: v for k, v in os.environ.items() if not k.startswith("FEDERATION_")}
    env["PYTHONPATH"] = str(site)
    env["FEDERATION_DISABLE_PLUGIN_AUTOLOAD"] = "0"
    return subprocess.run([sys.executable, "-c", "from federation.cli import entry; entry()",
                           "run", str(tmp_path / "e.yaml"), "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=900)


@pytest.mark.parametrize("mode, words", [
    ("credit", "needs 512 B of credit on VC 1 and the port has 0 B: an arbiter must pick only"),
    ("prev", "prev must be the request before queue"),
    ("nowhere", f"queue {1 << 40} does not exist (queue ids are input port x 3 + VC"),
    ("stranger", "is not waiting for this port (its requests: "),
])
def test_a_wrong_answer_stops_the_run_naming_the_arbiter(picky_site, tmp_path, mode, words):
    line = one_error(run(picky_site, tmp_path, mode))
    assert "arbiter 'picky' (plugin picky) answered (queue " in line, line
    assert " for output router " in line, line  # the port, named as the user's
    assert words in line, line
    assert "routing 'minimal'" not in line  # the arbiter alone is blamed
    assert not (tmp_path / "out").exists()  # nothing half-written


def test_an_arbiter_that_never_sends_is_named_by_the_deadlock(picky_site, tmp_path):
    """-1 is a lawful answer (the port waits), but a port that holds a request with credit
    waits for nothing: the run ends in a deadlock whose message blames the arbiter."""
    line = one_error(run(picky_site, tmp_path, "idle"))
    assert ": arbiter 'picky' (plugin picky) sent nothing from " in line, line
    assert "output ports although a request there had credit (router " in line, line
    assert "; deadlock at t=" in line and "undelivered" in line, line


def test_an_arbiter_written_with_the_accessors_runs(picky_site, tmp_path):
    r = run(picky_site, tmp_path, "fair")
    assert r.returncode == 0, r.stderr
    s = json.loads((tmp_path / "out" / "results.json").read_text())["points"][0]["summary"]
    assert s["packets_delivered"] == s["packets_generated"] == 16 * 8
    assert s["bytes_delivered"] == 16 * 4096


def test_the_switch_compiles_the_check_out(picky_site, tmp_path):
    """Unchecked, the answer without credit goes through: the run ends, with a buffer
    filled beyond its size (what the check exists to prevent)."""
    r = run(picky_site, tmp_path, "credit",
            engine="engine: {kind: native, check_arbiter: false}")
    assert r.returncode == 0, r.stderr
    doc = json.loads((tmp_path / "out" / "results.json").read_text())
    point = doc["points"][0]
    assert point["resolved"]["engine"]["check_arbiter"] is False
    import pyarrow.parquet as pq

    ports = pq.read_table(next((tmp_path / "out").rglob("ports-*.parquet"))).to_pydict()
    assert max(ports["peak_input_occupancy_bytes"]) > 8192  # 8 KiB per VC, over-filled


def test_a_buffer_deadlock_does_not_blame_the_arbiter():
    """A real deadlock (a 4-router ring routed clockwise on one VC, buffers of one packet):
    every stuck output waits for credit, so the message names ports, not the arbiter."""
    import numpy as np

    from federation.engine.native import LinkFigures, NativeRun, Packets, run_native
    from federation.errors import SimulationError
    from federation.network import NetworkBuilder
    from federation.network.routes import shortest_path_routes

    b = NetworkBuilder(["ring"])
    for r in b.add_routers(4, radix=4):
        b.attach_nodes(r, 1)
        b.add_link(r, (r + 1) % 4, "ring")
    net = b.build()
    t = shortest_path_routes(net)
    pt = net.ports
    nbr = {(int(pt.port_router[p]), int(pt.port_router[pt.port_peer[p]])): p
           for p in range(pt.n_router_ports) if pt.port_link[p] >= 0}
    for r in range(4):
        for d in range(4):
            if r != d:
                t.gnext[r, d] = nbr[(r, (r + 1) % 4)]
    t.port_vc_bump[:] = 0
    n = 400
    src = np.arange(n) % 4
    packets = Packets(time_ps=np.zeros(n, np.int64), src=src, dst=(src + 2) % 4,
                      size=np.full(n, 512, np.int64), msg=np.arange(n), via=np.full(n, -1))
    fig = LinkFigures(bandwidth=5.12e9, latency=1e-8, buffer=512)
    job = NativeRun(net, {"terminal": fig, "ring": fig}, 5.12e9, 5e-8, 1, t, packets,
                    owner="routing 'minimal' (plugin native) with arbiter 'oldest_first' "
                    "(plugin native)")
    with pytest.raises(SimulationError) as e:
        run_native(job)
    assert str(e.value).startswith("deadlock at t="), str(e.value)
    assert "arbiter" not in str(e.value)
