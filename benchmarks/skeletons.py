"""The application skeletons' build times and closed-loop speed (``benchmarks/programs.py
--skeletons``).

* **Build** (issue "Application library", speed check: building a 4,096-rank skeleton takes
  seconds): each skeleton's ``programs`` for 4,096 ranks, one iteration, its defaults (the
  NPB ones class C; ``npb_ft`` at 512 ranks, the most its 1-D layout takes), timed alone.
* **Run**: each skeleton with 1,024 ranks on the CODES dragonfly (1,056 nodes, minimal
  routing), small sizes, 1 us of compute per phase, in the native engine: operations per
  processor second of the loop (target: about 1,000,000, the rate the allreduce keeps, for
  skeletons of small messages) and packets per processor second (what bounds the skeletons
  of large messages: a 1 MiB message is 2,048 packets of 512 B).
"""

from __future__ import annotations

import time
from importlib import import_module
from types import SimpleNamespace
from typing import Any

import numpy as np

NAMES = ["nearest_neighbor", "sweep3d", "snap", "fft3d", "fft2d", "lammps", "nekbone", "milc",
         "hpcg", "caffe", "npb_cg", "npb_mg", "npb_ft"]
BUILD = {"fft2d": {"row_length": 4096, "rows_per_rank": 8}, "npb_cg": {"npb_class": "C"},
         "npb_mg": {"npb_class": "C"}, "npb_ft": {"npb_class": "C", "ranks": 512}}
RUN = {"nearest_neighbor": {"msg_size": "4KiB", "iterations": 10},
       "sweep3d": {"nz": 10, "nx": 10, "ny": 10}, "snap": {"nx": 8, "inners": 2},
       "fft3d": {"n": 64}, "fft2d": {"row_length": 1024, "rows_per_rank": 4},
       "lammps": {"iterations": 5, "neigh_every": 2}, "nekbone": {"iterations": 10},
       "milc": {"L": 4, "iterations": 5}, "hpcg": {"nx": 16, "ny": 16, "nz": 16},
       "caffe": {"model_bytes": "1MiB", "iterations": 2},
       "npb_cg": {"npb_class": "A", "cgit": 5}, "npb_mg": {"npb_class": "A"},
       "npb_ft": {"npb_class": "A", "ranks": 128}}


def skeleton(name: str) -> Any:
    mod = import_module(f"federation.plugins.workloads.{name}")
    return next(v for v in vars(mod).values()
                if isinstance(v, type) and getattr(v, "name", None) == name)


def builds(ranks: int = 4096) -> list[tuple[str, int, int, float]]:
    """(name, ranks, operations, seconds) of each skeleton built for ``ranks``."""
    ctx = SimpleNamespace(network=SimpleNamespace(n_nodes=ranks),
                          machine=SimpleNamespace(packet_size=4096.0), experiment=None,
                          horizon_ps=0, nic_bandwidth=25e9,
                          rng=np.random.default_rng(np.random.SeedSequence(1)))
    out = []
    for name in NAMES:
        cls = skeleton(name)
        params = {"iterations": 1, **BUILD.get(name, {})}
        t0 = time.perf_counter()
        progs = cls(cls.Params(**params)).programs(ctx)
        out.append((name, progs.n_ranks, progs.n_ops, time.perf_counter() - t0))
    return out


def runs(machine: dict, ranks: int = 1024) -> list[dict]:
    """Each skeleton in the native engine (see the module docstring)."""
    import tempfile
    from pathlib import Path

    import yaml

    from federation.pipeline.load import load_experiment
    from federation.pipeline.point import prepare

    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in NAMES:
            wl: dict = {"kind": name, "ranks": ranks, **RUN.get(name, {})}
            if "compute" in skeleton(name).Params.model_fields:
                wl["compute"] = "1us" if name not in ("fft2d", "npb_ft") else "1ps"
            doc = {"machine": machine, "routing": {"algorithm": "minimal"}, "workload": wl}
            path = Path(tmp) / f"{name}.yaml"
            path.write_text(yaml.safe_dump(doc))
            point = load_experiment(path).points[0]
            prep = prepare(point)
            raw = point.engine.run(prep.job)
            n_ops = prep.job.programs.programs.n_ops
            out.append({"name": name, "ranks": wl["ranks"], "operations": n_ops,
                        "cpu_s": raw.cpu_s, "ops_per_s": n_ops / raw.cpu_s,
                        "packets_per_s": int(raw.programs.pstat[0]) / raw.cpu_s,
                        "packets": int(raw.programs.pstat[0]),
                        "completion_us": float(raw.programs.rank_finish.max()) / 1e6})
    return out


def report(machine: dict) -> None:
    print("build, 4,096 ranks (npb_ft 512), 1 iteration:")
    print(f"{'skeleton':>17} {'ranks':>6} {'operations':>11} {'seconds':>8} {'ops/s':>11}")
    for name, n, ops, s in builds():
        print(f"{name:>17} {n:>6} {ops:>11,} {s:>8.2f} {ops / s:>11,.0f}", flush=True)
    print("closed loop, CODES dragonfly, 1,024 ranks (npb_ft 128), minimal routing:")
    print(f"{'skeleton':>17} {'operations':>11} {'packets':>10} {'cpu s':>7} {'ops/s':>11} "
          f"{'packets/s':>11} {'done us':>9}")
    for r in runs(machine):
        print(f"{r['name']:>17} {r['operations']:>11,} {r['packets']:>10,} {r['cpu_s']:>7.2f} "
              f"{r['ops_per_s']:>11,.0f} {r['packets_per_s']:>11,.0f} "
              f"{r['completion_us']:>9.1f}", flush=True)
