"""Seeded random placements: ``random_nodes``, ``random_routers``, ``random_groups`` and
``geometric``.

::

    placement: {kind: random_nodes, count: 512}     # 512 free nodes drawn uniformly
    placement: {kind: random_routers, count: 64}    # whole free routers drawn at random
    placement: {kind: random_groups, count: 256}    # whole free groups drawn at random
    placement: {kind: geometric, count: 1024, mean: 4}

Each draws from the job's own placement stream (the experiment's seed and the job's position),
so a placement is the same in every run of the same experiment.  The nodes come in the order
they were drawn (the ``placement`` rank order); within a router or group, in node order.

``random_routers`` and ``random_groups`` take whole routers or groups whose every node is
free; when ``count`` is not a multiple of their size, the last one drawn is taken in part.

``geometric`` is the megafly QoS paper's allocation (Mubarak et al., section IV-D): the job
gets clusters of consecutive routers whose sizes follow a geometric law of mean ``mean``
routers, drawn by inverse transform sampling (a uniform ``u`` gives ``ceil(ln(1 - u) /
ln(1 - 1/mean))`` routers); each cluster starts at a free router drawn uniformly and runs
along the router numbers while routers are free, until the job has ``count`` nodes.  The paper
does not give its distribution; the geometric law is the one the issue names.
"""

from __future__ import annotations

import math

import numpy as np
from pydantic import Field

from federation import PlacementContext
from federation.plugins.placements.simple import CountParams, CountPlacement, too_few


class RandomNodes(CountPlacement):
    """``count`` free nodes drawn uniformly at random."""

    name = "random_nodes"
    def place(self, ctx: PlacementContext) -> np.ndarray:
        free = np.nonzero(ctx.free)[0]
        too_few(ctx, self.params.count, free.shape[0])
        return ctx.rng.choice(free, size=self.params.count, replace=False).astype(np.int64)


def free_units(ctx: PlacementContext, unit_of_node: np.ndarray,
               n_units: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Units (routers or groups) with nodes, all of them free: their ids, node counts and
    each unit's nodes in node order (CSR over ``order``)."""
    nodes_per = np.bincount(unit_of_node, minlength=n_units)
    taken = np.bincount(unit_of_node, weights=~ctx.free, minlength=n_units)
    units = np.nonzero((nodes_per > 0) & (taken == 0))[0]
    return units, nodes_per, np.argsort(unit_of_node, kind="stable")


def whole_units(ctx: PlacementContext, count: int, unit_of_node: np.ndarray, n_units: int,
                what: str) -> np.ndarray:
    """Whole free units drawn at random until ``count`` nodes (the last in part)."""
    units, nodes_per, order = free_units(ctx, unit_of_node, n_units)
    too_few(ctx, count, int(nodes_per[units].sum()), f"nodes on {what} whose nodes are all free")
    first = np.concatenate([[0], np.cumsum(nodes_per)])
    out: list[np.ndarray] = []
    have = 0
    for u in ctx.rng.permutation(units).tolist():
        part = order[first[u]:first[u + 1]]
        out.append(part[:count - have])
        have += out[-1].shape[0]
        if have == count:
            break
    return np.concatenate(out).astype(np.int64)


class RandomRouters(CountPlacement):
    """Whole free routers drawn at random, until ``count`` nodes."""

    name = "random_routers"
    def place(self, ctx: PlacementContext) -> np.ndarray:
        net = ctx.network
        return whole_units(ctx, self.params.count, net.node_router.astype(np.int64),
                           net.n_routers, "routers")


class RandomGroups(CountPlacement):
    """Whole free groups drawn at random, until ``count`` nodes (routers on machines
    without groups)."""

    name = "random_groups"
    def place(self, ctx: PlacementContext) -> np.ndarray:
        net = ctx.network
        return whole_units(ctx, self.params.count, net.node_group.astype(np.int64),
                           net.n_groups, "groups")


class GeometricParams(CountParams):
    mean: float = Field(4.0, ge=1, le=1e6, description="mean routers per cluster")


def geometric_size(u: float, mean: float) -> int:
    """Inverse transform of the geometric law on 1, 2, ... of mean ``mean``."""
    p = 1.0 / mean
    if p >= 1.0:
        return 1
    return max(1, math.ceil(math.log1p(-u) / math.log1p(-p)))


class Geometric(CountPlacement):
    """Clusters of consecutive free routers, of geometric sizes, until ``count`` nodes."""

    name = "geometric"
    Params = GeometricParams
    params: GeometricParams

    def place(self, ctx: PlacementContext) -> np.ndarray:
        net = ctx.network
        count = self.params.count
        router = net.node_router.astype(np.int64)
        units, nodes_per, order = free_units(ctx, router, net.n_routers)
        too_few(ctx, count, int(nodes_per[units].sum()), "nodes on routers whose nodes are "
                "all free")
        first = np.concatenate([[0], np.cumsum(nodes_per)])
        free = np.zeros(net.n_routers, dtype=bool)
        free[units] = True
        out: list[np.ndarray] = []
        have = 0
        rng = ctx.rng
        while have < count:
            size = geometric_size(float(rng.random()), self.params.mean)
            left = np.nonzero(free)[0]
            r = int(left[rng.integers(0, left.shape[0])])
            for _ in range(size):
                if have == count or r >= net.n_routers or not free[r]:
                    break
                part = order[first[r]:first[r + 1]]
                out.append(part[:count - have])
                have += out[-1].shape[0]
                free[r] = False
                r += 1
        return np.concatenate(out).astype(np.int64)
