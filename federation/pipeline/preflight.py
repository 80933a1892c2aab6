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
from federation.pipeline.bounds import check_clock, check_machine_memory
from federation.pipeline.points import MemoryEstimate, ResolvedPoint, machine_prefix


def check_point(point: ResolvedPoint) -> None:
    """The checks of ``point`` that need no allocation: the clock range of its figures and
    its stop rule."""
    check_clock(point)
    if point.workload.closed_loop:
        check_stop(point)


def machine_estimate(point: ResolvedPoint, max_memory: int) -> MemoryEstimate | None:
    """The memory of ``point``'s network and tables from the topology's counts, refused above
    ``max_memory`` before anything is allocated; ``None`` when the topology cannot count
    before building (the build then checks the network it made)."""
    return check_machine_memory(point.machine, max_memory, machine_prefix(point))
def check_stop(point: ResolvedPoint) -> None:
    """``stop.messages`` counts open-loop messages; rank programs run until they finish and
    would ignore it without a word, so it is refused."""
    stop = point.experiment.stop
    if stop.messages is not None:
        path = "sweep.stop.messages" if "stop.messages" in point.sweep else "stop.messages"
        raise ConfigError(f"stop.messages ({stop.messages}) counts open-loop messages, but "
                          f"workload {point.workload.name!r} is rank programs, which run until "
                          "they finish; drop stop.messages (with a background, give "
                          "stop.measure: its horizon)", source=point.source, path=path)
