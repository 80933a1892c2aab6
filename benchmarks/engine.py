"""Benchmark of the native engine on several scenarios, so that a regression in any part of the
loop (event counts, memory, speed) shows; with ``--booksim PATH`` (and ``--sst``) beside BookSim2
(SST merlin) on the same scenario, process against process.

Scenarios (``--scenario``, default: all but ``booksim2``; each in its own process so that its
peak RSS is its own):

* ``codes``: the CODES validation dragonfly, p=4, a=8, h=4 (33 groups, 264 routers, 1,056
  nodes), 512 B single-packet messages, latencies 1 / 10 / 100 ns for terminal / local / global
  links, CODES default bandwidths (5.25 GiB/s terminal and local, 4.7 GiB/s global), 50 ns router
  delay, 3 VCs.
* ``booksim``: BookSim2's own dragonfly scenario (``dragonflynew``, k = 4), the same p=4, a=8,
  h=4 with single 64 B packets at 64 B/ns, 1 / 10 / 100 ns latencies, 1 ns router delay, 16 KiB
  per VC, 2 VCs (3 with UGAL), uniform Bernoulli traffic including the source (BookSim's
  ``uniform``); warm-up 1 us, 3 us measured (BookSim: one warm-up period of 1,000 cycles, three
  measured).  ``booksim2``: the same at k = 2 (p=2, a=4, h=2: 72 nodes).  The mapping and
  BookSim's configuration: :mod:`benchmarks.booksim`.
* ``megafly``: the shipped 8,448-node megafly (``megafly-qos-megafly``), 4 KiB packets.
* ``torus``: the shipped 8x8x8 Blue Gene/P torus (dimension-order routing), at loads below its
  saturation (uniform traffic saturates a k=8 torus at 1/6 of this NIC's bandwidth).

For each point it prints accepted throughput, mean latency, wall seconds of the engine loop (the
compiled loop is loaded or compiled first, untimed; each point runs ``--repeat`` times,
identically, and the fastest run is reported, as ``timeit`` does), the seconds spent between
slices of the loop generating and loading chunks of packets and reducing their delivery records
(``feed s``), events per packet, events per second and packet-hops per wall second of the loop,
where a packet-hop is one router-to-router link traversal (terminal links are not counted; the
JSON lines add the same per second of the loop's processor time, ``packet_hops_per_cpu_s``,
which a machine shared with other jobs disturbs less than wall time), the
scenario process's peak resident memory, and what the process held before the points (Python,
NumPy, the loaded loop: ``base MB``).  The points write no table (``outputs.packets``,
``messages``, ``ports`` and ``nics`` off: BookSim prints sums and means only), so their memory
is what is in flight, not the run.  Targets (issue
20): at load 0.5 on ``codes`` >= 5,000,000 packet-hops/s of loop time; on ``booksim`` >= 10x
BookSim2 end to end, on ``booksim2`` >= 3x, peak RSS <= 1.5x BookSim2's.

``--booksim PATH`` adds, per point of the ``booksim`` scenarios, one BookSim2 run of the same
cycles and one ``federation run`` process of the same experiment (after an untimed one that
loads or compiles its loop), and prints both processes' wall time, processor time (user plus
system) and peak resident memory and their ratios.  ``--sst`` does the same with SST merlin
(``engine: sst``) where ``sst`` is on PATH.  ``--sweep`` adds every load in one ``federation
run`` (a sweep over ``workload.load``) against the sum of BookSim's runs of the same loads:
on the 72-node ``booksim2`` a single point is mostly Python's start-up, and a latency-load curve
is what a user runs.

``--qos strict_priority|bandwidth_caps|weighted_round_robin`` runs every point with two
traffic classes, by source-node parity (even nodes: class 0), each in its own VCs
(``router.vcs`` = ``--qos-vcs``, default 4: twice minimal's 2 on a dragonfly): caps 0.7 / 0.3
over 1 us static windows, or weights 3 / 1.  Issue 22's targets: without QoS as fast as before
(>= 0.97 of main's packet-hops/s), two classes at most 15 % more time per packet-hop.

    python benchmarks/engine.py [--scenario codes booksim] [--loads 0.1 0.5] [--routing ugal]
        [--booksim /path/to/booksim [--sweep]] [--sst] [--router-model booksim_iq]
        [--credit-delay 20ns] [--qos bandwidth_caps]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import booksim as bs  # noqa: E402

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


def booksim_machine(p: int) -> dict[str, Any]:
    return {
        "name": f"booksim-dragonfly-p{p}",
        "topology": {"kind": "dragonfly", "p": p, "a": 2 * p, "h": p},
        "links": {c: {"bandwidth": "64GB/s", "latency": f"{lat}ns", "buffer": "16KiB"}
                  for c, lat in (("terminal", 1), ("local", 10), ("global", 100))},
        "router": {"delay": "1ns", "vcs": 2},
        "packet_size": "64B",
    }


#: name -> (machine, extra workload keys, default loads, warm-up, measure, description)
SCENARIOS: dict[str, tuple[object, dict, list[float], str, str, str]] = {
    "codes": (CODES, {}, [0.1, 0.3, 0.5, 0.7, 0.9], "5us", "40us",
              "CODES dragonfly p=4 a=8 h=4 (264 routers, 1,056 nodes), 512 B packets"),
    "booksim": (booksim_machine(4), {"include_self": True}, [0.3, 0.5, 0.7], "1us", "3us",
                "BookSim2 dragonfly p=4 a=8 h=4, 64 B packets at 64 B/ns"),
    "booksim2": (booksim_machine(2), {"include_self": True}, [0.3, 0.5, 0.7], "1us", "3us",
                 "BookSim2 dragonfly p=2 a=4 h=2 (72 nodes), 64 B packets at 64 B/ns"),
    "megafly": ("megafly-qos-megafly", {}, [0.3, 0.5], "2us", "10us",
                "megafly 33 groups (1,056 routers, 8,448 nodes), 4 KiB packets"),
    "torus": ("bluegene-p-8x8x8", {}, [0.05, 0.1, 0.15], "5us", "40us",
              "Blue Gene/P torus 8x8x8 (512 routers and nodes), 512 B packets"),
}
BOOKSIM_P = {"booksim": 4, "booksim2": 2}


def shipped_machine(name: str) -> str:
    import federation.schemas.machines as m

    return str(Path(m.__file__).parent / f"{name}.yaml")


QOS = {
    "strict_priority": {"classes": [{"name": "even"}, {"name": "odd"}]},
    "bandwidth_caps": {"classes": [{"name": "even", "cap": 0.7}, {"name": "odd", "cap": 0.3}],
                       "window": "1us"},
    "weighted_round_robin": {"classes": [{"name": "even", "weight": 3},
                                         {"name": "odd", "weight": 1}]},
}


#: ``--qos-at``: where the QoS policy applies (default: the policy's own default)
QOS_AT: list[str] = []
#: router.vcs of every point without QoS (``--vcs``; 0: the scenario's)
VCS = [0]
#: the native engine's own options (``--no-nic-counters``, ``--no-check-arbiter``)
ENGINE: dict[str, Any] = {}
#: ``--qos-by``: the message field whose parity is the class
QOS_BY = ["src"]


def qos_plugins() -> Any:
    """The plugins with ``bench_<policy>``: each QoS policy, classes by source parity (by
    destination parity with ``--qos-by dst``: then every NIC sends both classes)."""
    import types

    import numpy as np

    from federation import hookimpl
    from federation.plugin.registry import FederationPlugins
    from federation.plugins.qos.bandwidth_caps import BandwidthCaps
    from federation.plugins.qos.strict_priority import StrictPriorityQos
    from federation.plugins.qos.weighted_round_robin import WeightedRoundRobin

    def parity(self: Any, messages: Any) -> Any:
        return ((messages.dst if QOS_BY[0] == "dst" else messages.src) % 2).astype(np.int16)

    classes = [type(f"Bench{base.__name__}", (base,), {"name": f"bench_{base.name}",
                                                        "traffic_class": parity})
               for base in (BandwidthCaps, StrictPriorityQos, WeightedRoundRobin)]

    @hookimpl
    def federation_register_qos(register: Any) -> None:
        for cls in classes:
            register(cls)

    module = types.ModuleType("bench_qos")
    module.federation_register_qos = federation_register_qos  # type: ignore[attr-defined]
    pm = FederationPlugins()
    pm.add(module, "bench_qos", "benchmarks")
    return pm


def experiment(scenario: str, load: float, routing: str, warmup: str, measure: str, seed: int,
               router: dict | None = None, qos: str | None = None,
               qos_vcs: int = 4) -> dict[str, Any]:
    """The experiment document of one point (``routing``: ``minimal``, ``ugal``, ...; on the
    BookSim scenarios ``ugal`` is BookSim's: a random node, decided at injection, 3 VCs; with
    the booksim_iq router ``minimal`` takes BookSim's VC plan too)."""
    machine, extra, _, _, _, _ = SCENARIOS[scenario]
    if isinstance(machine, str):
        machine = yaml.safe_load(Path(shipped_machine(machine)).read_text())
    machine = json.loads(json.dumps(machine))
    algo: dict[str, Any] = {"algorithm": routing}
    if scenario in BOOKSIM_P and routing == "ugal":
        algo.update({"intermediate": "node", "decide": "injection", "bias": "1920B"})
        machine["router"]["vcs"] = 3
    machine["router"] = {**machine.get("router", {}), **(router or {})}
    if VCS[0] and not qos:
        machine["router"]["vcs"] = VCS[0]
    if machine["router"].get("model") == "booksim_iq":
        machine["router"].pop("delay", None)
        if routing == "minimal":
            algo["vc_step"] = "on"  # BookSim's VC plan: the global hop on VC 1
    if qos:
        machine["qos"] = {"kind": f"bench_{qos}", **QOS[qos]}
        if QOS_AT:
            machine["qos"]["at"] = QOS_AT
        machine["router"]["vcs"] = qos_vcs
    return {
        "machine": machine,
        "routing": algo,
        "workload": {"kind": "synthetic", "pattern": "uniform", "load": load, **extra},
        "stop": {"warmup": warmup, "measure": measure},
        "seed": seed,
        # only sums and percentiles, as BookSim reports: per-packet and per-message tables grow
        # with the run, and a table's writer (pyarrow) adds 30-37 MB to the process
        "outputs": {"packets": False, "messages": False, "ports": False, "nics": False},
        **({"engine": {"kind": "native", **ENGINE}} if ENGINE else {}),
    }


def proved(doc: dict) -> bool:
    """Whether the point's routing is run with the deadlock proof: BookSim's UGAL (``ugal``
    with ``intermediate: node``) has a cycle in its channel dependency graph, which the proof
    refuses (see plugins/routings/ugal.py), so it is run as BookSim runs it, unproved."""
    routing = doc.get("routing")
    return not (isinstance(routing, dict) and routing.get("intermediate") == "node")


def run_point(scenario: str, load: float, routing: str, warmup: str, measure: str, seed: int,
              repeat: int = 1, router: dict | None = None, qos: str | None = None,
              qos_vcs: int = 4) -> dict:
    from federation.pipeline.bounds import default_max_memory
    from federation.pipeline.load import load_experiment
    from federation.pipeline.point import BuildCache, prepare
    from federation.pipeline.summary import summarize

    doc = experiment(scenario, load, routing, warmup, measure, seed, router, qos, qos_vcs)
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "bench.yaml"
        path.write_text(yaml.safe_dump(doc))
        point = load_experiment(path, plugins=qos_plugins() if qos else None).points[0]
        prep = prepare(point, BuildCache(default_max_memory(), proved(doc)))
        walls, cpus = [], []
        for _ in range(repeat):
            raw = point.engine.run(prep.job)
            walls.append(raw.wall_s)
            cpus.append(getattr(raw, "cpu_s", 0.0))
        summary, packets, _ = summarize(prep, raw)
    raw.wall_s = min(walls)  # the same run each time: the fastest is the least disturbed
    cpu_s = min(cpus)  # the loop's processor time: what a loaded machine disturbs least
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
        "cpu_s": cpu_s,
        "packet_hops_per_cpu_s": raw.packet_hops / cpu_s if cpu_s > 0 else None,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "peak_rows": getattr(raw, "peak_rows", 0),
    }


