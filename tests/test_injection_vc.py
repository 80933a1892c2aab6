"""``router.injection_vc`` and the ``include_self`` option of uniform traffic."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import simulate

from federation.engine.traffic import injection_vcs

QUICK = {"topology": {"kind": "dragonfly", "p": 2, "a": 4, "h": 2}, "router": {"vcs": 3}}


def test_spread_numbers_each_nodes_packets_in_turn():
    src = np.array([5, 1, 5, 5, 1, 0, 5, 5])  # packets in creation order
    vc = injection_vcs("spread", src, 3, np.random.default_rng(0))
    assert vc.tolist() == [0, 0, 1, 2, 1, 0, 0, 1]
    assert not injection_vcs("zero", src, 3, np.random.default_rng(0)).any()
    assert not injection_vcs("spread", src, 1, np.random.default_rng(0)).any()


def test_random_injection_vcs_are_seeded_and_cover_every_vc():
    src = np.repeat(np.arange(50), 40)
    a = injection_vcs("random", src, 4, np.random.default_rng(7))
    b = injection_vcs("random", src, 4, np.random.default_rng(7))
    assert (a == b).all()
    counts = np.bincount(a, minlength=4)
    assert counts.min() > 2000 / 4 * 0.8  # about 500 each


@pytest.mark.parametrize("policy", ["spread", "zero", "random"])
def test_every_policy_delivers_every_packet(policy, tmp_path):
    machine = {**QUICK, "router": {"vcs": 3, "injection_vc": policy}}
    _, raw, s, packets, ports = simulate(tmp_path, {
        "machine": machine, "routing": {"algorithm": "minimal"},
        "workload": {"kind": "synthetic", "load": 0.6},
        "stop": {"warmup": "0.5us", "measure": "2us"}, "seed": 2})
    assert (raw.pkt_deliver >= 0).all()
    assert s.packets_delivered == s.packets_generated


def test_uniform_including_self_sends_about_one_in_n_to_itself(tmp_path):
    _, raw, s, packets, _ = simulate(tmp_path, {
        "machine": QUICK, "routing": {"algorithm": "minimal"},
        "workload": {"kind": "synthetic", "load": 0.5, "include_self": True},
        "stop": {"warmup": "0us", "measure": "20us"}, "seed": 1})
    n_nodes = 2 * 4 * 9
    own = packets["src"] == packets["dst"]
    k = len(own)
    expect = k / n_nodes
    assert abs(own.sum() - expect) < 4 * np.sqrt(expect)  # binomial, 4 sigma
    assert (packets["hops"][own] == 0).all()  # up to the router and back down
    assert (raw.pkt_deliver >= 0).all()


def test_include_self_is_refused_for_other_patterns(tmp_path):
    from federation.errors import ConfigError

    with pytest.raises(ConfigError, match="include_self applies to the uniform pattern only"):
        simulate(tmp_path, {
            "machine": QUICK, "routing": {"algorithm": "minimal"},
            "workload": {"kind": "synthetic", "pattern": "group_shift", "include_self": True},
            "stop": {"warmup": "0us", "measure": "1us"}})
