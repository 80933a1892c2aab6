"""What two QoS traffic classes cost per packet-hop (issue 22's speed target: at most 15 %).

Runs ``benchmarks/engine.py`` on the CODES scenario (one point, ``--load``) for the one-class
baseline (``--vcs 4``: the same VCs as two classes of minimal's 2) and for each QoS policy at
router outputs and at both router outputs and injection (``--qos POLICY --qos-vcs 4``, classes
by source parity: one class at each NIC, as when classes come from jobs; ``--classes-by dst``:
by destination parity, both classes at every NIC), every configuration once per round, in an
order that reverses each round, each run a process of its own.  Prints per configuration the
median packet-hops per second of loop time over the rounds, the extra time per packet-hop
against the baseline's median, and the median and quartiles of the same figure taken round by
round (each configuration against the baseline run of its own round, minutes apart at most:
the paired figure cancels the drift that moves both).

Why rounds: on a shared machine the figures drift by several points over minutes, and a
configuration measured in one quiet minute against another in a busy one says nothing; the
interleaving puts every configuration in every minute.  Ten rounds of 400 us (the default,
about six minutes on two cores) separate 15 % from 17 %; fewer do not (stop 33's note).  Every
run of a configuration must give the same events and mean latency (the engine is
deterministic): a difference stops the script.

``--cachegrind`` counts instead of timing: each configuration once under valgrind's
cachegrind (``--measure`` 20us by default there, about a minute and a half each), the loop
function's instructions, L1 and L2 misses and mispredicted branches.  The last-level cache
cachegrind simulates is this host's L2 (``--l2-kb``, default read from sysfs): the loop's
whole working set fits a server's L3, so L3 misses are nil and what costs is an L1 miss
that also misses L2.  The estimate of cycles is ``Ir + 10 (L1 misses + mispredicts) + 40 L2
misses`` (cachegrind's old formula, with an L3 hit's latency for the last level).  The counts
do not depend on the host: instructions are exact, and misses move by under 1 % between runs
of the same code at 20 us (addresses and the feeder thread's timing differ; far more at 2 us,
where start-up dominates), so they separate changes of a few per cent that the wall clock of
a shared machine cannot.  The estimate is a model that charges every miss
in full, one after another; a processor overlaps misses of loads that do not depend on each
other, so fewer misses need not mean faster (``docs/architecture.md``, profiling the loop):
judge a change on the clock too.

    python benchmarks/qos_cost.py [--rounds 10] [--measure 400us] [--load 0.5]
        [--policies bandwidth_caps weighted_round_robin] [--classes-by src|dst] [--json]
        [--cachegrind]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
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


def run(args: list[str], load: float, measure: str, under: list[str] | None = None) -> dict:
    """One ``engine.py`` point in a process of its own: its JSON line.  ``under``: a command
    to run it under (valgrind), in the one process it watches (``--in-process``: no child
    does the loop)."""
    cmd = [sys.executable, str(HERE / "engine.py"), "--scenario", "codes", "--loads", str(load),
           "--measure", measure, "--repeat", "1", "--json", *args]
    if under:
        cmd = [*under, *cmd, "--in-process"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    doc = json.loads(out.strip().splitlines()[-1])
    return doc[0] if isinstance(doc, list) else doc


def warm(cfg: dict[str, list[str]], load: float) -> None:
    """Compile or load each configuration's loop before anything is timed or counted (a loop
    compiled under valgrind takes 20 minutes and more)."""
    for args in cfg.values():
        run(args, load, "2us")


def measure(cfg: dict[str, list[str]], rounds: int, load: float, span: str) -> dict[str, list]:
    """Every configuration once per round (reversed every other round): name -> runs."""
    names = list(cfg)
    warm(cfg, load)
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
    """Median packet-hops/s of each configuration, its extra time per packet-hop against the
    baseline's median, and the same figure round by round (median and quartiles)."""
    med = {name: statistics.median(d["packet_hops_per_s"] for d in r) for name, r in runs.items()}
    base = med["one class"]
    rows = []
    for name, m in med.items():
        paired = [b["packet_hops_per_s"] / d["packet_hops_per_s"] - 1
                  for b, d in zip(runs["one class"], runs[name], strict=True)]
        q = statistics.quantiles(paired, n=4, method="inclusive") if len(paired) > 1 else paired * 3
        rows.append({"config": name, "packet_hops_per_s": m, "extra": base / m - 1,
                     "paired": statistics.median(paired), "paired_q1": q[0], "paired_q3": q[2],
                     "within_target": name == "one class" or base / m - 1 <= TARGET})
    return rows


#: cachegrind's events, in the order of its output file's ``events:`` line
CG_EVENTS = ["Ir", "I1mr", "ILmr", "Dr", "D1mr", "DLmr", "Dw", "D1mw", "DLmw",
             "Bc", "Bcm", "Bi", "Bim"]


def loop_counts(out: Path) -> dict[str, int]:
    """The event counts of the compiled loop function (``federation_loop``) in a cachegrind
    output file (the sum over its lines)."""
    counts = dict.fromkeys(CG_EVENTS, 0)
    inside = False
    for line in out.read_text().splitlines():
        if line.startswith("fn="):
            inside = "federation_loop" in line
        elif inside and line[:1].isdigit():
            for k, v in zip(CG_EVENTS, line.split()[1:], strict=False):
                counts[k] += int(v)
    return counts


