"""The loop's rank-program state (``engine/program_arrays.build_traffic``): its layout facts.

The state's per-operation, per-message, per-flow, per-channel and per-slot fields are column
views of row tables, and successors are grouped by kind.  Two facts keep that honest: every
run hands the loop the same array types (else numba compiles the loop once more for each
kind of run, a minute each), and each kind's successor range holds exactly the edges of that
kind, in operation order (the loop releases a range without testing each edge's kind).
"""

from __future__ import annotations

import numba
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from federation.engine.program_arrays import (
    ProgramFigures,
    build_traffic,
    no_programs,
    open_pool,
)
from federation.programs.builder import ProgramBuilder
from federation.programs.model import FINISH, START, RankPrograms


def _state(progs: RankPrograms, n_nodes: int = 8):
    return build_traffic(progs, n_nodes, ProgramFigures(64, 1024, 64),
                         np.zeros(2, dtype=np.int64)).prog


def _ring(n_ranks: int, rounds: int) -> RankPrograms:
    b = ProgramBuilder(n_ranks)
    for r in range(n_ranks):
        p = b.rank(r)
        for k in range(rounds):
            h = p.irecv((r - 1) % n_ranks, 8, tag=k)
            p.send((r + 1) % n_ranks, 8, tag=k)
            p.wait(h)
            p.compute(1e-9)
    return b.build()


def test_every_run_gives_the_loop_the_same_types() -> None:
    """No programs (what an open-loop loop whose NICs pick classes gets), one message, many
    messages: one compiled loop serves all.  A plain open-loop loop gets the row pool alone
    (3 arrays), of the same array types as the programs' pool."""
    one = ProgramBuilder(2)
    one.rank(0).send(1, 8)
    one.rank(1).recv(0, 8)
    states = [no_programs(8), _state(one.build()), _state(_ring(4, 3))]
    types = [numba.typeof(s) for s in states]
    assert types[0] == types[1] == types[2]
    pool = open_pool(8)
    assert len(pool) == 3
    for name in pool._fields:
        assert numba.typeof(getattr(pool, name)) == numba.typeof(getattr(states[0], name))
        assert getattr(pool, name).shape == getattr(states[0], name).shape


def test_table_columns_share_rows() -> None:
    """A message's fields sit in one row: adjacent columns are one int64 apart."""
    pg = _state(_ring(4, 3))
    base = pg.msg_size.__array_interface__["data"][0]
    assert pg.msg_post.__array_interface__["data"][0] - base == 5 * 8
    assert pg.op_kind.strides == (64,)  # an operation's row is one cache line
    # a message's row: its first eight fields (what the loop reads and writes as it runs)
    # one cache line, the class (read once per packet's birth) appended in the next
    assert pg.msg_size.strides == (128,)
    assert pg.msg_finish.__array_interface__["data"][0] - base == 7 * 8
    assert pg.msg_size.__array_interface__["data"][0] % 64 == 0


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 6), st.integers(1, 4))
def test_successor_ranges_hold_one_kind_in_operation_order(n_ranks: int, rounds: int) -> None:
    progs = _ring(n_ranks, rounds)
    pg = _state(progs)
    for op in range(progs.n_ops):
        for kind in (FINISH, START):
            lo, hi = pg.succ_first[2 * op + kind], pg.succ_first[2 * op + kind + 1]
            want = np.sort(progs.dep_after[(progs.dep_before == op) & (progs.dep_kind == kind)])
            assert pg.succ_op[lo:hi].tolist() == want.tolist()
            assert (pg.succ_kind[lo:hi] == kind).all()
