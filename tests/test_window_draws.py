"""A synthetic (streamed) workload whose window gets no message, refused by ``validate`` as by
``run``, and the field such a refusal names.

The run refused a streamed job's empty window from its expected count (fewer than one
message at its load), once the machine was built and earlier sweep points had run, while
``validate`` passed it; and the estimate was not what happened: at 0.33 messages expected
some seeds create one in the window (refused anyway), and at 1.3 some create none (run, with a
summary of nothing).  The preflight now draws the job's messages from the point's seed as the
run draws them (``messages.window_draw``, the run's own check), up to the first one at or
after the window's start, so both refuse exactly the points whose window gets no message.

The refusal named ``stop.measure`` even when the sweep varied ``stop.warmup``: it names the
sweep entry that sets the window for the point (``points.window_field``).
"""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from conftest import refused_alike, simulate

from federation.errors import ConfigError
from federation.pipeline import messages, traffic
from federation.pipeline.load import load_experiment
from federation.pipeline.messages import DRAW_LIMIT, Drawn, window_draw
from federation.pipeline.point import BuildCache, preflight
from federation.plugin.components import Messages

LIMIT = 1 << 32
MACHINE = {"topology": {"kind": "dragonfly", "p": 1, "a": 2, "h": 1}}  # 6 nodes
WINDOW = (200_000, 1_200_000)  # ps
HEAD = "no packet was generated in the measurement window [200ns, 1.2us)"


def doc(load: float, seed: int = 1, **extra) -> dict:
    return {"machine": MACHINE, "workload": {"kind": "synthetic", "load": load},
            "stop": {"warmup": "0.2us", "measure": "1us"}, "seed": seed, **extra}


def preflight_error(tmp_path, d: dict) -> str | None:
    path = tmp_path / "e.yaml"
    path.write_text(yaml.safe_dump(d))
    try:
        preflight(load_experiment(path), LIMIT)
    except ConfigError as exc:
        return str(exc)
    return None


# ------------------------------------------------------------------------ defect 1: early


def test_a_load_too_low_for_the_window_is_refused_by_validate_before_any_point_runs(tmp_path):
    """The sweep's point 1 creates no message in its window: ``validate`` refused nothing,
    and ``run`` refused it after running point 0 (its tables kept, results incomplete)."""
    line = refused_alike(tmp_path, (
        "machine: {topology: {kind: dragonfly, p: 1, a: 2, h: 1}}\n"
        "workload: {kind: synthetic, load: 0.1}\n"
        "stop: {warmup: 0.2us, measure: 1us}\n"
        "sweep: {workload.load: [0.2, 1.0e-12, 0.3]}\n"))
    assert line == (
        f"error: e.yaml: stop.measure: {HEAD}: at load 1e-12 of a 5.63714e+09 B/s NIC with "
        "512 B messages, the 6 nodes create about 6.61e-11 messages in it on average (with "
        "seed 1: 0 before it, none in it); raise the load or the NIC bandwidth, or lengthen "
        "stop.measure (sweep point 1: workload.load=1e-12)")


def test_the_preflight_refuses_exactly_the_seeds_whose_run_measures_nothing(tmp_path,
                                                                            monkeypatch):
    """At 0.33 messages expected in the window, each seed either creates one there or not:
    the preflight refuses a seed exactly when the run, its own check off, creates no packet
    in the window (the old estimate refused them all at run time, and validate none)."""
    outcomes = set()
    for seed in range(1, 13):
        d = doc(0.005, seed)
        refused = preflight_error(tmp_path, d)
        with monkeypatch.context() as m:  # the run as it would go without the check
            m.setattr(messages, "check_window", lambda *a: None)
            m.setattr(traffic, "check_window", lambda *a: None)
            _, _, _, packets, _ = simulate(tmp_path, d, name="e.yaml")
        created = packets["created_ps"]
        inside = int(((created >= WINDOW[0]) & (created < WINDOW[1])).sum())
        assert (refused is not None) == (inside == 0), (seed, refused, inside)
        if refused is not None:
            assert f"{HEAD}: " in refused and f"(with seed {seed}: " in refused
            with pytest.raises(ConfigError) as e:  # the run refuses it, in the same words
                simulate(tmp_path, d, name="e.yaml")
            assert str(e.value) == refused
        outcomes.add(refused is None)
    assert outcomes == {True, False}


def test_a_seed_with_an_empty_window_at_a_load_expecting_one_is_refused(tmp_path):
    """Seed 7 at load 0.02 (1.3 messages expected) creates none in the window: the run's
    estimate let it run and measure nothing (a summary of nulls); both refuse it now, saying
    the draws."""
    line = refused_alike(tmp_path, yaml.safe_dump(doc(0.02, 7)))
    assert line.endswith("the 6 nodes create about 1.32 messages in it on average (with seed "
                         "7: 0 before it, none in it); raise the load or the NIC bandwidth, or "
                         "lengthen stop.measure")
    assert preflight_error(tmp_path, doc(0.02, 1)) is None


