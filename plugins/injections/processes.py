"""Injection processes ``bernoulli``, ``poisson``, ``periodic`` and ``on_off``.

A *slot* is the time a node's NIC needs to inject one message (size / NIC bandwidth); each
process creates ``load`` messages per slot and node on average, so the offered load is ``load``
times the NIC bandwidth whatever the process.

* ``bernoulli`` (the default; BookSim's): once per slot a node creates a message with
  probability ``load``; slot boundaries start at a per-node random phase, so nodes are not
  synchronised;
* ``poisson``: a Poisson process of rate ``load`` per slot at each node (exponential gaps);
* ``periodic``: exactly every ``slot / load``, from a per-node random phase;
* ``on_off``: bursts.  Each node alternates *on* and *off* periods of lengths of means ``on``
  and ``off``, exponential by default, or Pareto or lognormal (``on_law``, ``off_law``:
  :mod:`.laws`; heavy-tailed bursts), starting in either and in mid-period as the stationary
  process would; during an on
  period it creates messages as a Poisson process of rate ``load x (on + off) / on`` per slot,
  which must not exceed one message per slot (what its NIC can inject), and none while off.
  So ``load`` stays the mean while the traffic comes in bursts, as production background does.

Every draw comes from the workload's stream, in a fixed order, so a seed gives the same
messages; the spans the traffic is drawn in only bound memory (a process restarted at a span's
edge is the same process).
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from federation import InjectionContext, InjectionProcess, Params
from federation.errors import ConfigError
from federation.models.units import PositiveClockTime, seconds_to_ps
from federation.plugins.injections.laws import PeriodLaw


def bernoulli_slots(rng: np.random.Generator, n: int, n_slots: int,
                    p: float) -> tuple[np.ndarray, np.ndarray]:
    """(node, slot) of every success of ``n`` independent Bernoulli(p) sequences of length
    ``n_slots``, drawn as geometric gaps (memory proportional to the successes)."""
    if n_slots <= 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    mean = p * n_slots
    k = int(mean + 8 * np.sqrt(mean + 1) + 8)
    while True:
        gaps = rng.geometric(p, size=(n, k))
        slots = np.cumsum(gaps, axis=1) - 1
        if (slots[:, -1] >= n_slots).all():
            break
        k *= 2
    node = np.broadcast_to(np.arange(n)[:, None], slots.shape)
    keep = slots < n_slots
    return node[keep].astype(np.int64), slots[keep].astype(np.int64)


class Bernoulli(InjectionProcess):
    """One Bernoulli(load) draw per node and message slot, from a random phase."""

    name = "bernoulli"

    def start(self, ctx: InjectionContext):  # noqa: ANN201
        rng, slot, n = ctx.rng, ctx.slot_ps, ctx.n_nodes
        phase = rng.integers(0, slot, size=n)

        def span(t0: int, t1: int) -> tuple[np.ndarray, np.ndarray]:
            s0, s1 = -(-t0 // slot), -(-t1 // slot)
            src, slots = bernoulli_slots(rng, n, s1 - s0, ctx.load)
            return src, (slots + s0) * slot + phase[src]
        return span


def poisson_span(rng: np.random.Generator, rate: np.ndarray | float, t0: float, t1: float,
                 nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Arrivals of Poisson processes of ``rate`` per ps at ``nodes`` over ``[t0, t1)`` (times
    floored to whole ps)."""
    length = np.broadcast_to(np.asarray(t1, dtype=np.float64) - t0, nodes.shape)
    counts = rng.poisson(np.asarray(rate) * length)
    src = np.repeat(nodes, counts)
    start = np.repeat(np.broadcast_to(np.asarray(t0, dtype=np.float64), nodes.shape), counts)
    width = np.repeat(length, counts)
    t = np.floor(start + rng.random(src.shape[0]) * width).astype(np.int64)
    return src.astype(np.int64), t


class Poisson(InjectionProcess):
    """A Poisson process of rate ``load`` per slot at each node."""

    name = "poisson"

    def start(self, ctx: InjectionContext):  # noqa: ANN201
        nodes = np.arange(ctx.n_nodes, dtype=np.int64)
        rate = ctx.load / ctx.slot_ps
        return lambda t0, t1: poisson_span(ctx.rng, rate, t0, t1, nodes)


