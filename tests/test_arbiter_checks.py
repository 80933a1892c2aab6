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
from hypothesis import given, settings
from hypothesis import strategies as st

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


def _request_lists(ops: list[tuple[int, int]], n_queues: int, n_ports: int, monkeypatch):
    """Request lists after ``ops`` (``(queue, port)``: the queue posts a request for the port
    if it has none, else the request is served), kept by the loop's own ``post_request`` and
    ``take_request`` run as Python; returns ``(sim, lists)`` with ``lists[o]`` in order."""
    from types import SimpleNamespace

    import numpy as np

    from federation.engine import router as R

    monkeypatch.setattr(R, "credit_return", lambda *a: None)
    monkeypatch.setattr(R, "push", lambda *a: 0)
    i64 = np.int64
    sim = SimpleNamespace(
        req_head=np.full(n_ports, -1, i64), req_tail=np.full(n_ports, -1, i64),
        req_next=np.full(n_queues, -1, i64), req_count=np.zeros(n_ports, i64),
        n_vcs=i64(1),
        q_head=np.arange(n_queues, dtype=np.int32), q_tail=np.arange(n_queues, dtype=np.int32),
        ps=np.zeros((n_queues, 16), np.int32), port_ser=np.ones(n_ports),
        cut_through=False, pkt_tail=np.zeros(1, i64), occ=np.zeros(n_queues, i64),
        port_peer=np.zeros(n_queues, i64), port_lat=np.zeros(n_queues, i64),
        port_router=np.full(n_queues, -1, i64), sc=np.zeros(64, i64),
        credits=np.full(n_ports, 1 << 20, i64))
    sim.ps[:, 0] = -1  # P_NEXT: one packet per queue, re-posted as a fresh head
    lists: list[list[int]] = [[] for _ in range(n_ports)]
    for q, o in ops:
        held = next((p for p in range(n_ports) if q in lists[p]), None)
        if held is None:
            R.post_request.py_func(sim, q, o)
            lists[o].append(q)
        else:
            k = lists[held].index(q)
            R.take_request.py_func(sim, held, q, lists[held][k - 1] if k else -1, i64(0))
            lists[held].remove(q)
            sim.q_head[q] = q  # its next packet
    return sim, lists


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 1)), max_size=40))
def test_the_check_takes_exactly_the_lawful_answers(ops):
    """Every ``(queue, prev)`` answer for either port, after any sequence of requests posted
    and served (served ones leave stale successor links behind): the check accepts
    exactly the answers whose ``prev`` is the queue's predecessor in the port's list."""
    from federation.engine import arbiter_check as A

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(A, "requests_reach", A.requests_reach.py_func)  # parts run as Python
        sim, lists = _request_lists(ops, 6, 2, mp)
        for o in range(2):
            assert [int(q) for q in _walk(sim, o)] == lists[o]
            for qi in range(-1, 7):
                for prev in range(-1, 7):
                    lawful = qi == -1 or (qi in lists[o] and prev == (
                        lists[o][lists[o].index(qi) - 1] if lists[o].index(qi) else -1))
                    got = A.arbiter_answer_ok.py_func(sim, o, qi, prev)
                    assert (got == 0) == lawful, (o, qi, prev, lists)


def _walk(sim, o: int) -> list[int]:
    out, q = [], int(sim.req_head[o])
    while q >= 0:
        out.append(q)
        q = int(sim.req_next[q])
    return out
