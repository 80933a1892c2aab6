"""Skeleton ``sweep3d``: ember's Sweep3D motif, KBA wavefront sweeps on a 2-D process grid.

After sst-elements' ``src/sst/elements/ember/mpi/motifs/embersweep3d.cc`` (parameter names
kept, ember's ``arg.`` prefix dropped): ranks on a ``pex x pey`` grid (x = rank mod pex,
y = rank div pex, not periodic), each holding ``nx x ny x nz`` cells.  An iteration is two
rounds of four sweeps, one from each corner of the grid (ember's ``iterations x 2`` loops);
a sweep walks ``nz`` in blocks of ``kba`` planes: per block, a blocking receive from the
upstream x neighbour then the upstream y one, ``compute``, a blocking send to the downstream x
then y neighbour.  Messages: ``nx x kba x datatype_width x fields_per_cell`` bytes to an x
neighbour and ``ny x ...`` to a y neighbour (ember's sizes), tags 1000, 2000, 3000, 4000 per
corner.  Compute per block: ``computetime x kba x fields_per_cell``, ``computetime`` by
default ember's ``nx ny flops_per_cell / nodeflops`` (whole ns).  Docs:
``docs/skeletons/sweep3d.md``.
"""

from __future__ import annotations

from pydantic import Field

from federation import WorkloadContext, hookimpl
from federation.plugins.workloads.programs_build import check_ranks, check_size
from federation.plugins.workloads.skeleton_base import (
    Skeleton,
    SkeletonParams,
    Writer,
    dims_create,
    neighbour,
    phase_mean_ps,
    refuse,
)
from federation.programs.compute_time import ComputeTime

#: corners of the sweeps: (x direction, y direction) the wave travels, ember's cases 0 to 3
CORNERS = ((+1, +1), (-1, +1), (-1, -1), (+1, -1))


class Sweep3dParams(SkeletonParams):
    pex: int = Field(0, ge=0, description="ranks in x (0 with pey 0: a balanced grid)")
    pey: int = Field(0, ge=0, description="ranks in y")
    nx: int = Field(50, ge=1, description="cells per rank in x (ember's default)")
    ny: int = Field(50, ge=1, description="cells per rank in y")
    nz: int = Field(50, ge=1, description="cells per rank in z, swept in blocks of kba")
    kba: int = Field(1, ge=1, description="z planes per block (must divide nz)")
    datatype_width: int = Field(8, ge=1, description="bytes per value")
    fields_per_cell: int = Field(8, ge=1, description="values per cell")
    flops_per_cell: float = Field(275.0, gt=0, description="for the default computetime")
    nodeflops: float = Field(1e9, gt=0, description="flop/s of a rank, for the default "
                             "computetime")
    computetime: ComputeTime | None = Field(None, description="ember's per-block unit of "
                                            "compute (multiplied by kba x fields_per_cell); "
                                            "default nx ny flops_per_cell / nodeflops")


class Sweep3d(Skeleton):
    """ember's Sweep3D (see the module docstring)."""

    name = "sweep3d"
    Params = Sweep3dParams
    params: Sweep3dParams
    source = "ember Sweep3D (sst-elements embersweep3d.cc)"
    compute_field = "computetime"

    def grid(self, n: int) -> tuple[int, int]:
        p = self.params
        if (p.pex == 0) != (p.pey == 0):
            raise refuse("give both pex and pey, or neither", "pex")
        if p.pex:
            if p.pex * p.pey != n:
                raise refuse(f"pex x pey = {p.pex * p.pey}, but there are {n} ranks (ember "
                             "refuses a grid that is not the whole world)", "pex")
            return p.pex, p.pey
        return dims_create(n, 2)  # type: ignore[return-value]

    def n_ranks(self, n_nodes: int) -> int:
        p = self.params
        if p.pex and p.pey and p.ranks is None:
            check_ranks(p.pex * p.pey, n_nodes, "pex")
            return p.pex * p.pey
        return super().n_ranks(n_nodes)

    def unit(self) -> ComputeTime:
        p = self.params
        if p.computetime is not None:
            return p.computetime
        ns = int(p.nx * p.ny * p.flops_per_cell / p.nodeflops * 1e9)  # ember truncates
        return ComputeTime(dist="constant", value=ns * 1e-9)

    def setup(self, n: int, w: Writer) -> None:
        p = self.params
        if p.nz % p.kba:
            raise refuse(f"kba {p.kba} does not divide nz {p.nz} (ember asserts it)", "kba")
        px, py = self.grid(n)
        self.nb = {(dx, dy): (neighbour((px, py), (-dx, 0), False),
                              neighbour((px, py), (0, -dy), False),
                              neighbour((px, py), (dx, 0), False),
                              neighbour((px, py), (0, dy), False)) for dx, dy in CORNERS}
        self.phase = w.phase(self.unit(), "computetime")
        self.scale = p.kba * p.fields_per_cell
        cell = p.kba * p.datatype_width * p.fields_per_cell
        self.sizes = (p.nx * cell, p.ny * cell)

    def check_sizes(self, n: int, ctx: WorkloadContext) -> None:
        p = self.params
        cell = p.kba * p.datatype_width * p.fields_per_cell
        check_size(p.nx * cell, ctx, "an x message (nx kba datatype_width fields_per_cell)",
                   "nx")
        check_size(p.ny * cell, ctx, "a y message (ny kba datatype_width fields_per_cell)",
                   "ny")

    def ops_per_iteration(self, n: int) -> int:
        p = self.params
        return 8 * max(p.nz // p.kba, 1) * 5 * n

    def mean_compute_ps(self, w: Writer) -> float:
        p = self.params
        return phase_mean_ps(self.phase) * self.scale * 8 * (p.nz // p.kba)

    def iteration(self, w: Writer, it: int) -> None:
        p = self.params
        for _ in range(2):
            for case, corner in enumerate(CORNERS):
                x_in, y_in, x_out, y_out = self.nb[corner]
                for _block in range(p.nz // p.kba):
                    w.sweep_block((x_in, y_in), (x_out, y_out), self.sizes,
                                  1000 * (case + 1), self.phase, self.scale)

    def meta(self, n: int) -> dict:
        return {"grid": list(self.grid(n))}


@hookimpl
def federation_register_workloads(register) -> None:  # noqa: ANN001
    register(Sweep3d)
