"""The variability statistics (issue 23 item 5; :mod:`federation.results.variability`): QCD,
median with its distribution-free 95 % interval, max / median, on hand-computed samples; the
same figures from an array and from a spilled store; and old results documents still read."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from federation.engine.packet_stats import ValueStore, order_statistics
from federation.results.model import JobSummary, ProgramSummary
from federation.results.variability import from_order_statistics, median_ci_ranks, variability


def test_empty_is_none():
    assert variability(np.zeros(0)) is None
    assert from_order_statistics(0, lambda r: {}) is None
    assert median_ci_ranks(0) is None


def test_one_value():
    v = variability(np.array([7]))
    assert (v.samples, v.median, v.q1, v.q3, v.max) == (1, 7, 7, 7, 7)
    assert v.qcd == 0 and v.max_over_median == 1
    assert v.median_ci_low is v.median_ci_high is v.median_ci_coverage is None


def test_odd_sample():
    """1..5: quartiles at ranks 1 and 3 (linear percentiles), no 95 % interval below 6 values
    (the whole range covers 1 - 2 / 32 = 93.75 %)."""
    v = variability(np.array([5, 1, 4, 2, 3]))
    assert (v.q1, v.median, v.q3, v.max) == (2, 3, 4, 5)
    assert v.qcd == (4 - 2) / (4 + 2)
    assert v.max_over_median == 5 / 3
    assert v.median_ci_low is None


def test_even_sample():
    """10, 20, 30, 40: Q1 = 10 + 0.75 x 10, the median halfway, Q3 = 30 + 0.25 x 10."""
    v = variability(np.array([40, 10, 30, 20]))
    assert (v.q1, v.median, v.q3) == (17.5, 25.0, 32.5)
    assert v.qcd == 15 / 50 and v.max_over_median == 40 / 25


def test_ties_and_the_smallest_interval():
    """Six 2s and a 9: quartiles all 2, so QCD 0 and max / median 4.5; with 7 values the
    interval is the whole range, of coverage 1 - 2 / 2^7."""
    v = variability(np.array([2, 2, 9, 2, 2, 2, 2]))
    assert (v.q1, v.median, v.q3, v.qcd, v.max_over_median) == (2, 2, 2, 0, 4.5)
    assert (v.median_ci_low, v.median_ci_high) == (2, 9)
    assert v.median_ci_coverage == 1 - 2 / 128
    six = variability(np.arange(1, 7))
    assert (six.median_ci_low, six.median_ci_high, six.median_ci_coverage) == (1, 6, 1 - 2 / 64)


def test_all_zero_has_no_ratio():
    v = variability(np.zeros(4, dtype=np.int64))
    assert v.median == 0 and v.qcd is None and v.max_over_median is None


@pytest.mark.parametrize(("n", "lo", "hi"), [(6, 1, 6), (10, 2, 9), (20, 6, 15), (100, 40, 61),
                                             (1000, 469, 532)])
def test_interval_ranks_are_those_of_the_binomial(n, lo, hi):
    """1-based ranks: Le Boudec's table (n = 6..100: (1, 6), (2, 9), (6, 15), (40, 61)), and
    for 1000 the largest j with P(Bin(1000, 1/2) <= j - 1) <= 2.5 %."""
    from scipy.stats import binom

    a, b, cover = median_ci_ranks(n)
    assert (a + 1, b + 1) == (lo, hi)
    assert cover == pytest.approx(1 - 2 * binom.cdf(lo - 1, n, 0.5), abs=1e-15)
    assert cover >= 0.95 and 1 - 2 * binom.cdf(lo, n, 0.5) < 0.95  # one rank in is too narrow


def test_bit_for_bit_numpy_percentiles_in_ns():
    x = np.random.default_rng(4).integers(0, 10**9, 2001)
    v = variability(x, per_unit=1e3)
    q = np.percentile(x / 1e3, [25, 50, 75])
    assert (v.q1, v.median, v.q3) == tuple(q.tolist())
    assert v.max == x.max() / 1e3


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 2**40), min_size=1, max_size=300))
def test_a_store_gives_the_figures_of_the_array(values):
    """Through the packet statistics' store (spilling at 16 values), the same model."""
    x = np.array(values, dtype=np.int64)
    store = ValueStore(spill_at=16)
    for part in np.array_split(x, 5):
        store.add(part)
    got = from_order_statistics(store.count, lambda r: order_statistics(store, r), 1e3)
    store.close()
    want = variability(x, per_unit=1e3)
    assert got == want
    assert want.q1 <= want.median <= want.q3 <= want.max
    if want.median_ci_low is not None:
        assert want.median_ci_low <= want.median <= want.median_ci_high


