"""A resolved point's rank programs: built once, checked against its machine, kept for the run.

Rank programs used to be built only when their point ran, so ``federation validate`` called a
sweep valid whose program file was missing, malformed, cyclic or deadlocking, and the sweep
then stopped part-way.  Now :func:`federation.pipeline.point.preflight` builds every closed-loop
point's programs (:meth:`ProgramCache.check`) and runs the one set of checks
(:func:`~federation.programs.checks.check_programs`, with the machine's figures) before any
point runs, for ``validate`` and ``run`` alike.

Building twice would cost a large file's parse twice, so the programs are kept
(:class:`ProgramCache`) by what they depend on (:func:`program_key`): the workload (its class
and parameters), the machine and the seed.  A sweep over a background's load or the routing
builds its programs once.  Kept are the first point's programs (they run next, and their
point's memory check counts them) and others while they fit :data:`CACHE_SHARE` of
``--max-memory``; a program is dropped after the last point that uses it, and one not kept
is built and checked again when its point runs.

While a workload builds, :class:`~federation.programs.reading.OpBudget` holds the operations
that ``--max-memory`` leaves room for, so readers and the built-in workloads refuse an
oversized program as they reach its size, not after allocating it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from federation.errors import ConfigError
from federation.models.limits import TIME_LIMIT_PS
from federation.models.units import clock_ps
from federation.pipeline.bounds import built_ring_site, check_point_memory, with_rings
from federation.pipeline.points import (
    MemoryEstimate,
    Placed,
    ResolvedJob,
    figure_origin,
    in_job,
    job_traffic_stream,
    machine_prefix,
    point_jobs,
)
from federation.pipeline.rings import Smallest, program_smallest, smallest_packet
from federation.programs.checks import MAX_MESSAGE_BYTES, MachineFigures, check_programs
from federation.programs.model import RankPrograms
from federation.programs.reading import OpBudget, limited_ops

if TYPE_CHECKING:
    from federation.engine.program_arrays import ProgramFigures
    from federation.pipeline.points import Built, ResolvedPoint

#: bytes of engine state per operation (operation, message, 3 flows, matching slots), an
#: upper bound used by the memory check; reading a file holds less per operation
PROGRAM_BYTES_PER_OP = 400
#: programs beyond the first point's are kept while they fit this share of --max-memory
CACHE_SHARE = 16


def program_key(point: ResolvedPoint, job: ResolvedJob | None = None,
                nodes: np.ndarray | None = None) -> str:
    """What a job's programs depend on: the workload's class and parameters, the machine
    (``ctx.network``, ``ctx.machine``; also the checks' figures), the seed and the job's
    position (``ctx.rng``), and the job's nodes in order (``ctx.network``, the job's view;
    ``None``: every node).  Rank-program workloads must not depend on anything else
    (docs/plugins.md)."""
    job = job or closed_jobs(point)[0]
    w = job.workload
    params = w.params.model_dump(mode="json") if getattr(w, "params", None) is not None \
        else None
    where = None if nodes is None else hashlib.sha1(
        np.ascontiguousarray(nodes, dtype=np.int64).tobytes()).hexdigest()
    return json.dumps([f"{type(w).__module__}.{type(w).__qualname__}", params,
                       point.machine.machine.model_dump(mode="json"), point.experiment.seed,
                       job.index, where], sort_keys=True, default=str)


def closed_jobs(point: ResolvedPoint) -> list[ResolvedJob]:
    """The point's closed-loop jobs (rank programs)."""
    return [j for j in point_jobs(point) if j.closed_loop]


def job_nodes(placed: Placed | None, job: ResolvedJob) -> np.ndarray | None:
    """The job's machine nodes in order, ``None`` for a job on every node in node order."""
    if placed is None:
        return None
    pj = placed.of(job)
    return None if pj.whole else pj.nodes


def machine_figures(point: ResolvedPoint, built: Built,
                    n_nodes: int | None = None) -> MachineFigures:
    """The machine's figures :func:`check_programs` compares programs with (``n_nodes``: the
    job's nodes; default every node)."""
    machine = point.machine.machine
    nic = figure_origin(point, "nic.bandwidth" if machine.nic.bandwidth else
                        "links.terminal.bandwidth")
    term = figure_origin(point, "links.terminal.bandwidth")
    return MachineFigures(
        built.network.n_nodes if n_nodes is None else n_nodes, int(machine.packet_size),
        min(int(machine.nic.eager_threshold), MAX_MESSAGE_BYTES),
        float(built.nic_bandwidth), float(built.links["terminal"].bandwidth),
        nic_field=nic.path, terminal_field=term.path)


