"""The job mappings of the circulant thesis (Cui, SOKENDAI 2024, sections 3.2 and 4.4):
``ring``, ``hierarchical_tree`` and ``circulant_stride``.

::

    placement: {kind: ring, count: 512}                       # routers 0, 1, 2, ... in turn
    placement: {kind: hierarchical_tree, count: 512, root: 0}
    placement: {kind: circulant_stride, count: 512, start: 0}

* ``ring`` (section 3.2.3): consecutive nodes along the ring of routers ``start, start + 1,
  ...`` (mod the routers), each router's free nodes in node order.  Circulant and
  random-shortcut machines have that ring (router ``i`` is linked to ``i + 1``); on another
  machine the placement is refused.
* ``hierarchical_tree`` (section 3.2.2, after the thesis' [124]): breadth first over the router
  graph from ``root`` (default: a free router drawn from the job's stream), neighbours in router
  order, each router's free nodes appended as it is reached; the search passes through routers
  whose nodes other jobs hold.
* ``circulant_stride`` (Algorithm 4.1): ``count`` (a power of two dividing the routers) routers
  ``stride = routers / count`` apart from ``start`` (default: drawn), one node each; on the
  high-radix circulant G(n, log n) they induce G(count, log count), so every message of a
  binomial, recursive-doubling or Bruck collective takes one hop.

In each the nodes come in that order (the ``placement`` rank order: the thesis' ranks follow
breadth-first order for the tree and ring order for the ring).
"""

from __future__ import annotations

import numpy as np
from pydantic import Field, field_validator

from federation import PlacementContext
from federation.plugins.placements.simple import CountParams, CountPlacement, too_few


def router_nodes(ctx: PlacementContext) -> tuple[np.ndarray, np.ndarray]:
    """Each router's free nodes in node order: CSR offsets and the node list."""
    net = ctx.network
    router = net.node_router.astype(np.int64)
    free = np.nonzero(ctx.free)[0]
    free = free[np.argsort(router[free], kind="stable")]
    first = np.concatenate([[0], np.cumsum(np.bincount(router[free],
                                                       minlength=net.n_routers))])
    return first, free


def along(ctx: PlacementContext, routers: np.ndarray, count: int) -> np.ndarray:
    """The free nodes of ``routers`` in that order, the first ``count`` of them."""
    first, nodes = router_nodes(ctx)
    parts = [nodes[first[r]:first[r + 1]] for r in routers.tolist()]
    got = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
    too_few(ctx, count, got.shape[0])
    return got[:count].astype(np.int64)


class RingParams(CountParams):
    start: int = Field(0, ge=0, description="the router the ring starts at")


class Ring(CountPlacement):
    """Consecutive nodes along the ring of routers, from ``start``."""

    name = "ring"
    Params = RingParams
    params: RingParams

    def place(self, ctx: PlacementContext) -> np.ndarray:
        net = ctx.network
        R = net.n_routers
        start = self.params.start
        if start >= R:
            raise ctx.refuse(f"start router {start} does not exist (the machine has {R} "
                             "routers)", "start")
        adj = net.adjacency
        r = np.arange(R)
        linked = np.asarray(adj[r, (r + 1) % R]).reshape(-1) > 0 if R > 1 else np.ones(1, bool)
        if not linked.all():
            k = int(np.nonzero(~linked)[0][0])
            raise ctx.refuse(f"routers {k} and {(k + 1) % R} are not linked: this machine "
                             "has no ring of routers 0, 1, 2, ... (circulant and "
                             "random-shortcut machines have one)")
        return along(ctx, (start + r) % R, self.params.count)


class TreeParams(CountParams):
    root: int | None = Field(None, ge=0, description="the router the search starts at "
                             "(default: a free router drawn from the job's stream)")


class HierarchicalTree(CountPlacement):
    """Breadth first over the routers from ``root``."""

    name = "hierarchical_tree"
    Params = TreeParams
    params: TreeParams

    def place(self, ctx: PlacementContext) -> np.ndarray:
        net = ctx.network
        root = self.params.root
        if root is None:
            first, _ = router_nodes(ctx)
            free_routers = np.nonzero(np.diff(first) > 0)[0]
            if free_routers.size == 0:
                raise ctx.refuse("no router has a free node")
            root = int(free_routers[ctx.rng.integers(0, free_routers.shape[0])])
        elif root >= net.n_routers:
            raise ctx.refuse(f"root router {root} does not exist (the machine has "
                             f"{net.n_routers} routers)", "root")
        from scipy.sparse.csgraph import breadth_first_order  # scipy.sparse: 0.15 s at import

        order = breadth_first_order(net.adjacency, root, directed=False,
                                    return_predecessors=False)
        return along(ctx, np.asarray(order, dtype=np.int64), self.params.count)


class StrideParams(CountParams):
    start: int | None = Field(None, ge=0, description="the first router (default: drawn "
                              "from the job's stream, as Algorithm 4.1's rand() mod n)")

    @field_validator("count")
    @classmethod
    def _power_of_two(cls, v: int) -> int:
        if v & (v - 1):
            raise ValueError(f"circulant_stride needs a power of two (Algorithm 4.1), not {v}")
        return v


class CirculantStride(CountPlacement):
    """``count`` routers ``routers / count`` apart, one node each."""

    name = "circulant_stride"
    Params = StrideParams
    params: StrideParams

    def place(self, ctx: PlacementContext) -> np.ndarray:
        R = ctx.network.n_routers
        m = self.params.count
        if m > R or R % m:
            raise ctx.refuse(f"{m} routers a stride apart need the machine's {R} routers to "
                             f"be a multiple of {m}", "count")
        start = self.params.start
        if start is None:
            start = int(ctx.rng.integers(0, R))
        elif start >= R:
            raise ctx.refuse(f"start router {start} does not exist (the machine has {R} "
                             "routers)", "start")
        routers = (start + (R // m) * np.arange(m)) % R
        first, nodes = router_nodes(ctx)
        empty = [int(r) for r in routers if first[r + 1] == first[r]]
        if empty:
            raise ctx.refuse(f"router {empty[0]} of the stride has no free node")
        return nodes[first[routers]].astype(np.int64)
