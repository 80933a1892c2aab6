"""The issue's end-to-end checks for rank programs, each an exact fact.

1. Recursive-doubling allreduce of 2^k ranks where no two messages share a link (all ranks on
   one router): its time is k one-way latencies, to the picosecond, under both switchings;
   ``iterations`` with ``compute`` adds exactly the compute.
2. The CODES dragonfly, allreduce of 1,024 ranks (eager and rendezvous): every rank finishes,
   bytes are conserved, one completed message row per send, and the same seed gives the same
   ``results.json`` byte for byte.
3. GOAL round trip: a workload's programs written with ``write_goal`` and run through workload
   ``program`` give the workload's own results; bad GOAL files are refused by the CLI.
4. A SimGrid time-independent trace of a small halo exchange replays to ``halo3d``'s results.
5. Protocol boundary: ``eager_threshold`` bytes go eagerly, one more by rendezvous, which adds
   two control-packet trips.
6. A GOAL schedule whose ranks both receive first ends the CLI with exit 2 and one message.

One-way latencies are the single-packet closed forms of ``test_switching``
(store-and-forward ``sum(s_i + l_i) + n d``).  On :data:`MACHINE`, between two nodes of one
router the path is the NIC link and the terminal link (8 GB/s, 10 ns each) through one router
(20 ns): an ``s``-byte packet serialises in ``125 s`` ps per link.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import simulate
from hypothesis import given, settings
from hypothesis import strategies as st
from test_rank_programs_engine import MACHINE
from test_switching import cut_through, store_and_forward

from federation.pipeline.build import build
from federation.pipeline.load import load_experiment
from federation.pipeline.run import run_experiment
from federation.pipeline.summary import message_table
from federation.plugin.components import WorkloadContext
from federation.programs.goal import write_goal
from federation.programs.model import RankPrograms

DATA = Path(__file__).resolve().parent / "data" / "programs"

CODES = Path(__file__).resolve().parent.parent / "schemas" / "machines" / "codes-dragonfly.yaml"

#: ps to serialise one byte at 8 GB/s; the terminal latency; the router delay
PS_PER_BYTE, LAT, DELAY = 125, 10_000, 20_000


def one_router_ps(size: int, switching: str = "store_and_forward") -> int:
    """The one-way latency of one ``size``-byte packet between two nodes of one router."""
    ser = [PS_PER_BYTE * size] * 2
    form = cut_through if switching == "cut_through" else store_and_forward
    return form(ser, [LAT, LAT], DELAY)


def doc(workload: dict, machine: dict | None = None, **router) -> dict:
    m = dict(machine or MACHINE)
    if router:
        m["router"] = {**m["router"], **router}
    return {"machine": m, "routing": {"algorithm": "minimal"}, "workload": workload,
            "stop": {"warmup": "0ns", "measure": "1us"}}


def run(tmp_path: Path, document: dict, name: str = "e.yaml"):
    """Run one point: (prepared, raw, summary, messages table)."""
    prep, raw, summary, _, _ = simulate(tmp_path, document, name=name)
    return prep, raw, summary, message_table(prep, raw)


def workload_programs(tmp_path: Path, document: dict) -> RankPrograms:
    """The rank programs the experiment's workload builds on its machine."""
    (tmp_path / "w.yaml").write_text(yaml.safe_dump(document))
    point = load_experiment(tmp_path / "w.yaml").points[0]
    built = build(point, 2**33)
    ctx = WorkloadContext(built.network, point.machine.machine, point.experiment, 0,
                          built.nic_bandwidth, np.random.default_rng(0))
    return point.workload.programs(ctx)


def same_results(a: tuple, b: tuple) -> None:
    """Same per-rank finish, per-operation times and message table (every column)."""
    (_, raw_a, sum_a, tab_a), (_, raw_b, sum_b, tab_b) = a, b
    assert sum_a.programs == sum_b.programs
    assert np.array_equal(raw_a.programs.rank_finish, raw_b.programs.rank_finish)
    assert np.array_equal(raw_a.programs.op_start, raw_b.programs.op_start)
    assert np.array_equal(raw_a.programs.op_finish, raw_b.programs.op_finish)
    assert sorted(tab_a) == sorted(tab_b)
    for k in tab_a:
        assert np.array_equal(tab_a[k], tab_b[k]), k


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "FEDERATION_DISABLE_PLUGIN_AUTOLOAD": "1"}
    return subprocess.run([sys.executable, "-c", "from federation.cli import entry; entry()",
                           *args], capture_output=True, text=True, cwd=cwd, env=env)


