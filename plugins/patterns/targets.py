"""Patterns ``hotspot``, ``incast`` and ``all_to_all`` (node numbers are the job's).

* ``hotspot``: with probability ``fraction`` a message goes to one of the ``nodes`` (uniform
  among them), else uniform over the other nodes; a hot node that draws itself sends to the
  uniform draw instead;
* ``incast``: every node sends to ``node``, which sends nothing;
* ``all_to_all``: node ``i``'s ``k``-th message goes to ``i + 1 + (k mod (n - 1))`` mod ``n``:
  every other node in turn, as a personalised all-to-all exchange, whatever the batches.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from federation import Params, PatternContext, TrafficPattern
from federation.errors import ConfigError
from federation.plugins.patterns.permutation import rank_within


def check_node(node: int, ctx: PatternContext, path: str) -> None:
    if node >= ctx.n_nodes:
        raise ConfigError(f"node {node} is not one of the job's {ctx.n_nodes} nodes (0 to "
                          f"{ctx.n_nodes - 1})", path=path)


class HotspotParams(Params):
    nodes: list[int] = Field(default_factory=lambda: [0], min_length=1,
                             description="the hot nodes (the job's node numbers)")
    fraction: float = Field(0.1, ge=0, le=1, description="share of messages to the hot nodes")


class Hotspot(TrafficPattern):
    """A fraction of the messages to a set of hot nodes, the rest uniform."""

    numbered = False  # each message's draw is its own: never sorted into creation order

    name = "hotspot"
    Params = HotspotParams
    params: HotspotParams

    def check(self, ctx: PatternContext) -> None:
        super().check(ctx)
        for i, x in enumerate(self.params.nodes):
            check_node(x, ctx, f"nodes[{i}]")

    def destinations(self, src: np.ndarray, ctx: PatternContext,
                     rng: np.random.Generator) -> np.ndarray:
        n = ctx.n_nodes
        hot = np.array(self.params.nodes, dtype=np.int64)
        k = src.shape[0]
        to_hot = rng.random(k) < self.params.fraction
        pick = hot[rng.integers(0, hot.shape[0], size=k)]
        d = rng.integers(0, n - 1, size=k)
        uniform = d + (d >= src)
        return np.where(to_hot & (pick != src), pick, uniform)


class IncastParams(Params):
    node: int = Field(0, ge=0, description="the node every other node sends to")


class Incast(TrafficPattern):
    """Every node to one node."""

    numbered = False  # each message's draw is its own: never sorted into creation order

    name = "incast"
    Params = IncastParams
    params: IncastParams

    def check(self, ctx: PatternContext) -> None:
        super().check(ctx)
        check_node(self.params.node, ctx, "node")

    def destinations(self, src: np.ndarray, ctx: PatternContext,
                     rng: np.random.Generator) -> np.ndarray:
        target = self.params.node
        return np.where(src == target, -1, target)


class AllToAll(TrafficPattern):
    """Every other node in turn."""

    name = "all_to_all"

    def start(self, ctx: PatternContext, rng: np.random.Generator):  # noqa: ANN201
        n = ctx.n_nodes
        sent = np.zeros(n, dtype=np.int64)

        def draw(src: np.ndarray) -> np.ndarray:
            src = np.asarray(src, dtype=np.int64)
            k = sent[src] + rank_within(src)
            np.add.at(sent, src, 1)
            return (src + 1 + k % (n - 1)) % n
        return draw
