"""check_programs: random valid programs pass; each injected fault is refused with a message
naming the rank and operation (and the file and line when known)."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from federation.errors import ConfigError
from federation.models.limits import TIME_LIMIT_PS
from federation.programs import COMPUTE, RECV, SEND, START
from federation.programs.builder import ProgramBuilder
from federation.programs.checks import check_programs, find_cycle


@st.composite
def programs(draw, min_ranks=1):
    """Random valid programs: each message adds one send and one receive (blocking or not,
    in a random place of each rank's sequence), plus computes and waits."""
    n = draw(st.integers(min_ranks, 5))
    msgs = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1),
                                   st.integers(0, 3), st.integers(0, 10_000),
                                   st.booleans(), st.booleans()), max_size=25))
    calls: list[list[tuple]] = [[] for _ in range(n)]
    for s, d, tag, size, bs, br in msgs:
        calls[s].insert(draw(st.integers(0, len(calls[s]))), ("send" if bs else "isend", d,
                                                               size, tag))
        calls[d].insert(draw(st.integers(0, len(calls[d]))), ("recv" if br else "irecv", s,
                                                               size, tag))
    for r in range(n):
        for _ in range(draw(st.integers(0, 3))):
            calls[r].insert(draw(st.integers(0, len(calls[r]))),
                            ("compute_ps", draw(st.integers(0, 10**6))))
        calls[r].insert(draw(st.integers(0, len(calls[r]))), ("waitall",))
    b = ProgramBuilder(n)
    for r in range(n):
        rb = b.rank(r)
        for name, *args in calls[r]:
            getattr(rb, name)(*args)
    return b.build()


@settings(max_examples=150, deadline=None)
@given(programs())
def test_random_valid_programs_pass(p):
    """Every message has its receive, so the only refusals left are a deadlock (a receive
    placed before the send it waits for, head to head) and a truncation (sends and receives
    of one channel placed in different orders pair a larger send with a smaller receive);
    tests/test_program_preflight.py checks those verdicts against the engine."""
    try:
        check_programs(p, p.n_ranks)
    except ConfigError as exc:
        assert ("the rank programs cannot finish (a deadlock, before any run)" in exc.message
                or "MPI_ERR_TRUNCATE" in exc.message), exc.message
    assert find_cycle(p) is None


def refused(p, n_nodes=None, source="s.goal"):
    with pytest.raises(ConfigError) as e:
        check_programs(p, p.n_ranks if n_nodes is None else n_nodes, source=source)
    msg = str(e.value)
    assert msg.startswith("s.goal: workload: "), msg
    return msg


def pick(p, kind, data):
    ops = np.flatnonzero(p.op_kind == kind)
    return int(ops[data.draw(st.integers(0, ops.size - 1))]) if ops.size else None


@settings(max_examples=60, deadline=None)
@given(programs(), st.data())
def test_unknown_peer_is_refused(p, data):
    op = pick(p, SEND, data) or pick(p, RECV, data)
    if op is None:
        return
    q = copy.deepcopy(p)
    q.op_peer[op] = p.n_ranks + 2
    assert f"{q.describe(op)}: unknown rank {p.n_ranks + 2}" in refused(q)


@settings(max_examples=60, deadline=None)
@given(programs(), st.data(), st.sampled_from([-1, 2**40, 2**50]))
def test_bad_sizes_are_refused(p, data, size):
    op = pick(p, SEND, data)
    if op is None:
        return
    q = copy.deepcopy(p)
    q.op_bytes[op] = size
    assert f"size {size} B is outside 0 .. 2**40 - 1 B" in refused(q)


@settings(max_examples=60, deadline=None)
@given(programs(), st.data())
def test_compute_beyond_the_clock_is_refused(p, data):
    op = pick(p, COMPUTE, data)
    if op is None:
        return
    q = copy.deepcopy(p)
    q.op_time_ps[op] = TIME_LIMIT_PS
    assert f"{q.describe(op)}: compute time {TIME_LIMIT_PS} ps" in refused(q)


