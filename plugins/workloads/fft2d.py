"""Skeleton ``fft2d``: a 2-D FFT on a row decomposition, transposed by alltoall (the
many-node paper's FFT2d).

The many-node paper (Eyerman et al., Table 1 and section 5.1) runs FFT2d with 32K complex
numbers per rank, each rank holding whole rows: at 128 ranks each does 16 1-D FFTs of 2,048
elements, at 256 ranks 8 of 4,096.  Here the global ``(ranks x rows_per_rank) x row_length``
array of complex doubles (16 B) is distributed by rows.  An iteration: ``compute`` (the row
FFTs), a transpose (MPI_Alltoall over all ranks: each pair exchanges the block of
``rows_per_rank x row_length / ranks`` points, by MPICH's choice unless ``algorithm`` says),
``compute`` (the column FFTs), and the transpose back.  ``compute`` is drawn per phase and
scaled by the phase's ``points x log2(FFT length)`` (so it is the time per point and
butterfly stage).  Docs: ``docs/skeletons/fft2d.md``.
"""

from __future__ import annotations

import math

from pydantic import Field

from federation import WorkloadContext, hookimpl
from federation.plugins.workloads.programs_build import check_size
from federation.plugins.workloads.skeleton_base import (
    Skeleton,
    SkeletonParams,
    Writer,
    compute_field,
    phase_mean_ps,
    refuse,
)
from federation.programs.collectives import ALGORITHMS, max_messages, select_algorithm
from federation.programs.compute_time import ComputeTime


class Fft2dParams(SkeletonParams):
    row_length: int = Field(2048, ge=2, description="points per row (a multiple of ranks)")
    rows_per_rank: int = Field(16, ge=1, description="rows each rank holds (the paper: 32K "
                               "points per rank)")
    algorithm: str = Field("auto", description="the transposes' alltoall algorithm")
    compute: ComputeTime = compute_field("time per point and FFT stage")


class Fft2d(Skeleton):
    """A row-decomposed 2-D FFT (see the module docstring)."""

    name = "fft2d"
    Params = Fft2dParams
    params: Fft2dParams
    source = "many-node paper FFT2d"

    def block(self, n: int) -> int:
        p = self.params
        if p.row_length % n:
            raise refuse(f"row_length {p.row_length} is not a multiple of the {n} ranks "
                         "(each rank takes an equal share of the columns)", "row_length")
        return p.rows_per_rank * (p.row_length // n) * 16

    def setup(self, n: int, w: Writer) -> None:
        p = self.params
        if p.algorithm != "auto" and p.algorithm not in ALGORITHMS["alltoall"]:
            raise refuse(f"alltoall has no algorithm {p.algorithm!r} (one of auto, "
                         f"{', '.join(ALGORITHMS['alltoall'])})", "algorithm")
        self.bytes = self.block(n)
        self.phase = w.phase(p.compute, "compute")
        rows = p.rows_per_rank * p.row_length
        cols = (p.row_length // n) * (n * p.rows_per_rank)
        self.scale = (rows * math.log2(p.row_length),
                      cols * math.log2(n * p.rows_per_rank) if n * p.rows_per_rank > 1 else 0)

    def check_sizes(self, n: int, ctx: WorkloadContext) -> None:
        check_size(self.block(n) * n, ctx, "a rank's share of the array", "rows_per_rank")

    def algorithm(self, n: int) -> str:
        alg = self.params.algorithm
        return select_algorithm("alltoall", self.block(n), n) if alg == "auto" else alg

    def ops_per_iteration(self, n: int) -> int:
        return 2 * 2 * max_messages("alltoall", self.algorithm(n), n) + 2 * n

    def mean_compute_ps(self, w: Writer) -> float:
        return phase_mean_ps(self.phase) * sum(self.scale)

    def iteration(self, w: Writer, it: int) -> None:
        alg = self.algorithm(w.n)
        w.compute(self.phase, scale=self.scale[0])
        w.collective("alltoall", None, self.bytes, alg, field="workload.algorithm")
        w.compute(self.phase, scale=self.scale[1])
        w.collective("alltoall", None, self.bytes, alg, field="workload.algorithm")

    def meta(self, n: int) -> dict:
        return {"block_bytes": self.block(n), "algorithm": self.algorithm(n)}


@hookimpl
def federation_register_workloads(register) -> None:  # noqa: ANN001
    register(Fft2d)
