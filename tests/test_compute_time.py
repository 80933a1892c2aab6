"""Compute times from distributions (``federation.programs.compute_time``): seeded exact
draws, the distributions (Kolmogorov-Smirnov), the constant mode at the mean, profiles and
their patterns, refusals (one message, exit 2), and the order-statistic oracle: N ranks of
variable compute before a barrier finish at the sum of the per-iteration maxima, which
averages E[max of N] (the many-node paper's Fig. 2 effect), on the native engine and SimGrid
with the same drawn durations."""

from __future__ import annotations

import math

import numpy as np
import pytest
import yaml
from conftest import one_error, run_cli
from scipy import integrate, stats

from federation.errors import ConfigError
from federation.pipeline.load import load_experiment
from federation.pipeline.point import prepare
from federation.pipeline.summary import summarize
from federation.programs.compute_time import (
    ComputeDraws,
    ComputeTime,
    cdf_mean,
    inverse_cdf,
    lognormal_sigma2,
    read_profile,
)
from federation.programs.model import COMPUTE

PROFILE = {"unit": "1us", "phases": {"mg": {
    "clusters": [{"cdf": [[900, 0], [1000, 0.5], [1100, 1]]},
                 {"cdf": [[110, 0], [130, 1]]},
                 {"cdf": [[14, 0], [18, 1]]}],
    "pattern": [0, 1, 2, 2, 2, 1, 0]}}}


def sampler(spec, sampling: str = "variable", n: int = 4, seed: int = 7):  # noqa: ANN001, ANN201
    rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(2)[0])
    return ComputeDraws(rng, sampling, n).phase(ComputeTime.model_validate(spec), "compute")


def test_seeded_draws_are_exact_and_each_phase_has_its_own_stream():
    rng = np.random.default_rng(np.random.SeedSequence(7).spawn(2)[0])
    d = ComputeDraws(rng, "variable", 3)
    a = d.phase(ComputeTime.model_validate({"dist": "normal", "mean": "10us", "std": "1us"}),
                "compute")
    b = d.phase(ComputeTime.model_validate({"dist": "uniform", "low": "1us", "high": "2us"}),
                "x")
    assert a.draw(np.arange(3)).tolist() == [10148987, 9361777, 10185321]
    assert a.draw(np.arange(3)).tolist() == [10626795, 8214522, 11482124]
    assert b.draw(np.arange(3)).tolist() == [1872909, 1324237, 1109163]


@pytest.mark.parametrize("spec,cdf", [
    ({"dist": "normal", "mean": "10us", "std": "2us"}, stats.norm(10e-6, 2e-6).cdf),
    ({"dist": "lognormal", "mean": "10us", "std": "5us"},
     stats.lognorm(math.sqrt(math.log1p(0.25)),
                   scale=10e-6 * math.exp(-math.log1p(0.25) / 2)).cdf),
    ({"dist": "uniform", "low": "3us", "high": "7us"}, stats.uniform(3e-6, 4e-6).cdf),
    ({"dist": "empirical", "cdf": [["2us", 0], ["4us", 0.5], ["5us", 0.5], ["9us", 1]]},
     lambda x: np.interp(x, [2e-6, 4e-6, 5e-6, 9e-6], [0.0, 0.5, 0.5, 1.0])),
])
def test_draws_follow_their_distribution(spec, cdf):
    s = sampler(spec, n=20000)
    x = s.draw(np.arange(20000)) / 1e12
    assert stats.kstest(x, cdf).pvalue > 1e-3
    assert abs(x.mean() - s.mean_s[0]) < 5 * x.std() / math.sqrt(x.size)


@pytest.mark.parametrize("spec,mean_ps", [
    ("7us", 7_000_000),
    ({"dist": "normal", "mean": "10us", "std": "1us"}, 10_000_000),
    ({"dist": "lognormal", "mean": "10us", "std": "5us"}, 10_000_000),
    ({"dist": "uniform", "low": "3us", "high": "7us"}, 5_000_000),
    ({"dist": "empirical", "cdf": [["2us", 0.1], ["4us", 0.5], ["5us", 0.5], ["9us", 1]]},
     round((0.1 * 2 + 0.4 * 3 + 0.5 * 7) * 1e6)),
])
def test_constant_sampling_is_the_mean_everywhere(spec, mean_ps):
    s = sampler(spec, "constant")
    for _ in range(3):
        assert s.draw(np.arange(4)).tolist() == [mean_ps] * 4


