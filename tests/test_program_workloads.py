"""The built-in rank-program workloads ``pingpong``, ``allreduce`` and ``halo3d``.

The vectorised builders are compared with a plain per-rank, per-call statement of the same
programs (:func:`reference`): each rank's MPI calls written out one by one, turned into
operations and dependencies by a direct transcription of the sequential semantics.  On top:
exact operation counts, balanced channels, the programs run to completion when every send is
eager (no deadlock), ember's neighbour sets and face sizes, and the refusals.
"""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from federation.errors import ConfigError
from federation.pipeline.build import build_network
from federation.pipeline.load import load_experiment
from federation.plugin.components import WorkloadContext
from federation.plugins.workloads.programs import (
    MAX_PROGRAM_OPS,
    Allreduce,
    Halo3d,
    Pingpong,
)
from federation.plugins.workloads.programs_build import ember_decomposition
from federation.programs.model import COMPUTE, FINISH, RECV, SEND, START, RankPrograms


def ctx_for(n_nodes: int) -> WorkloadContext:
    net = SimpleNamespace(n_nodes=n_nodes)
    machine = SimpleNamespace(packet_size=4096.0)  # the workloads check message sizes with it
    return WorkloadContext(net, machine, None, 0, 1e9,  # type: ignore[arg-type]
                           np.random.default_rng(0))


def make(cls, n_nodes: int = 64, **params) -> RankPrograms:  # noqa: ANN001
    return cls(cls.Params(**params)).programs(ctx_for(n_nodes))


# --------------------------------------------------------------------------- reference


def reference(calls: list[list[tuple]]) -> tuple[list[tuple], set[tuple]]:
    """Operations and dependency edges of per-rank call lists, one call at a time.

    A call is ``(kind, peer, bytes, tag, blocking)`` or ``("wait", i)`` (wait on the rank's
    i-th operation).  Returns ``[(rank, kind, peer, bytes, tag, time)]`` in global numbering
    and the edge set ``{(before, after, kind)}``, transitively implied edges left out as the
    builders do: after a non-blocking op only its START; a START also covered by a FINISH on
    the same op dropped.
    """
    ops: list[tuple] = []
    edges: set[tuple] = set()
    for rank, rank_calls in enumerate(calls):
        base = len(ops)
        finish: list[int] = []  # FINISH deps of the next op
        start: int | None = None  # START dep of the next op
        for call in rank_calls:
            if call[0] == "wait":
                finish.append(base + call[1])
                continue
            kind, peer, nbytes, tag, blocking, *time = call
            me = len(ops)
            ops.append((rank, kind, peer, nbytes, tag, time[0] if time else 0))
            for b in finish:
                edges.add((b, me, FINISH))
            if start is not None and start not in finish:
                edges.add((start, me, START))
            finish, start = ([me], None) if blocking else ([], me)
    return ops, edges


def ref_allreduce(n: int, nbytes: int, tag_base: int, calls: list[list[tuple]]) -> None:
    """Append one MPICH recursive-doubling allreduce to each rank's calls."""
    p2 = 1
    while p2 * 2 <= n:
        p2 *= 2
    rem, steps = n - p2, p2.bit_length() - 1
    for r in range(n):
        c = calls[r]
        if r < 2 * rem and r % 2 == 0:
            c.append((SEND, r + 1, nbytes, tag_base + steps, True))
            c.append((RECV, r + 1, nbytes, tag_base + steps + 1, True))
            continue
        if r < 2 * rem:
            c.append((RECV, r - 1, nbytes, tag_base + steps, True))
        new = r // 2 if r < 2 * rem else r - rem
        for k in range(steps):
            pn = new ^ (1 << k)
            partner = 2 * pn + 1 if pn < rem else pn + rem
            c.append((RECV, partner, nbytes, tag_base + k, False))
            i = len([x for x in c if x[0] != "wait"]) - 1
            c.append((SEND, partner, nbytes, tag_base + k, False))
            c += [("wait", i), ("wait", i + 1)]
        if r < 2 * rem:
            c.append((SEND, r - 1, nbytes, tag_base + steps + 1, True))


