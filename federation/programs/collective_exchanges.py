"""The exchange collectives of :mod:`federation.programs.collectives`: allgather, alltoall,
alltoallv, scatter and gather, one function per algorithm (the others, and the conventions,
in :mod:`federation.programs.collective_algorithms`).

Sources: MPICH 3.3's ``src/mpi/coll/<op>/<op>_intra_<algorithm>.c``; Open MPI's
``ompi/mca/coll/base`` (the linear scatter and gather); J. Bruck et al., "Efficient
Algorithms for All-to-All Communications in Multiport Message-Passing Systems", IEEE TPDS
8(11), 1997 (the allgather and the index algorithm).
"""

from __future__ import annotations

import numpy as np

from federation.programs.collective_algorithms import _binomial_down, _binomial_up, _masks
from federation.programs.collective_ctx import MPICH_THRESHOLDS, Ctx
from federation.programs.model import RECV, SEND

# --------------------------------------------------------------------------- allgather


def allgather_ring(ctx: Ctx, nbytes: int, dt: int) -> None:
    """Ring allgather, MPICH's ``MPIR_Allgather_intra_ring``: p - 1 steps; in step s each rank
    sends block ``r - s + 1`` to ``r + 1`` and receives block ``r - s`` from ``r - 1``
    (``MPIC_Sendrecv``)."""
    p = ctx.p
    ctx.note_blocks(p)
    i = np.arange(p)
    for s in range(1, p):
        ctx.sendrecv(i, (i + 1) % p, nbytes, (i - 1) % p, nbytes, s - 1,
                     _masks((i - s + 1) % p, 1, p))


def allgather_recursive_doubling(ctx: Ctx, nbytes: int, dt: int) -> None:
    """Recursive-doubling allgather, MPICH's ``MPIR_Allgather_intra_recursive_doubling``
    (power-of-two communicators): in step k, ranks r and ``r XOR 2^k`` exchange the 2^k
    blocks of their subtrees (``MPIC_Sendrecv``)."""
    p = ctx.p
    ctx.note_blocks(p)
    i = np.arange(p)
    mask, k = 1, 0
    while mask < p:
        mine = (i >> k) << k
        ctx.sendrecv(i, i ^ mask, mask * nbytes, i ^ mask, mask * nbytes, k,
                     _masks(mine, mask, p))
        mask <<= 1
        k += 1


def allgather_bruck(ctx: Ctx, nbytes: int, dt: int) -> None:
    """Bruck's allgather (Bruck et al. 1997), MPICH's ``MPIR_Allgather_intra_brucks``: while
    2^k <= p/2, each rank sends its first 2^k blocks (its own and those after it) to
    ``r - 2^k`` and receives as many from ``r + 2^k``; then the remaining p - 2^K blocks
    likewise (any p, ``ceil(log2 p)`` steps)."""
    p = ctx.p
    ctx.note_blocks(p)
    i = np.arange(p)
    pof2, k = 1, 0
    while pof2 <= p // 2:
        ctx.sendrecv(i, (i - pof2) % p, pof2 * nbytes, (i + pof2) % p, pof2 * nbytes, k,
                     _masks(i, pof2, p))
        pof2 *= 2
        k += 1
    rem = p - pof2
    if rem:
        ctx.sendrecv(i, (i - pof2) % p, rem * nbytes, (i + pof2) % p, rem * nbytes, k,
                     _masks(i, rem, p))


# --------------------------------------------------------------------------- alltoall


def alltoall_pairwise(ctx: Ctx, nbytes: int, dt: int) -> None:
    """Pairwise exchange, MPICH's ``MPIR_Alltoall_intra_pairwise``: p - 1 steps; in step i
    each rank exchanges with ``r XOR i`` (power-of-two p) or sends to ``r + i`` and receives
    from ``r - i`` (``MPIC_Sendrecv``)."""
    p = ctx.p
    ctx.note_blocks(p)
    r = np.arange(p)
    pof2 = p & (p - 1) == 0
    for i in range(1, p):
        dst, src = (r ^ i, r ^ i) if pof2 else ((r + i) % p, (r - i) % p)
        ctx.sendrecv(r, dst, nbytes, src, nbytes, i - 1, _masks((dst - r) % p, 1, p))


