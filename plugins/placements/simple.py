"""Placements ``contiguous``, ``list``, ``rest`` and ``all``.

::

    placement: {kind: contiguous, count: 64}            # the next 64 free nodes in order
    placement: {kind: contiguous, count: 64, start: 128}
    placement: {kind: list, nodes: [0, 17]}
    placement: rest                                      # every node no other job took
    placement: all                                       # every node (with shared: true)
"""

from __future__ import annotations

import numpy as np
from pydantic import Field, field_validator

from federation import Params, Placement, PlacementContext


class CountParams(Params):
    count: int = Field(ge=1, description="nodes the job gets")


class CountPlacement(Placement):
    """A placement of ``params.count`` nodes (every built-in one but ``list``, ``rest`` and
    ``all``): subclasses give ``name``, ``Params`` (a :class:`CountParams`) and ``place``."""

    Params = CountParams
    params: CountParams

    def count(self) -> int:
        return self.params.count


def too_few(ctx: PlacementContext, want: int, have: int, what: str = "free nodes") -> None:
    """Refuse a placement that asks for more nodes than there are."""
    if want > have:
        raise ctx.refuse(f"the placement asks for {want} nodes but the machine has {have} "
                         f"{what} (of {ctx.network.n_nodes})", "count")


class ContiguousParams(CountParams):
    start: int = Field(0, ge=0, description="the first node considered (node number)")


class Contiguous(CountPlacement):
    """The next ``count`` free nodes in node order, from ``start``."""

    name = "contiguous"
    Params = ContiguousParams
    params: ContiguousParams

    def place(self, ctx: PlacementContext) -> np.ndarray:
        p = self.params
        if p.start >= ctx.network.n_nodes:
            raise ctx.refuse(f"start node {p.start} does not exist (the machine has "
                             f"{ctx.network.n_nodes} nodes)", "start")
        free = np.nonzero(ctx.free)[0]
        free = free[free >= p.start]
        too_few(ctx, p.count, free.shape[0], f"free nodes from node {p.start}")
        return free[:p.count].astype(np.int64)


class ListParams(Params):
    nodes: list[int] = Field(min_length=1, description="machine node numbers, in rank order "
                             "for the rank order 'placement'")

    @field_validator("nodes")
    @classmethod
    def _distinct(cls, v: list[int]) -> list[int]:
        seen: set[int] = set()
        for x in v:
            if x < 0:
                raise ValueError(f"node {x} is negative")
            if x in seen:
                raise ValueError(f"node {x} is listed twice")
            seen.add(x)
        return v


class Listed(Placement):
    """Exactly the nodes listed (in that order)."""

    name = "list"
    Params = ListParams
    params: ListParams

    def count(self) -> int:
        return len(self.params.nodes)

    def listed(self) -> list[int]:
        return list(self.params.nodes)

    def place(self, ctx: PlacementContext) -> np.ndarray:
        n = ctx.network.n_nodes
        for i, x in enumerate(self.params.nodes):  # before NumPy, which refuses 2**63
            if x >= n:
                raise ctx.refuse(f"node {x} does not exist (the machine has {n} nodes)",
                                 f"nodes[{i}]")
        return np.array(self.params.nodes, dtype=np.int64)  # the runner refuses nodes
        # another job holds, naming both jobs


class Rest(Placement):
    """Every node no other (unshared) job took, in node order; placed after all others."""

    name = "rest"
    takes_rest = True

    def place(self, ctx: PlacementContext) -> np.ndarray:
        nodes = np.nonzero(ctx.free)[0].astype(np.int64)
        if nodes.size == 0:
            raise ctx.refuse("no node is left for it: the other jobs took all "
                             f"{ctx.network.n_nodes}")
        return nodes


class AllNodes(Placement):
    """Every node of the machine, in node order (beside other jobs only with ``shared``)."""

    name = "all"

    def place(self, ctx: PlacementContext) -> np.ndarray:
        return np.arange(ctx.network.n_nodes, dtype=np.int64)
