"""The reader's range and consistency checks where the bound is a fact of how the engine
counts (:mod:`federation.plots.reader` reads, these refuse).

Each refusal is a :class:`~federation.errors.ConfigError` naming the file, the field (or the
table's column) and the limit:

* ``results.json``: ``status`` agreeing with ``missing_points`` and ``error`` (the runner
  writes an incomplete run with its missing points and why, a complete one with neither);
  integers within the engine's int64 counters; latency figures ordered ``p50 <= p99 <= max``
  and ``mean <= max``; a swept number equal to the one in the point's ``resolved`` document;
  ``files`` naming only the tables a native run writes; a native open-loop point's offered
  and accepted loads within the bytes it injected and delivered, and the accepted load within
  what its machine's terminal links can deliver in its measurement window.
* ports table: port numbers below the machine's port count, routers of the point's own
  machine, link classes of the machine, every row stating its port as the machine wires it
  (:mod:`federation.plots.wiring`: native and SimGrid list each port once, SST each
  ``(router, port)`` of merlin's), and a window utilisation the link can reach: at most 1
  for the engines that count busy time (native, SimGrid); for SST, whose figure is the bytes
  a port sent in the window over what its link carries in it, no more than the link can start
  sending in the window (:func:`check_sst_utilisation`).
* link series: classes below the point's traffic classes, each (port, class, interval)
  once, intervals in order, ports stated as wired, the utilisation the bytes give over the
  interval at the link's bandwidth, and no more bytes than the link can start sending in the
  interval.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from federation.errors import ConfigError
from federation.models.units import seconds_to_ps
from federation.plots.machines import PointMachine, rounding_factor
from federation.plots.wiring import (
    GLOBAL_PORT_ENGINES,
    Refuse,
    check_global_ports,
    check_sst_ports,
    sst_ports,
    wiring_of,
)
from federation.results.model import LatencyStats, PointResult, RunResult

#: the largest integer the engine counts in (int64)
INT64_MAX = 2**63 - 1
#: the tables a native run writes (``files`` kinds); other engines add files of their own
NATIVE_FILES = frozenset({"packets", "ports", "messages", "nics", "link_series"})
#: engines whose ports table's ``utilization_window`` is the time a port was busy within the
#: window over its length (at most 1); SST's is the bytes sent over what the link could carry
BUSY_TIME_ENGINES = frozenset({"native", "simgrid"})
#: relative slack of the comparisons of floating-point figures
REL = 1e-9


# ----------------------------------------------------------------------- results.json
def check_document(r: RunResult, source: str) -> None:
    """``status``, integers, latencies, sweeps and ``files`` of every point."""
    if r.status == "incomplete" and not r.missing_points:
        raise ConfigError("the run says it is incomplete but lists no missing point (an "
                          "incomplete run lists the points that did not finish)",
                          source=source, path="status")
    if r.status == "complete" and r.error is not None:
        raise ConfigError(f"the run says it is complete but records an error ({r.error!r}); "
                          "a complete run has none", source=source, path="error")
    for i, p in enumerate(r.points):
        where = f"points[{i}]"
        big = _too_large(p.summary.model_dump(mode="json"), f"{where}.summary")
        if big is not None:
            raise ConfigError(f"{big[1]} is larger than the engine's counters hold "
                              f"({INT64_MAX}, int64)", source=source, path=big[0])
        for name, lat in _latencies(p):
            _check_latency(lat, source, f"{where}.summary.{name}")
        _check_swept(p, source, where)
        if p.engine == "native":
            for kind in p.files:
                if kind not in NATIVE_FILES:
                    raise ConfigError(f"{kind!r} is not a table of a native run (it writes "
                                      f"{', '.join(sorted(NATIVE_FILES))})", source=source,
                                      path=f"{where}.files.{kind}")


def first_number(x: Any, path: str, bad: Callable[[float], bool]) -> tuple[str, Any] | None:
    """The first number under ``x`` (a document's nested mappings and lists) for which
    ``bad`` holds, and where it is (``path`` and the keys and indices to it); bools are not
    numbers here."""
    stack: list[tuple[str, Any]] = [(path, x)]
    while stack:
        where, v = stack.pop()
        if isinstance(v, (int, float)) and not isinstance(v, bool) and bad(v):
            return where, v
        if isinstance(v, dict):
            stack.extend((f"{where}.{k}", w) for k, w in v.items())
        elif isinstance(v, list):
            stack.extend((f"{where}[{i}]", w) for i, w in enumerate(v))
    return None


def _too_large(x: Any, path: str) -> tuple[str, int] | None:
    """The first integer under ``x`` beyond int64 (what no table column can hold)."""
    return first_number(x, path, lambda v: isinstance(v, int) and v > INT64_MAX)


def _latencies(p: PointResult) -> list[tuple[str, LatencyStats]]:
    s = p.summary
    out = [("latency_ns", s.latency_ns), ("network_latency_ns", s.network_latency_ns)]
    out += [(f"classes[{k}].latency_ns", c.latency_ns) for k, c in enumerate(s.classes or [])]
    out += [(f"jobs[{k}].latency_ns", j.latency_ns) for k, j in enumerate(s.jobs or [])
            if j.latency_ns is not None]
    return out


def _above(a: float, b: float) -> bool:
    """``a`` above ``b`` by more than rounding."""
    return a > b + REL * max(abs(b), 1.0)


def _check_latency(lat: LatencyStats, source: str, where: str) -> None:
    """A distribution's percentiles in order and its mean within its range."""
    order = [(k, v) for k, v in (("p50", lat.p50), ("p99", lat.p99), ("max", lat.max))
             if v is not None]
    for (a, va), (b, vb) in zip(order, order[1:], strict=False):
        if _above(va, vb):
            raise ConfigError(f"{va:g} is above {b} {vb:g}: percentiles of one sample are "
                              f"ordered (p50 <= p99 <= max)", source=source, path=f"{where}.{a}")
    if lat.mean is not None and lat.max is not None and _above(lat.mean, lat.max):
        raise ConfigError(f"{lat.mean:g} is above max {lat.max:g}: a mean is within its "
                          "sample", source=source, path=f"{where}.mean")


def _check_swept(p: PointResult, source: str, where: str) -> None:
    """A swept number is the one the point's resolved document ran with (strings are left
    alone: a swept ``1us`` is resolved as 1e-06)."""
    for key, value in p.sweep.items():
        node: Any = p.resolved
        for part in key.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if (node is None or isinstance(value, bool) or isinstance(node, bool)
                or not isinstance(value, (int, float)) or not isinstance(node, (int, float))):
            continue
        if not math.isclose(value, node, rel_tol=1e-12, abs_tol=0.0):
            raise ConfigError(f"{value!r}, but the point's resolved document ran with "
                              f"{node!r} (resolved.{key})", source=source,
                              path=f"{where}.sweep.{key}")


def check_loads(p: PointResult, m: PointMachine, source: str, where: str) -> None:
    """A native open-loop point's loads (bytes created, and delivered, in the window over
    what its NICs could inject in it, ``capacity``) within what they count: the offered
    bytes are some of the bytes injected, the accepted some of those delivered, and the
    accepted no more than the nodes' terminal links can deliver in the window (each its
    bandwidth over the window, the engine's rounding of a packet's time to whole picoseconds
    allowed for, and one packet begun before it).  Only where the window is known
    (``stop.measure``); not for other engines (SimGrid delivers a message's packets at once).
    The window is taken a picosecond short, which only widens the bounds."""
    stop = p.resolved.get("stop")
    measure = stop.get("measure") if isinstance(stop, dict) else None
    nic, term = m.nic_bandwidth, m.bandwidth.get("terminal")
    if (p.engine != "native" or p.summary.programs is not None or nic is None or term is None
            or m.packet_size is None or isinstance(measure, bool)
            or not isinstance(measure, (int, float)) or not measure > 0):
        return
    window_ps = round(measure * 1e12) - 1
    if window_ps <= 0:
        return
    s = p.summary
    capacity = window_ps / 1e12 * nic * m.nodes
    for field, load, total, what in (
            ("offered_load", s.offered_load, s.bytes_injected, "bytes_injected"),
            ("accepted_load", s.accepted_load, s.bytes_delivered, "bytes_delivered")):
        if load is not None and _above(load * capacity, float(total)):
            raise ConfigError(
                f"{load:g} of the NICs' bandwidth is {load * capacity:.6g} bytes over the "
                f"{window_ps + 1} ps window on {m.nodes} nodes, more than the point's "
                f"{what} ({total})", source=source, path=f"{where}.summary.{field}")
    limit = float(link_limit(term, window_ps / 1e12, m.packet_size)) / (nic * window_ps / 1e12)
    if _above(s.accepted_load, limit):
        raise ConfigError(
            f"{s.accepted_load:g} is more than the machine's terminal links can deliver in "
            f"the {window_ps + 1} ps window: at most {limit:.6g} of the NICs' bandwidth "
            f"(terminal links at {term:g} B/s, NICs at {nic:g} B/s, one {m.packet_size} B "
            "packet more per node)", source=source, path=f"{where}.summary.accepted_load")


def link_limit(bandwidth: np.ndarray | float, span_s: np.ndarray | float,
               packet: int) -> np.ndarray:
    """The most bytes a port can start in ``span_s`` seconds on a link of ``bandwidth`` B/s
    (element-wise): the bandwidth over the span, the engine's rounding of a packet's time to
    whole picoseconds allowed for (:func:`~federation.plots.machines.rounding_factor`), and
    one ``packet`` begun at its end.  The one bound of the loads, the SST utilisations and
    the link series."""
    bw = np.asarray(bandwidth, dtype=np.float64)
    values, inverse = np.unique(bw, return_inverse=True)
    factor = np.array([rounding_factor(b, packet) for b in values.tolist()])
    return bw * span_s * factor[inverse.reshape(bw.shape)] + packet


# ----------------------------------------------------------------------------- tables
def _first(mask: np.ndarray, values: np.ndarray) -> Any:
    v = values[mask][0]
    return v.item() if hasattr(v, "item") else v


def describe_bad(values: np.ndarray) -> str | None:
    """Why ``values`` are not all finite numbers ``>= 0`` (the first offender), or ``None``."""
    nan = np.isnan(values)
    if nan.any():
        return "a NaN (not a number)"
    inf = np.isinf(values)
    if inf.any():
        return f"{_first(inf, values)} (not a finite number)"
    neg = values < 0
    if neg.any():
        return f"{_first(neg, values):g} (negative)"
    return None


def check_ports(cols: dict[str, np.ndarray], p: PointResult, m: PointMachine,
                refuse: Refuse, results: str = "") -> None:
    """A ports table's port numbers, routers, link classes and utilisations in range, each
    port once and as the machine wires it, and the point's busiest links in it.  The heatmap
    orders a router's ports by their number and places the k-th of a class in column k, so a
    negative, repeated or permuted port would shift its columns: a figure that looks right and
    is not.  ``results``: the folder's ``results.json`` (where the machine's relative paths
    are resolved from, when it is rebuilt)."""
    u, r, port = cols["utilization_window"], cols["router"], cols["port"]
    if (port < 0).any():
        raise refuse("port", f"{int(port[port < 0][0])} is negative: ports are numbered from 0")
    bad = port >= m.ports
    if bad.any():
        raise refuse("port", f"port {_first(bad, port)} is outside 0..{m.ports - 1} (the "
                     f"point's machine {m.title} has {m.ports} ports)")
    why = describe_bad(u)
    if why is not None:
        raise refuse("utilization_window", f"{why}: a utilisation is a finite number >= 0")
    if p.engine in BUSY_TIME_ENGINES:
        over = u > 1.0 + REL
        if over.any():
            raise refuse("utilization_window", f"{_first(over, u):g} is above 1: it is the "
                         f"time a port was busy within the window over the window's length "
                         f"({p.engine} engine)")
    bad = (r < -1) | (r >= m.routers)
    if bad.any():
        raise refuse("router", f"router {_first(bad, r)} is outside -1..{m.routers - 1} "
                     f"(-1: a NIC's port; the point's machine {m.title})")
    allowed = m.link_classes | ({"unconnected"} if p.engine not in BUSY_TIME_ENGINES
                                else set())
    cls = cols["link_class"]
    bad = ~np.isin(cls.astype(object), np.array(sorted(allowed), dtype=object))
    if bad.any():
        raise refuse("link_class", f"{_first(bad, cls)!r} is not a link class of the point's "
                     f"machine (it has {', '.join(sorted(m.link_classes))})")
    # (router, port): the native engine numbers ports across the machine, SST per router
    pairs = np.unique(np.stack([r, port]), axis=1, return_counts=True)
    twice = np.flatnonzero(pairs[1] > 1)
    if twice.size:
        rr, pp = (int(x) for x in pairs[0][:, twice[0]])
        raise refuse("port", f"port {pp} of router {rr} has {int(pairs[1][twice[0]])} rows; "
                     "a ports table has one row per port")
    _check_wiring(cols, p, m, refuse, results, complete=True)
    if p.engine == "sst":  # once each row's link class is known right
        check_sst_utilisation(cols, p, m, refuse)
    for lk in p.summary.busiest_links:
        row = np.flatnonzero(port == lk.port)
        if row.size != 1 or not math.isclose(float(u[row[0]]), lk.utilization_window,
                                             rel_tol=1e-9, abs_tol=1e-12):
            raise refuse("utilization_window", f"port {lk.port} is one of the point's "
                         f"busiest links at {lk.utilization_window:.6g} in its summary; "
                         "this table disagrees: not this point's table")


def _check_wiring(cols: dict[str, np.ndarray], p: PointResult, m: PointMachine,
                  refuse: Refuse, results: str, complete: bool) -> None:
    """The table's ports as the point's machine wires them (when it can be rebuilt here)."""
    if p.engine not in GLOBAL_PORT_ENGINES and p.engine != "sst":
        return  # another engine's plugin: its port numbering is its own
    w = wiring_of(m, results)
    if w is None:
        return
    if p.engine in GLOBAL_PORT_ENGINES:
        check_global_ports(cols, w, m, refuse, complete)
        return
    sp = sst_ports(w, p.routing)
    if sp is not None:
        check_sst_ports(cols, sp, m, refuse)


def check_sst_utilisation(cols: dict[str, np.ndarray], p: PointResult, m: PointMachine,
                          refuse: Refuse) -> None:
    """An SST port's window utilisation is the bytes it sent in the measurement window over
    what its link carries in it (``bytes / (bandwidth x window)``, ``adapters/sst/results.py``),
    so it is bounded as the native link series are: a port cannot start more bytes in the
    window than its link's bandwidth over it allows (the rounding of a packet's time to whole
    picoseconds allowed for, as :func:`~federation.plots.machines.rounding_factor` bounds it)
    and one packet begun at its end; a port without a cable (``unconnected``) sends nothing.
    With ``bytes_window`` in the table, the utilisation must be what those bytes give.

    Only for open-loop points with a measurement window (``stop.measure``) and a known
    machine: a rank-program point's statistics cover the whole run, which the adapter does not
    report as a window (it writes no utilisation there, 0), so there is nothing to bound."""
    stop = p.resolved.get("stop")
    measure = stop.get("measure") if isinstance(stop, dict) else None
    if (p.summary.programs is not None or m.packet_size is None or not m.bandwidth
            or isinstance(measure, bool) or not isinstance(measure, (int, float))
            or not math.isfinite(measure) or not measure > 0):
        return
    window_s = seconds_to_ps(float(measure)) / 1e12
    if window_s <= 0:
        return
    u, lc = cols["utilization_window"], cols["link_class"].astype(object)
    bw = np.array([m.bandwidth.get(c, np.nan) for c in lc.tolist()], dtype=np.float64)
    idle = lc == "unconnected"
    bad = idle & (u != 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise refuse("utilization_window", f"{u[i]:g} on port {int(cols['port'][i])} of router "
                     f"{int(cols['router'][i])}, which has no cable (unconnected): it sends "
                     "nothing (sst engine)")
    known = ~idle & np.isfinite(bw) & (bw > 0)
    limit = np.full(u.shape, np.inf)
    limit[known] = (link_limit(bw[known], window_s, m.packet_size) / (bw[known] * window_s)
                    * (1 + REL))
    over = u > limit
    if over.any():
        i = int(np.flatnonzero(over)[0])
        raise refuse("utilization_window", f"{u[i]:g} on port {int(cols['port'][i])} of router "
                     f"{int(cols['router'][i])} ({lc[i]}), more than its link can carry: at "
                     f"most {limit[i]:.6g} ({bw[i]:g} B/s over the {measure:g} s measurement "
                     f"window, and one {m.packet_size} B packet begun at its end; sst engine)")
    if "bytes_window" not in cols:
        return
    nbytes = cols["bytes_window"]
    want = np.where(known, nbytes / np.where(known, bw, 1.0) / window_s, u)
    bad = known & ~np.isclose(u, want, rtol=REL, atol=0.0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise refuse("utilization_window", f"{u[i]:g} on port {int(cols['port'][i])} of router "
                     f"{int(cols['router'][i])}, but its {int(nbytes[i])} bytes_window over the "
                     f"{measure:g} s window at its link's {bw[i]:g} B/s are {want[i]:.6g} (sst "
                     "engine)")


def n_classes(p: PointResult) -> int:
    """The point's traffic classes: ``summary.classes`` with several, else 1."""
    return max(len(p.summary.classes or []), 1)


def check_link_series(cols: dict[str, np.ndarray], p: PointResult, m: PointMachine,
                      refuse: Refuse, results: str = "") -> None:
    """A link series' ports, classes, byte counts and intervals in range, each (port, class,
    interval) once, and its utilisations the ones its bytes give (each refusal names its own
    column): the class-share figure sums bytes per port, gives each class a series and places
    samples by their interval's end."""
    u, start, end, port, cls = (cols[c] for c in ("utilization", "start_ps", "end_ps", "port",
                                                  "class"))
    for col, what in (("port", "ports are numbered from 0"),
                      ("class", "traffic classes are numbered from 0"),
                      ("bytes", "it counts the bytes a port sent")):
        bad = cols[col] < 0
        if bad.any():
            raise refuse(col, f"{_first(bad, cols[col])} is negative: {what}")
    bad = port >= m.ports
    if bad.any():
        raise refuse("port", f"port {_first(bad, port)} is outside 0..{m.ports - 1} (the "
                     f"point's machine {m.title} has {m.ports} ports)")
    n = n_classes(p)
    bad = cls >= n
    if bad.any():
        raise refuse("class", f"class {_first(bad, cls)} is outside 0..{n - 1}: the point has "
                     f"{n} traffic class{'es' if n > 1 else ''} (summary.classes, or 1 when "
                     "it lists none)")
    why = describe_bad(u)
    if why is not None:
        raise refuse("utilization", f"{why}: a utilisation is a finite number >= 0")
    if (start < 0).any():
        raise refuse("start_ps", "an interval starting before time 0")
    if (end <= start).any():
        raise refuse("end_ps", "an interval that ends at or before its start")
    if not end.size:
        return
    ends, first, inverse = np.unique(end, return_index=True, return_inverse=True)
    if (start != start[first][inverse]).any():
        raise refuse("start_ps", "two rows of the interval ending at "
                     f"{_first(start != start[first][inverse], end)} ps start at different "
                     "times: the sampler's intervals follow one another")
    if (start[first][1:] < ends[:-1]).any():
        raise refuse("start_ps", "intervals that overlap: the sampler's intervals follow one "
                     "another")
    keys, counts = np.unique(np.stack([port, cls, inverse]), axis=1, return_counts=True)
    twice = np.flatnonzero(counts > 1)
    if twice.size:
        pp, cc, k = (int(x) for x in keys[:, twice[0]])
        raise refuse("port", f"port {pp}, class {cc}, interval ending at {int(ends[k])} ps "
                     f"has {int(counts[twice[0]])} rows; a link series has one per port, "
                     "class and interval")
    _check_wiring(cols, p, m, refuse, results, complete=False)
    _check_series_bandwidth(cols, m, inverse, refuse)


def _check_series_bandwidth(cols: dict[str, np.ndarray], m: PointMachine, inverse: np.ndarray,
                            refuse: Refuse) -> None:
    """Each row's utilisation is its bytes over what its link carries in the interval, and
    a port started no more bytes in an interval than its link can: its bandwidth over the
    interval (the rounding of packet times allowed for) and one packet begun just before its
    end (a packet counts in the interval its transmission starts)."""
    if "link_class" not in cols or not m.bandwidth or m.packet_size is None:
        return
    lc = cols["link_class"]
    bad = ~np.isin(lc.astype(object), np.array(sorted(m.bandwidth), dtype=object))
    if bad.any():
        raise refuse("link_class", f"{_first(bad, lc)!r} is not a link class of the point's "
                     f"machine (it has {', '.join(sorted(m.bandwidth))})")
    u, start, end, port, nbytes = (cols[c] for c in ("utilization", "start_ps", "end_ps",
                                                     "port", "bytes"))
    bw = np.array([m.bandwidth[c] for c in lc.tolist()], dtype=np.float64)
    nic = m.nic_bandwidth if m.nic_bandwidth is not None else np.nan
    if "router" in cols:
        bw = np.where(cols["router"] < 0, nic, bw)
        other = bw
    else:  # a terminal row may be a NIC's port
        other = np.where(lc == "terminal", nic, bw)
    span_s = (end - start).astype(np.float64) / 1e12
    want = nbytes / (bw * span_s)
    alt = nbytes / (other * span_s)
    ok = (np.isclose(u, want, rtol=REL, atol=0.0) | np.isclose(u, alt, rtol=REL, atol=0.0))
    if not ok.all():
        i = int(np.flatnonzero(~ok)[0])
        raise refuse("utilization", f"{u[i]:g} on port {int(port[i])} in [{int(start[i])}, "
                     f"{int(end[i])}) ps, but its {int(nbytes[i])} bytes over the interval at "
                     f"its link's {bw[i]:g} B/s are {want[i]:.6g} of what it could carry")
    slow = np.fmin(bw, other)
    group = np.unique(np.stack([port, inverse]), axis=1, return_inverse=True)[1].ravel()
    total = np.bincount(group, weights=nbytes.astype(np.float64))
    limit = link_limit(slow, span_s, m.packet_size) * (1 + REL)
    over = total[group] > limit
    if over.any():
        i = int(np.flatnonzero(over)[0])
        raise refuse("bytes", f"port {int(port[i])} started {int(total[group[i]])} bytes in "
                     f"[{int(start[i])}, {int(end[i])}) ps, more than its link can: at most "
                     f"{limit[i]:.0f} ({slow[i]:g} B/s over the interval, and one "
                     f"{m.packet_size} B packet begun at its end)")