def l2_bytes() -> int:
    """This host's L2 size per core (sysfs), 512 KiB where it cannot be read."""
    try:
        for index in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
            if (index / "level").read_text().strip() == "2":
                size = (index / "size").read_text().strip()
                return int(size.rstrip("KMk")) * (1024 if size[-1] in "Kk" else 1 << 20)
    except (OSError, ValueError):
        pass
    return 512 * 1024


def cachegrind(cfg: dict[str, list[str]], load: float, span: str,
               l2: int) -> list[dict]:
    """Each configuration once under cachegrind: its loop's counts and their cycle estimate,
    with the extra estimate against the baseline's."""
    if shutil.which("valgrind") is None:
        raise SystemExit("--cachegrind needs valgrind on PATH (apt-get install valgrind)")
    warm(cfg, load)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, args in cfg.items():
            out = Path(tmp) / "cg.out"
            doc = run(args, load, span, ["valgrind", "--tool=cachegrind", "--cache-sim=yes",
                                         "--branch-sim=yes", f"--LL={l2},8,64",
                                         f"--cachegrind-out-file={out}"])
            n = loop_counts(out)
            l1 = n["I1mr"] + n["D1mr"] + n["D1mw"]
            ll = n["ILmr"] + n["DLmr"] + n["DLmw"]
            bm = n["Bcm"] + n["Bim"]
            rows.append({"config": name, "events": doc["events"], "Ir": n["Ir"],
                         "L1_misses": l1, "L2_misses": ll, "mispredicts": bm,
                         "cycles_est": n["Ir"] + 10 * (l1 + bm) + 40 * ll})
            if sys.stderr.isatty():
                print(f"\rcachegrind {name:40s}", end="", file=sys.stderr)
    if sys.stderr.isatty():
        print(file=sys.stderr)
    base = rows[0]
    for row in rows:
        for k in ("Ir", "cycles_est"):
            row[f"extra_{k}"] = row[k] / base[k] - 1
    return rows


def print_counts(rows: list[dict], head: str) -> None:
    """The cachegrind table."""
    print(head)
    print(f"  {'':40s} {'Ir':>9s} {'L1 miss':>9s} {'L2 miss':>8s} {'mispred':>8s} "
          f"{'est. cycles':>11s}  extra Ir / cycles")
    for r in rows:
        print(f"  {r['config']:40s} {r['Ir'] / 1e6:8.1f}M {r['L1_misses'] / 1e6:8.2f}M "
              f"{r['L2_misses'] / 1e6:7.2f}M {r['mispredicts'] / 1e6:7.2f}M "
              f"{r['cycles_est'] / 1e6:10.1f}M  {r['extra_Ir']:+6.1%} "
              f"{r['extra_cycles_est']:+6.1%}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--measure", default=None,
                    help="simulated time of each run (400us; 20us with --cachegrind)")
    ap.add_argument("--load", type=float, default=0.5)
    ap.add_argument("--policies", nargs="+", choices=POLICIES, default=POLICIES)
    ap.add_argument("--classes-by", choices=["src", "dst"], default="src",
                    help="a message's class: its source's parity (one class per NIC) or its "
                         "destination's (two at every NIC)")
    ap.add_argument("--json", action="store_true", help="print JSON lines instead of a table")
    ap.add_argument("--l2-kb", type=int, default=None,
                    help="--cachegrind: the L2 to simulate, KiB (default: this host's)")
    ap.add_argument("--cachegrind", action="store_true",
                    help="count the loop's instructions, misses and mispredicts under "
                         "cachegrind instead of timing (host-independent; module docstring)")
    a = ap.parse_args()
    cfg = configs(a.policies, a.classes_by)
    if a.cachegrind:
        span = a.measure or "20us"
        l2 = a.l2_kb * 1024 if a.l2_kb else l2_bytes()
        rows = cachegrind(cfg, a.load, span, l2)
        if a.json:
            for row in rows:
                print(json.dumps(row))
        else:
            print_counts(rows, f"CODES dragonfly, load {a.load}, {span} under cachegrind "
                               f"(L2 {l2 // 1024} KiB), classes by {a.classes_by} parity: the "
                               f"loop's counts")
        return
    a.measure = a.measure or "400us"
    rows = table(measure(cfg, a.rounds, a.load, a.measure))
    if a.json:
        for row in rows:
            print(json.dumps(row))
        return
    print(f"CODES dragonfly, load {a.load}, {a.rounds} rounds of {a.measure}, classes by "
          f"{a.classes_by} parity: extra time per packet-hop against one class (target: at "
          f"most {TARGET:.0%}; round by round: median [quartiles])")
    for row in rows:
        mark = "" if row["config"] == "one class" else (
            "  within" if row["within_target"] else "  OVER")
        print(f"  {row['config']:40s} {row['packet_hops_per_s'] / 1e6:6.3f} M/s "
              f"{row['extra']:+7.1%}  paired {row['paired']:+6.1%} "
              f"[{row['paired_q1']:+6.1%} {row['paired_q3']:+6.1%}]{mark}")


if __name__ == "__main__":
    main()
