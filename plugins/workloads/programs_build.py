"""Helpers the built-in program workloads share: the checks they make before building
anything (operation count, message sizes, compute sums, ranks against nodes), the allreduce
they have always used, and ember's choice of a process grid.

The assembler these workloads write with now lives in
:mod:`federation.programs.assembler` (collectives use it too) and is re-exported here;
:func:`recursive_doubling` is :func:`federation.programs.collective_algorithms.
allreduce_recursive_doubling` on ranks ``0 .. n_ranks-1``, the same calls in the same order as
before it moved.
"""

from __future__ import annotations

import numpy as np

from federation import WorkloadContext
from federation.errors import ConfigError
from federation.models.limits import CLOCK_LIMIT, TIME_LIMIT_PS
from federation.models.units import PS_PER_S, format_count, format_time
from federation.programs.assembler import ProgramAssembler
from federation.programs.checks import check_message_size
from federation.programs.collective_algorithms import allreduce_recursive_doubling
from federation.programs.collective_ctx import Ctx, collective_ops
from federation.programs.reading import op_budget

__all__ = ["MAX_PROGRAM_OPS", "ProgramAssembler", "check_compute", "check_ops", "check_ranks",
           "check_size", "ember_decomposition", "recursive_doubling", "recursive_doubling_ops"]


#: most operations one workload may build (about 60 bytes each with their dependencies, so
#: a slip such as ``iterations: 1e9`` is refused before anything is allocated); the memory
#: limit's operation budget (:mod:`federation.programs.reading`) may allow fewer
MAX_PROGRAM_OPS = 100_000_000


def check_ops(n_ops: int, field: str) -> None:
    """The operation count, known before building, against the fixed limit and the point's
    budget from ``--max-memory``."""
    if n_ops > MAX_PROGRAM_OPS:
        raise ConfigError(f"this program would have {n_ops:,} operations (limit "
                          f"{MAX_PROGRAM_OPS:,}); lower workload.{field}",
                          path=f"workload.{field}")
    budget = op_budget()
    if budget is not None and n_ops > budget.max_ops:
        raise budget.refuse(n_ops, None, "this program would have ", f"workload.{field}")


def check_size(nbytes: int, ctx: WorkloadContext, what: str, field: str) -> None:
    """A message size the workload sends, before anything is built: below the largest message
    and, at the NIC's bandwidth, within the clock range (an 80 GB halo face once simulated for
    116 s before the clock guard stopped it, blaming the link latencies)."""
    check_message_size(nbytes, int(ctx.machine.packet_size), ctx.nic_bandwidth, what,
                       f"workload.{field}")


def check_compute(per_rank_ps: int, field: str) -> None:
    """A rank's total compute (picoseconds, over every iteration) within the clock range; the
    refusal gives it as a time (``1.1e+12s``), not as the picoseconds' digits."""
    if per_rank_ps >= TIME_LIMIT_PS:
        try:
            total = format_time(per_rank_ps / PS_PER_S)
        except OverflowError:  # iterations: 10**400
            total = f"{format_count(per_rank_ps)} ps"
        raise ConfigError(f"a rank would compute for {total} in all, past {CLOCK_LIMIT}",
                          path=f"workload.{field}")


def check_ranks(n_ranks: int, n_nodes: int, field: str) -> None:
    if n_ranks > n_nodes:
        raise ConfigError(f"{n_ranks} ranks need {n_ranks} nodes (one rank per node); this "
                          f"machine has {n_nodes}", path=f"workload.{field}")


def recursive_doubling_ops(n_ranks: int) -> np.ndarray:
    """Operations per rank of one :func:`recursive_doubling` allreduce (int64[n_ranks])."""
    p2 = 1 << (n_ranks.bit_length() - 1)
    rem = n_ranks - p2
    steps = p2.bit_length() - 1
    ops = np.full(n_ranks, 2 * steps, dtype=np.int64)
    if rem:
        ops[0:2 * rem:2] = 2  # sits the doubling out: pre-step send, post-step recv
        ops[1:2 * rem:2] += 2
    return ops


def recursive_doubling(asm: ProgramAssembler, n_ranks: int, nbytes: int,
                       tag_base: int = 0) -> None:
    """One allreduce of ``nbytes`` per rank over ranks ``0..n_ranks-1``, recursive doubling.

    Step k (``k = 0 .. log2(p)-1``): ``irecv`` from and ``isend`` to ``rank XOR 2**k``, then
    wait for both, so step k's operations depend on the finish of step k-1's.  Tag
    ``tag_base + k``.  When ``n_ranks`` is not a power of two (``p`` the largest power of two
    below it, ``rem = n_ranks - p``), MPICH's pre- and post-step (``MPIR_Allreduce_intra_
    recursive_doubling``): the even ranks below ``2 rem`` first send their data to the next
    odd rank (blocking, tag ``tag_base + log2(p)``) and sit the doubling out; the odd ones take
    part as rank ``r // 2``, the others as ``r - rem``; afterwards each odd rank below
    ``2 rem`` sends the result back to ``r - 1`` (tag ``tag_base + log2(p) + 1``).
    """
    comm = np.arange(n_ranks, dtype=np.int64)[None, :]
    with collective_ops(asm, comm):
        allreduce_recursive_doubling(Ctx(asm, comm, tag_base, None), nbytes, 1)


def ember_decomposition(world: int) -> tuple[int, int, int]:
    """The process grid ember's ``Halo3D`` picks when ``pex``, ``pey`` or ``pez`` is 0.

    Same choice as ``EmberHalo3DGenerator::configure`` (sst-elements
    ``src/sst/elements/ember/mpi/motifs/emberhalo3d.cc``): start from ``world x 1 x 1``, scan
    the triples ``i x j x k = world`` with every factor below ``world`` in lexicographic order,
    and keep the last whose integer "variance" ``(i²+j²+k²)//3 - ((i+j+k)//3)²`` is not above
    the best so far.  Divisor pairs replace ember's cubic scan (same triples, same order).
    """

    def var(i: int, j: int, k: int) -> int:
        mean = (i + j + k) // 3
        return (i * i + j * j + k * k) // 3 - mean * mean

    best = (world, 1, 1)
    best_var = var(*best)
    divisors = [d for d in range(1, world) if world % d == 0]
    for i in divisors:
        for j in divisors:
            if (world // i) % j:
                continue
            k = world // (i * j)
            if k >= world:
                continue
            v = var(i, j, k)
            if v <= best_var:
                best, best_var = (i, j, k), v
    return best
