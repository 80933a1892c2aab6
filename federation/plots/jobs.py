"""The jobs figure: each closed-loop job's completion beside the other jobs and alone, and its
slowdown (``slowdown: true``), for every point of every folder.

Read from ``summary.jobs`` of ``results.json`` only (what ``federation run`` wrote), so the
figure is the table's numbers drawn: one bar per job and point, the alone bar beside it when
the experiment ran the jobs alone, the slowdown (together over alone) on its own axis with the
line at 1 (no slowdown).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from federation.plots.data import ResultFolder, Series, figure_title
from federation.plots.style import colours, legend, new_figure, save, suptitle


@dataclass
class JobBar:
    """One closed-loop job of one point, as drawn."""

    label: str
    job: str
    point: int
    completion_ns: float
    alone_ns: float | None
    slowdown: float | None


@dataclass
class JobsFigure:
    path: Path | None
    bars: list[JobBar] = field(default_factory=list)


def job_bars(series: list[Series]) -> list[JobBar]:
    """Every closed-loop job with a completion, series by series and point by point."""
    out = []
    for s in series:
        for p in s.points:
            point = s.key_label if len(series) > 1 else ""
            sweep = ", ".join(f"{k}={v}" for k, v in p.sweep.items())
            where = ", ".join(x for x in (point, sweep) if x)
            for j in p.summary.jobs or []:
                if not j.closed_loop or j.completion_ns is None:
                    continue
                out.append(JobBar(f"{j.name}" + (f"\n{where}" if where else ""), j.name,
                                  p.index, j.completion_ns, j.completion_alone_ns,
                                  j.slowdown))
    return out


def draw_jobs(series: list[Series], folders: list[ResultFolder], out_dir: Path,
              fmt: str, name: str = "jobs") -> JobsFigure | None:
    """Completion per job (with the others, and alone) and slowdown; ``None`` without a
    closed-loop job."""
    bars = job_bars(series)
    if not bars:
        return None
    slow = any(b.slowdown is not None for b in bars)
    fig, axes = new_figure(ncols=2 if slow else 1, width=11.0 if slow else 6.4,
                           height=4.8)
    ax = axes[0][0]
    x = list(range(len(bars)))
    together, alone = colours(2)
    width = 0.4 if slow else 0.7
    ax.bar([i - (width / 2 if slow else 0) for i in x], [b.completion_ns / 1e3 for b in bars],
           width, color=together, label="with the other jobs")
    if slow:
        ax.bar([i + width / 2 for i in x],
               [(b.alone_ns or 0.0) / 1e3 for b in bars], width, color=alone,
               label="alone on the same nodes")
    ax.set_xticks(x, [b.label for b in bars], fontsize=8)
    ax.set_ylabel("completion (us, from the job's start)")
    ax.set_title("closed-loop jobs' completion")
    ax.set_ylim(bottom=0)
    legend(ax, 2 if slow else 1)
    if slow:
        ax2 = axes[0][1]
        ax2.bar(x, [b.slowdown or 0.0 for b in bars], 0.6, color=together)
        ax2.axhline(1.0, color="gray", linestyle="--", linewidth=1)
        for i, b in zip(x, bars, strict=True):
            if b.slowdown is not None:
                ax2.annotate(f"{b.slowdown:.2f}", (i, b.slowdown), ha="center",
                             va="bottom", fontsize=8)
        ax2.set_xticks(x, [b.label for b in bars], fontsize=8)
        ax2.set_ylabel("slowdown (with the others / alone)")
        ax2.set_title("slowdown")
        ax2.set_ylim(bottom=0)
    points = [p for s in series for p in s.points]
    suptitle(fig, figure_title("Jobs: completion and slowdown", folders, points))
    return JobsFigure(save(fig, out_dir, name, fmt), bars)
