"""The collective algorithms of :mod:`federation.programs.collectives`, one function each.

Each writes, through a :class:`~federation.programs.collective_ctx.Ctx`, the point-to-point
calls every position of the communicator makes, in its program order; a step's calls are
one vectorised call over all positions (and all communicators) that make it.  Each is
written from the algorithm's public description, cited in its docstring; the calls are
MPICH's internal ones: ``MPIC_Send``/``MPIC_Recv`` are blocking, ``MPIC_Sendrecv`` is
irecv, isend, wait both (:meth:`Ctx.sendrecv`).  Tags: each step its own (``step``), so the
messages of two steps between the same pair never meet the wrong receive.

Sources: R. Thakur, R. Rabenseifner, W. Gropp, "Optimization of Collective Communication
Operations in MPICH", IJHPCA 19(1), 2005 (the algorithms and their selection); MPICH 3.3's
``src/mpi/coll/<op>/<op>_intra_<algorithm>.c`` (the exact steps, the non-power-of-two
handling, block splits); Open MPI's ``ompi/mca/coll/base`` (the tree barrier, the linear
scatter and gather); J. Bruck et al., "Efficient Algorithms for All-to-All Communications in
Multiport Message-Passing Systems", IEEE TPDS 8(11), 1997.
"""

from __future__ import annotations

import numpy as np

from federation.programs.collective_ctx import Ctx, pof2_floor
from federation.programs.model import RECV, SEND

ALL = -1  # a message that carries everything its sender holds (Trace masks)


def _range_mask(lo: int, n: int, p: int) -> int:
    """Blocks ``lo .. lo+n-1`` (modulo ``p``) as a bit mask."""
    m = 0
    for t in range(n):
        m |= 1 << ((lo + t) % p)
    return m


def _masks(lo: np.ndarray, n: np.ndarray | int, p: int):  # noqa: ANN202
    """A deferred list of :func:`_range_mask` per position (computed only when traced)."""
    nn = np.broadcast_to(np.asarray(n), lo.shape)
    return lambda: [_range_mask(int(a), int(b), p) for a, b in zip(lo, nn, strict=True)]


def _log2(m: int) -> int:
    return m.bit_length() - 1


# --------------------------------------------------------------------------- barrier


def barrier_dissemination(ctx: Ctx) -> None:
    """Dissemination barrier (Hensgen, Finkel, Manber 1988; MPICH's
    ``MPIR_Barrier_intra_dissemination``): in step k each rank exchanges an empty message
    with ``rank + 2^k`` (to) and ``rank - 2^k`` (from), ``ceil(log2 p)`` steps."""
    p = ctx.p
    i = np.arange(p)
    mask, step = 1, 0
    while mask < p:
        ctx.sendrecv(i, (i + mask) % p, 0, (i - mask) % p, 0, step)
        mask <<= 1
        step += 1


def barrier_tree(ctx: Ctx) -> None:
    """Tree barrier, Open MPI's ``ompi_coll_base_barrier_intra_tree``: up a binomial tree
    (for jump 1, 2, 4, ...: a rank whose partner ``rank XOR jump`` has no bit below ``jump``
    receives from a higher partner or sends to a lower one, blocking, empty), then down it
    (jumps in reverse, the directions swapped)."""
    p = ctx.p
    i = np.arange(p)
    depth = 1 << (p - 1).bit_length()
    levels = _log2(depth)
    for k in range(levels):
        jump = 1 << k
        partner = i ^ jump
        ok = ((partner & (jump - 1)) == 0) & (partner < p)
        up = ok & (partner > i)
        ctx.recv(i[up], partner[up], 0, k)
        down = ok & (partner < i)
        ctx.send(i[down], partner[down], 0, k)
    for k in reversed(range(levels)):
        jump = 1 << k
        partner = i ^ jump
        ok = ((partner & (jump - 1)) == 0) & (partner < p)
        hi = ok & (partner > i)
        ctx.send(i[hi], partner[hi], 0, levels + k)
        lo = ok & (partner < i)
        ctx.recv(i[lo], partner[lo], 0, levels + k)


# --------------------------------------------------------------------------- trees


