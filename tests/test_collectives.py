"""Collectives by named algorithms (``federation.programs.collectives``).

* every algorithm against its message pattern stated rank by rank from the published code
  (``collective_reference.py``): exact operations (kind, peer, bytes, tag) and dependency
  edges, for every rank count 1 .. 33 and a root that moves;
* data flow: a token-propagation check on the operation graph (each message carries what its
  sender holds when it starts, of the blocks the algorithm sends) ends with every rank
  holding every contribution it must have;
* the same program through a ProgramBuilder and a ProgramAssembler, on sub-communicators;
* ``auto`` against MPICH 3.3's thresholds, the refusals, message counts in closed form.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict, deque

import collective_reference as ref
import numpy as np
import pytest
from collective_reference import reference, vsize

from federation.errors import ConfigError
from federation.programs.assembler import ProgramAssembler
from federation.programs.builder import ProgramBuilder
from federation.programs.checks import check_programs, message_pairs
from federation.programs.collectives import (
    ALGORITHMS,
    MPICH_THRESHOLDS,
    Trace,
    algorithm_problem,
    allreduce,
    bcast,
    collective,
    select_algorithm,
)
from federation.programs.model import FINISH, RECV, SEND, RankPrograms

CASES = [(op, alg) for op, algs in ALGORITHMS.items() for alg in algs]
SIZES = range(1, 34)


def as_sets(p: RankPrograms) -> tuple[list[tuple], set[tuple]]:
    rank = p.op_rank
    ops = [(int(rank[i]), int(p.op_kind[i]), int(p.op_peer[i]), int(p.op_bytes[i]),
            int(p.op_tag[i]), int(p.op_time_ps[i])) for i in range(p.n_ops)]
    edges = set(zip(p.dep_before.tolist(), p.dep_after.tolist(), p.dep_kind.tolist(),
                    strict=True))
    assert len(edges) == p.n_deps, "duplicate edges"
    return ops, edges


def nbytes_for(op: str, n: int) -> int:
    # enough elements for Rabenseifner (count >= p2), uneven splits everywhere
    return 37 * n + 5 if op in ("allreduce", "reduce", "bcast") else 24


def build(op: str, alg: str, n: int, root: int, trace: Trace | None = None,
          builder: str = "assembler") -> tuple[RankPrograms, ProgramAssembler | None]:
    nb = nbytes_for(op, n)
    b = ProgramAssembler(n) if builder == "assembler" else ProgramBuilder(n)
    kw = {}
    if op == "alltoallv":
        kw["sizes"] = np.array([[vsize(a, c, nb) for c in range(n)] for a in range(n)])
    collective(b, op, None, 0 if op == "barrier" else nb, algorithm=alg, root=root,
               trace=trace, **kw)
    return b.build(), (b if builder == "assembler" else None)


def runnable(op: str, alg: str, n: int) -> bool:
    return algorithm_problem(op, alg, n, nbytes_for(op, n), 1) is None


@pytest.mark.parametrize("op,alg", CASES)
def test_message_pattern_matches_the_published_code(op, alg):
    fn = getattr(ref, f"ref_{op}_{alg}")
    for n in SIZES:
        if not runnable(op, alg, n):
            continue
        for root in sorted({0, n // 3, n - 1}) if op in ("bcast", "reduce", "scatter",
                                                         "gather") else (0,):
            progs, _ = build(op, alg, n, root)
            want = reference(fn(n, nbytes_for(op, n), root))
            assert as_sets(progs) == want, f"{op} {alg} n={n} root={root}"


@pytest.mark.parametrize("op,alg", CASES)
def test_builder_and_assembler_write_the_same_program(op, alg):
    for n in (1, 2, 3, 7, 8, 12, 16, 21):
        if runnable(op, alg, n):
            a, _ = build(op, alg, n, n // 2)
            b, _ = build(op, alg, n, n // 2, builder="builder")
            assert as_sets(a) == as_sets(b)
            check_programs(a, n)  # balanced channels, no deadlock with eager sends


# --------------------------------------------------------------------------- data flow


def initial_and_goal(op: str, n: int, root: int, blocks: int, nb: int):  # noqa: ANN201
    """Tokens ``b * n + c`` (block b of position c): what each rank starts with and what it
    must hold at the end."""
    def tok(b: int, c: int) -> int:
        return 1 << (b * n + c)

    every = sum(tok(b, c) for b in range(blocks) for c in range(n))
    init, goal = [0] * n, [0] * n
    for c in range(n):
        if op == "barrier":
            init[c], goal[c] = tok(0, c), sum(tok(0, x) for x in range(n))
        elif op == "bcast":
            init[c] = sum(tok(b, root) for b in range(blocks)) if c == root else 0
            goal[c] = sum(tok(b, root) for b in range(blocks))
        elif op in ("allreduce", "reduce"):
            init[c] = sum(tok(b, c) for b in range(blocks))
            goal[c] = every if op == "allreduce" or c == root else 0
        elif op in ("allgather", "gather"):
            init[c] = tok(c, c)
            goal[c] = sum(tok(x, x) for x in range(n)) if op == "allgather" or c == root \
                else 0
        elif op == "scatter":
            init[c] = sum(tok(b, root) for b in range(n)) if c == root else 0
            goal[c] = tok(c, root)
        else:  # alltoall(v): block b of c is c's data for c + b
            init[c] = sum(tok(b, c) for b in range(n))
            goal[c] = sum(tok((c - s) % n, s) for s in range(n)
                          if op == "alltoall" or vsize(s, c, nb))
    return init, goal


def token_flow(progs: RankPrograms, carry: dict[int, int], n: int,
               init: list[int]) -> list[int]:
    """What each rank holds once all its operations finished: an operation starts with what
    its FINISH predecessors held when they finished and its START predecessors when they
    started; a receive adds what its send carried (the sender's holding at its start, of the
    blocks it sends).  Evaluated in one topological pass over start and finish events."""
    pairs = message_pairs(progs)
    match = dict(zip(pairs.recv.tolist(), pairs.send.tolist(), strict=True)) if pairs else {}
    assert pairs is None or pairs.forced.all()
    rank = progs.op_rank.tolist()
    N = progs.n_ops
    preds: list[list[tuple[int, int]]] = [[] for _ in range(N)]
    for b, a, k in zip(progs.dep_before.tolist(), progs.dep_after.tolist(),
                       progs.dep_kind.tolist(), strict=True):
        preds[a].append((b, k))
    # events: 2i start of op i, 2i+1 its finish
    need = [0] * (2 * N)
    after: list[list[int]] = [[] for _ in range(2 * N)]
    for a in range(N):
        for b, k in preds[a]:
            after[2 * b + (1 if k == FINISH else 0)].append(2 * a)
            need[2 * a] += 1
        after[2 * a].append(2 * a + 1)
        need[2 * a + 1] += 1
        if a in match:
            after[2 * match[a]].append(2 * a + 1)
            need[2 * a + 1] += 1
    state = [0] * (2 * N)
    ready = deque(e for e in range(2 * N) if need[e] == 0)
    done = 0
    sel_cache: dict[int, int] = {}

    def selector(mask: int) -> int:
        if mask not in sel_cache:
            full = (1 << n) - 1
            sel_cache[mask] = -1 if mask == -1 else sum(
                full << (b * n) for b in range(mask.bit_length()) if mask >> b & 1)
        return sel_cache[mask]

    while ready:
        e = ready.popleft()
        done += 1
        op, fin = divmod(e, 2)
        if not fin:
            s = init[rank[op]]
            for b, k in preds[op]:
                s |= state[2 * b + (1 if k == FINISH else 0)]
            state[e] = s
        else:
            s = state[2 * op]
            if op in match:
                snd = match[op]
                s |= state[2 * snd] & selector(carry.get(snd, -1))
            state[e] = s
        for nxt in after[e]:
            need[nxt] -= 1
            if need[nxt] == 0:
                ready.append(nxt)
    assert done == 2 * N, "the operation graph cannot run to its end"
    held = list(init)
    for i in range(N):
        held[rank[i]] |= state[2 * i + 1]
    return held


@pytest.mark.parametrize("op,alg", CASES)
def test_data_flow_every_rank_ends_with_what_it_must_hold(op, alg):
    for n in SIZES:
        if not runnable(op, alg, n):
            continue
        for root in sorted({0, n // 2, n - 1}) if op in ("bcast", "reduce", "scatter",
                                                         "gather") else (0,):
            trace = Trace()
            progs, asm = build(op, alg, n, root, trace)
            gid = asm.global_ids
            carry: dict[int, int] = {}
            for _ranks, handles, masks in trace.sends:
                for h, m in zip(handles.tolist(), masks, strict=True):
                    carry[int(gid[h])] = m
            assert set(carry) == set(np.flatnonzero(progs.op_kind == SEND).tolist())
            init, goal = initial_and_goal(op, n, root, trace.blocks, nbytes_for(op, n))
            held = token_flow(progs, carry, n, init)
            for r in range(n):
                missing = goal[r] & ~held[r]
                lacks = [divmod(t, n) for t in range(missing.bit_length()) if missing >> t & 1]
                assert not missing, f"{op} {alg} n={n} root={root}: rank {r} lacks {lacks[:5]}"



def test_token_check_catches_a_missing_wait():
    """The check is not vacuous: an allreduce whose sends do not wait for the step before
    (every exchange posted at once) leaves ranks without contributions."""
    n = 8
    b = ProgramBuilder(n)
    for r in range(n):
        rb = b.rank(r)
        for k in range(3):
            rb.irecv(r ^ (1 << k), 8, k)
            rb.isend(r ^ (1 << k), 8, k)
        rb.waitall()
    progs = b.build()
    init = [1 << c for c in range(n)]
    held = token_flow(progs, {}, n, init)
    assert any(h != (1 << n) - 1 for h in held)


# --------------------------------------------------------------------------- communicators


def test_rows_of_a_grid_in_one_call_equal_each_row_alone():
    grid = np.arange(24).reshape(4, 6)  # 4 rows of 6 ranks
    a = ProgramAssembler(24)
    tag = allreduce(a, grid, 4096, algorithm="ring", tag=5)
    together = a.build()
    b = ProgramBuilder(24)
    for row in grid:
        t = allreduce(b, row.tolist(), 4096, algorithm="ring", tag=5)
    assert tag == t == 5 + 2 * 5
    assert as_sets(together) == as_sets(b.build())
    # columns are communicators too: positions map to their ranks
    c = ProgramBuilder(24)
    bcast(c, grid[:, 2], 100, root=1)
    progs = c.build()
    sends = progs.op_kind == SEND
    assert set(progs.op_rank[sends].tolist()) | set(progs.op_peer[sends].tolist()) == \
        {2, 8, 14, 20}
    assert int(progs.op_rank[sends][0]) == 8  # position 1 is the root


def test_a_collective_follows_the_ranks_program_and_the_next_call_follows_it():
    b = ProgramBuilder(4)
    b.rank(0).compute_ps(1000)
    allreduce(b, range(4), 8, algorithm="recursive_doubling")
    for r in range(4):
        b.rank(r).compute_ps(5)
    p = b.build()
    first_comm = 1  # rank 0's first allreduce operation depends on its compute
    assert (0, first_comm, FINISH) in set(zip(p.dep_before.tolist(), p.dep_after.tolist(),
                                              p.dep_kind.tolist(), strict=True))
    last = int(p.rank_first[1]) - 1
    assert p.op_time_ps[last] == 5
    assert {int(b) for b, a in zip(p.dep_before, p.dep_after, strict=True) if a == last} == \
        {last - 2, last - 1}  # the compute waits for both operations of the last step


def test_bad_communicators_are_refused():
    b = ProgramBuilder(4)
    with pytest.raises(ValueError, match="twice"):
        allreduce(b, [0, 1, 1], 8)
    with pytest.raises(ValueError, match="outside 0 .. 3"):
        allreduce(b, [0, 4], 8)
    with pytest.raises(ValueError, match="root 3"):
        bcast(b, [0, 1, 2], 8, root=3)


# --------------------------------------------------------------------------- auto, refusals


@pytest.mark.parametrize("op,nbytes,n,want", [
    ("bcast", 12287, 64, "binomial"), ("bcast", 12288, 64, "scatter_doubling_allgather"),
    ("bcast", 12288, 7, "binomial"), ("bcast", 524287, 64, "scatter_doubling_allgather"),
    ("bcast", 524288, 64, "scatter_allgather"), ("bcast", 12288, 24, "scatter_allgather"),
    ("allreduce", 2048, 64, "recursive_doubling"), ("allreduce", 2049, 64, "rabenseifner"),
    ("allreduce", 2049, 4096, "recursive_doubling"),  # 2,049 elements < 4,096 = pof2
    ("reduce", 2048, 16, "binomial"), ("reduce", 2049, 16, "rabenseifner"),
    ("allgather", 8191, 64, "recursive_doubling"),  # total 524,224 < 524,288
    ("allgather", 8192, 64, "ring"), ("allgather", 1000, 80, "bruck"),
    ("allgather", 1024, 80, "ring"),  # 81,920 is not < 81,920
    ("alltoall", 256, 8, "bruck"), ("alltoall", 256, 7, "scattered"),
    ("alltoall", 257, 64, "scattered"), ("alltoall", 32768, 64, "scattered"),
    ("alltoall", 32769, 64, "pairwise"), ("alltoallv", 10, 64, "scattered"),
    ("barrier", 0, 64, "dissemination"), ("scatter", 1 << 20, 64, "binomial"),
    ("gather", 8, 3, "binomial"),
])
def test_auto_follows_mpich_thresholds(op, nbytes, n, want):
    assert select_algorithm(op, nbytes, n) == want


def test_thresholds_are_mpich_33_defaults():
    assert MPICH_THRESHOLDS == {
        "BCAST_SHORT_MSG_SIZE": 12288, "BCAST_LONG_MSG_SIZE": 524288, "BCAST_MIN_PROCS": 8,
        "ALLREDUCE_SHORT_MSG_SIZE": 2048, "REDUCE_SHORT_MSG_SIZE": 2048,
        "ALLGATHER_SHORT_MSG_SIZE": 81920, "ALLGATHER_LONG_MSG_SIZE": 524288,
        "ALLTOALL_SHORT_MSG_SIZE": 256, "ALLTOALL_MEDIUM_MSG_SIZE": 32768,
        "ALLTOALL_THROTTLE": 32}


def test_auto_counts_elements_of_the_datatype():
    # 4,096 B of doubles is 512 elements: fewer than the 1,024 of a 1,024-rank communicator
    assert select_algorithm("allreduce", 4096, 1024, 8) == "recursive_doubling"
    assert select_algorithm("allreduce", 4096, 1024, 1) == "rabenseifner"


@pytest.mark.parametrize("op,alg,n,nbytes,words", [
    ("allgather", "recursive_doubling", 12, 8, "needs a power-of-two number of ranks, got 12"),
    ("bcast", "scatter_doubling_allgather", 6, 99999, "power-of-two"),
    ("allreduce", "rabenseifner", 64, 8, "holds 8 element(s)"),
    ("reduce", "rabenseifner", 9, 7, "splits the buffer over 8 ranks"),
    ("allreduce", "ring", 4, 10, None),
    ("allreduce", "butterfly", 4, 8, "no algorithm 'butterfly'"),
])
def test_refusals_give_the_reason(op, alg, n, nbytes, words):
    b = ProgramBuilder(n)
    if words is None:
        collective(b, op, None, nbytes, algorithm=alg)
        return
    with pytest.raises(ConfigError, match="workload.algorithm") as e:
        collective(b, op, None, nbytes, algorithm=alg)
    assert words in str(e.value)


def test_datatype_must_divide_the_buffer():
    with pytest.raises(ConfigError, match="not a whole number of 8-byte elements"):
        allreduce(ProgramBuilder(4), None, 12, datatype_size=8)


# --------------------------------------------------------------------------- closed forms


def messages(op: str, alg: str, n: int, nbytes: int = 64) -> np.ndarray:
    b = ProgramAssembler(n)
    collective(b, op, None, nbytes, algorithm=alg)
    p = b.build()
    return np.flatnonzero(p.op_kind == SEND)


@pytest.mark.parametrize("n", [2, 4, 8, 16, 32, 64, 128])
def test_message_counts_of_the_thesis_table(n):
    """Cui's Table 4.1 counts: binomial broadcast n - 1 messages, recursive-doubling
    allreduce and Bruck alltoall n log2 n."""
    lg = n.bit_length() - 1
    assert messages("bcast", "binomial", n).size == n - 1
    assert messages("allreduce", "recursive_doubling", n).size == n * lg
    assert messages("alltoall", "bruck", n).size == n * lg


@pytest.mark.parametrize("n", [3, 5, 12, 33])
def test_message_counts_any_n(n):
    assert messages("allreduce", "ring", n, 64 * n).size == 2 * n * (n - 1)
    assert messages("allreduce", "ring", 12, 64).size == 2 * 12 * 11 - 11  # piece 11 empty
    assert messages("allgather", "bruck", n).size == n * (n - 1).bit_length()
    assert messages("alltoall", "pairwise", n).size == n * (n - 1)
    assert messages("barrier", "dissemination", n).size == n * (n - 1).bit_length()
    assert messages("barrier", "tree", n).size == 2 * (n - 1)
    assert messages("gather", "binomial", n).size == n - 1


def test_alltoall_bytes_closed_form():
    """Bruck moves about p/2 blocks per step; pairwise moves each block once."""
    n, nb = 12, 100
    b = ProgramAssembler(n)
    collective(b, "alltoall", None, nb, algorithm="bruck")
    p = b.build()
    blocks = sum(sum(1 for i in range(n) if i & (1 << k)) for k in range(4))
    assert int(p.op_bytes[p.op_kind == SEND].sum()) == n * blocks * nb
    b = ProgramAssembler(n)
    collective(b, "alltoall", None, nb, algorithm="pairwise")
    p = b.build()
    assert int(p.op_bytes[p.op_kind == SEND].sum()) == n * (n - 1) * nb


def test_zero_bytes_sends_nothing_but_the_barrier_sends_empty_messages():
    b = ProgramBuilder(5)
    assert allreduce(b, None, 0, tag=3) == 3
    assert b.build().n_ops == 0
    assert messages("barrier", "dissemination", 5, 0).size == 15


def test_tags_each_step_and_returned():
    b = ProgramAssembler(16)
    nxt = collective(b, "allreduce", None, 1 << 20, algorithm="rabenseifner", tag=100)
    p = b.build()
    tags = sorted(set(p.op_tag[p.op_kind != 2].tolist()))
    assert tags == list(range(101, 109))  # 4 halving + 4 doubling steps (no fold at 16)
    assert nxt == 109  # one past the last tag used (no fold at 16 ranks)
    b = ProgramAssembler(12)
    assert collective(b, "allreduce", None, 1 << 20, algorithm="rabenseifner", tag=100) == 108


# --------------------------------------------------------------------------- the workload


ALLREDUCE_HASHES = {  # the arrays the allreduce workload built before collectives existed
    1: "6f64dff6d68d5245", 2: "40a7303b78a2e92f", 5: "8a6d2300a8af0dd0",
    8: "2f4c56d61b472a6f", 12: "ebc869ea5bc7190c", 33: "b4c5545905a391d4",
    64: "ec2d38349daef7b1", 100: "525ad711044fcfff"}


def _digest(p: RankPrograms) -> str:
    m = hashlib.sha256()
    for f in ("rank_first", "op_kind", "op_peer", "op_bytes", "op_tag", "op_time_ps",
              "dep_before", "dep_after", "dep_kind"):
        m.update(getattr(p, f).tobytes())
    return m.hexdigest()[:16]


def test_allreduce_workload_builds_the_same_arrays_as_before():
    from test_program_workloads import make

    from federation.plugins.workloads.programs import Allreduce

    got = {n: _digest(make(Allreduce, 128, ranks=n, size=8, iterations=2, compute=1e-6))
           for n in ALLREDUCE_HASHES}
    assert got == ALLREDUCE_HASHES


def test_per_rank_patterns_are_symmetric_channels():
    """Every (source, destination, tag) channel holds as many receives as sends, for every
    algorithm and size (the checks' precondition)."""
    for op, alg in CASES:
        for n in (5, 16, 33):
            if runnable(op, alg, n):
                p, _ = build(op, alg, n, 1 % n)
                rank = p.op_rank
                count: dict[tuple, int] = defaultdict(int)
                for i in np.flatnonzero(p.op_kind == SEND):
                    count[int(rank[i]), int(p.op_peer[i]), int(p.op_tag[i])] += 1
                for i in np.flatnonzero(p.op_kind == RECV):
                    count[int(p.op_peer[i]), int(rank[i]), int(p.op_tag[i])] -= 1
                assert not any(count.values()), (op, alg, n)


def test_max_messages_bounds_every_algorithm():
    from federation.programs.collectives import max_messages

    for op, alg in CASES:
        for n in (1, 2, 3, 8, 13, 33):
            if runnable(op, alg, n):
                p, _ = build(op, alg, n, 0)
                assert int((p.op_kind == SEND).sum()) <= max_messages(op, alg, n), (op, alg, n)


def test_alltoallv_one_matrix_per_communicator():
    """A 2-D comm with a size matrix per communicator equals each communicator alone, also
    when their zero entries differ (written by groups)."""
    rng = np.random.default_rng(3)
    grid = np.arange(15).reshape(3, 5)
    sizes = rng.integers(0, 4, size=(3, 5, 5)) * 100
    sizes[1] = 0
    a = ProgramAssembler(15)
    collective(a, "alltoallv", grid, 0, sizes=sizes, algorithm="scattered")
    b = ProgramBuilder(15)
    for row, m in zip(grid, sizes, strict=True):
        collective(b, "alltoallv", row.tolist(), 0, sizes=m, algorithm="scattered")
    assert as_sets(a.build()) == as_sets(b.build())
    with pytest.raises(ValueError, match="one per communicator"):
        collective(ProgramAssembler(15), "alltoallv", grid, 0, sizes=sizes[:2])
