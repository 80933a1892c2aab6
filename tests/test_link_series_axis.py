"""The time axis of the link-series figure (``link-classes-pN``, ``outputs.link_series``).

It was always in microseconds: a series sampled every few picoseconds over a few hundred
nanoseconds read ``0.2 0.3 0.4`` us (or, on a short span late in a run, an offset and many
digits), and its picosecond-wide bars did not show at all.  The unit now comes from the span
(ps, ns, us, ms), a short span late in a long run counts from a round origin, and intervals
too narrow to see are drawn as the mean over round bins.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import run_cli

from federation.plots import classes
from federation.plots.classes import MAX_BARS, bin_width, binned
from federation.plots.style import TimeAxis, exact_time, time_axis


@pytest.mark.parametrize("start, end, unit, label", [
    (0, 1, "ps", "time (ps)"),
    (0, 800, "ps", "time (ps)"),
    (0, 5_000, "ns", "time (ns)"),
    (100_000, 999_999, "ns", "time (ns)"),
    (0, 2_000_000, "us", "time (us)"),
    (0, 600_000_000, "us", "time (us)"),
    (0, 20_000_000_000, "ms", "time (ms)"),
    (0, 8_000_000_000_000, "ms", "time (ms)"),
    # a short span late in a long run: from a round origin before it, not 1,000,000.05 ns
    (1_000_000_050, 1_000_000_250, "ps", "time (ps) after 1ms"),
    (150_300_000, 151_200_000, "ns", "time (ns) after 150us"),
    (2_000_123_000, 2_000_125_000, "ns", "time (ns) after 2.00012ms"),
])
def test_the_unit_comes_from_the_span(start, end, unit, label):
    axis = time_axis(start, end)
    assert (axis.unit, axis.label) == (unit, label)
    x = axis.position([start, end])
    assert 0 <= x[0] < x[1] and x[1] - x[0] >= 1  # at least one unit across
    assert x[1] < 10_000  # labels of a few digits (ms past 1 s: up to 8796)


def test_exact_time_does_not_round():
    assert [exact_time(t) for t in (0, 999, 1_000, 1_500_000, 1_000_002_000)] == [
        "0ps", "999ps", "1ns", "1.5us", "1.000002ms"]


def test_bins_only_when_the_intervals_are_too_narrow_to_see():
    starts = np.arange(0, 100_000, 250, dtype=np.int64)  # 400 intervals of 250 ps
    assert bin_width(starts, starts + 250) is None
    starts = np.arange(0, 450_000, 2, dtype=np.int64)  # 2 ps over 450 ns
    assert bin_width(starts, starts + 2) == 2_000  # 1125 ps rounded up to 2, 5 or 10
    assert 450_000 / 2_000 <= MAX_BARS


def test_binning_keeps_every_intervals_busy_time():
    """Each interval's busy time (utilisation x length) lands in the bins it overlaps, a
    coarse last interval (the drain) and gaps (no port sent) included."""
    start = np.array([0, 2, 4, 10, 12, 20], dtype=np.int64)
    end = np.array([2, 4, 6, 12, 14, 95], dtype=np.int64)
    u = np.array([1.0, 0.5, 3.0, 0.0, 2.0, 0.2])
    edges, mean = binned(start, end, u, 5)
    assert edges.tolist() == [0, 5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 55, 60, 65, 70, 75, 80,
                              85, 90, 95]
    assert float((mean * np.diff(edges)).sum()) == pytest.approx(float((u * (end - start)).sum()))
    assert mean[:3].tolist() == pytest.approx([(2 + 1 + 3) / 5, 3 / 5, 4 / 5])
    assert mean[4:].tolist() == pytest.approx([0.2] * 15)


def run_with_link_series(tmp_path, stop: str, interval: str, last: str = "1ns"):
    (tmp_path / "e.yaml").write_text(
        "machine: {topology: {kind: dragonfly, p: 1, a: 2, h: 1}}\n"
        "workload: {kind: messages, messages: [{at: 0ns, src: 0, dst: 5, size: 512},\n"
        f"           {{at: {last}, src: 1, dst: 5, size: 1024}}]}}\n"
        f"stop: {stop}\noutputs: {{link_series: {{interval: {interval}}}}}\n")
    r = run_cli("run", "e.yaml", "--out", "o", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    return tmp_path / "o"


def drawn_axis(tmp_path, out, monkeypatch):
    """The link-series figure drawn from ``out``: its record, and the x label, the tick
    labels and the offset text of its bottom panel as matplotlib shows them."""
    from federation.plots.data import load_folders
    from federation.plots.standard import draw_all

    seen = {}
    save = classes.save

    def keep(fig, *a, **kw):  # noqa: ANN001, ANN202
        ax = [a for a in fig.axes if a.get_xlabel()][0]  # the bottom panel's
        fig.canvas.draw()
        seen.update(label=ax.get_xlabel(), offset=ax.xaxis.get_offset_text().get_text(),
                    ticks=[t.get_text() for t in ax.get_xticklabels() if t.get_text()])
        return save(fig, *a, **kw)

    monkeypatch.setattr(classes, "save", keep)
    drawn = draw_all(load_folders([out]), tmp_path / "plots")
    return drawn.figures["link_classes"][0], seen


def test_a_series_sampled_every_few_picoseconds_reads_in_nanoseconds(tmp_path, monkeypatch):
    out = run_with_link_series(tmp_path, "{warmup: 0ns, measure: 5ns}", "2ps")
    fig, seen = drawn_axis(tmp_path, out, monkeypatch)
    (axis, width), = fig.axes
    assert axis == TimeAxis("ns", 1_000) and width is not None and width % 1_000 == 0
    assert seen["label"] == f"time (ns); each bar the mean over {exact_time(width)}"
    assert seen["offset"] == "" and 3 <= len(seen["ticks"]) <= 9
    assert all(len(t) <= 4 for t in seen["ticks"]), seen["ticks"]  # "200", not "0.0002"


def test_a_series_of_microseconds_keeps_its_intervals(tmp_path, monkeypatch):
    out = run_with_link_series(tmp_path, "{warmup: 0ns, measure: 3us}", "100ns", "2.5us")
    fig, seen = drawn_axis(tmp_path, out, monkeypatch)
    assert fig.axes == [(TimeAxis("us", 1_000_000), None)]
    assert seen["label"] == "time (us)" and seen["offset"] == ""
    assert all(len(t) <= 4 for t in seen["ticks"]), seen["ticks"]
