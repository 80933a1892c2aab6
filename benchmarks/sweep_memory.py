"""Peak memory of a sweep against its number of points (issue 6, item 11).

Each point's tables are written as soon as it finishes and dropped, so the peak resident memory
of ``federation run`` must stay flat as a sweep grows.  Runs the shipped ``codes-dragonfly``
machine at load 0.5 over a ``--measure`` window with 1 and with ``--points`` sweep points (over
seeds), each in its own process, and prints the peak RSS of each (``ru_maxrss`` of the child).

    python benchmarks/sweep_memory.py [--points 10] [--measure 30us]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from federation.schemas import machines_dir


def peak_rss_mib(points: int, measure: str, work: Path) -> float:
    """Run one experiment of ``points`` points in a child process; its peak RSS in MiB."""
    exp = work / f"sweep-{points}.yaml"
    exp.write_text(
        f"machine: {machines_dir() / 'codes-dragonfly.yaml'}\n"
        "workload: {kind: synthetic, load: 0.5}\n"
        f"stop: {{warmup: 2us, measure: {measure}}}\n"
        f"sweep: {{seed: {list(range(1, points + 1))}}}\n")
    # the run's own exit status is kept: a refused run (a bad --measure, a sweep past the
    # memory limit) printed an RSS figure and a ratio of 1.00 as if it had run
    code = ("import resource, sys\nfrom federation.cli import entry\n"
            "try:\n    entry()\n    status = 0\nexcept SystemExit as e:\n"
            "    status = e.code if isinstance(e.code, int) else 1\n"
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
            "sys.exit(status)\n")
    r = subprocess.run([sys.executable, "-c", code, "run", str(exp), "--out",
                        str(work / f"out-{points}")], capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise SystemExit(r.stderr)
    return int(r.stderr.strip().splitlines()[-1]) / 1024  # KiB on Linux


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=10)
    ap.add_argument("--measure", default="30us")
    args = ap.parse_args()
    if args.points < 1:
        ap.error("--points must be at least 1")
    with tempfile.TemporaryDirectory() as tmp:
        one = peak_rss_mib(1, args.measure, Path(tmp))
        many = peak_rss_mib(args.points, args.measure, Path(tmp))
    print(f"peak RSS, 1 point: {one:.0f} MiB; {args.points} points: {many:.0f} MiB "
          f"(ratio {many / one:.2f})")


if __name__ == "__main__":
    main()
