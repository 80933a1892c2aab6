"""The collective algorithms stated a second time, rank by rank, call by call.

Each ``ref_<op>_<algorithm>(n, nbytes, root)`` follows the published code's loop for one
rank at a time (MPICH 3.3's ``MPIR_<Op>_intra_<algorithm>``, Open MPI's base collectives),
with the library's variables (``mask``, ``relative_rank``, ``send_idx``, ``curr_size``...),
not the vectorised formulation of ``federation.programs.collective_algorithms``.  A call is
``(kind, peer, bytes, tag, blocking)`` or ``("wait", i)``; :func:`reference` turns the lists
into operations and dependency edges by the sequential semantics.  Tags are the step numbers
the library documents (each step its own tag, counted from 0).
"""

from __future__ import annotations

from federation.programs.model import FINISH, RECV, SEND, START

THROTTLE = 32


def reference(calls: list[list[tuple]]) -> tuple[list[tuple], set[tuple]]:
    """Operations ``(rank, kind, peer, bytes, tag, time)`` and edges ``(before, after,
    kind)`` of per-rank call lists (transitively implied edges left out, as the builders)."""
    ops: list[tuple] = []
    edges: set[tuple] = set()
    for rank, rank_calls in enumerate(calls):
        base = len(ops)
        finish: list[int] = []
        start: int | None = None
        for call in rank_calls:
            if call[0] == "wait":
                finish.append(base + call[1])
                continue
            kind, peer, nbytes, tag, blocking = call
            me = len(ops)
            ops.append((rank, kind, peer, nbytes, tag, 0))
            for b in finish:
                edges.add((b, me, FINISH))
            if start is not None and start not in finish:
                edges.add((start, me, START))
            finish, start = ([me], None) if blocking else ([], me)
    return ops, edges


