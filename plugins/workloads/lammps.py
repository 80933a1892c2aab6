"""Skeleton ``lammps``: a LAMMPS-like molecular-dynamics time step: 3-D ghost exchanges,
small allreduces every step, and a neighbour-list rebuild every few steps.

After SWM's LAMMPS skeleton (``codes-org/SWM-workloads``, ``swm/src/lammps/lammps.cpp``,
whose per-step structure follows LAMMPS' Verlet integrator), without its k-space (PPPM FFT)
part and with message sizes as parameters instead of SWM's fitted model.  Ranks on a periodic
3-D grid; a *shift* in a direction is LAMMPS' ``doP2P``: ``irecv`` from the neighbour behind,
blocking ``send`` to the one ahead, wait.  Each time step::

    compute(start); allreduce 48 B (temperature); allreduce 48 B (pressure)
    every neigh_every steps: allreduce 4 B (the neighbour check), then the atom migration:
        six shifts (+x -x +y -y +z -z) of neigh_bytes, five allreduces of 4 B (SWM's
        NUM_NEIGH_ALLREDUCE at the end of its neighbour exchange)
    otherwise: the ghost forward exchange, six shifts of ghost_bytes
    compute(force); allreduce 48 B (energy)
    ghost reverse exchange: six shifts of ghost_bytes
    compute(final); allreduce 8 B; allreduce 48 B

Docs: ``docs/skeletons/lammps.md``.
"""

from __future__ import annotations

from pydantic import Field

from federation import WorkloadContext, hookimpl
from federation.models.units import ByteCount
from federation.plugins.workloads.programs_build import check_size
from federation.plugins.workloads.skeleton_base import (
    Skeleton,
    SkeletonParams,
    Writer,
    compute_field,
    dims_create,
    neighbour,
    phase_mean_ps,
)
from federation.programs.compute_time import ComputeTime

DIRECTIONS = ((1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0), (0, 0, 1), (0, 0, -1))
#: 4-byte allreduces ending a rebuild step's neighbour exchange (SWM's NUM_NEIGH_ALLREDUCE)
NEIGH_ALLREDUCES = 5
#: allreduces of a rebuild step: 48, 48, the check's 4, the exchange's, 48, 8, 48 B
ALLREDUCES_MAX = 6 + NEIGH_ALLREDUCES


class LammpsParams(SkeletonParams):
    ghost_bytes: ByteCount = Field(16384.0, description="bytes of one ghost shift")
    neigh_bytes: ByteCount = Field(32768.0, description="bytes of one atom-migration shift")
    neigh_every: int = Field(10, ge=1, description="steps between neighbour-list rebuilds "
                             "(LAMMPS' neigh_modify every)")
    compute: ComputeTime = compute_field("compute of the force phase per step")
    start_compute: ComputeTime = compute_field("compute of the initial integration per step")
    final_compute: ComputeTime = compute_field("compute of the final integration per step")


class Lammps(Skeleton):
    """A LAMMPS-like time step (see the module docstring); an iteration is one step."""

    name = "lammps"
    Params = LammpsParams
    params: LammpsParams
    source = "SWM lammps (CODES); LAMMPS Verlet"

    def setup(self, n: int, w: Writer) -> None:
        p = self.params
        g = dims_create(n, 3)
        self.dirs = [(neighbour(g, d, True), neighbour(g, tuple(-x for x in d), True))
                     for d in DIRECTIONS]
        self.phases = [w.phase(p.start_compute, "start_compute"),
                       w.phase(p.compute, "compute"),
                       w.phase(p.final_compute, "final_compute")]

    def check_sizes(self, n: int, ctx: WorkloadContext) -> None:
        p = self.params
        check_size(int(p.ghost_bytes), ctx, "ghost_bytes", "ghost_bytes")
        check_size(int(p.neigh_bytes), ctx, "neigh_bytes", "neigh_bytes")

    def ops_per_iteration(self, n: int) -> int:
        return n * (6 * 2 * 3 + 3) + ALLREDUCES_MAX * 4 * n * (n.bit_length() + 2)

    def mean_compute_ps(self, w: Writer) -> float:
        return sum(phase_mean_ps(ph) for ph in self.phases)

    def shifts(self, w: Writer, size: int, tag: int) -> None:
        for to, frm in self.dirs:
            w.shift(to, frm, size, tag)

    def iteration(self, w: Writer, it: int) -> None:
        p = self.params
        start, force, final = self.phases
        w.compute(start)
        w.collective("allreduce", None, 48)
        w.collective("allreduce", None, 48)
        if (it + 1) % p.neigh_every == 0:
            w.collective("allreduce", None, 4)
            self.shifts(w, int(p.neigh_bytes), 2)
            for _ in range(NEIGH_ALLREDUCES):
                w.collective("allreduce", None, 4)
        else:
            self.shifts(w, int(p.ghost_bytes), 1)
        w.compute(force)
        w.collective("allreduce", None, 48)
        self.shifts(w, int(p.ghost_bytes), 3)
        w.compute(final)
        w.collective("allreduce", None, 8)
        w.collective("allreduce", None, 48)

    def meta(self, n: int) -> dict:
        return {"grid": list(dims_create(n, 3))}


@hookimpl
def federation_register_workloads(register) -> None:  # noqa: ANN001
    register(Lammps)
