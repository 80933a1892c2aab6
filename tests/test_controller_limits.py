"""Routing controllers' parameters: every accepted value runs correctly, every other one is
refused before the run.

* ``app_aware`` told a mode never sampled by its age (a sentinel) compared with
  ``expire_samples``: from ``expire_samples >= 2**40`` such a mode counted as sampled with
  ``L = s = 0`` and the decisions changed (fuzz 43b/3).  It is now told apart by the sentinel
  itself, whatever ``expire_samples``.
* Parameters past int64 (``by_size.threshold``, ``app_aware.gate``, ``packet_bytes``,
  ``flits_per_packet``, ``expire_samples``) passed ``validate`` and the run died in the
  controller's ``state()`` with OverflowError, a sweep's first point already written (fuzz
  43b/4).  They are bounded in their Params, and the arithmetic cannot wrap for any accepted
  value.
"""

from __future__ import annotations

import collections

import numpy as np
import pytest
from conftest import one_error, run_cli, simulate
from test_controller import MODES, counters, state

AD, BS = 0, 3  # ADAPTIVE_0, ADAPTIVE_3 among the aries modes
LIMIT = "Input should be less than or equal to 1000000000000000000"


@pytest.fixture(scope="module")
def app_aware():
    from federation.plugins.controllers import app_aware

    return app_aware


@pytest.fixture(scope="module")
def step(app_aware):
    from numba import njit

    return njit(app_aware.step.py_func)  # parts have no Python entry: a callable copy


@pytest.fixture(scope="module")
def estimate(app_aware):
    from numba import njit

    return njit(app_aware.estimate.py_func)


# --------------------------------------------------------------------------- never sampled


@pytest.mark.parametrize("expire", [1, 16, 2**40, 2**40 + 1, 2**62, 2**63 - 1])
def test_a_mode_never_sampled_is_not_sampled_whatever_expire(estimate, app_aware, expire):
    """The sentinel age itself, and any ``expire`` (even past the Params' bound, as a
    third-party caller might pass): no sample at all, or the missing one estimated."""
    age = np.full((1, 2), app_aware.NEVER, dtype=np.int64)
    lat = np.zeros((1, 2))
    stall = np.zeros((1, 2))
    assert estimate(lat, stall, age, 0, 0, 1, expire, 0.5, 2.0)[4] is False
    age[0, 0], lat[0, 0], stall[0, 0] = 1, 100.0, 3.0
    assert estimate(lat, stall, age, 0, 0, 1, expire, 0.5, 2.0) == (100.0, 3.0, 50.0, 6.0, True)
    age[0, 0], age[0, 1], lat[0, 1], stall[0, 1] = app_aware.NEVER, 1, 80.0, 4.0
    assert estimate(lat, stall, age, 0, 0, 1, expire, 0.5, 2.0) == (160.0, 2.0, 80.0, 4.0, True)


@pytest.mark.parametrize("expire", [16, 10**9, 2**40, 2 * 10**12, 10**18])
def test_expire_samples_does_not_decide_for_a_mode_never_sampled(step, expire):
    """Only ADAPTIVE is ever measured (L = 100 ns, s = 2 ps); high bias is estimated at
    lambda = 2 (200 ns): ADAPTIVE, whatever ``expire_samples``.  Before, from 2**40 on, high
    bias counted as measured at L = s = 0 and won."""
    st = state(latency_ratio=2.0, expire_samples=expire)
    c = counters(0, 0, 0, 0)
    assert step(st, 0, 4096, -1, c) == AD
    for _ in range(5):
        c = c + counters(320, 640, 64, 64 * 100_000)
        assert step(st, 0, 4096, -1, c) == AD


def aries_doc(expire: int) -> dict:
    """The fuzz 43b/3 experiment: a pingpong of 16 KiB messages over a small dragonfly."""
    return {"machine": {"topology": {"kind": "dragonfly", "p": 2, "a": 4, "h": 2},
                        "router": {"vcs": 4}},
            "routing": {"algorithm": "aries"},
            "workload": {"kind": "pingpong", "sizes": ["16KiB"], "iterations": 10,
                         "nodes": [0, 15]},
            "routing_controller": {"kind": "app_aware", "latency_ratio": 2,
                                   "expire_samples": expire},
            "seed": 1}


def test_the_reproducers_runs_agree(tmp_path):
    """expire_samples 1e9 and 2e12 (and the bound, 1e18): the same 20 messages, all with
    ADAPTIVE_0 (before: 18 with ADAPTIVE_3 at 2e12), and the same completion."""
    done = {}
    for expire in (10**9, 2 * 10**12, 10**18):
        (tmp_path / str(expire)).mkdir()
        prep, _, summary, _, _ = simulate(tmp_path / str(expire), aries_doc(expire))
        modes = prep.job.programs.prog.msg_mode[:prep.job.programs.msg_src.shape[0]]
        assert collections.Counter(modes.tolist()) == {AD: 20}
        done[expire] = summary.simulated_time_ns
    assert len(set(done.values())) == 1


