"""The synthetic workload draws its injection process up to the horizon (warm-up + measure)
exactly, not up to the last slot edge before it; and a pattern that numbers a node's messages
(``all_to_all``, ``random_permutation`` with ``rotate_bytes``) numbers them in creation order
whatever the process (``poisson`` and ``on_off`` draw a span's arrival times unordered), across
the batches the traffic is streamed in."""

from __future__ import annotations

import csv
from functools import cache

import numpy as np
import pytest
import yaml
from conftest import run_cli

from federation.pipeline.load import load_experiment
from federation.pipeline.messages import workload_context
from federation.pipeline.point import BuildCache
from federation.plugin.registry import get_plugins
from federation.plugins.workloads.synthetic import creation_order, span_edges

#: a 4x4 torus, 1 GB/s NICs: a 64 KiB message's slot is 65.536 us
MACHINE = {"topology": {"kind": "torus", "dims": [4, 4]}, "nic": {"bandwidth": "1GB/s"}}
N = 16
BIG = 65536
BIG_SLOT = 65_536_000  # ps
SMALL = 512
SMALL_SLOT = 512_000


@cache
def machine():  # noqa: ANN201
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        (d / "e.yaml").write_text(yaml.safe_dump({"machine": MACHINE,
                                                  "routing": {"algorithm": "minimal"}}))
        point = load_experiment(d / "e.yaml").points[0]
        return point, BuildCache(2**32).get(point)


def synthetic(**params):  # noqa: ANN201
    cls = get_plugins().workloads.get("synthetic")
    return cls(cls.Params(**params))


def ctx(horizon_ps: int, seed: int):  # noqa: ANN201
    point, built = machine()
    assert built.nic_bandwidth == 1e9
    return workload_context(point, built.network, horizon_ps, built.nic_bandwidth,
                            np.random.default_rng(seed))


def generated(workload, horizon_ps: int, seed: int = 0):  # noqa: ANN001, ANN201
    return workload.generate(ctx(horizon_ps, seed))


def streamed(workload, horizon_ps: int, seed: int = 0, target: int = 16):  # noqa: ANN001, ANN201
    """The batches in small spans (``target`` packets: a slot or two each), checked as the
    run checks them, joined."""
    parts, last = [], 0
    for end, m in workload.batches(ctx(horizon_ps, seed), target):
        if m.count:
            assert int(m.time_ps[0]) >= last and int(m.time_ps[-1]) < end
        last = end
        parts.append(m)
    assert len(parts) > 5
    return (np.concatenate([m.time_ps for m in parts]), np.concatenate([m.src for m in parts]),
            np.concatenate([m.dst for m in parts]))


# --------------------------------------------------------------------------- the horizon


def test_span_edges_reach_the_horizon():
    assert list(span_edges(100, 30, 2)) == [(0, 60, False), (60, 90, False), (90, 100, True)]
    assert list(span_edges(90, 30, 2)) == [(0, 60, False), (60, 90, True)]  # as before
    assert list(span_edges(20, 30, 2)) == [(0, 20, True)]  # shorter than a slot
    assert list(span_edges(0, 30, 2)) == []
    assert next(span_edges(10**15, 1, 1)) == (0, 1, False)  # lazy


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_periodic_draws_every_phase_plus_k_periods_before_the_horizon(seed):
    """64 KiB at load 1 over 100 us (1.53 slots): each node's phase + k x 65.536 us below
    100 us, computed from the phases the process draws first.  Before, nothing was drawn
    past 65.536 us: 16 messages, none in the last 34.464 us."""
    horizon = 100_000_000
    m = generated(synthetic(load=1.0, message_size=BIG, injection="periodic"), horizon, seed)
    phase = np.random.default_rng(seed).random(N) * BIG_SLOT  # period = slot / load
    want = sorted((int(np.floor(phase[i] + k * BIG_SLOT)), i)
                  for i in range(N) for k in range(3) if phase[i] + k * BIG_SLOT < horizon)
    assert sorted(zip(m.time_ps.tolist(), m.src.tolist(), strict=True)) == want
    assert m.count == sum(1 + (phase < horizon - BIG_SLOT))
    assert (m.time_ps >= BIG_SLOT).sum() == (phase < horizon - BIG_SLOT).sum() > 0
    assert (np.diff(m.time_ps) >= 0).all()


