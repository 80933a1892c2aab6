"""Two versions of the engine timed against each other on one point, run by run.

    python benchmarks/ab.py OLD_TREE NEW_TREE [--pairs 100] [--measure 20us] [--load 0.5]
        [--scenario codes] [--vcs 4] [--qos POLICY [--qos-at router_outputs] [--qos-by dst]]

Each tree is a checkout, run with its own environment (``TREE/.venv/bin/python``) or else this
Python, importing the tree's own code either way (:func:`use_tree`; give the same tree twice
to see the method's own error).  Each runs one worker
process, this script with ``--worker``: it builds the point with its tree's own
``benchmarks/engine.py`` and engine, runs it once (the loop compiled or loaded), then runs it
again each time the parent asks.  The parent asks the two in turn, A B then B A, so that both
runs of a pair fall in the same phase of the host.  A pair's figure is the old tree's loop
time per packet-hop over the new tree's: above 1, the new tree is faster.  Prints the median,
its 95 % confidence interval (distribution-free) and the quartiles, and whether the two trees
gave the same events (a change meant to keep results must keep them).

Why workers that stay up: a shared host's speed moves in phases of seconds, by up to 45 %
(stop 37: 1.43-2.08 M packet-hops/s in twenty consecutive runs of one prepared point, with
processor time equal to wall time).  Runs minutes apart, or whole processes one after
another, compare the host's phases more than the code; two runs of 20 us (under half a second
each) side by side share one.  Same tree twice, 40 pairs: median 0.999, interval 0.965-1.018.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml


def median_ci(xs: list[float]) -> tuple[float, float]:
    """A 95 % confidence interval of the median of ``xs``: the order statistics whose ranks a
    sign count's binomial distribution puts around it (no assumption on the distribution)."""
    n = len(xs)
    ys = sorted(xs)
    k, tail = 0, 0.0
    while k < n // 2:  # the largest k with P(fewer than k + 1 below the median) <= 2.5 %
        tail += math.comb(n, k) / 2**n
        if tail > 0.025:
            break
        k += 1
    return ys[max(k - 1, 0)], ys[min(n - k, n - 1)]


def prepare_point(bench: Any, spec: dict[str, Any], plugins: Any = None) -> tuple[Any, Any]:
    """``engine.py``'s point (module ``bench``) for ``spec`` (``scenario``, ``load``,
    ``measure``, ``qos``, ``at``, ``by``, ``vcs``), prepared and run once: (engine, job)."""
    from federation.pipeline.bounds import default_max_memory
    from federation.pipeline.load import load_experiment
    from federation.pipeline.point import BuildCache, prepare

    qos = spec.get("qos")
    bench.QOS_BY[0] = spec.get("by", "src")
    bench.QOS_AT[:] = spec["at"].split(",") if spec.get("at") else []
    bench.VCS[0] = 0 if qos else spec.get("vcs", 0)
    scenario = spec.get("scenario", "codes")
    doc = bench.experiment(scenario, spec.get("load", 0.5), "minimal",
                           bench.SCENARIOS[scenario][3], spec.get("measure", "20us"), 1, None,
                           qos, 4)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "point.yaml"
        path.write_text(yaml.safe_dump(doc))
        if qos and plugins is None:
            plugins = bench.qos_plugins()
        point = load_experiment(path, plugins=plugins if qos else None).points[0]
        prep = prepare(point, BuildCache(default_max_memory(), True))
        point.engine.run(prep.job)
    return point.engine, prep.job