def ref_halo(pex: int, pey: int, pez: int, faces: tuple[int, int, int], iterations: int,
             comp: int, copy: int, reduce: bool) -> list[list[tuple]]:
    """ember's Halo3D generate() loop, rank by rank, call by call."""
    n = pex * pey * pez
    calls: list[list[tuple]] = [[] for _ in range(n)]
    for _ in range(iterations):
        for r in range(n):
            c = calls[r]
            x, y, z = r % pex, (r // pex) % pey, r // (pex * pey)
            if comp:
                c.append((COMPUTE, -1, 0, 0, True, comp))
            for d, (pos, size, stride) in enumerate(((x, pex, 1), (y, pey, pex),
                                                     (z, pez, pex * pey))):
                nbrs = [r - stride] if pos > 0 else []
                nbrs += [r + stride] if pos < size - 1 else []
                handles = []
                for q in nbrs:
                    handles.append(len([o for o in c if o[0] != "wait"]))
                    c.append((RECV, q, faces[d], 0, False))
                for q in nbrs:
                    c.append((SEND, q, faces[d], 0, True))
                c += [("wait", h) for h in handles]
                if copy:
                    c.append((COMPUTE, -1, 0, 0, True, copy))
        if reduce:
            ref_allreduce(n, 8, 1, calls)
    return calls


def as_sets(p: RankPrograms) -> tuple[list[tuple], set[tuple]]:
    rank = p.op_rank
    ops = [(int(rank[i]), int(p.op_kind[i]), int(p.op_peer[i]), int(p.op_bytes[i]),
            int(p.op_tag[i]), int(p.op_time_ps[i])) for i in range(p.n_ops)]
    edges = {(int(b), int(a), int(k)) for b, a, k in
             zip(p.dep_before, p.dep_after, p.dep_kind, strict=True)}
    assert len(edges) == p.n_deps, "duplicate edges"
    return ops, edges


def well_formed(p: RankPrograms) -> None:
    """Edges within one rank and forward in program order; peers valid; channels balanced;
    and with eager sends every operation runs (no deadlock, no unmatched receive)."""
    rank = p.op_rank
    assert (rank[p.dep_before] == rank[p.dep_after]).all()
    assert (p.dep_before < p.dep_after).all()
    comm = p.op_kind != COMPUTE
    assert (p.op_peer[~comm] == -1).all()
    assert (p.op_peer[comm] != rank[comm]).all()
    assert ((p.op_peer[comm] >= 0) & (p.op_peer[comm] < p.n_ranks)).all()
    assert (p.op_bytes[comm] >= 1).all()
    snd = p.op_kind == SEND
    rcv = p.op_kind == RECV
    sends = Counter(zip(rank[snd].tolist(), p.op_peer[snd].tolist(), p.op_tag[snd].tolist(),
                        strict=True))
    recvs = Counter(zip(p.op_peer[rcv].tolist(), rank[rcv].tolist(), p.op_tag[rcv].tolist(),
                        strict=True))
    assert sends == recvs
    assert runs_to_completion(p)


def runs_to_completion(p: RankPrograms) -> bool:
    """Untimed execution: a send finishes as it starts (eager), a recv once its match (k-th
    send and k-th recv of a channel in program order) has started."""
    rank = p.op_rank
    deps: list[list[tuple[int, int]]] = [[] for _ in range(p.n_ops)]
    for b, a, k in zip(p.dep_before.tolist(), p.dep_after.tolist(), p.dep_kind.tolist(),
                       strict=True):
        deps[a].append((b, k))
    match: dict[int, int] = {}
    queues: dict[tuple, list[int]] = {}
    for i in range(p.n_ops):
        if p.op_kind[i] != COMPUTE:
            s, d = (int(rank[i]), int(p.op_peer[i]))
            key = (s, d, int(p.op_tag[i])) if p.op_kind[i] == SEND else (d, s, int(p.op_tag[i]))
            queues.setdefault(key + (int(p.op_kind[i]),), []).append(i)
    for (s, d, t, kind), ids in queues.items():
        if kind == RECV:
            for r, snd in zip(ids, queues[(s, d, t, SEND)], strict=True):
                match[r] = snd
    started = np.zeros(p.n_ops, bool)
    finished = np.zeros(p.n_ops, bool)
    progress = True
    while progress:
        progress = False
        for i in np.nonzero(~finished)[0].tolist():
            if not started[i] and all((finished if k == FINISH else started)[b]
                                      for b, k in deps[i]):
                started[i] = progress = True
            if started[i] and (p.op_kind[i] != RECV or started[match[i]]):
                finished[i] = progress = True
    return bool(finished.all())


# --------------------------------------------------------------------------- pingpong


def test_pingpong_programs_exactly():
    p = make(Pingpong, sizes=["8B", "1KiB"], iterations=3, nodes=[5, 2])
    calls = [[], []]
    for tag, size in enumerate((8, 1024)):
        for _ in range(3):
            calls[0] += [(SEND, 1, size, tag, True), (RECV, 1, size, tag, True)]
            calls[1] += [(RECV, 0, size, tag, True), (SEND, 0, size, tag, True)]
    assert as_sets(p) == reference(calls)
    assert p.rank_first.tolist() == [0, 12, 24]
    assert p.rank_node.tolist() == [5, 2]
    assert set(p.dep_kind.tolist()) == {FINISH}
    well_formed(p)


def test_pingpong_defaults():
    p = make(Pingpong, n_nodes=2)
    assert p.n_ops == 4 and p.op_bytes.tolist() == [8] * 4 and p.nodes().tolist() == [0, 1]


# --------------------------------------------------------------------------- allreduce


@pytest.mark.parametrize("n", [1, 2, 4, 8, 16])
def test_allreduce_power_of_two_counts_and_steps(n):
    p = make(Allreduce, ranks=n, size="4KiB", iterations=3)
    steps = n.bit_length() - 1
    assert np.diff(p.rank_first).tolist() == [3 * 2 * steps] * n
    assert (p.op_bytes == 4096).all()
    rank = p.op_rank
    local = np.arange(p.n_ops) - p.rank_first[rank]
    step = (local % (2 * steps)) // 2 if steps else local
    # step k's irecv and isend partner rank XOR 2^k, tag k
    assert (p.op_peer == (rank ^ (1 << step))).all()
    assert (p.op_tag == step).all()
    assert (p.op_kind[local % 2 == 0] == RECV).all() and (p.op_kind[local % 2 == 1] == SEND).all()
    # each step's irecv (but the very first) waits for the finish of both ops of the step
    # before; the isend follows its irecv's start
    first = p.dep_after[p.dep_kind == FINISH]
    recv = np.nonzero((local % 2 == 0) & (local > 0))[0]
    assert sorted(first.tolist()) == sorted(np.repeat(recv, 2).tolist())
    fb = p.dep_before[p.dep_kind == FINISH]
    assert (np.sort(fb - first) == np.sort(np.tile([-2, -1], recv.shape[0]))).all()
    starts = p.dep_kind == START
    assert (p.dep_after[starts] - p.dep_before[starts] == 1).all()
    assert (p.op_kind[p.dep_after[starts]] == SEND).all()
    well_formed(p)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 40), iterations=st.integers(1, 3), compute=st.sampled_from([0, 7]))