# --------------------------------------------------------------------------- no wrap


def test_the_gate_does_not_wrap_past_int64(step, app_aware):
    """A running total near the bound plus a message near int64: decided (the total reached
    the gate), not wrapped negative and sent with high bias."""
    st = state(gate=app_aware.MAX_COUNT)
    assert step(st, 0, app_aware.MAX_COUNT - 1, -1, counters(0, 0, 0, 0)) == BS
    assert st[2][0] == app_aware.MAX_COUNT - 1
    assert step(st, 0, 2**63 - 10, -1, counters(0, 0, 0, 0)) == AD  # no sample: ADAPTIVE
    assert st[2][0] == 0


def test_flits_times_packets_past_int64_does_not_flip_eq3(step):
    """64 packets x 2**57 flits is 2**63: in int64 it wrapped to -2**63 and Eq. 3 chose the
    mode that stalls more.  With s_bs = 1.5 s_ad the stall term decides: ADAPTIVE."""
    st = state(flits_per_packet=2**57)
    c = counters(0, 0, 0, 0)
    assert step(st, 0, 4096, -1, c) == AD
    c = c + counters(320, 640, 64, 64 * 100_000)
    assert step(st, 0, 4096, -1, c) == AD


def test_a_packet_count_past_int64_in_the_sum_does_not_wrap(step):
    """p is a rounded-up quotient: (size + packet - 1) wrapped for a size near int64.  The
    answer is Eq. 3's in exact arithmetic."""
    from fractions import Fraction

    size = 2**63 - 2
    st = state(packet_bytes="1KiB", gate=1, flits_per_packet=40)
    c = counters(0, 0, 0, 0)
    assert step(st, 0, size, -1, c) == AD
    c = c + counters(320, 640, 64, 64 * 100_000)  # ADAPTIVE: L = 100 ns, s = 2 ps
    p = -(-size // 1024)
    f = 40 * p
    w = Fraction(p + 512, 1024)
    bs = w * 90_000 + f * (Fraction(3) + 1)  # estimated: lambda 0.9, sigma 1.5
    ad = w * 100_000 + f * (2 + 1)
    assert step(st, 0, size, -1, c) == (BS if bs < ad else AD) == AD
    st = state(packet_bytes="1KiB", gate=1, flits_per_packet=5)
    assert step(st, 0, size, -1, counters(0, 0, 0, 0)) == AD
    f = 5 * p
    bs, ad = w * 90_000 + f * 4, w * 100_000 + f * 3
    assert step(st, 0, size, -1, c) == (BS if bs < ad else AD) == BS


def test_largest_values_build_their_state():
    from federation.plugins.controllers.app_aware import MAX_COUNT
    from federation.plugins.controllers.by_size import BySize

    st = state(gate=MAX_COUNT, expire_samples=MAX_COUNT, flits_per_packet=MAX_COUNT,
               packet_bytes=MAX_COUNT)
    assert st[0].tolist() == [AD, BS, MAX_COUNT, MAX_COUNT, MAX_COUNT, MAX_COUNT]
    ctl = BySize(BySize.Params(threshold=1e18))
    assert ctl.state(2, MODES, 64)[0].tolist() == [10**18, BS, AD]


# --------------------------------------------------------------------------- refused


MACHINE = "topology: {kind: dragonfly, p: 2, a: 4, h: 2}\nrouter: {vcs: 4}\n"
EXPERIMENT = """machine: m.yaml
routing: {algorithm: aries}
workload: {kind: pingpong, sizes: [16KiB], iterations: 2, nodes: [0, 15]}
routing_controller: {kind: %s, %s: %s}
"""


@pytest.mark.parametrize("kind, field, value, words", [
    ("by_size", "threshold", "1e30", LIMIT),
    ("by_size", "threshold", "2000000TB", LIMIT),
    ("app_aware", "gate", "1e30", LIMIT),
    ("app_aware", "gate", "1.1e18", LIMIT),
    ("app_aware", "packet_bytes", "1e30", LIMIT),
    ("app_aware", "packet_bytes", "2000000TB", LIMIT),
    ("app_aware", "flits_per_packet", "1e20", LIMIT),
    ("app_aware", "flits_per_packet", "100000000000000000000", LIMIT),
    ("app_aware", "expire_samples", "1e20", LIMIT),
    ("app_aware", "expire_samples", "1000000000000000001", LIMIT),
])
def test_too_large_is_refused_by_validate_and_run(tmp_path, kind, field, value, words):
    (tmp_path / "m.yaml").write_text(MACHINE)
    (tmp_path / "e.yaml").write_text(EXPERIMENT % (kind, field, value))
    want = f"error: e.yaml: routing_controller.{field}: {words}"
    assert one_error(run_cli("validate", "e.yaml", cwd=tmp_path)) == want
    assert one_error(run_cli("run", "e.yaml", "--out", "out", cwd=tmp_path)) == want
    assert not (tmp_path / "out").exists()


def test_a_sweep_with_one_bad_point_writes_nothing(tmp_path):
    """fuzz 43b/4: point 0 (4 KiB) ran and was kept before point 1 (1e30) died."""
    (tmp_path / "m.yaml").write_text(MACHINE)
    (tmp_path / "e.yaml").write_text(
        EXPERIMENT % ("by_size", "threshold", "4KiB")
        + "sweep:\n  routing_controller.threshold: [4KiB, 1e30]\n")
    want = (f"error: e.yaml: sweep.routing_controller.threshold: {LIMIT} (sweep point 1: "
            "routing_controller.threshold=1e+30)")
    assert one_error(run_cli("validate", "e.yaml", cwd=tmp_path)) == want
    assert one_error(run_cli("run", "e.yaml", "--out", "out", cwd=tmp_path)) == want
    assert not (tmp_path / "out").exists()


def test_the_bound_itself_is_accepted(tmp_path):
    (tmp_path / "m.yaml").write_text(MACHINE)
    (tmp_path / "e.yaml").write_text(EXPERIMENT % ("app_aware", "expire_samples", "1e18"))
    r = run_cli("validate", "e.yaml", cwd=tmp_path)
    assert r.returncode == 0, r.stderr


# --------------------------------------------------------------------------- extreme ratios


@pytest.fixture(scope="module")
def select(app_aware):
    from numba import njit

    return njit(app_aware.select.py_func)


def one_sample(app_aware, which, lat, stall):
    """``(lat, stall, age)`` of one node with a fresh sample of ``which`` (AD or BS) only."""
    age = np.full((1, len(MODES)), app_aware.NEVER, dtype=np.int64)
    lats, stalls = np.zeros((1, len(MODES))), np.zeros((1, len(MODES)))
    age[0, which], lats[0, which], stalls[0, which] = 1, lat, stall
    return lats, stalls, age


def exact_choice(which, lam, sig, lat, stall, size, packet=64, flits=5):
    """Eq. 3 in exact arithmetic (the missing mode's sample estimated by lambda and sigma)."""
    from fractions import Fraction as F

    p = -(-size // packet)
    w, f = F(p + 512, 1024), F(flits * p)
    if which == AD:
        l_ad, s_ad = F(lat), F(stall)
        l_bs, s_bs = l_ad * F(lam), s_ad * F(sig)
    else:
        l_bs, s_bs = F(lat), F(stall)
        l_ad, s_ad = l_bs / F(lam), s_bs / F(sig)
    return BS if w * l_bs + f * (s_bs + 1) < w * l_ad + f * (s_ad + 1) else AD


def test_a_zero_byte_message_with_an_estimate_past_floats_is_not_nan(select, app_aware):
    """fuzz: stall_ratio 1e308 made s_bs inf, and a 0 B message's f = 0 made its stall term
    0 x inf = NaN; NaN < x is false, so ADAPTIVE, though high bias is 10% faster (lambda 0.9)
    and a 0 B message has no flit to stall.  The same with s_ad inf (stall_ratio 1e-320)."""
    st = state(latency_ratio=0.9, stall_ratio=1e308)
    lat, stall, age = one_sample(app_aware, AD, 100_000.0, 2.0)
    assert select(st[0], st[1], lat, stall, age, 0, 0, AD, BS) == BS
    assert select(st[0], st[1], lat, stall, age, 0, 1, AD, BS) == AD  # 5 flits: s_bs wins
    st = state(latency_ratio=0.9, stall_ratio=1e-320)
    lat, stall, age = one_sample(app_aware, BS, 90_000.0, 2.0)
    assert select(st[0], st[1], lat, stall, age, 0, 0, AD, BS) == BS
    assert select(st[0], st[1], lat, stall, age, 0, 1, AD, BS) == BS  # s_ad inf


RATIOS = [5e-324, 1e-320, 1e-300, 1e-10, 0.5, 0.9, 1.0, 1.5, 1e10, 1e300, 1.7e308]


@pytest.mark.parametrize("which", [AD, BS])
@pytest.mark.parametrize("size", [0, 1, 4096, 2**62])
def test_extreme_ratios_decide_as_exact_arithmetic(select, app_aware, which, size):
    """Every finite ratio (from the smallest subnormal to near the largest float), samples
    from 0 to near int64, messages from 0 B: the choice of Eq. 3 in exact arithmetic.  The
    comparison of both costs got the 0 B ones wrong (NaN) and, with a stall of 9.2e18 ps,
    lost the latency difference in the rounding of the stall term."""
    values = [0.0, 1.0, 3.0, 1e5, 9.2e18]
    wrong = []
    for lam in RATIOS:
        for sig in RATIOS:
            st = state(latency_ratio=lam, stall_ratio=sig)
            for lv in values:
                for sv in values:
                    lat, stall, age = one_sample(app_aware, which, lv, sv)
                    got = select(st[0], st[1], lat, stall, age, 0, size, AD, BS)
                    if got != exact_choice(which, lam, sig, lv, sv, size):
                        wrong.append((lam, sig, lv, sv, got))
    assert wrong == []
