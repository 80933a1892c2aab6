"""The ``aries`` routing's modes on the shipped Aries XC machine under uniform background traffic.

For each mode: accepted load, the fraction of packets sent non-minimally (inside a group too),
and the latency of the packets between groups and inside one: mean and the quartile
coefficient of dispersion (Q3-Q1)/(Q3+Q1), the figure De Sensi et al. (SC'19) use for network
noise.  ``--credit-delay`` sets ``router.credit_delay`` (phantom congestion).

    python benchmarks/aries_modes.py [--load 0.4] [--measure 2us] [--credit-delay 100ns]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np
import yaml

from federation.pipeline.load import load_experiment
from federation.pipeline.point import prepare
from federation.pipeline.summary import summarize
from federation.plugins.routings.aries import MODES


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--load", type=float, default=0.4)
    ap.add_argument("--warmup", default="0.5us")
    ap.add_argument("--measure", default="2us")
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--credit-delay", default="0ns")
    args = ap.parse_args(argv)
    from federation.models.units import parse_time

    try:
        parse_time(args.credit_delay)
    except ValueError as exc:
        ap.error(f"--credit-delay: {exc}")
    import federation.schemas.machines as m

    machine = yaml.safe_load((Path(m.__file__).parent / "aries-xc.yaml").read_text())
    machine["router"]["credit_delay"] = args.credit_delay
    print(f"aries-xc (576 routers, 2,304 nodes), uniform load {args.load}, credit delay "
          f"{args.credit_delay}")
    print(f"{'mode':>11} {'accepted':>9} {'nonmin':>7} {'inter-group lat ns':>19} {'QCD':>6} "
          f"{'intra-group lat ns':>19} {'QCD':>6}")
    for mode in MODES:
        doc = {"machine": machine, "routing": {"algorithm": "aries", "mode": mode},
               "workload": {"kind": "synthetic", "load": args.load},
               "stop": {"warmup": args.warmup, "measure": args.measure}, "seed": args.seed}
        with tempfile.TemporaryDirectory() as d:
            path = Path(d) / "e.yaml"
            path.write_text(yaml.safe_dump(doc))
            point = load_experiment(path).points[0]
            prep = prepare(point)
            raw = point.engine.run(prep.job)
            s, pk, _ = summarize(prep, raw)
        groups = prep.job.tables.router_group[prep.network.node_router]
        between = groups[pk["src"]] != groups[pk["dst"]]
        cols = []
        for sel in (pk["measured"] & between, pk["measured"] & ~between):
            lat = (pk["delivered_ps"] - pk["created_ps"])[sel] / 1e3
            q1, q3 = np.percentile(lat, [25, 75])
            cols.append(f"{lat.mean():>19.1f} {(q3 - q1) / (q3 + q1):>6.3f}")
        print(f"{mode:>11} {s.accepted_load:>9.3f} {s.nonminimal_fraction:>7.3f} "
              + " ".join(cols))
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