def test_normal_draws_below_zero_are_zero_and_the_mean_accounts_for_it():
    s = sampler({"dist": "normal", "mean": "1us", "std": "2us"}, n=40000)
    x = s.draw(np.arange(40000))
    assert x.min() == 0 and (x == 0).mean() > 0.25
    z = 0.5
    want = 1e-6 * stats.norm.cdf(z) + 2e-6 * stats.norm.pdf(z)  # E[max(0, X)]
    assert s.mean_s[0] == pytest.approx(want, rel=1e-12)
    assert abs(x.mean() / 1e12 - want) < 5 * x.std() / 1e12 / math.sqrt(x.size)


def test_a_cdf_starting_above_zero_is_a_mass_at_its_first_time():
    s = sampler({"dist": "empirical", "cdf": [["2us", 0.1], ["4us", 1]]}, n=20000)
    x = s.draw(np.arange(20000))
    assert abs((x == 2_000_000).mean() - 0.1) < 0.01
    assert x.min() == 2_000_000 and x.max() <= 4_000_000


def test_inverse_cdf_and_mean_of_a_cdf():
    pts = [(1.0, 0.0), (3.0, 0.5), (4.0, 1.0)]
    assert inverse_cdf(pts, np.array([0.0, 0.25, 0.5, 0.75, 0.999])).tolist() == \
        pytest.approx([1.0, 2.0, 3.0, 3.5, 3.998])
    assert cdf_mean(pts) == pytest.approx(0.5 * 2 + 0.5 * 3.5)


def test_profile_pattern_per_rank_and_call(tmp_path):
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(PROFILE))
    spec = {"profile": str(tmp_path / "p.yaml"), "phase": "mg"}
    const = sampler(spec, "constant", n=2)
    means = [1000e-6, 120e-6, 16e-6]
    got = [const.draw(np.array([0]))[0] for _ in range(9)]
    want = [round(means[c] * 1e12) for c in [0, 1, 2, 2, 2, 1, 0, 0, 1]]
    assert got == want
    assert const.draw(np.array([1]))[0] == round(means[0] * 1e12)  # rank 1's first call
    var = sampler(spec, "variable", n=1)
    draws = [int(var.draw(np.array([0]))[0]) for _ in range(7)]
    bounds = {0: (900e6, 1100e6), 1: (110e6, 130e6), 2: (14e6, 18e6)}
    for d, c in zip(draws, [0, 1, 2, 2, 2, 1, 0], strict=True):
        assert bounds[c][0] <= d <= bounds[c][1]


@pytest.mark.parametrize("change,words", [
    (lambda p: p["phases"]["mg"]["clusters"][1].update(cdf=[[110, 0], [130, 0.7], [140, 0.6],
                                                              [150, 1]]),
     "phases.mg.clusters[1].cdf: cdf point 2: probability 0.6 falls below 0.7 (a CDF is not "
     "monotone)"),
    (lambda p: p["phases"]["mg"].update(pattern=[0, 1, 3]),
     "phases.mg: pattern[2] names cluster 3, but the phase has 3 (0 .. 2)"),
    (lambda p: p["phases"]["mg"]["clusters"][0].update(
        cdf=[[i, i / 101] for i in range(102)]), "cdf has 102 points; give 2 to 101"),
    (lambda p: p["phases"]["mg"]["clusters"][0].update(cdf=[[1, 0], [2, 0.9]]),
     "cdf ends at probability 0.9, not 1"),
    (lambda p: p["phases"]["mg"]["clusters"][0].update(cdf=[[2, 0], [2, 1]]),
     "does not rise"),
])
def test_bad_profiles_are_refused_naming_the_place(tmp_path, change, words):
    prof = yaml.safe_load(yaml.safe_dump(PROFILE))
    change(prof)
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(prof))
    with pytest.raises(ConfigError) as e:
        read_profile(tmp_path / "p.yaml", "workload.compute")
    assert words in str(e.value) and "p.yaml" in str(e.value)


def experiment(tmp_path, compute, n: int = 16, iterations: int = 40,  # noqa: ANN001
               engine: str = "native", sampling: str = "variable") -> str:
    doc = {"schema_version": 1, "name": "o", "seed": 11,
           "machine": {"topology": {"kind": "dragonfly", "p": 2, "a": 4, "h": 2}},
           "routing": {"algorithm": "minimal"}, "engine": {"kind": engine},
           "workload": {"kind": "collective", "op": "barrier", "ranks": n,
                        "iterations": iterations, "compute": compute, "sampling": sampling}}
    (tmp_path / "e.yaml").write_text(yaml.safe_dump(doc))
    return str(tmp_path / "e.yaml")


