"""Skeleton ``hpcg``: HPCG's preconditioned conjugate gradient: 27-point halos on every
multigrid level and three dot products per iteration.

After the HPCG reference code (Dongarra, Heroux, Luszczek, "HPCG Benchmark: a New Metric for
Ranking High Performance Computing Systems", UT-EECS-15-736; ``src/CG.cpp``,
``ComputeMG_ref.cpp``, ``ExchangeHalo.cpp``): ranks on a 3-D process grid (not periodic),
``nx x ny x nz`` points each (the many-node paper: 64^3), a 27-point stencil, so a halo
exchange reaches up to 26 neighbours: faces of ``nx ny`` (...) doubles, edges of ``nx``,
corners of 1 (irecv from every neighbour, isend to every neighbour, wait).  The preconditioner
is a V-cycle over ``levels`` grids, each coarsening by 2 per axis: on every level but the
coarsest, a symmetric Gauss-Seidel (halo), a SpMV (halo), the restriction, the next level,
the prolongation and a second Gauss-Seidel (halo); on the coarsest one Gauss-Seidel (halo).
Each CG iteration: the V-cycle, a dot product (allreduce 8 B), the SpMV (halo), a dot
product, the update and a norm (allreduce 8 B).

Compute: ``compute`` once per iteration (the CG's SpMV and vector updates), and ``mg_compute``
at each visit of a level of the V-cycle, in the order 0 1 2 3 2 1 0 for 4 levels: a profile
phase's pattern (the many-node paper's ``0 1 2 2 2 1 0``, the two coarsest levels one
cluster) gives each visit its draw; any other distribution is the finest level's time, the
level l visits drawing it scaled by ``8^-l`` (the grid's size).  Docs:
``docs/skeletons/hpcg.md``.
"""

from __future__ import annotations

from pydantic import Field

from federation import WorkloadContext, hookimpl
from federation.plugins.workloads.programs_build import check_size
from federation.plugins.workloads.skeleton_base import (
    Skeleton,
    SkeletonParams,
    Writer,
    box_halo,
    compute_field,
    dims_create,
    phase_mean_ps,
    refuse,
)
from federation.programs.compute_time import ComputeTime


class HpcgParams(SkeletonParams):
    nx: int = Field(64, ge=1, description="points per rank in x (many-node paper: 64)")
    ny: int = Field(64, ge=1)
    nz: int = Field(64, ge=1)
    levels: int = Field(4, ge=1, description="multigrid levels (HPCG: 4)")
    compute: ComputeTime = compute_field("compute per CG iteration (SpMV and updates)")
    mg_compute: ComputeTime = compute_field("compute per level visit of the V-cycle")


class Hpcg(Skeleton):
    """HPCG's CG (see the module docstring); an iteration is one CG iteration."""

    name = "hpcg"
    Params = HpcgParams
    params: HpcgParams
    source = "HPCG reference (CG.cpp, ComputeMG_ref.cpp); many-node paper"
    compute_field = "mg_compute"

    def setup(self, n: int, w: Writer) -> None:
        p = self.params
        f = 1 << (p.levels - 1)
        for name in ("nx", "ny", "nz"):
            if getattr(p, name) % f:
                raise refuse(f"{name} {getattr(p, name)} does not halve {p.levels - 1} "
                             f"times (HPCG needs a multiple of {f})", name)
        g = dims_create(n, 3)
        self.halos = [box_halo(g, (p.nx >> lv, p.ny >> lv, p.nz >> lv), 1, 8, 3, False)
                      for lv in range(p.levels)]
        self.cg = w.phase(p.compute, "compute")
        self.mg = w.phase(p.mg_compute, "mg_compute")
        self.profile = p.mg_compute.dist == "profile"

    def check_sizes(self, n: int, ctx: WorkloadContext) -> None:
        p = self.params
        a, b, _ = sorted((p.nx, p.ny, p.nz), reverse=True)
        check_size(a * b * 8, ctx, "a face of the finest grid", "nx")

    def ops_per_iteration(self, n: int) -> int:
        halos = 3 * self.params.levels
        return n * (2 * 26 * halos + 2 * self.params.levels + 2) + \
            3 * 4 * n * (n.bit_length() + 2)

    def mean_compute_ps(self, w: Writer) -> float:
        lv = self.params.levels
        visits = 2 * lv - 1
        return phase_mean_ps(self.cg) + phase_mean_ps(self.mg) * visits

    def visit(self, w: Writer, level: int) -> None:
        w.compute(self.mg, scale=1.0 if self.profile else 8.0 ** -level)

    def halo(self, w: Writer, level: int) -> None:
        peers, sizes = self.halos[level]
        w.exchange(peers, sizes, level)

    def vcycle(self, w: Writer, level: int) -> None:
        if level == self.params.levels - 1:
            self.halo(w, level)
            self.visit(w, level)
            return
        self.halo(w, level)  # pre-smoothing Gauss-Seidel
        self.visit(w, level)
        self.halo(w, level)  # SpMV of the residual, then restriction
        self.vcycle(w, level + 1)
        self.halo(w, level)  # post-smoothing Gauss-Seidel
        self.visit(w, level)

    def iteration(self, w: Writer, it: int) -> None:
        self.vcycle(w, 0)
        w.collective("allreduce", None, 8)
        self.halo(w, 0)
        w.compute(self.cg)
        w.collective("allreduce", None, 8)
        w.collective("allreduce", None, 8)

    def meta(self, n: int) -> dict:
        return {"grid": list(dims_create(n, 3)), "levels": self.params.levels}


@hookimpl
def federation_register_workloads(register) -> None:  # noqa: ANN001
    register(Hpcg)
