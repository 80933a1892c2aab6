"""``outputs.link_series.interval``: bounded by the samples a run may take, and by the clock.

Fuzz 2, item 12: an interval of 1 ps was accepted, and a 2 us run took 100-160 s instead of
1.5 s (every sample stops the compiled loop and reads every port's counters).  An interval that
would take more than :data:`~federation.engine.link_series.MAX_LINK_SAMPLES` samples over a run
whose length the stop rule gives is refused before the run; a run whose length is not known
before it (rank programs) is stopped by the sampler at the limit.  An interval below 1 ps
rounded to 0 and silently wrote an empty table: it is refused too.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import one_error, run_cli

from federation.engine import link_series
from federation.engine.link_series import INTERVAL_FIELD, Sampler
from federation.errors import ConfigError
from federation.pipeline.load import load_experiment

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
        "over the run's 2us (stop.warmup + stop.measure), more than the limit of 1000000 a "
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
    the file pass and the sampler refuses the sample past the limit, naming the field."""
    e = _file(tmp_path, MACHINE + "workload: {kind: pingpong, iterations: 20}\n"
              "outputs: {link_series: {interval: 1ps}}\n")
    assert len(load_experiment(e).points) == 1
    monkeypatch.setattr(link_series, "MAX_LINK_SAMPLES", 3)
    s = Sampler(1, 4, 1)
    for at in (1, 2, 3):
        s.take(at, np.arange(4, dtype=np.int64) * at)
    with pytest.raises(ConfigError) as exc:
        s.take(4, np.zeros(4, dtype=np.int64))
    assert exc.value.path == INTERVAL_FIELD and exc.value.source is None  # the point's file
    assert exc.value.message.startswith("1ps reached the limit of 3 samples of every port a "
                                        "run may take at 4ps of simulated time")
    assert s.result().end_ps.tolist() == [1, 1, 1, 2, 2, 2, 3, 3, 3]
