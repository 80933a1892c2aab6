"""ProgramBuilder writes the MPI-style chain of Schedgen exactly; the vectorised paths give the
same arrays as the builder."""

from __future__ import annotations

import numpy as np

from federation.programs import COMPUTE, FINISH, RECV, SEND, START
from federation.programs.builder import ProgramBuilder, concatenate, programs_from_blocks
from federation.programs.checks import check_programs


def edges(p):
    return sorted(zip(p.dep_before.tolist(), p.dep_after.tolist(), p.dep_kind.tolist(),
                      strict=True))


def test_blocking_chain_and_nonblocking_start_edges():
    b = ProgramBuilder(2)
    r = b.rank(0)
    assert r.send(1, 8, tag=3) == 0          # op 0
    assert r.irecv(1, 16) == 1               # op 1: FINISH on 0
    assert r.isend(1, 32, tag=1) == 2        # op 2: START on 1
    assert r.compute_ps(500) == 3            # op 3: START on 2
    r.wait(1)
    assert r.pending == [2]
    assert r.compute(1e-9) == 4              # op 4: FINISH on 3 and on 1
    r.waitall()
    assert r.pending == []
    assert r.recv(1, 8) == 5                 # op 5: FINISH on 4 and on 2
    q = b.rank(1)
    q.recv(0, 8, tag=3)
    q.send(0, 16)
    q.recv(0, 32, tag=1)
    q.send(0, 8)
    p = b.build()
    assert p.rank_first.tolist() == [0, 6, 10]
    assert p.op_kind.tolist() == [SEND, RECV, SEND, COMPUTE, COMPUTE, RECV,
                                  RECV, SEND, RECV, SEND]
    assert p.op_peer.tolist() == [1, 1, 1, -1, -1, 1, 0, 0, 0, 0]
    assert p.op_bytes.tolist() == [8, 16, 32, 0, 0, 8, 8, 16, 32, 8]
    assert p.op_tag.tolist() == [3, 0, 1, 0, 0, 0, 3, 0, 1, 0]
    assert p.op_time_ps.tolist() == [0, 0, 0, 500, 1000, 0, 0, 0, 0, 0]
    assert edges(p) == sorted([
        (0, 1, FINISH), (1, 2, START), (2, 3, START), (3, 4, FINISH), (1, 4, FINISH),
        (4, 5, FINISH), (2, 5, FINISH), (6, 7, FINISH), (7, 8, FINISH), (8, 9, FINISH)])
    check_programs(p, 2)


def test_low_level_op_and_depend_do_not_touch_the_chain():
    b = ProgramBuilder(1)
    r = b.rank(0)
    a = r.op(COMPUTE, -1, 0, 0, 7)
    c = r.op(COMPUTE, -1, 0, 0, 9, requires=[a], irequires=[a], label="x", line=4)
    r.depend(a, c, START)
    d = r.compute_ps(1)  # first sequential op: no dependency
    p = b.build()
    assert edges(p) == [(a, c, FINISH), (a, c, START), (a, c, START)]
    assert d == 2
    assert p.op_label == ["", "x", ""]
    assert p.op_line.tolist() == [0, 4, 0]


def ring(n, k):
    b = ProgramBuilder(n)
    for r in range(n):
        rb = b.rank(r)
        for i in range(k):
            rb.irecv((r - 1) % n, 64, i)
            rb.isend((r + 1) % n, 64, i)
            rb.waitall()
            rb.compute_ps(100)
    return b.build()


def test_programs_from_blocks_equals_the_builder():
    n, k = 5, 3
    ref = ring(n, k)
    ranks = np.arange(n)[:, None]
    kind = np.tile([RECV, SEND, COMPUTE], k)
    peer = np.where(kind == RECV, (ranks - 1) % n, np.where(kind == SEND, (ranks + 1) % n, -1))
    tag = np.repeat(np.arange(k), 3) * (kind != COMPUTE)
    nbytes = np.where(kind == COMPUTE, 0, 64)
    time = np.where(kind == COMPUTE, 100, 0)
    before, after, dkind = [], [], []
    for i in range(k):
        o = 3 * i
        if i:
            before += [o - 1]
            after += [o]
            dkind += [FINISH]
        before += [o, o, o + 1]
        after += [o + 1, o + 2, o + 2]
        dkind += [START, FINISH, FINISH]
    p = programs_from_blocks(np.broadcast_to(kind, (n, 3 * k)), peer, nbytes, tag, time,
                             np.array(before), np.array(after), np.array(dkind))
    for f in ("rank_first", "op_kind", "op_peer", "op_bytes", "op_tag", "op_time_ps"):
        assert np.array_equal(getattr(p, f), getattr(ref, f)), f
    assert edges(p) == edges(ref)
    check_programs(p, n)


def test_concatenate_stacks_ranks():
    a = ProgramBuilder(2)
    a.rank(0).send(2, 8)
    a.rank(1).compute_ps(5)
    a.rank(1).compute_ps(6)
    b = ProgramBuilder(1)
    b.rank(0).compute_ps(1)
    b.rank(0).recv(0, 8)
    p = concatenate([a.build(), b.build()])
    assert p.rank_first.tolist() == [0, 1, 3, 5]
    assert p.op_peer.tolist() == [2, -1, -1, -1, 0]
    assert edges(p) == [(1, 2, FINISH), (3, 4, FINISH)]
    check_programs(p, 3)
    assert concatenate([]).n_ranks == 0


def test_empty_and_rank_node():
    p = ProgramBuilder(3).build(rank_node=[2, 1, 0])
    assert p.n_ops == 0 and p.n_deps == 0
    assert p.nodes().tolist() == [2, 1, 0]
    check_programs(p, 3)
