"""Per-class bytes of every port sampled over a run (``outputs.link_series``).

The native driver stops its loop at every multiple of the interval, as it stops at the edges
of the measurement window (the loop handles every event before that time and none after, so
stopping there changes nothing), and reads ``Sim.port_class_bytes``: the bytes each port
started sending, per traffic class.  Only the differences that are not zero are kept, so a
long run of a big machine holds what its links carried, not ports x intervals.

Each sample costs a return from the compiled loop and a pass over every port's counters
(about 50 us on a 324-port machine, more on a big one) whether or not anything moved, so the
number of samples, not the bytes kept, is what a too-short interval makes explode: a 2 us run
sampled every 1 ps took two minutes instead of 1.5 s.  :data:`MAX_LINK_SAMPLES` bounds it:
the loader refuses an interval that would exceed it over a run whose length the stop rule
gives, and the sampler stops a run whose length was not known before (rank programs,
``stop.messages``) when it reaches it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from federation.errors import ConfigError
from federation.models.units import format_time

#: most samples one run's link series may take (per port: every sample reads every port);
#: a 1 ms run sampled every 1 ns takes 1e6, finer than any link's packet time
MAX_LINK_SAMPLES = 1_000_000
#: the field every refusal of the limit names
INTERVAL_FIELD = "outputs.link_series.interval"


def samples(run_ps: int, interval_ps: int) -> int:
    """Samples a run of ``run_ps`` takes at one every ``interval_ps`` (the last interval
    ends at the run's end, so a partial one counts)."""
    return -(-run_ps // interval_ps)


def shortest_interval(run_ps: int) -> str:
    """The shortest interval that keeps a run of ``run_ps`` within :data:`MAX_LINK_SAMPLES`,
    as a time to write in the file."""
    return format_time(max(1, samples(run_ps, MAX_LINK_SAMPLES)) / 1e12)


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
        self.taken = 0

    def take(self, at: int, counts: np.ndarray) -> None:
        """Keep the counters' changes since the last sample; refuse the run past
        :data:`MAX_LINK_SAMPLES` (a run whose length the loader could not check)."""
        self.taken += 1
        if self.taken > MAX_LINK_SAMPLES:
            raise ConfigError(
                f"{format_time(self.interval / 1e12)} reached the limit of {MAX_LINK_SAMPLES} "
                f"samples of every port a run may take at {format_time(at / 1e12)} of simulated "
                "time, and the run goes on (each sample stops the engine to read every port's "
                "counters; the length of this run was not known before it started); give a "
                "longer interval", path=INTERVAL_FIELD)
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
