"""MPI collectives as point-to-point messages, by named algorithms, on any communicator.

A collective is expanded into the sends and receives a real MPI library would make, inside a
program being written: either a :class:`~federation.programs.builder.ProgramBuilder` (one
call at a time) or a :class:`~federation.programs.assembler.ProgramAssembler` (vectorised,
for skeletons of thousands of ranks)::

    b = ProgramBuilder(16)
    tag = allreduce(b, range(16), 64 * 1024, algorithm="ring")     # next free tag back
    tag = bcast(b, [0, 4, 8, 12], 8, root=0, tag=tag)              # a sub-communicator
    progs = b.build()

``comm`` lists the global ranks of the communicator (position i is the communicator's rank
i; ``root`` is such a position).  A 2-D array is a set of disjoint communicators of one size
(the rows of a process grid, say), all doing the same collective at once: a skeleton reduces
over every row of a grid in one call.  The calls follow each rank's program on (a collective
starts after what the rank did before, in MPI's sequential semantics) and the rank's next
call follows the collective's end.

**Algorithms** (:data:`ALGORITHMS`; ``auto`` picks MPICH's choice, :func:`select_algorithm`),
each from its public description, cited in its docstring in
:mod:`federation.programs.collective_algorithms` (and ``collective_exchanges``) and in
``docs/program-workloads.md``:

=========== ==================================================================================
barrier     dissemination (MPICH), tree (Open MPI's fan-in/fan-out)
bcast       binomial, scatter_allgather (ring), scatter_doubling_allgather (MPICH),
            binary_tree
reduce      binomial, rabenseifner (reduce-scatter + binomial gather; MPICH), binary_tree
allreduce   recursive_doubling, ring, rabenseifner (MPICH), binary_tree (reduce + bcast)
allgather   ring, recursive_doubling, bruck (MPICH)
alltoall    pairwise, bruck, scattered (MPICH, 32 requests at a time), linear (all at once)
alltoallv   scattered, linear (MPICH)
scatter     binomial (MPICH), linear (Open MPI)
gather      binomial (MPICH), linear (Open MPI)
=========== ==================================================================================

Sizes are bytes: ``nbytes`` is the buffer of bcast, reduce and allreduce, each rank's block
of allgather, scatter and gather, the block for each destination of alltoall; alltoallv takes
a matrix ``sizes[i][j]`` of bytes from position i to position j.  Where an algorithm splits
a buffer into pieces it splits whole elements of ``datatype_size`` bytes, as MPI does.
A collective of 0 bytes sends nothing (MPICH returns at once), except the barrier, whose
messages are empty.  A message a rank would send to itself (a local copy in MPI) is left out.

**Tags.**  MPI gives collectives a context of their own, so they never match the
application's messages; here tags keep them apart: each step of an algorithm uses its own
tag, from ``tag`` up, and the call returns the next free tag.  Give collectives a tag range
the rest of the program does not use (the built-in workloads start it above theirs).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from federation.errors import ConfigError
from federation.programs import collective_algorithms, collective_exchanges
from federation.programs.assembler import ProgramAssembler
from federation.programs.builder import ProgramBuilder
from federation.programs.collective_ctx import (
    MPICH_THRESHOLDS,
    Ctx,
    Trace,
    _BuilderSink,
    collective_ops,
    is_pof2,
    pof2_floor,
)

#: algorithms of each collective; the first is what the built-in workloads call the default
#: only where a workload says so (``auto`` is MPICH's choice, see :func:`select_algorithm`)
ALGORITHMS: dict[str, tuple[str, ...]] = {
    "barrier": ("dissemination", "tree"),
    "bcast": ("binomial", "scatter_allgather", "scatter_doubling_allgather", "binary_tree"),
    "reduce": ("binomial", "rabenseifner", "binary_tree"),
    "allreduce": ("recursive_doubling", "ring", "rabenseifner", "binary_tree"),
    "allgather": ("ring", "recursive_doubling", "bruck"),
    "alltoall": ("pairwise", "bruck", "scattered", "linear"),
    "alltoallv": ("scattered", "linear"),
    "scatter": ("binomial", "linear"),
    "gather": ("binomial", "linear"),
}

#: algorithms that need a power-of-two communicator, and why (the library's own words)
POWER_OF_TWO: dict[tuple[str, str], str] = {
    ("allgather", "recursive_doubling"): "MPICH's recursive-doubling allgather asserts a "
                                         "power-of-two communicator",
    ("bcast", "scatter_doubling_allgather"): "MPICH uses its recursive-doubling allgather "
                                             "only on power-of-two communicators (its other "
                                             "path is marked experimental)",
}

#: algorithms that split the buffer over the largest power of two of ranks, one element each
#: at least (MPICH asserts ``count >= pof2``)
NEEDS_POF2_ELEMENTS = {("allreduce", "rabenseifner"), ("reduce", "rabenseifner")}


def select_algorithm(op: str, nbytes: int, n_ranks: int, datatype_size: int = 1) -> str:
    """MPICH 3.3's choice (``MPIR_<Op>_intra_auto``, defaults of :data:`MPICH_THRESHOLDS`).

    * bcast: binomial below 12,288 B or below 8 ranks; else scatter + recursive-doubling
      allgather below 524,288 B on a power-of-two communicator; else scatter + ring allgather;
    * allreduce: recursive doubling up to 2,048 B or when there are fewer elements than the
      largest power of two of ranks; else Rabenseifner's reduce-scatter + allgather;
    * reduce: binomial up to 2,048 B or with fewer elements than that power of two; else
      Rabenseifner's reduce-scatter + gather;
    * allgather (on the total, ``n_ranks x nbytes``): recursive doubling below 524,288 B on a
      power-of-two communicator; else Bruck below 81,920 B; else ring;
    * alltoall (per destination): Bruck up to 256 B with 8 ranks or more; else the
      scattered isend/irecv (32 at a time) up to 32,768 B; else pairwise exchange;
    * alltoallv: scattered; barrier: dissemination; scatter and gather: binomial.
    """
    t = MPICH_THRESHOLDS
    count = nbytes // datatype_size if datatype_size > 0 else nbytes
    if op == "bcast":
        if nbytes < t["BCAST_SHORT_MSG_SIZE"] or n_ranks < t["BCAST_MIN_PROCS"]:
            return "binomial"
        if nbytes < t["BCAST_LONG_MSG_SIZE"] and is_pof2(n_ranks):
            return "scatter_doubling_allgather"
        return "scatter_allgather"
    if op in ("allreduce", "reduce"):
        short = t["ALLREDUCE_SHORT_MSG_SIZE" if op == "allreduce" else "REDUCE_SHORT_MSG_SIZE"]
        if nbytes <= short or count < pof2_floor(max(n_ranks, 1)):
            return "recursive_doubling" if op == "allreduce" else "binomial"
        return "rabenseifner"
    if op == "allgather":
        total = nbytes * n_ranks
        if total < t["ALLGATHER_LONG_MSG_SIZE"] and is_pof2(n_ranks):
            return "recursive_doubling"
        return "bruck" if total < t["ALLGATHER_SHORT_MSG_SIZE"] else "ring"
    if op == "alltoall":
        if nbytes <= t["ALLTOALL_SHORT_MSG_SIZE"] and n_ranks >= 8:
            return "bruck"
        return "scattered" if nbytes <= t["ALLTOALL_MEDIUM_MSG_SIZE"] else "pairwise"
    if op == "alltoallv":
        return "scattered"
    if op == "barrier":
        return "dissemination"
    if op in ("scatter", "gather"):
        return "binomial"
    raise ValueError(f"unknown collective {op!r}")


def algorithm_problem(op: str, algorithm: str, n_ranks: int, nbytes: int = 0,
                      datatype_size: int = 1) -> str | None:
    """Why ``algorithm`` cannot run ``op`` on ``n_ranks`` ranks (None: it can).  An algorithm
    that needs a power of two is refused on another count, with the library's reason, rather
    than run as something it is not."""
    if op not in ALGORITHMS:
        return f"unknown collective {op!r} (one of {', '.join(ALGORITHMS)})"
    if algorithm not in ALGORITHMS[op] and algorithm != "auto":
        return (f"{op} has no algorithm {algorithm!r} (one of auto, "
                f"{', '.join(ALGORITHMS[op])})")
    if datatype_size < 1:
        return f"datatype_size {datatype_size} is not a positive number of bytes"
    if (op, algorithm) in POWER_OF_TWO and not is_pof2(n_ranks):
        return (f"{op} by {algorithm} needs a power-of-two number of ranks, got {n_ranks} "
                f"({POWER_OF_TWO[op, algorithm]}); choose another algorithm, or auto")
    if (op, algorithm) in NEEDS_POF2_ELEMENTS and nbytes > 0:
        count, p2 = nbytes // datatype_size, pof2_floor(max(n_ranks, 1))
        if count < p2:
            return (f"{op} by rabenseifner splits the buffer over {p2} ranks, but it holds "
                    f"{count} element(s) of {datatype_size} B (MPICH asserts count >= the "
                    "largest power of two of ranks); choose another algorithm, or auto")
    if nbytes % datatype_size:
        return (f"{nbytes} B is not a whole number of {datatype_size}-byte elements "
                "(datatype_size)")
    return None


#: algorithms whose message count grows with the square of the ranks
_QUADRATIC = {"ring", "pairwise", "scattered", "linear", "scatter_allgather"}


def max_messages(op: str, algorithm: str, n_ranks: int) -> int:
    """An upper bound of the messages one ``op`` by ``algorithm`` sends on ``n_ranks`` ranks
    (``2 p^2 + p (2 L + 3)`` for the ring, pairwise and linear families, ``p (2 L + 3)`` for
    the logarithmic ones, L = ceil(log2 p)): what a workload checks against its operation
    budget before building anything (each message is two operations)."""
    p = max(n_ranks, 1)
    lg = (p - 1).bit_length()
    quad = 2 * p * p if algorithm in _QUADRATIC or op == "alltoallv" else 0
    return quad + p * (2 * lg + 3)


# --------------------------------------------------------------------------- public calls


def _sink(builder: Any) -> Any:
    if isinstance(builder, ProgramBuilder):
        return _BuilderSink(builder)
    if isinstance(builder, ProgramAssembler) or (hasattr(builder, "op")
                                                and hasattr(builder, "wait")):
        return builder
    raise TypeError(f"collectives write into a ProgramBuilder or ProgramAssembler, not "
                    f"{type(builder).__name__}")


def _comm_array(comm: Sequence[int] | np.ndarray | None, n_ranks: int) -> np.ndarray:
    if comm is None:
        return np.arange(n_ranks, dtype=np.int64)[None, :]
    arr = np.asarray(comm)
    if arr.size and arr.dtype.kind not in "iu":
        raise ValueError(f"comm must hold integer ranks, got {arr.dtype}")
    arr = arr.astype(np.int64)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2:
        raise ValueError(f"comm must be a list of ranks or a 2-D array of communicators, "
                         f"got shape {np.asarray(comm).shape}")
    flat = arr.reshape(-1)
    if flat.size and (flat.min() < 0 or flat.max() >= n_ranks):
        raise ValueError(f"comm names rank {int(flat.min() if flat.min() < 0 else flat.max())}"
                         f", outside 0 .. {n_ranks - 1}")
    if np.unique(flat).size != flat.size:
        raise ValueError("comm names a rank twice (communicators are disjoint sets of ranks)")
    return arr


def collective(builder: Any, op: str, comm: Sequence[int] | np.ndarray | None = None,
               nbytes: int = 0, *, algorithm: str = "auto", root: int = 0, tag: int = 0,
               datatype_size: int = 1, sizes: np.ndarray | None = None,
               path: str = "workload.algorithm", trace: Trace | None = None) -> int:
    """Write one ``op`` collective by ``algorithm`` into ``builder`` on ``comm`` (see the
    module docstring); return the next free tag.

    ``sizes`` is alltoallv's ``p x p`` byte matrix (or ``m x p x p``, one per communicator of a