class Rank:
    """One rank's calls, MPICH style."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []
        self.n = 0

    def _add(self, call: tuple) -> int:
        self.calls.append(call)
        self.n += 1
        return self.n - 1

    def send(self, dst: int, nb: int, tag: int) -> None:
        self._add((SEND, dst, nb, tag, True))

    def recv(self, src: int, nb: int, tag: int) -> None:
        self._add((RECV, src, nb, tag, True))

    def isend(self, dst: int, nb: int, tag: int) -> int:
        return self._add((SEND, dst, nb, tag, False))

    def irecv(self, src: int, nb: int, tag: int) -> int:
        return self._add((RECV, src, nb, tag, False))

    def wait(self, *hs: int) -> None:
        for h in hs:
            self.calls.append(("wait", h))

    def sendrecv(self, dst: int, sb: int, src: int, rb: int, tag: int) -> None:
        """MPIC_Sendrecv: irecv, isend, wait for both."""
        r = self.irecv(src, rb, tag)
        s = self.isend(dst, sb, tag)
        self.wait(r, s)


def ranks(n: int) -> list[Rank]:
    return [Rank() for _ in range(n)]


def calls_of(rs: list[Rank]) -> list[list[tuple]]:
    return [r.calls for r in rs]


def log2(m: int) -> int:
    return m.bit_length() - 1


def levels(n: int) -> int:
    return (n - 1).bit_length()


def pof2_floor(n: int) -> int:
    return 1 << (n.bit_length() - 1)


# --------------------------------------------------------------------------- barrier


def ref_barrier_dissemination(n, nb, root):  # noqa: ANN001, ANN201
    rs = ranks(n)
    for r, me in enumerate(rs):
        mask, k = 1, 0
        while mask < n:
            me.sendrecv((r + mask) % n, 0, (r - mask + n) % n, 0, k)
            mask <<= 1
            k += 1
    return calls_of(rs)


def ref_barrier_tree(n, nb, root):  # noqa: ANN001, ANN201
    rs = ranks(n)
    depth = 1
    while depth < n:
        depth <<= 1
    lv = log2(depth)
    for r, me in enumerate(rs):
        jump = 1
        while jump < depth:
            partner = r ^ jump
            if not partner & (jump - 1) and partner < n:
                if partner > r:
                    me.recv(partner, 0, log2(jump))
                elif partner < r:
                    me.send(partner, 0, log2(jump))
            jump <<= 1
        jump = depth >> 1
        while jump > 0:
            partner = r ^ jump
            if not partner & (jump - 1) and partner < n:
                if partner > r:
                    me.send(partner, 0, lv + log2(jump))
                elif partner < r:
                    me.recv(partner, 0, lv + log2(jump))
            jump >>= 1
    return calls_of(rs)


# --------------------------------------------------------------------------- bcast


def ref_bcast_binomial(n, nb, root):  # noqa: ANN001, ANN201
    rs = ranks(n)
    for r, me in enumerate(rs):
        rel = (r - root) % n
        mask = 1
        while mask < n:
            if rel & mask:
                me.recv((r - mask) % n, nb, log2(mask))
                break
            mask <<= 1
        mask >>= 1
        while mask > 0:
            if rel + mask < n:
                me.send((r + mask) % n, nb, log2(mask))
            mask >>= 1
    return calls_of(rs)


def _scatter_for_bcast(rs: list[Rank], nb: int, root: int) -> tuple[int, list[int]]:
    """MPII_Scatter_for_bcast; returns scatter_size and each rank's curr_size afterwards."""
    n = len(rs)
    s = (nb + n - 1) // n
    got = [0] * n  # what each rank received (MPIR_Get_count)
    curr_after = [0] * n
    for rel in range(n):  # parents before children
        r = (rel + root) % n
        me = rs[r]
        curr = nb if rel == 0 else 0
        mask = 1
        while mask < n:
            if rel & mask:
                if nb - rel * s > 0:
                    me.recv((r - mask) % n, got[r], log2(mask))
                    curr = got[r]
                break
            mask <<= 1
        mask >>= 1
        while mask > 0:
            if rel + mask < n:
                send = curr - s * mask
                if send > 0:
                    dst = (r + mask) % n
                    me.send(dst, send, log2(mask))
                    got[dst] = send
                    curr -= send
            mask >>= 1
        curr_after[r] = curr
    return s, curr_after


def ref_bcast_scatter_allgather(n, nb, root):  # noqa: ANN001, ANN201
    rs = ranks(n)
    s, _ = _scatter_for_bcast(rs, nb, root)
    base = levels(n)
    for r, me in enumerate(rs):
        left, right = (n + r - 1) % n, (r + 1) % n
        j, jnext = r, left
        for i in range(1, n):
            rel_j, rel_jn = (j - root + n) % n, (jnext - root + n) % n
            left_count = max(min(s, nb - rel_jn * s), 0)
            right_count = max(min(s, nb - rel_j * s), 0)
            me.sendrecv(right, right_count, left, left_count, base + i - 1)
            j, jnext = jnext, (n + jnext - 1) % n
    return calls_of(rs)


def ref_bcast_scatter_doubling_allgather(n, nb, root):  # noqa: ANN001, ANN201
    rs = ranks(n)
    s, _ = _scatter_for_bcast(rs, nb, root)
    base = levels(n)
    curr = [max(min(s, nb - ((r - root) % n) * s), 0) for r in range(n)]
    mask, i = 1, 0
    while mask < n:
        sent = list(curr)
        for r, me in enumerate(rs):
            rel = (r - root) % n
            dst = ((rel ^ mask) + root) % n
            me.sendrecv(dst, sent[r], dst, sent[dst], base + i)
            curr[r] += sent[dst]
        mask <<= 1
        i += 1
    return calls_of(rs)


