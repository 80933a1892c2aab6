"""Routing controllers: ``app_aware`` follows Algorithm 1 of De Sensi et al. (SC'19) on
scripted NIC counters; controllers run in the closed loop at each send; a third-party
controller registers through its entry point and runs.

Algorithm 1 (digest aries-routing-noise.md §4.2): a running total of message bytes gates the
decision (below 4 KiB: high bias); past it, with (L, s) the latency per packet and the stall
per flit of the previous message (counters read after the send), the mode's other sample
when fresh or else L_bs = L_ad lambda, s_bs = s_ad sigma, Eq. 3/4 chooses high bias when
((p + 512)/1024) L_bs + f (s_bs + 1) < ((p + 512)/1024) L_ad + f (s_ad + 1).
"""

from __future__ import annotations

import importlib
import sys

import mode_probe
import numpy as np
import pytest
from conftest import fake_distribution, simulate

AD, BS = 0, 3  # ADAPTIVE_0, ADAPTIVE_3 among the aries modes
MODES = ["ADAPTIVE_0", "ADAPTIVE_1", "ADAPTIVE_2", "ADAPTIVE_3", "MIN_HASH", "NMIN_HASH",
         "IN_ORDER"]


@pytest.fixture(scope="module")
def step():
    from numba import njit

    from federation.plugins.controllers import app_aware

    return njit(app_aware.step.py_func)  # parts have no Python entry: a callable copy


def state(**params):
    from federation.plugins.controllers.app_aware import AppAware

    ctl = AppAware(AppAware.Params(**params))
    ctl.check(MODES)
    return ctl.state(2, MODES, 64)[:8]


def counters(flits, stalled, pkts, latency):
    return np.array([flits, stalled, pkts, latency], dtype=np.int64)


def cost(p, f, L, s):
    return (p + 512) / 1024 * L + f * (s + 1)


def test_gate_sends_with_high_bias_until_the_running_total_reaches_4KiB(step):
    st = state()
    c = counters(0, 0, 0, 0)
    got = [step(st, 0, 1000, -1, c) for _ in range(9)]
    # totals 1000 .. 4000 < 4096: high bias; 5000 >= 4096: decided (no sample: ADAPTIVE) and
    # the total starts again
    assert got == [BS, BS, BS, BS, AD, BS, BS, BS, BS]
    assert st[2][0] == 4000 and st[2][1] == 0  # node 1's total untouched


def test_eq4_decides_from_the_previous_messages_counters(step):
    """Scripted counters, 4 KiB messages (each passes the gate): p = 64, f = 320."""
    st = state(latency_ratio=0.9, stall_ratio=1.5)
    p, f = 64, 320
    # 1st send: nothing measured yet -> ADAPTIVE
    assert step(st, 0, 4096, -1, counters(0, 0, 0, 0)) == AD
    # 2nd: the 1st (ADAPTIVE) took 64 packets, 320 flits, L = 100 ns per packet, s = 2 ps per
    # flit; high bias estimated: L_bs = 90 ns, s_bs = 3 ps -> Eq. 3 says high bias
    c = counters(320, 320 * 2, 64, 64 * 100_000)
    assert cost(p, f, 90_000, 3) < cost(p, f, 100_000, 2)
    assert step(st, 0, 4096, -1, c) == BS
    # 3rd: the 2nd (high bias) measured L = 99 ns, s = 40 ps; ADAPTIVE's sample is still
    # fresh (one reading old): 0.5625 * 99000 + 320 * 41 > 0.5625 * 100000 + 320 * 3
    c = c + counters(320, 320 * 40, 64, 64 * 99_000)
    assert cost(p, f, 99_000, 40) > cost(p, f, 100_000, 2)
    assert step(st, 0, 4096, -1, c) == AD
    # the dual branch: with ADAPTIVE's new sample slower than high bias's, back to high bias
    c = c + counters(320, 320 * 60, 64, 64 * 130_000)
    assert cost(p, f, 99_000, 40) < cost(p, f, 130_000, 60)
    assert step(st, 0, 4096, -1, c) == BS
    np.testing.assert_allclose(st[5][0, [AD, BS]], [130_000, 99_000])
    np.testing.assert_allclose(st[6][0, [AD, BS]], [60, 40])