def test_allreduce_matches_reference(n, iterations, compute):
    p = make(Allreduce, ranks=n, iterations=iterations, compute=f"{compute}ns")
    calls: list[list[tuple]] = [[] for _ in range(n)]
    for _ in range(iterations):
        if compute:
            for c in calls:
                c.append((COMPUTE, -1, 0, 0, True, compute * 1000))
        ref_allreduce(n, 8, 0, calls)
    assert as_sets(p) == reference(calls)
    well_formed(p)


def test_allreduce_non_power_of_two_counts():
    p = make(Allreduce, ranks=6)  # p=4, rem=2: ranks 0, 2 sit out, 1, 3 do 2 extra ops
    assert np.diff(p.rank_first).tolist() == [2, 6, 2, 6, 4, 4]
    assert p.op_tag[p.rank_first[0]:p.rank_first[1]].tolist() == [2, 3]


def test_allreduce_defaults_use_every_node_and_compute_precedes():
    p = make(Allreduce, n_nodes=8, iterations=2, compute="1us")
    assert p.n_ranks == 8 and p.n_ops == 8 * 2 * (1 + 6)
    assert p.op_kind[0] == COMPUTE and p.op_time_ps[0] == 1_000_000
    assert p.op_kind[7] == COMPUTE  # second iteration
    assert (p.op_kind == COMPUTE).sum() == 16


def test_allreduce_paper_size_builds():
    p = make(Allreduce, n_nodes=1024, iterations=50)
    assert p.n_ops == 1_024_000
    assert (np.diff(p.rank_first) == 1000).all()


# --------------------------------------------------------------------------- halo3d


