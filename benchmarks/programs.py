"""Benchmark of rank programs running closed-loop in the native engine.

Scenario (issue "Rank programs", speed check): a recursive-doubling allreduce of 1,024 ranks,
50 iterations, 8 B and 64 KiB per rank, on the CODES validation dragonfly (the machine of
``benchmarks/engine.py``'s ``codes`` scenario, 1,056 nodes; ranks on nodes 0..1023).  Each size
runs in its own process, so that its peak RSS is its own.  Printed per size:

* ``build s``: the workload building its programs (``Workload.programs``);
* ``prepare s``: checks, packetization and the loop's arrays, the build included;
* ``wall s`` and ``cpu s``: the engine loop (JIT compilation excluded: a small run compiles
  first; fastest of ``--repeat`` runs, as ``timeit`` does); rates are per second of processor
  time, which a loaded machine (other processes waiting for the cores) does not inflate;
* operations per second (target: >= 1,000,000 for 8 B, LogGOPSim's published rate on one
  core without a packet network) and packet-hops per second (target: within 25 % of the
  open-loop ``codes`` scenario's, which ``--open-loop`` runs beside it for the ratio), both per
  second of processor time, the open-loop scenario's too.

The open-loop scenario's packets cross 4.4 routers each, the allreduce's 1.6, so every packet's
fixed work (its NIC, its delivery) is spread over fewer hops there.  ``--replay`` therefore also
runs *the same packets* open-loop: every message the programs sent, created at the time its send
started, as an open-loop ``messages``-like workload on the same machine.  Its rates against the
programs' measure what running closed-loop costs, with the traffic held equal.

    python benchmarks/programs.py [--sizes 8B 64KiB] [--ranks 1024] [--iterations 50]
                                  [--repeat 3] [--open-loop] [--replay]
    python benchmarks/programs.py --skeletons   # the skeletons (benchmarks/skeletons.py)
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from engine import CODES  # noqa: E402

from federation import Messages, Workload, WorkloadContext, hookimpl  # noqa: E402
from federation.pipeline.load import load_experiment  # noqa: E402
from federation.pipeline.messages import workload_context  # noqa: E402
from federation.pipeline.point import prepare  # noqa: E402
from federation.plugin.registry import get_plugins  # noqa: E402


def run_point(size: str, ranks: int, iterations: int, repeat: int,
              with_replay: bool = False) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        doc = {"machine": CODES, "routing": {"algorithm": "minimal"},
               "workload": {"kind": "allreduce", "ranks": ranks, "size": size,
                            "iterations": iterations},
               # the loop alone: the packets table (a record per packet) is not asked for
               "outputs": {"packets": False}}
        path = Path(tmp) / "allreduce.yaml"
        path.write_text(yaml.safe_dump(doc))
        warm = {**doc, "workload": {**doc["workload"], "ranks": 4, "iterations": 1}}
        (Path(tmp) / "warm.yaml").write_text(yaml.safe_dump(warm))
        wp = load_experiment(Path(tmp) / "warm.yaml").points[0]
        wp.engine.run(prepare(wp).job)  # compiles (or loads numba's cache)
        point = load_experiment(path).points[0]
        t0 = time.perf_counter()
        job = prepare(wp).job  # the machine's network and NIC bandwidth (workloads check
        progs = point.workload.programs(  # their message sizes against the latter)
            workload_context(point, job.network, 0, job.nic_bandwidth, None))
        build = time.perf_counter() - t0

        def once() -> tuple:
            t0 = time.perf_counter()
            prep = prepare(point)
            prep_s = time.perf_counter() - t0
            return point.engine.run(prep.job), prep_s, prep.job

        raw, prep_s, job = fastest(repeat, once)
        replay = replay_rates(job, raw, repeat) if with_replay else {}
    return {**replay,
        "size": size, "ranks": ranks, "iterations": iterations, "operations": progs.n_ops,
        "build_s": build, "prepare_s": prep_s, "wall_s": raw.wall_s, "cpu_s": raw.cpu_s,
        "completion_us": float(raw.programs.rank_finish.max()) / 1e6,
        "packets": int(raw.programs.pstat[0]), "events": raw.events,
        "ops_per_s": progs.n_ops / raw.cpu_s,
        "packet_hops_per_s": raw.packet_hops / raw.cpu_s,
        "events_per_packet": raw.events / max(int(raw.programs.pstat[0]), 1),
        "events_per_s": raw.events / raw.cpu_s,
        "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def fastest(repeat: int, once: Callable[[], tuple]) -> tuple:
    """The least disturbed of ``repeat`` runs, as ``timeit`` takes it: the one whose result
    (``once()[0]``) used the least processor time."""
    return min((once() for _ in range(repeat)), key=lambda r: r[0].cpu_s)


_REPLAY: dict[str, np.ndarray] = {}


class _Replay(Workload):
    """The messages a program run sent, open-loop, each created when its send started."""

    name = "bench-program-replay"

    def generate(self, ctx: WorkloadContext) -> Messages:
        return Messages(time_ps=_REPLAY["time"], src=_REPLAY["src"], dst=_REPLAY["dst"],
                        size=_REPLAY["size"]).sorted()


@hookimpl
def federation_register_workloads(register) -> None:  # noqa: ANN001
    register(_Replay)


def replay_rates(job, raw, repeat: int) -> dict:  # noqa: ANN001
    """Packet-hops and events per processor second of the program run's packets replayed
    open-loop on the same machine with the same routing (see the module's docstring)."""
    t = job.programs
    n = t.msg_src.shape[0]
    _REPLAY.update(time=raw.programs.msg_post[:n].astype(np.int64), src=t.msg_src.astype(np.int32),
                   dst=t.msg_dst.astype(np.int32), size=t.msg_size.astype(np.int64))
    get_plugins().add(sys.modules[__name__], "bench-replay")
    end_s = float(raw.programs.rank_finish.max()) / 1e12
    doc = {"machine": CODES, "routing": {"algorithm": "minimal"},
           "workload": {"kind": _Replay.name},
           "stop": {"warmup": "0s", "measure": f"{end_s * 1.01 + 1e-6:.9f}s"},
           "outputs": {"packets": False, "messages": False}}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "replay.yaml"
        path.write_text(yaml.safe_dump(doc))
        rp = load_experiment(path).points[0]
        best, = fastest(repeat, lambda: (rp.engine.run(prepare(rp).job),))
    return {"replay_cpu_s": best.cpu_s, "replay_packet_hops_per_s": best.packet_hops / best.cpu_s,
            "replay_events_per_s": best.events / best.cpu_s,
            "replay_events": best.events}


def open_loop_rates() -> tuple[float, float]:
    """Packet-hops and events per second of processor time of ``benchmarks/engine.py``'s
    codes scenario at load 0.5 (per processor second, as this script's own rates: its
    ``packet_hops_per_s`` is per wall second, and the ratio moved with the host's load)."""
    out = subprocess.run([sys.executable, str(Path(__file__).with_name("engine.py")),
                          "--scenario", "codes", "--loads", "0.5", "--json"],
                         check=True, capture_output=True, text=True).stdout
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    r = rows[0]
    return float(r["packet_hops_per_cpu_s"]), float(r["events"] / r["cpu_s"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", nargs="+", default=["8B", "64KiB"])
    ap.add_argument("--ranks", type=int, default=1024)
    ap.add_argument("--iterations", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--open-loop", action="store_true",
                    help="also run the open-loop codes scenario and print the hops ratio")
    ap.add_argument("--replay", action="store_true",
                    help="also run the programs' own packets open-loop and print the ratios")
    ap.add_argument("--skeletons", action="store_true",
                    help="instead: the application skeletons' build times at 4,096 ranks "
                    "and their closed-loop rates (benchmarks/skeletons.py)")
    ap.add_argument("--one", help=argparse.SUPPRESS)  # internal: one size, JSON out
    args = ap.parse_args(argv)
    if args.skeletons:
        from skeletons import report

        report(CODES)
        return 0
    if args.one:
        print(json.dumps(run_point(args.one, args.ranks, args.iterations, args.repeat,
                                   args.replay)))
        return 0
    print(f"allreduce (recursive doubling), {args.ranks} ranks x {args.iterations} iterations, "
          "CODES dragonfly (1,056 nodes), minimal routing")
    print(f"{'size':>6} {'ops':>9} {'build s':>8} {'prep s':>7} {'wall s':>7} {'cpu s':>7} "
          f"{'ops/s':>11} "
          f"{'pkt-hops/s':>11} {'ev/pkt':>7} {'done us':>9} {'RSS MB':>7}")
    rows = []
    for size in args.sizes:
        out = subprocess.run([sys.executable, __file__, "--one", size, "--ranks",
                              str(args.ranks), "--iterations", str(args.iterations),
                              "--repeat", str(args.repeat)] + (["--replay"] if args.replay else []),
                             check=True, capture_output=True, text=True).stdout
        r = json.loads(out.strip().splitlines()[-1])
        rows.append(r)
        print(f"{size:>6} {r['operations']:>9,} {r['build_s']:>8.2f} {r['prepare_s']:>7.2f} "
              f"{r['wall_s']:>7.2f} {r['cpu_s']:>7.2f} {r['ops_per_s']:>11,.0f} "
              f"{r['packet_hops_per_s']:>11,.0f} "
              f"{r['events_per_packet']:>7.1f} {r['completion_us']:>9.1f} {r['rss_mb']:>7.0f}",
              flush=True)
    for r in rows if args.replay else ():
        print(f"{r['size']}: the same packets open-loop: {r['replay_cpu_s']:.2f} s, "
              f"{r['replay_packet_hops_per_s']:,.0f} packet-hops/s, "
              f"{r['replay_events'] / max(r['packets'], 1):.1f} events/packet; closed loop "
              f"runs at {r['packet_hops_per_s'] / r['replay_packet_hops_per_s']:.2f} x its "
              "packet-hops/s")
    if args.open_loop:
        hops, events = open_loop_rates()
        for r in rows:
            print(f"{r['size']}: packet-hops/s {r['packet_hops_per_s'] / hops:.2f} x and "
                  f"events/s {r['events_per_s'] / events:.2f} x the open-loop codes "
                  f"scenario's ({hops:,.0f} and {events:,.0f}; its packets cross more routers)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
