"""Figures against offered load: latency (mean and p99) and accepted load.

The x axis is the *measured* offered load of each point (``summary.offered_load``: bytes created
in the window over what the NICs could inject), the value the run's table prints, not the
nominal ``workload.load``.  Offered load is a fraction of NIC bandwidth, so its axis is linear;
latency switches to a log axis when it spans more than a factor of 20 (past saturation it grows
by orders of magnitude).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from federation.plots.data import (
    DEFAULT_SATURATION_MARGIN,
    ResultFolder,
    Series,
    figure_title,
    saturation_index,
)
from federation.plots.style import (
    colours,
    legend,
    legend_height,
    log_axis,
    new_figure,
    save,
    suptitle,
    wants_log,
)


@dataclass
class LoadCurve:
    """The points of one series as drawn: summary values, in order of offered load."""

    label: str
    engine: str
    offered: list[float]
    accepted: list[float]
    latency_mean_ns: list[float]
    latency_p99_ns: list[float]
    point_indices: list[int]
    saturation_index: int | None
    #: offered load of the first saturated point (where the marker is drawn), or None
    saturation_load: float | None


@dataclass
class LoadFigure:
    """What a load figure plotted, and where it was written."""

    path: Path | None
    margin: float
    curves: list[LoadCurve] = field(default_factory=list)


def load_curves(series: list[Series], margin: float = DEFAULT_SATURATION_MARGIN
                ) -> list[LoadCurve]:
    """Each series' summary values, with its saturation point (points without an offered load,
    e.g. an explicit message list, are left out)."""
    out = []
    for s in series:
        pts = [p for p in s.points if p.summary.offered_load is not None]
        offered = np.array([p.summary.offered_load for p in pts], dtype=float)
        accepted = np.array([p.summary.accepted_load for p in pts], dtype=float)
        sat = saturation_index(offered, accepted, margin)

        def nan(x: float | None) -> float:
            return float("nan") if x is None else float(x)

        out.append(LoadCurve(
            label=s.label, engine=s.engine, offered=offered.tolist(), accepted=accepted.tolist(),
            latency_mean_ns=[nan(p.summary.latency_ns.mean) for p in pts],
            latency_p99_ns=[nan(p.summary.latency_ns.p99) for p in pts],
            point_indices=[p.index for p in pts], saturation_index=sat,
            saturation_load=None if sat is None else float(offered[sat])))
    return out


def _sat_legend(ax, curves: list[LoadCurve], margin: float) -> int:
    """A legend entry for the saturation marker when a curve has one; returns entries added."""
    if all(c.saturation_index is None for c in curves):
        return 0
    ax.plot([], [], marker="X", markersize=9, color="white", markeredgecolor="black",
            linestyle="none", label=f"saturation: accepted < offered by > {100 * margin:g} %")
    return 1


#: Line styles cycled with the colours, so that series with equal values (UGAL and minimal
#: routing below saturation) stay distinguishable where their lines coincide.
LINESTYLES = ("-", "--", "-.", ":")


def _style(i: int) -> dict[str, object]:
    return {"linestyle": LINESTYLES[i % len(LINESTYLES)], "marker": "o", "markersize": 4}


def curve_label(c: LoadCurve) -> str:
    """The legend entry: the series and where it saturates (markers of several series can
    coincide, the numbers cannot be misread)."""
    if c.saturation_load is None:
        return f"{c.label} (not saturated up to {max(c.offered):.2f})"
    return f"{c.label} (saturated from {c.saturation_load:.2f})"


def _mark_saturation(ax, c: LoadCurve, y: list[float], colour, i: int) -> None:
    """A cross on the first saturated point; later series get smaller crosses, drawn on top, so
    crosses on the same point show as nested rings."""
    if c.saturation_index is None:
        return
    j = c.saturation_index
    ax.plot([c.offered[j]], [y[j]], marker="X", markersize=max(5, 13 - 3 * i), color=colour,
            markeredgecolor="black", linestyle="none", zorder=5 + i)


def load_axis(ax, curves: list[LoadCurve]) -> None:
    top = max((max(c.offered + c.accepted) for c in curves if c.offered), default=1.0)
    ax.set_xlim(0, max(1.0, top * 1.05))
    ax.set_xlabel("offered load (fraction of NIC bandwidth)")


def draw_latency(series: list[Series], folders: list[ResultFolder], out_dir: Path, fmt: str,
                 margin: float = DEFAULT_SATURATION_MARGIN,
                 name: str = "latency-load") -> LoadFigure:
    """Mean and p99 latency against offered load, one line per series, saturation marked."""
    curves = [c for c in load_curves(series, margin) if c.offered]
    fig, axes = new_figure(ncols=2, width=10.0, height=4.4 + legend_height(len(curves) + 1))
    cols = colours(len(curves))
    values = [v for c in curves for v in c.latency_mean_ns + c.latency_p99_ns]
    log = wants_log(values)
    for ax, what, attr in ((axes[0][0], "mean", "latency_mean_ns"),
                           (axes[0][1], "99th percentile", "latency_p99_ns")):
        for i, (c, col) in enumerate(zip(curves, cols, strict=True)):
            y = getattr(c, attr)
            ax.plot(c.offered, y, color=col, label=curve_label(c), **_style(i))
            _mark_saturation(ax, c, y, col, i)
        load_axis(ax, curves)
        shown = [v for c in curves for v in getattr(c, attr)
                 if v is not None and math.isfinite(v) and v > 0]
        on_log = log and bool(shown)  # a log axis with nothing above 0 cannot be drawn
        ax.set_ylabel(f"{what} packet latency (ns{', log scale' if on_log else ''})")
        ax.set_title(f"{what} latency, creation to delivery")
        if on_log:
            log_axis(ax, "y")
        else:
            ax.set_ylim(bottom=0)
        if not shown:  # rank programs' packets have no percentiles (docs/programs.md)
            ax.text(0.5, 0.5, "no values in these results", transform=ax.transAxes,
                    ha="center", va="center", color="gray")
    legend(axes[0][1], len(curves) + _sat_legend(axes[0][1], curves, margin), fig=fig)
    points = [p for s in series for p in s.points]
    suptitle(fig, figure_title("Packet latency against offered load", folders, points))
    return LoadFigure(save(fig, out_dir, name, fmt), margin, curves)


def draw_throughput(series: list[Series], folders: list[ResultFolder], out_dir: Path, fmt: str,
                    margin: float = DEFAULT_SATURATION_MARGIN,
                    name: str = "throughput") -> LoadFigure:
    """Accepted against offered load with the ideal diagonal and the saturation margin."""
    curves = [c for c in load_curves(series, margin) if c.offered]
    fig, axes = new_figure(width=6.4, height=5.0 + legend_height(len(curves) + 3))
    ax = axes[0][0]
    load_axis(ax, curves)
    hi = ax.get_xlim()[1]
    ax.plot([0, hi], [0, hi], color="gray", linestyle="--", linewidth=1,
            label="ideal (accepted = offered)")
    ax.plot([0, hi], [0, hi * (1 - margin)], color="gray", linestyle=":", linewidth=1,
            label=f"saturation margin ({100 * margin:g} % below)")
    for i, (c, col) in enumerate(zip(curves, colours(len(curves)), strict=True)):
        ax.plot(c.offered, c.accepted, color=col, label=curve_label(c), **_style(i))
        _mark_saturation(ax, c, c.accepted, col, i)
    ax.set_ylim(0, hi)
    ax.set_ylabel("accepted load (fraction of NIC bandwidth)")
    legend(ax, len(curves) + 2 + _sat_legend(ax, curves, margin), fig=fig)
    points = [p for s in series for p in s.points]
    suptitle(fig, figure_title("Accepted against offered load", folders, points))
    return LoadFigure(save(fig, out_dir, name, fmt), margin, curves)
