"""The Fig. 7 table of a results folder of ``fig7.yaml``: per placement (intra- or inter-group)
and the ping-pong job's routing mode, its message times in the paper's statistics (median with
its 95 % confidence interval, QCD, max / median), its packets' mean hops, which mode has the
lower median, and the job's NIC counters as the paper's Algorithm 1 reads them: s (stalled
time per request flit) and L (request latency per request packet), summed over the job's two
NICs in the measurement window (the paper's Fig. 7 plots the same two per mode).  The last
column is what the paper's model (Eq. 3) predicts from them: the mode with the lower
``((p + 512) / 1024) L + f (s + 1)`` for one message of ``p`` packets and ``f`` flits (the
counted ones per message; the ``+ 1`` cycle per flit cancels between the modes).  All figures
are read from the summary (no recomputation: they are the run's).

    python fig7_table.py results/fig7
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

NAMES = {"ADAPTIVE_0": "ADAPTIVE", "ADAPTIVE_3": "HIGH BIAS"}


def eq3_cost(job: dict) -> float:
    """The job's Eq. 3 cost of one of its messages (ns, without the ``+ 1`` per flit)."""
    nics, msgs = job["nics"], job["message_completion_ns"]["samples"]
    p, f = nics["request_packets"] / msgs, nics["request_flits"] / msgs
    return (p + 512) / 1024 * nics["mean_latency_ns"] + f * nics["stall_per_flit_ns"]


def main(folder: Path) -> None:
    doc = json.loads((folder / "results.json").read_text())
    rows: dict[str, dict[str, dict]] = {}
    for p in doc["points"]:
        sweep = p["sweep"]
        nodes = sweep["jobs.pingpong.placement"]["nodes"]
        where = (f"{'intra' if nodes[1] < 384 else 'inter'}-group, nodes {nodes[0]}-{nodes[1]}, "
                 f"credit delay {sweep.get('machine.router.credit_delay', '0ns')}")
        jobs = {j["name"]: j for j in p["summary"]["jobs"]}
        rows.setdefault(where, {})[sweep["jobs.pingpong.routing_mode"]] = jobs["pingpong"]
    print("| ping-pong | mode | messages | median us [95 % CI] | QCD | max / median "
          "| mean hops | faster (median) | s ns/flit | L ns/packet | Eq. 3 picks |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for where, modes in rows.items():
        med = {m: j["message_completion_ns"]["median"] for m, j in modes.items()}
        best = min(med, key=med.get)
        cost = {m: eq3_cost(j) for m, j in modes.items()}
        pick = min(cost, key=cost.get)
        for mode, j in modes.items():
            v, n = j["message_completion_ns"], j["nics"]
            hops = j.get("mean_hops")
            print(f"| {where} | {NAMES.get(mode, mode)} | {v['samples']} "
                  f"| {v['median'] / 1e3:.2f} [{v['median_ci_low'] / 1e3:.2f}, "
                  f"{v['median_ci_high'] / 1e3:.2f}] | {v['qcd']:.4f} "
                  f"| {v['max_over_median']:.2f} "
                  f"| {'-' if hops is None else f'{hops:.2f}'} "
                  f"| {'yes' if mode == best else ''} "
                  f"| {n['stall_per_flit_ns']:.3f} | {n['mean_latency_ns']:.0f} "
                  f"| {'yes' if mode == pick else ''} |")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
