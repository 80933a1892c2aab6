"""The deadlock proof's cost (issue 23, item 6): :func:`federation.network.deadlock.prove`.

Part 1 (a minute): every shipped machine with every built-in routing, each given the VCs it
asks for (``router.vcs`` raised to the routing's ``vcs_required``), through the build stage:
the time to build the network and tables, the proof's time, its size (channels, routing states
walked, dependencies) and its verdict.  Combinations no routing can take (equal-cost
spreading on dimension-order tori) are listed as such.

Part 2 (``--large``, minutes): 8,192-router machines built in Python: the random-shortcut
graph and the circulant G(8192, 13) (shortest paths, VC = hops so far: proved without a walk)
and a 32 x 16 x 16 torus (dimension order with dateline VCs: a walk over every (router,
destination), 147 million routing states).

    python benchmarks/deadlock.py [--large] [--machines NAME ...]

Measured on the shared two-core development machine (load about 3): every shipped combination
at most 0.4 s of proof (``par`` and its kin on the 8,320-node dragonfly 0.3 s) except Valiant's
phases on the 1,024-router 5-D torus (about 3 s, proved deadlock-free: it was refused, a real
cycle, until stop 33 gave the Valiant family dateline VCs on tori); the 8,192-router
random-shortcut and circulant graphs at once (VC = hops so far), the 8,192-router torus 24 s
and 1.2 GB.
"""

from __future__ import annotations

import argparse
import re
import resource
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
MACHINES = REPO / "schemas" / "machines"
ROUTINGS = [{"algorithm": "minimal"}, {"algorithm": "minimal", "spread": "hash"},
            {"algorithm": "valiant"}, {"algorithm": "valiant", "intermediate": "router"},
            {"algorithm": "ugal"}, {"algorithm": "ugal", "decide": "injection"},
            {"algorithm": "par"}, {"algorithm": "ugal_global"}, {"algorithm": "prog_adaptive"},
            {"algorithm": "aries"}, {"algorithm": "aries", "mode": "NMIN_HASH"}]


def label(r: dict) -> str:
    return " ".join(str(v) for v in r.values())


def shipped(names: list[str] | None) -> None:
    from federation.errors import ConfigError
    from federation.pipeline.load import load_experiment
    from federation.pipeline.point import BuildCache

    print(f"{'machine':26s} {'routing':22s} {'vcs':>3s} {'build s':>7s} {'proof s':>7s} "
          f"{'channels':>9s} {'states':>11s} {'deps':>9s}  verdict")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "e.yaml"
        for m in sorted(MACHINES.glob("*.yaml")):
            if names and m.stem not in names:
                continue
            for r in ROUTINGS:
                machine = yaml.safe_load(m.read_text())
                doc = {"machine": machine, "routing": r,
                       "workload": {"kind": "synthetic", "pattern": "uniform", "load": 0.1},
                       "stop": {"warmup": "1us", "measure": "1us"}}
                for _ in range(2):  # again with the VCs the routing asks for
                    path.write_text(yaml.safe_dump(doc))
                    t0 = time.perf_counter()
                    try:
                        b = BuildCache(1 << 34).get(load_experiment(path).points[0])
                        verdict, p = "deadlock-free", b.deadlock
                        break
                    except ConfigError as exc:
                        msg, p = str(exc), None
                        need = re.search(r"needs (\d+) virtual channels", msg)
                        if need and "router.vcs" in msg:
                            machine["router"] = {**machine.get("router", {}),
                                                 "vcs": int(need.group(1))}
                            continue
                        verdict = ("n/a (one minimal port per hop)" if "dimension-order" in msg
                                   else "CYCLE: " + msg.split("has a cycle of ")[-1][:60])
                        break
                total = time.perf_counter() - t0
                vcs = machine.get("router", {}).get("vcs", 3)
                if p is None:
                    print(f"{m.stem:26s} {label(r):22s} {vcs:3d} {total:7.2f} {'':>7s} "
                          f"{'':>9s} {'':>11s} {'':>9s}  {verdict}")
                    continue
                print(f"{m.stem:26s} {label(r):22s} {vcs:3d} {total - p.seconds:7.2f} "
                      f"{p.seconds:7.2f} {p.channels:9,d} {p.states:11,d} "
                      f"{p.dependencies:9,d}  {verdict}")


def large() -> None:
    from federation.network.deadlock import prove
    from federation.network.tables import TablePlan
    from federation.plugins.topologies.circulant import Circulant
    from federation.plugins.topologies.random_shortcut import RandomShortcut
    from federation.plugins.topologies.torus import Torus

    cases = [
        ("random shortcut n=8192 d=13", RandomShortcut(RandomShortcut.Params(
            n=8192, degree=13, seed=1)), None),
        ("circulant G(8192, 13)", Circulant(Circulant.Params(preset={"k": 13})), None),
        ("torus 32x16x16", Torus(Torus.Params(dims=[32, 16, 16], nodes_per_router=1)), 2),
    ]
    for name, topo, vcs in cases:
        t0 = time.perf_counter()
        net = topo.build()
        t = topo.minimal_routes(net)
        build = time.perf_counter() - t0
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        p = prove(net, t, vcs or t.vcs_required, TablePlan(), declared=False)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"{name:28s} {net.n_routers:6d} routers  tables {build:6.1f} s  proof "
              f"{p.seconds:6.1f} s  peak +{max(0.0, peak - before):6.0f} MB  {p.describe()}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--large", action="store_true", help="also the 8,192-router machines")
    ap.add_argument("--machines", nargs="*", help="shipped machine names (default: all)")
    args = ap.parse_args()
    unknown = sorted(set(args.machines or []) - {m.stem for m in MACHINES.glob("*.yaml")})
    if unknown:
        ap.error(f"no shipped machine {', '.join(unknown)} (names without .yaml)")
    shipped(args.machines)
    if args.large:
        print()
        large()


if __name__ == "__main__":
    main()
