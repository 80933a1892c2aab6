"""Explicit messages (``workload: {kind: messages}``) whose times the file gives, checked
against the stop rule before any point runs.

Fuzz 44, item 2: messages that all fall outside the measurement window passed ``validate``,
and only ``run`` refused them ("no packet was generated in the measurement window"), after
building the machine; likewise a ``stop.messages`` that the messages after the warm-up do not
reach (after regenerating them for every doubling of the horizon up to the clock's end, and
advising to "raise the load" of a workload that has none).  The workload now gives its times
(``Workload.message_times``), and the preflight refuses both, so ``validate`` and ``run``
give the same line.  Of several jobs, the run said "the workload created no message at all"
of jobs that had created some (outside the window): each job's part is said instead.
"""

from __future__ import annotations

import pytest
from conftest import refused_alike, run_cli

from federation.errors import ConfigError

MACHINE = "machine: {topology: {kind: dragonfly, p: 2, a: 2, h: 1}}\n"  # 12 nodes
HEAD = "no packet was generated in the measurement window [1us, 6us)"


def test_messages_all_before_the_window_are_refused_by_validate(tmp_path):
    line = refused_alike(tmp_path, MACHINE + (
        "workload: {kind: messages, messages: [{at: 0ns, src: 0, dst: 5, size: 4096},\n"
        "           {at: 0.5us, src: 1, dst: 7, size: 4096}]}\n"
        "stop: {warmup: 1us, measure: 5us}\n"))
    assert line == (f"error: e.yaml: stop.measure: {HEAD}: the workload's 2 message(s) are "
                    "created between 0ps and 500ns, outside it; move the window (stop.warmup, "
                    "stop.measure)")


def test_classes_and_a_sweep_point_are_refused_alike(tmp_path):
    """The fuzz case with QoS classes, and a sweep whose second point misses the window."""
    qos = ("machine:\n  topology: {kind: dragonfly, p: 2, a: 2, h: 1}\n  router: {vcs: 4}\n"
           "  qos: {kind: bandwidth_caps, window: 1us, classes: [{name: high, cap: 0.7}, "
           "{name: low, cap: 0.3}]}\n")
    line = refused_alike(tmp_path, qos + (
        "workload: {kind: messages, messages: [{at: 0ns, src: 0, dst: 5, size: 4096, "
        "class: high}, {at: 0ns, src: 0, dst: 7, size: 4096, class: low}]}\n"
        "stop: {warmup: 1us, measure: 5us}\n"))
    assert line.startswith(f"error: e.yaml: stop.measure: {HEAD}: the workload's 2 message(s)")
    line = refused_alike(tmp_path, MACHINE + (
        "workload: {kind: messages, messages: [{at: 2us, src: 0, dst: 5, size: 4096}]}\n"
        "stop: {warmup: 1us, measure: 5us}\nsweep: {stop.warmup: [1us, 3us]}\n"))
    # the sweep varies the warm-up: that is the field named (it said stop.measure)
    assert "e.yaml: sweep.stop.warmup: no packet was generated in the measurement window " \
        "[3us, 8us): the workload's 1 message(s) are created between 2us and 2us" in line
    assert "(sweep point 1: stop.warmup=3us)" in line


def test_a_jobs_start_moves_its_messages_out_of_the_window(tmp_path):
    line = refused_alike(tmp_path, MACHINE + (
        "jobs:\n- name: a\n  workload: {kind: messages, messages: [{at: 0ns, src: 0, dst: 5, "
        "size: 4096}]}\n  placement: all\n  start: 0.5us\n"
        "stop: {warmup: 1us, measure: 5us}\n"))
    assert line.endswith(f"{HEAD}: the workload's 1 message(s) are created between 500ns and "
                         "500ns, outside it; move the window (stop.warmup, stop.measure)")


def test_several_jobs_outside_the_window_each_say_what_they_created(tmp_path):
    """The run said "the workload created no message at all" of jobs that created some."""
    line = refused_alike(tmp_path, MACHINE + (
        "jobs:\n- name: a\n  workload: {kind: messages, messages: [{at: 0ns, src: 0, dst: 1, "
        "size: 4096}]}\n  placement: {kind: contiguous, count: 4}\n"
        "- name: b\n  workload: {kind: messages, messages: [{at: 7us, src: 0, dst: 1, "
        "size: 4096}]}\n  placement: rest\n"
        "stop: {warmup: 1us, measure: 5us}\n"))
    assert line == (f"error: e.yaml: stop.measure: {HEAD}: no job creates a message in it "
                    "(job 'a': 1 message(s) created between 0ps and 0ps; job 'b': 1 message(s) "
                    "created between 7us and 7us); move the window (stop.warmup, stop.measure)")


def test_a_drawn_job_beside_them_is_refused_by_validate_saying_each_jobs_part(tmp_path):
    """A synthetic job's messages are drawn from the point's seed: the preflight draws them
    as the run does (it left them to the run, which refused after building the machine),
    and the refusal names both jobs' parts."""
    line = refused_alike(tmp_path, MACHINE + (
        "jobs:\n- name: a\n  workload: {kind: messages, messages: [{at: 0ns, src: 0, dst: 1, "
        "size: 4096}]}\n  placement: {kind: contiguous, count: 4}\n"
        "- name: b\n  workload: {kind: synthetic, load: 1.0e-9}\n  placement: rest\n"
        "stop: {warmup: 1us, measure: 5us}\n"))
    assert line.startswith(f"error: e.yaml: stop.measure: {HEAD}: no job creates a message in "
                           "it (job 'a': 1 message(s) created between 0ps and 0ps; job 'b': "
                           "about ")
    assert line.endswith("messages in it at load 1e-09 on average (with seed 1: 0 before it, "
                         "none in it)); move the window (stop.warmup, stop.measure), or raise "
                         "a load")