def test_samples_expire_and_are_estimated_again(step):
    """After ``expire_samples`` readings a mode's sample is dropped: the other's estimate
    from lambda and sigma decides."""
    st = state(expire_samples=2, latency_ratio=0.5, stall_ratio=1.0)
    c = counters(0, 0, 0, 0)
    assert step(st, 0, 4096, -1, c) == AD
    c = c + counters(320, 0, 64, 64 * 100_000)  # ADAPTIVE: L = 100 ns, s = 0
    assert step(st, 0, 4096, -1, c) == BS  # high bias estimated at 50 ns
    c = c + counters(320, 0, 64, 64 * 200_000)  # high bias measured 200 ns: ADAPTIVE again
    assert step(st, 0, 4096, -1, c) == AD
    # ADAPTIVE measured 300 ns; high bias's 200 ns sample is 2 readings old (still fresh):
    c = c + counters(320, 0, 64, 64 * 300_000)
    assert step(st, 0, 4096, -1, c) == BS
    # high bias measured 400 ns; ADAPTIVE's 300 ns is 2 old -> fresh -> ADAPTIVE
    c = c + counters(320, 0, 64, 64 * 400_000)
    assert step(st, 0, 4096, -1, c) == AD
    # no packet moved since: no sample, nothing ages (the paper counts samples, not reads);
    # ADAPTIVE's 300 ns is still fresh against high bias's 400 ns
    assert step(st, 0, 4096, -1, c) == AD
    # ADAPTIVE measured 900 ns: high bias's 400 ns is 2 samples old, fresh: high bias
    c = c + counters(320, 0, 64, 64 * 900_000)
    assert step(st, 0, 4096, -1, c) == BS
    # high bias measured 1000 ns: ADAPTIVE's 900 ns fresh: ADAPTIVE
    c = c + counters(320, 0, 64, 64 * 1_000_000)
    assert step(st, 0, 4096, -1, c) == AD
    # ADAPTIVE measured 100 ns: high bias's 1000 ns is 2 old: ADAPTIVE again
    c = c + counters(320, 0, 64, 64 * 100_000)
    assert step(st, 0, 4096, -1, c) == AD
    # ADAPTIVE measured 100 ns again: high bias's sample is 3 samples old, expired, estimated
    # from ADAPTIVE's as 100 x 0.5 = 50 ns: high bias
    c = c + counters(320, 0, 64, 64 * 100_000)
    assert step(st, 0, 4096, -1, c) == BS


def test_a_burst_of_sends_that_moves_nothing_keeps_the_samples(step):
    """An alltoall hands 32 sends to the NIC in one event: every send reads the same
    counters.  Those readings aged the samples, so that after ``expire_samples`` of them both
    were dropped and the rest of the burst went with ADAPTIVE (no sample) whatever they
    said; a reading in which no packet moved is no sample."""
    st = state(expire_samples=16)
    c = counters(0, 0, 0, 0)
    assert step(st, 0, 16384, -1, c) == AD  # no sample yet
    c = c + counters(320, 0, 64, 64 * 500_000)  # ADAPTIVE measured 500 ns
    burst = [step(st, 0, 16384, -1, c) for _ in range(32)]
    assert burst == [BS] * 32  # high bias estimated at 450 ns, for the whole burst


def test_a_messages_own_mode_replaces_adaptive(step):
    """Alltoall's ADAPTIVE_1 (from collective_modes) stands for ADAPTIVE everywhere."""
    st = state()
    assert step(st, 0, 8192, 1, counters(0, 0, 0, 0)) == 1


def test_app_aware_refuses_modes_the_routing_lacks():
    from federation.plugins.controllers.app_aware import AppAware

    with pytest.raises(ValueError, match=r"bias 'ADAPTIVE_3' is not a mode of the routing "
                                         r"\(its modes: A, B\)"):
        AppAware(AppAware.Params(adaptive="A")).check(["A", "B"])


# --------------------------------------------------------------------------- in the loop


@pytest.fixture
def probe():
    from federation.plugin.registry import get_plugins

    plugins = get_plugins()
    if "mode_probe" not in plugins.routings.items:
        plugins.add(mode_probe, "mode_probe")
    return plugins


def pingpong_doc(**extra):
    return {"machine": {"topology": {"kind": "torus", "dims": [4], "nodes_per_router": 1},
                        "router": {"vcs": 2}},
            "routing": {"algorithm": "mode_probe"},
            "workload": {"kind": "pingpong", "sizes": [1000], "iterations": 10,
                         "nodes": [0, 2]}, **extra}


