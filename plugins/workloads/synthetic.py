"""Workload ``synthetic``: open-loop traffic with Bernoulli injection and fixed-size messages.

Each node decides, once per *slot* (the time its NIC needs to inject one message), whether to
create a message, with probability ``load``: the offered load is therefore ``load`` times the NIC
bandwidth (booksim's Bernoulli injection process).  Slot boundaries start at a per-node random
phase so that nodes are not synchronised.

Patterns:

* ``uniform``: destination uniform over all other nodes, or over all nodes including the source
  with ``include_self: true`` (BookSim's and SST merlin's ``uniform``; a message to oneself goes
  up to the router and back down);
* ``group_shift`` (alias ``worst_case``): destination uniform over the nodes of the next group
  (group ``i`` to ``i+1 mod g``), the dragonfly's adversarial pattern, which loads the single
  global link between consecutive groups (on topologies without groups, router ``i`` to ``i+1``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal

import numpy as np
from pydantic import Field, model_validator

from federation import Messages, Params, Workload, WorkloadContext, hookimpl
from federation.errors import ConfigError
from federation.models.limits import MAX_MESSAGES, TIME_LIMIT_PS
from federation.models.units import PS_PER_S, ByteCount


class SyntheticParams(Params):
    pattern: Literal["uniform", "group_shift", "worst_case"] = Field(
        "uniform", description="destination pattern"
    )
    load: float = Field(0.5, gt=0, le=1, description="offered load, fraction of NIC bandwidth")
    message_size: ByteCount | None = Field(
        None, description="whole bytes per message; default: the machine's packet size"
    )
    include_self: bool = Field(
        False, description="uniform only: a node may draw itself as destination (BookSim and "
        "SST merlin do; the default excludes it)")

    @model_validator(mode="after")
    def _self_only_for_uniform(self) -> SyntheticParams:
        if self.include_self and self.pattern != "uniform":
            raise ValueError(f"include_self applies to the uniform pattern only, not "
                             f"{self.pattern!r}")
        return self


class Synthetic(Workload):
    """Bernoulli injection at a fraction of NIC bandwidth; uniform or group-shift destinations."""

    name = "synthetic"
    Params = SyntheticParams
    params: SyntheticParams

    def offered_load(self) -> float:
        return self.params.load

    def check(self, network, machine) -> None:  # noqa: ANN001
        """The pattern needs two nodes (a node does not send to itself) and, for
        ``group_shift``, two groups."""
        n = network.n_nodes
        if n < 2:
            raise ConfigError(
                f"{self.params.pattern} traffic needs at least 2 nodes (a node does not send to "
                f"itself); this machine has {n}", path="workload.pattern")
        if self.params.pattern == "group_shift" and int(network.node_group.max()) < 1:
            raise ConfigError(
                "group_shift traffic needs at least 2 groups (routers on topologies without "
                "groups) so that a node sends outside its own; this machine has 1",
                path="workload.pattern")

    def generate(self, ctx: WorkloadContext) -> Messages:
        """Every message at once (a background, or ``stop.messages``): the batches joined."""
        size = int(self.params.message_size or ctx.machine.packet_size)
        slot_ps = max(1, int(round(size / ctx.nic_bandwidth * PS_PER_S)))
        expected = ctx.network.n_nodes * (ctx.horizon_ps // slot_ps) * self.params.load
        if expected > MAX_MESSAGES:
            field = "stop.measure" if ctx.experiment.stop.measure is not None else "stop.messages"
            raise ConfigError(
                f"warm-up plus measurement would create about {expected:.3g} messages (limit "
                f"{MAX_MESSAGES:.0e} when they are generated whole); shorten stop.warmup or "
                f"{field}, or lower the load", path=field)
        parts = [m for _, m in self.batches(ctx, 1 << 20)]
        return Messages(*(np.concatenate([getattr(m, f) for m in parts])
                          for f in ("time_ps", "src", "dst", "size")))

    def batches(self, ctx: WorkloadContext,
                target_packets: int) -> Iterator[tuple[int, Messages]]:
        """Bernoulli arrivals per node and slot (one slot serialises a message on the NIC),
        drawn a span of slots at a time: a Bernoulli process restarted at a span's edge is
        the same process, so spans only bound memory.  Each node's phase within the slot is
        drawn once, first."""
        self.check(ctx.network, ctx.machine)
        n = ctx.network.n_nodes
        size = int(self.params.message_size or ctx.machine.packet_size)
        slot_ps = max(1, int(round(size / ctx.nic_bandwidth * PS_PER_S)))
        n_slots = int(ctx.horizon_ps // slot_ps)
        load = self.params.load
        per_slot = n * load * -(-size // int(ctx.machine.packet_size))  # packets per slot
        span = max(1, int(target_packets / max(per_slot, 1e-12)))
        rng = ctx.rng
        phase = rng.integers(0, slot_ps, size=n)
        return self._spans(ctx, rng, phase, slot_ps, n_slots, span, size)

    def _spans(self, ctx: WorkloadContext, rng: np.random.Generator, phase: np.ndarray,
               slot_ps: int, n_slots: int, span: int, size: int
               ) -> Iterator[tuple[int, Messages]]:
        n = ctx.network.n_nodes
        for s0 in range(0, n_slots, span):
            s1 = min(n_slots, s0 + span)
            src, slots = _bernoulli_slots(rng, n, s1 - s0, self.params.load)
            t = (slots + s0) * slot_ps + phase[src]
            keep = t < ctx.horizon_ps
            src, t = src[keep], t[keep]
            dst = self._destinations(src, ctx.network, rng)
            msgs = Messages(time_ps=t.astype(np.int64), src=src.astype(np.int32),
                            dst=dst.astype(np.int32),
                            size=np.full(src.shape[0], size, dtype=np.int64))
            yield (s1 * slot_ps if s1 < n_slots else TIME_LIMIT_PS), msgs.sorted()

    def _destinations(self, src: np.ndarray, net, rng: np.random.Generator) -> np.ndarray:  # noqa: ANN001
        n = net.n_nodes
        if self.params.pattern == "uniform":
            if self.params.include_self:
                return rng.integers(0, n, size=src.shape[0])
            d = rng.integers(0, n - 1, size=src.shape[0])
            return d + (d >= src)
        groups = net.node_group.astype(np.int64)
        G = int(groups.max()) + 1
        if G < 2:
            raise ConfigError(
                "group_shift traffic needs at least 2 groups (routers on topologies without "
                "groups) so that a node sends outside its own; this machine has 1",
                path="workload.pattern")
        order = np.argsort(groups, kind="stable")
        counts = np.bincount(groups, minlength=G)
        start = np.concatenate([[0], np.cumsum(counts)[:-1]])
        tgt = (groups[src] + 1) % G
        pick = (rng.random(src.shape[0]) * counts[tgt]).astype(np.int64)
        return order[start[tgt] + pick]


def _bernoulli_slots(rng: np.random.Generator, n: int, n_slots: int,
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


@hookimpl
def federation_register_workloads(register) -> None:  # noqa: ANN001
    register(Synthetic)
