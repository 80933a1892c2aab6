"""Print the README tables of this folder from the runs' results.json files.

    federation run fig2-allreduce-variability.yaml --out out/fig2
    federation run fig9-bandwidth.yaml --out out/fig9
    federation run fig10-11-fft2d.yaml --out out/fig10-11
    python analyse.py out
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from scipy import integrate, stats


def points(folder: Path) -> list[dict]:
    return json.loads((folder / "results.json").read_text())["points"]


def completion_us(p: dict) -> float:
    return p["summary"]["programs"]["completion_ns"] / 1e3


def e_max(n: int) -> float:
    """E[max of n standard normals] (the order-statistic oracle)."""
    f = lambda x: x * n * stats.norm.pdf(x) * stats.norm.cdf(x) ** (n - 1)  # noqa: E731
    return integrate.quad(f, -12, 12)[0]


def fig2(folder: Path) -> None:
    rows: dict[int, dict[str, float]] = {}
    for p in points(folder):
        s = p["sweep"]
        rows.setdefault(s["workload.ranks"], {})[s["workload.sampling"]] = completion_us(p)
    print("| ranks | constant (us) | variable (us) | gap (us) | gap from E[max] (us) |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    for n, r in sorted(rows.items()):
        pred = 20 * 5 * e_max(n)  # 20 iterations x std 5 us x E[max of n]
        print(f"| {n} | {r['constant']:,.1f} | {r['variable']:,.1f} | "
              f"{r['variable'] - r['constant']:,.1f} | {pred:,.1f} |")


def bandwidth(p: dict) -> int:
    return int(p["sweep"]["machine.links"]["terminal"]["bandwidth"].removesuffix("Gb/s"))


def latency(p: dict) -> int:
    return int(p["sweep"]["machine.links"]["terminal"]["latency"].removesuffix("ns"))


def fig9(folder: Path) -> None:
    t: dict[str, dict[int, float]] = {}
    for p in points(folder):
        t.setdefault(p["sweep"]["workload"]["kind"], {})[bandwidth(p)] = completion_us(p)
    bws = sorted(next(iter(t.values())))
    print("| skeleton | " + " | ".join(f"{b} Gb/s" for b in bws) + " |")
    print("| --- |" + " ---: |" * len(bws))
    for kind, row in t.items():
        base = row[1000]
        print(f"| {kind} | " + " | ".join(f"{row[b] / base:.2f}" for b in bws) + " |")


def fig10_11(folder: Path) -> None:
    t: dict[tuple[str, int, int], float] = {}
    for p in points(folder):
        t[p["sweep"]["workload.sampling"], bandwidth(p), latency(p)] = completion_us(p)
    lats = sorted({k[2] for k in t})
    print("| sampling | bandwidth | " + " | ".join(f"{x} ns" for x in lats) + " |")
    print("| --- | --- |" + " ---: |" * len(lats))
    for s in ("constant", "variable"):
        for bw in (20, 50, 100):
            print(f"| {s} | {bw} Gb/s | " + " | ".join(f"{t[s, bw, x]:,.0f}" for x in lats)
                  + " |")
    for s in ("constant", "variable"):
        save = t[s, 20, 90] - t[s, 50, 90]
        lat = (t[s, 20, 500] - t[s, 20, 200]) / t[s, 20, 500]
        print(f"{s}: 20 -> 50 Gb/s at 90 ns saves {save:,.0f} us; at 20 Gb/s, 500 -> 200 ns "
              f"saves {100 * lat:.1f} %")


if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "out")
    for name, fn in (("fig2", fig2), ("fig9", fig9), ("fig10-11", fig10_11)):
        if (out / name / "results.json").exists():
            print(f"\n{name}")
            fn(out / name)
