"""The Fig. 3 table of a results folder of ``fig3.yaml``: per placement and background load, the
ping-pong's message times (each ping and each pong, send start to last packet's arrival):
median, mean, 99th percentile, maximum, and the quartile coefficient of dispersion the paper
uses for variability, (Q3 - Q1) / (Q3 + Q1).

    python fig3_table.py results/fig3
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

PLACES = {(0, 1): "same blade", (0, 4): "inter-blade", (0, 64): "inter-chassis",
          (0, 384): "inter-group"}


def main(folder: Path) -> None:
    doc = json.loads((folder / "results.json").read_text())
    print("| placement | background load | median ns | mean ns | p99 ns | max ns | QCD |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for p in doc["points"]:
        nodes = tuple(p["sweep"]["jobs.pingpong.placement"]["nodes"])
        load = p["sweep"]["jobs.background.workload.load"]
        t = pq.read_table(folder / p["files"]["messages"]).to_pydict()
        ns = np.array([c for c, j in zip(t["completion_ps"], t["job"], strict=True)
                       if j == "pingpong"]) / 1e3
        q1, q3 = np.percentile(ns, [25, 75])
        print(f"| {PLACES.get(nodes, nodes)} | {load} | {np.median(ns):.0f} | {ns.mean():.0f} "
              f"| {np.percentile(ns, 99):.0f} | {ns.max():.0f} | {(q3 - q1) / (q3 + q1):.3f} |")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
