"""BookSim2 beside the native engine: the same dragonfly, traffic and simulated cycles.

BookSim2 is not part of this repository: fetch and build it elsewhere (``make`` in its ``src``,
which needs flex and bison) and pass the binary's path (``--booksim PATH`` of
``benchmarks/engine.py`` and ``benchmarks/booksim_agreement.py``).  This module writes BookSim's
configuration for a scenario, runs it, and reads the figures of its own output.

**The mapping.**  BookSim's ``dragonflynew`` with ``k = p`` is the balanced dragonfly p, a = 2p,
h = p, g = a h + 1 (p = 4: 1,056 nodes; p = 2: 72 nodes) with the global cables of our
``absolute`` arrangement.  One cycle is one nanosecond and one flit 64 bytes: a channel carries
a flit per cycle (64 GB/s), takes 1 / 10 / 100 cycles (terminal / local / global; BookSim's
dragonfly fixes these), and a packet is one flit (``packet_size = 1``).  The router is
BookSim's example dragonfly router (``src/examples/dragonflyconfig``): input-queued, 256 flits
per VC, separable input-first VC and switch allocation with one iteration, internal speedup
2.0 into unbounded output queues, ``credit_delay = 2``, ``routing_delay = 0`` (lookahead),
one cycle each for VC allocation, switch allocation and crossbar.  Our machine: 16 KiB per VC,
1 ns router delay (a flit crosses a BookSim router in one cycle at zero load, so both give the
zero-load latency sum of (L + 2) over the channels of a path, minus one).  ``min`` uses 2 VCs,
``ugal`` 3 (its VC is its phase).  Traffic: Bernoulli injection, ``uniform`` over every node
including the source, or ``bad_dragon`` (a node of the next group: our ``group_shift``).

**The run.**  BookSim warms up for ``warmup_periods x sample_period`` cycles, measures packets
created in the next periods until its latency converges, then drains them.  Here its stopping
thresholds are set so that it measures exactly three periods (every change counts as
converged) and never aborts (``latency_thres`` far above any latency) unless a latency limit
is given, so that both simulators simulate the same warm-up and measurement windows.  BookSim
keeps injecting while it drains the measured packets; the native engine's sources stop at the
window's end.

**Stuck runs.**  Past saturation a routing whose VC plan has a cycle (UGAL with ``intermediate:
node``, BookSim's UGAL) can deadlock a few packets while the rest of the network keeps moving:
BookSim's own deadlock warning needs the whole network still, and since it keeps injecting while
it drains, a run without a latency limit then never ends (UGAL's worst case at p = 4, load
0.2148: the same 148 measured packets undelivered for 30,000 cycles).  :func:`run` watches the
drain's reports (one per 1,000 cycles): when no measured packet is delivered for
:data:`STUCK_REPORTS` reports running, it stops BookSim and the run counts as stuck (no
figures), as the native engine's deadlock ends its run.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

#: BookSim's example dragonfly router (src/examples/dragonflyconfig), one-flit packets
ROUTER = """\
vc_buf_size = 256;
wait_for_tail_credit = 0;
vc_allocator = separable_input_first;
sw_allocator = separable_input_first;
alloc_iters = 1;
credit_delay = 2;
routing_delay = 0;
vc_alloc_delay = 1;
sw_alloc_delay = 1;
st_final_delay = 1;
input_speedup = 1;
output_speedup = 1;
internal_speedup = 2.0;
priority = none;
packet_size = 1;
topology = dragonflynew;
n = 1;
"""

#: drain reports (1,000 cycles each) without a measured packet delivered: the run is stuck
STUCK_REPORTS = 20

PATTERNS = {"uniform": "uniform", "worst": "bad_dragon"}
VCS = {"min": 2, "ugal": 3}


@dataclass
class BookSimRun:
    """Figures of one BookSim run (its own output), and what the process cost."""

    latency: float | None  #: packet latency average, cycles (creation to ejection)
    network_latency: float | None
    accepted: float | None  #: accepted packet rate average, packets per node and cycle
    injected: float | None
    hops: float | None
    cycles: int | None  #: "Time taken", warm-up, measurement and drain
    wall_s: float
    max_rss_mb: float
    output: str
    cpu_s: float = 0.0
    #: stopped: measured packets undelivered for STUCK_REPORTS drain reports (a deadlock)
    stuck: bool = False

    @property
    def ok(self) -> bool:
        return self.latency is not None


def config(p: int, routing: str, pattern: str, load: float, warmup: int, period: int,
           seed: int = 0, latency_limit: float | None = None) -> str:
    """BookSim's configuration: warm-up ``warmup`` cycles (a multiple of ``period``), then
    three measurement periods of ``period`` cycles; ``latency_limit``: BookSim gives up (its
    "unstable") past that mean latency, in cycles (default: never)."""
    if warmup % period:
        raise ValueError("the warm-up must be whole sample periods")
    return ROUTER + f"""\