# --------------------------------------------------------------------------- 1. closed form


def test_one_router_closed_forms():
    """The figures the allreduce checks rest on: 8 B serialise in 1 ns per link."""
    assert one_router_ps(8) == 1_000 + 10_000 + 20_000 + 1_000 + 10_000 == 42_000
    # cut-through: the terminal link starts once the head is in, so one serialisation
    assert one_router_ps(8, "cut_through") == 1_000 + 10_000 + 20_000 + 10_000 == 41_000


@pytest.mark.parametrize("switching", ["store_and_forward", "cut_through"])
@pytest.mark.parametrize("k", [1, 2, 3])
def test_allreduce_on_one_router_is_k_one_way_latencies(tmp_path, k, switching):
    """2^k ranks on nodes 0..2^k-1 of router 0: each step every rank sends one 8-byte packet
    on its own NIC link and receives one on its own terminal link (full duplex), so no two
    messages share a link and every step takes exactly one one-way latency."""
    n = 2**k
    prep, raw, summary, table = run(tmp_path, doc(
        {"kind": "allreduce", "ranks": n, "size": "8B"}, switching=switching))
    step = one_router_ps(8, switching)
    assert int(raw.programs.rank_finish.max()) == k * step
    assert raw.programs.rank_finish.tolist() == [k * step] * n  # in lockstep
    assert summary.programs.completion_ns * 1000 == pytest.approx(k * step, abs=0.5)
    assert summary.programs.messages == n * k
    # the messages of step j start at j one-way latencies and take one
    order = np.argsort(table["created_ps"], kind="stable")
    assert sorted(set(table["created_ps"].tolist())) == [j * step for j in range(k)]
    assert (table["completion_ps"][order] == step).all()
    assert not table["rendezvous"].any()
    # no link carried two packets: every port used carried exactly k packets of 8 B
    used = raw.port_pkts[raw.port_pkts > 0]
    assert used.size == 2 * n and (used == k).all()


@pytest.mark.parametrize("switching", ["store_and_forward", "cut_through"])
def test_allreduce_iterations_add_exactly_the_compute(tmp_path, switching):
    """3 iterations of (1 us compute, allreduce of 8 ranks): 3 x (1 us + 3 steps)."""
    k, iterations, compute = 3, 3, 1_000_000
    _, raw, _, _ = run(tmp_path, doc({"kind": "allreduce", "ranks": 2**k, "size": "8B",
                                      "iterations": iterations, "compute": "1us"},
                                     switching=switching))
    expect = iterations * (compute + k * one_router_ps(8, switching))
    assert raw.programs.rank_finish.tolist() == [expect] * 2**k
    # and without compute, iterations follow one another with no gap
    _, raw0, _, _ = run(tmp_path, doc({"kind": "allreduce", "ranks": 2**k, "size": "8B",
                                       "iterations": iterations}, switching=switching),
                        name="e0.yaml")
    assert int(raw0.programs.rank_finish.max()) == iterations * k * one_router_ps(8, switching)


@settings(max_examples=25, deadline=None)
@given(k=st.integers(1, 3), iterations=st.integers(1, 4), compute_ns=st.integers(0, 5000),
       switching=st.sampled_from(["store_and_forward", "cut_through"]))
def test_allreduce_time_is_its_closed_form(k, iterations, compute_ns, switching):
    """Any iterations and compute: ``iterations x (compute + k x one-way)``, every rank."""
    with tempfile.TemporaryDirectory() as tmp:
        _, raw, _, _ = run(Path(tmp), doc(
            {"kind": "allreduce", "ranks": 2**k, "size": "8B", "iterations": iterations,
             "compute": f"{compute_ns}ns"}, switching=switching))
    expect = iterations * (compute_ns * 1000 + k * one_router_ps(8, switching))
    assert raw.programs.rank_finish.tolist() == [expect] * 2**k


# --------------------------------------------------------------------------- 2. CODES, 1,024


def codes_experiment(tmp_path: Path, size: str, name: str) -> Path:
    """Allreduce of 1,024 ranks on the CODES dragonfly (1,056 nodes), 2 iterations, rendezvous
    above 1 KiB (so a 2 KiB message is 4 data packets and keeps the run short)."""
    machine = yaml.safe_load(CODES.read_text())
    machine["nic"] = {"eager_threshold": "1KiB"}
    d = doc({"kind": "allreduce", "ranks": 1024, "size": size, "iterations": 2,
             "compute": "100ns"}, machine=machine)
    d["seed"] = 7
    path = tmp_path / name
    path.write_text(yaml.safe_dump(d))
    return path