def alltoall_bruck(ctx: Ctx, nbytes: int, dt: int) -> None:
    """Bruck's index algorithm (Bruck et al. 1997), MPICH's ``MPIR_Alltoall_intra_brucks``:
    after a local rotation, for 2^k < p each rank sends the blocks whose index has bit k set
    to ``r + 2^k`` and receives as many from ``r - 2^k`` (``MPIC_Sendrecv``); a local
    rotation back.  ``ceil(log2 p)`` steps of about p/2 blocks."""
    p = ctx.p
    ctx.note_blocks(p)
    r = np.arange(p)
    idx = np.arange(p)
    pof2, k = 1, 0
    while pof2 < p:
        sel = (idx & pof2) != 0
        n = int(sel.sum()) * nbytes
        bits = sum(1 << int(b) for b in idx[sel])
        ctx.sendrecv(r, (r + pof2) % p, n, (r - pof2) % p, n, k,
                     lambda b=bits: [b] * p)
        pof2 *= 2
        k += 1


def _scattered(ctx: Ctx, send_bytes: np.ndarray, throttle: int) -> None:
    """MPICH's scattered exchange (``MPIR_Alltoall_intra_scattered`` and its alltoallv): in
    blocks of ``throttle`` partners (0: all at once), irecv from ``r + i``, then isend to
    ``r - i``, then wait for all of the block; ``send_bytes[a, b]`` from a to b (or
    ``[comm, a, b]``), a zero size posts nothing (alltoallv), and a rank's own block is a
    local copy (left out).  Communicators whose zero sizes differ are written by groups."""
    if send_bytes.ndim == 3 and ctx.m > 1:
        zero = send_bytes == 0
        if not (zero == zero[:1]).all():  # by groups of communicators with the same zeros
            _, group = np.unique(zero.reshape(ctx.m, -1), axis=0, return_inverse=True)
            for g in range(int(group.max()) + 1):
                sel = np.flatnonzero(group.reshape(-1) == g)
                sub = Ctx(ctx.sink, ctx.comm[sel], ctx.tag0, ctx.trace)
                _scattered(sub, send_bytes[sel], throttle)
                ctx.top = max(ctx.top, sub.top)
            return
    sb = send_bytes if send_bytes.ndim == 3 else send_bytes[None]
    p = ctx.p
    ctx.note_blocks(p)
    r = np.arange(p)
    block = throttle if throttle > 0 else p
    for bi, ii in enumerate(range(0, p, block)):
        ss = min(block, p - ii)
        handles = []
        for i in range(ss):
            src = (r + i + ii) % p
            size = sb[:, src, r]
            go = (src != r) & (size[0] > 0)
            handles.append((r[go], ctx.op(RECV, r[go], src[go], size[:, go], bi, False)))
        for i in range(ss):
            dst = (r - i - ii) % p
            size = sb[:, r, dst]
            go = (dst != r) & (size[0] > 0)
            handles.append((r[go], ctx.op(SEND, r[go], dst[go], size[:, go], bi, False,
                                          _masks((dst[go] - r[go]) % p, 1, p))))
        for who, h in handles:
            ctx.wait(who, h)


def alltoall_scattered(ctx: Ctx, nbytes: int, dt: int) -> None:
    """MPICH's ``MPIR_Alltoall_intra_scattered`` (medium messages): irecv/isend to every
    other rank, ``MPIR_CVAR_ALLTOALL_THROTTLE`` (32) of each at a time, then wait."""
    _scattered(ctx, np.full((ctx.p, ctx.p), nbytes, np.int64),
               MPICH_THRESHOLDS["ALLTOALL_THROTTLE"])


