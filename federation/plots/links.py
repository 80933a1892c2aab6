"""Link utilisation: a box per point and link class, and a router x port heatmap.

Utilisation is ``utilization_window`` of the ports table: the time a port spent serialising
within the measurement window over the window's length (0 to 1), the same figure as the run's
``busiest_links``.  Terminal links are split by direction, because injection (NIC to router) is
set by the offered load while ejection (router to node) shows the destination hot spots.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from matplotlib.patches import Patch

from federation.errors import FederationError
from federation.plots.data import (
    HEATMAP_MAX_ROUTERS,
    ResultFolder,
    Series,
    figure_title,
)
from federation.plots.style import colours, new_figure, save, suptitle
from federation.results.model import PointResult

INJECTION = "terminal: NIC to router"
EJECTION = "terminal: router to node"
UTIL_LABEL = "utilisation in the measurement window"


def port_classes(ports: dict[str, np.ndarray]) -> np.ndarray:
    """Each port's class for the figures: the link class, terminal split by direction."""
    cls = ports["link_class"].astype(object).copy()
    term = cls == "terminal"
    cls[term & (ports["router"] < 0)] = INJECTION
    cls[term & (ports["router"] >= 0)] = EJECTION
    return cls


def class_order(cls: np.ndarray) -> list[str]:
    """Classes in the order of the port numbering (terminal first, cables as built)."""
    _, first = np.unique(cls, return_index=True)
    names = [cls[i] for i in sorted(first)]
    return sorted(names, key=lambda c: (c != INJECTION, c != EJECTION, names.index(c)))


@dataclass
class UtilisationBox:
    series: str
    point: int
    load: str
    link_class: str
    values: np.ndarray  # utilization_window of every port of the class


@dataclass
class UtilisationFigure:
    path: Path | None
    classes: list[str]
    boxes: list[UtilisationBox] = field(default_factory=list)


def utilisation_boxes(series: list[Series]) -> tuple[list[str], list[UtilisationBox]]:
    """Per series, point and class the window utilisation of every port (points without a
    ports table are left out)."""
    boxes: list[UtilisationBox] = []
    classes: list[str] = []
    for s in series:
        for p in s.points:
            if not s.folder.has_table(p, "ports"):
                continue
            t = s.folder.table(p, "ports")
            cls = port_classes(t)
            for c in class_order(cls):
                if c not in classes:
                    classes.append(c)
                boxes.append(UtilisationBox(s.label, p.index, s.load_label(p), c,
                                            t["utilization_window"][cls == c].astype(float)))
    return classes, boxes


