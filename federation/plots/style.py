"""matplotlib set-up shared by every figure: headless, deterministic files, one look.

Importing this module imports matplotlib (with the Agg backend, so no display is needed); only
the drawing modules import it, and only commands that draw import those.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # headless: no display, same output everywhere
# Titles and legends carry names from the results (experiment, machine, routing, swept values):
# text, never TeX.  With mathtext on, a name such as "cost $\alpha$" is typeset and one with an
# unknown command ("$\x$") fails the whole figure.  Set globally: text objects read it when
# they are made, after ``new_figure`` has returned.
matplotlib.rcParams["text.parse_math"] = False

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

FORMATS = ("png", "svg", "pdf")

#: File metadata that would change from run to run (dates) is left out, so the same results
#: give the same files (PNG and SVG byte for byte; PDF too with matplotlib's fixed ids).
_METADATA: dict[str, dict[str, Any]] = {
    "png": {"Software": None},
    "svg": {"Date": None, "Creator": None},
    "pdf": {"CreationDate": None, "ModDate": None, "Creator": None, "Producer": None},
}

RC = {
    "figure.dpi": 100,
    "savefig.dpi": 120,
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "legend.fontsize": 8,
    "legend.framealpha": 0.85,
    "svg.hashsalt": "hpc-federation",  # fixed ids in SVG output
    "svg.fonttype": "none",
    "pdf.compression": 6,
    "path.simplify": True,
    "image.cmap": "viridis",
}


def new_figure(ncols: int = 1, nrows: int = 1, width: float = 6.4,
               height: float = 4.2, **kw: Any) -> tuple[Figure, Any]:
    """A figure with our style; axes as ``plt.subplots`` returns them."""
    with plt.rc_context(RC):
        fig, axes = plt.subplots(nrows, ncols, figsize=(width, height), squeeze=False,
                                 layout="constrained", **kw)
    return fig, axes


def save(fig: Figure, out_dir: Path, name: str, fmt: str) -> Path:
    """Write ``name.fmt`` into ``out_dir`` without run-dependent metadata; closes the figure."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name}.{fmt}"
    with plt.rc_context(RC), quiet():
        fig.savefig(path, format=fmt, metadata=_METADATA[fmt])
    plt.close(fig)
    return path


@contextmanager
def quiet() -> Iterator[None]:
    """matplotlib's warnings silenced: a figure whose panels leave constrained layout no room
    (many legend entries, an axis spanning 1e300) is still drawn, with the plain layout, and
    the command's output stays one message per problem, with no Python source lines in it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def suptitle(fig: Figure, text: str) -> None:
    """The figure's title, each line wrapped to the figure's width (a title wider than the
    figure is clipped at both edges, not shrunk)."""
    import textwrap

    size = RC["axes.titlesize"] + 1
    chars = max(40, int(fig.get_figwidth() * 72 / (0.6 * size)))
    lines = [w for line in text.splitlines() for w in textwrap.wrap(line, chars)]
    fig.suptitle("\n".join(lines), fontsize=size)


def colours(n: int) -> list[Any]:
    """``n`` distinguishable colours (tab10, then a sampled colormap beyond ten)."""
    if n <= 10:
        return [plt.get_cmap("tab10")(i) for i in range(n)]
    return [plt.get_cmap("turbo")(x) for x in np.linspace(0.05, 0.95, n)]


def ramp(n: int) -> list[Any]:
    """``n`` colours in order (light to dark), for lines that are ordered (loads)."""
    return [plt.get_cmap("viridis")(x) for x in np.linspace(0.0, 0.85, max(n, 1))][:n]


def wants_log(values: Sequence[float] | np.ndarray, ratio: float = 20.0) -> bool:
    """Log scale when positive values span more than ``ratio`` (latency past saturation grows
    by orders of magnitude; below it a linear axis reads better)."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v) & (v > 0)]
    return v.size > 1 and v.max() / v.min() > ratio


