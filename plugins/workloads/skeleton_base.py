"""What the application skeletons share: process grids, neighbour exchanges, compute phases,
collectives, and the checks before anything is built.

A skeleton (ember's motifs, the SWM skeletons of CODES, the many-node paper's phase 3) is an
application with its computation replaced by timed ``compute`` operations and its MPI calls
kept.  Each skeleton module of this package subclasses :class:`Skeleton` and writes one
iteration at a time into a :class:`Writer`, which wraps a
:class:`~federation.programs.assembler.ProgramAssembler` (every call vectorised over ranks),
a :class:`~federation.programs.compute_time.ComputeDraws` (each compute phase its own seeded
stream; ``sampling: constant | variable``) and the collectives of
:mod:`federation.programs.collectives`.

Tags: point-to-point messages use small tags chosen by each skeleton; collectives use tags
from :data:`COLLECTIVE_TAG` up (MPI gives collectives their own context; a range of tags
stands in for it), reused by every collective: ranks call collectives in the same order, and
each collective ends with its own operations finished, so the k-th message of a channel
always meets the k-th receive.  A message a rank would send itself (a periodic grid of
extent 1 or 2) is a local copy in MPI and is left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import product
from typing import ClassVar

import numpy as np
from pydantic import Field

from federation import Params, Workload, WorkloadContext
from federation.errors import ConfigError
from federation.models.units import PS_PER_S
from federation.plugins.workloads.programs_build import check_compute, check_ops, check_ranks
from federation.programs.assembler import ProgramAssembler
from federation.programs.collectives import collective
from federation.programs.compute_time import ComputeDraws, ComputeTime, PhaseSampler, Sampling
from federation.programs.model import COMPUTE, RECV, SEND, RankPrograms

#: first tag of collectives (point-to-point tags of the skeletons stay below)
COLLECTIVE_TAG = 1 << 20


def zero_compute() -> ComputeTime:
    return ComputeTime(dist="constant", value=0.0)


def compute_field(description: str) -> ComputeTime:  # noqa: D103 - pydantic Field helper
    return Field(default_factory=zero_compute, description=description + ": a time or a "
                 "distribution (federation.programs.compute_time)")


class SkeletonParams(Params):
    ranks: int | None = Field(None, ge=1, description="ranks (rank i on node i); default: "
                              "every node, or the product of the process grid when given")
    iterations: int = Field(1, ge=1, description="iterations (time steps) of the skeleton")
    sampling: Sampling = Field("variable", description="variable: a seeded draw per rank and "
                               "call; constant: each distribution's mean everywhere")


# --------------------------------------------------------------------------- process grids


def dims_create(n: int, d: int) -> tuple[int, ...]:
    """A balanced ``d``-dimensional factorisation of ``n`` (MPI_Dims_create's contract: the
    extents as close to each other as possible, in non-increasing order): of all ordered
    factorisations, the one with the smallest largest extent, then the smallest sum."""
    best: tuple[int, ...] | None = None

    def rec(rest: int, left: int, upper: int, acc: tuple[int, ...]) -> None:
        nonlocal best
        if left == 1:
            if rest <= upper:
                cand = (*acc, rest)
                key = (max(cand), sum(cand))
                if best is None or key < (max(best), sum(best)):
                    best = cand
            return
        for f in range(min(upper, rest), 0, -1):
            if rest % f == 0:
                rec(rest // f, left - 1, f, (*acc, f))

    rec(n, d, n, ())
    assert best is not None
    return best


def coords(n: int, dims: Sequence[int]) -> np.ndarray:
    """int64[n, d]: the coordinates of ranks 0..n-1 on ``dims``, the first extent fastest
    (rank = x + dims[0] (y + dims[1] z) ...)."""
    r = np.arange(n, dtype=np.int64)
    out = np.empty((n, len(dims)), dtype=np.int64)
    div = 1
    for i, e in enumerate(dims):
        out[:, i] = (r // div) % e
        div *= e
    return out


def rank_of(c: np.ndarray, dims: Sequence[int]) -> np.ndarray:
    """The ranks of coordinates ``c`` (int64[..., d])."""
    r = np.zeros(c.shape[:-1], dtype=np.int64)
    mul = 1
    for i, e in enumerate(dims):
        r = r + c[..., i] * mul
        mul *= e
    return r


def neighbour(dims: Sequence[int], offset: Sequence[int], periodic: bool) -> np.ndarray:
    """int64[n]: each rank's neighbour at ``offset`` on the grid (-1: none, off a
    non-periodic edge; a periodic offset that wraps onto the rank itself is -1 too)."""
    n = int(np.prod(dims))
    c = coords(n, dims) + np.asarray(offset, dtype=np.int64)
    e = np.asarray(dims, dtype=np.int64)
    inside = ((c >= 0) & (c < e)).all(axis=1)
    out = rank_of(c % e, dims)
    if not periodic:
        out = np.where(inside, out, -1)
    return np.where(out == np.arange(n), -1, out)


def stencil_offsets(d: int, max_distance: int) -> list[tuple[int, ...]]:
    """Offsets with 1 .. ``max_distance`` non-zero components of -1/+1, in SWM's order
    (lexicographic over -1, 0, +1 with the first dimension most significant): 2d faces for
    1, 3^d - 1 (26 in 3-D) for d."""
    return [o for o in product((-1, 0, 1), repeat=d) if 1 <= sum(map(abs, o)) <= max_distance]


def box_halo(dims: Sequence[int], cells: Sequence[int], depth: int, unit: int,
             max_distance: int, periodic: bool) -> tuple[list[np.ndarray], list[int]]:
    """The neighbours and message bytes of a halo of ``depth`` layers around a box of
    ``cells`` per rank: for each offset of :func:`stencil_offsets`, the neighbour and the
    size of the shared region (``cells`` along the axes the offset does not move on,
    ``depth`` along those it does) times ``unit`` bytes: faces, edges, corners."""
    peers, sizes = [], []
    for o in stencil_offsets(len(dims), max_distance):
        region = 1
        for c, step in zip(cells, o, strict=True):
            region *= depth if step else c
        peers.append(neighbour(dims, o, periodic))
        sizes.append(region * unit)
    return peers, sizes


# --------------------------------------------------------------------------- writing


class Writer:
    """One point's programs being written (see the module docstring)."""

    def __init__(self, n: int, draws: ComputeDraws) -> None:
        self.n = n
        self.asm = ProgramAssembler(n)
        self.draws = draws
        self.everyone = np.arange(n, dtype=np.int64)

    def phase(self, spec: ComputeTime, field: str) -> PhaseSampler | None:
        """The sampler of a compute phase (None when it is always 0: left out)."""
        return None if spec.is_zero() else self.draws.phase(spec, field)

    def compute(self, phase: PhaseSampler | None, ranks: np.ndarray | None = None,
                scale: float | np.ndarray = 1.0) -> None:
        """One compute call of ``phase`` on ``ranks`` (all by default), its draws multiplied by
        ``scale`` (a per-rank array, or a number)."""
        if phase is None:
            return
        r = self.everyone if ranks is None else np.asarray(ranks, dtype=np.int64)
        if r.shape[0] == 0:
            return
        t = phase.draw(r)
        if not np.isscalar(scale) or scale != 1.0:
            t = np.floor(t * np.asarray(scale, dtype=np.float64) + 0.5).astype(np.int64)
        self.asm.op(r, COMPUTE, time_ps=t)

    def compute_ps(self, time_ps: np.ndarray | int, ranks: np.ndarray | None = None) -> None:
        """A fixed compute (ps) on ``ranks``: for skeletons whose durations come from counts."""
        r = self.everyone if ranks is None else np.asarray(ranks, dtype=np.int64)
        t = np.broadcast_to(np.asarray(time_ps, dtype=np.int64), r.shape)
        keep = t > 0
        if keep.any():
            self.asm.op(r[keep], COMPUTE, time_ps=t[keep])

    def exchange(self, peers: Sequence[np.ndarray], sizes: Sequence[np.ndarray | int],
                 tag: int, *, interleave: bool = False) -> None:
        """A neighbour exchange: in each direction k, rank r sends ``sizes[k]`` bytes (per
        rank, or one number) to ``peers[k][r]`` and receives from it (-1: no neighbour there).
        The directions must come in opposite pairs of equal sizes (a halo's faces), so what
        r receives from ``peers[k][r]`` is what that rank sends back the opposite way; every
        message has ``tag`` (a channel's messages meet in order).  Order: ``irecv`` from
        every neighbour, ``isend`` to every neighbour, then wait for all; ``interleave``:
        ``irecv`` and ``isend`` neighbour by neighbour (SWM's order)."""
        handles: list[tuple[np.ndarray, np.ndarray]] = []
        pk = [np.asarray(q, dtype=np.int64) for q in peers]
        sz = [np.broadcast_to(np.asarray(s, dtype=np.int64), (self.n,)) for s in sizes]

        def post(k: int, kind: int) -> None:
            who = np.flatnonzero(pk[k] >= 0)
            if who.size:
                h = self.asm.op(who, kind, pk[k][who], sz[k][who], tag, blocking=False)
                handles.append((who, h))

        order = [(k, kind) for k in range(len(pk)) for kind in (RECV, SEND)] if interleave \
            else [(k, RECV) for k in range(len(pk))] + [(k, SEND) for k in range(len(pk))]
        for k, kind in order:
            post(k, kind)
        for who, h in handles:
            self.asm.wait(who, h)

    def shift(self, to: np.ndarray, frm: np.ndarray, size: np.ndarray | int, tag: int) -> None:
        """One direction of a halo, LAMMPS' and SWM's ``doP2P``: ``irecv`` from ``frm``,
        blocking ``send`` to ``to``, wait for the receive (-1: no such neighbour)."""
        to, frm = np.asarray(to, dtype=np.int64), np.asarray(frm, dtype=np.int64)
        sz = np.broadcast_to(np.asarray(size, dtype=np.int64), (self.n,))
        rw = np.flatnonzero(frm >= 0)
        h = self.asm.op(rw, RECV, frm[rw], sz[rw], tag, blocking=False) if rw.size else None
        sw = np.flatnonzero(to >= 0)
        if sw.size:
            self.asm.op(sw, SEND, to[sw], sz[sw], tag)
        if h is not None:
            self.asm.wait(rw, h)

    def sweep_block(self, ins: Sequence[np.ndarray], outs: Sequence[np.ndarray],
                    sizes: Sequence[int], tag: int, phase: PhaseSampler | None,
                    scale: float = 1.0) -> None:
        """One block of a KBA wavefront sweep (ember's Sweep3D, SNAP): blocking receives from
        the upstream neighbours (``ins``), compute, blocking sends to the downstream ones
        (``outs``); ``sizes[k]`` for the k-th pair of directions; -1: none."""
        for k, src in enumerate(ins):
            who = np.flatnonzero(src >= 0)
            if who.size:
                self.asm.op(who, RECV, src[who], sizes[k], tag)
        self.compute(phase, scale=scale)
        for k, dst in enumerate(outs):
            who = np.flatnonzero(dst >= 0)
            if who.size:
                self.asm.op(who, SEND, dst[who], sizes[k], tag)

    def collective(self, op: str, comm: np.ndarray | None, nbytes: int,
                   algorithm: str = "auto", root: int = 0, field: str = "workload") -> None:
        """A collective (tags from :data:`COLLECTIVE_TAG`) on ``comm`` (all ranks: None)."""
        collective(self.asm, op, comm, nbytes, algorithm=algorithm, root=root,
                   tag=COLLECTIVE_TAG, path=field)

    def build(self, meta: dict) -> RankPrograms:
        return self.asm.build(meta=meta)