def use_tree(tree: Path) -> None:
    """Import ``tree``'s own ``federation``: its core from ``tree/federation`` and its
    ``plugins/``, ``adapters/`` and ``schemas/`` as the package's subpackages, as an install
    maps them (pyproject's package-dir), whatever this Python has installed.  Without it a
    tree without a ``.venv`` was timed with this Python's installed federation: the other
    tree measured against itself ("same events", a median near 1)."""
    import importlib.util

    sys.path.insert(0, str(tree))
    import federation

    for sub in ("plugins", "adapters", "schemas"):
        spec = importlib.util.spec_from_file_location(
            f"federation.{sub}", tree / sub / "__init__.py",
            submodule_search_locations=[str(tree / sub)])
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        setattr(federation, sub, module)
        spec.loader.exec_module(module)
    for name in ("federation", "federation.plugins"):
        where = Path(sys.modules[name].__file__ or "").resolve()
        if not where.is_relative_to(tree.resolve()):
            raise SystemExit(f"ab.py: {name} of {tree} is not importable ({where} was)")


def worker(tree: str, spec: dict[str, Any]) -> None:
    """Prepare ``spec``'s point with ``tree``'s code, then answer each line of stdin with a
    run's loop seconds, packet-hops and events (a JSON line)."""
    use_tree(Path(tree))
    sys.path.insert(0, str(Path(tree) / "benchmarks"))
    import engine as bench  # the tree's own (benchmarks/ is not a package)

    eng, job = prepare_point(bench, spec)
    print(json.dumps({"ready": True}), flush=True)
    for _ in sys.stdin:
        raw = eng.run(job)
        print(json.dumps({"wall_s": raw.wall_s, "hops": raw.packet_hops,
                          "events": raw.events}), flush=True)


class Worker:
    """A tree's worker process (see :func:`worker`)."""

    def __init__(self, tree: str, spec: dict[str, Any]) -> None:
        py = Path(tree) / ".venv" / "bin" / "python"
        self.proc = subprocess.Popen(
            [str(py) if py.exists() else sys.executable, __file__, "--worker", tree,
             json.dumps(spec)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.read()

    def read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"a worker stopped (exit {self.proc.wait()})")
        return json.loads(line)

    def run(self) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write("run\n")
        self.proc.stdin.flush()
        return self.read()

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--pairs", type=int, default=100)
    ap.add_argument("--scenario", default="codes")
    ap.add_argument("--load", type=float, default=0.5)
    ap.add_argument("--measure", default="20us", help="simulated time of each run")
    ap.add_argument("--vcs", type=int, default=0, help="router.vcs without --qos (0: the "
                    "scenario's)")
    ap.add_argument("--qos", help="two classes under this policy (engine.py's --qos)")
    ap.add_argument("--qos-at", help="engine.py's --qos-at")
    ap.add_argument("--qos-by", default="src", help="engine.py's --qos-by")
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(sys.argv[2], json.loads(sys.argv[3]))
        return
    a = ap.parse_args()
    if a.pairs < 2:
        ap.error("--pairs must be at least 2 (a median's interval needs two)")
    spec = {"scenario": a.scenario, "load": a.load, "measure": a.measure, "vcs": a.vcs,
            "qos": a.qos, "at": a.qos_at, "by": a.qos_by}
    old, new = Worker(a.old, spec), Worker(a.new, spec)
    ratios, events = [], set()
    for i in range(a.pairs):
        got = {}
        for w in (old, new) if i % 2 == 0 else (new, old):
            got[w] = w.run()
        o, n = got[old], got[new]
        events.add((o["events"], n["events"]))
        ratios.append((o["wall_s"] / o["hops"]) / (n["wall_s"] / n["hops"]))
        if sys.stderr.isatty():
            print(f"\rpair {i + 1}/{a.pairs}", end="", file=sys.stderr)
    if sys.stderr.isatty():
        print(file=sys.stderr)
    old.close()
    new.close()
    lo, hi = median_ci(ratios)
    q = statistics.quantiles(ratios, n=4, method="inclusive")
    same = ("same events" if len(events) == 1 and all(x == y for x, y in events)
            else f"events (old, new) differ: {sorted(events)}")
    print(f"new speed / old speed per packet-hop, {a.pairs} pairs of {a.measure}: median "
          f"{statistics.median(ratios):.3f} (95 % CI {lo:.3f}-{hi:.3f}; quartiles {q[0]:.3f}-"
          f"{q[2]:.3f}); {same}")


if __name__ == "__main__":
    main()
