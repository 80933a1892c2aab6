"""Skeleton ``snap``: SNAP-like discrete-ordinates transport sweeps plus a convergence
allreduce (the many-node paper's SNAP).

SNAP (Zerr and Baker, "SNAP: SN (Discrete Ordinates) Application Proxy", LANL LA-UR-13-21070)
decomposes y and z over an ``npey x npez`` grid (KBA) and pipelines each of the 8 octant
sweeps over x in chunks of ``ichunk`` cells.  Per inner iteration, each octant (the four
(y, z) corners, each with x forwards and backwards) walks ``nx / ichunk`` chunks: a blocking
receive of the upstream y face then z face, ``compute`` per chunk, a blocking send downstream
of each; the y face holds ``ichunk x nz x nang x ng`` angular fluxes of 8 bytes, the z face
``ichunk x ny x nang x ng``.  After ``inners`` inner iterations, an allreduce of 8 bytes
(the outer convergence test).  The chunking, faces and octant order follow SNAP's
description; SNAP's own threading and its group loop order are not modelled.  Docs:
``docs/skeletons/snap.md``.
"""

from __future__ import annotations

from itertools import product

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
)
from federation.programs.compute_time import ComputeTime


class SnapParams(SkeletonParams):
    npey: int = Field(0, ge=0, description="ranks in y (0 with npez 0: a balanced grid)")
    npez: int = Field(0, ge=0, description="ranks in z")
    nx: int = Field(16, ge=1, description="cells in x (not decomposed)")
    ny: int = Field(4, ge=1, description="cells per rank in y")
    nz: int = Field(4, ge=1, description="cells per rank in z")
    ichunk: int = Field(4, ge=1, description="x cells per sweep chunk (must divide nx)")
    nang: int = Field(10, ge=1, description="angles per octant")
    ng: int = Field(4, ge=1, description="energy groups")
    inners: int = Field(5, ge=1, description="inner iterations per outer iteration")
    compute: ComputeTime = compute_field("compute per chunk of a sweep")


class Snap(Skeleton):
    """SNAP-like sweeps (see the module docstring); an iteration is one outer iteration."""

    name = "snap"
    Params = SnapParams
    params: SnapParams
    source = "SNAP proxy app (LA-UR-13-21070); many-node paper"

    def n_ranks(self, n_nodes: int) -> int:
        """``npey x npez`` when the grid is given without ``ranks`` (as the docs say, and as
        sweep3d's ``pex x pey`` does); before stop 48 every node, then refused."""
        p = self.params
        if p.npey and p.npez and p.ranks is None:
            check_ranks(p.npey * p.npez, n_nodes, "npey")
            return p.npey * p.npez
        return super().n_ranks(n_nodes)

    def grid(self, n: int) -> tuple[int, int]:
        p = self.params
        if (p.npey == 0) != (p.npez == 0):
            raise refuse("give both npey and npez, or neither", "npey")
        if p.npey:
            if p.npey * p.npez != n:
                raise refuse(f"npey x npez = {p.npey * p.npez}, but there are {n} ranks",
                             "npey")
            return p.npey, p.npez
        return dims_create(n, 2)  # type: ignore[return-value]

    def setup(self, n: int, w: Writer) -> None:
        p = self.params
        if p.nx % p.ichunk:
            raise refuse(f"ichunk {p.ichunk} does not divide nx {p.nx}", "ichunk")
        g = self.grid(n)
        self.octants = [((neighbour(g, (-dy, 0), False), neighbour(g, (0, -dz), False)),
                         (neighbour(g, (dy, 0), False), neighbour(g, (0, dz), False)))
                        for dy, dz, _dx in product((1, -1), (1, -1), (1, -1))]
        self.sizes = self.face_bytes()
        self.phase = w.phase(p.compute, "compute")

    def face_bytes(self) -> tuple[int, int]:
        p = self.params
        per = p.ichunk * p.nang * p.ng * 8
        return per * p.nz, per * p.ny

    def check_sizes(self, n: int, ctx: WorkloadContext) -> None:
        y, z = self.face_bytes()
        check_size(max(y, z), ctx, "a face (ichunk x nz or ny x nang x ng x 8 B)", "ichunk")

    def ops_per_iteration(self, n: int) -> int:
        p = self.params
        return (p.inners * 8 * (p.nx // p.ichunk) * 5 + 4 * (n.bit_length() + 2)) * n

    def mean_compute_ps(self, w: Writer) -> float:
        p = self.params
        return phase_mean_ps(self.phase) * p.inners * 8 * (p.nx // p.ichunk)

    def iteration(self, w: Writer, it: int) -> None:
        p = self.params
        for _ in range(p.inners):
            for o, (ins, outs) in enumerate(self.octants):
                for _chunk in range(p.nx // p.ichunk):
                    w.sweep_block(ins, outs, self.sizes, 10 + o, self.phase)
        w.collective("allreduce", None, 8)

    def meta(self, n: int) -> dict:
        return {"grid": list(self.grid(n))}


@hookimpl
def federation_register_workloads(register) -> None:  # noqa: ANN001
    register(Snap)
