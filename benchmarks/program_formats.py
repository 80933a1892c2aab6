"""How long rank programs take to build, check, write and read (no assertions: figures only).

    python benchmarks/program_formats.py [n_ranks] [iterations]

A ring exchange per iteration (irecv from the left, isend to the right, waitall, compute):
3 operations per rank and iteration (4 k - 1 edges per rank over k iterations), built call
by call with ProgramBuilder and as blocks with programs_from_blocks.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from federation.programs import COMPUTE, FINISH, RECV, SEND, START
from federation.programs.builder import ProgramBuilder, programs_from_blocks
from federation.programs.checks import check_programs
from federation.programs.goal import read_goal, write_goal


def by_calls(n: int, k: int):
    b = ProgramBuilder(n)
    for r in range(n):
        rb = b.rank(r)
        left, right = (r - 1) % n, (r + 1) % n
        for i in range(k):
            rb.irecv(left, 1024, i)
            rb.isend(right, 1024, i)
            rb.waitall()
            rb.compute_ps(1000)
    return b.build()


def by_blocks(n: int, k: int):
    ranks = np.arange(n)[:, None]
    kind = np.tile(np.array([RECV, SEND, COMPUTE]), k)
    peer = np.where(kind == RECV, (ranks - 1) % n, np.where(kind == SEND, (ranks + 1) % n, -1))
    tag = np.repeat(np.arange(k), 3) * (kind != COMPUTE)
    o = 3 * np.arange(k)
    before = np.concatenate([o[1:] - 1, o, o, o + 1])
    after = np.concatenate([o[1:], o + 1, o + 2, o + 2])
    dkind = np.concatenate([np.full(k - 1, FINISH), np.full(k, START), np.full(2 * k, FINISH)])
    return programs_from_blocks(np.broadcast_to(kind, (n, 3 * k)), peer,
                                np.where(kind == COMPUTE, 0, 1024), tag,
                                np.where(kind == COMPUTE, 1000, 0), before, after, dkind)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("n_ranks", type=int, nargs="?", default=1000)
    ap.add_argument("iterations", type=int, nargs="?", default=334)
    args = ap.parse_args()
    if args.n_ranks < 2 or args.iterations < 1:
        ap.error("a ring needs at least 2 ranks and 1 iteration")
    n, k = args.n_ranks, args.iterations
    t = time.perf_counter()
    p = by_calls(n, k)
    t_calls = time.perf_counter() - t
    t = time.perf_counter()
    q = by_blocks(n, k)
    t_blocks = time.perf_counter() - t
    assert q.n_ops == p.n_ops and q.n_deps == p.n_deps
    t = time.perf_counter()
    check_programs(p, n)
    t_check = time.perf_counter() - t
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "ring.goal"
        t = time.perf_counter()
        write_goal(p, f)
        t_write = time.perf_counter() - t
        t = time.perf_counter()
        read_goal(f)
        t_read = time.perf_counter() - t
    print(f"{p.n_ops} operations, {p.n_deps} edges, {n} ranks")
    print(f"ProgramBuilder (calls + build) {t_calls:.2f} s "
          f"({t_calls / p.n_ops * 1e6:.2f} us per operation)")
    print(f"programs_from_blocks           {t_blocks:.3f} s")
    print(f"check_programs                 {t_check:.2f} s")
    print(f"write_goal / read_goal         {t_write:.2f} s / {t_read:.2f} s")


if __name__ == "__main__":
    main()