k = {p};
routing_function = {routing};
num_vcs = {VCS[routing]};
traffic = {PATTERNS[pattern]};
injection_rate = {load:.6g};
sample_period = {period};
warmup_periods = {warmup // period};
max_samples = {warmup // period + 4};
stopping_thres = 1e9;
acc_stopping_thres = 1e9;
warmup_thres = 1e9;
acc_warmup_thres = 1e9;
latency_thres = {'1e+09' if latency_limit is None else f'{latency_limit:.1f}'};
seed = {seed};
"""


def _figure(text: str, label: str) -> float | None:
    m = re.findall(rf"^{re.escape(label)} = ([-0-9.eE+]+)", text, re.MULTILINE)
    return float(m[-1]) if m else None


def run(binary: str | os.PathLike, cfg: str) -> BookSimRun:
    """Run BookSim on ``cfg``; its wall time and peak resident memory come from ``wait4``."""
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "booksim.cfg"
        path.write_text(cfg)
        child = timed_child([str(binary), str(path)], watch=StuckWatch())
    out = child.out
    overall = out.split("====== Overall Traffic Statistics ======")
    tail = overall[-1] if len(overall) > 1 else ""
    taken = re.findall(r"Time taken is (\d+) cycles", out)
    return BookSimRun(
        latency=_figure(tail, "Packet latency average"),
        network_latency=_figure(tail, "Network latency average"),
        accepted=_figure(tail, "Accepted packet rate average"),
        injected=_figure(tail, "Injected packet rate average"),
        hops=_figure(tail, "Hops average"),
        cycles=int(taken[-1]) if taken else None,
        wall_s=child.wall_s, max_rss_mb=child.rss_mb, output=out, cpu_s=child.cpu_s,
        stuck=child.stopped)


class StuckWatch:
    """Reads BookSim's output line by line: true once the drain has reported the same number
    of measured flits :data:`STUCK_REPORTS` times running."""

    def __init__(self) -> None:
        self.draining = False
        self.last: int | None = None
        self.same = 0

    def __call__(self, line: str) -> bool:
        if line.startswith("Draining"):
            self.draining = True
        m = re.match(r"Measured flits: .*\((\d+) flits\)", line) if self.draining else None
        if m is None:
            return False
        n = int(m.group(1))
        self.same = self.same + 1 if n == self.last else 0
        self.last = n
        return self.same >= STUCK_REPORTS


class Child(NamedTuple):
    """What a child process cost and said."""

    wall_s: float
    rss_mb: float  #: peak resident memory
    code: int  #: exit code
    out: str  #: stdout and stderr
    cpu_s: float  #: user plus system time (a loaded machine disturbs it less than wall time)
    stopped: bool = False  #: ``watch`` stopped it


def timed_child(argv: list[str], env: dict[str, str] | None = None,
                watch: Callable[[str], bool] | None = None) -> Child:
    """Wall time, peak RSS, exit code, output and processor time of a child process;
    ``watch(line)`` true for a line of its output stops it (its process group).

    The peak resident memory comes from GNU time (``-f %M``) when the machine has it: a
    child forked from this (large) Python process starts with its pages resident, so
    ``wait4``'s own figure counts them too; otherwise from ``wait4`` (an overestimate)."""
    gnu_time = shutil.which("time") or ("/usr/bin/time" if Path("/usr/bin/time").exists()
                                        else None)
    with tempfile.TemporaryDirectory() as d:
        report = Path(d) / "rss"
        full = [gnu_time, "-f", "%M", "-o", str(report), *argv] if gnu_time else argv
        t0 = time.perf_counter()
        proc = subprocess.Popen(full, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, env=env, start_new_session=True)
        assert proc.stdout is not None
        said, stopped = [], False
        for line in proc.stdout:
            said.append(line)
            if watch is not None and not stopped and watch(line):
                stopped = True
                os.killpg(proc.pid, signal.SIGKILL)
        out = "".join(said)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        rss = usage.ru_maxrss / 1024
        if gnu_time and report.exists():
            lines = [x for x in report.read_text().split() if x.isdigit()]
            if lines:
                rss = int(lines[-1]) / 1024
    cpu = usage.ru_utime + usage.ru_stime  # GNU time's own and its waited-for child's
    return Child(wall, rss, proc.returncode, out, cpu, stopped)
