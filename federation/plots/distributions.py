"""Distributions per point: packet latency (histogram and CDF), hop count, message completion
(with the Aries noise paper's variability figures: median and its 95 % interval, QCD,
max / median).

One figure per series, one line (or bar set) per point, coloured light to dark by load.  Only
what the summary counts is drawn: packets and messages *created in the measurement window*
(``measured``), so the CDF's median and 99th percentile are the summary's ``p50`` and ``p99``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from federation.plots.data import ResultFolder, Series, figure_title, measured_latency_ns
from federation.plots.style import (
    legend,
    legend_height,
    log_axis,
    new_figure,
    ramp,
    save,
    suptitle,
    wants_log,
)
from federation.results.model import Variability
from federation.results.variability import variability


@dataclass
class Distribution:
    """One point's sample as drawn (sorted values; the CDF is ``(i + 1) / n``); message
    completion: one per job when the point ran several, with its variability figures."""

    point: int
    label: str
    values: np.ndarray
    job: str | None = None
    stats: Variability | None = None
    #: the background's messages of a rank-program run (drawn apart from the programs')
    background: bool = False


@dataclass
class DistributionFigure:
    path: Path | None
    series: str
    what: str
    dists: list[Distribution] = field(default_factory=list)


#: A CDF is drawn through at most this many of its steps (evenly spaced in rank, first and last
#: kept): a million-packet point would otherwise cost seconds and megabytes of SVG for no
#: visible difference.
CDF_MAX_STEPS = 4000


def _cdf(ax, d: Distribution, colour) -> None:
    v = d.values
    rank = np.arange(1, v.size + 1) / v.size
    if v.size > CDF_MAX_STEPS:
        keep = np.unique(np.linspace(0, v.size - 1, CDF_MAX_STEPS).round().astype(np.int64))
        v, rank = v[keep], rank[keep]
    # from 0 at the smallest value, so the first step is drawn like the others
    ax.step(np.r_[v[:1], v], np.r_[0.0, rank], where="post", color=colour, label=d.label)


def _hist(ax, d: Distribution, bins: np.ndarray, colour) -> None:
    ax.hist(d.values, bins=bins, histtype="step", density=False, color=colour, label=d.label,
            weights=np.full(d.values.size, 100.0 / max(d.values.size, 1)))


def latency_samples(s: Series) -> list[Distribution]:
    out = []
    for p in s.points:
        if s.folder.has_table(p, "packets"):
            v = np.sort(measured_latency_ns(s.folder.table(p, "packets")))
            if v.size:
                out.append(Distribution(p.index, s.load_label(p), v))
    return out


def draw_latency_distribution(s: Series, folders: list[ResultFolder], out_dir: Path, fmt: str,
                              name: str) -> DistributionFigure | None:
    """Histogram (share of packets per bin) and CDF of measured packet latency, per point."""
    dists = latency_samples(s)
    if not dists:
        return None
    fig, axes = new_figure(ncols=2, width=10.0, height=4.4)
    allv = np.concatenate([d.values for d in dists])
    log = wants_log(allv)
    lo, hi = float(allv.min()), float(allv.max())
    bins = (np.geomspace(max(lo, 1e-3), hi, 60) if log and lo > 0 and hi > lo
            else np.linspace(lo, hi if hi > lo else lo + 1, 60))
    for d, c in zip(dists, ramp(len(dists)), strict=True):
        _hist(axes[0][0], d, bins, c)
        _cdf(axes[0][1], d, c)
    for ax in axes[0]:
        ax.set_xlabel("packet latency (ns" + (", log scale)" if log else ")"))
        if log:
            log_axis(ax, "x")
    axes[0][0].set_ylabel("packets in the bin (% of the point's measured packets)")
    axes[0][0].set_title("histogram")
    axes[0][1].set_ylabel("fraction of measured packets with latency <= x")
    axes[0][1].set_ylim(0, 1.01)
    axes[0][1].set_title("cumulative distribution")
    legend(axes[0][1], len(dists))
    suptitle(fig, figure_title(f"Packet latency distribution, {s.label}", folders, s.points))
    return DistributionFigure(save(fig, out_dir, name, fmt), s.label, "latency_ns", dists)


def draw_hops(s: Series, folders: list[ResultFolder], out_dir: Path, fmt: str,
              name: str) -> DistributionFigure | None:
    """Share of measured packets per router-to-router hop count, bars side by side per point."""
    dists = []
    for p in s.points:
        if s.folder.has_table(p, "packets"):
            t = s.folder.table(p, "packets")
            v = np.sort(t["hops"][t["measured"].astype(bool)].astype(np.int64))
            if v.size:
                dists.append(Distribution(p.index, s.load_label(p), v))
    if not dists:
        return None
    top = int(max(d.values.max() for d in dists))
    hops = np.arange(0, top + 1)
    width = 0.8 / len(dists)
    fig, axes = new_figure(width=max(6.4, min(12.0, 2.0 + 0.25 * len(hops) * len(dists))),
                           height=4.2)
    ax = axes[0][0]
    for j, (d, c) in enumerate(zip(dists, ramp(len(dists)), strict=True)):
        share = 100.0 * np.bincount(d.values, minlength=top + 1) / d.values.size
        ax.bar(hops - 0.4 + width * (j + 0.5), share, width=width, color=c, label=d.label)
    ax.set_xticks(hops)
    ax.set_xlabel("router-to-router hops per packet")
    ax.set_ylabel("measured packets (%)")
    ax.grid(axis="x", visible=False)
    legend(ax, len(dists))
    suptitle(fig, figure_title(f"Hop count, {s.label}", folders, s.points))
    return DistributionFigure(save(fig, out_dir, name, fmt), s.label, "hops", dists)


def completion_samples(s: Series) -> list[Distribution]:
    """Per point (and per job when its messages table names several), the completion times
    of its measured messages, with their variability figures (the summary's, recomputed).

    A rank-program run's table holds the background's messages beside the programs' (its
    ``background`` column): the point's sample is the programs' alone, the messages the
    summary's ``programs.message_completion_ns`` counts, and the background's is a sample of
    its own.  Pooled, the labels were neither figure."""
    dists = []
    for p in s.points:
        if not s.folder.has_table(p, "messages"):
            continue
        t = s.folder.table(p, "messages")
        for name, background, sel in completion_groups(t):
            ps = np.asarray(t["completion_ps"])[sel]
            if ps.size:
                label = (s.load_label(p) + (f", {name}" if name else "")
                         + (", background" if background else ""))
                dists.append(Distribution(p.index, label, np.sort(ps / 1e3), name,
                                          variability(ps, per_unit=1e3), background))
    return dists


def completion_groups(t: dict[str, np.ndarray]) -> list[tuple[str | None, bool, np.ndarray]]:
    """The samples of a messages table, as ``(job, background, rows)``: one per job when it
    names several (as the summary's jobs count them: a closed-loop job's rows are its
    programs', an open-loop job's background rows from its nodes), else the programs' (or
    the open-loop run's) measured messages and, apart, the background's."""
    ok = t["measured"].astype(bool) & (t["completed_ps"] >= 0)
    if "job" in t:
        job = np.asarray(t["job"], dtype=object)
        names = sorted({str(x) for x in job[ok]} - {""})
        if len(names) > 1:
            return [(name, False, ok & (job == name)) for name in names]
    bg = (np.asarray(t["background"], dtype=bool) if "background" in t
          else np.zeros(ok.shape, dtype=bool))
    return [(None, False, ok & ~bg), (None, True, ok & bg)]


def spread_label(d: Distribution) -> str:
    """The legend entry: the point, then the paper's variability figures."""
    v = d.stats
    if v is None:
        return d.label
    ci = (f" [{v.median_ci_low:.4g}, {v.median_ci_high:.4g}]"
          if v.median_ci_low is not None else "")
    qcd = "-" if v.qcd is None else f"{v.qcd:.3f}"
    ratio = "-" if v.max_over_median is None else f"{v.max_over_median:.2f}"
    return f"{d.label}: median {v.median:.4g}{ci} ns, QCD {qcd}, max/median {ratio}"


