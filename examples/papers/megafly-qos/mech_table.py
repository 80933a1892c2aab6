"""The Mechanisms I / II table of the README from the results folders of ``mech1-*.yaml`` and
``mech2-*.yaml``: per file, closed-loop job and background load, the job's completion and
slowdown (completion beside the others over completion alone) without QoS and with the
bandwidth caps, their ratio (> 1: QoS made the job faster), and the open-loop background's
mean packet latency in both points (what the low class pays).  A ``*`` marks a completion
that ran past the background's traffic (``stop.warmup + stop.measure``): its slowdown was then
measured partly on a quieter machine.  All figures are read from the summaries (the run's own).

    python mech_table.py results/mech1-megafly results/mech1-dragonfly \\
        results/mech2-megafly results/mech2-dragonfly
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

LOAD = "jobs.bg.workload.load"


def qos_name(sweep: dict) -> str:
    """``none`` or the policy's kind, from the point's ``machine.qos`` sweep value."""
    q = sweep.get("machine.qos", {"kind": "none"})
    return q.get("kind", "none") if isinstance(q, dict) else str(q)


def horizon_ns(point: dict) -> float | None:
    """The open-loop background's end (ns): the point's resolved stop.warmup + stop.measure
    (seconds in the resolved document)."""
    stop = (point.get("resolved") or {}).get("stop") or {}
    if stop.get("measure") is None:
        return None
    return (float(stop.get("warmup") or 0.0) + float(stop["measure"])) * 1e9


def cell(job: dict, end: float | None) -> str:
    """``completion us / slowdown`` of one closed-loop job, ``*`` past the background."""
    done, slow = job.get("completion_ns"), job.get("slowdown")
    if done is None:
        return "-"
    late = "*" if end is not None and job["start_ns"] + done > end else ""
    return f"{done / 1e3:.1f}{late} / {'-' if slow is None else f'{slow:.3f}'}"


def rows(folder: Path) -> list[str]:
    """The table's rows of one results folder."""
    doc = json.loads((folder / "results.json").read_text())
    name = folder.name
    by: dict[float, dict[str, dict[str, dict]]] = {}
    ends: dict[float, float | None] = {}
    for p in doc["points"]:
        jobs = {j["name"]: j for j in p["summary"].get("jobs") or []}
        load = float(p["sweep"][LOAD])
        by.setdefault(load, {})[qos_name(p["sweep"])] = jobs
        ends[load] = horizon_ns(p)
    out = []
    for load in sorted(by):
        modes, end = by[load], ends[load]
        off, on = modes.get("none", {}), next((v for k, v in modes.items() if k != "none"), {})
        bg = [f"{j['latency_ns']['mean']:.0f}" if j.get("latency_ns") else "-"
              for j in (off.get("bg", {}), on.get("bg", {}))]
        for job in off:
            a, b = off[job], on.get(job, {})
            if not a.get("closed_loop"):
                continue
            gain = (f"{a['completion_ns'] / b['completion_ns']:.3f}"
                    if a.get("completion_ns") and b.get("completion_ns") else "-")
            out.append(f"| {name} | {job} | {load * 100:g} % | {cell(a, end)} | {cell(b, end)} "
                       f"| {gain} | {bg[0]} / {bg[1]} |")
    return out


def main(folders: list[Path]) -> None:
    print("| file | job | UR load | without QoS: completion us / slowdown "
          "| with QoS: completion us / slowdown | without / with | bg latency ns without / "
          "with |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for folder in folders:
        print("\n".join(rows(folder)))


if __name__ == "__main__":
    main([Path(a) for a in sys.argv[1:]])
