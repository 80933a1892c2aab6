"""Skeleton ``npb_cg``: NPB CG-like: a sparse matrix-vector product on a 2-D process grid
(sums reduced across rows, a transpose exchange) and dot products, per CG iteration.

After NPB's CG (Bailey et al., "The NAS Parallel Benchmarks", RNR-94-007, and NPB 3.x
``CG/cg.f``): ``na`` rows (its class), a power of two of ranks on ``nprows x npcols``
(npcols = nprows, or 2 nprows); rank r in row ``r div npcols``, column ``r mod npcols``.
Each CG iteration (``cgit`` per outer iteration, NPB's 25): ``compute``; the partial products
summed across the row by recursive halving (log2 npcols exchanges with the row partner
``XOR 2^k``, irecv/send/wait, of ``n_row / 2^(k+1)`` doubles, n_row = na / nprows); the
exchange of the result with the transpose partner (``n_row / npcols`` doubles, NPB's
``exch_proc``); two dot products, each summed across the row (an 8-byte allreduce on the row
communicator, recursive doubling).  Not modelled: NPB's own sequence of partial sums in its
dot products and the outer iteration's residual norm.  Docs: ``docs/skeletons/npb_cg.md``.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from federation import WorkloadContext, hookimpl
from federation.plugins.workloads.npb import CG_CLASSES, power_of_two
from federation.plugins.workloads.programs_build import check_size
from federation.plugins.workloads.skeleton_base import (
    Skeleton,
    SkeletonParams,
    Writer,
    compute_field,
    phase_mean_ps,
)
from federation.programs.compute_time import ComputeTime


class NpbCgParams(SkeletonParams):
    npb_class: Literal["S", "W", "A", "B", "C"] = Field("A", description="NPB problem class "
                                                          "(na, the matrix order)")
    cgit: int = Field(25, ge=1, description="CG iterations per outer iteration (NPB: 25)")
    compute: ComputeTime = compute_field("compute per CG iteration")


class NpbCg(Skeleton):
    """NPB CG-like (see the module docstring); an iteration is an outer iteration."""

    name = "npb_cg"
    Params = NpbCgParams
    params: NpbCgParams
    source = "NPB CG (cg.f)"

    def grid(self, n: int) -> tuple[int, int]:
        lg = power_of_two(n, "npb_cg")
        nprows = 1 << (lg // 2)
        return nprows, n // nprows

    def row_len(self, n: int) -> int:
        return -(-CG_CLASSES[self.params.npb_class][0] // self.grid(n)[0])

    def setup(self, n: int, w: Writer) -> None:
        nprows, npcols = self.grid(n)
        r = np.arange(n, dtype=np.int64)
        row, col = r // npcols, r % npcols
        self.rows = r.reshape(nprows, npcols)
        self.partners = [row * npcols + (col ^ (1 << k))
                         for k in range(npcols.bit_length() - 1)]
        # the transpose partner: NPB's exch_proc (row and column swapped, as a square grid)
        if nprows == npcols:
            self.transpose = col * npcols + row
        else:  # npcols = 2 nprows: NPB pairs (row, col) with (col / 2, 2 row + col mod 2)
            self.transpose = (col // 2) * npcols + 2 * row + col % 2
        self.phase = w.phase(self.params.compute, "compute")

    def check_sizes(self, n: int, ctx: WorkloadContext) -> None:
        check_size(self.row_len(n) * 8, ctx, "a row segment", "npb_class")

    def ops_per_iteration(self, n: int) -> int:
        return self.params.cgit * n * (2 * 40 + 1 + 8 * (n.bit_length() + 2))

    def mean_compute_ps(self, w: Writer) -> float:
        return phase_mean_ps(self.phase) * self.params.cgit

    def iteration(self, w: Writer, it: int) -> None:
        nrow = self.row_len(w.n)
        npcols = self.rows.shape[1]
        for _ in range(self.params.cgit):
            w.compute(self.phase)
            for k, partner in enumerate(self.partners):
                w.shift(partner, partner, max(nrow >> (k + 1), 1) * 8, 1 + k)
            others = np.where(self.transpose != w.everyone, self.transpose, -1)
            w.shift(others, others, max(nrow // npcols, 1) * 8, 100)
            for _dot in range(2):
                w.collective("allreduce", self.rows, 8, "recursive_doubling")

    def meta(self, n: int) -> dict:
        return {"grid": list(self.grid(n)), "na": CG_CLASSES[self.params.npb_class][0]}


@hookimpl
def federation_register_workloads(register) -> None:  # noqa: ANN001
    register(NpbCg)