def program_figures(point: ResolvedPoint, built: Built) -> ProgramFigures:
    """The NIC's protocol figures as the engine takes them, the overheads through the
    clock-range check (naming the file and field that set them)."""
    from federation.engine.program_arrays import ProgramFigures
    from federation.pipeline.rank_programs import intermediate_rule

    machine = point.machine.machine

    def overhead(name: str) -> int:
        o = figure_origin(point, f"nic.{name}")
        return clock_ps(getattr(machine.nic, name), f"nic.{name}", source=o.source,
                        path=o.path)

    return ProgramFigures(int(machine.packet_size),
                          min(int(machine.nic.eager_threshold), MAX_MESSAGE_BYTES),
                          machine.control_packet_bytes(), overhead("send_overhead"),
                          overhead("recv_overhead"), injection_vc=machine.router.injection_vc,
                          via=intermediate_rule(point, built),
                          modes=tuple(point.routing.modes()))


def op_budget(built: Built, max_memory: int) -> OpBudget:
    """The operations ``max_memory`` leaves room for beyond the machine (its network, tables
    and QoS rings)."""
    used = built.memory.total
    spare = max(max_memory - used, 0)
    return OpBudget(spare // PROGRAM_BYTES_PER_OP,
                    f"--max-memory ({max_memory / 2**30:.3g} GiB, less "
                    f"{used / 2**30:.3g} GiB for the machine) at {PROGRAM_BYTES_PER_OP} B per "
                    "operation")


def build_programs(point: ResolvedPoint, built: Built, max_memory: int,
                   job: ResolvedJob | None = None,
                   nodes: np.ndarray | None = None) -> RankPrograms:
    """A closed-loop job's rank programs (default: the point's first), built within the
    operation budget on the job's nodes (``nodes``, in order; ``None``: every node) and
    checked: every refusal names the file (and line) or the workload field.  Their ranks and
    nodes are the job's own; :mod:`.traffic` puts them on the machine's."""
    from federation.pipeline.messages import workload_context

    job = job or closed_jobs(point)[0]
    program_figures(point, built)  # the overheads' clock range, before anything is built
    rng = job_traffic_stream(point, job.index)
    m = built.network.n_nodes if nodes is None else int(nodes.shape[0])
    ctx = workload_context(point, built.network, TIME_LIMIT_PS - 1, built.nic_bandwidth, rng,
                           job=job, nodes=nodes)
    try:
        with limited_ops(op_budget(built, max_memory)):
            progs = job.workload.programs(ctx)
        if not isinstance(progs, RankPrograms):
            raise ConfigError(f"workload {job.workload.name!r} returned "
                              f"{type(progs).__name__}, not RankPrograms", source=point.source,
                              path="workload")
        figures = replace(machine_figures(point, built, m), start_ps=job.start_ps,
                          start_field=job.at("start"))
        check_programs(progs, m, source=progs.source or point.source, path="workload",
                       machine=figures)
    except ConfigError as exc:
        raise in_job(exc, point, job, m) from None
    check_programs_memory(point, built, progs, max_memory, PROGRAM_BYTES_PER_OP * progs.n_ops,
                          f"this point ({progs.n_ops} operations)", job.workload_field)
    return progs


def programs_smallest(point: ResolvedPoint, progs: RankPrograms) -> Smallest:
    """The smallest packet of ``point`` with rank programs ``progs``: theirs
    (:func:`~federation.pipeline.rings.program_smallest`: a message's last packet, a
    zero-byte message's 1 B, ``nic.control_bytes``) or its open-loop jobs'."""
    s = program_smallest(progs, point.machine.machine)
    given = smallest_packet(point)
    return s if s is not None and s.bytes < given.bytes else given


def programs_memory(point: ResolvedPoint, built: Built, progs: RankPrograms,
                    max_memory: int) -> MemoryEstimate:
    """``built``'s estimate with its sliding QoS window's rings counted for the packets of
    ``progs`` too (:func:`programs_smallest`), which the estimate before the build could not
    know; refused as ``qos.window`` when they pass ``max_memory`` beside the network."""
    s = programs_smallest(point, progs)
    if s.bytes >= smallest_packet(point).bytes:
        return built.memory
    return with_rings(built.memory, built.network, point.machine, max_memory,
                      machine_prefix(point), s)


def check_programs_memory(point: ResolvedPoint, built: Built, progs: RankPrograms,
                          max_memory: int, held: int, what: str, path: str) -> MemoryEstimate:
    """The estimate of a point with rank programs ``progs`` (their QoS rings,
    :func:`programs_memory`) and ``held`` bytes of their state and other traffic, refused
    above ``max_memory`` at ``path``, or as ``qos.window`` when it is the rings that do not
    fit beside them (:func:`~federation.pipeline.bounds.check_point_memory`)."""
    est = replace(programs_memory(point, built, progs, max_memory), packets=held)
    site = built_ring_site(point.machine, built.network, programs_smallest(point, progs))
    check_point_memory(est, max_memory, what, point.source, path, site, machine_prefix(point))
    return est


