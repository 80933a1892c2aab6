"""What two QoS traffic classes cost per packet-hop (issue 22's speed target: at most 15 %).

Times the CODES scenario of ``benchmarks/engine.py`` (one point, ``--load``) for the one-class
baseline (4 VCs: the same VCs as two classes of minimal's 2) and for each QoS policy at router
outputs and at both router outputs and injection (4 VCs, classes by source parity: one class at
each NIC, as when classes come from jobs; ``--classes-by dst``: by destination parity, both
classes at every NIC).  Every configuration is prepared once in this process (its loop loaded),
then run ``--rounds`` times, each run right after a baseline run, the order of the
configurations reversed every other round, and a baseline run last.  A run's figure is its
loop time per packet-hop against the mean of the two baseline runs beside it; the script
prints per configuration the median of those figures, their quartiles, a 95 % confidence
interval of the median (distribution-free), and the ratio of the medians of all runs.  A
verdict is "within" the target when the interval's top is at most 15 %, "OVER" when its
bottom is above, else "undecided".  The baseline prepared a second time and timed like a
configuration ("one class, prepared again") shows the method's own error: stop 37's runs put
it at -0.9 % to -2.7 %, once with an interval that excludes zero (where its arrays land).

Why so: a shared host's speed moves in phases of seconds, by up to 45 % (stop 37 measured
1.43-2.08 M packet-hops/s in twenty consecutive runs of one prepared point, processor time
equal to wall time), so runs minutes apart, or in processes of their own, compare phases
rather than code.  Runs of 20 us (under half a second each) side by side in one process
share a phase; sixty of them give the median an interval of about three points either side
(between two runs of the script a configuration still moved by up to seven points on stop
37's host: its slow phases cost the QoS loops more).  Every run of a
configuration must give the same events (the engine is deterministic): a difference stops
the script.

``--cachegrind`` counts instead of timing: each configuration once under valgrind's
cachegrind (about a minute and a half each at 20 us, in a process of its own), the loop
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

    python benchmarks/qos_cost.py [--rounds 60] [--measure 20us] [--load 0.5]
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

from ab import median_ci, prepare_point  # beside this script

HERE = Path(__file__).resolve().parent
POLICIES = ["strict_priority", "bandwidth_caps", "weighted_round_robin"]
AT = {"router_outputs": "router_outputs", "both": None}  # None: the default, both
TARGET = 0.15  #: issue 22: at most 15 % more time per packet-hop than one class
BASE = "one class"
AGAIN = "one class, prepared again"  #: the baseline against itself: the method's own noise


def configs(policies: list[str]) -> dict[str, dict]:
    """Name -> configuration (``qos``: the policy or None, ``at``: ``router_outputs`` or None
    for the policy's default, both), the baseline first."""
    out: dict[str, dict] = {BASE: {"qos": None, "at": None}}
    for policy in policies:
        for at in AT:
            out[f"{policy} at {at}"] = {"qos": policy, "at": AT[at]}
    return out


def cli(c: dict, by: str) -> list[str]:
    """``engine.py``'s arguments for configuration ``c`` (classes by the parity of ``by``)."""
    if c["qos"] is None:
        return ["--vcs", "4"]
    return ["--qos", c["qos"], "--qos-vcs", "4", "--qos-by", by,
            *(["--qos-at", c["at"]] if c["at"] else [])]


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


def warm(cfg: dict[str, dict], load: float, by: str) -> None:
    """Compile or load each configuration's loop before anything is counted (a loop compiled
    under valgrind takes 20 minutes and more)."""
    for c in cfg.values():
        run(cli(c, by), load, "2us")


def prepared(cfg: dict[str, dict], load: float, span: str, by: str) -> dict[str, tuple]:
    """Each configuration's point (``engine.py``'s document) prepared in this process and run
    once (its loop compiled or loaded): name -> (engine, job)."""
    import engine as bench  # beside this script (benchmarks/ is not a package)

    plugins = bench.qos_plugins()
    return {name: prepare_point(bench, {"load": load, "measure": span, "vcs": 4, "by": by, **c},
                                plugins)
            for name, c in cfg.items()}


def measure(cfg: dict[str, dict], rounds: int, load: float, span: str,
            by: str) -> dict[str, list]:
    """Every configuration once per round, each run right after a baseline run, and a
    baseline run last (the order reversed every other round): name -> [(loop seconds per
    packet-hop, events, the index of the baseline run before it)] of each run."""
    prep = prepared(cfg, load, span, by)
    names = [n for n in cfg if n != BASE]
    runs: dict[str, list] = {name: [] for name in cfg}
    seq = [m for i in range(rounds) for n in (names if i % 2 == 0 else names[::-1])
           for m in (BASE, n)] + [BASE]
    for k, name in enumerate(seq):
        eng, job = prep[name]
        raw = eng.run(job)
        if runs[name] and runs[name][0][1] != raw.events:
            raise SystemExit(f"{name}: two runs differ ({raw.events} events, "
                             f"{runs[name][0][1]} before): not deterministic")
        runs[name].append((raw.wall_s / raw.packet_hops, raw.events, len(runs[BASE]) - 1))
        if sys.stderr.isatty():
            print(f"\rrun {k + 1}/{len(seq)} {name:40s}", end="", file=sys.stderr)
    if sys.stderr.isatty():
        print(file=sys.stderr)
    return runs


def table(runs: dict[str, list]) -> list[dict]:
    """Each configuration's extra loop time per packet-hop against the baseline: run by run
    against the mean of the two baseline runs beside it (median, quartiles, 95 % confidence
    interval of the median), and the ratio of the medians of all runs."""
    base = [t for t, _, _ in runs[BASE]]
    base_mid = statistics.median(base)
    rows = []
    for name, r in runs.items():
        paired = [0.0] * len(r) if name == BASE else [
            t / ((base[b] + base[b + 1]) / 2) - 1 for t, _, b in r]
        q = statistics.quantiles(paired, n=4, method="inclusive") if len(paired) > 1 else paired * 3
        lo, hi = median_ci(paired)
        med = statistics.median(paired)
        mid = statistics.median(t for t, _, _ in r)
        rows.append({"config": name, "packet_hops_per_s": 1 / mid,
                     "of_medians": mid / base_mid - 1,
                     "extra": med, "q1": q[0], "q3": q[2], "ci_low": lo, "ci_high": hi,
                     "runs": len(r),
                     "verdict": "" if name == BASE else "(control)" if name == AGAIN else (
                         "within" if hi <= TARGET else "OVER" if lo > TARGET else "undecided")})
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


def cachegrind(cfg: dict[str, dict], load: float, span: str, l2: int,
               by: str) -> list[dict]:
    """Each configuration once under cachegrind: its loop's counts and their cycle estimate,
    with the extra estimate against the baseline's."""
    if shutil.which("valgrind") is None:
        raise SystemExit("--cachegrind needs valgrind on PATH (apt-get install valgrind)")
    warm(cfg, load, by)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, c in cfg.items():
            out = Path(tmp) / "cg.out"
            doc = run(cli(c, by), load, span, ["valgrind", "--tool=cachegrind", "--cache-sim=yes",
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


def print_times(rows: list[dict], head: str) -> None:
    """The timed table."""
    print(head)
    print(f"  {'':40s} {'M/s':>6s} {'extra':>7s} {'quartiles':>15s} {'95 % CI':>15s} "
          f"{'of medians':>10s}")
    for r in rows:
        print(f"  {r['config']:40s} {r['packet_hops_per_s'] / 1e6:6.3f} {r['extra']:+7.1%} "
              f"{r['q1']:+7.1%} {r['q3']:+7.1%} {r['ci_low']:+7.1%} {r['ci_high']:+7.1%} "
              f"{r['of_medians']:+10.1%}  {r['verdict']}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=60)
    ap.add_argument("--measure", default="20us", help="simulated time of each run")
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
    if a.rounds < 1:
        ap.error("--rounds must be at least 1")
    cfg = configs(a.policies)
    if a.cachegrind:
        l2 = a.l2_kb * 1024 if a.l2_kb else l2_bytes()
        rows = cachegrind(cfg, a.load, a.measure, l2, a.classes_by)
        head = (f"CODES dragonfly, load {a.load}, {a.measure} under cachegrind (L2 "
                f"{l2 // 1024} KiB), classes by {a.classes_by} parity: the loop's counts")
        show = print_counts
    else:
        cfg = {BASE: cfg.pop(BASE), AGAIN: {"qos": None, "at": None}, **cfg}
        rows = table(measure(cfg, a.rounds, a.load, a.measure, a.classes_by))
        head = (f"CODES dragonfly, load {a.load}, {a.rounds} rounds of {a.measure} in one "
                f"process, classes by {a.classes_by} parity: extra loop time per packet-hop "
                f"against the one-class runs beside each run (target: at most {TARGET:.0%})")
        show = print_times
    if a.json:
        for row in rows:
            print(json.dumps(row))
    else:
        show(rows, head)


if __name__ == "__main__":
    main()
