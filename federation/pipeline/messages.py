"""The open-loop messages of a point: generated whole or in batches, and checked before the
run (nodes, sizes, clock, a window that measures something, memory).

A workload that overrides :meth:`~federation.plugin.components.Workload.batches` is streamed: the
engine asks for a batch when its clock reaches it, so a long run holds one batch at a time;
any other gives :meth:`~federation.plugin.components.Workload.generate` whole, cut into batches
here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from federation.engine.traffic import CHUNK_PACKETS, time_batches
from federation.errors import ConfigError, located
from federation.models.limits import CLOCK_LIMIT, TIME_LIMIT_PS
from federation.models.units import PS_PER_S, format_time, seconds_to_ps
from federation.network import Network
from federation.pipeline.bounds import check_route_clock
from federation.pipeline.points import (
    ResolvedJob,
    ResolvedPoint,
    in_job,
    job_traffic_stream,
    job_view,
    no_messages,
    point_jobs,
    window_field,
)
from federation.pipeline.traffic_memory import (
    check_packets_memory,
    expected_packets,
    message_rate,
    stop_field,
)
from federation.plugin.components import Engine, Messages, Workload, WorkloadContext
from federation.programs.checks import MAX_MESSAGE_BYTES

if TYPE_CHECKING:
    from federation.pipeline.points import Built, Placed, PlacedJob


Batches = Callable[[], Iterator[tuple[int, Messages]]]


def whole_batches(msgs: Messages, packet_size: int) -> Batches:
    """Messages generated whole, handed to the engine in time-ordered batches."""
    return lambda: time_batches(msgs, packet_size)


def check_messages(point: ResolvedPoint, n_nodes: int, msgs: Messages,
                   workload: Workload | None = None) -> None:
    """A workload plugin's messages as the engine needs them: one entry per message in every
    array, nodes that exist, whole positive sizes, times from 0 in creation order.  The
    compiled loop indexes by these without bounds checks, so a slip here would read another
    node's state instead of failing.  ``workload``: the one that made them (default: the
    point's)."""
    name = (workload or point.workload).name
    n = msgs.count

    def refuse(what: str) -> None:
        raise ConfigError(f"workload {name!r} returned {what}", source=point.source,
                          path="workload")

    if any(np.asarray(a).shape != (n,) for a in (msgs.src, msgs.dst, msgs.size)):
        refuse(f"arrays of different lengths ({n} creation times)")
    if n == 0:
        return
    for field, nodes in (("source", msgs.src), ("destination", msgs.dst)):
        if np.asarray(nodes).dtype.kind not in "iu":  # the engine indexes by them
            refuse(f"{field} nodes of type {np.asarray(nodes).dtype}, not integers")
        bad = np.nonzero((nodes < 0) | (nodes >= n_nodes))[0]
        if bad.size:
            refuse(f"message {int(bad[0])} with {field} node {int(nodes[bad[0]])}; the machine "
                   f"has nodes 0 to {n_nodes - 1}")
    for field, values in (("size", msgs.size), ("creation time", msgs.time_ps)):
        cut = _fraction(values)  # an integer cast would cut 2048.5 B to 2048 silently
        if cut is not None:
            refuse(f"message {cut} with {field} {values[cut].item()!r}, not a whole number")
    if int(msgs.size.min()) < 1:
        refuse(f"message {int(np.argmin(msgs.size))} of {msgs.size.min().item()!r} bytes; sizes "
               "are whole bytes from 1")
    if int(msgs.size.max()) >= MAX_MESSAGE_BYTES:  # before any memory or clock estimate
        refuse(f"message {int(np.argmax(msgs.size))} of {msgs.size.max().item()!r} bytes, "
               f"beyond the largest message ({MAX_MESSAGE_BYTES - 1} B)")
    if int(msgs.time_ps.min()) < 0:
        refuse(f"message {int(np.argmin(msgs.time_ps))} created before time 0")
    if n > 1 and bool((np.diff(msgs.time_ps) < 0).any()):
        refuse("messages out of creation order (return Messages(...).sorted())")
    if msgs.cls is not None:
        classes = int(point.machine.qos.n_classes())
        cls = np.asarray(msgs.cls)
        bad = np.nonzero((cls < -1) | (cls >= classes))[0] if cls.shape == (n,) else [0]
        if len(bad):
            got = cls.reshape(-1)[bad[0]].item()
            refuse(f"message {int(bad[0])} of traffic class {got!r}; the machine's QoS policy "
                   f"has classes 0 to {classes - 1} (-1: its default)")


