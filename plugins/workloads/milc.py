"""Skeleton ``milc``: a MILC-like lattice-QCD conjugate gradient: a 4-D halo and two
allreduces per iteration.

After the MILC skeletons of SWM (``codes-org/SWM-workloads``, ``swm/src/milc``) and ember's
LQCD motif: the ``L^4`` sites per rank (the many-node paper: 6^4) on a periodic 4-D process
grid; each CG iteration applies the improved staggered Dslash, which gathers from the 8
neighbours (+-x, y, z, t) the boundary layers of colour vectors (3 complex doubles, 48 B per
site): the 1-link layer, and with ``naik: true`` also the 3-link (Naik) layers, as a second
message of 3 layers.  Per iteration: ``compute``, the gathers (irecv from every neighbour,
isend to every neighbour, wait), and two allreduces of 8 bytes (the dot products).  Docs:
``docs/skeletons/milc.md``.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from federation import WorkloadContext, hookimpl
from federation.plugins.workloads.programs_build import check_size
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

SITE_BYTES = 48  # an su3 vector: 3 complex doubles


class MilcParams(SkeletonParams):
    L: int = Field(6, ge=1, description="sites per rank along each of the 4 axes")
    naik: bool = Field(True, description="also gather the 3-link (Naik) layers")
    compute: ComputeTime = compute_field("compute per CG iteration")


class Milc(Skeleton):
    """A MILC-like CG (see the module docstring)."""

    name = "milc"
    Params = MilcParams
    params: MilcParams
    source = "SWM milc; ember LQCD; many-node paper"

    def face(self) -> int:
        return self.params.L ** 3 * SITE_BYTES

    def setup(self, n: int, w: Writer) -> None:
        g = dims_create(n, 4)
        self.peers = [neighbour(g, o, True) for o in stencil_offsets(4, 1)]
        self.phase = w.phase(self.params.compute, "compute")

    def check_sizes(self, n: int, ctx: WorkloadContext) -> None:
        check_size(3 * self.face(), ctx, "a 3-layer face (L^3 x 3 x 48 B)", "L")

    def ops_per_iteration(self, n: int) -> int:
        return n * (2 * 8 * 2 + 1) + 8 * n * (n.bit_length() + 2)

    def mean_compute_ps(self, w: Writer) -> float:
        return phase_mean_ps(self.phase)

    def iteration(self, w: Writer, it: int) -> None:
        w.compute(self.phase)
        w.exchange(self.peers, [self.face()] * len(self.peers), 0)
        if self.params.naik:
            w.exchange(self.peers, [3 * self.face()] * len(self.peers), 1)
        w.collective("allreduce", None, 8)
        w.collective("allreduce", None, 8)

    def meta(self, n: int) -> dict:
        return {"grid": list(dims_create(n, 4)),
                "neighbours": int(np.sum([(q >= 0).sum() for q in self.peers]))}


@hookimpl
def federation_register_workloads(register) -> None:  # noqa: ANN001
    register(Milc)