def test_old_documents_read_without_the_blocks():
    """A results document written before the variability blocks still validates."""
    p = ProgramSummary.model_validate({"ranks": 2, "operations": 4, "messages": 2,
                                       "completion_ns": 5.0, "rank_finish_ns": [4.0, 5.0]})
    assert p.message_completion_ns is None
    j = JobSummary.model_validate({"name": "a", "workload": "pingpong", "closed_loop": True,
                                   "placement": "list", "rank_order": "ascending",
                                   "nodes": [0, 1], "start_ns": 0.0})
    assert j.message_completion_ns is None


def test_the_summary_gives_the_figures_of_the_messages_table(tmp_path):
    """A ping-pong beside a bursty background: the programs' block and the ping-pong job's are
    the figures of the ping-pong's rows of the messages table; the background job's, of its
    rows created in the window; the same seed gives the same document."""
    import json

    import pyarrow.parquet as pq
    import yaml
    from conftest import REPO

    from federation.pipeline.load import load_experiment
    from federation.pipeline.run import run_experiment

    doc = {"machine": str(REPO / "schemas" / "machines" / "quickstart-dragonfly.yaml"),
           "jobs": [{"name": "pp", "workload": {"kind": "pingpong", "sizes": [8, 2048],
                                                "iterations": 20},
                     "placement": {"kind": "list", "nodes": [0, 40]}},
                    {"name": "bg", "placement": "rest", "workload": {
                        "kind": "synthetic", "load": 0.2, "message_size": 1024, "injection": {
                            "kind": "on_off", "on": "200ns", "off": "600ns",
                            "on_law": {"law": "pareto", "shape": 1.5}}}}],
           "stop": {"warmup": "0us", "measure": "20us"}}
    (tmp_path / "e.yaml").write_text(yaml.safe_dump(doc))
    texts = []
    for out in ("a", "b"):
        res = run_experiment(load_experiment(tmp_path / "e.yaml"), tmp_path / out,
                             overwrite=True)
        texts.append((tmp_path / out / "results.json").read_text())
    assert texts[0] == texts[1]
    s = res.points[0].summary
    t = pq.read_table(tmp_path / "b" / res.points[0].files["messages"]).to_pydict()
    job, done = np.array(t["job"]), np.array(t["completion_ps"])
    bg = np.array(t["background"])
    pp = done[(job == "pp") & ~bg & (done >= 0)]
    assert pp.size == 80  # 2 sizes x 20 iterations x ping and pong
    want = variability(pp, per_unit=1e3)
    jobs = {j.name: j for j in s.jobs}
    assert s.programs.message_completion_ns == want == jobs["pp"].message_completion_ns
    assert want.median_ci_low <= want.median <= want.median_ci_high
    b = jobs["bg"].message_completion_ns
    created = np.array(t["created_ps"])
    sel = (job == "bg") & bg & (done >= 0) & (created < 20_000_000)
    assert b == variability(done[sel], per_unit=1e3) and b.samples > 100
    assert json.loads(texts[1])["points"][0]["summary"]["programs"][
        "message_completion_ns"]["qcd"] == want.qcd
    # the distribution figure: one CDF per job, annotated with the summary's figures
    from federation.plots.data import series_of
    from federation.plots.distributions import draw_message_completion, spread_label
    from federation.plots.reader import load_folder

    folder = load_folder(tmp_path / "b")
    (series,) = series_of([folder])
    fig = draw_message_completion(series, [folder], tmp_path / "figs", "png", "mc")
    assert fig.path.exists()
    got = {d.job: d.stats for d in fig.dists}
    assert got["pp"] == want and set(got) == {"pp", "bg"}
    label = spread_label(next(d for d in fig.dists if d.job == "pp"))
    assert f"QCD {want.qcd:.3f}" in label and f"max/median {want.max_over_median:.2f}" in label
