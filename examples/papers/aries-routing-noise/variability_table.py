"""The variability table of a results folder of ``variability.yaml``: per ping-pong size and
background shape, the ping-pong's message times in the paper's statistics (median with its
95 % confidence interval and the interval's width against the median, QCD, max / median), and
the background job's own, all read from the summary's ``message_completion_ns`` blocks (no
recomputation: the figures are the run's).

    python variability_table.py results/variability
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def shape(injection: object) -> str:
    if not isinstance(injection, dict):
        return f"smooth ({injection})"
    law = injection.get("on_law", {"law": "exponential"})
    law = law if isinstance(law, dict) else {"law": law}
    tail = f", shape {law['shape']}" if "shape" in law else ""
    return f"bursty, {law['law']}{tail} bursts"


def main(folder: Path) -> None:
    doc = json.loads((folder / "results.json").read_text())
    print("| ping-pong | background | messages | median ns [95 % CI] | CI / median | QCD "
          "| max / median | background QCD | background max / median |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for p in doc["points"]:
        sweep = p["sweep"]
        size = sweep["jobs.pingpong.workload"]["sizes"][0]
        jobs = {j["name"]: j for j in p["summary"]["jobs"]}
        v, b = jobs["pingpong"]["message_completion_ns"], jobs["background"][
            "message_completion_ns"]
        width = (v["median_ci_high"] - v["median_ci_low"]) / v["median"]
        print(f"| {size} | {shape(sweep['jobs.background.workload.injection'])} "
              f"| {v['samples']} | {v['median']:.1f} [{v['median_ci_low']:.1f}, "
              f"{v['median_ci_high']:.1f}] | {100 * width:.2f} % | {v['qcd']:.4f} "
              f"| {v['max_over_median']:.2f} | {b['qcd']:.3f} | {b['max_over_median']:.1f} |")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
