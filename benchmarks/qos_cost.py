"""What two QoS traffic classes cost per packet-hop (issue 22's speed target: at most 15 %).

Runs ``benchmarks/engine.py`` on the CODES scenario (one point, ``--load``) for the one-class
baseline (``--vcs 4``: the same VCs as two classes of minimal's 2) and for each QoS policy at
router outputs and at both router outputs and injection (``--qos POLICY --qos-vcs 4``, classes
by source parity: one class at each NIC, as when classes come from jobs; ``--classes-by dst``:
by destination parity, both classes at every NIC), every configuration once per round, in an
order that reverses each round, each run a process of its own.  Prints per configuration the
median packet-hops per second of loop time over the rounds and the extra time per packet-hop
against the baseline's median.

Why rounds: on a shared machine the figures drift by several points over minutes, and a
configuration measured in one quiet minute against another in a busy one says nothing; the
interleaving puts every configuration in every minute.  Ten rounds of 400 us (the default,
about six minutes on two cores) separate 15 % from 17 %; fewer do not (stop 33's note).  Every
run of a configuration must give the same events and mean latency (the engine is
deterministic): a difference stops the script.

    python benchmarks/qos_cost.py [--rounds 10] [--measure 400us] [--load 0.5]
        [--policies bandwidth_caps weighted_round_robin] [--classes-by src|dst] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
POLICIES = ["strict_priority", "bandwidth_caps", "weighted_round_robin"]
AT = {"router_outputs": ["--qos-at", "router_outputs"], "both": []}  # both: the default
TARGET = 0.15  #: issue 22: at most 15 % more time per packet-hop than one class


def configs(policies: list[str], by: str = "src") -> dict[str, list[str]]:
    """Name -> ``engine.py`` arguments of every configuration, the baseline first (classes
    by the parity of each message's ``by`` node)."""
    out = {"one class": ["--vcs", "4"]}
    for policy in policies:
        for at, args in AT.items():
            out[f"{policy} at {at}"] = ["--qos", policy, "--qos-vcs", "4", "--qos-by", by, *args]
    return out


def run(args: list[str], load: float, measure: str) -> dict:
    """One ``engine.py`` point in a process of its own: its JSON line."""
    cmd = [sys.executable, str(HERE / "engine.py"), "--scenario", "codes", "--loads", str(load),
           "--measure", measure, "--repeat", "1", "--json", *args]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    doc = json.loads(out.strip().splitlines()[-1])
    return doc[0] if isinstance(doc, list) else doc


def measure(cfg: dict[str, list[str]], rounds: int, load: float, span: str) -> dict[str, list]:
    """Every configuration once per round (reversed every other round): name -> runs."""
    names = list(cfg)
    for name in names:  # compile or load each loop before anything is timed
        run(cfg[name], load, "2us")
    runs: dict[str, list] = {name: [] for name in names}
    for i in range(rounds):
        for name in names if i % 2 == 0 else names[::-1]:
            d = run(cfg[name], load, span)
            same = (d["events"], d["latency_ns"])
            if runs[name] and (runs[name][0]["events"], runs[name][0]["latency_ns"]) != same:
                raise SystemExit(f"{name}: two runs differ ({same}): not deterministic")
            runs[name].append(d)
            if sys.stderr.isatty():
                print(f"\rround {i + 1}/{rounds} {name:40s}", end="", file=sys.stderr)
    if sys.stderr.isatty():
        print(file=sys.stderr)
    return runs


def table(runs: dict[str, list]) -> list[dict]:
    """Median packet-hops/s of each configuration and its extra time per packet-hop."""
    med = {name: statistics.median(d["packet_hops_per_s"] for d in r) for name, r in runs.items()}
    base = med["one class"]
    return [{"config": name, "packet_hops_per_s": m, "extra": base / m - 1,
             "within_target": name == "one class" or base / m - 1 <= TARGET}
            for name, m in med.items()]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--measure", default="400us", help="simulated time of each run")
    ap.add_argument("--load", type=float, default=0.5)
    ap.add_argument("--policies", nargs="+", choices=POLICIES, default=POLICIES)
    ap.add_argument("--classes-by", choices=["src", "dst"], default="src",
                    help="a message's class: its source's parity (one class per NIC) or its "
                         "destination's (two at every NIC)")
    ap.add_argument("--json", action="store_true", help="print JSON lines instead of a table")
    a = ap.parse_args()
    rows = table(measure(configs(a.policies, a.classes_by), a.rounds, a.load, a.measure))
    if a.json:
        for row in rows:
            print(json.dumps(row))
        return
    print(f"CODES dragonfly, load {a.load}, {a.rounds} rounds of {a.measure}, classes by "
          f"{a.classes_by} parity: extra time per packet-hop against one class (target: at "
          f"most {TARGET:.0%})")
    for row in rows:
        mark = "" if row["config"] == "one class" else (
            "  within" if row["within_target"] else "  OVER")
        print(f"  {row['config']:40s} {row['packet_hops_per_s'] / 1e6:6.3f} M/s "
              f"{row['extra']:+7.1%}{mark}")


if __name__ == "__main__":
    main()
