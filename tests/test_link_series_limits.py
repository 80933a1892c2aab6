"""``outputs.link_series.interval``: bounded by the samples a run may take, and by the clock.

Fuzz 2, item 12: an interval of 1 ps was accepted, and a 2 us run took 100-160 s instead of
1.5 s (every sample stops the compiled loop and reads every port's counters).  An interval that
would take more than :data:`~federation.engine.link_series.MAX_LINK_SAMPLES` samples over a run
whose length the stop rule gives is refused before the run; a run whose length is not known
before it (rank programs) is stopped by the sampler at the limit.  An interval below 1 ps
rounded to 0 and silently wrote an empty table: it is refused too.

Fuzz 44, item 1: the loader counted ``stop.warmup + stop.measure`` only, and an open-loop run
goes on until its measured packets are delivered (the drain), so a 6 us window sampled every
10 ps passed ``validate`` and was refused at 10 us of its 13 us run, claiming its length was
not known, advising "a longer interval" that failed too.  The drain is now sampled while the
limit allows, then as one interval to the run's end (``summary.link_series_coarse_from_ns``),
and the advice of the refusal before the run, read back, passes.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import one_error, run_cli

from federation.engine import link_series
from federation.engine.link_series import INTERVAL_FIELD, Sampler, shortest_interval
from federation.errors import ConfigError
from federation.models.limits import TIME_LIMIT_PS
from federation.models.units import parse_time, seconds_to_ps
from federation.pipeline import load
from federation.pipeline.load import load_experiment
from federation.pipeline.run import run_experiment

MACHINE = "machine: {topology: {kind: dragonfly, p: 2, a: 4, h: 2}}\n"
OPEN = MACHINE + ("workload: {kind: synthetic, pattern: uniform, load: 0.3}\n"
                  "stop: {warmup: 0, measure: 2us}\n")


def _file(tmp: Path, text: str) -> Path:
    e = tmp / "e.yaml"
    e.write_text(text)
    return e


def _refused(e: Path, *sets: str) -> str:
    with pytest.raises(ConfigError) as exc:
        load_experiment(e, list(sets))
    return str(exc.value)


def test_an_interval_past_the_sample_limit_is_refused_before_the_run(tmp_path):
    _file(tmp_path, OPEN + "outputs: {link_series: {interval: 1ps}}\n")
    line = one_error(run_cli("run", "e.yaml", "--out", "o", cwd=tmp_path))
    assert line == (
        "error: e.yaml: outputs.link_series.interval: 1ps samples every port 2000000 times "
        "in the 2us of stop.warmup + stop.measure, more than the limit of 1000000 a "
        "run may take (each sample stops the engine to read every port's counters); give an "
        "interval of at least 2ps")
    assert not (tmp_path / "o").exists()
    assert one_error(run_cli("validate", "e.yaml", cwd=tmp_path)) == line


def test_the_limit_itself_passes_and_a_sweep_or_override_is_named(tmp_path):
    e = _file(tmp_path, OPEN + "outputs: {link_series: {interval: 2ps}}\n")
    assert load_experiment(e).points[0].experiment.outputs.link_series.interval == 2e-12
    e = _file(tmp_path, OPEN + "sweep: {outputs.link_series.interval: [1us, 1ps]}\n")
    assert _refused(e).startswith(
        f"{e}: sweep.outputs.link_series.interval: 1ps samples every port 2000000 times")
    e = _file(tmp_path, OPEN)
    msg = _refused(e, "outputs.link_series={interval: 1ps}")
    assert msg.startswith(f"{e}: outputs.link_series.interval: 1ps samples every port")
    assert msg.endswith("(the value comes from --set outputs.link_series={interval: 1ps})")


def test_an_interval_below_the_clock_unit_is_refused(tmp_path):
    """0.4 ps rounded to 0: the sampler was never made and the table came out empty."""
    e = _file(tmp_path, OPEN.replace("2us", "0.2us")
              + "outputs: {link_series: {interval: 0.4ps}}\n")
    assert _refused(e) == (f"{e}: outputs.link_series.interval: 0.4ps is below the engine's "
                           "clock unit (1ps: its times are whole picoseconds); give at least 1ps")


@pytest.mark.parametrize(("interval", "shown"), [("1e300", "1e+300s"), ("1e20", "1e+20s"),
                                                 ("9s", "9s")])
def test_an_interval_past_the_clock_is_refused(tmp_path, interval, shown):
    """1e300 was an OverflowError in validate and run, 1e20 in run (fuzz 43b item 7)."""
    _file(tmp_path, OPEN + f"outputs: {{link_series: {{interval: {interval}}}}}\n")
    line = one_error(run_cli("run", "e.yaml", "--out", "o", cwd=tmp_path))
    assert line == (f"error: e.yaml: outputs.link_series.interval: {shown} is past the engine's "
                    "clock range (8796093022208 ps = 8.796 s of simulated time)")
    assert not (tmp_path / "o").exists()
    assert one_error(run_cli("validate", "e.yaml", cwd=tmp_path)) == line


def test_a_run_of_unknown_length_is_stopped_at_the_limit(tmp_path, monkeypatch):
    """Rank programs end when they end: the loader cannot count their samples, so it lets
    the file pass and the sampler refuses the run that goes on at the limit (the last sample,
    at the run's end, counts in it), naming the field and why the length was not known."""
    e = _file(tmp_path, MACHINE + "workload: {kind: pingpong, iterations: 20}\n"
              "outputs: {link_series: {interval: 1ps}}\n")
    assert len(load_experiment(e).points) == 1
    monkeypatch.setattr(link_series, "MAX_LINK_SAMPLES", 3)
    s = Sampler(1, 4, 1)
    for at in (1, 2):
        s.tick(np.arange(4, dtype=np.int64) * at)
    with pytest.raises(ConfigError) as exc:
        s.tick(np.zeros(4, dtype=np.int64))
    assert exc.value.path == INTERVAL_FIELD and exc.value.source is None  # the point's file
    assert exc.value.message.startswith("1ps reached the limit of 3 samples of every port a "
                                        "run may take at 3ps of simulated time")
    assert "rank programs and stop.messages end when they end, so the length of this run " \
        "was not known before it started" in exc.value.message
    assert s.result().end_ps.tolist() == [1, 1, 1, 2, 2, 2]


def test_the_sampler_ends_a_known_runs_drain_with_one_interval(monkeypatch):
    """Past the limit a run of known length is not refused: the loop stops no more (``next``
    past the clock), and the last sample, at the run's end, holds the rest of the drain."""
    monkeypatch.setattr(link_series, "MAX_LINK_SAMPLES", 3)
    s = Sampler(10, 2, 1, known_ps=20)
    for at in (10, 20, 30):
        s.tick(np.array([at, 0], dtype=np.int64))
    assert s.next == TIME_LIMIT_PS and s.taken == 2
    s.take(95, np.array([95, 7], dtype=np.int64))
    r = s.result()
    assert r.coarse_from_ps == 20 and s.taken == 3
    assert list(zip(r.start_ps.tolist(), r.end_ps.tolist(), r.port.tolist(),
                    r.bytes.tolist(), strict=True)) == [
        (0, 10, 0, 10), (10, 20, 0, 10), (20, 95, 0, 75), (20, 95, 1, 7)]
    # a run that ends within an interval of the last sample: nothing coarse to report
    s = Sampler(10, 1, 1, known_ps=20)
    for _ in range(3):
        s.tick(np.array([1], dtype=np.int64))
    s.take(30, np.array([2], dtype=np.int64))
    assert s.result().coarse_from_ps is None


def pq_table(out: Path, name: str) -> dict:
    import pyarrow.parquet as pq

    return pq.read_table(out / f"{name}-0.parquet").to_pydict()


DRAIN = ("machine: {topology: {kind: dragonfly, p: 2, a: 2, h: 1}}\n"
         "workload: {kind: synthetic, pattern: uniform, load: 0.95}\n"
         "stop: {warmup: 0, measure: 1us}\n"
         "outputs: {link_series: {interval: 50ns, links: all}}\n")


def test_a_drain_past_the_limit_is_one_interval_not_a_late_refusal(tmp_path, monkeypatch):
    """The fuzz 44 case scaled down: 20 samples in the 1 us window at 50 ns, about 53 with
    the drain (the run ends near 2.6 us), a limit of 30.  The run is not refused; every
    interval before 29 x 50 ns is sampled, the rest of the run is one row per port and class,
    the summary gives where it starts, and no byte is lost."""
    for module in (link_series, load):
        monkeypatch.setattr(module, "MAX_LINK_SAMPLES", 30)
    e = _file(tmp_path, DRAIN)
    result = run_experiment(load_experiment(e), tmp_path / "o")
    summary = result.points[0].summary
    end = round(summary.simulated_time_ns * 1e3)
    assert end > 1_500_000  # the drain went on past the limit's 30 x 50 ns
    assert summary.link_series_coarse_from_ns == 29 * 50.0
    doc = json.loads((tmp_path / "o" / "results.json").read_text())
    assert doc["points"][0]["summary"]["link_series_coarse_from_ns"] == 1450.0
    t = pq_table(tmp_path / "o", "link_series")
    spans = set(zip(t["start_ps"], t["end_ps"], strict=True))
    assert spans == {(k * 50_000, (k + 1) * 50_000) for k in range(29)} | {(1_450_000, end)}
    ports = pq_table(tmp_path / "o", "ports")
    assert sum(t["bytes"]) == sum(ports["bytes"]) > 0


def test_a_drain_within_the_limit_is_sampled_at_the_interval(tmp_path):
    """The same run within the limit: the interval's grid to the run's end (an interval in
    which no port started sending has no row), and no coarse tail in the summary (the key is
    left out)."""
    e = _file(tmp_path, DRAIN)
    run_experiment(load_experiment(e), tmp_path / "o")
    doc = json.loads((tmp_path / "o" / "results.json").read_text())
    summary = doc["points"][0]["summary"]
    assert "link_series_coarse_from_ns" not in summary
    end = round(summary["simulated_time_ns"] * 1e3)
    t = pq_table(tmp_path / "o", "link_series")
    spans = set(zip(t["start_ps"], t["end_ps"], strict=True))
    grid = {(s, min(s + 50_000, end)) for s in range(0, end, 50_000)}
    assert spans <= grid and {(k * 50_000, (k + 1) * 50_000) for k in range(20)} <= spans
    assert max(t["end_ps"]) > 1_500_000  # past where the limit of 30 cut the run above


@pytest.mark.parametrize("run_ps", [12_343_500_000, 6_000_000_001, 2_000_000, 999_999_999_999])
def test_the_advised_interval_read_back_is_within_the_limit(run_ps):
    """The advice is shown to 4 digits: 12344 ps was advised as 12.34ns, which takes
    1000283 samples over 12.3435 ms, past the limit it advised to keep."""
    advice = shortest_interval(run_ps)
    ps = seconds_to_ps(parse_time(advice))
    assert link_series.samples(run_ps, ps) <= link_series.MAX_LINK_SAMPLES
    assert ps <= 1.001 * -(-run_ps // link_series.MAX_LINK_SAMPLES) + 1


def test_the_advice_of_a_refusal_passes_the_loader(tmp_path):
    e = _file(tmp_path, OPEN.replace("2us", "12.3435ms")
              + "outputs: {link_series: {interval: 1ns}}\n")
    msg = _refused(e)
    advice = msg.rsplit("give an interval of at least ", 1)[1]
    assert advice == "12.35ns"
    e.write_text(e.read_text().replace("interval: 1ns", f"interval: {advice}"))
    assert len(load_experiment(e).points) == 1
