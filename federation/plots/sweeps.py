"""A sweep's points as the runner writes them: a load listed twice in one series is one
simulation run twice.

The load figures draw one line per series (engine, routing and every swept value but the
load and the output switches, :func:`series_key`), its points ordered by offered load.  The
runner expands a sweep as the product of its lists without removing repeats, so
``sweep: {workload.load: [0.2, 0.2]}`` (or a sweep over an output switch, ``outputs.ports:
[true, false]``) legitimately writes two points of one series at the same load.  Those points
are the same experiment with the same seed (a point's seed is the experiment's, unless
``seed`` itself is swept, which makes another series), and the engines that simulate
deterministically (native, SimGrid: "the same experiment and seed give byte-identical
results") measure the same figures for both.  So two such points whose measured figures differ
were not written by one run (a point edited or copied in from another run): the line would
zig-zag between them at one load, and the reader refuses it naming both points.

Other engines (SST, a plugin's) are not known to repeat a run exactly (SST on several ranks
or threads orders simultaneous events as its partitions meet), so their repeats are left
alone.
"""

from __future__ import annotations

from typing import Any

from federation.errors import ConfigError
from federation.results.model import PointResult, RunResult

#: The swept key that is the x axis of the load figures; every other swept key makes a series.
LOAD_KEY = "workload.load"
#: Swept keys under this prefix choose what a run writes, not what it simulates.
OUTPUTS = "outputs."
#: engines that give the same figures for the same experiment and seed
DETERMINISTIC_ENGINES = frozenset({"native", "simgrid"})
#: the summary's measured figures (what the load figures draw and the counts behind them);
#: not ``events`` or ``simulated_time_ns``, which a sampler (an output switch) may add to
MEASURED = ("offered_load", "accepted_load", "packets_generated", "packets_measured",
            "packets_delivered", "bytes_injected", "bytes_delivered", "latency_ns",
            "network_latency_ns", "mean_hops", "nonminimal_fraction",
            "message_completion_ns_mean")


def series_key(p: PointResult) -> tuple[Any, ...]:
    """What puts a point on a line of the load figures: its engine, routing and swept values
    but the load and the output switches (as :func:`federation.plots.data.series_of`)."""
    fixed = tuple((k, repr(v)) for k, v in p.sweep.items()
                  if k != LOAD_KEY and not k.startswith(OUTPUTS))
    return (p.engine, p.routing, fixed)


def _difference(a: PointResult, b: PointResult) -> tuple[str, Any, Any] | None:
    """The first measured figure (or the seed) in which two points differ, or ``None``."""
    if a.seed != b.seed:
        return "seed", a.seed, b.seed
    sa, sb = a.summary.model_dump(mode="json"), b.summary.model_dump(mode="json")
    for name in MEASURED:
        if sa.get(name) != sb.get(name):
            return f"summary.{name}", sa.get(name), sb.get(name)
    return None


def check_repeated_loads(r: RunResult, source: str) -> None:
    """Refuse two points of one series at one swept load whose measured figures differ (see
    the module docstring), naming both points and the first figure that differs."""
    first: dict[tuple[Any, ...], int] = {}
    for i, p in enumerate(r.points):
        load = p.sweep.get(LOAD_KEY)
        if (p.engine not in DETERMINISTIC_ENGINES or isinstance(load, bool)
                or not isinstance(load, (int, float))):
            continue
        key = (*series_key(p), float(load))
        j = first.setdefault(key, i)
        if j == i:
            continue
        diff = _difference(r.points[j], p)
        if diff is None:
            continue
        name, was, now = diff
        raise ConfigError(
            f"points[{j}] and points[{i}] are both {LOAD_KEY}={load!r} of one series (engine "
            f"{p.engine}, routing {p.routing}, the same swept values), but their {name} "
            f"differ ({was!r} and {now!r}): a load listed twice runs the same simulation "
            "twice, so one of them is not this run's point", source=source,
            path=f"points[{i}].sweep.{LOAD_KEY}")