@pytest.mark.parametrize("change,path,words", [
    ({"profile": "missing.yaml", "phase": "mg"}, "workload.compute.profile",
     "no such profile file"),
    ({"profile": "p.yaml", "phase": "cg"}, "workload.compute.phase", "has no phase 'cg'"),
    ({"profile": "bad.yaml", "phase": "mg"}, "bad.yaml: phases.mg",
     "pattern[1] names cluster 5, but the phase has 3"),
    ({"dist": "normal", "mean": "1us"}, "workload.compute", "std is required"),
    ({"dist": "empirical", "cdf": [[1e-6, 0], [2e-6, 0.8], [3e-6, 0.7], [4e-6, 1]]},
     "workload.compute.cdf", "not monotone"),
    ({"dist": "uniform", "low": "0.2s", "high": "0.4s"}, "workload.compute",
     "a rank would compute for"),
    # figures past the clock (1e300 s once overflowed the conversion to ps: a traceback)
    (1e300, "workload.compute", "compute 1e+300s is beyond the engine's clock range"),
    ({"dist": "lognormal", "mean": "1us", "std": 1e300}, "workload.compute",
     "std 1e+300s is beyond the engine's clock range"),
    ({"dist": "uniform", "low": 0, "high": "9s"}, "workload.compute",
     "high 9s is beyond the engine's clock range"),
    ({"dist": "empirical", "cdf": [[0, 0], [1e300, 1]]}, "workload.compute",
     "the cdf's last time 1e+300s is beyond the engine's clock range"),
    ({"dist": "lognormal", "mean": 0, "std": "1us"}, "workload.compute",
     "a mean of 0 allows no std above 0"),
])
def test_bad_compute_is_refused_before_the_run(tmp_path, change, path, words):
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(PROFILE))
    bad = yaml.safe_load(yaml.safe_dump(PROFILE))
    bad["phases"]["mg"]["pattern"] = [0, 5]
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(bad))
    line = one_error(run_cli("validate", experiment(tmp_path, change), cwd=tmp_path))
    assert path in line and words in line


CLOCK = "the engine's clock range (8796093022208 ps = 8.796 s of simulated time)"


@pytest.mark.parametrize("unit,cdf,words", [
    # fuzz 43b items 2 and 10: a profile cluster's cdf had no clock check (an OverflowError,
    # or a rank total of ~200 digits of picoseconds); the same refusal as an empirical cdf's
    ("1s", [[1e300, 0], [2e300, 1]], f"[0].cdf: the cdf's last time 2e+300s is beyond {CLOCK}"),
    (1e300, [[1, 0], [2, 1]], f"[0].cdf: the cdf's last time 2e+300s is beyond {CLOCK}"),
    ("1us", [[1e200, 0], [1e201, 1]],
     f"[0].cdf: the cdf's last time 1e+195s is beyond {CLOCK}"),
    (1e300, [[1e10, 0], [2e10, 1]],
     f"[0].cdf: cdf point 0: time 1e+10 x the unit 1e+300s is beyond {CLOCK}"),
])
def test_a_profile_cdf_past_the_clock_is_refused_at_its_cdf(tmp_path, unit, cdf, words):
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(
        {"unit": unit, "phases": {"mg": {"clusters": [{"cdf": cdf}]}}}))
    e = experiment(tmp_path, {"profile": "p.yaml", "phase": "mg"}, 4, 3)
    line = one_error(run_cli("run", e, "--out", "o", cwd=tmp_path))
    assert line == f"error: {tmp_path / 'p.yaml'}: phases.mg.clusters{words}"
    assert not (tmp_path / "o").exists()
    assert one_error(run_cli("validate", e, cwd=tmp_path)) == line


def test_a_rank_total_past_the_clock_is_a_time_not_digits(tmp_path):
    e = experiment(tmp_path, "1s", 4, 10**12)
    line = one_error(run_cli("validate", e, cwd=tmp_path))
    assert line == (f"error: {e}: workload.compute: a rank would compute for 1e+12s in all, "
                    f"past {CLOCK}")


