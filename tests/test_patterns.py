"""Traffic patterns and injection processes (issue 21 item 6): each pattern's destination law
(exact for the deterministic ones, chi-square for the random ones), each process's rate, the
old ``synthetic`` draws unchanged, and refusals of jobs a pattern cannot serve."""

from __future__ import annotations

import hashlib
from functools import cache

import numpy as np
import pytest
import yaml
from conftest import REPO
from scipy import stats

from federation.errors import ConfigError
from federation.pipeline.load import load_experiment
from federation.pipeline.messages import workload_context
from federation.pipeline.point import BuildCache
from federation.pipeline.points import job_view
from federation.plugin.jobs import PatternContext
from federation.plugin.registry import get_plugins

QUICK = str(REPO / "schemas" / "machines" / "quickstart-dragonfly.yaml")  # 72 nodes, 9 groups
#: chi-square tests fail a correct law this rarely
ALPHA = 1e-6


@cache
def machine():  # noqa: ANN201
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:  # (mkdtemp left a folder per session)
        d = Path(tmp)
        (d / "e.yaml").write_text(yaml.safe_dump({"machine": QUICK}))
        point = load_experiment(d / "e.yaml").points[0]
        return point, BuildCache(2**32).get(point)


def pattern(kind: str, **params):  # noqa: ANN201
    cls = get_plugins().patterns.get(kind)
    return cls(cls.Params(**params))


def context(nodes: list[int] | None = None, n: int | None = None) -> PatternContext:
    _, built = machine()
    net = built.network
    chosen = np.arange(n if n is not None else net.n_nodes) if nodes is None else \
        np.array(nodes)
    return PatternContext(job_view(net, chosen), chosen, net, 512)


def draw(p, ctx: PatternContext, src: np.ndarray, seed: int = 0) -> np.ndarray:  # noqa: ANN001
    p.check(ctx)
    return np.asarray(p.start(ctx, np.random.default_rng(seed))(src))


def uniform_fit(counts: np.ndarray, expected: np.ndarray | None = None) -> None:
    """Chi-square test of ``counts`` against ``expected`` (default: all equal)."""
    counts = np.asarray(counts, dtype=float)
    exp = np.full_like(counts, counts.sum() / counts.size) if expected is None else expected
    assert stats.chisquare(counts, exp).pvalue > ALPHA


# --------------------------------------------------------------------------- deterministic


