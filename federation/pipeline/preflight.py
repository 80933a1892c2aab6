"""Stage *preflight*: every check of a resolved point that needs nothing built or allocated.

Run for every point of an experiment before the first one is built or simulated (by the driver,
:func:`federation.pipeline.point.preflight`, which ``federation validate`` and ``run`` share),
so that a sweep never dies half-way on an input error that was visible at the start: the clock
range of every figure the files give (:func:`~federation.pipeline.bounds.check_clock`), the
memory the topology's counts imply, and the stop rule against the kind of workload.

May import: :mod:`.points`, :mod:`.bounds` and the layers below the pipeline.  Never another
stage.
"""

from __future__ import annotations

from federation.errors import ConfigError
from federation.models.limits import MAX_MESSAGES
from federation.models.units import PS_PER_S, format_time
from federation.pipeline.bounds import check_clock, check_machine_memory, topology_size
from federation.pipeline.points import (
    MemoryEstimate,
    ResolvedJob,
    ResolvedPoint,
    machine_prefix,
    point_jobs,
    refuse_figure,
    stop_path,
)
from federation.pipeline.rings import smallest_packet


def check_point(point: ResolvedPoint) -> None:
    """The checks of ``point`` that need no allocation: the clock range of its figures, its
    stop rule and its jobs."""
    check_clock(point)
    check_iq(point)
    check_starts(point)
    if point.experiment.jobs is None:
        if point.workload.closed_loop:
            check_stop(point)
        if point.experiment.slowdown:
            check_jobs(point)
    else:
        check_jobs(point)
    check_message_count(point)  # after the refusals of stop.messages by the kind of jobs


def check_iq(point: ResolvedPoint) -> None:
    """The booksim_iq router model clocks the NICs of open-loop traffic only (its NICs draw
    packets per cycle; rank programs hand theirs over as operations finish): refuse a job
    of rank programs here, where the engine refused it only when the run started (after a
    sweep's earlier points had run)."""
    if point.machine.machine.router.model != "booksim_iq":
        return
    for job in point_jobs(point):
        if job.closed_loop:
            what = ("its workload" if point.experiment.jobs is None
                    else f"job {job.name!r}")
            raise refuse_figure(point, "router.model", (
                f"router.model booksim_iq clocks the NICs of open-loop traffic only; {what} "
                f"({job.workload.name!r}) runs rank programs, which need the default router "
                "model"))


def machine_estimate(point: ResolvedPoint, max_memory: int) -> MemoryEstimate | None:
    """The memory of ``point``'s network and tables from the topology's counts, and of a
    sliding QoS window's rings for the smallest packet its workloads can make
    (:func:`~federation.pipeline.rings.smallest_packet`: exact where the files state the
    sizes, 1 B for a workload that does not; rank programs' packets are added once the
    programs are built), refused above ``max_memory`` before anything is allocated; ``None``
    when the topology cannot count before building (the build then checks the network it
    made, with the same rings)."""
    return check_machine_memory(point.machine, max_memory, machine_prefix(point),
                                smallest_packet=smallest_packet(point))


def check_message_count(point: ResolvedPoint) -> None:
    """``stop.messages`` above :data:`~federation.models.limits.MAX_MESSAGES`: the messages
    of a count are generated whole before the run starts (at least that many of them), so the
    run would refuse it after building the machine; ``validate`` refuses it here."""
    n = point.experiment.stop.messages
    if n is not None and n > MAX_MESSAGES:
        raise ConfigError(f"{n:.3g} messages would be generated whole before the run starts "
                          f"(limit {MAX_MESSAGES:.0e} when they are generated whole); lower "
                          "stop.messages, or give stop.measure (a window's traffic is "
                          "streamed)", source=point.source, path=stop_path(point, "messages"))


def check_starts(point: ResolvedPoint) -> None:
    """An open-loop job that starts at or after the end of the open-loop traffic
    (``stop.warmup + stop.measure``) would send nothing: refused naming its ``start`` (the run
    otherwise blamed ``stop.measure`` for an empty window, or dropped the job's traffic
    without a word beside another job's)."""
    stop = point.experiment.stop
    if stop.measure is None:
        return
    end = stop.warmup + stop.measure
    for j in point_jobs(point):
        if not j.closed_loop and j.start_ps >= round(end * PS_PER_S):
            raise ConfigError(
                f"job {j.name!r} starts at {format_time(j.start_ps / PS_PER_S)}, at or after "
                f"the end of the open-loop traffic (stop.warmup + stop.measure = "
                f"{format_time(end)}), so it would send nothing; start it earlier or lengthen "
                "stop.measure", source=point.source, path=j.at("start"))