@pytest.mark.parametrize("size,nbytes,rendezvous", [("8B", 8, False), ("2KiB", 2048, True)])
def test_codes_allreduce_of_1024_ranks(tmp_path, size, nbytes, rendezvous):
    path = codes_experiment(tmp_path, size, "e.yaml")
    results = []
    for out in ("a", "b"):
        result = run_experiment(load_experiment(path), tmp_path / out)
        results.append((tmp_path / out / "results.json").read_bytes())
    assert results[0] == results[1]  # same seed, same bytes
    point = result.points[0]
    s = point.summary
    sends = 1024 * 10 * 2  # ranks x log2(ranks) steps x iterations
    assert s.programs.ranks == 1024 and s.programs.messages == sends
    print(f"completion {s.programs.completion_ns} ns, wall {point.performance.wall_seconds:.2f} s")
    finish = np.array(s.programs.rank_finish_ns)
    assert (finish > 0).all() and s.programs.completion_ns == finish.max()
    # bytes conserved: every data byte and every rendezvous request and reply delivered
    control = 64  # default control packet: 64 B (the packet size, 512 B, is larger)
    packets_per_msg = -(-nbytes // 512)
    expect_bytes = sends * nbytes + rendezvous * sends * 2 * control
    expect_packets = sends * packets_per_msg + rendezvous * sends * 2
    assert s.bytes_injected == s.bytes_delivered == expect_bytes
    assert s.packets_generated == s.packets_delivered == expect_packets
    # the messages table: one completed row per send, sizes as sent
    files = point.files
    table = read_table(tmp_path / "a" / files["messages"])
    assert len(table["message"]) == sends
    assert (np.asarray(table["completed_ps"]) >= np.asarray(table["created_ps"])).all()
    assert (np.asarray(table["created_ps"]) >= 0).all()
    assert (np.asarray(table["size"]) == nbytes).all()
    assert (np.asarray(table["rendezvous"]) == rendezvous).all()
    n_rdv = int(np.asarray(table["rendezvous"]).sum())
    assert s.bytes_delivered == int(np.asarray(table["size"]).sum()) + 2 * control * n_rdv
    # every (src, dst, tag) pair of the doubling, twice (two iterations)
    pairs = np.stack([table["src_rank"], table["dst_rank"], table["tag"]], axis=1)
    _, counts = np.unique(pairs, axis=0, return_counts=True)
    assert counts.shape[0] == 1024 * 10 and (counts == 2).all()
    assert (np.asarray(table["src_rank"]) ^ np.asarray(table["dst_rank"])
            == 1 << np.asarray(table["tag"])).all()


def read_table(path: Path) -> dict[str, np.ndarray]:
    """A table the run wrote (Parquet, the default format)."""
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        t = pq.read_table(path)
        return {c: t[c].to_numpy() for c in t.column_names}
    raise AssertionError(f"expected the default Parquet tables, got {path.name}")


# --------------------------------------------------------------------------- 3. GOAL round trip

ROUND_TRIP = {
    # 2x2x2 grid, faces of 100x100 doubles (80,000 B: rendezvous), copy time, the 8 B reduce
    "halo3d": {"kind": "halo3d", "nx": 100, "ny": 100, "nz": 100, "pex": 2, "pey": 2,
               "pez": 2, "iterations": 2, "computetime": "3us", "copytime": "200ns"},
    # 12 ranks: MPICH's pre- and post-steps; 70,000 B: rendezvous
    "allreduce": {"kind": "allreduce", "ranks": 12, "size": "70000B", "iterations": 2,
                  "compute": "1us"},
}


@pytest.mark.parametrize("name", sorted(ROUND_TRIP))
def test_goal_round_trip_gives_the_workloads_results(tmp_path, name):
    workload = ROUND_TRIP[name]
    progs = workload_programs(tmp_path, doc(workload))
    write_goal(progs, tmp_path / f"{name}.goal")
    direct = run(tmp_path, doc(workload), name="direct.yaml")
    replay = run(tmp_path, doc({"kind": "program", "path": f"{name}.goal"}), name="file.yaml")
    same_results(direct, replay)
    assert direct[2].programs.operations == progs.n_ops
    assert direct[3]["rendezvous"].any()


workloads = st.one_of(
    st.builds(lambda n, size, it, c: {"kind": "allreduce", "ranks": n, "size": f"{size}B",
                                      "iterations": it, "compute": f"{c}ns"},
              st.integers(1, 24), st.sampled_from([8, 700, 4096, 70_000]),
              st.integers(1, 2), st.integers(0, 300)),
    st.builds(lambda g, cells, it, c, red: {
        "kind": "halo3d", "pex": g[0], "pey": g[1], "pez": g[2], "nx": cells[0],
        "ny": cells[1], "nz": cells[2], "iterations": it, "computetime": f"{c}ns",
        "doreduce": red},
        st.tuples(*[st.integers(1, 3)] * 3), st.tuples(*[st.integers(1, 100)] * 3),
        st.integers(1, 2), st.integers(0, 300), st.sampled_from([0, 1])))


@settings(max_examples=30, deadline=None)
@given(workload=workloads)
def test_goal_round_trip_property(workload):
    """Any allreduce or halo3d (eager and rendezvous sizes, grids with edges): the GOAL file
    replays to the workload's own results."""
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        write_goal(workload_programs(t, doc(workload)), t / "p.goal")
        same_results(run(t, doc(workload), name="direct.yaml"),
                     run(t, doc({"kind": "program", "path": "p.goal"}), name="file.yaml"))


GOAL_REFUSALS = {
    # file, line of the operation named, words of the message
    "cycle.goal": (7, "dependency cycle: rank 1 operation l1 (recv 8 B from rank 0 tag 0"),
    "unknown_rank.goal": (4, "rank 5 is outside num_ranks 2"),
    "unmatched.goal": (5, "rank 0 operation l2 (send 8 B to rank 1 tag 4"),
}


@pytest.mark.parametrize("goal", sorted(GOAL_REFUSALS))
def test_bad_goal_files_are_refused_by_the_cli(tmp_path, goal):
    line, words = GOAL_REFUSALS[goal]
    (tmp_path / goal).write_text((DATA / goal).read_text())
    (tmp_path / "e.yaml").write_text(yaml.safe_dump(doc({"kind": "program", "path": goal})))
    r = run_cli("run", "e.yaml", "--out", "out", cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    msg = r.stderr.strip()
    assert "\n" not in msg and "Traceback" not in msg, msg
    assert goal in msg and words in msg, msg
    assert f"{goal}:{line}" in msg or f"line {line}" in msg, msg
    assert not (tmp_path / "out").exists()


# --------------------------------------------------------------------------- 4. TI halo


def halo_trace(pex: int, pey: int, pez: int, faces: tuple[int, int, int], iterations: int,
               flops: int) -> str:
    """A SimGrid TI trace of ember's Halo3D with the 8 B recursive-doubling reduce, written
    call by call: ``compute``; per dimension irecv from -, irecv from +, blocking send to -
    then +, wait both; then per doubling step irecv and isend with ``rank ^ 2**k`` (tag 1+k),
    wait both.  Face sizes are counts of doubles (datatype id 0)."""
    n = pex * pey * pez
    lines = []
    for r in range(n):
        pos = (r % pex, (r // pex) % pey, r // (pex * pey))
        stride = (1, pex, pex * pey)
        lines.append(f"{r} init")
        for _ in range(iterations):
            lines.append(f"{r} compute {flops}")
            for d, grid in enumerate((pex, pey, pez)):
                lo = r - stride[d] if pos[d] > 0 else None
                hi = r + stride[d] if pos[d] < grid - 1 else None
                count = faces[d] // 8
                nbs = [p for p in (lo, hi) if p is not None]
                lines += [f"{r} irecv {p} 0 {count} 0" for p in nbs]
                lines += [f"{r} send {p} 0 {count} 0" for p in nbs]
                lines += [f"{r} wait {p} {r} 0" for p in nbs]
            for k in range(n.bit_length() - 1):
                p = r ^ (1 << k)
                lines += [f"{r} irecv {p} {1 + k} 1 0", f"{r} isend {p} {1 + k} 1 0",
                          f"{r} wait {p} {r} {1 + k}", f"{r} wait {r} {p} {1 + k}"]
        lines.append(f"{r} finalize")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("grid,cells", [
    ((2, 2, 1), (20, 30, 40)),  # faces of 9,600 / 6,400 / 4,800 B: eager
    ((4, 2, 1), (20, 30, 40)),
    ((2, 2, 1), (100, 100, 100)),  # 80,000 B: rendezvous
])
def test_ti_halo_trace_replays_to_halo3d(tmp_path, grid, cells):
    """2 iterations, 2 us of compute given as 4,000 flops at 2 Gflop/s (exact in binary)."""
    nx, ny, nz = cells
    faces = (8 * ny * nz, 8 * nx * nz, 8 * nx * ny)
    (tmp_path / "halo.ti").write_text(halo_trace(*grid, faces, 2, 4000))
    halo = {"kind": "halo3d", "nx": nx, "ny": ny, "nz": nz, "pex": grid[0], "pey": grid[1],
            "pez": grid[2], "iterations": 2, "computetime": "2us"}
    direct = run(tmp_path, doc(halo), name="direct.yaml")
    replay = run(tmp_path, doc({"kind": "program", "path": "halo.ti", "host_speed": 2e9}),
                 name="file.yaml")
    assert replay[1].programs.rank_finish.tolist() == direct[1].programs.rank_finish.tolist()
    assert replay[2].programs.completion_ns == direct[2].programs.completion_ns
    for k in ("src_rank", "dst_rank", "tag", "size", "created_ps", "completed_ps"):
        assert np.array_equal(direct[3][k], replay[3][k]), k
    assert direct[2].programs.completion_ns > 2 * 2_000  # compute alone: 4 us
    assert direct[3]["rendezvous"].any() == (faces[0] > 65536)


# --------------------------------------------------------------------------- 5. protocol


def by_start(table: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The messages table in the order the sends started (it lists them rank by rank)."""
    order = np.argsort(table["created_ps"], kind="stable")
    return {k: v[order] for k, v in table.items()}


def test_eager_threshold_is_the_last_eager_size(tmp_path):
    """Ping-pong of 100 B then 101 B with ``eager_threshold: 100B`` between nodes 0 and 1:
    100 B goes eagerly (one trip each way); 101 B by rendezvous (request, reply, data: two
    64-byte control trips more per message).  All single packets, so closed forms."""
    machine = {**MACHINE, "nic": {"eager_threshold": "100B"}}
    _, raw, summary, table = run(tmp_path, doc(
        {"kind": "pingpong", "sizes": ["100B", "101B"], "iterations": 1, "nodes": [0, 1]},
        machine=machine))
    table = by_start(table)
    eager, ctrl, data = one_router_ps(100), one_router_ps(64), one_router_ps(101)
    assert (eager, ctrl, data) == (65_000, 56_000, 65_250)
    assert table["size"].tolist() == [100, 100, 101, 101]
    assert table["rendezvous"].tolist() == [False, False, True, True]
    assert table["completion_ps"].tolist() == [eager, eager, 2 * ctrl + data, 2 * ctrl + data]
    assert int(raw.programs.rank_finish.max()) == 2 * eager + 2 * (2 * ctrl + data) == 484_500
    # 4 data packets and 2 control packets per rendezvous message
    assert summary.packets_delivered == 4 + 2 * 2
    assert summary.bytes_delivered == 2 * 100 + 2 * 101 + 4 * 64


def test_default_threshold_is_64_kib(tmp_path):
    _, _, _, table = run(tmp_path, doc(
        {"kind": "pingpong", "sizes": ["64KiB", "65537B"], "iterations": 1, "nodes": [0, 1]}))
    table = by_start(table)
    assert table["size"].tolist() == [65536, 65536, 65537, 65537]
    assert table["rendezvous"].tolist() == [False, False, True, True]


# --------------------------------------------------------------------------- 6. stuck, CLI


def test_head_to_head_receives_end_the_cli_with_one_message(tmp_path):
    (tmp_path / "h.goal").write_text((DATA / "head_to_head.goal").read_text())
    (tmp_path / "e.yaml").write_text(yaml.safe_dump(doc({"kind": "program",
                                                         "path": "h.goal"})))
    r = run_cli("run", "e.yaml", "--out", "out", cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    msg = r.stderr.strip()
    assert "Traceback" not in msg and "\n" not in msg, msg
    assert "rank 0 operation r (recv 8 B from rank 1 tag 0" in msg, msg
    assert "h.goal:4" in msg, msg
    assert not (tmp_path / "out").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.yaml", "h.goal"]