def _binomial_down(ctx: Ctx, root: int, size_of, step0: int = 0,  # noqa: ANN001
                   blocks_of=None) -> int:  # noqa: ANN001
    """Binomial tree from ``root`` down (MPICH's bcast and scatter shape): each relative rank
    receives from ``rel - lowbit(rel)`` (blocking), then sends to ``rel + mask`` for masks
    below its lowest set bit, largest first (blocking).  ``size_of(child_rel)`` gives the
    bytes sent to a child (0: no message); returns the next step."""
    p = ctx.p
    rel = np.arange(p)
    loc = (rel + root) % p
    low = rel & -rel
    levels = (p - 1).bit_length()
    for k in range(levels):  # each rank's one receive
        m = 1 << k
        who = rel[(low == m)]
        size = size_of(who)
        keep = size > 0
        who, size = who[keep], size[keep]
        ctx.recv(loc[who], loc[who - m], size, step0 + k)
    for k in reversed(range(levels)):
        m = 1 << k
        who = rel[((low > m) | (rel == 0)) & (rel + m < p)]
        size = size_of(who + m)
        keep = size > 0
        who, size = who[keep], size[keep]
        blocks = blocks_of(who + m) if blocks_of is not None else None
        ctx.send(loc[who], loc[who + m], size, step0 + k, blocks)
    return step0 + levels


def _binomial_up(ctx: Ctx, root: int, size_of, step0: int = 0,  # noqa: ANN001
                 blocks_of=None) -> int:  # noqa: ANN001
    """Binomial tree up to ``root`` (MPICH's reduce and gather shape): for mask 1, 2, 4, ...
    a relative rank with no bit below ``mask`` receives from ``rel | mask`` if it exists
    (its bit ``mask`` clear), else sends to ``rel - mask`` and is done (blocking).
    ``size_of(rel)`` gives the bytes a rank sends up; returns the next step."""
    p = ctx.p
    rel = np.arange(p)
    loc = (rel + root) % p
    levels = (p - 1).bit_length()
    for k in range(levels):
        m = 1 << k
        active = (rel & (m - 1)) == 0
        rcv = rel[active & ((rel & m) == 0) & ((rel | m) < p)]
        ctx.recv(loc[rcv], loc[rcv | m], size_of(rcv | m), step0 + k)
        snd = rel[active & ((rel & m) != 0)]
        blocks = blocks_of(snd) if blocks_of is not None else None
        ctx.send(loc[snd], loc[snd - m], size_of(snd), step0 + k, blocks)
    return step0 + levels