def test_halo_2x2x2_neighbours_and_faces():
    h = Halo3d(Halo3d.Params(nx=2, ny=3, nz=5, pex=2, pey=2, pez=2, fields_per_cell=2,
                             datatype_width=4))
    assert h.face_bytes() == (2 * 4 * 3 * 5, 2 * 4 * 2 * 5, 2 * 4 * 2 * 3)
    nb = h.neighbours((2, 2, 2))
    # rank r = x + 2y + 4z; each has exactly one neighbour per dimension
    for r in range(8):
        x, y, z = r % 2, (r // 2) % 2, r // 4
        assert nb[:, :, r].tolist() == [[r - 1, -1] if x else [-1, r + 1],
                                        [r - 2, -1] if y else [-1, r + 2],
                                        [r - 4, -1] if z else [-1, r + 4]]
    p = h.programs(ctx_for(8))
    per_rank = 1 + 3 * 2 + 3 * 2  # compute, 3 x (irecv + send), 8-byte allreduce on 8 ranks
    assert np.diff(p.rank_first).tolist() == [per_rank] * 8
    comm = (p.op_kind != COMPUTE) & (p.op_tag == 0)
    dim = np.abs(p.op_peer[comm] - p.op_rank[comm])
    assert dict(zip(*np.unique(p.op_bytes[comm][dim == 1], return_counts=True),
                    strict=True)) == {120: 16}
    assert set(p.op_bytes[comm][dim == 2].tolist()) == {80}
    assert set(p.op_bytes[comm][dim == 4].tolist()) == {48}
    well_formed(p)


def test_halo_3x1x1_edges_have_fewer_neighbours():
    p = make(Halo3d, nx=2, ny=3, nz=4, pex=3, pey=1, pez=1, computetime="1us", doreduce=0)
    assert np.diff(p.rank_first).tolist() == [3, 5, 3]
    assert [(int(k), int(q), int(b)) for k, q, b in
            zip(p.op_kind[3:8], p.op_peer[3:8], p.op_bytes[3:8], strict=True)] == \
        [(COMPUTE, -1, 0), (RECV, 0, 96), (RECV, 2, 96), (SEND, 0, 96), (SEND, 2, 96)]
    # the middle rank: irecv-, irecv+ (START), send- (START on irecv+), send+ (FINISH)
    assert reference(ref_halo(3, 1, 1, (96, 64, 48), 1, 10**6, 0, False)) == as_sets(p)
    well_formed(p)


@settings(max_examples=30, deadline=None)
@given(pex=st.integers(1, 4), pey=st.integers(1, 3), pez=st.integers(1, 3),
       iterations=st.integers(1, 2), copy=st.sampled_from([0, 3]), reduce=st.booleans(),
       comp=st.sampled_from([0, 5]))
def test_halo_matches_ember_order(pex, pey, pez, iterations, copy, reduce, comp):
    p = make(Halo3d, nx=3, ny=4, nz=5, pex=pex, pey=pey, pez=pez, iterations=iterations,
             computetime=f"{comp}ns", copytime=f"{copy}ns", doreduce=int(reduce))
    faces = (8 * 4 * 5, 8 * 3 * 5, 8 * 3 * 4)
    assert as_sets(p) == reference(ref_halo(pex, pey, pez, faces, iterations, comp * 1000,
                                             copy * 1000, reduce))
    well_formed(p)


def test_halo_default_computetime_is_embers():
    h = Halo3d(Halo3d.Params(nx=10, ny=10, nz=10, fields_per_cell=2))
    # 1000 cells x 2 fields x 26 FLOPs at 10 GFLOP/s = 5200 ns
    assert h.compute_ps() == 5_200_000
    h = Halo3d(Halo3d.Params(nx=1, ny=1, nz=1, peflops=3e9, flopspercell=1))
    assert h.compute_ps() == 0  # 1/3 ns truncated to whole ns as ember does


def _ember_scan(world: int) -> tuple[int, int, int]:
    """ember's cubic scan, stated directly (the reference for the divisor version)."""
    def var(t):  # noqa: ANN001, ANN202
        m = sum(t) // 3
        return sum(v * v for v in t) // 3 - m * m
    best = (world, 1, 1)
    for i in range(world):
        for j in range(world):
            for k in range(world):
                if i * j * k == world and var((i, j, k)) <= var(best):
                    best = (i, j, k)
    return best


def test_ember_decomposition():
    assert ember_decomposition(8) == (2, 2, 2)
    assert ember_decomposition(12) == (3, 2, 2)
    assert ember_decomposition(7) == (7, 1, 1)
    assert ember_decomposition(1) == (1, 1, 1)
    for w in range(1, 41):
        assert ember_decomposition(w) == _ember_scan(w), w
    p = make(Halo3d, n_nodes=12, nx=2, ny=2, nz=2, doreduce=0)
    assert p.meta["grid"] == [3, 2, 2] and p.n_ranks == 12


def test_determinism():
    for cls, kw in ((Allreduce, {"ranks": 13, "iterations": 2}),
                    (Halo3d, {"pex": 3, "pey": 2, "pez": 2, "nx": 2, "ny": 2, "nz": 2,
                              "iterations": 2})):
        a, b = make(cls, **kw), make(cls, **kw)
        for f in ("rank_first", "op_kind", "op_peer", "op_bytes", "op_tag", "op_time_ps",
                  "dep_before", "dep_after", "dep_kind"):
            assert np.array_equal(getattr(a, f), getattr(b, f)), f


# --------------------------------------------------------------------------- refusals


@pytest.mark.parametrize("cls, n_nodes, params, path, words", [
    (Pingpong, 4, {"nodes": [0, 4]}, "workload.nodes[1]", "4 nodes"),
    (Pingpong, 4, {"nodes": [2, 2]}, "workload.nodes", "two different nodes"),
    (Pingpong, 4, {"iterations": MAX_PROGRAM_OPS}, "workload.iterations", "limit"),
    (Allreduce, 8, {"ranks": 9}, "workload.ranks", "this machine has 8"),
    (Allreduce, 8, {"compute": "1s", "iterations": 9}, "workload.compute", "clock range"),
    (Allreduce, 1024, {"iterations": 10**6}, "workload.iterations", "100,000,000"),
    (Halo3d, 8, {"pex": 3, "pey": 3, "pez": 1}, "workload.pex", "9 ranks"),
    (Halo3d, 8, {"pex": 2, "pey": 0, "pez": 2}, "workload.pey", "all of pex, pey, pez"),
    (Halo3d, 8, {"pex": 2, "pey": 2, "pez": 2, "ranks": 4}, "workload.ranks", "= 8"),
    (Halo3d, 8, {"ranks": 16}, "workload.ranks", "this machine has 8"),
    (Halo3d, 8, {"pex": 2, "pey": 2, "pez": 2, "computetime": "2s", "iterations": 5},
     "workload.computetime", "clock range"),
])
def test_refusals_name_the_field(cls, n_nodes, params, path, words):  # noqa: ANN001
    with pytest.raises(ConfigError) as err:
        make(cls, n_nodes=n_nodes, **params)
    assert err.value.path == path
    assert words in err.value.message


def write(tmp_path, workload: dict) -> str:  # noqa: ANN001
    doc = {"machine": {"topology": {"kind": "dragonfly", "p": 2, "a": 4, "h": 2}},
           "routing": {"algorithm": "minimal"}, "workload": workload}
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


@pytest.mark.parametrize("workload, path", [
    ({"kind": "halo3d", "computetime": 10}, "workload.computetime"),
    ({"kind": "halo3d", "doreduce": 2}, "workload.doreduce"),
    ({"kind": "pingpong", "nodes": [0, 1, 2]}, "workload.nodes"),
    ({"kind": "pingpong", "sizes": ["1.5B"]}, "workload.sizes[0]"),
    ({"kind": "allreduce", "ranks": 0}, "workload.ranks"),
])
def test_schema_refusals(tmp_path, workload, path):  # noqa: ANN001
    with pytest.raises(ConfigError) as err:
        load_experiment(write(tmp_path, workload))
    assert path in str(err.value) and "exp.yaml" in str(err.value)


# --------------------------------------------------------------------------- experiment files


@pytest.mark.parametrize("workload, ranks, ops", [
    ({"kind": "pingpong", "sizes": ["8B", "64KiB"], "iterations": 4, "nodes": [0, 71]}, 2, 32),
    ({"kind": "allreduce", "size": "1KiB", "iterations": 2, "compute": "100ns"}, 72,
     # 72 = 64 + 8: ranks 0, 2, .., 14 do 2 ops, 1, 3, .., 15 do 2 + 12, the others 12
     2 * (72 + 8 * 2 + 8 * 14 + 56 * 12)),
    ({"kind": "halo3d", "nx": 4, "ny": 4, "nz": 4, "pex": 4, "pey": 3, "pez": 2,
      "computetime": "1us", "doreduce": 0}, 24, 24 + 2 * 2 * (3 * 6 + 2 * 8 + 1 * 12)),
])
def test_experiment_files_load_and_build(tmp_path, workload, ranks, ops):  # noqa: ANN001
    point = load_experiment(write(tmp_path, workload)).points[0]
    assert point.workload.closed_loop
    net = build_network(point)
    ctx = WorkloadContext(net, point.machine.machine, point.experiment, 0, 1e9,
                          np.random.default_rng(0))
    p = point.workload.programs(ctx)
    assert p.n_ranks == ranks and p.n_ops == ops
    assert int(p.nodes().max()) < net.n_nodes
    well_formed(p)