def draw_message_completion(s: Series, folders: list[ResultFolder], out_dir: Path, fmt: str,
                            name: str) -> DistributionFigure | None:
    """CDF of message completion time (creation to the last packet's delivery) of the messages
    created in the window, per point (per job when several ran), each annotated with the Aries
    noise paper's variability figures: the median with its 95 % confidence interval (drawn as
    a bar across the median), QCD and max / median (:mod:`federation.results.variability`)."""
    dists = completion_samples(s)
    if not dists:
        return None
    fig, axes = new_figure(width=7.6, height=4.6 + legend_height(len(dists)))
    ax = axes[0][0]
    for d, c in zip(dists, ramp(len(dists)), strict=True):
        _cdf(ax, d, c)
        ax.lines[-1].set_label(spread_label(d))
        v = d.stats
        if v is not None and v.median_ci_low is not None:
            ax.errorbar([v.median], [0.5], xerr=[[v.median - v.median_ci_low],
                                                 [v.median_ci_high - v.median]],
                        fmt="o", color=c, markersize=3, capsize=3, linewidth=1)
    log = wants_log(np.concatenate([d.values for d in dists]))
    if log:
        log_axis(ax, "x")
    ax.set_xlabel("message completion time (ns" + (", log scale)" if log else ")"))
    ax.set_ylabel("fraction of measured messages completed within x")
    ax.set_ylim(0, 1.01)
    ax.set_title("bars at 0.5: the median's 95 % confidence interval", fontsize="small")
    legend(ax, len(dists), fig=fig)
    suptitle(fig, figure_title(f"Message completion, {s.label}", folders, s.points))
    return DistributionFigure(save(fig, out_dir, name, fmt), s.label, "completion_ns", dists)