class Skeleton(Workload):
    """A skeleton workload: subclasses give :meth:`layout` (ranks, and anything derived
    from the machine), :meth:`ops_per_iteration` (an upper bound, checked before building),
    :meth:`mean_compute_ps` (per rank and iteration, checked against the clock) and
    :meth:`iteration` (one iteration's calls)."""

    closed_loop = True
    #: where the skeleton's pattern comes from (for its docs page)
    source: ClassVar[str] = ""

    def n_ranks(self, n_nodes: int) -> int:
        p = self.params
        n = p.ranks if p.ranks is not None else n_nodes
        check_ranks(n, n_nodes, "ranks")
        return n

    def setup(self, n: int, w: Writer) -> None:
        """Compute phases and anything derived from the rank count (called once)."""

    def ops_per_iteration(self, n: int) -> int:
        raise NotImplementedError

    def iteration(self, w: Writer, it: int) -> None:
        raise NotImplementedError

    def meta(self, n: int) -> dict:
        return {}

    def programs(self, ctx: WorkloadContext) -> RankPrograms:
        p = self.params
        n = self.n_ranks(ctx.network.n_nodes)
        self.check_sizes(n, ctx)
        check_ops(self.ops_per_iteration(n) * p.iterations, "iterations")
        w = Writer(n, ComputeDraws(ctx.rng, p.sampling, n))
        self.setup(n, w)
        mean = self.mean_compute_ps(w)
        check_compute(int(mean * p.iterations), self.compute_field)
        for it in range(p.iterations):
            self.iteration(w, it)
        return w.build({"workload": self.name, "ranks": n, "iterations": p.iterations,
                        **self.meta(n)})

    #: the field a rank's total compute is blamed on
    compute_field: ClassVar[str] = "compute"

    def check_sizes(self, n: int, ctx: WorkloadContext) -> None:
        """Each message size against the engine's limits (subclasses check theirs)."""

    def mean_compute_ps(self, w: Writer) -> float:
        """A rank's mean compute per iteration (ps), for the clock check."""
        return 0.0


def phase_mean_ps(phase: PhaseSampler | None) -> float:
    """A compute phase's largest mean (ps; 0 without it)."""
    return 0.0 if phase is None else float(phase.mean_s.max()) * PS_PER_S


def refuse(message: str, field: str) -> ConfigError:
    return ConfigError(message, path=f"workload.{field}")


__all__ = ["COLLECTIVE_TAG", "Skeleton", "SkeletonParams", "Writer", "box_halo", "compute_field",
           "coords", "dims_create", "neighbour", "phase_mean_ps", "rank_of", "refuse",
           "stencil_offsets", "zero_compute"]
