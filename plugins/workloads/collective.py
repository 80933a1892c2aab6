"""Workload ``collective``: one MPI collective, by a named algorithm, repeated (closed loop).

::

    workload: {kind: collective, op: alltoall, algorithm: bruck, size: 1KiB, ranks: 64,
               iterations: 10, compute: 1us}
    workload: {kind: collective, op: allreduce, size: 1MiB, group_size: 8}   # 8-rank groups
    workload: {kind: collective, op: barrier, compute: {dist: normal, mean: 1ms, std: 0.1ms},
               sampling: variable, iterations: 50}

Each iteration: ``compute`` on every rank (left out when 0; a distribution is drawn per rank
and iteration, or its mean with ``sampling: constant``: :mod:`federation.programs.
compute_time`), then the collective on every
communicator: all ``ranks`` together, or consecutive groups of ``group_size`` ranks (the
rows of a process grid), each doing the same collective at once.  The expansion into
messages, the algorithms, their sources and ``auto`` (MPICH 3.3's choice) are
:mod:`federation.programs.collectives`; ``docs/program-workloads.md`` has the table.
Collectives microbenchmarks of the papers (the Aries paper's allreduce, alltoall and barrier,
the circulant thesis' broadcast, allreduce and alltoall) are this workload.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field, ValidationInfo, field_validator

from federation import Params, Workload, WorkloadContext, hookimpl
from federation.errors import ConfigError
from federation.models.units import PS_PER_S, ByteCount
from federation.plugins.workloads.programs_build import (
    ProgramAssembler,
    check_compute,
    check_ops,
    check_ranks,
    check_size,
)
from federation.programs.collectives import (
    ALGORITHMS,
    algorithm_problem,
    collective,
    max_messages,
    select_algorithm,
)
from federation.programs.compute_time import ComputeDraws, ComputeTime, Sampling
from federation.programs.model import COMPUTE, RankPrograms

Op = Literal["barrier", "bcast", "reduce", "allreduce", "allgather", "alltoall", "alltoallv",
             "scatter", "gather"]
#: collectives whose largest message may hold every rank's block
_GATHERING = {"allgather", "alltoall", "alltoallv", "scatter", "gather"}


class CollectiveParams(Params):
    op: Op = Field(description="the collective")
    algorithm: str = Field("auto", description="an algorithm of the collective, or auto "
                           "(MPICH 3.3's choice by size and ranks)")
    size: ByteCount = Field(8.0, description="bytes: the buffer (bcast, reduce, allreduce), "
                            "each rank's block (allgather, scatter, gather), the block for "
                            "each destination (alltoall, alltoallv); at least 1 B (a 0-byte "
                            "collective sends nothing: leave it out); barrier: ignored")
    size_max: ByteCount | None = Field(None, description="alltoallv: each pair's size drawn "
                                       "uniformly from size .. size_max in whole elements "
                                       "(datatype_size; seeded)")
    ranks: int | None = Field(None, ge=1, description="ranks (rank i on node i); default: "
                              "every node")
    group_size: int | None = Field(None, ge=1, description="communicators of this many "
                                   "consecutive ranks; default: one of all ranks")
    root: int = Field(0, ge=0, description="root position in each communicator (bcast, "
                      "reduce, scatter, gather)")
    iterations: int = Field(1, ge=1, description="collectives in sequence")
    compute: ComputeTime = Field(default_factory=lambda: ComputeTime(dist="constant", value=0.0),
                                 description="compute before each collective: a time or a "
                                 "distribution (federation.programs.compute_time)")
    sampling: Sampling = Field("variable", description="variable: a seeded draw per rank and "
                               "call; constant: the distribution's mean everywhere")
    datatype_size: int = Field(1, ge=1, description="bytes per element: buffers are split "
                               "into whole elements, and MPICH's auto counts elements")

    # field validators (``op`` and ``size`` are declared above, so validated first): the
    # refusal names the field at fault, ``workload.algorithm``, not the whole workload
    @field_validator("algorithm")
    @classmethod
    def _known_algorithm(cls, algorithm: str, info: ValidationInfo) -> str:
        op = info.data.get("op")
        if op is not None and algorithm != "auto" and algorithm not in ALGORITHMS[op]:
            raise ValueError(f"{op} has no algorithm {algorithm!r} (one of auto, "
                             f"{', '.join(ALGORITHMS[op])})")
        return algorithm

    @field_validator("size_max")
    @classmethod
    def _size_max_for_alltoallv(cls, size_max: float | None, info: ValidationInfo
                                ) -> float | None:
        op, size = info.data.get("op"), info.data.get("size")
        if size_max is not None and op is not None and (
                op != "alltoallv" or (size is not None and size_max < size)):
            raise ValueError("size_max is for alltoallv only, and at least size")
        return size_max


class Collective(Workload):
    """``iterations`` x (``compute``, then ``op`` by ``algorithm`` on each communicator)."""

    name = "collective"
    closed_loop = True
    Params = CollectiveParams
    params: CollectiveParams

    def layout(self, n_nodes: int) -> np.ndarray:
        """The communicators: ``groups x group_size`` global ranks."""
        p = self.params
        n = p.ranks if p.ranks is not None else n_nodes
        check_ranks(n, n_nodes, "ranks")
        g = p.group_size if p.group_size is not None else n
        if n % g:
            raise ConfigError(f"group_size {g} does not divide the {n} ranks",
                              path="workload.group_size")
        if p.root >= g:
            raise ConfigError(f"root {p.root} is not a position of a {g}-rank communicator",
                              path="workload.root")
        return np.arange(n, dtype=np.int64).reshape(n // g, g)

    def algorithm(self, group: int) -> str:
        """The algorithm that runs (``auto`` resolved by MPICH's thresholds)."""
        p = self.params
        size = int(p.size_max if p.size_max is not None else p.size)
        if p.algorithm == "auto":
            return select_algorithm(p.op, size, group, p.datatype_size)
        return p.algorithm

    def programs(self, ctx: WorkloadContext) -> RankPrograms:
        p = self.params
        comm = self.layout(ctx.network.n_nodes)
        groups, g = comm.shape
        n = groups * g
        if int(p.size) % p.datatype_size:
            raise ConfigError(f"{int(p.size)} B is not a whole number of {p.datatype_size}-byte"
                              " elements (datatype_size)", path="workload.size")
        alg = self.algorithm(g)
        why = algorithm_problem(p.op, alg, g, int(p.size), p.datatype_size)
        if why is not None:
            raise ConfigError(why, path="workload.algorithm")
        size = int(p.size_max if p.size_max is not None else p.size)
        biggest = size * g if p.op in _GATHERING else size
        check_size(biggest, ctx, f"the largest message ({g} blocks of size)"
                   if biggest != size else "size", "size")
        compute = ComputeDraws(ctx.rng, p.sampling, n).phase(p.compute, "compute")
        has_compute = not p.compute.is_zero()
        check_compute(int(float(compute.mean_s.max()) * PS_PER_S) * p.iterations, "compute")
        per_iter = 2 * groups * max_messages(p.op, alg, g) + n * has_compute
        check_ops(per_iter * p.iterations, "iterations")
        sizes = None
        if p.op == "alltoallv":
            # whole elements, each count equally likely (bytes drawn and then cut to elements
            # gave the largest count 1 / datatype_size of the others' chance)
            e = p.datatype_size
            hi = int(p.size_max) if p.size_max is not None else int(p.size)
            sizes = ctx.rng.integers(int(p.size) // e, hi // e, size=(g, g), endpoint=True) * e
        asm = ProgramAssembler(n)
        everyone = np.arange(n, dtype=np.int64)
        for _ in range(p.iterations):
            if has_compute:
                asm.op(everyone, COMPUTE, time_ps=compute.draw(everyone))
            collective(asm, p.op, comm, int(p.size), algorithm=alg, root=p.root,
                       datatype_size=p.datatype_size, sizes=sizes)
        return asm.build(meta={"workload": "collective", "op": p.op, "algorithm": alg,
                               "ranks": n, "group_size": g, "iterations": p.iterations})


@hookimpl
def federation_register_workloads(register) -> None:  # noqa: ANN001
    register(Collective)