def _heap_down(rs: list[Rank], nb: int, root: int, tag: int) -> None:
    n = len(rs)
    for r, me in enumerate(rs):
        rel = (r - root) % n
        if rel:
            me.recv(((rel - 1) // 2 + root) % n, nb, tag)
        hs = [me.isend((c + root) % n, nb, tag) for c in (2 * rel + 1, 2 * rel + 2) if c < n]
        me.wait(*hs)


def _heap_up(rs: list[Rank], nb: int, root: int, tag: int) -> None:
    n = len(rs)
    for r, me in enumerate(rs):
        rel = (r - root) % n
        hs = [me.irecv((c + root) % n, nb, tag) for c in (2 * rel + 1, 2 * rel + 2) if c < n]
        me.wait(*hs)
        if rel:
            me.send(((rel - 1) // 2 + root) % n, nb, tag)


def ref_bcast_binary_tree(n, nb, root):  # noqa: ANN001, ANN201
    rs = ranks(n)
    _heap_down(rs, nb, root, 0)
    return calls_of(rs)


# --------------------------------------------------------------------------- reduce


def ref_reduce_binomial(n, nb, root):  # noqa: ANN001, ANN201
    rs = ranks(n)
    for r, me in enumerate(rs):
        rel = (r - root) % n
        mask = 1
        while mask < n:
            if not mask & rel:
                source = rel | mask
                if source < n:
                    me.recv((source + root) % n, nb, log2(mask))
            else:
                me.send(((rel & ~mask) + root) % n, nb, log2(mask))
                break
            mask <<= 1
    return calls_of(rs)


def ref_reduce_binary_tree(n, nb, root):  # noqa: ANN001, ANN201
    rs = ranks(n)
    _heap_up(rs, nb, root, 0)
    return calls_of(rs)


def _cnts(count: int, pof2: int) -> list[int]:
    c = [count // pof2] * pof2
    for i in range(count % pof2):
        c[i] += 1
    return c


def ref_reduce_rabenseifner(n, nb, root):  # noqa: ANN001, ANN201
    """MPIR_Reduce_intra_reduce_scatter_gather, line by line (datatype of 1 byte)."""
    rs = ranks(n)
    pof2 = pof2_floor(n)
    rem = n - pof2
    cnts = _cnts(nb, pof2)
    L = log2(pof2)
    for rank, me in enumerate(rs):
        if rank < 2 * rem:
            if rank % 2:
                me.send(rank - 1, nb, 0)
                newrank = -1
            else:
                me.recv(rank + 1, nb, 0)
                newrank = rank // 2
        else:
            newrank = rank - rem
        send_idx = recv_idx = last_idx = 0
        if newrank != -1:
            mask, send_idx, recv_idx, last_idx, k = 1, 0, 0, pof2, 1
            while mask < pof2:
                newdst = newrank ^ mask
                dst = newdst * 2 if newdst < rem else newdst + rem
                if newrank < newdst:
                    send_idx = recv_idx + pof2 // (mask * 2)
                    sc, rc = sum(cnts[send_idx:last_idx]), sum(cnts[recv_idx:send_idx])
                else:
                    recv_idx = send_idx + pof2 // (mask * 2)
                    sc, rc = sum(cnts[send_idx:recv_idx]), sum(cnts[recv_idx:last_idx])
                me.sendrecv(dst, sc, dst, rc, k)
                send_idx = recv_idx
                mask <<= 1
                k += 1
                if mask < pof2:
                    last_idx = recv_idx + pof2 // mask
        if root < 2 * rem:
            if root % 2:
                if rank == root:
                    me.recv(0, cnts[0], 1 + L)
                    newrank, send_idx, last_idx = 0, 0, 2
                elif newrank == 0:
                    me.send(root, cnts[0], 1 + L)
                    newrank = -1
                newroot = 0
            else:
                newroot = root // 2
        else:
            newroot = root - rem
        if newrank != -1:
            j, mask = L - 1, pof2 >> 1
            g = 0
            while mask > 0:
                newdst = newrank ^ mask
                dst = newdst * 2 if newdst < rem else newdst + rem
                if newdst == 0 and root < 2 * rem and root % 2:
                    dst = root
                if newrank < newdst:
                    if mask != pof2 // 2:
                        last_idx = last_idx + pof2 // (mask * 2)
                    recv_idx = send_idx + pof2 // (mask * 2)
                    sc, rc = sum(cnts[send_idx:recv_idx]), sum(cnts[recv_idx:last_idx])
                else:
                    recv_idx = send_idx - pof2 // (mask * 2)
                    sc, rc = sum(cnts[send_idx:last_idx]), sum(cnts[recv_idx:send_idx])
                if (newdst >> j) == (newroot >> j):
                    me.send(dst, sc, 2 + L + g)
                    break
                me.recv(dst, rc, 2 + L + g)
                if newrank > newdst:
                    send_idx = recv_idx
                mask >>= 1
                j -= 1
                g += 1
    return calls_of(rs)


# --------------------------------------------------------------------------- allreduce


def ref_allreduce_recursive_doubling(n, nb, root):  # noqa: ANN001, ANN201
    rs = ranks(n)
    pof2 = pof2_floor(n)
    rem, L = n - pof2, log2(pof2)
    for rank, me in enumerate(rs):
        if rank < 2 * rem:
            if rank % 2 == 0:
                me.send(rank + 1, nb, L)
                newrank = -1
            else:
                me.recv(rank - 1, nb, L)
                newrank = rank // 2
        else:
            newrank = rank - rem
        if newrank != -1:
            mask = 1
            while mask < pof2:
                newdst = newrank ^ mask
                dst = newdst * 2 + 1 if newdst < rem else newdst + rem
                me.sendrecv(dst, nb, dst, nb, log2(mask))
                mask <<= 1
        if rank < 2 * rem:
            if rank % 2:
                me.send(rank - 1, nb, L + 1)
            else:
                me.recv(rank + 1, nb, L + 1)
    return calls_of(rs)


def ref_allreduce_ring(n, nb, root):  # noqa: ANN001, ANN201
    """MPIR_Allreduce_intra_ring, then MPIR_Allgatherv_intra_ring without its pipelining."""
    rs = ranks(n)
    cnts, total = [0] * n, 0
    for i in range(n):
        cnts[i] = (nb + n - 1) // n
        if total + cnts[i] > nb:
            cnts[i] = nb - total
            break
        total += cnts[i]
    for rank, me in enumerate(rs):
        src, dst = (n + rank - 1) % n, (rank + 1) % n
        for i in range(n - 1):
            recv_rank, send_rank = (n + rank - 2 - i) % n, (n + rank - 1 - i) % n
            me.sendrecv(dst, cnts[send_rank], src, cnts[recv_rank], i)
        left, right = src, dst
        sidx, ridx = rank, left
        for j in range(n - 1):
            sendnow, recvnow = cnts[sidx], cnts[ridx]
            tag = n - 1 + j
            if sendnow and recvnow:
                me.sendrecv(right, sendnow, left, recvnow, tag)
            elif sendnow:
                me.send(right, sendnow, tag)
            elif recvnow:
                me.recv(left, recvnow, tag)
            sidx, ridx = (sidx + n - 1) % n, (ridx + n - 1) % n
    return calls_of(rs)


def ref_allreduce_rabenseifner(n, nb, root):  # noqa: ANN001, ANN201
    """MPIR_Allreduce_intra_reduce_scatter_allgather, line by line (1-byte datatype)."""
    rs = ranks(n)
    pof2 = pof2_floor(n)
    rem, L = n - pof2, log2(pof2)
    cnts = _cnts(nb, pof2)
    for rank, me in enumerate(rs):
        if rank < 2 * rem:
            if rank % 2 == 0:
                me.send(rank + 1, nb, 0)
                newrank = -1
            else:
                me.recv(rank - 1, nb, 0)
                newrank = rank // 2
        else:
            newrank = rank - rem
        if newrank != -1:
            mask, send_idx, recv_idx, last_idx, k = 1, 0, 0, pof2, 1
            while mask < pof2:
                newdst = newrank ^ mask
                dst = newdst * 2 + 1 if newdst < rem else newdst + rem
                if newrank < newdst:
                    send_idx = recv_idx + pof2 // (mask * 2)
                    sc, rc = sum(cnts[send_idx:last_idx]), sum(cnts[recv_idx:send_idx])
                else:
                    recv_idx = send_idx + pof2 // (mask * 2)
                    sc, rc = sum(cnts[send_idx:recv_idx]), sum(cnts[recv_idx:last_idx])
                me.sendrecv(dst, sc, dst, rc, k)
                send_idx = recv_idx
                mask <<= 1
                k += 1
                if mask < pof2:
                    last_idx = recv_idx + pof2 // mask
            mask >>= 1
            while mask > 0:
                newdst = newrank ^ mask
                dst = newdst * 2 + 1 if newdst < rem else newdst + rem
                if newrank < newdst:
                    if mask != pof2 // 2:
                        last_idx = last_idx + pof2 // (mask * 2)
                    recv_idx = send_idx + pof2 // (mask * 2)
                    sc, rc = sum(cnts[send_idx:recv_idx]), sum(cnts[recv_idx:last_idx])
                else:
                    recv_idx = send_idx - pof2 // (mask * 2)
                    sc, rc = sum(cnts[send_idx:last_idx]), sum(cnts[recv_idx:send_idx])
                me.sendrecv(dst, sc, dst, rc, k)
                if newrank > newdst:
                    send_idx = recv_idx
                mask >>= 1
                k += 1
        if rank < 2 * rem:
            if rank % 2:
                me.send(rank - 1, nb, 2 * L + 1)
            else:
                me.recv(rank + 1, nb, 2 * L + 1)
    return calls_of(rs)


def ref_allreduce_binary_tree(n, nb, root):  # noqa: ANN001, ANN201
    rs = ranks(n)
    _heap_up(rs, nb, 0, 0)
    _heap_down(rs, nb, 0, 1)
    return calls_of(rs)


# --------------------------------------------------------------------------- allgather


def ref_allgather_ring(n, nb, root):  # noqa: ANN001, ANN201
    rs = ranks(n)
    for rank, me in enumerate(rs):
        left, right = (n + rank - 1) % n, (rank + 1) % n
        for i in range(1, n):
            me.sendrecv(right, nb, left, nb, i - 1)
    return calls_of(rs)


def ref_allgather_recursive_doubling(n, nb, root):  # noqa: ANN001, ANN201
    rs = ranks(n)
    for rank, me in enumerate(rs):
        curr, mask, i = nb, 1, 0
        while mask < n:
            me.sendrecv(rank ^ mask, curr, rank ^ mask, mask * nb, i)
            curr += mask * nb
            mask <<= 1
            i += 1
    return calls_of(rs)


def ref_allgather_bruck(n, nb, root):  # noqa: ANN001, ANN201
    rs = ranks(n)
    for rank, me in enumerate(rs):
        curr, pof2, k = nb, 1, 0
        while pof2 <= n // 2:
            me.sendrecv((rank - pof2 + n) % n, curr, (rank + pof2) % n, curr, k)
            curr *= 2
            pof2 *= 2
            k += 1
        rem = n - pof2
        if rem:
            me.sendrecv((rank - pof2 + n) % n, rem * nb, (rank + pof2) % n, rem * nb, k)
    return calls_of(rs)


# --------------------------------------------------------------------------- alltoall


def ref_alltoall_pairwise(n, nb, root):  # noqa: ANN001, ANN201
    rs = ranks(n)
    is_pof2 = n & (n - 1) == 0
    for rank, me in enumerate(rs):
        for i in range(1, n):
            if is_pof2:
                src = dst = rank ^ i
            else:
                src, dst = (rank - i + n) % n, (rank + i) % n
            me.sendrecv(dst, nb, src, nb, i - 1)
    return calls_of(rs)


def ref_alltoall_bruck(n, nb, root):  # noqa: ANN001, ANN201
    rs = ranks(n)
    for rank, me in enumerate(rs):
        pof2, k = 1, 0
        while pof2 < n:
            count = sum(1 for block in range(n) if block & pof2) * nb
            me.sendrecv((rank + pof2) % n, count, (rank - pof2 + n) % n, count, k)
            pof2 *= 2
            k += 1
    return calls_of(rs)


def _scattered(n: int, size, bblock: int):  # noqa: ANN001, ANN202
    """MPIR_Alltoall(v)_intra_scattered; size(a, b): bytes a sends b; self left out."""
    rs = ranks(n)
    bblock = bblock or n
    for rank, me in enumerate(rs):
        for blk, ii in enumerate(range(0, n, bblock)):
            ss = min(n - ii, bblock)
            hs = []
            for i in range(ss):
                dst = (rank + i + ii) % n
                if dst != rank and size(dst, rank):
                    hs.append(me.irecv(dst, size(dst, rank), blk))
            for i in range(ss):
                dst = (rank - i - ii + n) % n
                if dst != rank and size(rank, dst):
                    hs.append(me.isend(dst, size(rank, dst), blk))
            me.wait(*hs)
    return calls_of(rs)


def ref_alltoall_scattered(n, nb, root):  # noqa: ANN001, ANN201
    return _scattered(n, lambda a, b: nb, THROTTLE)


def ref_alltoall_linear(n, nb, root):  # noqa: ANN001, ANN201
    return _scattered(n, lambda a, b: nb, 0)


def vsize(a: int, b: int, nb: int) -> int:
    """The alltoallv matrix of the tests: some pairs empty."""
    return 0 if (a + 2 * b) % 5 == 0 else nb + a - b + 40


def ref_alltoallv_scattered(n, nb, root):  # noqa: ANN001, ANN201
    return _scattered(n, lambda a, b: vsize(a, b, nb), THROTTLE)


def ref_alltoallv_linear(n, nb, root):  # noqa: ANN001, ANN201
    return _scattered(n, lambda a, b: vsize(a, b, nb), 0)


# --------------------------------------------------------------------------- scatter, gather


def ref_scatter_binomial(n, nb, root):  # noqa: ANN001, ANN201
    rs = ranks(n)
    for rank, me in enumerate(rs):
        rel = (rank - root) % n
        curr = n * nb if rel == 0 else 0
        mask = 1
        while mask < n:
            if rel & mask:
                curr = (n - rel) * nb if rel + mask > n else mask * nb
                me.recv((rank - mask + n) % n, curr, log2(mask))
                break
            mask <<= 1
        mask >>= 1
        while mask > 0:
            if rel + mask < n:
                send = curr - nb * mask
                me.send((rank + mask) % n, send, log2(mask))
                curr -= send
            mask >>= 1
    return calls_of(rs)


def ref_gather_binomial(n, nb, root):  # noqa: ANN001, ANN201
    rs = ranks(n)
    for rank, me in enumerate(rs):
        rel = (rank - root) % n
        curr, mask = nb, 1
        while mask < n:
            if not rel & mask:
                src = rel | mask
                if src < n:
                    blks = n - src if src + mask > n else mask
                    me.recv((src + root) % n, blks * nb, log2(mask))
                    curr += blks * nb
            else:
                me.send(((rel ^ mask) + root) % n, curr, log2(mask))
                break
            mask <<= 1
    return calls_of(rs)


def ref_scatter_linear(n, nb, root):  # noqa: ANN001, ANN201
    rs = ranks(n)
    for rank, me in enumerate(rs):
        if rank == root:
            for i in range(n):
                if i != rank:
                    me.send(i, nb, 0)
        else:
            me.recv(root, nb, 0)
    return calls_of(rs)


def ref_gather_linear(n, nb, root):  # noqa: ANN001, ANN201
    rs = ranks(n)
    for rank, me in enumerate(rs):
        if rank == root:
            for i in range(n):
                if i != rank:
                    me.recv(i, nb, 0)
        else:
            me.send(root, nb, 0)
    return calls_of(rs)
