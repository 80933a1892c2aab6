"""Skeleton ``npb_ft``: NPB FT-like: a 3-D FFT per iteration on a slab decomposition, one
global transpose (alltoall) and a checksum reduce.

After NPB's FT (Bailey et al., RNR-94-007; NPB 3.x ``FT/ft.f``, its 1-D layout): an
``nx x ny x nz`` complex grid (its class) in slabs of ``nz / ranks`` planes.  Each iteration:
``evolve`` (compute), the inverse FFT (the two in-slab dimensions: compute; the transpose:
an alltoall over all ranks of ``nx ny nz / ranks^2`` complex doubles (16 B) per pair, MPICH's
choice unless ``algorithm`` says; the third dimension: compute), and the checksum (an
MPI_Reduce of one complex, 16 B, to rank 0).  ``compute`` is per point and FFT stage, scaled
by ``points log2(length)`` of each FFT phase.  Docs: ``docs/skeletons/npb_ft.md``.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field

from federation import WorkloadContext, hookimpl
from federation.plugins.workloads.npb import FT_CLASSES
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


class NpbFtParams(SkeletonParams):
    npb_class: Literal["S", "W", "A", "B", "C"] = Field("A", description="NPB problem class "
                                                          "(the grid)")
    algorithm: str = Field("auto", description="the transpose's alltoall algorithm")
    compute: ComputeTime = compute_field("time per point and FFT stage")
    evolve: ComputeTime = compute_field("the evolve step per iteration")


class NpbFt(Skeleton):
    """NPB FT-like (see the module docstring)."""

    name = "npb_ft"
    Params = NpbFtParams
    params: NpbFtParams
    source = "NPB FT (ft.f, 1-D layout)"

    def block(self, n: int) -> int:
        nx, ny, nz, _ = FT_CLASSES[self.params.npb_class]
        if nz % n or (nx * ny) % n:
            raise refuse(f"class {self.params.npb_class} ({nx} x {ny} x {nz}) does not split "
                         f"into {n} slabs (NPB's 1-D layout needs ranks dividing nz and "
                         "nx ny)", "npb_class")
        return nx * ny * nz // (n * n) * 16

    def setup(self, n: int, w: Writer) -> None:
        p = self.params
        if p.algorithm != "auto" and p.algorithm not in ALGORITHMS["alltoall"]:
            raise refuse(f"alltoall has no algorithm {p.algorithm!r} (one of auto, "
                         f"{', '.join(ALGORITHMS['alltoall'])})", "algorithm")
        nx, ny, nz, _ = FT_CLASSES[p.npb_class]
        pts = nx * ny * nz / n
        self.scale = (pts * (math.log2(nx) + math.log2(ny)), pts * math.log2(nz))
        self.bytes = self.block(n)
        self.phase = w.phase(p.compute, "compute")
        self.evolve = w.phase(p.evolve, "evolve")

    def check_sizes(self, n: int, ctx: WorkloadContext) -> None:
        check_size(self.block(n), ctx, "a transpose block", "npb_class")

    def algorithm(self, n: int) -> str:
        alg = self.params.algorithm
        return select_algorithm("alltoall", self.block(n), n) if alg == "auto" else alg

    def ops_per_iteration(self, n: int) -> int:
        return 2 * max_messages("alltoall", self.algorithm(n), n) + \
            4 * n * (n.bit_length() + 2) + 3 * n

    def mean_compute_ps(self, w: Writer) -> float:
        return phase_mean_ps(self.phase) * sum(self.scale) + phase_mean_ps(self.evolve)

    def iteration(self, w: Writer, it: int) -> None:
        w.compute(self.evolve)
        w.compute(self.phase, scale=self.scale[0])
        w.collective("alltoall", None, self.bytes, self.algorithm(w.n),
                     field="workload.algorithm")
        w.compute(self.phase, scale=self.scale[1])
        w.collective("reduce", None, 16)

    def meta(self, n: int) -> dict:
        return {"block_bytes": self.block(n), "algorithm": self.algorithm(n)}


@hookimpl
def federation_register_workloads(register) -> None:  # noqa: ANN001
    register(NpbFt)
