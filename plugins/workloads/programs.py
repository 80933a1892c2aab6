"""Rank-program workloads ``pingpong``, ``allreduce`` and ``halo3d`` (closed loop).

Each builds a :class:`~federation.programs.model.RankPrograms` with NumPy, one vectorised call
per program step (never per operation), under the MPI sequential semantics of Schedgen: a
blocking operation waits for the previous blocking point, an ``isend``/``irecv`` lets the
next operation start once it has *started*, and a wait adds a dependency on the handle's
finish (see :mod:`federation.plugins.workloads.programs_build`).  Operations of zero duration
(a ``compute`` of 0) are left out: they change no timing.

::

    workload: {kind: pingpong, sizes: [8B, 64KiB], iterations: 10, nodes: [0, 17]}
    workload: {kind: allreduce, ranks: 1024, size: 8B, iterations: 50, compute: 1us}
    workload: {kind: halo3d, nx: 50, ny: 50, nz: 50, pex: 8, pey: 8, pez: 8,
               computetime: 10us, iterations: 5}

Sources: sst-elements ember motifs (``src/sst/elements/ember/mpi/motifs/emberpingpong.cc``,
``emberallreduce.cc``, ``emberhalo3d.cc`` and ``../emberlinearmap.h``, read at commit
f782290), MPICH's recursive-doubling allreduce for the non-power-of-two steps.
Details in ``docs/program-workloads.md``.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from pydantic import Field, field_serializer, field_validator

from federation import Params, Workload, WorkloadContext, hookimpl
from federation.errors import ConfigError
from federation.models.limits import CLOCK_LIMIT, TIME_LIMIT_PS
from federation.models.units import ByteCount, Time, clock_ps
from federation.plugins.workloads.programs_build import (
    MAX_PROGRAM_OPS,
    ProgramAssembler,
    check_compute,
    check_ops,
    check_ranks,
    check_size,
    ember_decomposition,
    recursive_doubling,
    recursive_doubling_ops,
)
from federation.programs.collectives import (
    ALGORITHMS,
    algorithm_problem,
    allreduce,
    max_messages,
    select_algorithm,
)
from federation.programs.model import COMPUTE, FINISH, RECV, SEND, RankPrograms

# the names these checks had when they lived here
_check_ops, _check_size, _check_compute, _check_ranks = check_ops, check_size, check_compute, \
    check_ranks
__all__ = ["MAX_PROGRAM_OPS", "Allreduce", "Halo3d", "Pingpong"]


# --------------------------------------------------------------------------- pingpong


class PingpongParams(Params):
    sizes: list[ByteCount] = Field(default_factory=lambda: [8.0], min_length=1,
                                   description="message sizes, each run in turn")
    iterations: int = Field(1, ge=1, description="round trips per size")
    nodes: list[int] = Field(default_factory=lambda: [0, 1], min_length=2, max_length=2,
                             description="nodes of rank 0 and rank 1")


class Pingpong(Workload):
    """Two ranks bounce a message: rank 0 sends then receives, rank 1 receives then sends.

    For each size (in order), ``iterations`` round trips of blocking ``send``/``recv``
    (ember's ``PingPong`` motif with its default blocking calls).  Tag: the size's index in
    ``sizes``.  On an idle network each size takes ``iterations x 2 x`` the one-way latency
    of a message of that size.
    """

    name = "pingpong"
    closed_loop = True
    Params = PingpongParams
    params: PingpongParams

    def programs(self, ctx: WorkloadContext) -> RankPrograms:
        p = self.params
        n_nodes = ctx.network.n_nodes
        for i, node in enumerate(p.nodes):
            if not 0 <= node < n_nodes:
                raise ConfigError(f"node {node} does not exist (the machine has {n_nodes} "
                                  f"nodes)", path=f"workload.nodes[{i}]")
        if p.nodes[0] == p.nodes[1]:
            raise ConfigError(f"both ranks on node {p.nodes[0]}: a ping-pong needs two "
                              f"different nodes", path="workload.nodes")
        per_rank = 2 * len(p.sizes) * p.iterations
        _check_ops(2 * per_rank, "iterations")
        for i, size in enumerate(p.sizes):
            _check_size(int(size), ctx, f"sizes[{i}]", f"sizes[{i}]")
        sizes = np.array([int(s) for s in p.sizes], dtype=np.int64)
        nbytes = np.repeat(sizes, 2 * p.iterations)
        tags = np.repeat(np.arange(len(sizes), dtype=np.int32), 2 * p.iterations)
        first = np.resize(np.array([SEND, RECV], np.int8), per_rank)  # rank 0: send, recv, ...
        kind = np.concatenate([first, 1 - first])  # rank 1: recv, send, ...
        peer = np.repeat(np.array([1, 0], np.int32), per_rank)
        chain = np.arange(per_rank - 1, dtype=np.int64)
        before = np.concatenate([chain, chain + per_rank])
        return RankPrograms(
            rank_first=np.array([0, per_rank, 2 * per_rank]), op_kind=kind, op_peer=peer,
            op_bytes=np.tile(nbytes, 2), op_tag=np.tile(tags, 2),
            op_time_ps=np.zeros(2 * per_rank, np.int64), dep_before=before,
            dep_after=before + 1, dep_kind=np.full(before.shape[0], FINISH, np.int8),
            rank_node=np.array(p.nodes, dtype=np.int64),
            meta={"workload": "pingpong", "sizes": sizes.tolist(), "iterations": p.iterations})


# --------------------------------------------------------------------------- allreduce


class AllreduceParams(Params):
    ranks: int | None = Field(None, ge=1, description="ranks (rank i on node i); default: "
                              "every node of the machine")
    size: ByteCount = Field(8.0, description="bytes each rank contributes (and exchanges per "
                            "step)")
    iterations: int = Field(1, ge=1, description="allreduces in sequence")
    compute: Time = Field(0.0, description="compute before each allreduce (ember's "
                          "arg.compute)")
    algorithm: str = Field("recursive_doubling", description="recursive_doubling (MPICH's, "
                           "the default), ring, rabenseifner, binary_tree, or auto (MPICH "
                           "3.3's choice); see federation.programs.collectives")
    datatype_size: int = Field(1, ge=1, description="bytes per element (how ring and "
                               "rabenseifner split the buffer; what auto counts)")

    @field_validator("algorithm")
    @classmethod
    def _known(cls, v: str) -> str:
        if v != "auto" and v not in ALGORITHMS["allreduce"]:
            raise ValueError(f"allreduce has no algorithm {v!r} (one of auto, "
                             f"{', '.join(ALGORITHMS['allreduce'])})")
        return v


class Allreduce(Workload):
    """Repeated allreduce, ember's ``Allreduce``, by recursive doubling (MPICH's algorithm)
    unless ``algorithm`` names another (:mod:`federation.programs.collectives`).

    Each iteration: ``compute`` (left out when 0), then the allreduce of
    :func:`~federation.plugins.workloads.programs_build.recursive_doubling`: step k exchanges
    ``size`` bytes with ``rank XOR 2**k`` (irecv, isend, wait both) with tag k; a rank count
    that is not a power of two adds MPICH's pre- and post-step (tags log2(p) and log2(p)+1).
    Tags repeat every iteration: receives match in posting order, which keeps iterations
    apart.  Another algorithm is written by :func:`~federation.programs.collectives.allreduce`
    with tags from 0 likewise.
    """

    name = "allreduce"
    closed_loop = True
    Params = AllreduceParams
    params: AllreduceParams

    def programs(self, ctx: WorkloadContext) -> RankPrograms:
        p = self.params
        n_nodes = ctx.network.n_nodes
        n = p.ranks if p.ranks is not None else n_nodes
        _check_ranks(n, n_nodes, "ranks")
        _check_size(int(p.size), ctx, "size", "size")
        compute_ps = clock_ps(p.compute, "compute", path="workload.compute")
        _check_compute(compute_ps * p.iterations, "compute")
        alg = p.algorithm if p.algorithm != "auto" else \
            select_algorithm("allreduce", int(p.size), n, p.datatype_size)
        if int(p.size) % p.datatype_size:
            raise ConfigError(f"{int(p.size)} B is not a whole number of {p.datatype_size}-byte"
                              " elements (datatype_size)", path="workload.size")
        why = algorithm_problem("allreduce", alg, n, int(p.size), p.datatype_size)
        if why is not None:
            raise ConfigError(why, path="workload.algorithm")
        if alg == "recursive_doubling":
            per_iter = int(recursive_doubling_ops(n).sum()) + n * (compute_ps > 0)
        else:
            per_iter = 2 * max_messages("allreduce", alg, n) + n * (compute_ps > 0)
        _check_ops(per_iter * p.iterations, "iterations")
        asm = ProgramAssembler(n)
        everyone = np.arange(n, dtype=np.int64)
        for _ in range(p.iterations):
            if compute_ps > 0:
                asm.op(everyone, COMPUTE, time_ps=compute_ps)
            if alg == "recursive_doubling":
                recursive_doubling(asm, n, int(p.size))
            else:
                allreduce(asm, everyone, int(p.size), algorithm=alg,
                          datatype_size=p.datatype_size)
        meta = {"workload": "allreduce", "ranks": n, "iterations": p.iterations,
                "size": int(p.size)}
        if alg != "recursive_doubling":
            meta["algorithm"] = alg
        return asm.build(meta=meta)


# --------------------------------------------------------------------------- halo3d

_GRID = ("pex", "pey", "pez")


class Halo3dParams(Params):
    nx: int = Field(100, ge=1, description="local grid cells in x per rank")
    ny: int = Field(100, ge=1, description="local grid cells in y per rank")
    nz: int = Field(100, ge=1, description="local grid cells in z per rank")
    pex: int = Field(0, ge=0, description="ranks in x (0 with pey and pez 0: ember's choice)")
    pey: int = Field(0, ge=0, description="ranks in y")
    pez: int = Field(0, ge=0, description="ranks in z")
    ranks: int | None = Field(None, ge=1, description="ranks to decompose when pex, pey, pez "
                              "are 0; default: every node")
    fields_per_cell: int = Field(1, ge=1, description="variables per cell")
    datatype_width: int = Field(8, ge=1, description="bytes per variable")
    iterations: int = Field(1, ge=1)
    computetime: Time | None = Field(None, description="compute per iteration; default: "
                                     "cells x fields x flopspercell / peflops (ember)")
    peflops: float = Field(1e10, gt=0, description="FLOP/s of a rank, for the default "
                           "computetime")
    flopspercell: int = Field(26, ge=0, description="FLOPs per cell and field, for the "
                              "default computetime")
    copytime: Time = Field(0.0, description="compute after each dimension's exchange")
    doreduce: Literal[0, 1] = Field(1, description="1: an 8-byte allreduce ends each "
                                    "iteration (ember's default)")

    @field_validator("computetime", "copytime", mode="before")
    @classmethod
    def _unit_required(cls, v: Any) -> Any:
        """ember reads these as nanoseconds and this schema a bare number as seconds: a bare
        non-zero number is refused rather than read 10^9 times too long."""
        if isinstance(v, int | float) and not isinstance(v, bool) and v != 0:
            raise ValueError(f"give a unit, e.g. '{v}ns' (ember's value is in nanoseconds; a "
                             f"bare number here would mean {v} s)")
        return v

    @field_serializer("computetime", "copytime")
    def _with_unit(self, v: float | None) -> str | float | None:
        """Written with its unit (``'1e-07s'``), so that a point's ``resolved`` document,
        which ``federation run`` takes as it is, passes the check above."""
        return f"{v!r}s" if v else v


class Halo3d(Workload):
    """ember's ``Halo3D`` motif: 3-D nearest-neighbour face exchange on a ``pex x pey x pez``
    process grid, non-periodic, blocking sends (sst-elements
    ``src/sst/elements/ember/mpi/motifs/emberhalo3d.cc``).

    Rank r sits at x = r mod pex, y = (r div pex) mod pey, z = r div (pex pey) (ember's linear
    rank map); a rank on a face of the grid has no neighbour beyond it.  Each iteration, as
    ember enqueues it: ``compute`` (computetime), then for x, y, z in turn: ``irecv`` from the
    - neighbour, ``irecv`` from the + neighbour, blocking ``send`` to the - then the +
    neighbour, wait on both receives, then ``copytime`` of compute; last, with ``doreduce: 1``,
    an allreduce of one double (8 B).  Face bytes: ``fields_per_cell x datatype_width x`` the
    face's cells (ny nz for x, nx nz for y, nx ny for z).  Faces use tag 0 (ember's); the
    allreduce is recursive doubling with tags from 1 up (ember's own goes through the MPI
    library model's tree, in another communicator).
    """

    name = "halo3d"
    closed_loop = True
    Params = Halo3dParams
    params: Halo3dParams

    def grid(self, n_nodes: int) -> tuple[int, int, int]:
        """(pex, pey, pez): the given process grid, or ember's choice for ``ranks``."""
        p = self.params
        given = (p.pex, p.pey, p.pez)
        zero = [f for f, v in zip(_GRID, given, strict=True) if v == 0]
        if zero and len(zero) < 3:
            raise ConfigError(f"{zero[0]} is 0 (ember would then choose the whole grid "
                              f"itself, overriding the others): give all of pex, pey, pez, "
                              f"or none", path=f"workload.{zero[0]}")
        if not zero:
            world = p.pex * p.pey * p.pez
            if p.ranks is not None and p.ranks != world:
                raise ConfigError(f"ranks is {p.ranks} but pex x pey x pez = {world}; give "
                                  f"one or the other", path="workload.ranks")
            _check_ranks(world, n_nodes, "pex")
            return given
        world = p.ranks if p.ranks is not None else n_nodes
        _check_ranks(world, n_nodes, "ranks")
        return ember_decomposition(world)

    def compute_ps(self) -> int:
        """Compute per iteration in ps: ``computetime``, or ember's default from the FLOPs
        (cells x fields x flopspercell at peflops, truncated to whole ns as ember does)."""
        p = self.params
        if p.computetime is not None:
            return clock_ps(p.computetime, "computetime", path="workload.computetime")
        flops = p.nx * p.ny * p.nz * p.fields_per_cell * p.flopspercell
        ns = flops / (p.peflops / 1e9)  # a float: inf, not an OverflowError, when too large
        if not ns * 1000 < TIME_LIMIT_PS:
            raise ConfigError(f"the default computetime ({flops:.4g} flops per iteration at "
                              f"peflops {p.peflops:g} flop/s = {ns / 1e9:.4g} s) is beyond "
                              f"{CLOCK_LIMIT}; give computetime, or a larger peflops",
                              path="workload.peflops")
        return int(ns) * 1000

    def face_bytes(self) -> tuple[int, int, int]:
        """Bytes of an x, y and z face."""
        p = self.params
        cell = p.fields_per_cell * p.datatype_width
        return cell * p.ny * p.nz, cell * p.nx * p.nz, cell * p.nx * p.ny

    @staticmethod
    def neighbours(grid: tuple[int, int, int]) -> np.ndarray:
        """int64[3, 2, ranks]: per dimension, the - and + neighbour of every rank (-1: none)."""
        pex, pey, pez = grid
        r = np.arange(pex * pey * pez, dtype=np.int64)
        pos = (r % pex, (r // pex) % pey, r // (pex * pey))
        stride = (1, pex, pex * pey)
        out = np.full((3, 2, r.shape[0]), -1, dtype=np.int64)
        for d in range(3):
            out[d, 0] = np.where(pos[d] > 0, r - stride[d], -1)
            out[d, 1] = np.where(pos[d] < grid[d] - 1, r + stride[d], -1)
        return out

    def programs(self, ctx: WorkloadContext) -> RankPrograms:
        p = self.params
        grid = self.grid(ctx.network.n_nodes)
        n = grid[0] * grid[1] * grid[2]
        nb = self.neighbours(grid)
        faces = self.face_bytes()
        for d, (size, dims) in enumerate(zip(faces, (("ny", "nz"), ("nx", "nz"), ("nx", "ny")),
                                             strict=True)):
            if (nb[d] >= 0).any():  # a face that is exchanged
                field = max(dims, key=lambda f: getattr(p, f))
                _check_size(size, ctx, f"the {'xyz'[d]} faces (fields_per_cell x datatype_width "
                            f"x {dims[0]} x {dims[1]} = {p.fields_per_cell} x "
                            f"{p.datatype_width} x {getattr(p, dims[0])} x "
                            f"{getattr(p, dims[1])})", field)
        comp = self.compute_ps()
        copy = clock_ps(p.copytime, "copytime", path="workload.copytime")
        field = "computetime" if p.computetime is not None or not copy else "copytime"
        _check_compute((comp + 3 * copy) * p.iterations, field)
        per_iter = (comp > 0) + 3 * (copy > 0) + 2 * (nb >= 0).sum(axis=(0, 1))
        if p.doreduce:
            per_iter = per_iter + recursive_doubling_ops(n)
        _check_ops(int(per_iter.sum()) * p.iterations, "iterations")
        asm = ProgramAssembler(n)
        everyone = np.arange(n, dtype=np.int64)
        has = [[np.nonzero(nb[d, s] >= 0)[0] for s in (0, 1)] for d in range(3)]
        for _ in range(p.iterations):
            if comp > 0:
                asm.op(everyone, COMPUTE, time_ps=comp)
            for d in range(3):
                lo, hi = has[d]
                h_lo = asm.op(lo, RECV, nb[d, 0, lo], faces[d], blocking=False)
                h_hi = asm.op(hi, RECV, nb[d, 1, hi], faces[d], blocking=False)
                asm.op(lo, SEND, nb[d, 0, lo], faces[d])
                asm.op(hi, SEND, nb[d, 1, hi], faces[d])
                asm.wait(lo, h_lo)
                asm.wait(hi, h_hi)
                if copy > 0:
                    asm.op(everyone, COMPUTE, time_ps=copy)
            if p.doreduce:
                recursive_doubling(asm, n, 8, tag_base=1)
        return asm.build(meta={"workload": "halo3d", "grid": list(grid),
                               "iterations": p.iterations, "face_bytes": list(faces)})


@hookimpl
def federation_register_workloads(register) -> None:  # noqa: ANN001
    register(Pingpong)
    register(Allreduce)
    register(Halo3d)
