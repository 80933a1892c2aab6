"""The Fig. 7 table of a results folder of ``fig7.yaml``: per placement (intra- or inter-group)
and routing mode, the ping-pong's message times in the paper's statistics (median with its
95 % confidence interval, QCD, max / median), its packets' mean hops, and which mode has the
lower median, all read from the summary (no recomputation: the figures are the run's).

    python fig7_table.py results/fig7
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

NAMES = {"ADAPTIVE_0": "ADAPTIVE", "ADAPTIVE_3": "HIGH BIAS"}


def main(folder: Path) -> None:
    doc = json.loads((folder / "results.json").read_text())
    rows: dict[str, dict[str, dict]] = {}
    for p in doc["points"]:
        sweep = p["sweep"]
        nodes = sweep["jobs.pingpong.placement"]["nodes"]
        where = (f"{'intra' if nodes[1] < 384 else 'inter'}-group, nodes {nodes[0]}-{nodes[1]}, "
                 f"credit delay {sweep.get('machine.router.credit_delay', '0ns')}")
        jobs = {j["name"]: j for j in p["summary"]["jobs"]}
        rows.setdefault(where, {})[sweep["routing.mode"]] = jobs["pingpong"]
    print("| ping-pong | mode | messages | median us [95 % CI] | QCD | max / median "
          "| mean hops | faster (median) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for where, modes in rows.items():
        med = {m: j["message_completion_ns"]["median"] for m, j in modes.items()}
        best = min(med, key=med.get)
        for mode, j in modes.items():
            v = j["message_completion_ns"]
            hops = j.get("mean_hops")
            print(f"| {where} | {NAMES.get(mode, mode)} | {v['samples']} "
                  f"| {v['median'] / 1e3:.2f} [{v['median_ci_low'] / 1e3:.2f}, "
                  f"{v['median_ci_high'] / 1e3:.2f}] | {v['qcd']:.4f} "
                  f"| {v['max_over_median']:.2f} "
                  f"| {'-' if hops is None else f'{hops:.2f}'} "
                  f"| {'yes' if mode == best else ''} |")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
