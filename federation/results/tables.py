"""Rows of the tables a user reads about a run's points: rank programs and jobs, as the
terminal (``federation run``) and the HTML report (``federation report``) print them, from one
place so that both show the same figures."""

from __future__ import annotations

import json
from collections.abc import Callable

from federation.results.model import PointResult, Variability

#: widest a swept value prints in the tables (a swept mapping, e.g. a job's whole workload)
CELL_WIDTH = 40


def cell(value: object) -> str:
    """A swept value as a table cell: numbers and names as they are, a mapping or list as
    compact JSON, cut at :data:`CELL_WIDTH` characters (results.json has it whole)."""
    if not isinstance(value, dict | list):
        return str(value)
    text = json.dumps(value, separators=(",", ":"), default=str)
    return text if len(text) <= CELL_WIDTH else text[:CELL_WIDTH - 3] + "..."


def num(x: float | None, spec: str = ".1f") -> str:
    return "-" if x is None else format(x, spec)


def program_rows(keys: list[str], points: list[PointResult],
                 wall: Callable[[PointResult], str]) -> tuple[list[str], list[list[str]]]:
    """Per point: when the programs completed (the last rank's finish), how the ranks'
    finish times spread, and how long a message took from its send's start to its last
    packet's arrival: the mean over every message (a background's too), then the median,
    QCD and max/median of the programs' messages (``programs.message_completion_ns``)."""
    head = [*keys, "routing", "ranks", "ops", "msgs", "completion ns", "finish min",
            "mean", "max", "msg mean ns", "prog p50 ns", *SPREAD_HEAD[1:], "hops", "delivered",
            "wall s"]
    rows = []
    for p in points:
        s = p.summary
        pg = s.programs
        assert pg is not None
        fin = pg.rank_finish_ns
        rows.append([*(cell(p.sweep.get(k, "-")) for k in keys), p.routing, str(pg.ranks),
                     str(pg.operations), str(pg.messages), num(pg.completion_ns),
                     num(min(fin) if fin else None), num(sum(fin) / len(fin) if fin else None),
                     num(max(fin) if fin else None), num(s.message_completion_ns_mean),
                     *spread(pg.message_completion_ns),
                     num(s.mean_hops, ".2f"), str(s.packets_delivered), wall(p)])
    return head, rows


#: the message completion times' variability (the Aries noise paper's figures)
SPREAD_HEAD = ["msg p50 ns", "QCD", "max/p50"]


def spread(v: Variability | None) -> list[str]:
    if v is None:
        return ["-"] * len(SPREAD_HEAD)
    return [num(v.median), num(v.qcd, ".3f"), num(v.max_over_median, ".2f")]



def job_rows(keys: list[str], points: list[PointResult]) -> tuple[list[str], list[list[str]]]:
    """Per job of each point: its nodes, its completion (closed loop; alone and the slowdown
    with ``slowdown: true``), how its messages and packets fared."""
    head = [*keys, "job", "workload", "nodes", "completion ns", "alone ns", "slowdown",
            "msg mean ns", *SPREAD_HEAD, "lat mean ns", "p99", "hops", "delivered"]
    rows = []
    for p in points:
        for j in p.summary.jobs or []:
            lat = j.latency_ns
            rows.append([*(cell(p.sweep.get(k, "-")) for k in keys), j.name, j.workload,
                         str(len(j.nodes)), num(j.completion_ns),
                         num(j.completion_alone_ns), num(j.slowdown, ".3f"),
                         num(j.message_completion_ns_mean), *spread(j.message_completion_ns),
                         num(lat.mean if lat else None), num(lat.p99 if lat else None),
                         num(j.mean_hops, ".2f"),
                         "-" if j.packets_delivered is None else str(j.packets_delivered)])
    return head, rows
