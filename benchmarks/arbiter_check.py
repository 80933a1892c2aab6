"""What checking every arbiter answer costs (issue 22, item 4): the same point of
``benchmarks/engine.py`` run with the loop that checks (the default) and the one compiled
without the check (``engine: {kind: native, check_arbiter: false}``), alternating back to
back so that a shared machine disturbs both alike; prints packet-hops per second of the
loop's processor time for each run, and the median ratio unchecked / checked (the check's
cost is ``1 - 1/ratio``).

    python benchmarks/arbiter_check.py [--scenario codes] [--load 0.5] [--pairs 5]
        [--arbiter oldest_first round_robin]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import engine as bench  # noqa: E402


def measure(scenario: str, load: float, arbiter: str, pairs: int, warmup: str | None,
            span: str | None) -> list[tuple[float, float]]:
    """``pairs`` of (checked, unchecked) packet-hops per processor second."""
    from federation.engine.native import run_native
    from federation.pipeline.bounds import default_max_memory
    from federation.pipeline.load import load_experiment
    from federation.pipeline.point import BuildCache, prepare

    _, _, _, w, m, _ = bench.SCENARIOS[scenario]
    doc = bench.experiment(scenario, load, "minimal", warmup or w, span or m, 1)
    doc["machine"]["router"]["arbiter"] = {"kind": arbiter}
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "bench.yaml"
        path.write_text(yaml.safe_dump(doc))
        point = load_experiment(path).points[0]
        prep = prepare(point, BuildCache(default_max_memory(), True))
    for check in (True, False):  # load (or compile) both loops, untimed
        run_native(prep.job, check_arbiter=check)
    out = []
    for _ in range(pairs):
        rates = []
        for check in (True, False):
            raw = run_native(prep.job, check_arbiter=check)
            rates.append(raw.packet_hops / raw.cpu_s)
        out.append((rates[0], rates[1]))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", default="codes", choices=list(bench.SCENARIOS))
    ap.add_argument("--load", type=float, default=0.5)
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--arbiter", nargs="+", default=["oldest_first", "round_robin"])
    ap.add_argument("--warmup")
    ap.add_argument("--measure")
    args = ap.parse_args(argv)
    if args.pairs < 1:
        ap.error("--pairs must be at least 1")
    for arb in args.arbiter:
        pairs = measure(args.scenario, args.load, arb, args.pairs, args.warmup, args.measure)
        print(f"{args.scenario} load {args.load} {arb}: packet-hops per cpu second")
        for c, u in pairs:
            print(f"  checked {c:,.0f}  unchecked {u:,.0f}  ratio {u / c:.3f}")
        ratio = statistics.median(u / c for c, u in pairs)
        print(f"  median ratio unchecked/checked {ratio:.3f}: the check costs "
              f"{100 * (1 - 1 / ratio):.1f} % of the loop's speed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
