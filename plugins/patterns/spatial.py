"""Patterns that read the job's shape: ``nearest_neighbor`` on a 3-D grid and
``fixed_hop_pairs`` at a given router distance.

* ``nearest_neighbor``: the job's nodes as a ``dims`` grid (``x`` fastest: node ``x + X (y + Y
  z)``; default a cube, which the node count must then be); each message goes to one of the
  node's grid neighbours, uniformly (six on a torus, ``periodic: true``; fewer at the faces of a
  mesh; a dimension of 1 has none, one of 2 a single one each way);
* ``fixed_hop_pairs``: each node sends all its messages to one partner, drawn once, uniformly
  among the job's nodes whose router is exactly ``hops`` router-to-router hops from its own
  (shortest paths on the machine's router graph; ``hops: 0``: another node of the same
  router).  A node without such a partner is refused before the run.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from federation import Params, PatternContext, TrafficPattern
from federation.errors import ConfigError


class GridParams(Params):
    dims: list[int] | None = Field(None, min_length=3, max_length=3,
                                   description="grid sizes [x, y, z]; default the cube root")
    periodic: bool = Field(True, description="wrap around at the faces (a torus)")


class NearestNeighbor(TrafficPattern):
    """To a uniformly chosen grid neighbour."""

    numbered = False  # each message's draw is its own: never sorted into creation order

    name = "nearest_neighbor"
    Params = GridParams
    params: GridParams

    def dims(self, n: int) -> list[int]:
        if self.params.dims is not None:
            return list(self.params.dims)
        side = round(n ** (1 / 3))
        return [side] * 3

    def check(self, ctx: PatternContext) -> None:
        n = ctx.n_nodes
        dims = self.dims(n)
        if any(d < 1 for d in dims) or int(np.prod(dims)) != n:
            given = "dims " + "x".join(map(str, dims)) if self.params.dims else "a cube"
            raise ConfigError(f"nearest_neighbor lays the job's {n} nodes out as a 3-D grid, "
                              f"but {given} does not hold {n} nodes; give dims whose product "
                              f"is {n}", path="dims")
        if self._table(dims)[1].max(initial=0) == 0:
            raise ConfigError(f"the grid {'x'.join(map(str, dims))} has no neighbours",
                              path="dims")

    def _table(self, dims: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """Per node, its distinct neighbours (``-1`` padded to 6) and how many it has."""
        X, Y, Z = dims
        n = X * Y * Z
        i = np.arange(n)
        c = np.stack([i % X, (i // X) % Y, i // (X * Y)], axis=1)
        stride = np.array([1, X, X * Y])
        out = np.full((n, 6), -1, dtype=np.int64)
        for k, size in enumerate(dims):
            for j, step in enumerate((1, -1)):
                to = c[:, k] + step
                ok = (to >= 0) & (to < size)
                if self.params.periodic:
                    to, ok = to % size, np.full(n, size > 1)
                nb = i + (to - c[:, k]) * stride[k]
                out[:, 2 * k + j] = np.where(ok & (nb != i), nb, -1)
        # one entry per distinct neighbour (size 2 with wrap gives the same node twice)
        srt = np.sort(out, axis=1)
        dup = np.concatenate([np.zeros((n, 1), bool), srt[:, 1:] == srt[:, :-1]], axis=1)
        srt[dup] = -1
        srt = -np.sort(-srt, axis=1)  # valid first
        return srt, (srt >= 0).sum(axis=1)

    def start(self, ctx: PatternContext, rng: np.random.Generator):  # noqa: ANN201
        table, count = self._table(self.dims(ctx.n_nodes))

        def draw(src: np.ndarray) -> np.ndarray:
            k = (rng.random(src.shape[0]) * count[src]).astype(np.int64)
            return np.where(count[src] > 0, table[src, k], -1)
        return draw


class HopParams(Params):
    hops: int = Field(ge=0, le=1000, description="router-to-router hops between partners")


class FixedHopPairs(TrafficPattern):
    """To one partner at exactly ``hops`` router hops, drawn once."""

    numbered = False  # each message's draw is its own: never sorted into creation order

    name = "fixed_hop_pairs"
    Params = HopParams
    params: HopParams

    def candidates(self, ctx: PatternContext) -> np.ndarray:
        """bool[n, n]: the job's node pairs ``hops`` apart (a node is never its own)."""
        router = ctx.network.node_router.astype(np.int64)
        routers, which = np.unique(router, return_inverse=True)
        from scipy.sparse.csgraph import shortest_path  # scipy.sparse: 0.15 s at import

        dist = shortest_path(ctx.machine.adjacency, unweighted=True, indices=routers)
        d = dist[:, routers][which][:, which]
        ok = d == self.params.hops
        np.fill_diagonal(ok, False)
        return ok

    def check(self, ctx: PatternContext) -> None:
        super().check(ctx)
        if ctx.n_nodes > 20_000:
            raise ConfigError(f"fixed_hop_pairs compares every pair of the job's nodes; the "
                              f"job has {ctx.n_nodes} (at most 20000)")
        ok = self.candidates(ctx)
        alone = np.nonzero(~ok.any(axis=1))[0]
        if alone.size:
            raise ConfigError(f"node {int(alone[0])} of the job (machine node "
                              f"{int(ctx.nodes[alone[0]])}) has no node of the job "
                              f"{self.params.hops} router hops away ({alone.size} nodes have "
                              "none)", path="hops")

    def start(self, ctx: PatternContext, rng: np.random.Generator):  # noqa: ANN201
        ok = self.candidates(ctx)
        count = ok.sum(axis=1)
        pick = (rng.random(ctx.n_nodes) * count).astype(np.int64)
        # the pick-th candidate of each row
        cum = np.cumsum(ok, axis=1)
        partner = np.argmax(cum > pick[:, None], axis=1)
        partner = np.where(count > 0, partner, -1)
        return lambda src: partner[src]