def test_stop_messages_past_the_listed_messages_is_refused_by_validate(tmp_path):
    """Only messages after the warm-up count; the workload states no load to raise."""
    line = refused_alike(tmp_path, MACHINE + (
        "workload: {kind: messages, messages: [{at: 0ns, src: 0, dst: 1, size: 4096},\n"
        "           {at: 2us, src: 0, dst: 1, size: 4096}]}\n"
        "stop: {warmup: 1us, messages: 5}\n"))
    assert line == ("error: e.yaml: stop.messages: the workload creates only 1 of the 5 "
                    "messages after the warm-up (stop.warmup) before the end of the engine's "
                    "clock range (8796093022208 ps = 8.796 s of simulated time); lower "
                    "stop.messages")


@pytest.mark.parametrize("stop", ["{warmup: 1us, measure: 5us}", "{warmup: 1us, messages: 1}"])
def test_a_message_in_the_window_runs(tmp_path, stop):
    (tmp_path / "e.yaml").write_text(MACHINE + (
        "workload: {kind: messages, messages: [{at: 0ns, src: 0, dst: 5, size: 4096},\n"
        "           {at: 5.9us, src: 1, dst: 7, size: 4096}]}\n"
        f"stop: {stop}\n"))
    assert run_cli("validate", "e.yaml", cwd=tmp_path).returncode == 0
    r = run_cli("run", "e.yaml", "--out", "o", cwd=tmp_path)
    assert r.returncode == 0, r.stderr


def _summary(tmp_path, text):
    import json

    (tmp_path / "e.yaml").write_text(text)
    assert run_cli("validate", "e.yaml", cwd=tmp_path).returncode == 0
    r = run_cli("run", "e.yaml", "--out", "o", "--overwrite", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    return json.loads((tmp_path / "o" / "results.json").read_text())["points"][0]["summary"]


@pytest.mark.parametrize(("start", "measured"), [("2us", 2), ("0.5us", None)])
def test_stop_messages_counts_a_started_jobs_messages_on_the_machines_clock(tmp_path, start,
                                                                             measured):
    """A job's ``start`` moves its messages on the machine's clock, where the warm-up is:
    the preflight and the run counted them in the job's own time (messages at 2us and 2.1us
    were "0 of the 2 after the warm-up" of 1us; at 0.5us they were counted)."""
    text = MACHINE + (
        "jobs:\n- name: a\n  workload: {kind: messages, messages: [{at: 0ns, src: 0, dst: 5, "
        "size: 512}, {at: 0.1us, src: 1, dst: 7, size: 512}]}\n  placement: all\n"
        f"  start: {start}\nstop: {{warmup: 1us, messages: 2}}\n")
    if measured is None:
        line = refused_alike(tmp_path, text)
        assert "creates only 0 of the 2 messages after the warm-up" in line
    else:
        assert _summary(tmp_path, text)["packets_measured"] == measured


@pytest.mark.parametrize("start", ["0us", "1us", "3us"])
def test_stop_messages_measures_n_messages_whatever_the_jobs_start(tmp_path, start):
    """The window closes at the N-th message after the warm-up: with a job ``start`` the
    window stayed in the job's time (100, 81 and 33 messages measured for starts 0, 1, 3us)."""
    s = _summary(tmp_path, MACHINE + (
        "jobs:\n- name: a\n  workload: {kind: synthetic, load: 0.5, message_size: 512}\n"
        f"  placement: all\n  start: {start}\nstop: {{warmup: 0.5us, messages: 100}}\n"))
    assert s["packets_measured"] == 100


@pytest.mark.parametrize(("field", "words"), [
    ("size", "message 1 with size 2048.5, not a whole number"),
    ("time_ps", "message 1 with creation time 10.25, not a whole number"),
    ("cls", "message 0 of traffic class 7; the machine's QoS policy has classes 0 to 0 (-1: "
     "its default)"),
    ("huge", "message 1 of 4611686018427387904 bytes, beyond the largest message "
     "(1099511627775 B)"),  # was blamed on stop.measure, as memory
])
def test_a_plugins_messages_are_not_cut_or_classed_silently(tmp_path, field, words):
    """A workload plugin's float sizes and times were cast to integers (2048.5 B sent as
    2048), and a class past the policy's was ignored with one class, refused naming neither
    the workload nor the message with two."""
    import numpy as np

    from federation.pipeline.load import load_experiment
    from federation.pipeline.messages import check_messages
    from federation.plugin.components import Messages

    (tmp_path / "e.yaml").write_text(MACHINE + "workload: {kind: synthetic, load: 0.1}\n")
    point = load_experiment(tmp_path / "e.yaml").points[0]
    cols = {"time_ps": np.array([0, 10], dtype=np.int64), "src": np.array([0, 1]),
            "dst": np.array([1, 0]), "size": np.array([64, 2048], dtype=np.int64)}
    if field == "size":
        cols["size"] = np.array([64.0, 2048.5])
    elif field == "time_ps":
        cols["time_ps"] = np.array([0.0, 10.25])
    elif field == "huge":
        cols["size"] = np.array([64, 2**62], dtype=np.int64)
    msgs = Messages(**cols, cls=np.array([7, 0]) if field == "cls" else None)
    with pytest.raises(ConfigError) as exc:
        check_messages(point, 12, msgs)
    assert exc.value.message == f"workload 'synthetic' returned {words}"
