"""Cross-validation: the same series run on different engines, on one figure.

Result folders of other engines (the SimGrid and SST adapters) use the same results schema and
name their engine in each point, so two folders of one experiment compare point by point.  A
series is matched across engines by its routing, swept values, machine and workload
(``Series.key``), a point by its nominal load (the swept ``workload.load``, else its index).  The
native engine, when present, is the reference the others are measured against.

Only series of the same machine (the whole resolved machine: topology, links, NIC, router) and
the same workload are compared: a native run of one machine beside a SimGrid run of another
would show the machines' difference as the engines'.  Such series are left out of the overlay
(:func:`unmatched` says which, and the figure is not drawn when none pairs up); the latency and
throughput figures still draw every series, each labelled with its folder and machine.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from federation.plots.curves import LoadCurve, load_axis, load_curves
from federation.plots.data import (
    DEFAULT_SATURATION_MARGIN,
    LOAD_KEY,
    ResultFolder,
    Series,
    figure_title,
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
from federation.results.model import PointResult

#: What is compared: (attribute of :class:`LoadCurve`, axis label, summary value of a point).
METRICS = (
    ("latency_mean_ns", "mean packet latency (ns)", lambda p: p.summary.latency_ns.mean),
    ("accepted", "accepted load (fraction of NIC bandwidth)", lambda p: p.summary.accepted_load),
)
STYLES = ("-", "--", ":", "-.")


@dataclass
class EngineComparison:
    """Each series' curve per engine, and per metric the relative difference of every other
    engine from the reference engine (``engines[0]``) at matching nominal load, as
    ``(reference offered load, other / reference - 1)``."""

    path: Path | None
    engines: list[str]
    curves: dict[str, list[LoadCurve]] = field(default_factory=dict)
    rel_diff: dict[str, dict[str, dict[str, list[tuple[float, float]]]]] = field(
        default_factory=dict)  # metric -> series key label -> engine -> points


def _by_nominal(s: Series) -> dict[object, PointResult]:
    return {p.sweep.get(LOAD_KEY, p.index): p for p in s.points
            if p.summary.offered_load is not None}


def relative_difference(ref: Series, other: Series, value) -> list[tuple[float, float]]:
    """``(reference offered load, other / reference - 1)`` at each nominal load both have."""
    a, b = _by_nominal(ref), _by_nominal(other)
    out = []
    for n, p in a.items():
        q = b.get(n)
        va, vb = value(p), None if q is None else value(q)
        if va and vb is not None:
            out.append((p.summary.offered_load, vb / va - 1.0))
    return sorted(out)


def _by_key(series: list[Series]) -> dict[tuple, dict[str, Series]]:
    by_key: dict[tuple, dict[str, Series]] = {}
    for s in series:
        by_key.setdefault(s.key, {}).setdefault(s.engine, s)
    return by_key


def unmatched(series: list[Series]) -> list[Series]:
    """The series that no series of another engine matches (machine, workload, routing and
    swept values): the overlay leaves them out."""
    return [s for v in _by_key(series).values() if len(v) < 2 for s in v.values()]


def why_not_compared(series: list[Series]) -> str:
    """Why the overlay leaves ``series`` (unmatched ones) out, naming their machines."""
    parts = [f"{s.folder.label} ({s.engine}, {s.key_label}) on {s.machine.title}"
             for s in series]
    return ("no series of another engine ran the same machine, workload, routing and swept "
            "values (an engine comparison of different experiments would show their "
            "difference as the engines'): " + "; ".join(parts))


def draw_engines(series: list[Series], folders: list[ResultFolder], out_dir: Path, fmt: str,
                 margin: float = DEFAULT_SATURATION_MARGIN,
                 name: str = "engines") -> EngineComparison | None:
    """Mean latency and accepted load against offered load, one colour per series and one line
    style per engine; below each, the other engines relative to the reference in percent.
    ``None`` when no series has a match on another engine (see the module docstring)."""
    by_key = _by_key(series)
    keys = [k for k, v in by_key.items() if len(v) > 1]
    if not keys:
        return None
    engines = sorted({e for k in keys for e in by_key[k]}, key=lambda e: (e != "native", e))
    n_lines = sum(len(by_key[k]) for k in keys)
    fig, axes = new_figure(ncols=2, nrows=2, width=11.0, height=6.5 + legend_height(n_lines),
                           sharex=True, gridspec_kw={"height_ratios": [2, 1]})
    out = EngineComparison(None, engines)
    for col, k in zip(colours(len(keys)), keys, strict=True):
        label = next(iter(by_key[k].values())).key_label
        ref = by_key[k].get(engines[0])
        for e, ls in zip(engines, STYLES * len(engines), strict=False):
            s = by_key[k].get(e)
            if s is None:
                continue
            c = load_curves([s], margin)[0]
            out.curves.setdefault(label, []).append(c)
            for j, (attr, _, value) in enumerate(METRICS):
                axes[0][j].plot(c.offered, getattr(c, attr), linestyle=ls, marker="o",
                                markersize=4, color=col, label=f"{label} ({e})")
                if e == engines[0] or ref is None:
                    continue
                pts = relative_difference(ref, s, value)
                out.rel_diff.setdefault(attr, {}).setdefault(label, {})[e] = pts
                if pts:
                    axes[1][j].plot([x for x, _ in pts], [100 * y for _, y in pts],
                                    linestyle=ls, marker="o", markersize=4, color=col)
    all_curves = [c for v in out.curves.values() for c in v]
    for j, (attr, what, _) in enumerate(METRICS):
        top, bottom = axes[0][j], axes[1][j]
        if attr == "accepted":
            hi = max(1.0, *(x for c in all_curves for x in c.offered))
            top.plot([0, hi], [0, hi], color="gray", linestyle="--", linewidth=1)
            top.set_title("accepted load (gray dashes: ideal)")
        else:
            top.set_title("mean packet latency, creation to delivery")
        if attr != "accepted" and wants_log([v for c in all_curves for v in getattr(c, attr)]):
            log_axis(top, "y")
        top.set_ylabel(what)
        bottom.axhline(0, color="gray", linewidth=1)
        bottom.set_ylabel(f"relative to {engines[0]} (%)")
        load_axis(bottom, all_curves)
        bottom.set_xlabel(f"offered load of {engines[0]} (fraction of NIC bandwidth)")
    legend(axes[0][0], n_lines, title="series (engine)", fig=fig)
    points = [p for k in keys for s in by_key[k].values() for p in s.points]
    suptitle(fig, figure_title(f"Engines compared: {', '.join(engines)}", folders, points))
    out.path = save(fig, out_dir, name, fmt)
    return out