def test_a_job_that_starts_late_is_drawn_from_its_start(tmp_path):
    """A synthetic job beside another job, from its ``start`` (its messages are drawn on its
    own stream and moved to the machine's clock): refused alike, each job's part said."""
    line = refused_alike(tmp_path, yaml.safe_dump({
        "machine": MACHINE, "stop": {"warmup": "1us", "measure": "1us"},
        "jobs": [{"name": "a", "workload": {"kind": "synthetic", "load": 1e-9},
                  "placement": {"kind": "contiguous", "count": 3}, "start": "0.5us"},
                 {"name": "b", "workload": {"kind": "synthetic", "load": 1e-9},
                  "placement": "rest"}]}))
    assert "no job creates a message in it (job 'a': about " in line
    assert line.count("(with seed 1: 0 before it, none in it)") == 2
    assert line.endswith("move the window (stop.warmup, stop.measure), or raise a load")


def stream(*batches: tuple[int, list[int]]):
    """Batches of messages created at the given times (ps)."""
    def batches_():
        for end, times in batches:
            t = np.asarray(times, dtype=np.int64)
            z = np.zeros(t.shape[0], np.int32)
            yield end, Messages(t, z, z + 1, np.full(t.shape[0], 8, np.int64))
    return batches_


def test_window_draw_stops_at_the_first_message_from_the_window_start(tmp_path):
    path = tmp_path / "e.yaml"
    path.write_text(yaml.safe_dump(doc(1e-9)))
    point = load_experiment(path).points[0]
    built = BuildCache(LIMIT).get(point)

    def draw(*batches):
        return window_draw(point, built, WINDOW, None, 6, stream(*batches))

    assert draw((100_000, [5, 50]), (300_000, [150_000, 250_000])) == Drawn(250_000, 3, 1)
    assert draw((1_500_000, [10, 1_300_000])) == Drawn(1_300_000, 1, 1)
    assert draw((1_200_000, [10]), (2_000_000, [1_250_000])) == Drawn(None, 1, 1)
    assert draw() == Drawn(None, 0, 1)
    # past DRAW_LIMIT messages before the window it cannot tell cheaply: it may measure
    many = [(k + 1, [k] * (DRAW_LIMIT // 2)) for k in range(3)]
    assert draw(*many, (1_300_000, [1_250_000])) is None
    # a load that makes SURE_MESSAGES expected in the window is not drawn at all (0.9 on
    # 6 nodes: 59 in 1 us, 118 in 2 us)
    loud = load_experiment(path, ["workload.load=0.9"]).points[0]
    assert window_draw(loud, built, WINDOW, None, 6, stream()) == Drawn(None, 0, 1)
    assert window_draw(loud, built, (0, 2_000_000), None, 6, stream()) is None


# ------------------------------------------------------------------- defect 2: the field named


MESSAGES = ("machine: {topology: {kind: dragonfly, p: 1, a: 2, h: 1}}\n"
            "workload: {kind: messages, messages: [{at: 2us, src: 0, dst: 5, size: 512}]}\n")


@pytest.mark.parametrize("stop, sweep, field", [
    ("{warmup: 1us, measure: 5us}", "{stop.warmup: [1us, 3us]}", "sweep.stop.warmup"),
    ("{warmup: 3us, measure: 5us}", "{stop.measure: [5us, 6us]}", "sweep.stop.measure"),
    ("{warmup: 1us, measure: 5us}", "{stop.warmup: [3us], stop.measure: [5us]}",
     "sweep.stop.warmup, sweep.stop.measure"),
    ("{warmup: 3us, measure: 5us}", "{seed: [1, 2]}", "stop.measure"),
])
def test_the_refusal_names_the_field_that_sets_the_points_window(tmp_path, stop, sweep, field):
    """The warm-up a sweep varies is what moved the window past the message: named, not
    ``stop.measure`` (which the file gives once for every point)."""
    line = refused_alike(tmp_path, MESSAGES + f"stop: {stop}\nsweep: {sweep}\n")
    assert line.startswith(f"error: e.yaml: {field}: no packet was generated in the "
                           "measurement window [3us, 8us)"), line


def test_a_synthetic_window_moved_by_a_swept_warmup_names_the_warmup(tmp_path):
    line = refused_alike(tmp_path, yaml.safe_dump(
        {**doc(1e-9), "sweep": {"stop.warmup": ["0.2us", "0.3us"]}}))
    assert line.startswith(f"error: e.yaml: sweep.stop.warmup: {HEAD}: ")
    assert line.endswith("(sweep point 0: stop.warmup=0.2us)")


def test_stop_messages_past_the_messages_after_a_swept_warmup_names_the_warmup(tmp_path):
    line = refused_alike(tmp_path, MESSAGES + (
        "stop: {warmup: 1us, messages: 1}\nsweep: {stop.warmup: [1us, 3us]}\n"))
    assert line.startswith("error: e.yaml: sweep.stop.warmup: the workload creates only 0 of "
                           "the 1 messages after the warm-up (stop.warmup)")
    assert line.endswith("(sweep point 1: stop.warmup=3us)")
