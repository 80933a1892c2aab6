"""Result folders as the figures need them: the series, saturation, titles.

Folders are read and checked by :mod:`federation.plots.reader` (re-exported here).  Nothing here
imports matplotlib, so the data behind every figure can be computed (and tested) without
drawing.  A *series* is the set of points of one line on a load figure: the points that share
the engine, the routing and every swept value except the load (``workload.load``) and the
output switches (``outputs.*``: what is written, not what is simulated), from one result
folder.  Its points are ordered by measured offered load.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from federation.plots import DEFAULT_SATURATION_MARGIN, HEATMAP_MAX_ROUTERS  # noqa: F401
from federation.plots.machines import PointMachine
from federation.plots.reader import (  # noqa: F401 - the folder reader, re-exported
    LOAD_KEY,
    ResultFolder,
    load_folder,
    load_folders,
    read_table,
)
from federation.plots.sweeps import OUTPUTS as SWEPT_OUTPUTS
from federation.results.model import PointResult

#: Swept keys that already show as a series' routing or engine part of its label.
REDUNDANT = frozenset({"routing.algorithm", "engine.kind"})
#: Swept keys under this prefix choose what a run writes, not what it simulates: they define
#: no series (a sweep over ``outputs.packets`` runs the same experiment twice).
OUTPUTS = SWEPT_OUTPUTS


def defines_series(key: str) -> bool:
    """Whether a swept key tells series apart: every key but the load and output switches."""
    return key != LOAD_KEY and not key.startswith(OUTPUTS)


# ---------------------------------------------------------------------------------- series
@dataclass
class Series:
    """One line of a load figure: points of one folder sharing engine, routing and every swept
    value but the load, ordered by offered load."""

    folder: ResultFolder
    engine: str
    routing: str
    fixed: dict[str, Any]
    points: list[PointResult]
    label: str = ""

    @property
    def key(self) -> tuple[Any, ...]:
        """What identifies the series across folders and engines (for the engine overlay):
        its routing and swept values, its machine (the whole resolved machine) and its
        workload but the load, so that only runs of one experiment on two engines pair up."""
        return (self.routing, tuple(sorted((k, repr(v)) for k, v in self.fixed.items()
                                           if k not in REDUNDANT)),
                self.machine.identity, _workload_identity(self.points[0]))

    @property
    def machine(self) -> PointMachine:
        """The series' machine (its points share their swept values, so their machine)."""
        return self.folder.machine_of(self.points[0])

    @property
    def key_label(self) -> str:
        """The routing and the swept values but the load, as the engine overlay names them."""
        return " ".join([self.routing, *(f"{k.rsplit('.', 1)[-1]}={v}"
                                         for k, v in self.fixed.items() if k not in REDUNDANT)])

    @property
    def slug(self) -> str:
        return re.sub(r"[^a-z0-9]+", "-", self.label.lower()).strip("-") or "run"

    def load_label(self, p: PointResult) -> str:
        """How a point is named in legends: its nominal load, else its offered load."""
        if LOAD_KEY in p.sweep:
            v = p.sweep[LOAD_KEY]  # 0.1 * 3 is 0.30000000000000004: six digits say it
            return f"load {v:.6g}" if isinstance(v, float) else f"load {v}"
        if p.summary.offered_load is not None:
            return f"offered {p.summary.offered_load:.3f}"
        return f"point {p.index}"


def _workload_identity(p: PointResult) -> str:
    """The point's workload without its load (what the load axis varies)."""
    import json

    return json.dumps({k: v for k, v in p.workload.items() if k != "load"}, sort_keys=True,
                      default=repr)


def _load_sort_key(p: PointResult) -> tuple[float, int]:
    off = p.summary.offered_load
    return (np.inf if off is None else off, p.index)


def series_of(folders: list[ResultFolder]) -> list[Series]:
    """The series of every folder, labelled by what tells them apart (see :func:`label_series`)."""
    out: list[Series] = []
    for f in folders:
        groups: dict[tuple[Any, ...], Series] = {}
        for p in f.result.points:
            fixed = {k: v for k, v in p.sweep.items() if defines_series(k)}
            k = (p.engine, p.routing, tuple((a, repr(b)) for a, b in fixed.items()))
            if k not in groups:
                groups[k] = Series(f, p.engine, p.routing, fixed, [])
            groups[k].points.append(p)
        for s in groups.values():
            s.points.sort(key=_load_sort_key)
            out.append(s)
    label_series(out)
    return out


