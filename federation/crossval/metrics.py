"""The figures a validation suite compares, computed from what ``federation run`` writes.

Every figure comes from the run's own outputs (the results document's summary and the
per-message table), the same for every engine, so a suite compares exactly what a user of
``federation run`` would read.  See :data:`federation.crossval.models.METRICS` for the list.
"""

from __future__ import annotations

import numpy as np

from federation.crossval.models import CLASS_METRICS, MetricSpec
from federation.results.model import PointResult


def figure(metric: MetricSpec, point: PointResult, messages: dict[str, np.ndarray]) -> float | None:
    """The figure of ``metric`` for one run; ``None`` where the run gives none (e.g. a message
    never completed).  A message index beyond the run's messages raises :class:`IndexError`."""
    s = point.summary
    name = metric.metric
    if name == "mean_completion_ns":
        return s.message_completion_ns_mean
    if name == "latency_mean_ns":
        return s.latency_ns.mean
    if name == "accepted_load":
        return s.accepted_load
    if name == "program_completion_ns":
        return s.programs.completion_ns if s.programs is not None else None
    if name in CLASS_METRICS:
        cls = next((c for c in s.classes or [] if c.name == metric.traffic_class), None)
        if cls is None:
            return None
        return cls.latency_ns.mean if name == "class_latency_mean_ns" else float(cls.packets)
    if not messages:  # an engine without a per-message table (SST)
        return None
    done = messages["completed_ps"]
    created = messages["created_ps"]
    if name == "message_completion_ns":
        i = metric.message
        assert i is not None
        if i >= done.shape[0]:
            raise IndexError(f"message {i} does not exist (the run has {done.shape[0]} messages)")
        return float(messages["completion_ps"][i]) / 1e3 if done[i] >= 0 else None
    if done.size == 0 or (done < 0).any():
        return None
    makespan_ps = int(done.max()) - int(created.min())
    if name == "makespan_ns":
        return makespan_ps / 1e3
    if name == "throughput_gb_s":
        return float(messages["size"].sum()) / (makespan_ps / 1e12) / 1e9 if makespan_ps else None
    raise ValueError(f"unknown metric {name!r}")  # pragma: no cover - the schema lists them