def run_scenario(args: argparse.Namespace, scenario: str) -> None:
    """One scenario in this process: JSON lines on stdout."""
    _, _, loads, warmup, measure, _ = SCENARIOS[scenario]
    router = _router(args)
    run_point(scenario, loads[0], args.routing, "0us", "0.1us", args.seed,
              router=router, qos=args.qos, qos_vcs=args.qos_vcs)  # loads (or compiles) the loop
    # what the process holds before any point of this scenario: Python, NumPy and the loaded
    # loop (the peak RSS below minus this is what the points added)
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    for load in args.loads or loads:
        r = run_point(scenario, load, args.routing, args.warmup or warmup,
                      args.measure or measure, args.seed, args.repeat, router, args.qos,
                      args.qos_vcs)
        r["baseline_rss_mb"] = base
        print(json.dumps(r), flush=True)


def _router(args: argparse.Namespace) -> dict[str, Any] | None:
    router: dict[str, Any] = {}
    if args.injection_vc:
        router["injection_vc"] = args.injection_vc
    if args.router_model:
        router["model"] = args.router_model
        if args.router_model == "booksim_iq":
            router.setdefault("credit_delay", "2ns")
    if args.credit_delay:
        router["credit_delay"] = args.credit_delay
    return router or None


def _ns(text: str) -> int:
    """Whole nanoseconds (cycles) of a time such as ``1us``."""
    from federation.models.units import parse_time

    return int(round(parse_time(text) * 1e9))


