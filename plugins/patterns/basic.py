"""Patterns ``uniform``, ``group_shift`` (alias ``worst_case``), ``shift``, ``tornado``,
``bit_complement`` and ``transpose``.

Node numbers are the job's (``0 .. n - 1``; the whole machine when there is one workload):

* ``uniform``: uniform over the other nodes (over all, the source included, with
  ``include_self``: BookSim's and SST merlin's ``uniform``; a message to oneself goes up to the
  router and back down);
* ``group_shift``: uniform over the nodes of the next group among the groups the job occupies
  (group ``i`` to ``i + 1`` mod their count): the dragonfly's adversarial pattern, which loads
  the single global link between consecutive groups (routers on topologies without groups);
* ``shift``: node ``i`` to ``i + offset`` mod ``n`` (any offset that is not a multiple of n);
* ``tornado``: ``shift`` by ``ceil(n / 2) - 1`` (BookSim's tornado on a ring of ``n``);
* ``bit_complement``: ``i`` to ``(n - 1) xor i``; ``n`` a power of two;
* ``transpose``: the two halves of ``i``'s bits swapped; ``n`` a power of four (``2^(2k)``);
  nodes whose halves are equal send to themselves, as in BookSim.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from federation import Params, PatternContext, TrafficPattern
from federation.errors import ConfigError


class UniformParams(Params):
    include_self: bool = Field(False, description="a node may draw itself as destination "
                               "(BookSim and SST merlin do; the default excludes it)")


class Uniform(TrafficPattern):
    """Uniform over the job's other nodes."""

    numbered = False  # each message's draw is its own: never sorted into creation order

    name = "uniform"
    Params = UniformParams
    params: UniformParams

    def check(self, ctx: PatternContext) -> None:
        if not self.params.include_self:
            super().check(ctx)

    def destinations(self, src: np.ndarray, ctx: PatternContext,
                     rng: np.random.Generator) -> np.ndarray:
        n = ctx.n_nodes
        if self.params.include_self:
            return rng.integers(0, n, size=src.shape[0])
        d = rng.integers(0, n - 1, size=src.shape[0])
        return d + (d >= src)


class GroupShift(TrafficPattern):
    """Uniform over the nodes of the next group the job occupies."""

    numbered = False  # each message's draw is its own: never sorted into creation order

    name = "group_shift"

    def _groups(self, ctx: PatternContext) -> tuple[np.ndarray, int]:
        """Each node's group among the job's groups (0, 1, ... in group order), and their
        count: on the whole machine these are the machine's groups."""
        uniq, dense = np.unique(ctx.network.node_group.astype(np.int64), return_inverse=True)
        return dense.astype(np.int64), int(uniq.shape[0])

    def check(self, ctx: PatternContext) -> None:
        super().check(ctx)
        if self._groups(ctx)[1] < 2:
            raise ConfigError(
                f"{self.name} traffic needs nodes in at least 2 groups (routers on topologies "
                "without groups) so that a node sends outside its own; the job's nodes are "
                "in 1")

    def start(self, ctx: PatternContext, rng: np.random.Generator):  # noqa: ANN201
        groups, G = self._groups(ctx)
        order = np.argsort(groups, kind="stable")
        counts = np.bincount(groups, minlength=G)
        first = np.concatenate([[0], np.cumsum(counts)[:-1]])

        def draw(src: np.ndarray) -> np.ndarray:
            tgt = (groups[src] + 1) % G
            pick = (rng.random(src.shape[0]) * counts[tgt]).astype(np.int64)
            return order[first[tgt] + pick]
        return draw


class WorstCase(GroupShift):
    """Alias of ``group_shift``."""

    name = "worst_case"


class ShiftParams(Params):
    offset: int = Field(1, description="node i sends to node i + offset (mod the job's nodes)")


class Shift(TrafficPattern):
    """Node ``i`` to ``i + offset`` mod ``n``."""

    numbered = False  # each message's draw is its own: never sorted into creation order

    name = "shift"
    Params = ShiftParams
    params: ShiftParams

    def offset(self, n: int) -> int:
        return self.params.offset

    def check(self, ctx: PatternContext) -> None:
        super().check(ctx)
        if self.offset(ctx.n_nodes) % ctx.n_nodes == 0:
            raise ConfigError(f"offset {self.offset(ctx.n_nodes)} is a multiple of the job's "
                              f"{ctx.n_nodes} nodes: every node would send to itself",
                              path="offset")

    def destinations(self, src: np.ndarray, ctx: PatternContext,
                     rng: np.random.Generator) -> np.ndarray:
        n = ctx.n_nodes
        return (src + self.offset(n)) % n


class Tornado(Shift):
    """``shift`` by ``ceil(n / 2) - 1``."""

    name = "tornado"
    Params = Params

    def offset(self, n: int) -> int:
        return (n + 1) // 2 - 1

    def check(self, ctx: PatternContext) -> None:
        if ctx.n_nodes < 3:
            raise ConfigError(f"tornado needs at least 3 nodes (its offset ceil(n/2) - 1 is 0 "
                              f"below); the job has {ctx.n_nodes}")


def power_of_two(n: int) -> bool:
    return n > 0 and not n & (n - 1)


class BitComplement(TrafficPattern):
    """Node ``i`` to ``(n - 1) xor i``."""

    numbered = False  # each message's draw is its own: never sorted into creation order

    name = "bit_complement"

    def check(self, ctx: PatternContext) -> None:
        n = ctx.n_nodes
        if n < 2 or not power_of_two(n):
            raise ConfigError(f"bit_complement needs a power of two of nodes (at least 2); "
                              f"the job has {n}")

    def destinations(self, src: np.ndarray, ctx: PatternContext,
                     rng: np.random.Generator) -> np.ndarray:
        return (ctx.n_nodes - 1) ^ src


class Transpose(TrafficPattern):
    """The two halves of the node number's bits swapped."""

    numbered = False  # each message's draw is its own: never sorted into creation order

    name = "transpose"

    def check(self, ctx: PatternContext) -> None:
        n = ctx.n_nodes
        if n < 4 or not power_of_two(n) or (n.bit_length() - 1) % 2:
            raise ConfigError(f"transpose needs a power of four of nodes (2^(2k), at least "
                              f"4); the job has {n}")

    def destinations(self, src: np.ndarray, ctx: PatternContext,
                     rng: np.random.Generator) -> np.ndarray:
        n = ctx.n_nodes
        half = (n.bit_length() - 1) // 2
        return ((src >> half) | (src << half)) & (n - 1)
