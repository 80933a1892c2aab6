"""Agreement with BookSim2 on its own dragonfly (``dragonflynew``): mean latency below saturation
and the saturation load, minimal and UGAL routing, uniform and worst-case traffic, p = 2 and 4,
for the native engine's default router and its ``booksim_iq`` router.

    python benchmarks/booksim_agreement.py --booksim /path/to/booksim [--p 2 4]
        [--routing min ugal] [--pattern uniform worst] [--model default booksim_iq]
        [--cache results.json] [--only-booksim]

Scenario and mapping: :mod:`benchmarks.booksim` (BookSim's example dragonfly router, one-flit
64-byte packets, one cycle = 1 ns).  Windows: p = 2 BookSim's own (3 warm-up periods of 10,000
cycles, 3 measured ones), p = 4 shorter (1 warm-up period of 2,000 cycles, 3 measured; a BookSim
run of its own length takes 10 minutes there).  The native engine runs the same windows.

*Saturation load*: the largest offered load whose run is stable: its mean latency stays below
1,000 ns and its accepted load is within 5 % of the offered load; found by bisection to 1/128
of the search range.  BookSim's runs of the bisection pass ``latency_thres = 1000``, which
spares hours of draining an overloaded network, but its test is not quite ours: it averages
the latencies of the packets delivered with the ages of *every* flit still in flight, source
queues and unmeasured traffic included, at each sample period and every 1,000 cycles of the
drain.  A run slightly above the load the network accepts, whose measured packets drain slowly
(UGAL's worst case at p = 4 at 0.1984: 14,000 cycles, 99 % of the offered load accepted), is
abandoned as the unmeasured backlog ages, where our rule may find it stable (its run at 0.2
without the limit: 467 ns, 99.4 % accepted).  ``--boundary``
therefore runs BookSim without the limit at the last stable and the first unstable load of each
of our models' bisections and judges them by our rule: BookSim agrees with a model's saturation
load when it is stable at the one and unstable at the other.

Every run is cached in ``--cache`` by its full description, so a second call prints the table
at once.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import booksim as bs  # noqa: E402

#: (warm-up cycles, sample period) per p
WINDOWS = {2: (30000, 10000), 4: (2000, 2000)}
#: mean latency (ns, cycles) past which a run counts as saturated
LATENCY_LIMIT = 1000.0
#: offered loads of the latency comparison, per (routing, pattern, p)
LOADS = {
    ("min", "uniform"): [0.1, 0.3, 0.5, 0.7],
    ("ugal", "uniform"): [0.1, 0.3, 0.5, 0.7],
    ("min", "worst", 2): [0.02, 0.05, 0.08, 0.1],
    ("min", "worst", 4): [0.005, 0.01, 0.02, 0.025],
    ("ugal", "worst"): [0.05, 0.1, 0.2, 0.3],
    # p = 4 saturates near 0.19 (0.2 is already at 1.5x the zero-load latency; from about 0.2
    # the routing's VC cycle deadlocks): 0.3 is past it, and BookSim, without a latency limit,
    # spent over 40 minutes draining that point
    ("ugal", "worst", 4): [0.05, 0.1, 0.15, 0.2],
}
#: bisection range of the saturation load
RANGES = {("min", "uniform"): (0.5, 1.0), ("ugal", "uniform"): (0.4, 1.0),
          ("min", "worst"): (0.0, 0.25), ("ugal", "worst"): (0.1, 0.8)}
MARGIN = 0.05
STEPS = 7


def loads_for(routing: str, pattern: str, p: int) -> list[float]:
    return LOADS.get((routing, pattern, p)) or LOADS[(routing, pattern)]


def machine(p: int, routing: str, model: str) -> dict[str, Any]:
    router: dict[str, Any] = {"vcs": bs.VCS[routing]}
    if model == "default":
        router["delay"] = "1ns"
    else:
        router.update({"model": model, "credit_delay": "2ns", "injection_vc": "random"})
    return {
        "name": f"booksim-dragonfly-p{p}",
        "topology": {"kind": "dragonfly", "p": p, "a": 2 * p, "h": p},
        "links": {c: {"bandwidth": "64GB/s", "latency": f"{lat}ns", "buffer": "16KiB"}
                  for c, lat in (("terminal", 1), ("local", 10), ("global", 100))},
        "router": router,
        "packet_size": "64B",
    }


def experiment(p: int, routing: str, pattern: str, load: float, model: str,
               seed: int = 1, measure_ns: int | None = None) -> dict[str, Any]:
    warmup, period = WINDOWS[p]
    if routing == "min":  # BookSim's VC plan: the global hop on VC 1
        algo: dict[str, Any] = {"algorithm": "minimal", "vc_step": "on"}
    else:  # BookSim's UGAL: a random node anywhere, decided at injection, 30-flit bias
        algo = {"algorithm": "ugal", "intermediate": "node", "decide": "injection",
                "bias": "1920B"}
    work: dict[str, Any] = {"kind": "synthetic", "load": load}
    if pattern == "uniform":
        work.update({"pattern": "uniform", "include_self": True})
    else:
        work["pattern"] = "group_shift"
    return {"machine": machine(p, routing, model), "routing": algo, "workload": work,
            "stop": {"warmup": f"{warmup}ns", "measure": f"{measure_ns or 3 * period}ns"},
            "seed": seed,
            "outputs": {"packets": False, "messages": False}}


def run_native(doc: dict[str, Any]) -> dict[str, float]:
    from federation.errors import SimulationError
    from federation.pipeline.bounds import default_max_memory
    from federation.pipeline.load import load_experiment
    from federation.pipeline.point import BuildCache
    from federation.pipeline.run import prepare, summarize

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "point.yaml"
        path.write_text(yaml.safe_dump(doc))
        point = load_experiment(path).points[0]
        # BookSim's UGAL has a cycle the deadlock proof refuses: run unproved, as BookSim does
        node = doc["routing"].get("intermediate") == "node"
        prep = prepare(point, BuildCache(default_max_memory(), deadlock_check=not node))
        try:
            raw = point.engine.run(prep.job)
        except SimulationError as e:  # unproved, it can deadlock past saturation: unstable
            if "deadlock" not in str(e):
                raise
            print(f"  deadlock: {str(e)[:120]}", file=sys.stderr)
            return {"latency": None, "accepted": None, "offered": None, "hops": None,
                    "deadlock": True}
        summary, _, _ = summarize(prep, raw)
    # router-to-router hops: BookSim's "Hops average" counts one more (the ejection)
    return {"latency": summary.latency_ns.mean, "accepted": summary.accepted_load,
            "offered": summary.offered_load, "hops": summary.mean_hops}


class Runs:
    """Cached runs of both simulators."""

    def __init__(self, path: Path | None, binary: str | None,
                 measure_ns: int | None = None) -> None:
        self.path = path
        self.binary = binary
        self.measure_ns = measure_ns  #: the native runs' measurement window (None: BookSim's)
        self.data: dict[str, Any] = {}
        if path is not None and path.exists():
            self.data = json.loads(path.read_text())

    def _save(self) -> None:
        if self.path is not None:
            self.path.write_text(json.dumps(self.data, indent=1, sort_keys=True))

    def booksim(self, p: int, routing: str, pattern: str, load: float,
                limit: float | None = None) -> dict[str, Any]:
        warmup, period = WINDOWS[p]
        cfg = bs.config(p, routing, pattern, load, warmup, period, latency_limit=limit)
        key = "booksim\n" + cfg
        if key not in self.data:
            if self.binary is None:
                raise SystemExit("no cached BookSim run for this point: pass --booksim PATH")
            r = bs.run(self.binary, cfg)
            self.data[key] = {"latency": r.latency, "accepted": r.accepted,
                              "offered": r.injected, "cycles": r.cycles, "wall_s": r.wall_s,
                              "rss_mb": r.max_rss_mb, "hops": r.hops, "stuck": r.stuck}
            self._save()
            print(f"  booksim p={p} {routing} {pattern} {load:.4g}: {self.data[key]}",
                  file=sys.stderr, flush=True)
        return self.data[key]

    def native(self, p: int, routing: str, pattern: str, load: float,
               model: str) -> dict[str, Any]:
        doc = experiment(p, routing, pattern, load, model, measure_ns=self.measure_ns)
        key = "native\n" + json.dumps(doc, sort_keys=True)
        if key not in self.data:
            self.data[key] = run_native(doc)
            self._save()
            print(f"  native {model} p={p} {routing} {pattern} {load:.4g}: {self.data[key]}",
                  file=sys.stderr, flush=True)
        return self.data[key]


def stable(r: dict[str, Any], load: float) -> bool:
    return (r["latency"] is not None and r["latency"] <= LATENCY_LIMIT
            and r["accepted"] is not None and r["accepted"] >= (1 - MARGIN) * load)


def saturation(run: Any, lo: float, hi: float) -> tuple[float, float]:
    """Bisection of the largest stable load (:func:`stable`): ``(the last stable load, the
    first unstable one)``."""
    for _ in range(STEPS):
        mid = round((lo + hi) / 2, 6)
        if stable(run(mid), mid):
            lo = mid
        else:
            hi = mid
    return lo, hi


def boundary(runs: Runs, p: int, routing: str, pattern: str,
             bounds: tuple[float, float]) -> str:
    """BookSim without a latency limit at a model's last stable and first unstable load, by
    our rule: "agrees" when it is stable at the one and unstable at the other."""
    verdicts = [stable(runs.booksim(p, routing, pattern, x), x) for x in bounds]
    if verdicts == [True, False]:
        return "agrees"
    return ", ".join(f"{'stable' if v else 'unstable'} at {x:.4g}"
                     for v, x in zip(verdicts, bounds, strict=True))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--booksim", help="path of a BookSim2 binary (runs not in the cache)")
    ap.add_argument("--cache", type=Path, help="JSON file of cached runs (read and extended)")
    ap.add_argument("--p", type=int, nargs="+", default=[2, 4], choices=[2, 4])
    ap.add_argument("--routing", nargs="+", default=["min", "ugal"], choices=["min", "ugal"])
    ap.add_argument("--pattern", nargs="+", default=["uniform", "worst"],
                    choices=["uniform", "worst"])
    ap.add_argument("--model", nargs="+", default=["default", "booksim_iq"],
                    choices=["default", "booksim_iq"])
    ap.add_argument("--only-booksim", action="store_true", help="run BookSim's points only")
    ap.add_argument("--no-saturation", action="store_true")
    ap.add_argument("--native-measure", type=int, metavar="NS",
                    help="the native runs' measurement window in ns (default: BookSim's three "
                         "periods): where a deadlock limits the load, how long the load lasts "
                         "decides the saturation (docs/architecture.md, BookSim agreement)")
    ap.add_argument("--boundary", action="store_true",
                    help="also run BookSim without a latency limit at each model's saturation "
                         "boundary, judged by our rule (see above)")
    args = ap.parse_args(argv)
    if args.native_measure is not None and args.native_measure < 1:
        ap.error("--native-measure must be at least 1 ns")
    if args.boundary and args.no_saturation:
        ap.error("--boundary runs at the saturation boundary, which --no-saturation skips")
    runs = Runs(args.cache, args.booksim, args.native_measure)
    rows = []
    for p in args.p:
        for routing in args.routing:
            for pattern in args.pattern:
                lo, hi = RANGES[(routing, pattern)]
                loads = loads_for(routing, pattern, p)
                ref = {x: runs.booksim(p, routing, pattern, x) for x in loads}
                sat_ref = None if args.no_saturation else saturation(
                    lambda x, p=p, r=routing, t=pattern: runs.booksim(p, r, t, x,
                                                                      LATENCY_LIMIT), lo, hi)[0]
                if args.only_booksim:
                    continue
                for model in args.model:
                    ours = {x: runs.native(p, routing, pattern, x, model) for x in loads}
                    sat, check = None, ""
                    if not args.no_saturation:
                        bounds = saturation(lambda x, p=p, r=routing, t=pattern, m=model:
                                            runs.native(p, r, t, x, m), lo, hi)
                        sat = bounds[0]
                        if args.boundary:
                            check = boundary(runs, p, routing, pattern, bounds)
                    rows.append((p, routing, pattern, model, loads, ref, ours, sat_ref, sat,
                                 check))
    if rows:
        print_table(rows)
    return 0


def print_table(rows: list[tuple]) -> None:
    print(f"{'p':>2} {'routing':>7} {'pattern':>8} {'model':>11} {'load':>6} "
          f"{'BookSim ns':>10} {'native ns':>10} {'diff':>7}   {'sat BookSim':>11} "
          f"{'sat native':>10} {'diff':>7}   BookSim, our rule, at the native boundary")
    for p, routing, pattern, model, loads, ref, ours, sat_ref, sat, check in rows:
        for i, x in enumerate(loads):
            a, b = ref[x]["latency"], ours[x]["latency"]
            d = f"{100 * (b - a) / a:+6.2f}%" if a and b else "   n/a"
            tail = ""
            if i == 0 and sat_ref is not None and sat is not None:
                tail = (f"   {sat_ref:>11.4f} {sat:>10.4f} "
                        f"{100 * (sat - sat_ref) / sat_ref:+6.2f}%   {check}")
            print(f"{p:>2} {routing:>7} {pattern:>8} {model:>11} {x:>6.3f} "
                  f"{a if a else float('nan'):>10.2f} {b if b else float('nan'):>10.2f} "
                  f"{d}{tail}")


if __name__ == "__main__":
    sys.exit(main())