def test_shift_tornado_bit_complement_transpose_incast():
    src = np.arange(16)
    ctx = context(n=16)
    assert draw(pattern("shift", offset=5), ctx, src).tolist() == ((src + 5) % 16).tolist()
    assert draw(pattern("shift", offset=-3), ctx, src).tolist() == ((src - 3) % 16).tolist()
    assert draw(pattern("tornado"), ctx, src).tolist() == ((src + 7) % 16).tolist()
    assert draw(pattern("tornado"), context(n=9), np.arange(9)).tolist() == \
        ((np.arange(9) + 4) % 9).tolist()
    assert draw(pattern("bit_complement"), ctx, src).tolist() == (15 - src).tolist()
    t = draw(pattern("transpose"), ctx, src)
    assert t.tolist() == [(s % 4) * 4 + s // 4 for s in range(16)]  # 2-bit halves swapped
    inc = draw(pattern("incast", node=3), ctx, src)
    assert inc.tolist() == [3 if s != 3 else -1 for s in range(16)]


def test_all_to_all_visits_every_other_node_in_turn():
    n = 7
    src = np.repeat(np.arange(n), n - 1)  # each node's next n - 1 messages
    rng_order = np.random.default_rng(1).permutation(src.size)
    p = pattern("all_to_all")
    drawer = p.start(context(n=n), np.random.default_rng(0))
    dst = np.empty_like(src)
    for part in np.array_split(np.sort(rng_order), 5):  # in creation order, several batches
        dst[part] = drawer(src[part])
    for i in range(n):
        assert dst[src == i].tolist() == [(i + 1 + k) % n for k in range(n - 1)]


def test_nearest_neighbor_on_a_grid():
    dims = [3, 4, 5]
    ctx = context(n=60)
    src = np.repeat(np.arange(60), 3000)
    dst = draw(pattern("nearest_neighbor", dims=dims), ctx, src)
    c = lambda i: np.stack([i % 3, (i // 3) % 4, i // 12], axis=1)  # noqa: E731
    diff = np.abs(c(src) - c(dst))
    wrapped = np.minimum(diff, np.array(dims) - diff)
    assert (wrapped.sum(axis=1) == 1).all()  # one step along one axis (on the torus)
    node = 17
    got = np.unique(dst[src == node], return_counts=True)
    assert got[0].size == 6
    uniform_fit(got[1])
    mesh = draw(pattern("nearest_neighbor", dims=dims, periodic=False), ctx,
                np.zeros(3000, dtype=np.int64))
    assert sorted(set(mesh.tolist())) == [1, 3, 12]  # a corner has three


def test_fixed_hop_pairs_keep_one_partner_at_the_distance():
    from scipy.sparse.csgraph import shortest_path

    _, built = machine()
    net = built.network
    ctx = context()
    src = np.tile(np.arange(72), 5)
    dst = draw(pattern("fixed_hop_pairs", hops=2), ctx, src)
    d = shortest_path(net.adjacency, unweighted=True)
    assert (d[net.node_router[src], net.node_router[dst]] == 2).all()
    partner = dst[:72]
    assert (dst.reshape(5, 72) == partner).all()  # one partner each, for every message
    with pytest.raises(ConfigError) as e:
        pattern("fixed_hop_pairs", hops=4).check(ctx)  # the dragonfly's diameter is 3
    assert e.value.path == "hops" and "node 0 of the job" in e.value.message


# --------------------------------------------------------------------------- random laws


def test_uniform_is_uniform_over_the_others():
    ctx = context(nodes=list(range(0, 72, 3)))  # a job of 24 nodes
    dst = draw(pattern("uniform"), ctx, np.full(60_000, 5))
    assert 5 not in dst and dst.min() >= 0 and dst.max() < 24
    uniform_fit(np.bincount(dst, minlength=24)[np.arange(24) != 5])
    both = draw(pattern("uniform", include_self=True), ctx, np.full(60_000, 5))
    uniform_fit(np.bincount(both, minlength=24))


def test_group_shift_is_uniform_over_the_next_group_of_the_job():
    nodes = list(range(0, 8)) + list(range(24, 40))  # groups 0, 3 and 4
    ctx = context(nodes=nodes)
    groups = ctx.network.node_group
    src = np.repeat(np.arange(24), 3000)
    dst = draw(pattern("group_shift"), ctx, src)
    nxt = {0: 3, 3: 4, 4: 0}
    assert all(groups[d] == nxt[int(groups[s])] for s, d in zip(src[::97], dst[::97],
                                                                 strict=True))
    to_g4 = dst[groups[src] == 3]
    uniform_fit(np.bincount(to_g4, minlength=24)[groups == 4])
    with pytest.raises(ConfigError, match="2 groups"):
        pattern("group_shift").check(context(nodes=list(range(8))))


def test_hotspot_sends_its_fraction_to_the_hot_nodes():
    n, hot, f = 20, [2, 5], 0.3
    dst = draw(pattern("hotspot", nodes=hot, fraction=f), context(n=n), np.full(80_000, 9))
    p = np.full(n, (1 - f) / (n - 1))
    p[hot] += f / len(hot)
    p[9] = 0
    counts = np.bincount(dst, minlength=n)
    uniform_fit(counts[p > 0], (p * dst.size)[p > 0])


def test_random_permutation_and_its_rotation():
    n = 12
    ctx = context(n=n)
    p = pattern("random_permutation")
    first = draw(p, ctx, np.arange(n))
    assert sorted(first.tolist()) == list(range(n)) and (first != np.arange(n)).all()
    again = draw(p, ctx, np.tile(np.arange(n), 3))
    assert (again.reshape(3, n) == first).all()  # the same partner all run
    # every rotate_bytes a node sent (1,024 B = two 512 B messages) a new permutation; over
    # many rotations node 0's partners are uniform over the others
    rot = pattern("random_permutation", rotate_bytes=1024)
    drawer = rot.start(ctx, np.random.default_rng(3))
    src = np.tile(np.arange(n), 2 * 4000)
    dst = np.concatenate([drawer(part) for part in np.array_split(src, 37)])
    rounds = dst.reshape(-1, n)
    assert (rounds[0] == rounds[1]).all() and (rounds != np.arange(n)).all()
    for k in range(0, rounds.shape[0], 2):  # each pair of rounds is one permutation
        assert sorted(rounds[k].tolist()) == list(range(n))
    uniform_fit(np.bincount(rounds[::2, 0], minlength=n)[1:])


# --------------------------------------------------------------------------- processes


def synthetic(**params):  # noqa: ANN201
    cls = get_plugins().workloads.get("synthetic")
    return cls(cls.Params(**params))


def messages(workload, horizon_ps: int, seed: int = 0):  # noqa: ANN001, ANN201
    point, built = machine()
    return workload.generate(workload_context(point, built.network, horizon_ps,
                                              built.nic_bandwidth,
                                              np.random.default_rng(seed)))


def digest(m) -> str:  # noqa: ANN001
    h = hashlib.sha256()
    for a in (m.time_ps, m.src, m.dst, m.size):
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


@pytest.mark.parametrize(("params", "count", "tail", "sha"), [
    ({"load": 0.37}, 888, 2, "2f267c9ee71faf8564addb3403ed5486ba58816fc67c6212d6505cc5c7c35c02"),
    ({"load": 0.21, "pattern": "group_shift", "message_size": 1536}, 187, 0,
     "442f9e480a6e2804890c147b5cc70018e238637b99ef3a4013075b0c14524e69"),
    ({"load": 0.5, "include_self": True}, 1170, 1,
     "7dba57fd3d4dac559adc6bf9f0968350c1c81ec979eb4eab9f5f466990d7dbd6"),
])
def test_synthetic_draws_are_those_of_before_the_plugins(params, count, tail, sha):
    """The digests of the messages the closed-pattern synthetic drew (main at 8f21b7f) for
    the same seed: uniform and group_shift with Bernoulli injection are unchanged up to the
    last slot edge before the horizon.  It drew nothing after that edge; the slots that
    start in the rest of the horizon are drawn after all the others (``tail`` messages)."""
    from federation.plugin.components import Messages

    m = messages(synthetic(**params), 3_000_000, seed=7)
    slot = slot_ps(int(params.get("message_size", 512)))
    before = m.time_ps < 3_000_000 // slot * slot
    m0 = Messages(*(getattr(m, f)[before] for f in ("time_ps", "src", "dst", "size")))
    assert m0.count == count and digest(m0) == sha
    assert m.count == count + tail and int(m.time_ps.max()) < 3_000_000


def slot_ps(size: int = 512) -> int:
    _, built = machine()
    return max(1, round(size / built.nic_bandwidth * 1e12))


@pytest.mark.parametrize("kind", ["bernoulli", "poisson", "periodic"])
def test_every_process_offers_its_load(kind):
    load, slots = 0.3, 4000
    m = messages(synthetic(load=load, injection=kind), slots * slot_ps())
    per_node = np.bincount(m.src, minlength=72)
    mean = load * slots
    if kind == "periodic":  # exactly every slot / load, from a random phase
        assert (np.abs(per_node - mean) <= 1).all()
        gaps = np.diff(m.time_ps[m.src == 4])
        assert np.abs(gaps - slot_ps() / load).max() <= 1
    else:
        assert abs(per_node.sum() - 72 * mean) < 5 * np.sqrt(72 * mean)
    if kind == "poisson":  # exponential gaps
        gaps = np.diff(m.time_ps[m.src == 11]).astype(float)
        assert stats.kstest(gaps, "expon", args=(0, slot_ps() / load)).pvalue > ALPHA


def test_on_off_bursts_keep_the_mean_and_come_in_bursts():
    load, slots = 0.2, 20_000
    on, off = 2e-6, 6e-6
    m = messages(synthetic(load=load, injection={"kind": "on_off", "on": on, "off": off}),
                 slots * slot_ps())
    total = 72 * load * slots
    assert abs(m.count - total) < 0.1 * total
    # bursty: the messages per 1 us bin vary far more than a Poisson process's
    counts = np.bincount(m.time_ps[m.src == 0] // 1_000_000)
    assert counts.var() > 3 * counts.mean()
    with pytest.raises(ConfigError) as e:
        synthetic(load=0.5, injection={"kind": "on_off", "on": "1us", "off": "3us"}).check(
            workload_context(*machine()[:1], machine()[1].network, 10**6,
                             machine()[1].nic_bandwidth, np.random.default_rng(0)))
    assert e.value.path == "workload.injection.on" and "2" in e.value.message


@pytest.mark.parametrize(("pat", "n", "path", "words"), [
    ("bit_complement", 12, "workload.pattern", "power of two"),
    ("transpose", 8, "workload.pattern", "power of four"),
    ({"kind": "nearest_neighbor"}, 20, "workload.pattern.dims", "3-D grid"),
    ({"kind": "shift", "offset": 24}, 12, "workload.pattern.offset", "multiple"),
    ({"kind": "incast", "node": 12}, 12, "workload.pattern.node", "12 nodes"),
])
def test_a_job_without_what_the_pattern_needs_is_refused(tmp_path, pat, n, path, words):
    """Before anything runs, at the job's field (``validate`` and ``run`` alike)."""
    from conftest import one_error, run_cli

    doc = {"machine": QUICK, "jobs": [
        {"name": "j", "workload": {"kind": "synthetic", "pattern": pat},
         "placement": {"kind": "contiguous", "count": n}},
        {"name": "k", "workload": {"kind": "synthetic"}, "placement": "rest"}]}
    (tmp_path / "e.yaml").write_text(yaml.safe_dump(doc))
    for args in (("validate", "e.yaml"), ("run", "e.yaml", "--out", "o")):
        line = one_error(run_cli(*args, cwd=tmp_path))
        assert f"e.yaml: jobs[0].{path}: " in line, line
        assert words in line and "'j'" in line, line
    assert not (tmp_path / "o").exists()
