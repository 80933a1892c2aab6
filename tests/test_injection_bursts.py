"""Heavy-tailed bursts for ``on_off`` (issue 23 item 5): each period law keeps its mean, the
first period is the stationary one, a Pareto tail's exponent comes back from the bursts, the
offered load is the load within a tolerance from renewal theory, and bad laws are refused at
their field by ``federation validate`` (one line, exit 2).  Fixed seeds throughout."""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from conftest import REPO, one_error, run_cli
from scipy import stats

from federation.plugin.jobs import InjectionContext
from federation.plugins.injections.laws import PeriodLaw
from federation.plugins.injections.processes import OnOff, OnOffParams

QUICK = str(REPO / "schemas" / "machines" / "quickstart-dragonfly.yaml")
ALPHA = 1e-6  # KS tests fail a correct law this rarely
LAWS = [("exponential", {}), ("pareto", {"shape": 2.5}), ("lognormal", {"sigma": 1.0})]


def law(name: str, **kw: float) -> PeriodLaw:
    return PeriodLaw.model_validate({"law": name, **kw})


def hill(x: np.ndarray, k: int) -> float:
    """Hill's estimator of the tail exponent from the ``k`` largest of ``x``."""
    top = np.sort(x)[-(k + 1):]
    return 1.0 / float(np.mean(np.log(top[1:] / top[0])))


@pytest.mark.parametrize(("name", "kw"), LAWS)
def test_each_law_has_the_mean_it_is_given(name, kw):
    """Sample mean within 5 standard errors of the given mean (the laws' variances are
    finite here: Pareto shape 2.5)."""
    pl, mean, n = law(name, **kw), 3.0, 200_000
    x = pl.draw(np.random.default_rng(3), mean, n)
    assert abs(x.mean() - mean) < 5 * np.sqrt(pl.variance(mean) / n)
    assert (x > 0).all()


def test_pareto_law_is_pareto_and_its_first_period_the_stationary_residual():
    """Pareto(x_m, alpha) with x_m = mean (alpha - 1) / alpha, and the period in progress at
    time 0 follows the equilibrium law, whose CDF is u / mean below x_m and
    1 - (x_m / x)^(alpha - 1) / alpha above."""
    a, mean, n = 1.5, 2.0, 100_000
    xm = mean * (a - 1) / a
    pl, rng = law("pareto", shape=a), np.random.default_rng(5)
    assert stats.kstest(pl.draw(rng, mean, n), "pareto", args=(a, 0, xm)).pvalue > ALPHA

    def eq_cdf(x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        return np.where(x < xm, x / mean, 1 - (xm / np.maximum(x, xm)) ** (a - 1) / a)

    assert stats.kstest(pl.draw_residual(rng, mean, n), eq_cdf).pvalue > ALPHA
    # the exponential's residual is itself; the lognormal's mean is E[X^2] / (2 mean)
    r = law("lognormal", sigma=0.5).draw_residual(rng, mean, n)
    assert r.mean() == pytest.approx(mean * np.exp(0.25) / 2, rel=0.02)


def bursts(a_on: float, seed: int = 11) -> np.ndarray:
    """Messages per burst of one node of an on_off process with Pareto(a_on) bursts of mean 50
    slots and Pareto(3) pauses of mean 4000 (never shorter than 2/3 of it, while the gaps
    inside a burst are exponential of mean 2 slots: a gap over 400 slots is a pause)."""
    slot = 1000
    p = OnOff(OnOffParams(on=50e-9, off=4e-6, on_law={"law": "pareto", "shape": a_on},
                          off_law={"law": "pareto", "shape": 3.0}))
    ctx = InjectionContext(n_nodes=1, slot_ps=slot, load=0.5 * 50 / 4050, horizon_ps=2**62,
                           rng=np.random.default_rng(seed))
    p.check(ctx)
    t = np.sort(p.start(ctx)(0, 30_000 * 4050 * slot)[1])  # a span comes unordered
    cut = np.flatnonzero(np.diff(t) > 400 * slot)
    return np.diff(np.r_[0, cut + 1, t.size])


@pytest.mark.parametrize("a", [1.3, 1.5])
def test_a_pareto_tail_exponent_comes_back_from_the_burst_sizes(a):
    """Hill's estimate over the 500 largest bursts of ~30,000 is alpha within 5 of its standard
    errors (alpha / sqrt(k)) plus 0.05 for the Poisson counts of a burst's messages."""
    sizes = bursts(a)
    assert 29_000 < sizes.size < 31_000  # one per on period of 4050 slots on average
    k = 500
    assert abs(hill(sizes.astype(float), k) - a) < 5 * a / np.sqrt(k) + 0.05


@pytest.mark.parametrize(("on_law", "off_law"), [
    ("exponential", "exponential"),
    ({"law": "pareto", "shape": 2.5}, "exponential"),
    ({"law": "lognormal", "sigma": 1.0}, {"law": "pareto", "shape": 3.0}),
])
def test_the_offered_load_is_the_load(on_law, off_law):
    """Messages per node and slot over 72 nodes is ``load`` within 5 standard deviations of
    renewal theory: the on-time of an alternating renewal process over T has variance
    T (m_off^2 s_on^2 + m_on^2 s_off^2) / (m_on + m_off)^3, and the count is Poisson given it."""
    slot, n, T = 1000, 72, 4 * 10**9
    on, off, load = 2e-6, 6e-6, 0.2
    p = OnOff(OnOffParams(on=on, off=off, on_law=on_law, off_law=off_law))
    ctx = InjectionContext(n_nodes=n, slot_ps=slot, load=load, horizon_ps=T,
                           rng=np.random.default_rng(2))
    src = np.concatenate([p.start(ctx)(t, t + 10**9)[0] for t in range(0, T, 10**9)])
    m_on, m_off = on * 1e12, off * 1e12
    v_on, v_off = p.params.on_law.variance(m_on), p.params.off_law.variance(m_off)
    var_time = T * (m_off**2 * v_on + m_on**2 * v_off) / (m_on + m_off) ** 3
    rate = load * (m_on + m_off) / m_on / slot
    mean = n * load * T / slot
    sd = np.sqrt(n * (rate * T * m_on / (m_on + m_off) + rate**2 * var_time))
    assert abs(src.size - mean) < 5 * sd, (src.size, mean, sd)
    assert np.bincount(src, minlength=n).min() > 0


def test_exponential_laws_given_are_the_draws_of_before():
    """``on_law: exponential`` written out draws exactly what the process without laws drew."""
    def draw(**kw) -> tuple[np.ndarray, np.ndarray]:  # noqa: ANN003
        p = OnOff(OnOffParams(on=1e-6, off=3e-6, **kw))
        ctx = InjectionContext(n_nodes=8, slot_ps=500, load=0.1, horizon_ps=10**9,
                               rng=np.random.default_rng(9))
        return p.start(ctx)(0, 10**8)

    a, b = draw(), draw(on_law="exponential", off_law={"law": "exponential"})
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1]) and a[0].size > 100
    c, d = (draw(on_law={"law": "pareto", "shape": 1.3}) for _ in range(2))
    assert np.array_equal(c[1], d[1])  # seeded