def alltoall_linear(ctx: Ctx, nbytes: int, dt: int) -> None:
    """Every irecv and isend posted at once, then one wait: MPICH's scattered algorithm with
    ``MPIR_CVAR_ALLTOALL_THROTTLE=0`` (Open MPI's basic linear alltoall does the same)."""
    _scattered(ctx, np.full((ctx.p, ctx.p), nbytes, np.int64), 0)


def alltoallv_scattered(ctx: Ctx, sizes: np.ndarray) -> None:
    """MPICH's ``MPIR_Alltoallv_intra_scattered``: as :func:`alltoall_scattered`, a zero
    count posting nothing."""
    _scattered(ctx, sizes, MPICH_THRESHOLDS["ALLTOALL_THROTTLE"])


def alltoallv_linear(ctx: Ctx, sizes: np.ndarray) -> None:
    """Every non-empty irecv and isend at once, then one wait (throttle 0)."""
    _scattered(ctx, sizes, 0)


# --------------------------------------------------------------------------- scatter, gather


def scatter_binomial(ctx: Ctx, nbytes: int, root: int, dt: int) -> None:
    """Binomial scatter, MPICH's ``MPIR_Scatter_intra_binomial``: each relative rank receives
    the blocks of its subtree (``min(lowbit, p - rel)`` of them) from its parent, then sends
    each child the blocks of the child's subtree, the farthest child first."""
    p = ctx.p
    ctx.note_blocks(p)

    def subtree(rel: np.ndarray) -> np.ndarray:
        low = rel & -rel
        return np.minimum(low, p - rel) * nbytes

    def blocks(rel: np.ndarray):  # noqa: ANN202
        return _masks((rel + root) % p, np.minimum(rel & -rel, p - rel), p)

    _binomial_down(ctx, root, subtree, 0, blocks)


def gather_binomial(ctx: Ctx, nbytes: int, root: int, dt: int) -> None:
    """Binomial gather, MPICH's ``MPIR_Gather_intra_binomial``: up the tree of
    :func:`reduce_binomial`, each rank sending the blocks of its subtree
    (``min(lowbit, p - rel)`` of them)."""
    p = ctx.p
    ctx.note_blocks(p)

    def subtree(rel: np.ndarray) -> np.ndarray:
        low = np.where(rel == 0, 1 << p.bit_length(), rel & -rel)
        return np.minimum(low, p - rel) * nbytes

    def blocks(rel: np.ndarray):  # noqa: ANN202
        return _masks((rel + root) % p, np.minimum(rel & -rel, p - rel), p)

    _binomial_up(ctx, root, subtree, 0, blocks)


def scatter_linear(ctx: Ctx, nbytes: int, root: int, dt: int) -> None:
    """Linear scatter, Open MPI's ``ompi_coll_base_scatter_intra_basic_linear``: the root
    sends each other rank its block in rank order (blocking); the others receive."""
    p = ctx.p
    ctx.note_blocks(p)
    others = np.array([i for i in range(p) if i != root], dtype=np.int64)
    for i in others:
        ctx.send(np.array([root]), np.array([i]), nbytes, 0, lambda i=i: [1 << int(i)])
    ctx.recv(others, np.full(others.shape, root), nbytes, 0)


def gather_linear(ctx: Ctx, nbytes: int, root: int, dt: int) -> None:
    """Linear gather, Open MPI's ``ompi_coll_base_gather_intra_basic_linear``: each other
    rank sends its block to the root (blocking), which receives them in rank order."""
    p = ctx.p
    ctx.note_blocks(p)
    others = np.array([i for i in range(p) if i != root], dtype=np.int64)
    ctx.send(others, np.full(others.shape, root), nbytes, 0, _masks(others, 1, p))
    for i in others:
        ctx.recv(np.array([root]), np.array([i]), nbytes, 0)
