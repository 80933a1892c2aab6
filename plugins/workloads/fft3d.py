"""Skeleton ``fft3d``: ember's FFT3D motif, a 3-D FFT on a pencil decomposition whose
transposes are alltoallv's over the row and column communicators of the process grid.

After sst-elements' ``src/sst/elements/ember/mpi/motifs/emberfft3d.cc``: an ``n^3`` cube
(ember's nx = ny = nz), ranks on ``npRow x npcol`` (npcol = ranks / npRow; rank r in row
``r mod npRow``, column ``r div npRow``); the row communicator of a rank holds its row's
npcol ranks, the column communicator its column's npRow ranks.  An iteration is a forward
and a backward transform::

    compute fwd1; alltoallv(column); compute fwd2; alltoallv(row); compute fwd3; barrier
    compute bwd1; alltoallv(row); compute bwd2; alltoallv(column); compute bwd3; barrier

with ember's block counts (complex doubles of the real-to-complex half ``n/2 + 1`` along x,
the remainders spread over the first rows and columns) and its compute:
``ns_per_element x n x (n^2 / ranks)`` per transform times ``fwd_fft1`` ... ``bwd_fft3``
(the last doubled).  The alltoallv's are MPICH's (scattered, :mod:`federation.programs.
collectives`), the barrier its dissemination.  Docs: ``docs/skeletons/fft3d.md``.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from federation import WorkloadContext, hookimpl
from federation.plugins.workloads.programs_build import check_size
from federation.plugins.workloads.skeleton_base import (
    COLLECTIVE_TAG,
    Skeleton,
    SkeletonParams,
    Writer,
    phase_mean_ps,
    refuse,
)
from federation.programs.collectives import collective
from federation.programs.compute_time import ComputeTime


def _split(total: int, parts: int) -> np.ndarray:
    """ember's split: ``total // parts`` each, one more for the first ``total % parts``."""
    out = np.full(parts, total // parts, dtype=np.int64)
    out[:total % parts] += 1
    return out


class Fft3dParams(SkeletonParams):
    n: int = Field(100, ge=2, description="points per side of the cube (ember's nx = ny = nz)")
    npRow: int = Field(0, ge=0, description="rows of the process grid (ember's arg.npRow; "
                       "0: a balanced grid)")
    ns_per_element: ComputeTime = Field(
        default_factory=lambda: ComputeTime(dist="constant", value=1e-9),
        description="ember's nsPerElement: a time or a distribution, drawn per transform")
    fwd_fft1: float = Field(1.0, ge=0)
    fwd_fft2: float = Field(1.0, ge=0)
    fwd_fft3: float = Field(1.0, ge=0)
    bwd_fft1: float = Field(1.0, ge=0)
    bwd_fft2: float = Field(1.0, ge=0)
    bwd_fft3: float = Field(1.0, ge=0, description="ember doubles the last backward "
                            "transform's cost before this factor")


class Fft3d(Skeleton):
    """ember's FFT3D (see the module docstring)."""

    name = "fft3d"
    Params = Fft3dParams
    params: Fft3dParams
    source = "ember FFT3D (sst-elements emberfft3d.cc)"
    compute_field = "ns_per_element"

    def grid(self, n: int) -> tuple[int, int]:
        p = self.params
        rows = p.npRow
        if rows == 0:
            rows = max(d for d in range(1, int(np.sqrt(n)) + 1) if n % d == 0)
        if n % rows:
            raise refuse(f"npRow {rows} does not divide the {n} ranks (ember asserts it)",
                         "npRow")
        return rows, n // rows

    def blocks(self, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Bytes of the row exchange ``[row][a][b]`` (a, b columns), and of the forward and
        backward column exchanges ``[col][a][b]`` (a, b rows): ember's counts."""
        p = self.params
        nprow, npcol = self.grid(n)
        np0loc_row = _split(p.n // 2 + 1, nprow)
        np1loc_row = _split(p.n, nprow)
        np1loc_col = _split(p.n, npcol)
        np2loc_col = _split(p.n, npcol)
        c16 = 16  # two doubles
        row = c16 * np0loc_row[:, None, None] * np1loc_col[None, None, :] * \
            np2loc_col[None, :, None]
        fwd = c16 * np0loc_row[None, None, :] * np1loc_row[None, :, None] * \
            np2loc_col[:, None, None]
        bwd = c16 * np0loc_row[None, :, None] * np1loc_row[None, None, :] * \
            np2loc_col[:, None, None]
        return row, fwd, bwd

    def setup(self, n: int, w: Writer) -> None:
        p = self.params
        nprow, npcol = self.grid(n)
        ranks = np.arange(n).reshape(npcol, nprow)  # [col][row]
        self.rows = ranks.T  # row communicators: [row][col]
        self.cols = ranks  # column communicators: [col][row]
        self.row_b, self.fwd_b, self.bwd_b = self.blocks(n)
        self.phase = w.phase(p.ns_per_element, "ns_per_element")
        elems = p.n * (p.n * p.n / n)
        self.costs = [elems * f for f in (p.fwd_fft1, p.fwd_fft2, p.fwd_fft3)] + \
            [elems * p.bwd_fft1, elems * p.bwd_fft2, 2 * elems * p.bwd_fft3]

    def check_sizes(self, n: int, ctx: WorkloadContext) -> None:
        row, fwd, bwd = self.blocks(n)
        check_size(int(max(row.max(), fwd.max(), bwd.max())), ctx, "an alltoallv block", "n")

    def ops_per_iteration(self, n: int) -> int:
        nprow, npcol = self.grid(n)
        return 4 * n * (nprow + npcol) + 4 * n * (n.bit_length() + 1) + 6 * n

    def mean_compute_ps(self, w: Writer) -> float:
        return phase_mean_ps(self.phase) * sum(self.costs)

    def _alltoallv(self, w: Writer, comms: np.ndarray, sizes: np.ndarray) -> None:
        collective(w.asm, "alltoallv", comms, 0, sizes=sizes, tag=COLLECTIVE_TAG)

    def iteration(self, w: Writer, it: int) -> None:
        c = self.costs
        w.compute(self.phase, scale=c[0])
        self._alltoallv(w, self.cols, self.fwd_b)
        w.compute(self.phase, scale=c[1])
        self._alltoallv(w, self.rows, self.row_b)
        w.compute(self.phase, scale=c[2])
        w.collective("barrier", None, 0)
        w.compute(self.phase, scale=c[3])
        self._alltoallv(w, self.rows, self.row_b)
        w.compute(self.phase, scale=c[4])
        self._alltoallv(w, self.cols, self.bwd_b)
        w.compute(self.phase, scale=c[5])
        w.collective("barrier", None, 0)

    def meta(self, n: int) -> dict:
        return {"grid": list(self.grid(n))}


@hookimpl
def federation_register_workloads(register) -> None:  # noqa: ANN001
    register(Fft3d)
