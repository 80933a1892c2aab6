"""Build time of the built-in rank-program workloads (``plugins/workloads/programs.py``).

Cases, each about a million operations:

* ``allreduce`` on 1,024 ranks x 50 iterations (1,024,000 operations), 8 B and 64 KiB (the
  size changes no array shape: both should take the same time);
* the same with 1,000 ranks (not a power of two: MPICH's pre- and post-step);
* ``halo3d`` on a 16 x 8 x 8 grid (1,024 ranks) x 50 iterations with the 8-byte allreduce
  (about 1.6 million operations), and without it.

For each case it prints the best of ``--repeat`` builds (a fresh workload each time), the
operations, dependencies and operations per second.  Target: well under a few seconds per
million operations.

    python benchmarks/program_workloads.py [--repeat 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import time
from types import SimpleNamespace

import numpy as np

from federation.plugin.components import WorkloadContext
from federation.plugins.workloads.programs import Allreduce, Halo3d

CASES = [
    ("allreduce 1024 ranks x 50, 8 B", Allreduce, {"ranks": 1024, "iterations": 50,
                                                   "size": "8B"}),
    ("allreduce 1024 ranks x 50, 64 KiB", Allreduce, {"ranks": 1024, "iterations": 50,
                                                      "size": "64KiB"}),
    ("allreduce 1000 ranks x 50, 8 B", Allreduce, {"ranks": 1000, "iterations": 50}),
    ("halo3d 16x8x8 x 50, doreduce 1", Halo3d, {"pex": 16, "pey": 8, "pez": 8,
                                                "iterations": 50, "computetime": "10us"}),
    ("halo3d 16x8x8 x 50, doreduce 0", Halo3d, {"pex": 16, "pey": 8, "pez": 8,
                                                "iterations": 50, "computetime": "10us",
                                                "doreduce": 0}),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    ctx = WorkloadContext(SimpleNamespace(n_nodes=1024), SimpleNamespace(packet_size=4096.0),
                          None, 0, 1e9, np.random.default_rng(0))  # type: ignore[arg-type]
    rows = []
    for label, cls, params in CASES:
        best = float("inf")
        for _ in range(args.repeat):
            workload = cls(cls.Params(**params))
            t0 = time.perf_counter()
            progs = workload.programs(ctx)
            best = min(best, time.perf_counter() - t0)
        rows.append({"case": label, "seconds": round(best, 4), "ops": progs.n_ops,
                     "deps": progs.n_deps, "ops_per_s": round(progs.n_ops / best)})
        del progs
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"{'case':36s} {'seconds':>8s} {'ops':>10s} {'deps':>10s} {'ops/s':>12s}")
    for r in rows:
        print(f"{r['case']:36s} {r['seconds']:8.3f} {r['ops']:10,d} {r['deps']:10,d} "
              f"{r['ops_per_s']:12,d}")


if __name__ == "__main__":
    main()
