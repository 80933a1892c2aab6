"""Per-class bytes of every port sampled over a run (``outputs.link_series``).

The native driver stops its loop at every multiple of the interval, as it stops at the edges
of the measurement window (the loop handles every event before that time and none after, so
stopping there changes nothing), and reads ``Sim.port_class_bytes``: the bytes each port
started sending, per traffic class.  Only the differences that are not zero are kept, so a
long run of a big machine holds what its links carried, not ports x intervals.

Each sample costs a return from the compiled loop and a pass over every port's counters
(about 50 us on a 324-port machine, more on a big one) whether or not anything moved, so the
number of samples, not the bytes kept, is what a too-short interval makes explode: a 2 us run
sampled every 1 ps took two minutes instead of 1.5 s.  :data:`MAX_LINK_SAMPLES` bounds a
run's samples, the last one (at the run's end) included:

* an open-loop run with ``stop.measure`` has a known part, ``stop.warmup + stop.measure``
  (``Sampler.known_ps``), and a drain after it whose length only the run tells (until the
  measured packets are delivered).  The loader refuses an interval that would take more than
  the limit over the known part, so every sample before its end is taken; the drain is
  sampled at the interval while the limit allows, and past that the rest of the run is one
  last interval, from the last sample to the run's end (``LinkSeries.coarse_from_ps``, the
  summary's ``link_series_coarse_from_ns``).  Such a run is never refused after it started:
  fuzz 44 found a 6 us window sampled every 10 ps refused at 10 us of its 13 us drain.
* a run whose whole length only the run tells (rank programs, ``stop.messages``) is refused
  when its samples reach the limit and it goes on.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from federation.errors import ConfigError
from federation.models.limits import TIME_LIMIT_PS
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
    as a time to write in the file: rounded up to the 4 significant digits
    :func:`~federation.models.units.format_time` shows, so that the advice, read back, is
    not a hair too short (12344 ps shown as 12.34ns would take more than the limit)."""
    ps = max(1, samples(run_ps, MAX_LINK_SAMPLES))
    step = 10 ** max(0, len(str(ps)) - 4)
    return format_time(-(-ps // step) * step / 1e12)


@dataclass
class LinkSeries:
    """Per-interval bytes by port and class (:attr:`RawResult.link_series`): a row's interval
    is ``[start[i], end[i])``, one interval long except the last (it ends at the run's end)
    and, past ``coarse_from_ps``, the rest of a drain too long to sample at the interval."""

    interval_ps: int
    end_ps: np.ndarray
    start_ps: np.ndarray
    port: np.ndarray
    cls: np.ndarray
    bytes: np.ndarray
    #: the last sample's time when the limit stopped the sampling of a drain (the rest of the
    #: run is one interval from there); ``None``: every interval was sampled
    coarse_from_ps: int | None = None


class Sampler:
    """The per-class byte counters read at every multiple of ``interval`` ps (``next``), kept
    as the differences that are not zero, within :data:`MAX_LINK_SAMPLES` samples a run.

    ``known_ps``: the length the loader counted the samples of (``stop.warmup +
    stop.measure``: every sample before it fits the limit); past it the limit ends the
    sampling instead of the run.  ``None``: the run's length is not known before it (rank
    programs, ``stop.messages``), and a run that goes on at the limit is refused."""

    def __init__(self, interval: int, n_ports: int, n_classes: int,
                 known_ps: int | None = None) -> None:
        self.interval = interval
        self.next = interval
        self.known_ps = known_ps
        self.C = n_classes
        self.last = np.zeros(n_ports * n_classes, dtype=np.int64)
        self.last_at = 0
        self.parts: list[tuple[np.ndarray, ...]] = []
        self.taken = 0
        self.coarse_from: int | None = None

    def tick(self, counts: np.ndarray) -> None:
        """The loop stands at ``next`` and the run goes on: take the sample there and wait
        for the next one, unless only the last sample (at the run's end) is left of the
        limit: then a run of known length stops sampling (``next`` past the clock, so the
        loop no longer stops), and one of unknown length is refused."""
        at = self.next
        if self.taken >= MAX_LINK_SAMPLES - 1:
            if self.known_ps is None:
                raise ConfigError(
                    f"{format_time(self.interval / 1e12)} reached the limit of "
                    f"{MAX_LINK_SAMPLES} samples of every port a run may take at "
                    f"{format_time(at / 1e12)} of simulated time, and the run goes on (each "
                    "sample stops the engine to read every port's counters; rank programs "
                    "and stop.messages end when they end, so the length of this run was not "
                    "known before it started); give a longer interval", path=INTERVAL_FIELD)
            self.coarse_from = self.last_at
            self.next = TIME_LIMIT_PS
            return
        self.take(at, counts)
        self.next += self.interval

    def take(self, at: int, counts: np.ndarray) -> None:
        """Keep the counters' changes since the last sample (:meth:`tick` at the interval's
        multiples, the driver itself at the run's end)."""
        self.taken += 1
        delta = counts - self.last
        nz = np.nonzero(delta)[0]
        if nz.size:
            self.parts.append((np.full(nz.size, at, np.int64),
                               np.full(nz.size, self.last_at, np.int64), nz // self.C,
                               nz % self.C, delta[nz].copy()))
        self.last = counts.copy()
        self.last_at = at

    def result(self) -> LinkSeries:
        """The series once the last sample (at the run's end) is taken; ``coarse_from_ps``
        only when that last interval is longer than the others."""
        cols = [np.concatenate([p[i] for p in self.parts]) if self.parts
                else np.zeros(0, np.int64) for i in range(5)]
        coarse = self.coarse_from
        if coarse is not None and self.last_at - coarse <= self.interval:
            coarse = None
        return LinkSeries(self.interval, *cols, coarse_from_ps=coarse)
