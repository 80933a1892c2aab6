"""Per-class bytes of every port sampled over a run (``outputs.link_series``).

The native driver stops its loop at every multiple of the interval, as it stops at the edges
of the measurement window (the loop handles every event before that time and none after, so
stopping there changes nothing), and reads ``Sim.port_class_bytes``: the bytes each port
started sending, per traffic class.  Only the differences that are not zero are kept, so a
long run of a big machine holds what its links carried, not ports x intervals.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class LinkSeries:
    """Per-interval bytes by port and class (:attr:`RawResult.link_series`): interval ``i``
    is ``[end[i] - interval, end[i])`` (the last one ends at the run's end)."""

    interval_ps: int
    end_ps: np.ndarray
    port: np.ndarray
    cls: np.ndarray
    bytes: np.ndarray


class Sampler:
    """The per-class byte counters read at every multiple of ``interval`` ps, kept as the
    differences that are not zero."""

    def __init__(self, interval: int, n_ports: int, n_classes: int) -> None:
        self.interval = interval
        self.next = interval
        self.C = n_classes
        self.last = np.zeros(n_ports * n_classes, dtype=np.int64)
        self.parts: list[tuple[np.ndarray, ...]] = []

    def take(self, at: int, counts: np.ndarray) -> None:
        delta = counts - self.last
        nz = np.nonzero(delta)[0]
        if nz.size:
            self.parts.append((np.full(nz.size, at, np.int64), nz // self.C, nz % self.C,
                               delta[nz].copy()))
        self.last = counts.copy()

    def result(self) -> LinkSeries:
        cols = [np.concatenate([p[i] for p in self.parts]) if self.parts
                else np.zeros(0, np.int64) for i in range(4)]
        return LinkSeries(self.interval, *cols)
