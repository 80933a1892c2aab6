"""The Figs. 8-9 table of the results folders of ``fig8_9.yaml`` (static modes) and
``fig8_9_aa.yaml`` (application-aware): per microbenchmark and routing, the time of one
iteration (median with its 95 % confidence interval, normalised to DEFAULT's median as the
paper's figures are; DEFAULT: ADAPTIVE_0, ADAPTIVE_1 for alltoall), its QCD and max / median
(the paper's variability figures), and the share of the benchmark's bytes sent with DEFAULT's
mode (the paper's "% of traffic sent with DEFAULT" under AA; of the messages for a barrier,
whose messages are 0 B: its share of bytes was 0/0, printed 0 %).

An iteration's time is read from the messages table: a rank's sends are numbered in program
order and every rank sends as many per iteration, so a message's iteration is its index among
its rank's sends over that count; iteration k ends when its last message arrived, and lasts
from the end of iteration k - 1 (0 for the first).

    python fig8_9_table.py results/fig8_9 results/fig8_9_aa
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from federation.results.variability import variability

MODES = ["ADAPTIVE_0", "ADAPTIVE_1", "ADAPTIVE_2", "ADAPTIVE_3", "MIN_HASH", "NMIN_HASH",
         "IN_ORDER"]


def iteration_times(table: dict[str, np.ndarray], iterations: int) -> np.ndarray:
    """Each iteration's duration (ns) from the benchmark's messages (see the docstring)."""
    rank, message, done = table["src_rank"], table["message"], table["completed_ps"]
    order = np.lexsort((message, rank))
    rank, done = rank[order], done[order]
    first = np.searchsorted(rank, rank, side="left")  # each rank's first row
    count = np.bincount(rank)[rank]
    it = (np.arange(rank.shape[0]) - first) * iterations // count
    ends = np.zeros(iterations)
    np.maximum.at(ends, it, done / 1000.0)
    return np.diff(np.concatenate([[0.0], ends]))


def rows(folder: Path, label: str | None) -> list[dict]:
    doc = json.loads((folder / "results.json").read_text())
    out = []
    for p in doc["points"]:
        w = p["sweep"]["jobs.bench.workload"]
        name = f"{w['op']} {w.get('size', '')}".strip()
        mode = label or p["sweep"]["jobs.bench.routing_mode"]
        t = pq.read_table(folder / p["files"]["messages"]).to_pydict()
        t = {k: np.asarray(v) for k, v in t.items()}
        bench = ~t["background"]
        t = {k: v[bench] for k, v in t.items()}
        default = "ADAPTIVE_1" if w["op"] == "alltoall" else "ADAPTIVE_0"
        sent = np.where(t["routing_mode"] >= 0, t["routing_mode"],
                        MODES.index(p["resolved"]["routing"]["mode"]))
        mine = sent == MODES.index(default)
        total = t["size"].sum()  # a barrier's messages are 0 B: their share is by count
        share = float(t["size"][mine].sum() / total if total else mine.mean() if mine.size
                      else 0.0)
        times = iteration_times(t, int(w["iterations"]))
        out.append({"bench": name, "mode": mode, "default": default, "share": share,
                    "v": variability(times)})
    return out


def main(folders: list[Path]) -> None:
    found = rows(folders[0], None) + [r for f in folders[1:] for r in rows(f, "AA")]
    print("| benchmark | routing | iteration us, median [95 % CI] | / DEFAULT | QCD "
          "| max / median | bytes (0 B messages: messages) with DEFAULT's mode |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for bench in dict.fromkeys(r["bench"] for r in found):
        mine = [r for r in found if r["bench"] == bench]
        base = next(r for r in mine if r["mode"] == r["default"])["v"].median
        for r in mine:
            v = r["v"]
            ci = (f"[{v.median_ci_low / 1000:.2f}, {v.median_ci_high / 1000:.2f}]"
                  if v.median_ci_low is not None else "[too few]")
            print(f"| {bench} | {r['mode']} | {v.median / 1000:.2f} {ci} | {v.median / base:.3f} "
                  f"| {v.qcd:.3f} | {v.max_over_median:.2f} | {100 * r['share']:.0f} % |")


if __name__ == "__main__":
    main([Path(a) for a in sys.argv[1:]])
