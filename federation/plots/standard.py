"""The standard set of figures for one or more result folders.

Load figures (latency, throughput) and the link-utilisation boxes put every series of every
folder on one figure, so several folders compare directly; the heatmap and the distributions
are one figure per series.  The engine overlay is drawn when the series ran on more than one
engine (e.g. the native engine's folder beside a SimGrid adapter's).  A figure whose data the
folders lack (no ports table, a workload without offered load) is skipped with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from federation.plots.data import (
    DEFAULT_SATURATION_MARGIN,
    HEATMAP_MAX_ROUTERS,
    ResultFolder,
    Series,
    series_of,
)


@dataclass
class Drawn:
    """Every figure drawn (kind -> the data it plotted, each with its ``path``) and what was
    skipped, with why."""

    figures: dict[str, list[Any]] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)

    def add(self, kind: str, fig: Any | None, why_not: str) -> None:
        if fig is None:
            self.skipped.append(f"{kind.replace('_', ' ')}: {why_not}")
        else:
            self.figures.setdefault(kind, []).append(fig)

    @property
    def paths(self) -> list[Path]:
        """Every file drawn (a figure kind may write several: one per point)."""
        return [p for figs in self.figures.values() for f in figs for p in figure_paths(f)]


def figure_paths(fig: Any) -> list[Path]:
    """The files of one drawn figure: its ``paths`` when it wrote several, else its ``path``."""
    paths = getattr(fig, "paths", None)
    if paths:
        return list(paths)
    return [fig.path] if fig.path is not None else []


def draw_all(folders: list[ResultFolder], out_dir: Path, fmt: str = "png",
             margin: float = DEFAULT_SATURATION_MARGIN,
             heatmap_limit: int = HEATMAP_MAX_ROUTERS) -> Drawn:
    """Draw the standard figures of ``folders`` into ``out_dir`` as ``fmt`` files
    (matplotlib's warnings silenced: :func:`~federation.plots.style.quiet`)."""
    from federation.plots.style import quiet

    with quiet():
        return _draw_all(folders, out_dir, fmt, margin, heatmap_limit)


def _draw_all(folders: list[ResultFolder], out_dir: Path, fmt: str, margin: float,
              heatmap_limit: int) -> Drawn:
    from federation.plots import classes, curves, distributions, engines, jobs, links

    if not 0 <= margin < 1:
        raise ValueError("the saturation margin is a fraction of the offered load in [0, 1)")
    series = series_of(folders)
    drawn = Drawn()
    has_load = any(p.summary.offered_load is not None for s in series for p in s.points)
    no_load = "no point has an offered load (the workload is an explicit message list)"
    if has_load:
        drawn.add("latency", curves.draw_latency(series, folders, out_dir, fmt, margin), "")
        drawn.add("throughput", curves.draw_throughput(series, folders, out_dir, fmt, margin), "")
    else:
        drawn.skipped += [f"latency: {no_load}", f"throughput: {no_load}"]
    if len({s.engine for s in series}) > 1:
        alone = engines.unmatched(series)
        drawn.add("engines", engines.draw_engines(series, folders, out_dir, fmt, margin),
                  engines.why_not_compared(alone))
        if alone and "engines" in drawn.figures:
            drawn.skipped.append("engines: left out of the comparison: "
                                 + engines.why_not_compared(alone))
    drawn.add("utilisation", links.draw_utilisation(series, folders, out_dir, fmt),
              "no ports tables (outputs.ports was off)")
    if any(p.summary.jobs for s in series for p in s.points):
        drawn.add("jobs", jobs.draw_jobs(series, folders, out_dir, fmt),
                  "no closed-loop job (completion and slowdown are of rank programs)")
    used: set[str] = set()
    for s in series:
        suffix = "" if len(series) == 1 else f"-{s.slug}"
        while suffix in used:  # two labels with the same slug
            suffix += "-"
        used.add(suffix)
        drawn.add("heatmap", links.draw_heatmap(s, folders, out_dir, fmt,
                                                f"port-heatmap{suffix}", heatmap_limit),
                  f"{s.label}: no ports tables")
        drawn.add("latency_distribution", distributions.draw_latency_distribution(
            s, folders, out_dir, fmt, f"latency-distribution{suffix}"),
            _why_not(s, "packets", "packets"))
        drawn.add("hops", distributions.draw_hops(s, folders, out_dir, fmt, f"hops{suffix}"),
                  _why_not(s, "packets", "packets"))
        drawn.add("message_completion", distributions.draw_message_completion(
            s, folders, out_dir, fmt, f"message-completion{suffix}"),
            _why_not(s, "messages", "completed messages"))
        if any(s.folder.has_table(p, "link_series") for p in s.points):
            drawn.add("link_classes", classes.draw_class_share(
                s, folders, out_dir, fmt, f"link-classes{suffix}"),
                f"{s.label}: its link_series tables hold no bytes")
    return drawn


def _why_not(s: Series, table: str, rows: str) -> str:
    """Why a distribution of ``s`` has nothing to draw: no such tables, or tables without a
    measured row (e.g. a rank-program run's written before its packets were listed)."""
    if any(s.folder.has_table(p, table) for p in s.points):
        return f"{s.label}: its {table} tables hold no measured {rows}"
    return f"{s.label}: no {table} tables (outputs.{table} was off)"
