"""``federation report``: one self-contained HTML page per run (or comparison of runs).

What a researcher attaches to a message to a colleague: the machine and experiment as resolved
(every default filled in), the summary table, the busiest links, the plugins and versions that
produced the numbers, and every standard figure embedded as a base64 PNG.  The page loads
nothing from anywhere (no scripts, styles or images by URL), so it reads the same offline and
in a mail client.  It carries no date: the same folders give the same file.
"""

from __future__ import annotations

import base64
import html
import json
import tempfile
from pathlib import Path
from typing import Any

import yaml

from federation.plots import DEFAULT_SATURATION_MARGIN
from federation.plots.data import REDUNDANT, ResultFolder, series_of
from federation.plots.standard import Drawn, draw_all, figure_paths
from federation.results.model import PointResult
from federation.results.tables import job_rows, program_rows

CAPTIONS = {
    "latency": "Mean and 99th-percentile packet latency against measured offered load; the "
               "cross marks each series' first saturated point.",
    "throughput": "Accepted against offered load; the dashed diagonal is ideal, the dotted line "
                  "the saturation margin.",
    "engines": "The same series on different engines (cross-validation); below, each engine's "
               "mean latency and accepted load relative to the reference engine's (native when "
               "present) at the same nominal load.",
    "utilisation": "Utilisation of every link in the measurement window, per link class and "
                   "point.",
    "heatmap": "Utilisation of every router output port at the series' highest load.",
    "latency_distribution": "Packet latency of the measured packets, per point.",
    "hops": "Router-to-router hops of the measured packets, per point.",
    "message_completion": "Completion time of the measured messages, per point.",
    "link_classes": "Each traffic class's share of the busiest links over the run, one figure "
                    "per point.",
    "jobs": "Each closed-loop job's completion with the other jobs and alone, and its "
            "slowdown.",
}

CSS = """
body { font-family: sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0; }
th, td { border: 1px solid #ccc; padding: 2px 6px; text-align: right; }
th { background: #f2f2f2; } td.l, th.l { text-align: left; }
figure { margin: 1em 0; } figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { font-size: 0.85em; color: #555; }
pre { background: #f7f7f7; padding: 0.6em; font-size: 0.8em; overflow-x: auto; }
.warn { color: #a40; font-weight: bold; }
"""