def test_compute_sum_beyond_the_clock_names_the_crossing_op():
    b = ProgramBuilder(1)
    for _ in range(4):
        b.rank(0).compute_ps(TIME_LIMIT_PS // 3)
    msg = refused(b.build())
    assert "rank 0 operation 3 (compute" in msg and "add up to" in msg


@settings(max_examples=60, deadline=None)
@given(programs(), st.data())
def test_dependency_cycle_is_refused(p, data):
    if p.n_deps == 0:
        return
    e = data.draw(st.integers(0, p.n_deps - 1))
    q = copy.deepcopy(p)
    q.dep_before = np.append(q.dep_before, q.dep_after[e])
    q.dep_after = np.append(q.dep_after, q.dep_before[e])
    q.dep_kind = np.append(q.dep_kind, np.int8(START))
    assert "dependency cycle: rank" in refused(q)
    op = find_cycle(q)
    assert op is not None and p.op_rank[op] == p.op_rank[p.dep_after[e]]


@settings(max_examples=60, deadline=None)
@given(programs(), st.data())
def test_unmatched_receive_is_refused(p, data):
    op = pick(p, RECV, data)
    if op is None:
        return
    q = copy.deepcopy(p)
    q.op_tag[op] = 99  # no send uses tag 99: this receive is the first unmatched op there
    msg = refused(q)
    assert "no send matches this receive" in msg or "no receive takes this send" in msg


def test_unmatched_operations_named_exactly():
    b = ProgramBuilder(2)
    b.rank(0).send(1, 8, tag=1)
    b.rank(0).send(1, 8, tag=1)
    b.rank(1).recv(0, 8, tag=1)
    assert refused(b.build()).endswith(
        "rank 0 operation 1 (send 8 B to rank 1 tag 1): no receive takes this send (rank 0 "
        "sends 2 message(s) to rank 1 with tag 1 and rank 1 posts 1 receive(s) for them)")
    b = ProgramBuilder(2)
    b.rank(1).recv(0, 8, tag=2)
    assert "rank 1 operation 0 (recv 8 B from rank 0 tag 2): no send matches this receive" \
        in refused(b.build())


def test_edge_faults_are_refused():
    b = ProgramBuilder(2)
    b.rank(0).compute_ps(1)
    b.rank(1).compute_ps(1)
    p = b.build()
    q = copy.deepcopy(p)
    q.dep_before, q.dep_after, q.dep_kind = np.array([0]), np.array([1]), np.array([0])
    assert "dependencies join operations of one rank" in refused(q)
    q.dep_before, q.dep_after = np.array([1]), np.array([1])
    assert "rank 1 operation 0 (compute 1 ps) depends on itself" in refused(q)
    q.dep_before = np.array([5])
    assert "names an operation outside 0 .. 1" in refused(q)
    q = copy.deepcopy(p)
    q.op_kind[1] = 7
    assert "rank 1 operation 0: kind 7 is not one of" in refused(q)
    q = copy.deepcopy(p)
    q.op_peer[0] = 3
    assert "a compute operation has peer 3, expected -1" in refused(q)


def test_placement_is_checked():
    p = ProgramBuilder(3).build()
    assert "3 ranks but the machine has 2 nodes" in refused(p, n_nodes=2)
    p = ProgramBuilder(2).build(rank_node=[0, 4])
    assert "rank 1 is placed on node 4, but the machine has 4 nodes (0 to 3)" in \
        refused(p, n_nodes=4)
    q = ProgramBuilder(2).build(rank_node=[0])
    assert "rank_node has 1 entries for 2 ranks" in refused(q)


def test_a_million_operation_chain_backwards_is_checked_for_cycles():
    """One rank's chain with every edge written backwards in op order: the SCC path, no
    recursion."""
    n = 1_000_000
    from federation.programs.model import RankPrograms
    p = RankPrograms(np.array([0, n]), np.full(n, COMPUTE), np.full(n, -1), np.zeros(n),
                     np.zeros(n), np.ones(n), np.arange(1, n), np.arange(0, n - 1),
                     np.zeros(n - 1))
    check_programs(p, 1)
    p.dep_before = np.append(p.dep_before, 0)
    p.dep_after = np.append(p.dep_after, n - 1)
    p.dep_kind = np.append(p.dep_kind, np.int8(0))
    assert "dependency cycle" in refused(p)