def nbytes(progs: RankPrograms) -> int:
    """Memory ``progs`` holds (arrays, and about 64 B per label)."""
    arrays = sum(int(getattr(progs, f).nbytes) for f in (
        "rank_first", "op_kind", "op_peer", "op_bytes", "op_tag", "op_time_ps", "dep_before",
        "dep_after", "dep_kind"))
    extra = 64 * len(progs.op_label) if progs.op_label is not None else 0
    if progs.op_line is not None:
        extra += int(progs.op_line.nbytes)
    return arrays + extra


class ProgramCache:
    """Checked programs by :func:`program_key`, from the preflight to the points' runs."""

    def __init__(self, max_memory: int) -> None:
        self.max_memory = max_memory
        self._kept: dict[str, RankPrograms] = {}
        self._bytes = 0
        self._uses: dict[str, int] = {}  # jobs of the preflight's points not yet run, per key
        self._first: str | None = None

    def check(self, point: ResolvedPoint, built: Built, placed: Placed | None = None) -> None:
        """The preflight of one point: its routing modes and controller
        (:func:`~federation.pipeline.routing_modes.check_routing_modes`), then build and
        check its closed-loop jobs' programs (once per key), and keep them for its run when
        they fit."""
        from federation.pipeline.routing_modes import check_routing_modes

        check_routing_modes(point)
        for job in closed_jobs(point):
            nodes = job_nodes(placed, job)
            key = program_key(point, job, nodes)
            seen = key in self._uses
            self._uses[key] = self._uses.get(key, 0) + 1
            if seen:
                continue
            progs = build_programs(point, built, self.max_memory, job, nodes)
            size = nbytes(progs)
            if self._first is None or self._bytes + size <= self.max_memory // CACHE_SHARE:
                self._first = self._first or key
                self._kept[key] = progs
                self._bytes += size if key != self._first else 0

    def get(self, point: ResolvedPoint, built: Built) -> RankPrograms:
        """The programs of a point's first closed-loop job (the one workload of the old
        form), as :meth:`jobs` gives them."""
        return self.jobs(point, built)[closed_jobs(point)[0].index]

    def jobs(self, point: ResolvedPoint, built: Built,
             placed: Placed | None = None) -> dict[int, RankPrograms]:
        """The programs of a point about to run, by job: kept ones, else built and checked
        now; a key's programs are let go after the last job of the preflight that uses
        them."""
        out = {}
        for job in closed_jobs(point):
            nodes = job_nodes(placed, job)
            out[job.index] = self._one(point, built, job, nodes)
        return out

    def peek(self, point: ResolvedPoint, built: Built,
             placed: Placed | None = None) -> dict[int, RankPrograms]:
        """The programs of a point's closed-loop jobs, kept or built, without counting a use
        (the two-opt search of the preflight reads them before the run does)."""
        out = {}
        for job in closed_jobs(point):
            nodes = job_nodes(placed, job)
            progs = self._kept.get(program_key(point, job, nodes))
            out[job.index] = progs if progs is not None else build_programs(
                point, built, self.max_memory, job, nodes)
        return out

    def _one(self, point: ResolvedPoint, built: Built, job: ResolvedJob,
             nodes: np.ndarray | None) -> RankPrograms:
        key = program_key(point, job, nodes)
        progs = self._kept.get(key)
        if progs is None:
            progs = build_programs(point, built, self.max_memory, job, nodes)
        left = self._uses.get(key)
        if left is not None:
            if left <= 1:
                del self._uses[key]
                if self._kept.pop(key, None) is not None and key != self._first:
                    self._bytes -= nbytes(progs)
            else:
                self._uses[key] = left - 1
        return progs


__all__ = ["CACHE_SHARE", "PROGRAM_BYTES_PER_OP", "ProgramCache", "build_programs",
           "check_programs_memory", "machine_figures", "program_figures", "program_key",
           "programs_memory"]


def intermediate_rule(point: ResolvedPoint, built: Built) -> str:
    """How program packets get their intermediates: they are born inside the loop, where a
    routing's Python ``intermediates`` cannot run, so the loop draws by the routing's
    ``intermediate_rule``.  A routing that overrides ``intermediates`` without saying its
    rule (defined in the same class or below) is refused, naming it, rather than run
    without its intermediates."""
    routing = point.routing
    mro = type(routing).__mro__
    draws = next(c for c in mro if "intermediates" in c.__dict__)
    says = next(c for c in mro if "intermediate_rule" in c.__dict__)
    rule = routing.intermediate_rule(built.tables) if issubclass(says, draws) else None
    if rule in ("none", "group", "router", "node"):
        return rule
    raise ConfigError(
        f"{built.owner or f'routing {routing.name!r}'}: the routing draws its packets' "
        "intermediates in Python (Routing.intermediates) with no intermediate_rule for "
        "packets born inside the compiled loop, as rank programs' are: give the rule, or "
        "draw them in the routing program's inject function (docs/plugins.md)",
        source=point.source, path="routing")