class Periodic(InjectionProcess):
    """Exactly every ``slot / load``, from a random phase per node."""

    name = "periodic"

    def start(self, ctx: InjectionContext):  # noqa: ANN201
        period = ctx.slot_ps / ctx.load
        phase = ctx.rng.random(ctx.n_nodes) * period
        nodes = np.arange(ctx.n_nodes, dtype=np.int64)

        def span(t0: int, t1: int) -> tuple[np.ndarray, np.ndarray]:
            k0 = np.maximum(np.ceil((t0 - phase) / period), 0).astype(np.int64)
            k1 = np.maximum(np.ceil((t1 - phase) / period), 0).astype(np.int64)
            counts = k1 - k0
            src = np.repeat(nodes, counts)
            first = np.repeat(np.cumsum(counts) - counts, counts)
            k = np.repeat(k0, counts) + np.arange(src.shape[0]) - first
            t = np.floor(phase[src] + k * period).astype(np.int64)
            inside = (t >= t0) & (t < t1)  # a floor may cross an edge by less than a ps
            return src[inside], t[inside]
        return span


class OnOffParams(Params):
    on: PositiveClockTime = Field(description="mean length of a burst")
    off: PositiveClockTime = Field(description="mean pause between bursts")
    on_law: PeriodLaw = Field(
        default_factory=PeriodLaw, description="law of the burst lengths, of mean 'on': "
        "exponential (default), {law: pareto, shape: alpha > 1} (heavy-tailed bursts), "
        "{law: lognormal, sigma: s}")
    off_law: PeriodLaw = Field(
        default_factory=PeriodLaw, description="law of the pauses, of mean 'off' (as on_law)")


class OnOff(InjectionProcess):
    """Bursts: on and off periods of given means and laws, Poisson arrivals while on.

    The laws (exponential, Pareto, lognormal: :mod:`.laws`) shape the bursts, not the load."""

    name = "on_off"
    Params = OnOffParams
    params: OnOffParams

    def check(self, ctx: InjectionContext) -> None:
        on, off = float(self.params.on), float(self.params.off)
        peak = ctx.load * (on + off) / on
        if peak > 1 + 1e-9:  # a peak of exactly 1 (0.04 x 25 us / 1 us) rounds above it
            raise ConfigError(f"during a burst a node would offer load x (on + off) / on = "
                              f"{peak:.3g} of its NIC, more than it can inject; lower the load "
                              f"or make the bursts longer against the pauses", path="on")

    def start(self, ctx: InjectionContext):  # noqa: ANN201
        rng, n = ctx.rng, ctx.n_nodes
        on, off = (float(seconds_to_ps(x)) for x in (self.params.on, self.params.off))
        on, off = max(on, 1.0), max(off, 1.0)
        on_law, off_law = self.params.on_law, self.params.off_law
        plain = on_law.exponential and off_law.exponential  # the draws of before the laws
        rate = ctx.load * (on + off) / on / ctx.slot_ps
        state = rng.random(n) < on / (on + off)  # True: on
        begin = np.zeros(n)

        def lengths(st: np.ndarray, first: bool = False) -> np.ndarray:
            if plain:
                return rng.exponential(np.where(st, on, off))
            out = np.empty(st.shape[0])
            for which, law, mean in ((st, on_law, on), (~st, off_law, off)):
                k = int(which.sum())
                out[which] = (law.draw_residual(rng, mean, k) if first
                              else law.draw(rng, mean, k))
            return out

        end = lengths(state, first=True)

        def span(t0: int, t1: int) -> tuple[np.ndarray, np.ndarray]:
            parts: list[tuple[np.ndarray, np.ndarray]] = []
            todo = np.arange(n)
            while todo.size:
                a = np.maximum(begin[todo], t0)
                b = np.minimum(end[todo], t1)
                live = state[todo] & (b > a)
                if live.any():
                    parts.append(poisson_span(rng, rate, a[live], b[live], todo[live]))
                todo = todo[end[todo] <= t1]  # periods that end in the span: the next one
                begin[todo] = end[todo]
                state[todo] = ~state[todo]
                end[todo] = begin[todo] + lengths(state[todo])
            if not parts:
                return np.zeros(0, np.int64), np.zeros(0, np.int64)
            return (np.concatenate([p[0] for p in parts]),
                    np.concatenate([p[1] for p in parts]))
        return span
