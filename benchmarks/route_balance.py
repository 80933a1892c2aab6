"""Route balance of the minimal tables and what it does to throughput (issue 6, item 3).

Part 1 (seconds): for every shipped machine, the busiest / mean load per link class of uniform
all-to-all traffic walked through the minimal tables
(:func:`federation.network.routes.channel_load`), and the time to build the tables.

Part 2 (minutes): the native engine, through the CLI (``federation run EXP --out DIR --json``),
on the megafly of the megafly QoS paper and on the dragonfly of the same size:

* uniform traffic, minimal routing;
* group-shift traffic (every node sends to the next group), Valiant routing, which in theory
  sustains just under 0.5 of injection bandwidth (every packet crosses two global links);

at offered loads 0.3, 0.5 and 0.7 (``--loads``), printing offered and accepted load (fraction
of NIC bandwidth delivered in the measurement window), mean latency and hops.  Before the
route fix the megafly saturated at 0.126 under uniform minimal traffic and at 0.09 under
group-shift Valiant traffic, because a leaf sent everything leaving its group up 1-2 of its 16
up-links.

    python benchmarks/route_balance.py [--loads 0.3 0.5 0.7] [--warmup 3us] [--measure 5us]
                                       [--skip-engine] [--skip-tables]

The warm-up must exceed the zero-load latency (about 1.4 us on the megafly, whose routers take
100 ns per hop), or deliveries of the first measured packets fall outside the window.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
MACHINES = REPO / "schemas" / "machines"

RUNS = [
    ("megafly-qos-megafly", "uniform", "minimal"),
    ("megafly-qos-megafly", "group_shift", "valiant"),
    ("megafly-qos-dragonfly", "uniform", "minimal"),
    ("megafly-qos-dragonfly", "group_shift", "valiant"),
]


def table_balance() -> None:
    from federation.network.routes import channel_load, class_loads
    from federation.pipeline.load import load_machine

    print("busiest / mean port load per link class, uniform all-to-all, minimal tables")
    for path in sorted(MACHINES.glob("*.yaml")):
        rm = load_machine(path)
        net = rm.topology.build()
        t0 = time.perf_counter()
        tables = rm.topology.minimal_routes(net)
        build = time.perf_counter() - t0
        cl = class_loads(net, channel_load(net, tables))
        figures = "  ".join(f"{k} {v.ratio:.3f}" for k, v in cl.items())
        print(f"  {path.stem:28s} {net.n_routers:5d} routers  tables {build:5.2f} s  {figures}")


def federation_exe() -> str:
    exe = Path(sys.executable).parent / "federation"
    return str(exe) if exe.exists() else "federation"


def engine_runs(loads: list[float], warmup: str, measure: str, seed: int) -> list[str]:
    """Run each of ``RUNS``; returns the runs that failed (the script then exits 1)."""
    failed: list[str] = []
    print(f"\nnative engine, warm-up {warmup}, measured {measure}, seed {seed}")
    print(f"  {'machine':22s} {'pattern':12s} {'routing':8s} {'load':>5s} {'offered':>8s} "
          f"{'accepted':>9s} {'latency':>9s} {'hops':>5s} {'wall':>6s}")
    with tempfile.TemporaryDirectory() as tmp:
        for machine, pattern, routing in RUNS:
            exp = {
                "name": f"balance-{machine}-{pattern}-{routing}",
                "machine": str(MACHINES / f"{machine}.yaml"),
                "routing": {"algorithm": routing},
                "workload": {"kind": "synthetic", "pattern": pattern, "load": loads[0]},
                "stop": {"warmup": warmup, "measure": measure},
                "seed": seed,
                "sweep": {"workload.load": loads},
            }
            path = Path(tmp) / f"{exp['name']}.yaml"
            path.write_text(yaml.safe_dump(exp))
            t0 = time.perf_counter()
            done = subprocess.run(
                [federation_exe(), "run", str(path), "--out", str(Path(tmp) / exp["name"]),
                 "--json", "--overwrite"], capture_output=True, text=True, check=False)
            wall = time.perf_counter() - t0
            if done.returncode != 0:
                print(f"  {machine} {pattern} {routing}: failed\n{done.stderr}")
                failed.append(f"{machine} {pattern} {routing}")
                continue
            res = json.loads(done.stdout)
            for p in res["points"]:
                s = p["summary"]
                print(f"  {machine:22s} {pattern:12s} {routing:8s} "
                      f"{p['sweep']['workload.load']:5.2f} {s['offered_load']:8.3f} "
                      f"{s['accepted_load']:9.3f} {s['latency_ns']['mean']:7.0f}ns "
                      f"{s['mean_hops']:5.2f} {wall / len(res['points']):5.1f}s")
    return failed


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--loads", type=float, nargs="+", default=[0.3, 0.5, 0.7])
    ap.add_argument("--warmup", default="3us")
    ap.add_argument("--measure", default="5us")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--skip-tables", action="store_true", help="skip part 1")
    ap.add_argument("--skip-engine", action="store_true", help="skip part 2")
    args = ap.parse_args(argv)
    if not args.skip_tables:
        table_balance()
    if not args.skip_engine:
        failed = engine_runs(args.loads, args.warmup, args.measure, args.seed)
        if failed:
            raise SystemExit(f"{len(failed)} runs failed: {'; '.join(failed)}")


if __name__ == "__main__":
    main()