2-D ``comm``).  An algorithm that cannot run this case
    (a power of two needed, too few elements to split) is refused as a
    :class:`~federation.errors.ConfigError` naming ``path`` and the reason.  ``trace`` records
    what each message carries (for data-flow checks).
    """
    sink = _sink(builder)
    c = _comm_array(comm, int(sink.n_ranks))
    p = c.shape[1]
    if not 0 <= root < max(p, 1):
        raise ValueError(f"root {root} is not a position of the communicator (0 .. {p - 1})")
    if op == "alltoallv":
        if sizes is None:
            raise ValueError("alltoallv needs sizes, the p x p byte matrix")
        sizes = np.asarray(sizes, dtype=np.int64)
        if sizes.shape not in ((p, p), (c.shape[0], p, p)) or (sizes < 0).any():
            raise ValueError(f"alltoallv sizes must be a {p} x {p} matrix of bytes >= 0, or "
                             f"one per communicator ({c.shape[0]} x {p} x {p})")
    if nbytes < 0:
        raise ValueError(f"nbytes {nbytes} is negative")
    if algorithm == "auto":
        biggest = int(sizes.max()) if sizes is not None and sizes.size else nbytes
        algorithm = select_algorithm(op, biggest, p, datatype_size)
    why = algorithm_problem(op, algorithm, p, nbytes, datatype_size)
    if why is not None:
        raise ConfigError(why, path=path)
    ctx = Ctx(sink, c, tag, trace)
    if p <= 1 or (op != "barrier" and nbytes == 0 and sizes is None):
        return tag
    name = f"{op}_{algorithm}"
    fn = getattr(collective_algorithms, name, None) or getattr(collective_exchanges, name)
    with collective_ops(sink, c):
        if op == "alltoallv":
            fn(ctx, sizes)
        elif op == "barrier":
            fn(ctx)
        elif op in ("bcast", "reduce", "scatter", "gather"):
            fn(ctx, nbytes, root, datatype_size)
        else:
            fn(ctx, nbytes, datatype_size)
    return ctx.top + 1


def barrier(builder: Any, comm: Sequence[int] | np.ndarray | None = None, *,
            algorithm: str = "auto", tag: int = 0, **kw: Any) -> int:
    """MPI_Barrier (no data: empty messages)."""
    return collective(builder, "barrier", comm, 0, algorithm=algorithm, tag=tag, **kw)


def bcast(builder: Any, comm: Sequence[int] | np.ndarray | None, nbytes: int, *,
          root: int = 0, algorithm: str = "auto", tag: int = 0, **kw: Any) -> int:
    """MPI_Bcast of ``nbytes`` from position ``root``."""
    return collective(builder, "bcast", comm, nbytes, algorithm=algorithm, root=root,
                      tag=tag, **kw)


def reduce(builder: Any, comm: Sequence[int] | np.ndarray | None, nbytes: int, *,
           root: int = 0, algorithm: str = "auto", tag: int = 0, **kw: Any) -> int:
    """MPI_Reduce of ``nbytes`` per rank to position ``root`` (a commutative operation)."""
    return collective(builder, "reduce", comm, nbytes, algorithm=algorithm, root=root,
                      tag=tag, **kw)


def allreduce(builder: Any, comm: Sequence[int] | np.ndarray | None, nbytes: int, *,
              algorithm: str = "auto", tag: int = 0, **kw: Any) -> int:
    """MPI_Allreduce of ``nbytes`` per rank (a commutative operation)."""
    return collective(builder, "allreduce", comm, nbytes, algorithm=algorithm, tag=tag, **kw)


def allgather(builder: Any, comm: Sequence[int] | np.ndarray | None, nbytes: int, *,
              algorithm: str = "auto", tag: int = 0, **kw: Any) -> int:
    """MPI_Allgather of ``nbytes`` from each rank."""
    return collective(builder, "allgather", comm, nbytes, algorithm=algorithm, tag=tag, **kw)


def alltoall(builder: Any, comm: Sequence[int] | np.ndarray | None, nbytes: int, *,
             algorithm: str = "auto", tag: int = 0, **kw: Any) -> int:
    """MPI_Alltoall of ``nbytes`` from each rank to each other."""
    return collective(builder, "alltoall", comm, nbytes, algorithm=algorithm, tag=tag, **kw)


def alltoallv(builder: Any, comm: Sequence[int] | np.ndarray | None, sizes: np.ndarray, *,
              algorithm: str = "auto", tag: int = 0, **kw: Any) -> int:
    """MPI_Alltoallv: ``sizes[i][j]`` bytes from position i to position j."""
    return collective(builder, "alltoallv", comm, 0, algorithm=algorithm, tag=tag,
                      sizes=sizes, **kw)


def scatter(builder: Any, comm: Sequence[int] | np.ndarray | None, nbytes: int, *,
            root: int = 0, algorithm: str = "auto", tag: int = 0, **kw: Any) -> int:
    """MPI_Scatter of ``nbytes`` to each rank from position ``root``."""
    return collective(builder, "scatter", comm, nbytes, algorithm=algorithm, root=root,
                      tag=tag, **kw)


def gather(builder: Any, comm: Sequence[int] | np.ndarray | None, nbytes: int, *,
           root: int = 0, algorithm: str = "auto", tag: int = 0, **kw: Any) -> int:
    """MPI_Gather of ``nbytes`` from each rank to position ``root``."""
    return collective(builder, "gather", comm, nbytes, algorithm=algorithm, root=root,
                      tag=tag, **kw)


__all__ = ["ALGORITHMS", "MPICH_THRESHOLDS", "Trace", "algorithm_problem", "allgather",
           "allreduce", "alltoall", "alltoallv", "barrier", "bcast", "collective", "gather",
           "is_pof2", "max_messages", "pof2_floor", "reduce", "scatter", "select_algorithm"]