def check_stop(point: ResolvedPoint) -> None:
    """``stop.messages`` counts open-loop messages; rank programs run until they finish and
    would ignore it without a word, so it is refused."""
    stop = point.experiment.stop
    if stop.messages is not None:
        path = stop_path(point, "messages")
        raise ConfigError(f"stop.messages ({stop.messages}) counts open-loop messages, but "
                          f"workload {point.workload.name!r} is rank programs, which run until "
                          "they finish; drop stop.messages (with a background, give "
                          "stop.measure: its horizon)", source=point.source, path=path)


def check_jobs(point: ResolvedPoint) -> None:
    """What the jobs of a point say about each other, visible without building the machine:
    the stop rule against their kinds, ``slowdown`` without a closed-loop job, two ``rest``
    placements, a two-opt order on an open-loop job, listed nodes that overlap or do not
    exist, placements that ask for more nodes than the machine has, and a workload's ``ranks``
    beyond its placement.  Each refusal names the job's field."""
    jobs = point_jobs(point)
    src = point.source
    closed = [j for j in jobs if j.closed_loop]
    open_loop = [j for j in jobs if not j.closed_loop]
    stop = point.experiment.stop
    if stop.messages is not None and (closed or len(open_loop) > 1):
        what = (f"job {closed[0].name!r} is rank programs, which run until they finish" if closed
                else f"{len(open_loop)} open-loop jobs share the machine")
        path = stop_path(point, "messages")
        raise ConfigError(f"stop.messages ({stop.messages}) counts the messages of one "
                          f"open-loop workload, but {what}; give stop.measure instead",
                          source=src, path=path)
    if point.experiment.slowdown and not closed:
        raise ConfigError("slowdown compares a closed-loop job's completion with and without "
                          "the others, but no job is rank programs", source=src,
                          path="slowdown")
    rest = [j for j in jobs if j.placement.takes_rest]
    if len(rest) > 1:
        raise ConfigError(f"job {rest[1].name!r} takes the rest of the machine, as job "
                          f"{rest[0].name!r} ({rest[0].field}) does; only one job can",
                          source=src, path=rest[1].at("placement"))
    for j in jobs:
        if j.order.order == "two_opt" and not j.closed_loop:
            raise ConfigError(f"job {j.name!r}: two_opt places ranks by the job's messages, "
                              f"which only rank programs give before the run; workload "
                              f"{j.workload.name!r} is open loop", source=src,
                              path=j.at("ranks.order"))
    size = topology_size(point.machine, machine_prefix(point))
    _check_sizes(point, list(jobs), size.nodes if size else None)


def _check_sizes(point: ResolvedPoint, every: list[ResolvedJob], n: int | None) -> None:
    """Listed nodes and node counts of the unshared jobs against each other and ``n``, and
    each job's ``ranks`` against its count."""
    src = point.source
    owner: dict[int, ResolvedJob] = {}
    jobs = [j for j in every if not j.shared]
    for j in jobs:
        for i, x in enumerate(j.placement.listed() or []):
            where = j.at(f"placement.nodes[{i}]")
            if n is not None and x >= n:
                raise ConfigError(f"job {j.name!r}: node {x} does not exist (the machine has "
                                  f"{n} nodes)", source=src, path=where)
            if x in owner:
                raise ConfigError(f"job {j.name!r} and job {owner[x].name!r} "
                                  f"({owner[x].field}) both list node {x}; jobs share nodes "
                                  "only when one of them says shared: true", source=src,
                                  path=where)
            owner[x] = j
    taken = 0
    counted = []
    for j in jobs:
        c = j.placement.count()
        if c is None:
            continue
        taken += c
        counted.append(j)
        if n is not None and taken > n:
            others = [repr(x.name) for x in counted[:-1]]
            whose = "the others' (jobs" if len(others) > 1 else "the other's (job"
            with_others = (f"; with {whose} {', '.join(others)}) that is {taken}"
                           if others else "")
            raise ConfigError(f"job {j.name!r} asks for {c} nodes{with_others}, but the "
                              f"machine has {n}",
                              source=src, path=j.at("placement.nodes"
                                                    if j.placement.listed() is not None
                                                    else "placement.count"))
    for j in every:
        c = j.placement.count()
        if c is None and j.placement.name == "all":
            c = n
        if c is None and j.placement.takes_rest and not j.shared and n is not None \
                and len(counted) == len(jobs) - 1:
            c = n - taken
        ranks = getattr(getattr(j.workload, "params", None), "ranks", None)
        if isinstance(ranks, int) and not isinstance(ranks, bool) and c is not None \
                and ranks > c:
            raise ConfigError(f"job {j.name!r}: {ranks} ranks need {ranks} nodes (one rank "
                              f"per node), but its placement gives it {c}", source=src,
                              path=f"{j.workload_field}.ranks")