def test_app_aware_is_called_at_each_send_in_the_loop(probe, tmp_path):
    """Rank 0 and rank 1 each send ten 1000 B messages: the gate gives high bias (GAMMA) to
    four, the fifth is decided (no fresh sample of ADAPTIVE and lambda = sigma = 1: a tie,
    ADAPTIVE = ALPHA), and again; each message's packets carry its mode."""
    doc = pingpong_doc(routing_controller={
        "kind": "app_aware", "adaptive": "ALPHA", "bias": "GAMMA", "latency_ratio": 1.0,
        "stall_ratio": 1.0, "expire_samples": 1})
    prep, raw, s, _, _ = simulate(tmp_path, doc)
    modes = prep.job.programs.prog.msg_mode[:20]
    one = [2, 2, 2, 2, 0, 2, 2, 2, 2, 0]
    assert modes.tolist() == one + one
    seen = prep.job.program.tables[1]
    packets = prep.job.programs.n_packets // 20  # per message
    assert seen[0].tolist() == [0, 2 * packets, 0, 8 * packets]  # -1, ALPHA, BETA, GAMMA
    assert seen[2].tolist() == seen[0].tolist()


def test_by_size_controller(probe, tmp_path):
    doc = pingpong_doc(routing_controller={"kind": "by_size", "threshold": "1KiB",
                                           "small": "BETA", "large": "GAMMA"})
    doc["workload"]["sizes"] = [8, 2048]
    doc["workload"]["iterations"] = 2
    prep, *_ = simulate(tmp_path, doc)
    assert prep.job.programs.prog.msg_mode[:8].tolist() == [1, 1, 2, 2] * 2
    # results.json records the controller's plugin beside the routing's
    from federation.pipeline.point import component_origins

    origins = component_origins(prep.point)
    assert (origins["controller"].name, origins["controller"].plugin) == ("by_size", "controllers")
    assert origins["controller"].source.startswith("hpc-federation ")
    assert origins["routing"].name == "mode_probe"


THIRD_PARTY = '''
from numba import njit
from federation import Params, hookimpl
from federation.plugin.components import Controller


@njit(cache=True)
def decide(sim, state, node, size, mode):
    """Odd nodes' messages take the second mode, even nodes' the first."""
    return node % 2


class Parity(Controller):
    name = "parity"
    Params = Params
    function = decide


@hookimpl
def federation_register_controllers(register):
    register(Parity)
'''


def test_a_third_party_controller_registers_and_runs(tmp_path, tmp_path_factory,
                                                     monkeypatch):
    from federation.plugin import registry

    monkeypatch.setenv("FEDERATION_DISABLE_PLUGIN_AUTOLOAD", "0")
    monkeypatch.setenv("FEDERATION_LOAD_PLUGINS", "parity")

    site = fake_distribution(tmp_path_factory.mktemp("parity") / "site", "parity",
                             THIRD_PARTY)
    sys.path.insert(0, str(site))
    importlib.invalidate_caches()
    try:
        registry.reset_plugins()
        plugins = registry.get_plugins()
        assert plugins.controllers.items["parity"].plugin == "parity"
        plugins.add(mode_probe, "mode_probe")
        doc = pingpong_doc(routing_controller={"kind": "parity"})
        doc["workload"]["nodes"] = [0, 3]
        prep, *_ = simulate(tmp_path, doc)
        assert prep.job.programs.prog.msg_mode[:20].tolist() == [0] * 10 + [1] * 10
        seen = prep.job.program.tables[1]
        assert seen[0, 1] > 0 and seen[0].sum() == seen[0, 1]
        assert seen[3, 2] > 0 and seen[3].sum() == seen[3, 2]
    finally:
        sys.path.remove(str(site))
        sys.modules.pop("federation_parity", None)
        registry.reset_plugins()


def test_docs_show_the_by_size_controller_verbatim():
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    source = (root / "plugins" / "controllers" / "by_size.py").read_text()
    assert source in (root / "docs" / "plugins.md").read_text()


def test_a_controller_keeps_the_nic_counters_the_engine_switch_turns_off(probe, tmp_path):
    """app_aware reads the NIC counters: with ``engine.nic_counters: false`` the loop still
    counts them (the same modes as with the switch on), and the result has them."""
    ctl = {"kind": "app_aware", "adaptive": "ALPHA", "bias": "GAMMA", "latency_ratio": 1.0,
           "stall_ratio": 1.0, "expire_samples": 1}
    (tmp_path / "on").mkdir()
    (tmp_path / "off").mkdir()
    prep_on, _, s_on, _, _ = simulate(tmp_path / "on", pingpong_doc(routing_controller=ctl))
    prep_off, _, s_off, _, _ = simulate(tmp_path / "off", pingpong_doc(
        routing_controller=ctl, engine={"kind": "native", "nic_counters": False}))
    assert s_off.nics is not None and s_off.nics == s_on.nics
    assert (prep_off.job.programs.prog.msg_mode == prep_on.job.programs.prog.msg_mode).all()
