"""Per-message routing modes and the routing controller of a point: checked before the run,
applied to the rank programs' sends, handed to the engine.

A rank-program message may carry a routing mode, as Cray's uGNI calls take one per message
(``MPICH_GNI_ROUTING_MODE`` for a whole job, ``MPICH_GNI_A2A_ROUTING_MODE`` for alltoall).  A
message's mode, first found of:

1. its send's own (``RankPrograms.op_mode``: a workload or program that names one);
2. its collective's (``collective_modes: {alltoall: ADAPTIVE_1}``; the ``collective``
   workload's sends are all of its ``op``, the ``allreduce`` workload's of allreduce; a
   skeleton's or a program file's collectives are not told apart by collective, so they take
   3.), an entry that would reach no message (a job's for a collective its workload does
   not run this way, the experiment's for one no job runs) refused before the run;
3. its job's ``routing_mode``, else the experiment's;
4. none (-1): the routing's configured mode.

A routing controller (``routing_controller:``, :class:`~federation.plugin.components.
Controller`) then chooses each message's mode at its send, in the loop, from that start.
Every name is checked against the routing's :meth:`~federation.plugin.components.Routing.
modes` before any point runs, naming the field and the routing's modes.

Part of the *traffic* stage.  May import: :mod:`.points` and the layers below the pipeline.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import numpy as np

from federation.errors import ConfigError
from federation.pipeline.mode_rules import (
    collective_modes_rule,
    job_modes,
    mode_collectives,
    unreached_collective,
    unreached_message,
)
from federation.pipeline.points import dotted
from federation.programs.collectives import ALGORITHMS
from federation.programs.model import SEND, RankPrograms

if TYPE_CHECKING:
    from federation.pipeline.points import ResolvedJob, ResolvedPoint
    from federation.plugin.components import Controller


def _applies(point: ResolvedPoint, job: ResolvedJob, op: str, at: str) -> None:
    """Refuse a job's own ``collective_modes`` entry for a collective its workload does not
    run (or runs in a way no entry reaches): it would mark no message, silently."""
    has = mode_collectives(job.workload)
    if op in has:
        return
    w = job.workload.name
    runs = f"runs {', '.join(has)}, not {op}" if has else "takes no collective_modes"
    rule = "" if has else f"; {collective_modes_rule()}"
    raise ConfigError(f"job {job.name!r}: its workload {w!r} {runs}: the mode would apply to "
                      f"no message{rule}", source=point.source, path=at)


#: the fields of a workload's spec that decide which collectives its job's messages take
#: ``collective_modes`` for (:func:`mode_collectives`)
_DECIDING = ("workload", "workload.kind", "workload.op")


def sweep_varies_collectives(point: ResolvedPoint) -> bool:
    """Whether the point's sweep varies which collectives take the experiment's
    ``collective_modes`` (a workload, its kind or op; the jobs, a job, or whether a job gives
    its own ``collective_modes``): then another point of the sweep may run a collective this
    one does not."""
    for axis in point.sweep:
        parts = dotted(str(axis)).split(".")
        if parts[0] != "jobs":
            if ".".join(parts) in _DECIDING:
                return True
        elif len(parts) <= 2 or ".".join(parts[2:]) in (*_DECIDING, "collective_modes"):
            return True
    return False


def _default_applies(point: ResolvedPoint, op: str) -> None:
    """Refuse the experiment's ``collective_modes`` entry for ``op`` when no job that takes
    the experiment's entries (a job with its own ``collective_modes`` does not) runs ``op``:
    the entries are defaults for every job, like MPICH_GNI_A2A_ROUTING_MODE in the
    environment, so a job without ``op`` is no reason to refuse, but no job at all is.

    The entries are defaults for every point of a sweep too: a sweep over the workloads
    (``jobs.bench.workload: [allreduce, alltoall, ...]`` beside ``{alltoall: ADAPTIVE_1}``)
    gives the alltoall mode to the points that run one, so a point whose sweep varies the
    collectives is not refused for lacking ``op``; this check sees one point, and the loader,
    which sees them all, refuses an entry no point of the sweep runs
    (``load._check_collective_modes``)."""
    found = unreached_collective(point, op)
    if found is None or sweep_varies_collectives(point):
        return
    why, rule = found
    raise ConfigError(unreached_message(op, "; ".join(why), rule), source=point.source,
                      path=f"collective_modes.{op}")


def _named(point: ResolvedPoint, modes: list[str], name: str, at: str) -> None:
    if name in modes:
        return
    r = point.routing.name
    known = (f"its modes: {', '.join(modes)}" if modes
             else "it has no modes (aries has: use routing aries)")
    raise ConfigError(f"routing mode {name!r} is not a mode of routing {r!r} ({known})",
                      source=point.source, path=at)


def _collective_entry(point: ResolvedPoint, modes: list[str], op: str, name: str,
                      at: str) -> None:
    """Refuse a ``collective_modes`` entry naming no collective or no mode of the routing."""
    if op not in ALGORITHMS:
        raise ConfigError(f"{op!r} is not a collective (one of "
                          f"{', '.join(sorted(ALGORITHMS))})", source=point.source, path=at)
    _named(point, modes, name, at)


def check_routing_modes(point: ResolvedPoint) -> None:
    """Refuse, before any point runs, a mode name the routing does not have, a collective
    that does not exist, and modes or a controller where nothing would apply them (a
    collective no job runs, no rank programs, an engine other than the native one); resolve
    the controller."""
    from federation.pipeline.points import point_jobs

    exp = point.experiment
    modes = point.routing.modes()
    jobs = point_jobs(point)
    closed = [j for j in jobs if j.closed_loop]
    used = []
    for op, name in exp.collective_modes.items():
        _collective_entry(point, modes, op, name, f"collective_modes.{op}")
        _default_applies(point, op)
        used.append(f"collective_modes.{op}")
    for job in jobs:
        mode, coll, mode_at, coll_at = job_modes(point, job)
        if coll_at != "collective_modes":  # the job's own (the experiment's: checked above)
            for op, name in coll.items():
                _collective_entry(point, modes, op, name, f"{coll_at}.{op}")
                _applies(point, job, op, f"{coll_at}.{op}")
                used.append(f"{coll_at}.{op}")
        if mode is not None:
            _named(point, modes, mode, mode_at)
            used.append(mode_at)
    if exp.routing_controller is not None:
        used.append("routing_controller")
    if not used:
        return
    if not closed:
        raise ConfigError("routing modes and controllers apply to rank-program messages; "
                          "this experiment has no closed-loop workload", source=point.source,
                          path=used[0])
    if point.engine.name != "native":
        raise ConfigError(f"engine {point.engine.name!r} does not take per-message routing "
                          "modes or a routing controller (the native engine does)",
                          source=point.source, path=used[0])
    controller(point)


def controller(point: ResolvedPoint) -> Controller | None:
    """The point's routing controller (``None``: none; resolved with the point's other
    components by the loader), checked against the routing's modes."""
    ctl = point.controller
    if ctl is None:
        return None
    kind = type(ctl).name
    try:
        ctl.check(point.routing.modes())
    except ValueError as exc:
        raise ConfigError(f"routing controller {kind!r} with routing "
                          f"{point.routing.name!r}: {exc}", source=point.source,
                          path="routing_controller") from None
    if type(ctl).function is None:
        raise ConfigError(f"routing controller {kind!r} has no compiled function "
                          "(Controller.function)", source=point.source,
                          path="routing_controller.kind")
    return ctl


def with_modes(point: ResolvedPoint, job: ResolvedJob, progs: RankPrograms) -> RankPrograms:
    """``progs`` (one job's) with every send's mode by the rules of the module docstring;
    unchanged when neither the job nor the experiment names one."""
    mode, coll, _, _ = job_modes(point, job)
    for op in mode_collectives(job.workload):
        if op in coll:
            mode = coll[op]
    if mode is None:
        return progs
    names = list(progs.mode_names or [])
    if mode not in names:
        names.append(mode)
    own = progs.op_mode if progs.op_mode is not None else np.full(progs.n_ops, -1, np.int8)
    fill = (own < 0) & (progs.op_kind == SEND)
    op_mode = np.where(fill, names.index(mode), own).astype(np.int8)
    return dataclasses.replace(progs, op_mode=op_mode, mode_names=names)


def controller_state(point: ResolvedPoint, n_nodes: int, packet_size: int
                     ) -> tuple[Any, tuple] | None:
    """``(decide, state)`` of the point's controller for the engine, ``None`` without one."""
    ctl = controller(point)
    if ctl is None:
        return None
    return type(ctl).function, tuple(ctl.state(n_nodes, point.routing.modes(), packet_size))