@pytest.mark.parametrize("mean,std", [(1e-200, 1e-6), (5e-324, 8.0), (1e-6, 0.0)])
def test_a_lognormal_mean_tiny_beside_its_std_draws(mean, std):
    """(std / mean)² overflowed a float: an OverflowError in validate and run (fuzz 43b
    item 1).  sigma² = log(1 + (std / mean)²) in logarithms; such a lognormal draws (almost
    always) 0 ps, its mean."""
    s = sampler({"dist": "lognormal", "mean": mean, "std": std}, n=1000)
    x = s.draw(np.arange(1000))
    assert x.dtype == np.int64 and (x >= 0).all()
    if std == 0:
        assert (x == round(mean * 1e12)).all()
    else:
        assert (x == 0).mean() > 0.99
    assert lognormal_sigma2(10e-6, 5e-6) == pytest.approx(math.log1p(0.25), rel=1e-15)
    assert lognormal_sigma2(1e-200, 1e-6) == pytest.approx(2 * math.log(1e194), rel=1e-15)


def test_a_tiny_lognormal_mean_runs(tmp_path):
    e = experiment(tmp_path, {"dist": "lognormal", "mean": 1e-200, "std": "1us"}, 4, 3)
    r = run_cli("run", e, "--out", "o", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr and (tmp_path / "o" / "results.json").exists()


def compute_matrix(prep) -> np.ndarray:  # noqa: ANN001
    pg = prep.job.programs.programs
    return pg.op_time_ps[pg.op_kind == COMPUTE].reshape(pg.n_ranks, -1)


@pytest.mark.parametrize("engine", ["native", "simgrid"])
def test_order_statistic_oracle(tmp_path, engine):
    """16 ranks, 40 x (uniform 1-2 ms of compute, barrier): the run lasts the sum over
    iterations of the slowest rank's compute plus at most a few barrier latencies each, and
    that sum is 40 E[max of 16 uniforms] = 40 (1 + 16/17) ms within four standard errors."""
    if engine == "simgrid":
        from federation.adapters.simgrid.testing import require_simgrid

        require_simgrid()
    n, k = 16, 40
    point = load_experiment(experiment(tmp_path, {"dist": "uniform", "low": "1ms",
                                                  "high": "2ms"}, n, k, engine)).points[0]
    prep = prepare(point)
    raw = point.engine.run(prep.job)
    summary, _, _ = summarize(prep, raw)
    x = compute_matrix(prep)  # ranks x iterations, the drawn picoseconds
    sum_max = int(x.max(axis=0).sum())
    completion_ps = summary.programs.completion_ns * 1e3
    assert sum_max <= completion_ps <= sum_max + k * 5e6  # barrier: < 5 us each
    e_max = 1e9 + 1e9 * n / (n + 1)  # ps
    sd_max = 1e9 * math.sqrt(n / ((n + 1) ** 2 * (n + 2)))
    assert abs(sum_max - k * e_max) < 4 * sd_max * math.sqrt(k)
    # constant sampling: every rank computes the mean, 1.5 ms
    point = load_experiment(experiment(tmp_path, {"dist": "uniform", "low": "1ms",
                                                  "high": "2ms"}, n, k, engine,
                                       "constant")).points[0]
    prep_c = prepare(point)
    assert (compute_matrix(prep_c) == 1_500_000_000).all()
    s_c, _, _ = summarize(prep_c, point.engine.run(prep_c.job))
    assert k * 1.5e9 <= s_c.programs.completion_ns * 1e3 <= k * 1.5e9 + k * 5e6


def test_native_and_simgrid_get_the_same_durations(tmp_path):
    e = experiment(tmp_path, {"dist": "normal", "mean": "10us", "std": "3us"}, 8, 5)
    a = prepare(load_experiment(e).points[0]).job.programs.programs
    doc = yaml.safe_load(open(e))
    doc["engine"] = {"kind": "simgrid"}
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(doc))
    b = prepare(load_experiment(tmp_path / "s.yaml").points[0]).job.programs.programs
    assert np.array_equal(a.op_time_ps, b.op_time_ps)
    assert len(set(a.op_time_ps[a.op_kind == COMPUTE].tolist())) == 40


def test_expected_max_of_normals_grows_with_ranks():
    """The oracle the many-node example uses: E[max of N normals] by integration."""
    def e_max(n: int) -> float:
        f = lambda x: x * n * stats.norm.pdf(x) * stats.norm.cdf(x) ** (n - 1)  # noqa: E731
        return integrate.quad(f, -10, 10)[0]

    vals = [e_max(n) for n in (2, 16, 256)]
    assert vals[0] == pytest.approx(1 / math.sqrt(math.pi), rel=1e-9)
    assert vals[0] < vals[1] < vals[2] and vals[2] == pytest.approx(2.8, abs=0.1)
