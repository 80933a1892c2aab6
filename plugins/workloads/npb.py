"""Shared by the NPB-like skeletons (``npb_cg``, ``npb_mg``, ``npb_ft``): the problem classes
of the NAS Parallel Benchmarks (NPB 3.x, the sizes of its ``npbparams`` classes S, W, A, B, C)
and their rank-count rules."""

from __future__ import annotations

from federation.plugins.workloads.skeleton_base import refuse

#: CG: (na, nonzer, niter, shift) per class
CG_CLASSES = {"S": (1400, 7, 15), "W": (7000, 8, 15), "A": (14000, 11, 15),
              "B": (75000, 13, 75), "C": (150000, 15, 75)}
#: MG: (n per side, nit)
MG_CLASSES = {"S": (32, 4), "W": (128, 4), "A": (256, 4), "B": (256, 20), "C": (512, 20)}
#: FT: (nx, ny, nz, niter)
FT_CLASSES = {"S": (64, 64, 64, 6), "W": (128, 128, 32, 6), "A": (256, 256, 128, 6),
              "B": (512, 256, 256, 20), "C": (512, 512, 512, 20)}


def power_of_two(n: int, what: str) -> int:
    """log2 of ``n``; NPB's CG and MG run on a power of two of processes only."""
    if n < 1 or n & (n - 1):
        raise refuse(f"{what} runs on a power-of-two number of ranks (as NPB requires), got "
                     f"{n}", "ranks")
    return n.bit_length() - 1