def federation_run(doc: dict[str, Any], d: str, warm: bool = True) -> bs.Child:
    """One timed ``federation run`` process of ``doc``, written into the folder ``d``; with
    ``warm``, after an untimed one that loads or compiles its loop and writes the bytecode.
    Both run as a user's Python runs them: with its modules' bytecode cached (a shell that
    sets PYTHONDONTWRITEBYTECODE, as this project's sandboxes do, has every process compile
    some 180 modules again: 0.6 s of a 1.8 s booksim2 point on stop 38's host)."""
    path = Path(d) / "experiment.yaml"
    path.write_text(yaml.safe_dump(doc))
    argv = [str(Path(sys.executable).parent / "federation"), "run", str(path), "--out",
            f"{d}/out", "--overwrite", "--json",
            *([] if proved(doc) else ["--no-deadlock-check"])]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if warm:
        subprocess.run(argv, capture_output=True, check=True, env=env)
    return bs.timed_child(argv, env=env)


def external(args: argparse.Namespace, scenario: str, load: float) -> list[dict[str, Any]]:
    """``federation run``, BookSim2 and SST merlin on one point, each a process of its own."""
    _, _, _, warmup, measure, _ = SCENARIOS[scenario]
    warmup, measure = args.warmup or warmup, args.measure or measure
    doc = experiment(scenario, load, args.routing, warmup, measure, args.seed, _router(args))
    out: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as d:
        c = federation_run(doc, d)
        lat = None
        if c.code == 0:
            lat = json.loads(c.out)["points"][0]["summary"]["latency_ns"]["mean"]
        out.append({"who": "native", "wall_s": c.wall_s, "cpu_s": c.cpu_s, "rss_mb": c.rss_mb,
                    "latency": lat})
        if args.sst and shutil.which("sst"):
            c = federation_run({**doc, "engine": {"kind": "sst"}}, d, warm=False)
            lat = (json.loads(c.out)["points"][0]["summary"]["latency_ns"]["mean"]
                   if c.code == 0 else None)
            out.append({"who": "sst", "wall_s": c.wall_s, "cpu_s": c.cpu_s, "rss_mb": c.rss_mb,
                        "latency": lat})
    if args.booksim and scenario in BOOKSIM_P:
        w, m = _ns(warmup), _ns(measure)
        period = m // 3
        cfg = bs.config(BOOKSIM_P[scenario], "ugal" if args.routing == "ugal" else "min",
                        "uniform", load, w - w % period or period, period)
        r = bs.run(args.booksim, cfg)
        out.append({"who": "booksim", "wall_s": r.wall_s, "cpu_s": r.cpu_s, "rss_mb": r.max_rss_mb,
                    "latency": r.latency, "cycles": r.cycles})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", nargs="+", choices=list(SCENARIOS),
                    default=[s for s in SCENARIOS if s != "booksim2"])
    ap.add_argument("--loads", type=float, nargs="+", help="default: per scenario")
    ap.add_argument("--routing", default="minimal")
    ap.add_argument("--warmup", help="default: per scenario")
    ap.add_argument("--measure", help="default: per scenario")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3,
                    help="run each point N times and report the fastest (noisy machines)")
    ap.add_argument("--injection-vc", choices=["spread", "zero", "random"],
                    help="router.injection_vc for every scenario (default: the machine's)")
    ap.add_argument("--router-model", choices=["default", "booksim_iq"],
                    help="router.model for every scenario (default: the machine's)")
    ap.add_argument("--credit-delay", metavar="TIME",
                    help="router.credit_delay for every scenario, e.g. 20ns (default: the "
                    "machine's; the default router's is 0)")
    ap.add_argument("--booksim", metavar="PATH",
                    help="a BookSim2 binary: run it on the booksim scenarios beside "
                    "`federation run`, process against process")
    ap.add_argument("--sweep", action="store_true",
                    help="with --booksim: also every load in one `federation run` (a sweep), "
                    "against the sum of BookSim's runs (a single p=2 point measures Python's "
                    "start-up; a latency-load curve is what a user runs)")
    ap.add_argument("--sst", action="store_true",
                    help="also run SST merlin (engine: sst) where `sst` is on PATH")
    ap.add_argument("--qos", choices=list(QOS),
                    help="two traffic classes by source parity under this policy")
    ap.add_argument("--qos-at", choices=["router_outputs", "router_outputs,injection"],
                    help="the QoS policy's at: (default: the policy's default)")
    ap.add_argument("--qos-by", choices=["src", "dst"], default="src",
                    help="with --qos: classes by the parity of the source (default) or of the "
                    "destination (every NIC sends both classes)")
    ap.add_argument("--qos-vcs", type=int, default=4, help="router.vcs with --qos")
    ap.add_argument("--vcs", type=int, help="router.vcs without --qos (the one-class baseline "
                    "of a two-class run: --vcs 4)")
    ap.add_argument("--no-nic-counters", action="store_true",
                    help="engine: {kind: native, nic_counters: false} (issue 23: the loop "
                    "without NIC counters)")
    ap.add_argument("--no-check-arbiter", action="store_true",
                    help="engine: {kind: native, check_arbiter: false} (issue 22: the loop "
                    "without the arbiter answer check)")
    ap.add_argument("--json", action="store_true", help="print JSON lines instead of a table")
    ap.add_argument("--in-process", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    if args.qos and (args.booksim or args.sst or args.sweep):
        # the processes run `federation run`, which has not the in-process bench_* policies:
        # their rows were the run without --qos
        ap.error("--qos applies to the in-process points; --booksim, --sst and --sweep run "
                 "`federation run` processes, which have no bench_* QoS policy")
    if args.booksim:
        for s in args.scenario:
            if s in BOOKSIM_P:
                _, _, _, warmup, measure, _ = SCENARIOS[s]
                w, m = _ns(args.warmup or warmup), _ns(args.measure or measure)
                if m % 3 or w % (m // 3 or 1) or not m:
                    # BookSim measures three sample periods after whole ones of warm-up: any
                    # other window was rounded, and the ratio compared different work
                    ap.error(f"--booksim needs a measure of three whole-ns periods and a "
                             f"warm-up of whole periods ({s}: warm-up {w} ns, measure {m} ns)")
    QOS_AT[:] = args.qos_at.split(",") if args.qos_at else []
    if args.no_nic_counters:
        ENGINE["nic_counters"] = False
    if args.vcs:
        VCS[0] = args.vcs
    if args.no_check_arbiter:
        ENGINE["check_arbiter"] = False
    QOS_BY[0] = args.qos_by
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
                 "--repeat", str(args.repeat), "--qos-vcs", str(args.qos_vcs),
                 "--qos-by", args.qos_by]
        for opt in ("warmup", "measure", "injection_vc", "router_model", "credit_delay", "qos",
                    "qos_at"):
            if getattr(args, opt):
                child += [f"--{opt.replace('_', '-')}", getattr(args, opt)]
        if args.loads:
            child += ["--loads", *map(str, args.loads)]
        if args.vcs:
            child += ["--vcs", str(args.vcs)]
        for flag in ("no_nic_counters", "no_check_arbiter"):
            if getattr(args, flag):
                child.append("--" + flag.replace("_", "-"))
        proc = subprocess.Popen(child, stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        for line in proc.stdout:
            r = json.loads(line)
            if args.json:
                print(line, end="")
            else:
                print(f"{r['load']:>5.2f} {r['offered']:>8.3f} {r['accepted']:>9.3f} "
                      f"{r['latency_ns']:>9.1f} {r['packets']:>9d} {r['wall_s']:>7.2f} "
                      f"{r['feed_s']:>7.2f} {r['events_per_packet']:>7.1f} "
                      f"{r['events_per_s']:>11,.0f} {r['packet_hops_per_s']:>11,.0f} "
                      f"{r['peak_rss_mb']:>7.0f} {r['baseline_rss_mb']:>8.0f}")
            sys.stdout.flush()
        if proc.wait() != 0:
            return proc.returncode
        if (args.booksim and s in BOOKSIM_P) or args.sst:
            compare(args, s)
    return 0


def compare(args: argparse.Namespace, scenario: str) -> None:
    """Process against process: ``federation run`` beside BookSim2 / SST merlin."""
    _, _, loads, _, _, _ = SCENARIOS[scenario]
    if not args.json:
        print(f"\n{scenario}, whole processes: {'load':>5} {'who':>8} {'wall s':>8} "
              f"{'cpu s':>7} {'RSS MB':>7} {'lat ns':>9} {'x faster':>9} {'x cpu':>6} "
              f"{'RSS ratio':>9}")
    booksim_s: list[tuple[float, float]] = []
    for load in args.loads or loads:
        rows = external(args, scenario, load)
        booksim_s += [(r["wall_s"], r["cpu_s"]) for r in rows if r["who"] == "booksim"]
        ours = rows[0]
        for r in rows:
            r.update({"scenario": scenario, "load": load,
                      "speedup": r["wall_s"] / ours["wall_s"],
                      "cpu_speedup": r["cpu_s"] / ours["cpu_s"] if ours["cpu_s"] else None,
                      "rss_ratio": ours["rss_mb"] / r["rss_mb"]})
            if args.json:
                print(json.dumps(r), flush=True)
            else:
                lat = f"{r['latency']:>9.2f}" if r["latency"] is not None else f"{'n/a':>9}"
                print(f"{'':>{len(scenario) + 19}}{load:>5.2f} {r['who']:>8} "
                      f"{r['wall_s']:>8.2f} {r['cpu_s']:>7.2f} {r['rss_mb']:>7.1f} {lat} "
                      f"{r['speedup']:>9.2f} {r['cpu_speedup'] or 0:>6.2f} "
                      f"{r['rss_ratio']:>9.2f}", flush=True)
    if args.sweep and booksim_s:
        sweep_row(args, scenario, args.loads or loads, booksim_s)


def sweep_row(args: argparse.Namespace, scenario: str, loads: list[float],
              booksim_s: list[tuple[float, float]]) -> None:
    """Every load in one ``federation run`` process (a sweep over ``workload.load``) against
    the sum of BookSim's runs of the same points (``booksim_s``: wall and processor seconds)."""
    _, _, _, warmup, measure, _ = SCENARIOS[scenario]
    doc = experiment(scenario, loads[0], args.routing, args.warmup or warmup,
                     args.measure or measure, args.seed, _router(args))
    doc["sweep"] = {"workload.load": list(loads)}
    with tempfile.TemporaryDirectory() as d:
        c = federation_run(doc, d)
    wall, cpu = sum(w for w, _ in booksim_s), sum(p for _, p in booksim_s)
    row = {"scenario": scenario, "who": "sweep", "loads": list(loads), "wall_s": c.wall_s,
           "cpu_s": c.cpu_s, "rss_mb": c.rss_mb, "booksim_wall_s": wall, "booksim_cpu_s": cpu,
           "speedup": wall / c.wall_s, "cpu_speedup": cpu / c.cpu_s if c.cpu_s else None,
           "ok": c.code == 0}
    if args.json:
        print(json.dumps(row), flush=True)
    else:
        print(f"{scenario}, every load in one process: {c.wall_s:.2f} s wall, {c.cpu_s:.2f} s "
              f"processor ({'ok' if c.code == 0 else f'exit {c.code}'}); BookSim's runs "
              f"{wall:.2f} / {cpu:.2f} s: x{wall / c.wall_s:.2f} wall, "
              f"x{cpu / c.cpu_s if c.cpu_s else 0:.2f} processor", flush=True)


if __name__ == "__main__":
    sys.exit(main())