def log_axis(ax: Any, which: str = "x") -> None:
    """A log axis labelled with plain numbers at 1, 2 and 5 per decade (``10^3`` alone leaves a
    reader guessing what lies between the decades)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    axis = ax.xaxis if which == "x" else ax.yaxis
    (ax.set_xscale if which == "x" else ax.set_yscale)("log")
    axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())


def legend_height(n: int) -> float:
    """Extra figure height (inches) for a legend of ``n`` entries placed below the figure."""
    return 0.0 if n <= 5 else 0.3 + 0.2 * math.ceil(n / (2 if n <= 12 else 3))


#: legend entries longer than this (characters) go below the figure: inside a panel they
#: would run past its edge (series labelled with their folder and machine)
LONG_LABEL = 45


def legend(ax: Any, n: int, title: str | None = None, fig: Figure | None = None) -> None:
    """A legend that stays readable: inside the axes for a few entries; for many, below the
    figure when ``fig`` is given (beside the axes it would squeeze the panels), else beside."""
    if n == 0:
        return
    handles, labels = ax.get_legend_handles_labels()
    wide = max((len(lb) for lb in labels), default=0) > LONG_LABEL
    if n <= 5 and not (wide and fig is not None):
        ax.legend(title=title, loc="best")
    elif fig is not None:  # many entries, or entries too long for the axes
        fig.legend(handles, labels, title=title, loc="outside lower center",
                   ncols=1 if wide else 2 if n <= 12 else 3)
    else:
        ax.legend(title=title, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)


#: the units a time axis may be in, with their picoseconds
TIME_UNITS = (("ps", 1), ("ns", 10**3), ("us", 10**6), ("ms", 10**9))


@dataclass(frozen=True)
class TimeAxis:
    """A time axis in the unit its span reads best in (picoseconds in, that unit out),
    counted from ``origin_ps``: the run's start, or a round time just before a short span
    that comes late in a long run (else its labels would carry many digits)."""

    unit: str
    per_unit: int  #: picoseconds per unit
    origin_ps: int = 0

    @property
    def label(self) -> str:
        since = f" after {exact_time(self.origin_ps)}" if self.origin_ps else ""
        return f"time ({self.unit}){since}"

    def position(self, ps: Any) -> np.ndarray:
        """Times (ps) as positions on the axis."""
        return (np.asarray(ps, dtype=np.float64) - self.origin_ps) / self.per_unit

    def length(self, ps: Any) -> np.ndarray:
        """Durations (ps) in the axis's unit."""
        return np.asarray(ps, dtype=np.float64) / self.per_unit

    def apply(self, ax: Any) -> None:
        """Label ``ax``'s x axis, with plain numbers (no offset or power of ten beside them)
        at a few round ticks."""
        from matplotlib.ticker import MaxNLocator

        ax.set_xlabel(self.label)
        ax.xaxis.set_major_locator(MaxNLocator(nbins=8, steps=[1, 2, 2.5, 5, 10]))
        ax.ticklabel_format(axis="x", style="plain", useOffset=False)


def time_axis(start_ps: int, end_ps: int) -> TimeAxis:
    """The axis of times from ``start_ps`` to ``end_ps``: in the largest unit of
    :data:`TIME_UNITS` of which the span holds at least one (so 1 to 1000 of them, but for
    spans past 1000 ms), from 0; or, when the span is under a hundredth of the end, from the
    start rounded down to the power of ten at or above the span."""
    span = max(int(end_ps) - int(start_ps), 1)
    unit, per = TIME_UNITS[0]
    for u, p in TIME_UNITS:
        if span >= p:
            unit, per = u, p
    origin = 0
    if int(end_ps) > 100 * span:
        step = 10 ** len(str(span - 1)) if span > 1 else 1
        origin = int(start_ps) // step * step
    return TimeAxis(unit, per, origin)


def exact_time(ps: int) -> str:
    """``ps`` picoseconds written exactly in the largest unit of :data:`TIME_UNITS` it
    reaches (``1.000002ms``; :func:`~federation.models.units.format_time` rounds)."""
    unit, per = next((u, p) for u, p in reversed(TIME_UNITS) if ps >= p or p == 1)
    whole, frac = divmod(int(ps), per)
    digits = str(frac).rjust(len(str(per)) - 1, "0").rstrip("0") if per > 1 else ""
    return f"{whole}{'.' + digits if digits else ''}{unit}"