def write(tmp_path, injection: dict | str) -> None:  # noqa: ANN001
    doc = {"machine": QUICK, "jobs": [
        {"name": "pp", "workload": {"kind": "pingpong", "sizes": [8], "iterations": 2},
         "placement": {"kind": "list", "nodes": [0, 1]}},
        {"name": "bg", "workload": {"kind": "synthetic", "load": 0.1,
                                    "injection": injection}, "placement": "rest"}]}
    (tmp_path / "e.yaml").write_text(yaml.safe_dump(doc))


@pytest.mark.parametrize(("law_", "field", "words"), [
    ({"law": "pareto", "shape": 1.0}, "on_law.shape", "infinite mean"),
    ({"law": "pareto", "shape": 0.5}, "on_law.shape", "above 1"),
    ({"law": "pareto"}, "on_law", "needs its shape"),
    ({"law": "lognormal", "sigma": 0}, "on_law.sigma", "(0, 4.0]"),
    ({"law": "exponential", "shape": 2}, "on_law.shape", "only a pareto law"),
    ({"law": "weibull"}, "on_law.law", "pareto"),
])
def test_bad_laws_are_refused_at_their_field(tmp_path, law_, field, words):
    write(tmp_path, {"kind": "on_off", "on": "1us", "off": "3us", "on_law": law_})
    line = one_error(run_cli("validate", "e.yaml", cwd=tmp_path))
    assert f"e.yaml: jobs[1].workload.injection.{field}: " in line, line
    assert words in line, line


@pytest.mark.parametrize(("on", "off", "field", "value"), [
    (1e300, "1us", "on", "1e+300s"), ("1us", 1e300, "off", "1e+300s"),
    (1e20, "1us", "on", "1e+20s"),
])
def test_a_period_past_the_clock_is_refused_at_its_field(tmp_path, on, off, field, value):
    """on: 1e300 passed validate and was an OverflowError in run (fuzz 43b item 7)."""
    write(tmp_path, {"kind": "on_off", "on": on, "off": off})
    line = one_error(run_cli("run", "e.yaml", "--out", "o", cwd=tmp_path))
    assert line == (f"error: e.yaml: jobs[1].workload.injection.{field}: {value} is past the "
                    "engine's clock range (8796093022208 ps = 8.796 s of simulated time)")
    assert not (tmp_path / "o").exists()
    assert one_error(run_cli("validate", "e.yaml", cwd=tmp_path)) == line


def test_an_unquoted_on_key_is_the_on_time(tmp_path):
    """YAML 1.1 reads a key ``on`` as ``True``; the loader reads keys as YAML 1.2 does."""
    (tmp_path / "e.yaml").write_text(
        f"machine: {QUICK}\njobs:\n  - name: bg\n    workload: {{kind: synthetic, load: 0.1, "
        "injection: {kind: on_off, on: 1us, off: 3us, on_law: {law: pareto, shape: 1.5}}}\n"
        "    placement: rest\n")
    r = run_cli("validate", "e.yaml", cwd=tmp_path)
    assert r.returncode == 0, r.stderr


def test_a_burst_at_exactly_the_nic_rate_is_accepted():
    """0.04 x (1 us + 24 us) / 1 us is 1 (1.0000000000000002 in floating point)."""
    p = OnOff(OnOffParams(on=1e-6, off=24e-6))
    p.check(InjectionContext(n_nodes=2, slot_ps=1000, load=0.04, horizon_ps=10**9,
                             rng=np.random.default_rng(0)))
    with pytest.raises(Exception, match="1.01 of its NIC"):
        p.check(InjectionContext(n_nodes=2, slot_ps=1000, load=0.0404, horizon_ps=10**9,
                                 rng=np.random.default_rng(0)))