def _e(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _num(x: float | None, spec: str) -> str:
    return "-" if x is None else format(x, spec)


def _table(head: list[str], rows: list[list[str]], left: int = 0) -> str:
    """An HTML table; the first ``left`` columns are left-aligned (labels)."""
    def cell(tag: str, i: int, v: str) -> str:
        return f'<{tag}{" class=l" if i < left else ""}>{_e(v)}</{tag}>'

    out = ["<table><tr>" + "".join(cell("th", i, h) for i, h in enumerate(head)) + "</tr>"]
    out += ["<tr>" + "".join(cell("td", i, v) for i, v in enumerate(r)) + "</tr>" for r in rows]
    return "\n".join(out) + "</table>"


def summary_table(folder: ResultFolder) -> str:
    """The run's summary, one row per point (the columns ``federation run`` prints)."""
    pts = folder.result.points
    # a swept routing or engine shows in its own column
    keys = [k for k in dict.fromkeys(k for p in pts for k in p.sweep) if k not in REDUNDANT]
    perf = folder.performance  # checked by the reader: one entry per point, or none
    head = ["point", *keys, "engine", "routing", "offered", "accepted", "lat mean ns", "p50",
            "p99", "max", "net lat mean ns", "hops", "nonmin", "msg completion ns", "pkts",
            "wall s"]
    rows = []
    for i, p in enumerate(pts):
        s, lat = p.summary, p.summary.latency_ns
        wall = perf[i].get("wall_seconds") if i < len(perf) and perf[i] else None
        rows.append([str(p.index), *(str(p.sweep.get(k, "")) for k in keys), p.engine,
                     p.routing, _num(s.offered_load, ".3f"), _num(s.accepted_load, ".3f"),
                     _num(lat.mean, ".1f"), _num(lat.p50, ".1f"), _num(lat.p99, ".1f"),
                     _num(lat.max, ".1f"), _num(s.network_latency_ns.mean, ".1f"),
                     _num(s.mean_hops, ".2f"), _num(s.nonminimal_fraction, ".2f"),
                     _num(s.message_completion_ns_mean, ".1f"), str(s.packets_measured),
                     _num(wall, ".2f")])
    return _table(head, rows, left=0)


def program_tables(folder: ResultFolder) -> list[str]:
    """The rank programs' and the jobs' tables of the points that have them, with the
    columns ``federation run`` prints (:mod:`federation.results.tables`): their completion,
    finish spread and message times, each job's completion, alone time and slowdown."""
    pts = folder.result.points
    keys = [k for k in dict.fromkeys(k for p in pts for k in p.sweep) if k not in REDUNDANT]
    perf = folder.performance
    walls = {id(p): perf[i].get("wall_seconds") if i < len(perf) and perf[i] else None
             for i, p in enumerate(pts)}
    closed = [p for p in pts if p.summary.programs is not None]
    with_jobs = [p for p in pts if p.summary.jobs]
    out = []
    if closed:
        head, rows = program_rows(["point", *keys], [], lambda p: "")
        rows = [[str(p.index), *r] for p, r in zip(
            closed, program_rows(keys, closed, lambda p: _num(walls[id(p)], ".2f"))[1],
            strict=True)]
        out += ["<h3>Rank programs (completion, ns)</h3>", _table(head, rows)]
    if with_jobs:
        head, rows = job_rows(["point", *keys], [])
        rows = [[str(p.index), *r] for p in with_jobs for r in job_rows(keys, [p])[1]]
        out += ["<h3>Jobs</h3>", _table(head, rows, left=2 + len(keys))]
    return out


def busiest_table(points: list[PointResult]) -> str:
    head = ["point", "from", "to", "class", "port", "window util", "window bytes",
            "run util", "run bytes"]
    rows = []
    for p in points:
        for lk in p.summary.busiest_links:
            rows.append([str(p.index), f"router {lk.router}" if lk.router is not None else "NIC",
                         lk.peer, lk.link_class, str(lk.port),
                         f"{100 * lk.utilization_window:.1f} %", str(lk.bytes_window),
                         f"{100 * lk.utilization_run:.1f} %", str(lk.bytes)])
    return _table(head, rows, left=4)


def components_table(points: list[PointResult]) -> str:
    rows: list[list[str]] = []
    for p in points:
        for slot, c in p.components.items():
            row = [slot, c.name, c.plugin, c.source]
            if row not in rows:
                rows.append(row)
    return _table(["component", "name", "plugin", "from"], rows, left=4)


def folder_section(folder: ResultFolder, heading: bool) -> list[str]:
    """Machine, status, summary, busiest links, routings, components, resolved document."""
    r = folder.result
    m = r.machine
    out = [f"<h2>{_e(folder.label)}</h2>"] if heading else []
    if r.status != "complete":
        out.append(f'<p class=warn>Incomplete run: points {_e(r.missing_points)} missing '
                   f'({_e(r.error or "no reason recorded")}); the figures show the finished '
                   "points.</p>")
    topo = ", ".join(f"{k}={v}" for k, v in m.topology.items() if k != "kind")
    out.append(
        f"<p>Experiment <b>{_e(r.experiment or '-')}</b> from <code>{_e(r.source)}</code>; "
        f"machine <b>{_e(m.name or '-')}</b>: {_e(m.topology.get('kind'))} ({_e(topo)}), "
        f"{m.routers} routers, {m.nodes} nodes, links: "
        f"{_e(', '.join(f'{v} {k}' for k, v in m.links.items()))}; "
        f"hpc-federation {_e(r.federation_version)}, results schema {r.schema_version}.</p>")
    machines: dict[str, list[int]] = {}
    for p in r.points:
        machines.setdefault(folder.machine_of(p).title, []).append(p.index)
    if len(machines) > 1:  # a sweep over the machine: the summary above is its first point's
        out.append("<p>The sweep runs several machines (above: the first point's): "
                   + "; ".join(f"{_e(t)}: point{'s' if len(ix) > 1 else ''} "
                               f"{_e(', '.join(map(str, ix)))}" for t, ix in machines.items())
                   + ".</p>")
    out += ["<h3>Summary (measurement window)</h3>", summary_table(folder),
            "<p>Loads are fractions of NIC bandwidth; latencies in ns from creation at the source "
            "NIC to delivery (network latency: from leaving the NIC).</p>",
            *program_tables(folder)]
    routings = list(dict.fromkeys((p.routing, p.routing_description) for p in r.points))
    out += ["<h3>Routing</h3>", "<ul>"]
    out += [f"<li><b>{_e(a)}</b>: {_e(d or '-')}</li>" for a, d in routings]
    out += ["</ul>", "<h3>Busiest links per point (ranked by utilisation in the window)</h3>",
            "<details><summary>show</summary>", busiest_table(r.points), "</details>",
            "<h3>Components</h3>", components_table(r.points)]
    first = r.points[0]
    sweep = {k: [p.sweep.get(k) for p in r.points] for k in first.sweep}
    note = (f" Point {first.index} shown; the other points differ in the swept fields: "
            f"{_e(json.dumps(sweep))}." if sweep else "")
    doc = yaml.safe_dump(first.resolved, sort_keys=True, default_flow_style=False, width=100)
    out += ["<h3>Resolved experiment and machine</h3>",
            f"<p>Every default filled in; <code>federation run</code> accepts it as it is.{note}"
            "</p>", f"<pre>{_e(doc)}</pre>"]
    return out


def _figures_html(drawn: Drawn) -> list[str]:
    out = []
    for kind, figs in drawn.figures.items():
        for path in (p for f in figs for p in figure_paths(f)):
            data = base64.b64encode(path.read_bytes()).decode("ascii")
            alt = path.stem.replace("-", " ")
            out.append(f'<figure><img alt="{_e(alt)}" src="data:image/png;base64,{data}">'
                       f"<figcaption>{_e(CAPTIONS.get(kind, ''))}</figcaption></figure>")
    if drawn.skipped:
        out.append("<p>Not drawn: " + "; ".join(_e(s) for s in drawn.skipped) + ".</p>")
    return out


def render_report(folders: list[ResultFolder], margin: float = DEFAULT_SATURATION_MARGIN,
                  heatmap_limit: int | None = None) -> tuple[str, Drawn]:
    """The report page as text, and the figures it embeds (drawn into a temporary folder)."""
    kw = {} if heatmap_limit is None else {"heatmap_limit": heatmap_limit}
    with tempfile.TemporaryDirectory(prefix="federation-report-") as tmp:
        drawn = draw_all(folders, Path(tmp), "png", margin, **kw)
        figures = _figures_html(drawn)
    names = list(dict.fromkeys(f.result.experiment or f.label for f in folders))
    machines = list(dict.fromkeys(f.result.machine.name or "-" for f in folders))
    title = f"{', '.join(names)} on {', '.join(machines)}"
    engines = sorted({s.engine for s in series_of(folders)})
    body = [f"<h1>{_e(title)}</h1>",
            f"<p>Engine{'s' if len(engines) > 1 else ''}: {_e(', '.join(engines))}. Saturation "
            f"margin: a point is saturated when accepted load is below offered load by more "
            f"than {100 * margin:g} % of it.</p>"]
    for f in folders:
        body += folder_section(f, heading=len(folders) > 1)
    body += ["<h2>Figures</h2>", *figures]
    page = ("<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
            f"<title>hpc-federation report: {_e(title)}</title><style>{CSS}</style></head>"
            "<body>\n" + "\n".join(body) + "\n</body></html>\n")
    return page, drawn
