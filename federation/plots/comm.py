"""The communication matrix of a program as a heat map (``federation comm --plot``).

Bytes from each source rank (row) to each destination (column), on a logarithmic colour
scale, pairs that exchange nothing left blank; above :data:`MAX_SIDE` ranks consecutive
ranks are summed into blocks (the axis labels say how many per block).  The figure is
returned as bytes of the format the path's suffix names, written without dates, so the same
program gives the same file.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from federation.plots.style import _METADATA, FORMATS, RC, new_figure, quiet, suptitle
from federation.programs.analysis import CommSummary

#: most rows and columns drawn; more ranks are summed into blocks
MAX_SIDE = 512


def comm_figure(s: CommSummary, path: Path, title: str) -> tuple[bytes, np.ndarray]:
    """The heat map's file contents (format from ``path``'s suffix) and the matrix drawn."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import LogNorm, Normalize
    from matplotlib.ticker import FuncFormatter

    fmt = path.suffix.lower().lstrip(".")
    if fmt not in FORMATS:
        raise ValueError(fmt)
    mat = s.matrix("bytes", MAX_SIDE)
    per = -(-s.n_ranks // mat.shape[0]) if mat.shape[0] else 1
    fig, axes = new_figure(width=6.4, height=5.6)
    ax = axes[0][0]
    shown = np.ma.masked_less_equal(mat.astype(float), 0)
    if shown.count():
        lo, hi = float(shown.min()), float(shown.max())
        # a logarithmic scale when the pairs differ by more than a factor of 10
        norm = LogNorm(vmin=lo, vmax=hi) if hi > 10 * lo else Normalize(vmin=0, vmax=hi)
        im = ax.imshow(shown, aspect="equal", interpolation="nearest", origin="upper",
                       norm=norm, cmap=plt.get_cmap("viridis").with_extremes(bad="white"))
        bar = fig.colorbar(im, ax=ax, shrink=0.8, label="bytes sent (white: none)")
        bar.ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: _bytes(v)))
        bar.ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _pos: ""))
    unit = "rank" if per == 1 else f"block of {per} ranks"
    ax.set_xlabel(f"destination ({unit})")
    ax.set_ylabel(f"source ({unit})")
    ax.grid(False)
    suptitle(fig, title)
    buf = io.BytesIO()
    with plt.rc_context(RC), quiet():
        fig.savefig(buf, format=fmt, metadata=_METADATA[fmt])
    plt.close(fig)
    return buf.getvalue(), mat


def _bytes(v: float) -> str:
    for unit, f in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if v >= f:
            return f"{v / f:.3g} {unit}"
    return f"{v:g} B"


__all__ = ["MAX_SIDE", "comm_figure"]
