"""``federation hops``: the path hops and link contention of each job's messages where its
ranks are placed, without simulating.

For every point and every closed-loop job: its messages (one per send of its rank programs),
their total and mean router-to-router hops on the routing's minimal paths, and the busiest
cable's message count (with the pairs of messages on each cable, summed over the cables:
``sharing_pairs``); for a ``two_opt`` job
the same figures for its starting order and for the order found, beside the search's own
objective before and after.  The jobs are placed and ordered exactly as ``run`` places them
(same seed, same streams).  Open-loop jobs draw their messages at run time and are listed
without figures.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Annotated, Any

import typer

from federation.cli.app import app
from federation.cli.run import MaxMemory


def job_rows(point: Any, cache: Any) -> list[dict[str, Any]]:
    """The figures of each job of ``point`` (see the module docstring)."""
    from federation.pipeline.jobs import hop_figures, place_jobs
    from federation.pipeline.point import check_open_jobs

    built = cache.get(point)
    placed = place_jobs(point, built)
    check_open_jobs(point, built, placed)
    programs = cache.programs.peek(point, built, placed)
    ordered = cache.ordered(point, built, placed, programs)
    rows = []
    for first, pj in zip(placed.jobs, ordered.jobs, strict=True):
        job = pj.job
        row: dict[str, Any] = {"name": job.name, "workload": job.workload.name,
                               "placement": job.placement.name, "nodes": int(pj.nodes.size),
                               "order": job.order.order}
        if job.index in programs:
            progs = programs[job.index]
            row["ranks"] = progs.n_ranks
            row.update(_figures(hop_figures(point, built, pj, progs)))
            if pj.two_opt is not None:
                row["initial"] = _figures(hop_figures(point, built, first, progs))
                row["two_opt"] = dataclasses.asdict(pj.two_opt)
        rows.append(row)
    return rows


def _figures(f: Any) -> dict[str, Any]:
    return {"messages": f.messages, "total_hops": f.total_hops, "mean_hops": f.mean_hops,
            "busiest_link_messages": f.busiest_link_messages,
            "sharing_pairs": f.sharing_pairs}


def hop_report(file: Path, overrides: list[str], max_memory: int | None) -> dict[str, Any]:
    """Every point's job figures, checked as ``federation validate`` checks them."""
    from federation.errors import FederationError
    from federation.pipeline.bounds import default_max_memory
    from federation.pipeline.load import load_experiment
    from federation.pipeline.point import BuildCache, point_error
    from federation.pipeline.preflight import check_point

    loaded = load_experiment(file, overrides)
    loaded.print_notes()
    cache = BuildCache(max_memory or default_max_memory())
    points = []
    for i, point in enumerate(loaded.points):
        try:
            check_point(point)
            rows = job_rows(point, cache)
        except FederationError as exc:
            raise point_error(exc, point, i, loaded) from None
        points.append({"index": i, "sweep": point.sweep, "jobs": rows})
    return {"source": str(Path(loaded.source).resolve()), "points": points}


def format_report(report: dict[str, Any]) -> str:
    """The report as right-aligned tables, one per point."""
    from federation.cli.run import _table
    from federation.results.tables import num as _num

    lines: list[str] = []
    for p in report["points"]:
        label = ", ".join(f"{k}={v}" for k, v in p["sweep"].items())
        if label:
            lines += ["" if lines else "", f"point {p['index']}: {label}"]
        head = ["job", "workload", "nodes", "order", "messages", "total hops", "mean hops",
                "busiest link", "before -> after"]
        rows = []
        for j in p["jobs"]:
            change = "-"
            if "two_opt" in j:
                t, b = j["two_opt"], j["initial"]
                change = (f"{b['total_hops']} -> {j['total_hops']} hops, "
                          f"{b['busiest_link_messages']} -> {j['busiest_link_messages']} on "
                          f"the busiest link ({t['objective']}: {t['before']} -> "
                          f"{t['after']})")
            rows.append([j["name"], j["workload"], str(j["nodes"]), j["order"],
                         str(j.get("messages", "-")), str(j.get("total_hops", "-")),
                         _num(j.get("mean_hops"), ".3f"), str(j.get("busiest_link_messages",
                                                                    "-")), change])
        lines += _table(head, rows)
    return "\n".join(lines).lstrip("\n")


@app.command()
def hops(
    file: Annotated[Path, typer.Argument(help="experiment file")],
    set_: Annotated[list[str] | None, typer.Option(
        "--set", help="override a field (repeatable)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the figures as JSON")] = False,
    max_memory: MaxMemory = None,
) -> None:
    """Hops and link contention of each job's messages where its ranks are placed (two-opt:
    before and after), from the routing's minimal paths, without simulating."""
    from federation.cli.run import parse_max_memory

    report = hop_report(file, set_ or [], parse_max_memory(max_memory))
    if as_json:
        print(json.dumps(report, indent=2, sort_keys=True))
    else:
        print(format_report(report))