def draw_utilisation(series: list[Series], folders: list[ResultFolder], out_dir: Path,
                     fmt: str, name: str = "link-utilisation") -> UtilisationFigure | None:
    """One panel per link class; in each, a box of port utilisation per point, coloured by
    series.  ``None`` when no point has a ports table."""
    classes, boxes = utilisation_boxes(series)
    if not boxes:
        return None
    ncols = min(len(classes), 2)
    nrows = math.ceil(len(classes) / ncols)
    n_per_panel = max(sum(1 for b in boxes if b.link_class == c) for c in classes)
    width = max(7.0, min(16.0, ncols * (1.8 + 0.32 * n_per_panel)))
    fig, axes = new_figure(ncols=ncols, nrows=nrows, width=width, height=2.2 + 2.6 * nrows,
                           sharey=True)
    labels = list(dict.fromkeys(b.series for b in boxes))
    col = dict(zip(labels, colours(len(labels)), strict=True))
    for i, c in enumerate(classes):
        ax = axes[i // ncols][i % ncols]
        mine = [b for b in boxes if b.link_class == c]
        pos, x = [], 0.0
        for j, b in enumerate(mine):
            if j and b.series != mine[j - 1].series:
                x += 0.8  # a gap between series
            pos.append(x)
            x += 1.0
        bp = ax.boxplot([b.values for b in mine], positions=pos, widths=0.7, patch_artist=True,
                        showfliers=True, flierprops={"markersize": 2, "alpha": 0.4},
                        medianprops={"color": "black", "linewidth": 1.5})
        for patch, b in zip(bp["boxes"], mine, strict=True):
            patch.set_facecolor(col[b.series])
            patch.set_alpha(0.75)
        ax.set_xticks(pos, [b.load.removeprefix("load ") for b in mine],
                      rotation=90 if len(mine) > 20 else 0)
        ax.set_title(f"{c} links\n{mine[0].values.size} ports")
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("nominal load" if mine[0].load.startswith("load") else "point")
        if i % ncols == 0:
            ax.set_ylabel(f"{UTIL_LABEL}\n(fraction of time busy)")
    for k in range(len(classes), nrows * ncols):
        axes[k // ncols][k % ncols].set_visible(False)
    if len(labels) > 1:
        handles = [Patch(facecolor=col[lb], alpha=0.75, label=lb) for lb in labels]
        fig.legend(handles=handles, loc="outside lower center", ncols=min(len(labels), 4))
    points = [p for s in series for p in s.points]
    suptitle(fig, figure_title("Link utilisation per link class", folders, points))
    return UtilisationFigure(save(fig, out_dir, name, fmt), classes, boxes)


# ---------------------------------------------------------------------------------- heatmap
@dataclass
class Heatmap:
    """Router (or group) x port utilisation of one point, as drawn."""

    path: Path | None
    series: str
    point: int
    rows: str  # "router", "group" or "routers (blocks of N)"
    matrix: np.ndarray  # rows x columns, NaN where a router has no such port
    column_classes: list[str]  # class of each column


def port_matrix(ports: dict[str, np.ndarray]) -> tuple[np.ndarray, list[str], np.ndarray]:
    """``(matrix, column classes, row routers)``: one row per router, its ports as columns grouped
    by class (the k-th port of a class of every router in the same column).  Within a router and
    class, ports go in the order of their ``port`` number (the native engine numbers a router's
    ports consecutively, SST numbers them per router: the same order either way)."""
    r = ports["router"]
    keep = r >= 0
    router = r[keep].astype(np.int64)
    cls = port_classes(ports)[keep]
    local = ports["port"][keep]
    util = ports["utilization_window"][keep].astype(float)
    order_names = class_order(cls)
    ci = np.array([order_names.index(c) for c in cls], dtype=np.int64)
    order = np.lexsort((local, ci, router))
    router, ci, util = router[order], ci[order], util[order]
    group_key = router * len(order_names) + ci
    _, start, inverse, counts = np.unique(group_key, return_index=True, return_inverse=True,
                                          return_counts=True)
    rank = np.arange(group_key.size) - start[inverse]
    widths = np.zeros(len(order_names), dtype=np.int64)
    np.maximum.at(widths, ci, rank + 1)
    offsets = np.concatenate([[0], np.cumsum(widths)[:-1]])
    routers = np.unique(router)
    row = np.searchsorted(routers, router)
    mat = np.full((routers.size, int(widths.sum())), np.nan)
    mat[row, offsets[ci] + rank] = util
    columns = [c for c, w in zip(order_names, widths, strict=True) for _ in range(w)]
    return mat, columns, routers


def router_groups(folder: ResultFolder, point: PointResult, n_routers: int) -> np.ndarray | None:
    """Each router's group, from the machine rebuilt from the point's resolved document;
    ``None`` when the topology has no groups (every router its own) or cannot be rebuilt."""
    machine = point.resolved.get("machine")
    if not isinstance(machine, dict):
        return None
    try:
        from federation.models.base import validate_model
        from federation.models.machine import Machine
        from federation.pipeline.load import resolve_machine
        from federation.plugin.registry import get_plugins

        source = str(folder.path / "results.json")
        rm = resolve_machine(validate_model(Machine, machine, source), source, get_plugins())
        groups = rm.topology.build().router_group
    except FederationError:
        return None
    if groups.size != n_routers or int(groups.max()) + 1 >= n_routers:
        return None
    return np.asarray(groups)


def aggregate_rows(mat: np.ndarray, routers: np.ndarray, folder: ResultFolder,
                   point: PointResult, limit: int) -> tuple[np.ndarray, str]:
    """Rows averaged by group (or by blocks of consecutive routers when the topology has no
    groups) once there are more than ``limit`` routers."""
    if routers.size <= limit:
        return mat, "router"
    groups = router_groups(folder, point, int(routers.max()) + 1)
    if groups is not None:
        key, label = groups[routers], "group"
    else:
        block = math.ceil(routers.size / limit)
        key, label = routers // block, f"routers (blocks of {block})"
    uniq, inv = np.unique(key, return_inverse=True)
    out = np.full((uniq.size, mat.shape[1]), np.nan)
    with np.errstate(invalid="ignore"):
        for c in range(mat.shape[1]):
            col = mat[:, c]
            ok = ~np.isnan(col)
            s = np.bincount(inv[ok], weights=col[ok], minlength=uniq.size)
            n = np.bincount(inv[ok], minlength=uniq.size)
            out[:, c] = np.where(n > 0, s / np.maximum(n, 1), np.nan)
    return out, label


def draw_heatmap(s: Series, folders: list[ResultFolder], out_dir: Path, fmt: str,
                 name: str, limit: int = HEATMAP_MAX_ROUTERS) -> Heatmap | None:
    """Router x port utilisation of the series' highest-load point with a ports table."""
    pts = [p for p in s.points if s.folder.has_table(p, "ports")]
    if not pts:
        return None
    p = pts[-1]
    mat, columns, routers = port_matrix(s.folder.table(p, "ports"))
    mat, rows = aggregate_rows(mat, routers, s.folder, p, limit)
    import matplotlib.pyplot as plt

    height = min(9.0, 3.0 + 0.08 * mat.shape[0])
    width = min(14.0, max(6.4, 3.5 + 0.09 * mat.shape[1]))
    fig, axes = new_figure(width=width, height=height)
    ax = axes[0][0]
    cmap = plt.get_cmap("viridis").with_extremes(bad="lightgray")
    # More rows than pixels: the antialiasing filter blends neighbouring rows instead of
    # dropping some (nearest would alias into stripes that are not in the data).  The filter
    # works on both axes, so each column is repeated until it spans many pixels: its edges stay
    # sharp and no column bleeds into the next.  Fewer rows than pixels: plain cells.
    dense = mat.shape[0] > (height - 1.6) * 120 / 2  # rows per pixel of the axes (savefig.dpi)
    reps = max(1, math.ceil(width * 150 / max(mat.shape[1], 1))) if dense else 1
    im = ax.imshow(np.ma.masked_invalid(np.repeat(mat, reps, axis=1)), aspect="auto",
                   interpolation="antialiased" if dense else "nearest",
                   interpolation_stage="rgba", vmin=0.0, vmax=1.0, cmap=cmap, origin="upper",
                   extent=(-0.5, mat.shape[1] - 0.5, mat.shape[0] - 0.5, -0.5))
    # in short lines: one line as long as the colour bar is clipped at the figure's edges
    fig.colorbar(im, ax=ax, label="utilisation in the\nmeasurement window\n(fraction of "
                 "time busy)" + ("\nmean over the rows' routers" if rows != "router" else ""))
    edges = [i for i in range(1, len(columns)) if columns[i] != columns[i - 1]]
    for e in edges:
        ax.axvline(e - 0.5, color="white", linewidth=1.5)
    starts = [0, *edges]
    ends = [*edges, len(columns)]
    ax.set_xticks([(a + b - 1) / 2 for a, b in zip(starts, ends, strict=True)],
                  # a router's terminal ports all lead to nodes: the short name keeps narrow
                  # blocks' labels apart
                  [f"{'terminal' if columns[a] == EJECTION else columns[a]}\n"
                   f"({b - a} port{'s' if b - a > 1 else ''})"
                   for a, b in zip(starts, ends, strict=True)],
                  fontsize=7)
    ax.set_xlabel("output port of the router, grouped by link class (gray: no such port)")
    ax.set_ylabel(rows)
    ax.grid(False)
    title = f"Router x port utilisation, {s.label}, {s.load_label(p)}"
    suptitle(fig, figure_title(title, folders, [p]))
    return Heatmap(save(fig, out_dir, name, fmt), s.label, p.index, rows, mat, columns)
