"""Skeleton ``npb_mg``: NPB MG-like: V-cycles on a periodic 3-D grid, a face exchange at
every level visit, two allreduces per iteration.

After NPB's MG (Bailey et al., RNR-94-007; NPB 3.x ``MG/mg.f``): an ``n^3`` periodic grid
(its class) on a power of two of ranks in a 3-D process grid; the multigrid levels halve the
grid per axis down to 2 points per rank and axis.  A face exchange is NPB's ``comm3``: for
each axis in turn, irecv from both neighbours, send to both, wait; a face holds the local
grid's cross-section (doubles).  An iteration (NPB's ``mg3P`` then ``resid``): going down,
the restriction ``rprj3`` at each level (an exchange); at the bottom ``psinv`` (an exchange);
going up, ``interp`` then ``resid`` and ``psinv`` (two exchanges) at each level; the top
``resid`` (an exchange); then the norm (two 8-byte allreduces: the sum and the maximum).
``compute`` per level visit, scaled by the level's share of the points (``8^-level``).
Docs: ``docs/skeletons/npb_mg.md``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from federation import WorkloadContext, hookimpl
from federation.plugins.workloads.npb import MG_CLASSES, power_of_two
from federation.plugins.workloads.programs_build import check_size
from federation.plugins.workloads.skeleton_base import (
    Skeleton,
    SkeletonParams,
    Writer,
    compute_field,
    dims_create,
    neighbour,
    phase_mean_ps,
    refuse,
)
from federation.programs.compute_time import ComputeTime


class NpbMgParams(SkeletonParams):
    npb_class: Literal["S", "W", "A", "B", "C"] = Field("A", description="NPB problem class "
                                                          "(n per side)")
    compute: ComputeTime = compute_field("compute per level visit at the finest level")


class NpbMg(Skeleton):
    """NPB MG-like (see the module docstring)."""

    name = "npb_mg"
    Params = NpbMgParams
    params: NpbMgParams
    source = "NPB MG (mg.f)"

    def local(self, n: int) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        """(process grid, points per rank per axis at the finest level)."""
        power_of_two(n, "npb_mg")
        side = MG_CLASSES[self.params.npb_class][0]
        g = dims_create(n, 3)
        cells = tuple(side // d for d in g)
        if min(cells) < 2:
            raise refuse(f"class {self.params.npb_class} has {side}^3 points: too few for "
                         f"{n} ranks", "npb_class")
        return g, cells  # type: ignore[return-value]

    def setup(self, n: int, w: Writer) -> None:
        g, cells = self.local(n)
        # level k has c >> k points per axis: the coarsest, 2 points, is log2(c) - 1 (before
        # stop 48, log2(c): a level of 1 point, three more exchanges per iteration)
        self.levels = min(c.bit_length() - 2 for c in cells)
        self.axes = []
        for ax in range(3):
            off = [0, 0, 0]
            off[ax] = 1
            minus = [-x for x in off]
            self.axes.append((neighbour(g, off, True), neighbour(g, minus, True)))
        self.cells = cells
        self.phase = w.phase(self.params.compute, "compute")

    def face(self, axis: int, level: int) -> int:
        c = [x >> level for x in self.cells]
        return c[(axis + 1) % 3] * c[(axis + 2) % 3] * 8

    def check_sizes(self, n: int, ctx: WorkloadContext) -> None:
        _, cells = self.local(n)
        check_size(sorted(cells)[-1] * sorted(cells)[-2] * 8, ctx, "a face", "npb_class")

    def ops_per_iteration(self, n: int) -> int:
        _, cells = self.local(n)
        lv = min(c.bit_length() for c in cells)
        return n * (3 * lv + 2) * (3 * 4 + 1) + 8 * n * (n.bit_length() + 2)

    def mean_compute_ps(self, w: Writer) -> float:
        return phase_mean_ps(self.phase) * (3 * self.levels + 2)

    def comm3(self, w: Writer, level: int) -> None:
        for ax, (plus, minus) in enumerate(self.axes):
            w.exchange([minus, plus], [self.face(ax, level)] * 2, ax)

    def visit(self, w: Writer, level: int) -> None:
        w.compute(self.phase, scale=8.0 ** -level)
        self.comm3(w, level)

    def iteration(self, w: Writer, it: int) -> None:
        top = self.levels
        for lv in range(1, top + 1):  # rprj3 down to the coarsest
            self.visit(w, lv)
        self.visit(w, top)  # psinv at the bottom
        for lv in range(top - 1, -1, -1):  # interp, then resid and psinv
            self.visit(w, lv)
            self.visit(w, lv)
        self.visit(w, 0)  # resid on the finest grid
        w.collective("allreduce", None, 8)
        w.collective("allreduce", None, 8)

    def meta(self, n: int) -> dict:
        g, cells = self.local(n)
        return {"grid": list(g), "points_per_rank": list(cells)}


@hookimpl
def federation_register_workloads(register) -> None:  # noqa: ANN001
    register(NpbMg)
