"""Benchmark of the native engine on several scenarios, so that a regression in any part of the
loop (event counts, memory, speed) shows.

Scenarios (``--scenario``, default: all, each in its own process so that its peak RSS is its own):

* ``codes``: the CODES validation dragonfly, p=4, a=8, h=4 (33 groups, 264 routers, 1,056
  nodes), 512 B single-packet messages, latencies 1 / 10 / 100 ns for terminal / local / global
  links, CODES default bandwidths (5.25 GiB/s terminal and local, 4.7 GiB/s global), 50 ns router
  delay, 3 VCs.
* ``booksim``: BookSim2's own dragonfly scenario, the same p=4, a=8, h=4 with single 64 B
  packets at 64 B/ns, 1 / 10 / 100 ns latencies, 1 ns router delay, 16 KiB per VC, 2 VCs,
  uniform Bernoulli traffic including the source (BookSim's ``uniform``).  BookSim2 itself needs
  67-81 MB of memory on it.
* ``megafly``: the shipped 8,448-node megafly (``megafly-qos-megafly``), 4 KiB packets.
* ``torus``: the shipped 8x8x8 Blue Gene/P torus (dimension-order routing), at loads below its
  saturation (uniform traffic saturates a k=8 torus at 1/6 of this NIC's bandwidth).

For each point it prints accepted throughput, mean latency, wall seconds of the engine loop (JIT
compilation excluded: a small warm-up run compiles first; each point runs ``--repeat`` times,
identically, and the fastest run is reported, as ``timeit`` does), the seconds spent between
slices of the loop generating and loading chunks of packets and reducing their delivery records
(``feed s``), events per packet, events per second and packet-hops per wall second of the loop,
where a packet-hop is one router-to-router link traversal (terminal links are not counted), the
scenario process's peak resident memory, and what the process held after the warm-up (Python,
numba, the compiled loop: ``base MB``).  The points keep no per-packet or per-message table
(``outputs.packets: false``), so their memory is what is in flight, not the run.  Target at
load 0.5 on ``codes``: >= 1,000,000 packet-hops/s on one core; below saturation at most about 15
events per packet.

    python benchmarks/engine.py [--scenario codes booksim] [--loads 0.1 0.5] [--routing ugal]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

from federation.pipeline.load import load_experiment
from federation.pipeline.point import prepare
from federation.pipeline.summary import summarize

CODES = {
    "name": "codes-validation-dragonfly",
    "topology": {"kind": "dragonfly", "p": 4, "a": 8, "h": 4},
    "links": {
        "terminal": {"bandwidth": "5.25GiB/s", "latency": "1ns"},
        "local": {"bandwidth": "5.25GiB/s", "latency": "10ns"},
        "global": {"bandwidth": "4.7GiB/s", "latency": "100ns"},
    },
    "router": {"delay": "50ns", "vcs": 3},
    "packet_size": "512B",
}
BOOKSIM = {
    "name": "booksim-dragonfly",
    "topology": {"kind": "dragonfly", "p": 4, "a": 8, "h": 4},
    "links": {
        "terminal": {"bandwidth": "64GB/s", "latency": "1ns", "buffer": "16KiB"},
        "local": {"bandwidth": "64GB/s", "latency": "10ns", "buffer": "16KiB"},
        "global": {"bandwidth": "64GB/s", "latency": "100ns", "buffer": "16KiB"},
    },
    "router": {"delay": "1ns", "vcs": 2},
    "packet_size": "64B",
}

#: name -> (machine, extra workload keys, default loads, warm-up, measure, description)
SCENARIOS: dict[str, tuple[object, dict, list[float], str, str, str]] = {
    "codes": (CODES, {}, [0.1, 0.3, 0.5, 0.7, 0.9], "5us", "40us",
              "CODES dragonfly p=4 a=8 h=4 (264 routers, 1,056 nodes), 512 B packets"),
    "booksim": (BOOKSIM, {"include_self": True}, [0.3, 0.5, 0.7], "1us", "2.5us",
                "BookSim2 dragonfly p=4 a=8 h=4, 64 B packets at 64 B/ns"),
    "megafly": ("megafly-qos-megafly", {}, [0.3, 0.5], "2us", "10us",
                "megafly 33 groups (1,056 routers, 8,448 nodes), 4 KiB packets"),
    "torus": ("bluegene-p-8x8x8", {}, [0.05, 0.1, 0.15], "5us", "40us",
              "Blue Gene/P torus 8x8x8 (512 routers and nodes), 512 B packets"),
}


def shipped_machine(name: str) -> str:
    import federation.schemas.machines as m

    return str(Path(m.__file__).parent / f"{name}.yaml")


def run_point(scenario: str, load: float, routing: str, warmup: str, measure: str, seed: int,
              repeat: int = 1, router: dict | None = None) -> dict:
    machine, extra, _, _, _, _ = SCENARIOS[scenario]
    if isinstance(machine, str):
        machine = yaml.safe_load(Path(shipped_machine(machine)).read_text())
    machine = {**machine, "router": {**machine.get("router", {}), **(router or {})}}
    doc = {
        "machine": machine,
        "routing": {"algorithm": routing},
        "workload": {"kind": "synthetic", "pattern": "uniform", "load": load, **extra},
        "stop": {"warmup": warmup, "measure": measure},
        "seed": seed,
        # only sums and percentiles: per-packet and per-message tables grow with the run
        "outputs": {"packets": False, "messages": False},
    }
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "bench.yaml"
        path.write_text(yaml.safe_dump(doc))
        point = load_experiment(path).points[0]
        prep = prepare(point)
        walls = []
        for _ in range(repeat):
            raw = point.engine.run(prep.job)
            walls.append(raw.wall_s)
        summary, packets, _ = summarize(prep, raw)
    raw.wall_s = min(walls)  # the same run each time: the fastest is the least disturbed
    n_packets = int(summary.packets_generated)
    return {
        "scenario": scenario,
        "load": load,
        "offered": summary.offered_load,
        "accepted": summary.accepted_load,
        "latency_ns": summary.latency_ns.mean,
        "packets": n_packets,
        "wall_s": raw.wall_s,
        "feed_s": getattr(raw, "feed_s", 0.0),
        "events": raw.events,
        "events_per_packet": raw.events / max(n_packets, 1),
        "events_per_s": raw.events / raw.wall_s,
        "packet_hops_per_s": raw.packet_hops / raw.wall_s,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "peak_rows": getattr(raw, "peak_rows", 0),
    }


def run_scenario(args: argparse.Namespace, scenario: str) -> None:
    """One scenario in this process: JSON lines on stdout."""
    _, _, loads, warmup, measure, _ = SCENARIOS[scenario]
    run_point(scenario, loads[0], args.routing, "0us", "2us", args.seed)  # JIT warm-up
    # what the process holds before any point of this scenario: Python, numba and the
    # compiled loop (the peak RSS below minus this is what the points added)
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    for load in args.loads or loads:
        router = {"injection_vc": args.injection_vc} if args.injection_vc else None
        r = run_point(scenario, load, args.routing, args.warmup or warmup,
                      args.measure or measure, args.seed, args.repeat, router)
        r["baseline_rss_mb"] = base
        print(json.dumps(r), flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", nargs="+", choices=list(SCENARIOS), default=list(SCENARIOS))
    ap.add_argument("--loads", type=float, nargs="+", help="default: per scenario")
    ap.add_argument("--routing", default="minimal")
    ap.add_argument("--warmup", help="default: per scenario")
    ap.add_argument("--measure", help="default: per scenario")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3,
                    help="run each point N times and report the fastest (noisy machines)")
    ap.add_argument("--injection-vc", choices=["spread", "zero", "random"],
                    help="router.injection_vc for every scenario (default: the machine's)")
    ap.add_argument("--json", action="store_true", help="print JSON lines instead of a table")
    ap.add_argument("--in-process", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.in_process:
        for s in args.scenario:
            run_scenario(args, s)
        return 0
    head = (f"{'load':>5} {'offered':>8} {'accepted':>9} {'lat ns':>9} {'packets':>9} "
            f"{'wall s':>7} {'feed s':>7} {'ev/pkt':>7} {'events/s':>11} {'pkt-hops/s':>11} "
            f"{'RSS MB':>7} {'base MB':>8}")
    for s in args.scenario:
        if not args.json:
            print(f"\n{s}: {SCENARIOS[s][5]}, {args.routing} routing, uniform traffic")
            print(head)
        child = [sys.executable, __file__, "--in-process", "--scenario", s,
                 "--routing", args.routing, "--seed", str(args.seed),
                 "--repeat", str(args.repeat)]
        for opt in ("warmup", "measure", "injection_vc"):
            if getattr(args, opt):
                child += [f"--{opt.replace('_', '-')}", getattr(args, opt)]
        if args.loads:
            child += ["--loads", *map(str, args.loads)]
        proc = subprocess.Popen(child, stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        for line in proc.stdout:
            r = json.loads(line)
            if args.json:
                print(line, end="")
            else:
                print(f"{r['load']:>5.2f} {r['offered']:>8.3f} {r['accepted']:>9.3f} "
                      f"{r['latency_ns']:>9.1f} {r['packets']:>9d} {r['wall_s']:>7.2f} "
                      f"{r['events_per_packet']:>7.1f} {r['events_per_s']:>11,.0f} "
                      f"{r['packet_hops_per_s']:>11,.0f} {r['peak_rss_mb']:>7.0f}")
            sys.stdout.flush()
        if proc.wait() != 0:
            return proc.returncode
    return 0


if __name__ == "__main__":
    sys.exit(main())
