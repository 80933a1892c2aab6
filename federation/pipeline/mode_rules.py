"""The rule of which workloads an experiment's ``collective_modes`` apply to, shared by two
stages: the loader (an entry no point of a sweep runs, :mod:`.load`) and the traffic stage
(applying and checking one point's entries, :mod:`.routing_modes`).  Here, below the stages,
because a stage may not import another."""

from __future__ import annotations

from typing import TYPE_CHECKING

from federation.pipeline.points import point_jobs

if TYPE_CHECKING:
    from federation.pipeline.points import ResolvedJob, ResolvedPoint
    from federation.plugin.components import Workload

#: jobs (or groups of sweep points) a refusal of ``collective_modes`` describes one by one
MAX_LISTED = 4


def job_modes(point: ResolvedPoint, job: ResolvedJob) -> tuple[str | None, dict[str, str],
                                                                str, str]:
    """The job's ``routing_mode`` and ``collective_modes`` (its own where it gives them, else
    the experiment's) and the fields they came from."""
    exp = point.experiment
    mode, coll = exp.routing_mode, dict(exp.collective_modes)
    mode_at, coll_at = "routing_mode", "collective_modes"
    if exp.jobs is not None and job.field.startswith("jobs["):
        j = exp.jobs[job.index]
        if j.routing_mode is not None:
            mode, mode_at = j.routing_mode, f"{job.field}.routing_mode"
        if j.collective_modes is not None:
            coll, coll_at = dict(j.collective_modes), f"{job.field}.collective_modes"
    return mode, coll, mode_at, coll_at


def mode_collectives(workload: Workload) -> list[str]:
    """The collectives whose ``collective_modes`` entry applies to ``workload``'s sends: the
    ``collective`` workload's ``op``, a workload that is one collective (``allreduce``); none
    for any other.  A trace's or a skeleton's collectives are sends marked as a collective's
    (``RankPrograms.op_coll``, for ``class_by``) but not by which, so no entry finds them.
    Here, below the stages, as the traffic stage (:mod:`.routing_modes`: applying and
    checking a point's entries) and the loader (across a sweep's points) use this one rule."""
    from federation.programs.collectives import ALGORITHMS

    if workload.name == "collective":
        return [str(getattr(workload.params, "op", ""))]
    return [workload.name] if workload.name in ALGORITHMS else []


def collective_modes_rule() -> str:
    """Which workloads ``collective_modes`` apply to (the installed kinds), for messages."""
    from federation.plugin.registry import active_plugins
    from federation.programs.collectives import ALGORITHMS

    named = sorted(n for n in active_plugins().workloads.items if n in ALGORITHMS)
    kinds = ", ".join(["collective (to its op)", *named[:-1]]) + \
        (f" and {named[-1]}" if named else "")
    return (f"collective_modes apply only to workloads of kind {kinds}: a skeleton's or a "
            "program file's collectives are not told apart by collective and take "
            "routing_mode")


def unreached_collective(point: ResolvedPoint, op: str) -> tuple[list[str], bool] | None:
    """``None`` when a job of ``point`` that takes the experiment's ``collective_modes`` (a
    job with its own does not) runs ``op``; else why none does, one reason a job (past
    :data:`MAX_LISTED` counted), and whether a job takes no ``collective_modes`` at all (the
    refusal then states :func:`collective_modes_rule`)."""
    jobs = point_jobs(point)
    takers = {j.index for j in jobs if job_modes(point, j)[3] == "collective_modes"}
    if any(op in mode_collectives(j.workload) for j in jobs if j.index in takers):
        return None
    jobs_form = point.experiment.jobs is not None
    why, rule = [], False
    for j in jobs:
        who = f"job {j.name!r}" if jobs_form else f"{j.field} {j.workload.name!r}"
        has = mode_collectives(j.workload)
        if j.index not in takers:
            why.append(f"{who} gives its own collective_modes")
        elif has:
            why.append(f"{who} runs {', '.join(has)}")
        else:
            why.append(f"{who} takes no collective_modes")
            rule = True
    if len(why) > MAX_LISTED:
        why[MAX_LISTED:] = [f"{len(why) - MAX_LISTED} more jobs"]
    return why, rule


def unreached_message(op: str, why: str, rule: bool, where: str = "") -> str:
    """The refusal of ``collective_modes.<op>`` no job runs (``why``; ``where``: points)."""
    return (f"no workload of the experiment runs {op}{where} ({why}): the mode would apply "
            "to no message" + (f"; {collective_modes_rule()}" if rule else ""))