def _fraction(values: np.ndarray) -> int | None:
    """The first entry of a float array that is not a whole number (``None``: none)."""
    if values.dtype.kind != "f":
        return None
    bad = np.nonzero(np.floor(values) != values)[0]
    return int(bad[0]) if bad.size else None


def check_traffic(point: ResolvedPoint, built: Built, msgs: Messages,
                  window: tuple[int, int], max_memory: int, kept: bool) -> int:
    """Refuse traffic that measures nothing, reaches past the clock, or cannot be held;
    returns its packet count."""
    check_messages(point, built.network.n_nodes, msgs)
    if msgs.count and int(msgs.time_ps.max()) >= TIME_LIMIT_PS:
        raise ConfigError(f"a message is created past {CLOCK_LIMIT}",
                          source=point.source, path="workload")
    check_window(point, built, window, [(None, built.network.n_nodes, msgs.time_ps)])
    packet = int(point.machine.machine.packet_size)
    n_packets = int(((msgs.size.astype(np.int64) + packet - 1) // packet).sum())
    check_packets_memory(point, built, n_packets, max_memory, kept)
    return n_packets


def streams(workload: Workload) -> bool:
    """Whether ``workload`` generates its messages batch by batch (:meth:`Workload.batches`)
    rather than whole."""
    return type(workload).batches is not Workload.batches


def streamed(point: ResolvedPoint, built: Built, horizon: int, window: tuple[int, int],
             rng: np.random.Generator, max_memory: int, kept: bool,
             job: ResolvedJob | None = None, nodes: np.ndarray | None = None,
             alone: bool = True) -> tuple[Batches, int]:
    """A streaming workload's batches (each checked as it comes, and re-drawn identically
    when asked again) and its expected packet count, refused up front when its window
    would measure nothing (``alone``: the only traffic of the run; :func:`window_draw`) or
    its kept tables cannot be held.  With ``job`` and ``nodes`` the workload runs on the
    job's nodes, from the job's ``start``; the batches are in the machine's node numbers."""
    m = built.network.n_nodes if nodes is None else int(nodes.shape[0])
    if horizon >= TIME_LIMIT_PS:
        raise ConfigError(f"stop.warmup + stop.measure reach past {CLOCK_LIMIT}",
                          source=point.source, path=stop_field(point))
    batches = drawn_batches(point, built, horizon, rng.bit_generator.state, job, nodes)
    try:  # the workload's own checks (its fields against this machine) before the run
        next(batches(), None)
    except ConfigError as exc:
        raise located(exc, point.source) from None
    if alone:
        check_window(point, built, window,
                     [(job, m, window_draw(point, built, window, job, m, batches))])
    n = expected_packets(point, built, horizon, job, m)  # 0: the workload states no load
    check_packets_memory(point, built, n, max_memory, kept, whole=False)
    return batches, n


def drawn_batches(point: ResolvedPoint, built: Built, horizon: int, state: dict,
                  job: ResolvedJob | None = None, nodes: np.ndarray | None = None) -> Batches:
    """A streaming workload's batches before ``horizon`` on the machine's clock, drawn from
    the generator state ``state`` (the job's traffic stream,
    :func:`~federation.pipeline.points.job_traffic_stream`): each call draws the same ones
    again, checked as they come, in the machine's node numbers, from the job's start."""
    net = built.network
    workload = job.workload if job is not None else point.workload
    start = job.start_ps if job is not None else 0
    m = net.n_nodes if nodes is None else int(nodes.shape[0])
    cls = job_class(point, job)

    def batches() -> Iterator[tuple[int, Messages]]:
        fresh = np.random.default_rng()
        fresh.bit_generator.state = state
        ctx = workload_context(point, net, horizon - start, built.nic_bandwidth, fresh, job,
                               nodes)
        last = 0
        try:
            for end, msgs in workload.batches(ctx, CHUNK_PACKETS):
                check_messages(point, m, msgs, workload)
                if msgs.count and (int(msgs.time_ps[0]) < last or int(msgs.time_ps[-1]) >= end
                                   or int(msgs.time_ps[-1]) >= TIME_LIMIT_PS):
                    raise ConfigError(f"workload {workload.name!r} returned a batch of "
                                      "messages out of time order or past its end",
                                      source=point.source, path="workload")
                last = end
                yield min(end + start, TIME_LIMIT_PS), on_machine(msgs, nodes, start, cls)
        except ConfigError as exc:
            raise relocate(exc, point, job, m) from None
    return batches


#: a streamed job's expected messages in the window from which :func:`window_draw` takes it
#: that the window measures without drawing (Bernoulli, Poisson or periodic injection then
#: creates none there with a chance below e^-64; only bursts leave more)
SURE_MESSAGES = 64
#: messages :func:`window_draw` draws at most before the window's start; past them it cannot
#: tell cheaply, and lets the run go on
DRAW_LIMIT = 4 * CHUNK_PACKETS


@dataclass(frozen=True)
class Drawn:
    """What drawing a streamed job's messages as the run draws them told of the window."""

    first: int | None  #: creation time (ps) of its first message from the window's start on
    before: int  #: messages it created before the window's start
    seed: int  #: the experiment's seed they were drawn with


def window_draw(point: ResolvedPoint, built: Built, window: tuple[int, int],
                job: ResolvedJob | None, m: int, batches: Batches) -> Drawn | None:
    """Whether a streamed job creates a message in ``window``, found by drawing its
    ``batches`` (the run's own draws, from the point's seed) up to the first message at or
    after the window's start; ``None`` (it may measure) when its load makes at least
    :data:`SURE_MESSAGES` expected in the window, or it creates more than
    :data:`DRAW_LIMIT` before it.  ``run`` and the preflight (``validate``) call it alike,
    so they refuse the same points, and only when no message falls in the window."""
    w0, w1 = window
    rate = message_rate(point, built, job)
    inside = max(0, w1 - max(w0, job.start_ps if job is not None else 0))
    if rate is not None and rate[2] * m * inside / PS_PER_S >= SURE_MESSAGES:
        return None
    seed, before = point.experiment.seed, 0
    for end, msgs in batches():
        i = int(np.searchsorted(msgs.time_ps, w0, side="left"))
        if i < msgs.count:
            return Drawn(int(msgs.time_ps[i]), before + i, seed)
        before += msgs.count
        if end >= w1:
            break
        if before > DRAW_LIMIT:
            return None
    return Drawn(None, before, seed)


def relocate(exc: ConfigError, point: ResolvedPoint, job: ResolvedJob | None,
             m: int) -> ConfigError:
    """A workload's refusal at the job's workload field (the one workload: as it is)."""
    return exc if job is None else in_job(exc, point, job, m)


#: an open-loop job as the window check sees it: the job (``None``: the one workload), its
#: node count, and its messages' creation times on the machine's clock, or for a streamed
#: job what drawing them told (:func:`window_draw`; ``None``: it may measure)
WindowJob = tuple[ResolvedJob | None, int, "np.ndarray | Drawn | None"]


def check_window(point: ResolvedPoint, built: Built, window: tuple[int, int],
                 jobs: list[WindowJob]) -> None:
    """Refuse a measurement window in which no open-loop job creates a message (the run
    would measure nothing), naming the field that sets the point's window (:func:`~federation.
    pipeline.points.window_field`).  The run calls it with the messages it generated or drew;
    the preflight (:func:`check_given_window`) with the times a workload's file gives or the
    same draws, so that ``validate`` refuses what ``run`` would, in its words."""
    if not any(_measures(window, times) for _, _, times in jobs):
        raise ConfigError(why_empty(point, built, window, jobs), source=point.source,
                          path=window_field(point))


def _measures(window: tuple[int, int], times: np.ndarray | Drawn | None) -> bool:
    """Whether a job creates a message in ``window`` (undecided, ``None``: it may)."""
    w0, w1 = window
    if isinstance(times, Drawn):
        return times.first is not None and times.first < w1
    if times is not None:
        return bool(((times >= w0) & (times < w1)).any())
    return True


def why_empty(point: ResolvedPoint, built: Built, window: tuple[int, int],
              jobs: list[WindowJob]) -> str:
    """What :func:`check_window` says: of the one job, when it created messages the times
    they span, else its load and what its draws gave; of several, each job's."""
    w0, w1 = window
    span = f"[{format_time(w0 / PS_PER_S)}, {format_time(w1 / PS_PER_S)})"
    head = f"no packet was generated in the measurement window {span}"
    if len(jobs) > 1:
        said = "; ".join(f"{_job_name(point, job)}: {_created(point, built, window, job, m, t)}"
                         for job, m, t in jobs)
        return (f"{head}: no job creates a message in it ({said}); move the window "
                "(stop.warmup, stop.measure)"
                + (", or raise a load" if any(isinstance(t, Drawn) for _, _, t in jobs)
                   else ""))
    job, m, times = jobs[0]
    if isinstance(times, np.ndarray) and times.size:
        return (f"{head}: the workload's {times.size} message(s) are created {_between(times)}, "
                "outside it; move the window (stop.warmup, stop.measure)")
    rate = message_rate(point, built, job)
    drawn = times if isinstance(times, Drawn) else None
    if rate is None:
        return f"{head}: the workload " + (f"creates none in it ({_drew(drawn)})" if drawn
                                           else "created no message at all")
    load, size, per_node = rate
    expected = per_node * m * (w1 - w0) / PS_PER_S
    return (f"{head}: at load {load:g} of a {built.nic_bandwidth:g} B/s NIC with {size:g} B "
            f"messages, the {m} nodes create about {expected:.3g} messages in it"
            + (f" on average ({_drew(drawn)})" if drawn else "")
            + "; raise the load or the NIC bandwidth, or lengthen stop.measure")


def _drew(drawn: Drawn) -> str:
    """What a streamed job's draws gave (none in the window), for :func:`why_empty`."""
    nxt = (f", the next at {format_time(drawn.first / PS_PER_S)}"
           if drawn.first is not None else "")
    return f"with seed {drawn.seed}: {drawn.before} before it, none in it{nxt}"


def _between(times: np.ndarray) -> str:
    """``between T0 and T1``: the span of messages' creation times (ps), as the window's
    refusals quote it."""
    t0, t1 = (format_time(int(x) / PS_PER_S) for x in (times.min(), times.max()))
    return f"between {t0} and {t1}"


def _job_name(point: ResolvedPoint, job: ResolvedJob | None) -> str:
    return (f"job {job.name!r}" if job is not None and point.experiment.jobs is not None
            else job.field if job is not None else "workload")


def _created(point: ResolvedPoint, built: Built, window: tuple[int, int],
             job: ResolvedJob | None, m: int, times: np.ndarray | Drawn | None) -> str:
    """One job's part of :func:`why_empty` for several jobs."""
    if isinstance(times, np.ndarray):
        if not times.size:
            return "no message at all"
        return f"{times.size} message(s) created {_between(times)}"
    rate = message_rate(point, built, job)
    drew = f"({_drew(times)})" if times is not None else "(drawn as it runs)"
    if rate is None:
        return f"none in it {drew}"
    start = job.start_ps if job is not None else 0
    inside = max(0, window[1] - max(window[0], start))
    return (f"about {rate[2] * m * inside / PS_PER_S:.3g} messages in it at load {rate[0]:g} "
            f"on average {drew}")


def check_given_window(point: ResolvedPoint, built: Built, placed: Placed) -> None:
    """The run's refusals of traffic that measures nothing, before any point runs: a window
    (``stop.measure``) in which no open-loop job creates a message (:func:`check_window`),
    or a ``stop.messages`` more than the messages after the warm-up.  A job's messages are
    those whose times the file gives
    (:meth:`~federation.plugin.components.Workload.message_times`: the ``messages``
    workload), or a streamed job's (``synthetic``) drawn from the point's seed as the run
    draws them (:func:`window_draw`, the run's own check).  The run finds either only once
    it has built the machine and generated the messages; a job whose times only generating
    tells (a workload generated whole), or an engine that draws its traffic its own way
    (:meth:`~federation.plugin.components.Engine.run_point`), leaves the check to the run."""
    stop = point.experiment.stop
    jobs = point_jobs(point)
    if any(j.closed_loop for j in jobs):
        return
    warm = seconds_to_ps(stop.warmup)
    horizon = warm + seconds_to_ps(stop.measure or 0)
    own_draws = type(point.engine).run_point is not Engine.run_point
    given: list[tuple[PlacedJob, np.ndarray | None]] = []  # None: drawn once all are known
    for pj in placed.jobs:
        job, m = pj.job, int(pj.nodes.shape[0])
        if stop.measure is not None and streams(job.workload):
            if own_draws:
                return
            given.append((pj, None))
            continue
        ctx = workload_context(point, built.network, max(1, horizon - job.start_ps),
                               built.nic_bandwidth, np.random.default_rng(0), job,
                               None if pj.whole else pj.nodes)
        try:
            times = job.workload.message_times(ctx)
        except ConfigError as exc:
            raise relocate(exc, point, job, m) from None
        if times is None:
            return
        given.append((pj, np.asarray(times, dtype=np.int64) + job.start_ps))
    if stop.messages is not None:  # one open-loop job (check_jobs), generated whole
        pj, times = given[0]
        times = np.asarray(times)
        after = np.sort(times[times >= warm])  # on the machine's clock, as the run
        if after.size < stop.messages:
            raise ConfigError(too_few(pj.job.workload, int(after.size), stop.messages),
                              source=point.source, path=window_field(point))
        # the run ends at the N-th message after the warm-up: none listed later is sent
        _check_late_message(point, built, pj, int(after[stop.messages - 1]), horizon)
        return
    late = [(int(t.max()), pj) for pj, t in given if t is not None and t.size]
    if late:
        at, pj = max(late, key=lambda x: x[0])
        _check_late_message(point, built, pj, at, horizon)
    if any(t is not None and int(t.max(initial=0)) >= TIME_LIMIT_PS for _, t in given):
        return  # the run refuses a message past the clock first (check_traffic)
    window = (warm, horizon)
    seen: list[WindowJob] = [(pj.job, int(pj.nodes.shape[0]), t) if t is not None
                             else _drawn(point, built, window, pj) for pj, t in given]
    if len(seen) == 1 and given[0][1] is not None:  # the run's one-job path (check_traffic)
        seen = [(None, built.network.n_nodes, seen[0][2])]
    check_window(point, built, window, seen)


def _check_late_message(point: ResolvedPoint, built: Built, pj: PlacedJob, at: int,
                        horizon: int) -> None:
    """The last message a file lists that the run sends (``at`` ps, of job ``pj``), when
    after the traffic's end (such messages are sent too): followed along the longest route
    as the build follows a packet created at the end
    (:func:`~federation.pipeline.bounds.check_route_clock`).  A message at 8.79 s after a
    1 us window passed ``validate`` and stopped the run at the clock's end."""
    if horizon < at < TIME_LIMIT_PS:  # past the clock: refused by the run's own check first
        check_route_clock(point, built.network, built.tables, built.links,
                          built.nic_bandwidth, built.program,
                          last=(at / PS_PER_S, pj.job.workload_field))


def _drawn(point: ResolvedPoint, built: Built, window: tuple[int, int],
           pj: PlacedJob) -> WindowJob:
    """A streamed job as the window check sees it: its messages drawn from its own stream,
    as the run draws them (:func:`streamed`)."""
    job, m = pj.job, int(pj.nodes.shape[0])
    state = job_traffic_stream(point, job.index).bit_generator.state
    batches = drawn_batches(point, built, window[1], state, job,
                            None if pj.whole else pj.nodes)
    return job, m, window_draw(point, built, window, job, m, batches)


def too_few(workload: Workload, after: int, n: int) -> str:
    """``stop.messages`` that the workload's messages after the warm-up do not reach (its
    load, when it states one, could raise them)."""
    return (f"the workload creates only {after} of the {n} messages after the warm-up "
            f"(stop.warmup) before the end of {CLOCK_LIMIT}; lower stop.messages"
            + (" or raise the load" if workload.offered_load() is not None else ""))


def workload_context(point: ResolvedPoint, net: Network, horizon: int, nic_bw: float,
                     rng: np.random.Generator, job: ResolvedJob | None = None,
                     nodes: np.ndarray | None = None) -> WorkloadContext:
    """What a workload reads to generate traffic before ``horizon`` ps: the whole machine, or
    with ``nodes`` (a job's machine nodes in order) the job's view of it."""
    name = job.name if job is not None and point.experiment.jobs is not None else None
    names = tuple(class_names(point))
    if nodes is None:
        return WorkloadContext(net, point.machine.machine, point.experiment, horizon, nic_bw,
                               rng, job=name, class_names=names)
    return WorkloadContext(job_view(net, nodes), point.machine.machine, point.experiment,
                           horizon, nic_bw, rng, nodes=nodes, machine_network=net,
                           job=name, class_names=names)


def generate_n_messages(point: ResolvedPoint, net: Network, nic_bw: float, warm: int, n: int,
                        rng: np.random.Generator, job: ResolvedJob | None = None,
                        nodes: np.ndarray | None = None) -> tuple[Messages, tuple[int, int]]:
    """Generate until ``n`` messages exist after the warm-up; the window closes at the n-th.
    The messages are in the workload's node numbers (the job's, with ``nodes``)."""
    workload = job.workload if job is not None else point.workload
    m = net.n_nodes if nodes is None else int(nodes.shape[0])
    span = messages_span(point, nic_bw, warm, n, job, m)
    state = rng.bit_generator.state
    while True:
        rng.bit_generator.state = state
        msgs = workload.generate(workload_context(point, net, warm + span, nic_bw, rng, job,
                                                  nodes))
        after = np.nonzero(msgs.time_ps >= warm)[0]
        if after.size >= n:
            cut = after[n - 1]
            end = int(msgs.time_ps[cut]) + 1
            m = sliced(msgs, None, int(cut) + 1)
            return m, (warm, end)
        if warm + span >= TIME_LIMIT_PS - 1:
            raise ConfigError(too_few(workload, int(after.size), n),
                              path=window_field(point))
        span = min(2 * span, TIME_LIMIT_PS - 1 - warm)


def messages_span(point: ResolvedPoint, nic_bw: float, warm: int, n: int,
                  job: ResolvedJob | None, m: int) -> int:
    """The span (ps after the warm-up) over which :func:`generate_n_messages` first generates
    ``n`` messages on ``m`` nodes: half as long again as their time at the workload's load
    (0.5 when it states none), within the clock.  A load whose messages would not all be
    created before the end of the clock is refused here, before anything is generated, by
    ``run`` and ``validate`` alike (:func:`whole_horizon`)."""
    workload = job.workload if job is not None else point.workload
    load = workload.offered_load() or 0.5
    per_node_rate = load * nic_bw / float(point.machine.machine.packet_size)  # an estimate
    rate = message_rate(point, float(nic_bw), job)
    if rate is not None:
        load, size, per_node = rate
        expected = per_node * m * (TIME_LIMIT_PS - 1 - warm) / PS_PER_S
        if expected < n:
            raise ConfigError(
                f"at load {load:g} of a {nic_bw:g} B/s NIC with {size:g} B messages, the {m} "
                f"nodes create about {expected:.3g} messages after the warm-up before the end "
                f"of {CLOCK_LIMIT}, fewer than stop.messages ({n}); lower stop.messages or "
                "raise the load", source=point.source, path=stop_field(point))
    span = seconds_to_ps(1.5 * n / max(per_node_rate * m, 1e-30)) + 1
    return min(span, TIME_LIMIT_PS - 1 - warm)


def whole_horizon(point: ResolvedPoint, built: Built, job: ResolvedJob, m: int) -> int | None:
    """The horizon (ps from the job's start) over which the run first generates the open-loop
    ``job``'s messages whole (:meth:`Workload.generate`) on its ``m`` nodes, or ``None`` when
    it streams them (:meth:`Workload.batches`).  The preflight gives it to
    :meth:`Workload.check`, so that a workload refuses there, in ``validate`` as in ``run``,
    what its ``generate`` would refuse (the synthetic workload: more messages than are
    generated whole)."""
    stop = point.experiment.stop
    warm = seconds_to_ps(stop.warmup)
    closed = any(j.closed_loop for j in point_jobs(point))
    if stop.measure is None:  # stop.messages: one open-loop job (check_jobs)
        if closed:
            return None
        return warm + messages_span(point, built.nic_bandwidth, warm, stop.messages or 0,
                                    job, m)
    if not closed and streams(job.workload):
        return None
    return max(1, warm + seconds_to_ps(stop.measure) - job.start_ps)


def on_machine(msgs: Messages, nodes: np.ndarray | None, start_ps: int = 0,
               cls: int | None = None) -> Messages:
    """A job's messages in the machine's node numbers, ``start_ps`` later, those without a
    class of their own in the job's class ``cls`` (``None``: the job names none)."""
    if cls is not None:
        own = msgs.cls if msgs.cls is not None else np.full(msgs.count, -1, np.int16)
        msgs = Messages(msgs.time_ps, msgs.src, msgs.dst, msgs.size,
                        np.where(own >= 0, own, cls).astype(np.int16))
    if nodes is None and start_ps == 0:
        return msgs
    src = msgs.src if nodes is None else nodes[msgs.src].astype(np.int32)
    dst = msgs.dst if nodes is None else nodes[msgs.dst].astype(np.int32)
    return Messages(msgs.time_ps + start_ps, src, dst, msgs.size, msgs.cls)


def class_names(point: ResolvedPoint) -> list[str]:
    """``machine.qos``'s traffic classes (a class's number is its position)."""
    return list(point.machine.qos.class_names())


def job_class(point: ResolvedPoint, job: ResolvedJob | None) -> int | None:
    """The class number ``job`` gives its packets (``jobs[i].class``, ``classes.workload`` /
    ``classes.background``), ``None`` when it names none or the machine has one class (the
    names are checked by the jobs stage, ``check_classes``)."""
    names = class_names(point)
    if job is None or len(names) <= 1:
        return None
    cls, _, _ = point.experiment.class_fields(job.field)
    return names.index(cls) if cls is not None else None


def sliced(m: Messages, a: int | None, b: int | None) -> Messages:
    """Messages ``a:b`` of ``m`` (their classes too)."""
    return Messages(m.time_ps[a:b], m.src[a:b], m.dst[a:b], m.size[a:b],
                    m.cls[a:b] if m.cls is not None else None)


def merged_batches(streams: list[Batches]) -> Batches:
    """Several time-ordered batch streams as one: every message before the earliest ``end``
    of the streams' current batches goes out, sorted as :meth:`Messages.sorted` sorts (by
    time, then source node), the rest waits."""
    if len(streams) == 1:
        return streams[0]

    def batches() -> Iterator[tuple[int, Messages]]:
        its = [s() for s in streams]
        ends = [0] * len(its)
        held: list[Messages] = [no_messages() for _ in its]
        live = [True] * len(its)

        def pull(i: int) -> None:
            got = next(its[i], None)
            if got is None:
                live[i], ends[i] = False, TIME_LIMIT_PS
                return
            ends[i] = int(got[0])
            held[i] = join([held[i], got[1]])

        for i in range(len(its)):
            pull(i)
        while True:
            end = min(ends)
            out = []
            for i, m in enumerate(held):
                cut = int(np.searchsorted(m.time_ps, end, side="left"))
                out.append(sliced(m, None, cut))
                held[i] = sliced(m, cut, None)
            yield end, join(out).sorted()
            for i in range(len(its)):
                if live[i] and ends[i] == end:
                    pull(i)
            if not any(live) and not any(m.count for m in held):
                return
    return batches


def join(parts: list[Messages]) -> Messages:
    parts = [m for m in parts if m.count]
    if not parts:
        return no_messages()
    if len(parts) == 1:
        return parts[0]
    cls = None
    if any(m.cls is not None for m in parts):  # a message without a class of its own: -1
        cls = np.concatenate([m.cls if m.cls is not None else np.full(m.count, -1, np.int16)
                              for m in parts]).astype(np.int16)
    return Messages(*(np.concatenate([getattr(m, f) for m in parts])
                      for f in ("time_ps", "src", "dst", "size")), cls)