def label_series(series: list[Series]) -> None:
    """Label each series by the parts that differ between them (folder, engine, routing, swept
    values, and the machine when folders of different machines are drawn together); a single
    series is named by its routing."""
    several_folders = len({id(s.folder) for s in series}) > 1
    machines = several_folders and len({s.machine.title for s in series}) > 1
    engines = len({s.engine for s in series}) > 1
    routings = len({s.routing for s in series}) > 1
    keys = sorted({k for s in series for k in s.fixed} - REDUNDANT)
    varying = [k for k in keys if len({repr(s.fixed.get(k)) for s in series}) > 1]
    short = short_keys(varying)
    for s in series:
        parts = []
        if several_folders:
            parts.append(s.folder.label)
        if machines:
            parts.append(s.machine.title)
        if engines:
            parts.append(s.engine)
        if routings or not (several_folders or engines or varying):
            parts.append(s.routing)
        parts += [f"{short[k]}={s.fixed.get(k)}" for k in varying]
        s.label = " ".join(str(x) for x in parts)
    seen: dict[str, int] = {}
    for s in series:  # two series could still share a label (e.g. equal folder names)
        n = seen.get(s.label, 0)
        seen[s.label] = n + 1
        if n:
            s.label = f"{s.label} #{n + 1}"


def short_keys(keys: list[str]) -> dict[str, str]:
    """Each dotted key by its last part, or by as many last parts as tell it from the others
    (``machine.links.global.latency`` and ``...local.latency``: ``global.latency`` and
    ``local.latency``, not ``latency`` twice)."""
    out = {}
    for k in keys:
        parts = k.split(".")
        n = 1
        while n < len(parts) and any(o != k and o.split(".")[-n:] == parts[-n:] for o in keys):
            n += 1
        out[k] = ".".join(parts[-n:])
    return out


def saturation_index(offered: np.ndarray, accepted: np.ndarray,
                     margin: float = DEFAULT_SATURATION_MARGIN) -> int | None:
    """Index of the first point whose accepted load is below its offered load by more than
    ``margin`` (a fraction of the offered load), or ``None`` if no point is saturated.

    The points must be in the order of the curve (increasing offered load)."""
    for i, (o, a) in enumerate(zip(offered, accepted, strict=True)):
        if np.isfinite(o) and a < o * (1.0 - margin):
            return i
    return None


def measured_latency_ns(packets: dict[str, np.ndarray]) -> np.ndarray:
    """Creation-to-delivery latency (ns) of the packets measured in the window, as the summary
    counts them (``summary.latency_ns`` is over exactly these)."""
    m = packets["measured"].astype(bool)
    return (packets["delivered_ps"][m] - packets["created_ps"][m]) / 1e3


def workload_title(points: list[PointResult]) -> str:
    """The workload as a figure title names it: ``synthetic uniform`` (kind and pattern)."""
    names = []
    for p in points:
        for w in p.workload.get("jobs") or [p.workload]:
            pattern = w.get("pattern")
            if isinstance(pattern, dict):
                pattern = pattern.get("kind")
            text = " ".join(str(x) for x in (w.get("name"), w.get("kind"), pattern) if x)
            if text not in names:
                names.append(text)
    return ", ".join(names) or "?"


def figure_title(what: str, folders: list[ResultFolder], points: list[PointResult]) -> str:
    """``WHAT -- machine (kind, routers, nodes), workload W`` (two lines when long): the
    machine of the points drawn (each its own: a sweep over the machine runs several)."""
    machines = []
    by_id = {id(p): f for f in folders for p in f.result.points}
    for p in points:
        f = by_id.get(id(p))
        title = f.machine_of(p).title if f is not None else None
        if title is not None and title not in machines:
            machines.append(title)
    if not machines:
        machines = list(dict.fromkeys(f.machine_title for f in folders))
    machine = machines[0] if len(machines) == 1 else f"{len(machines)} machines"
    names = list(dict.fromkeys(f.result.experiment for f in folders if f.result.experiment))
    exp = f"experiment {names[0]}: " if len(names) == 1 else ""
    return f"{what}\n{exp}{machine}; workload: {workload_title(points)}"
