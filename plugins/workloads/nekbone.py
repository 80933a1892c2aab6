"""Skeleton ``nekbone``: Nekbone's conjugate gradient, a 26-neighbour gather-scatter and two
allreduces per iteration.

After SWM's Nekbone skeleton (``codes-org/SWM-workloads``, ``swm/src/nekbone/
nekbone_swm_user_code.cpp``, itself after Argonne's Nekbone mini-app): ranks on an
``Rx x Ry x Rz`` lattice (not periodic), each holding ``Ex x Ey x Ez`` spectral elements of
polynomial order ``order``.  A rank shares with each of its up to 26 neighbours the degrees of
freedom on the common face (``(E_b P + 1)(E_c P + 1)``, the two axes the offset does not move
on), edge (``E_a P + 1``) or corner (1), ``bytes_per_dof`` each.  Each CG iteration:
``compute``, the gather-scatter (irecv from every neighbour, isend to every neighbour, wait),
then two allreduces of 8 bytes (the two dot products of CG).  Docs:
``docs/skeletons/nekbone.md``.
"""

from __future__ import annotations

from pydantic import Field

from federation import WorkloadContext, hookimpl
from federation.plugins.workloads.programs_build import check_ranks, check_size
from federation.plugins.workloads.skeleton_base import (
    Skeleton,
    SkeletonParams,
    Writer,
    compute_field,
    dims_create,
    neighbour,
    phase_mean_ps,
    refuse,
    stencil_offsets,
)
from federation.programs.compute_time import ComputeTime


class NekboneParams(SkeletonParams):
    Rx: int = Field(0, ge=0, description="ranks in x (0 with Ry, Rz 0: a balanced lattice)")
    Ry: int = Field(0, ge=0)
    Rz: int = Field(0, ge=0)
    Ex: int = Field(2, ge=1, description="elements per rank in x")
    Ey: int = Field(2, ge=1)
    Ez: int = Field(2, ge=1)
    order: int = Field(8, ge=1, description="polynomial order P")
    bytes_per_dof: int = Field(8, ge=1, description="bytes per degree of freedom")
    compute: ComputeTime = compute_field("compute per CG iteration")


class Nekbone(Skeleton):
    """SWM's Nekbone skeleton (see the module docstring); an iteration is one CG iteration."""

    name = "nekbone"
    Params = NekboneParams
    params: NekboneParams
    source = "SWM nekbone (CODES)"

    def grid(self, n: int) -> tuple[int, int, int]:
        p = self.params
        given = (p.Rx, p.Ry, p.Rz)
        if any(given) and not all(given):
            raise refuse("give all of Rx, Ry, Rz, or none", "Rx")
        if all(given):
            if p.Rx * p.Ry * p.Rz != n:
                raise refuse(f"Rx x Ry x Rz = {p.Rx * p.Ry * p.Rz}, but there are {n} ranks",
                             "Rx")
            return given
        return dims_create(n, 3)  # type: ignore[return-value]

    def n_ranks(self, n_nodes: int) -> int:
        p = self.params
        if p.Rx and p.Ry and p.Rz and p.ranks is None:
            check_ranks(p.Rx * p.Ry * p.Rz, n_nodes, "Rx")
            return p.Rx * p.Ry * p.Rz
        return super().n_ranks(n_nodes)

    def dofs(self) -> tuple[int, int, int]:
        p = self.params
        return p.Ex * p.order + 1, p.Ey * p.order + 1, p.Ez * p.order + 1

    def setup(self, n: int, w: Writer) -> None:
        g = self.grid(n)
        u = self.dofs()
        self.peers, self.sizes = [], []
        for o in stencil_offsets(3, 3):
            shared = 1
            for extent, step in zip(u, o, strict=True):
                shared *= 1 if step else extent
            self.peers.append(neighbour(g, o, periodic=False))
            self.sizes.append(shared * self.params.bytes_per_dof)
        self.phase = w.phase(self.params.compute, "compute")

    def check_sizes(self, n: int, ctx: WorkloadContext) -> None:
        u = sorted(self.dofs())
        check_size(u[-1] * u[-2] * self.params.bytes_per_dof, ctx, "a face's degrees of "
                   "freedom", "order")

    def ops_per_iteration(self, n: int) -> int:
        return n * (2 * 26 + 1) + 4 * n * (n.bit_length() + 2)

    def mean_compute_ps(self, w: Writer) -> float:
        return phase_mean_ps(self.phase)

    def iteration(self, w: Writer, it: int) -> None:
        w.compute(self.phase)
        w.exchange(self.peers, self.sizes, 0)
        w.collective("allreduce", None, 8)
        w.collective("allreduce", None, 8)

    def meta(self, n: int) -> dict:
        return {"grid": list(self.grid(n)),
                "neighbours": int(sum(int((q >= 0).sum()) for q in self.peers))}




@hookimpl
def federation_register_workloads(register) -> None:  # noqa: ANN001
    register(Nekbone)
