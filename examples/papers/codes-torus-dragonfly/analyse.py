"""Print the README tables of this folder from the run's results.json.

    federation run torus-dimensions.yaml --out out/torus
    python analyse.py out/torus
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

STAND_IN = {"nearest_neighbor": "AMG", "allreduce": "Crystal Router", "hpcg": "Multigrid"}


def value(s: dict, key: str) -> float:
    if key == "time":
        return s["programs"]["completion_ns"] / 1e3
    if key == "latency":
        return s["latency_ns"]["mean"]
    return s["mean_hops"]


def main(folder: Path) -> None:
    pts = json.loads((folder / "results.json").read_text())["points"]
    rows: dict[str, dict[int, dict]] = {}
    for p in pts:
        dims = len(p["resolved"]["machine"]["topology"]["dims"])
        rows.setdefault(p["sweep"]["workload"]["kind"], {})[dims] = p["summary"]
    for title, key in (("communication time, us (Fig. 13)", "time"),
                       ("mean packet latency, ns (Fig. 15)", "latency"),
                       ("mean hops per packet (Fig. 16)", "hops")):
        print(f"\n{title}\n")
        print("| trace (stand-in) | 3-D | 5-D | 7-D | 9-D | best |")
        print("| --- | ---: | ---: | ---: | ---: | --- |")
        for kind, by in rows.items():
            vals = {d: value(by[d], key) for d in sorted(by)}
            best = min(vals, key=vals.get)
            fmt = "{:,.2f}" if key == "hops" else "{:,.0f}"
            print(f"| {STAND_IN[kind]} ({kind}) | "
                  + " | ".join(fmt.format(v) for v in vals.values()) + f" | {best}-D |")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "out/torus"))