def _heap(p: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rel = np.arange(p)
    return rel, (rel - 1) // 2, rel * 2 + 1


def _tree_down(ctx: Ctx, root: int, nbytes: int, step: int) -> None:
    """Binary tree in heap order (children 2r+1, 2r+2 of relative rank r): receive from the
    parent (blocking), isend to the children, wait for both."""
    p = ctx.p
    rel, parent, left = _heap(p)
    loc = (rel + root) % p
    ctx.recv(loc[1:], loc[parent[1:]], nbytes, step)
    hs = []
    for child in (left, left + 1):
        who = rel[child < p]
        hs.append((who, ctx.op(SEND, loc[who], loc[child[who]], nbytes, step, False)))
    for who, h in hs:
        ctx.wait(loc[who], h)


def _tree_up(ctx: Ctx, root: int, nbytes: int, step: int) -> None:
    """Binary tree in heap order, upwards: irecv from both children, wait, send to the parent
    (blocking)."""
    p = ctx.p
    rel, parent, left = _heap(p)
    loc = (rel + root) % p
    hs = []
    for child in (left, left + 1):
        who = rel[child < p]
        hs.append((who, ctx.op(RECV, loc[who], loc[child[who]], nbytes, step, False)))
    for who, h in hs:
        ctx.wait(loc[who], h)
    ctx.send(loc[1:], loc[parent[1:]], nbytes, step)


# --------------------------------------------------------------------------- bcast


def bcast_binomial(ctx: Ctx, nbytes: int, root: int, dt: int) -> None:
    """Binomial-tree broadcast, MPICH's ``MPIR_Bcast_intra_binomial``: ``ceil(log2 p)``
    steps, the root first sends to ``root + 2^(L-1)`` (half-way), then nearer; p - 1
    messages of the whole buffer."""
    _binomial_down(ctx, root, lambda who: np.full(who.shape, nbytes, np.int64))


def bcast_binary_tree(ctx: Ctx, nbytes: int, root: int, dt: int) -> None:
    """Broadcast down a binary tree in heap order (the many-node paper's Caffe skeleton:
    binary-tree reduction and broadcast; Open MPI's ``bintree`` has the same shape with
    another numbering of the levels)."""
    _tree_down(ctx, root, nbytes, 0)


def _scatter_sizes(nbytes: int, p: int) -> tuple[int, np.ndarray]:
    """MPICH's ``MPII_Scatter_for_bcast`` pieces: ``s = ceil(nbytes / p)`` bytes each, in
    relative-rank order, the last ones shorter or empty."""
    s = -(-nbytes // p)
    lo = np.arange(p + 1, dtype=np.int64) * s
    return s, np.clip(np.minimum(lo, nbytes), 0, None)


def _scatter_for_bcast(ctx: Ctx, nbytes: int, root: int) -> tuple[np.ndarray, int]:
    """The binomial scatter of the buffer in pieces (MPICH's ``MPII_Scatter_for_bcast``): a
    child's subtree gets the bytes of its pieces; an empty share is not sent.  Returns the
    piece offsets (p + 1) and the next step."""
    p = ctx.p
    _, edge = _scatter_sizes(nbytes, p)

    def subtree(rel: np.ndarray) -> np.ndarray:
        low = np.where(rel == 0, 1 << p.bit_length(), rel & -rel)
        end = np.minimum(rel + low, p)
        return edge[end] - edge[rel]

    def blocks(rel: np.ndarray):  # noqa: ANN202
        low = rel & -rel
        return _masks(rel, np.minimum(low, p - rel), p)

    ctx.note_blocks(int(np.count_nonzero(np.diff(edge))))
    return edge, _binomial_down(ctx, root, subtree, 0, blocks)


def bcast_scatter_allgather(ctx: Ctx, nbytes: int, root: int, dt: int) -> None:
    """Scatter + ring allgather broadcast, MPICH's
    ``MPIR_Bcast_intra_scatter_ring_allgather`` (van de Geijn's long-message broadcast):
    the binomial scatter of ``ceil(nbytes/p)``-byte pieces, then p - 1 ring steps in which
    each rank sends the piece it got last to ``rank + 1`` and receives one from
    ``rank - 1`` (``MPIC_Sendrecv``; an empty piece is still an empty message, as MPICH's)."""
    p = ctx.p
    edge, step = _scatter_for_bcast(ctx, nbytes, root)
    i = np.arange(p)
    piece = np.diff(edge)
    for s in range(1, p):
        j = (i - s + 1) % p  # the piece (by rank) sent now, the one before it received
        relj, reln = (j - root) % p, (j - 1 - root) % p
        ctx.sendrecv(i, (i + 1) % p, piece[relj], (i - 1) % p, piece[reln], step + s - 1,
                     _masks(relj, 1, p))


def bcast_scatter_doubling_allgather(ctx: Ctx, nbytes: int, root: int, dt: int) -> None:
    """Scatter + recursive-doubling allgather broadcast (MPICH's
    ``MPIR_Bcast_intra_scatter_recursive_doubling_allgather``, power-of-two communicators):
    the binomial scatter, then log2 p steps in which relative ranks ``r`` and ``r XOR 2^k``
    exchange the pieces of their subtrees of size ``2^k`` (``MPIC_Sendrecv``)."""
    p = ctx.p
    edge, step = _scatter_for_bcast(ctx, nbytes, root)
    rel = np.arange(p)
    loc = (rel + root) % p
    mask, k = 1, 0
    while mask < p:
        dst = rel ^ mask
        mine = (rel >> k) << k
        theirs = (dst >> k) << k
        ctx.sendrecv(loc, loc[dst], edge[mine + mask] - edge[mine], loc[dst],
                     edge[theirs + mask] - edge[theirs], step + k, _masks(mine, mask, p))
        mask <<= 1
        k += 1


# --------------------------------------------------------------------------- reduce


def reduce_binomial(ctx: Ctx, nbytes: int, root: int, dt: int) -> None:
    """Binomial-tree reduce, MPICH's ``MPIR_Reduce_intra_binomial`` (commutative operation):
    mask 1, 2, 4, ...: receive the whole buffer from ``rel | mask`` or send it to
    ``rel - mask`` and stop."""
    _binomial_up(ctx, root, lambda who: np.full(who.shape, nbytes, np.int64))


def reduce_binary_tree(ctx: Ctx, nbytes: int, root: int, dt: int) -> None:
    """Reduce up a binary tree in heap order (the many-node paper's Caffe skeleton)."""
    _tree_up(ctx, root, nbytes, 0)


def _halving_blocks(count: int, p2: int, dt: int) -> np.ndarray:
    """MPICH's split of ``count`` elements over ``p2`` pieces (the first ``count mod p2``
    one element longer), as byte offsets (p2 + 1)."""
    cnts = np.full(p2, count // p2, dtype=np.int64)
    cnts[:count % p2] += 1
    return np.concatenate([[0], np.cumsum(cnts * dt)])


def _reduce_scatter_halving(ctx: Ctx, real: np.ndarray, edge: np.ndarray,
                            step: int) -> tuple[np.ndarray, int, int]:
    """Recursive halving among ``real[new]`` (new = 0 .. p2-1), Rabenseifner's first half:
    mask 1, 2, ...: ``new`` and ``new XOR mask`` split their current range of pieces, the
    lower keeps the lower half, each sends the other half (``MPIC_Sendrecv``).  Returns each
    one's first piece, the range size (1) and the next step."""
    p2 = real.shape[0]
    new = np.arange(p2)
    lo = np.zeros(p2, dtype=np.int64)
    size, mask = p2, 1
    while mask < p2:
        half = size // 2
        upper = (new & mask) != 0
        keep = np.where(upper, lo + half, lo)
        give = np.where(upper, lo, lo + half)
        partner = real[new ^ mask]
        ctx.sendrecv(real, partner, edge[give + half] - edge[give], partner,
                     edge[keep + half] - edge[keep], step, _masks(give, half, ctx.p))
        lo, size = keep, half
        mask <<= 1
        step += 1
    return lo, size, step


def reduce_rabenseifner(ctx: Ctx, nbytes: int, root: int, dt: int) -> None:
    """Rabenseifner's reduce, MPICH's ``MPIR_Reduce_intra_reduce_scatter_gather``: the odd
    ranks below ``2 rem`` send their buffer to ``rank - 1`` and sit out (rem = p - p2, p2
    the largest power of two); recursive halving among the rest (``new`` = r/2 below
    2 rem, else r - rem); then a binomial gather of the pieces to the root along the same
    halves (at each mask, the rank whose partner is on the root's side sends its range and
    stops).  A root that sat out first gets piece 0 from rank 0 and takes its place."""
    p = ctx.p
    p2 = pof2_floor(p)
    rem = p - p2
    edge = _halving_blocks(nbytes // dt, p2, dt)
    ctx.note_blocks(p2)
    odd = np.arange(1, 2 * rem, 2)
    ctx.send(odd, odd - 1, nbytes, 0)
    ctx.recv(odd - 1, odd, nbytes, 0)
    new = np.arange(p2)
    real = np.where(new < rem, 2 * new, new + rem)
    lo, size, step = _reduce_scatter_halving(ctx, real, edge, 1)
    if root < 2 * rem and root % 2:
        ctx.send(np.array([0]), np.array([root]), int(edge[1] - edge[0]), step, lambda: [1])
        ctx.recv(np.array([root]), np.array([0]), int(edge[1] - edge[0]), step)
        real = real.copy()
        real[0] = root
        newroot = 0
    else:
        newroot = root // 2 if root < 2 * rem else root - rem
    step += 1
    active = np.ones(p2, dtype=bool)
    mask = p2 >> 1
    while mask > 0:
        j = _log2(mask)
        partner = new ^ mask
        sends = active & ((partner >> j) == (newroot >> j))
        recvs = active & ~sends
        sib = np.where((new & mask) != 0, lo - size, lo + size)
        r = new[recvs]
        ctx.recv(real[r], real[partner[r]], edge[sib[r] + size] - edge[sib[r]], step)
        s = new[sends]
        ctx.send(real[s], real[partner[s]], edge[lo[s] + size] - edge[lo[s]], step,
                 _masks(lo[s], size, p))
        active &= ~sends
        lo = np.minimum(lo, sib)
        size *= 2
        mask >>= 1
        step += 1


# --------------------------------------------------------------------------- allreduce


def allreduce_recursive_doubling(ctx: Ctx, nbytes: int, dt: int) -> None:
    """Recursive-doubling allreduce, MPICH's ``MPIR_Allreduce_intra_recursive_doubling``:
    with p2 the largest power of two and rem = p - p2, the even ranks below 2 rem send their
    buffer to the next rank (blocking, step log2 p2) and sit out; the others, numbered
    ``new`` (r/2 below 2 rem, else r - rem), exchange the whole buffer with ``new XOR 2^k``
    in step k (``MPIC_Sendrecv``); the odd ranks below 2 rem send the result back (step
    log2 p2 + 1).  The same calls, in the same order, as the ``allreduce`` workload has
    always made."""
    p = ctx.p
    p2 = pof2_floor(p)
    rem = p - p2
    steps = _log2(p2)
    even = np.arange(0, 2 * rem, 2, dtype=np.int64)
    odd = even + 1
    if rem:
        ctx.send(even, odd, nbytes, steps)
        ctx.recv(odd, even, nbytes, steps)
    new = np.arange(p2, dtype=np.int64)
    real = np.where(new < rem, 2 * new + 1, new + rem)
    for k in range(steps):
        partner = real[new ^ (1 << k)]
        ctx.sendrecv(real, partner, nbytes, partner, nbytes, k)
    if rem:
        ctx.send(odd, even, nbytes, steps + 1)
        ctx.recv(even, odd, nbytes, steps + 1)


def allreduce_ring(ctx: Ctx, nbytes: int, dt: int) -> None:
    """Ring allreduce, MPICH's ``MPIR_Allreduce_intra_ring`` (the "Baidu" ring): the buffer in
    p pieces of ``ceil(count/p)`` elements (the last ones shorter or empty); p - 1
    reduce-scatter steps (step i: send piece ``r-1-i`` to ``r+1``, receive piece ``r-2-i``
    from ``r-1``; ``MPIC_Sendrecv``, empty pieces too), then the ring allgather of the pieces
    (MPICH's ``MPIR_Allgatherv_intra_ring``: piece ``r-j`` to ``r+1``, ``r-1-j`` from
    ``r-1``; an empty piece is skipped, a one-sided step is a blocking send or receive).
    Not modelled: that allgatherv cuts pieces of unequal length into 32 KiB parts."""
    p = ctx.p
    count = nbytes // dt
    s = -(-count // p)
    piece = np.clip(count - np.arange(p) * s, 0, s) * dt
    ctx.note_blocks(p)
    i = np.arange(p)
    for step in range(p - 1):
        out, inn = (i - 1 - step) % p, (i - 2 - step) % p
        ctx.sendrecv(i, (i + 1) % p, piece[out], (i - 1) % p, piece[inn], step,
                     _masks(out, 1, p))
    for j in range(p - 1):
        out, inn = (i - j) % p, (i - 1 - j) % p
        so, si = piece[out] > 0, piece[inn] > 0
        both, only_s, only_r = so & si, so & ~si, ~so & si
        step = p - 1 + j
        ctx.sendrecv(i[both], (i[both] + 1) % p, piece[out[both]], (i[both] - 1) % p,
                     piece[inn[both]], step, _masks(out[both], 1, p))
        ctx.send(i[only_s], (i[only_s] + 1) % p, piece[out[only_s]], step,
                 _masks(out[only_s], 1, p))
        ctx.recv(i[only_r], (i[only_r] - 1) % p, piece[inn[only_r]], step)


def allreduce_rabenseifner(ctx: Ctx, nbytes: int, dt: int) -> None:
    """Rabenseifner's allreduce, MPICH's ``MPIR_Allreduce_intra_reduce_scatter_allgather``:
    the fold of :func:`allreduce_recursive_doubling` (even ranks below 2 rem send to the
    next), recursive halving among the p2 others (the pieces: ``count / p2`` elements, the
    first ``count mod p2`` one more), recursive doubling of the pieces back (the halves in
    reverse), then the result back to the ranks that sat out."""
    p = ctx.p
    p2 = pof2_floor(p)
    rem = p - p2
    edge = _halving_blocks(nbytes // dt, p2, dt)
    ctx.note_blocks(p2)
    even = np.arange(0, 2 * rem, 2, dtype=np.int64)
    odd = even + 1
    ctx.send(even, odd, nbytes, 0)
    ctx.recv(odd, even, nbytes, 0)
    new = np.arange(p2)
    real = np.where(new < rem, 2 * new + 1, new + rem)
    lo, size, step = _reduce_scatter_halving(ctx, real, edge, 1)
    mask = p2 >> 1
    while mask > 0:
        partner = real[new ^ mask]
        sib = np.where((new & mask) != 0, lo - size, lo + size)
        ctx.sendrecv(real, partner, edge[lo + size] - edge[lo], partner,
                     edge[sib + size] - edge[sib], step, _masks(lo, size, p))
        lo = np.minimum(lo, sib)
        size *= 2
        mask >>= 1
        step += 1
    ctx.send(odd, even, nbytes, step)
    ctx.recv(even, odd, nbytes, step)


def allreduce_binary_tree(ctx: Ctx, nbytes: int, dt: int) -> None:
    """Reduce up a binary tree (heap order) to rank 0, then broadcast down it: the many-node
    paper's Caffe pattern, Open MPI's "nonoverlapping" allreduce (reduce, then bcast) on a
    binary tree."""
    _tree_up(ctx, 0, nbytes, 0)
    _tree_down(ctx, 0, nbytes, 1)
