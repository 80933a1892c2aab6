"""The traffic classes' share of the busiest links over the run (``outputs.link_series``).

Read from each point's ``link_series`` table: the bytes each port started sending per
interval and traffic class, over what the link could carry in the interval (``utilization``).
The busiest links are those that sent the most bytes in all; each gets a panel with one
stacked area per class, so a class that a QoS policy holds back shows as the other's share
growing.  A packet counts in the interval its transmission starts, so an interval of a few
packets' times can show a little more than 1.

The time axis is in the unit the series' span reads best in (:func:`~federation.plots.style.
time_axis`: ps, ns, us or ms).  Intervals too narrow to see at that span (a series sampled
every few picoseconds) are drawn as the mean utilisation over at most :data:`MAX_BARS` bins of
a round width, each interval's busy time spread over the bins it overlaps.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from federation.plots.data import ResultFolder, Series, figure_title
from federation.plots.style import (
    TimeAxis,
    colours,
    exact_time,
    legend,
    new_figure,
    save,
    suptitle,
    time_axis,
)
from federation.results.model import PointResult

#: panels per figure: the links that sent the most bytes
BUSIEST = 4
#: bars a panel draws at most across its span (finer intervals are binned)
MAX_BARS = 400


@dataclass
class ClassShare:
    """One link of one point, as drawn: per class, the utilisation in each interval."""

    point: int
    port: int
    link_class: str
    start_ps: np.ndarray  #: each interval's start (intervals where no port sent are left out)
    end_ps: np.ndarray
    by_class: dict[str, np.ndarray] = field(default_factory=dict)


@dataclass
class ClassShareFigure:
    path: Path | None  #: the first point's file
    links: list[ClassShare] = field(default_factory=list)
    #: every file drawn, one per point with a link series (``NAME-pN``)
    paths: list[Path] = field(default_factory=list)
    #: each figure's time axis and the width (ps) of the bins it drew (``None``: the intervals)
    axes: list[tuple[TimeAxis, int | None]] = field(default_factory=list)


def bin_width(start_ps: np.ndarray, end_ps: np.ndarray) -> int | None:
    """The width (ps: 1, 2 or 5 times a power of ten) of the bins that draw intervals from
    ``start_ps`` to ``end_ps`` in at most :data:`MAX_BARS` bars, ``None`` when the narrowest
    interval already fits that many across the span."""
    span = int(end_ps.max()) - int(start_ps.min())
    if span <= MAX_BARS * int((end_ps - start_ps).min()):
        return None
    raw = -(-span // MAX_BARS)
    power = 10 ** (len(str(raw)) - 1)
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)


def binned(start_ps: np.ndarray, end_ps: np.ndarray, u: np.ndarray,
           width: int) -> tuple[np.ndarray, np.ndarray]:
    """``(bin edges (ps), mean utilisation in each bin)`` of a link busy ``u`` of each
    interval from ``start_ps`` to ``end_ps`` (sorted, not overlapping; nothing between them):
    the busy time up to each edge, interpolated within the interval it falls in."""
    lo, hi = int(start_ps.min()) // width * width, int(end_ps.max())
    edges = np.append(np.arange(lo, hi, width, dtype=np.int64), hi)
    busy = u * (end_ps - start_ps).astype(np.float64)
    after = np.cumsum(busy)
    xp = np.column_stack([start_ps, end_ps]).ravel().astype(np.float64)
    fp = np.column_stack([after - busy, after]).ravel()
    done = np.interp(edges.astype(np.float64), xp, fp)
    return edges, np.diff(done) / np.diff(edges)


def class_names(point: PointResult) -> list[str]:
    """The point's class names (``summary.classes``), else ``class 0`` (one class)."""
    return [c.name for c in point.summary.classes or []] or ["class 0"]


def busiest_shares(table: dict[str, np.ndarray], point: PointResult,
                   n: int = BUSIEST) -> list[ClassShare]:
    """The ``n`` ports of ``table`` (a link series) that sent the most bytes, each with its
    per-class utilisation at every interval of the series (0 where it sent nothing)."""
    port, cls, end = table["port"], table["class"], table["end_ps"]
    if not port.size:
        return []
    ports, inverse = np.unique(port, return_inverse=True)
    total = np.bincount(inverse, weights=table["bytes"].astype(np.float64))
    top = ports[np.lexsort((ports, -total))[:n]]
    times, first = np.unique(end, return_index=True)
    starts = table["start_ps"][first]
    # one series per class of the point (the reader refuses a class number beyond them), never
    # one per number up to the largest seen
    names = class_names(point)
    out = []
    for p in top.tolist():
        rows = port == p
        share = ClassShare(point.index, p, str(table["link_class"][rows][0])
                           if "link_class" in table else "", starts, times)
        for c, name in enumerate(names):
            sel = rows & (cls == c)
            u = np.zeros(times.shape[0])
            u[np.searchsorted(times, end[sel])] = table["utilization"][sel]
            share.by_class[name] = u
        out.append(share)
    return out


def draw_class_share(series: Series, folders: list[ResultFolder], out_dir: Path, fmt: str,
                     name: str = "link-classes") -> ClassShareFigure | None:
    """One figure per point of the series with a link series (``NAME-pN``), a panel per
    busiest link; every file in ``paths``; ``None`` without link series."""
    figure = ClassShareFigure(None)
    for p in series.points:
        if not series.folder.has_table(p, "link_series"):
            continue
        links = busiest_shares(series.folder.table(p, "link_series"), p)
        if not links:
            continue
        fig, axes = new_figure(ncols=1, nrows=len(links), width=7.0,
                               height=1.0 + 1.8 * len(links), sharex=True)
        starts, ends = links[0].start_ps, links[0].end_ps  # the series' intervals, every link's
        axis = time_axis(int(starts.min()), int(ends.max()))
        width = bin_width(starts, ends)
        for ax, share in zip((a[0] for a in axes), links, strict=False):
            _draw_share(ax, share, axis, width)
        axis.apply(axes[-1][0])
        if width is not None:
            axes[-1][0].set_xlabel(f"{axis.label}; each bar the mean over {exact_time(width)}")
        legend(axes[0][0], len(links[0].by_class), title="traffic class")
        sweep = ", ".join(f"{k}={v}" for k, v in p.sweep.items())
        suptitle(fig, figure_title("Traffic classes on the busiest links"
                                   + (f" ({sweep})" if sweep else ""), folders, [p]))
        path = save(fig, out_dir, f"{name}-p{p.index}", fmt)
        figure.path = figure.path or path
        figure.paths.append(path)
        figure.links += links
        figure.axes.append((axis, width))
    return figure if figure.links else None


def _draw_share(ax: Any, share: ClassShare, axis: TimeAxis, width: int | None) -> None:
    """One link's panel: a stacked bar per interval (or bin) and class."""
    bottom: np.ndarray | None = None
    for (label, u), colour in zip(share.by_class.items(), colours(len(share.by_class)),
                                  strict=True):
        if width is None:
            x, w = share.start_ps, share.end_ps - share.start_ps
        else:
            e, u = binned(share.start_ps, share.end_ps, u, width)
            x, w = e[:-1], np.diff(e)
        bottom = np.zeros(x.shape[0]) if bottom is None else bottom
        ax.bar(axis.position(x), u, axis.length(w), bottom=bottom, align="edge",
               color=colour, label=label, linewidth=0)
        bottom = bottom + u
    ax.set_ylabel("utilisation")
    ax.set_title(f"port {share.port}" + (f" ({share.link_class})" if share.link_class else ""),
                 fontsize=9)
    ax.set_ylim(bottom=0)
