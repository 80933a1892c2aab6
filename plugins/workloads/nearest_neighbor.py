"""Skeleton ``nearest_neighbor``: SWM's nearest-neighbour exchange on a periodic process grid.

After the SWM workload of CODES (``codes-org/SWM-workloads``,
``swm/src/nearest_neighbor/nearest_neighbor_swm_user_code.cpp``): ranks on a periodic grid of
``dims`` (the first extent fastest), each exchanging ``msg_size`` bytes with every neighbour
whose offset has 1 to ``max_dimension_distance`` non-zero components (1: the 2d faces, 6 in
3-D; 3 in 3-D: all 26).  Per iteration: ``compute`` (ours; SWM's synchronous mode has none),
then for each neighbour in SWM's order an ``irecv`` and an ``isend``; a wait for all every
``iterations_per_sync`` iterations and after the last.  Docs: ``docs/skeletons/
nearest_neighbor.md``.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field, model_validator

from federation import WorkloadContext, hookimpl
from federation.models.units import ByteCount
from federation.plugins.workloads.programs_build import check_ranks, check_size
from federation.plugins.workloads.skeleton_base import (
    Skeleton,
    SkeletonParams,
    Writer,
    compute_field,
    dims_create,
    neighbour,
    phase_mean_ps,
    stencil_offsets,
)
from federation.programs.compute_time import ComputeTime
from federation.programs.model import RECV, SEND


class NearestNeighborParams(SkeletonParams):
    dims: list[int] | None = Field(None, min_length=1, description="the periodic process "
                                   "grid (its product is the rank count); default: a "
                                   "balanced 3-D grid of ranks")
    max_dimension_distance: int = Field(1, ge=1, description="neighbours' offsets have 1 to "
                                        "this many non-zero components (SWM's name): 1 faces, "
                                        "3 in 3-D all 26")
    msg_size: ByteCount = Field(8192.0, description="bytes to each neighbour")
    iterations_per_sync: int = Field(1, ge=1, description="iterations between waits (SWM)")
    compute: ComputeTime = compute_field("compute at the start of each iteration")

    @model_validator(mode="after")
    def _grid(self) -> NearestNeighborParams:
        if self.dims is not None:
            if min(self.dims) < 1:
                raise ValueError("every extent of dims must be at least 1")
            if self.max_dimension_distance > len(self.dims):
                raise ValueError(f"max_dimension_distance {self.max_dimension_distance} "
                                 f"exceeds the {len(self.dims)} dimensions of dims")
            if self.ranks is not None and self.ranks != int(np.prod(self.dims)):
                raise ValueError(f"ranks is {self.ranks} but dims multiply to "
                                 f"{int(np.prod(self.dims))}; give one or the other")
        elif self.max_dimension_distance > 3:
            raise ValueError("max_dimension_distance exceeds the 3 dimensions of the default "
                             "grid")
        return self


class NearestNeighbor(Skeleton):
    """SWM's nearest-neighbour skeleton (see the module docstring)."""

    name = "nearest_neighbor"
    Params = NearestNeighborParams
    params: NearestNeighborParams
    source = "SWM nearest_neighbor (CODES)"

    def n_ranks(self, n_nodes: int) -> int:
        p = self.params
        if p.dims is not None:
            n = int(np.prod(p.dims))
            check_ranks(n, n_nodes, "dims")
            return n
        return super().n_ranks(n_nodes)

    def grid(self, n: int) -> tuple[int, ...]:
        return tuple(self.params.dims) if self.params.dims is not None else dims_create(n, 3)

    def setup(self, n: int, w: Writer) -> None:
        dims = self.grid(n)
        self.peers = [neighbour(dims, o, periodic=True)
                      for o in stencil_offsets(len(dims), self.params.max_dimension_distance)]
        self.phase = w.phase(self.params.compute, "compute")
        self.pending: list[tuple[np.ndarray, np.ndarray]] = []

    def check_sizes(self, n: int, ctx: WorkloadContext) -> None:
        check_size(int(self.params.msg_size), ctx, "msg_size", "msg_size")

    def ops_per_iteration(self, n: int) -> int:
        k = len(stencil_offsets(len(self.grid(n)), self.params.max_dimension_distance))
        return n * (2 * k + 1)

    def mean_compute_ps(self, w: Writer) -> float:
        return phase_mean_ps(self.phase)

    def iteration(self, w: Writer, it: int) -> None:
        p = self.params
        w.compute(self.phase)
        size = int(p.msg_size)
        for q in self.peers:
            who = np.flatnonzero(q >= 0)
            if who.size:
                self.pending.append((who, w.asm.op(who, RECV, q[who], size, 0,
                                                   blocking=False)))
                self.pending.append((who, w.asm.op(who, SEND, q[who], size, 0,
                                                   blocking=False)))
        if (it + 1) % p.iterations_per_sync == 0 or it == p.iterations - 1:
            for who, h in self.pending:
                w.asm.wait(who, h)
            self.pending = []

    def meta(self, n: int) -> dict:
        return {"dims": list(self.grid(n)), "neighbours": len(self.peers)}




@hookimpl
def federation_register_workloads(register) -> None:  # noqa: ANN001
    register(NearestNeighbor)