def test_periodic_count_and_load_of_the_reported_case(tmp_path):
    """The tester's run, streamed through ``run``: 27 messages (each node's phase + k x
    65.536 us < 100 us), the last created after 65.536 us, offered load 27 x 64 KiB /
    (16 x 1 GB/s x 100 us) = 1.106 (before: 16 messages, none after 55.34 us, 0.655)."""
    import json

    (tmp_path / "e.yaml").write_text(yaml.safe_dump({
        "machine": MACHINE, "routing": {"algorithm": "minimal"}, "seed": 1,
        "workload": {"kind": "synthetic", "load": 1.0, "pattern": "uniform",
                     "message_size": "64KiB", "injection": "periodic"},
        "stop": {"warmup": "0us", "measure": "100us"}, "outputs": {"format": "csv"}}))
    r = run_cli("run", "e.yaml", "--out", "o", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    rows = list(csv.DictReader(open(tmp_path / "o" / "messages-0.csv")))
    created = sorted(int(x["created_ps"]) for x in rows)
    assert len(created) == 27 and 11 == sum(t >= BIG_SLOT for t in created)
    assert created[-1] < 100_000_000
    s = json.loads((tmp_path / "o" / "results.json").read_text())["points"][0]["summary"]
    assert s["offered_load"] == pytest.approx(27 * BIG / (16 * 1e9 * 100e-6), rel=1e-9)


@pytest.mark.parametrize("seed", [0, 5])
def test_bernoulli_at_load_one_creates_in_every_slot_that_starts_before_the_horizon(seed):
    """At load 1 every slot has its message: node i's at s x slot + phase_i for every s with
    s x slot + phase_i < horizon (the phases the process draws first).  Before, the slot
    starting in the last partial slot [1 x slot, 1.53 x slot) was never drawn."""
    horizon = 100_000_000
    m = generated(synthetic(load=1.0, message_size=BIG, injection="bernoulli"), horizon, seed)
    phase = np.random.default_rng(seed).integers(0, BIG_SLOT, size=N)
    want = sorted((int(s * BIG_SLOT + phase[i]), i)
                  for i in range(N) for s in range(3) if s * BIG_SLOT + phase[i] < horizon)
    assert sorted(zip(m.time_ps.tolist(), m.src.tolist(), strict=True)) == want
    assert (m.time_ps >= BIG_SLOT).sum() == (phase < horizon - BIG_SLOT).sum() > 0


def test_a_horizon_shorter_than_a_slot_still_has_its_messages():
    """50 us < one 65.536 us slot: every phase below 50 us creates its message (before:
    none at all)."""
    m = generated(synthetic(load=1.0, message_size=BIG, injection="periodic"), 50_000_000, 3)
    phase = np.random.default_rng(3).random(N) * BIG_SLOT
    assert m.count == int((phase < 50_000_000).sum()) > 0


@pytest.mark.parametrize(("injection", "per_node"), [
    # Bernoulli: the slot at the phase, and the next when the phase is below half a slot
    ("bernoulli", 0.5 * 1.5),
    ("poisson", 0.5 * 1.5),
    ({"kind": "on_off", "on": "2us", "off": "2us"}, 0.5 * 1.5),
])
def test_random_processes_offer_their_load_up_to_the_horizon(injection, per_node):
    """1.5 slots at load 0.5 over 300 seeds: 0.75 messages per node and seed, 3600 in all
    (before: 2400, the last half slot lost).  Within 6 standard deviations (a Poisson
    count's; Bernoulli's is smaller, on_off's 2 us bursts of 0.03 messages barely larger)."""
    horizon = BIG_SLOT * 3 // 2
    w = synthetic(load=0.5, message_size=BIG, injection=injection)
    counts, tail = 0, 0
    for seed in range(300):
        m = generated(w, horizon, seed)
        assert m.count == 0 or int(m.time_ps.max()) < horizon
        counts += m.count
        tail += int((m.time_ps >= BIG_SLOT).sum())
    mean = 300 * N * per_node
    assert abs(counts - mean) < 6 * np.sqrt(mean)
    # the last half slot holds a third of them (Bernoulli: its slots that start there)
    assert abs(tail - mean / 3) < 6 * np.sqrt(mean / 3)


@pytest.mark.parametrize("injection", ["bernoulli", "poisson", "periodic",
                                       {"kind": "on_off", "on": "2us", "off": "6us"}])
def test_streamed_traffic_reaches_into_the_last_partial_slot(injection):
    """512 B messages over 100.3 slots, in spans of a slot or two: the last batch (the 0.3
    slot left) holds messages, and every one is before the horizon; a seed draws the same."""
    horizon = 100 * SMALL_SLOT + 3 * SMALL_SLOT // 10
    w = synthetic(load=0.25, message_size=SMALL, injection=injection,
                  pattern="all_to_all")
    t, src, dst = streamed(w, horizon, seed=11)
    assert int(t.max()) < horizon and (t >= 100 * SMALL_SLOT).any()
    again = streamed(w, horizon, seed=11)
    assert all(np.array_equal(a, b) for a, b in zip((t, src, dst), again, strict=True))


# --------------------------------------------------------------------------- creation order


def test_creation_order_puts_each_nodes_times_in_order_in_its_places():
    src = np.array([0, 1, 0, 1, 0, 2])
    t = np.array([5, 3, 1, 2, 2, 9])
    s, u = creation_order(src, t)
    assert s.tolist() == src.tolist() and u.tolist() == [1, 2, 2, 3, 5, 9]
    ordered = np.array([0, 1, 2, 3])
    assert creation_order(np.array([0, 0, 1, 1]), ordered)[1] is ordered


def by_node(t: np.ndarray, src: np.ndarray, dst: np.ndarray) -> dict[int, list[int]]:
    """Each node's destinations in creation order (ties: as delivered)."""
    order = np.lexsort((t, src))
    out: dict[int, list[int]] = {}
    for s, d in zip(src[order].tolist(), dst[order].tolist(), strict=True):
        out.setdefault(s, []).append(d)
    return out


INJECTIONS = ["poisson", {"kind": "on_off", "on": "1us", "off": "1us"}, "bernoulli"]


@pytest.mark.parametrize("injection", INJECTIONS)
@pytest.mark.parametrize("stream", [False, True])
def test_all_to_all_goes_round_in_creation_order(injection, stream):
    """Node i's k-th message goes to (i + 1 + k mod (n - 1)) mod n, counting across batches.
    Before, under poisson and on_off the k-th entry of a span's array (a random time) got the
    k-th destination."""
    w = synthetic(load=0.4, message_size=SMALL, injection=injection, pattern="all_to_all")
    horizon = 200 * SMALL_SLOT
    if stream:
        t, src, dst = streamed(w, horizon, seed=4)
    else:
        m = generated(w, horizon, seed=4)
        t, src, dst = m.time_ps, m.src, m.dst
    seqs = by_node(t, src, dst)
    assert len(seqs) == N and min(len(v) for v in seqs.values()) > 40
    for i, seq in seqs.items():
        assert seq == [(i + 1 + k % (N - 1)) % N for k in range(len(seq))], i


@pytest.mark.parametrize("injection", INJECTIONS)
@pytest.mark.parametrize("stream", [False, True])
def test_rotate_bytes_partners_come_in_runs_in_creation_order(injection, stream):
    """rotate_bytes 2 KiB of 512 B messages: each node's destinations in creation order come
    in runs of 4, run e the e-th derangement's partner (a node of its own at no run; the
    nodes' e-th partners distinct), across batches."""
    w = synthetic(load=0.4, message_size=SMALL, injection=injection,
                  pattern={"kind": "random_permutation", "rotate_bytes": "2KiB"})
    horizon = 200 * SMALL_SLOT
    if stream:
        t, src, dst = streamed(w, horizon, seed=9)
    else:
        m = generated(w, horizon, seed=9)
        t, src, dst = m.time_ps, m.src, m.dst
    seqs = by_node(t, src, dst)
    runs = {i: [seq[k:k + 4] for k in range(0, len(seq), 4)] for i, seq in seqs.items()}
    for i, rs in runs.items():
        assert all(len(set(r)) == 1 and r[0] != i for r in rs), (i, rs)
    epochs = min(len(rs) for rs in runs.values())
    assert epochs >= 10
    for e in range(epochs):  # the e-th partners: one permutation
        assert len({rs[e][0] for rs in runs.values()}) == N
