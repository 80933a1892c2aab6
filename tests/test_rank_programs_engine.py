"""Rank programs in the native engine: closed forms, MPI semantics, refusals, conservation.

The programs here are written as raw :class:`RankPrograms` arrays (the contract every builder,
file format and workload produces), run through a stand-in closed-loop workload, so that these
tests check the engine alone.  One-way latencies come from the single-packet closed forms of
``test_switching`` (store-and-forward: ``sum(s_i + l_i) + n d``), on the packet's own path.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import yaml
from test_switching import cut_through, figures, path_ports, store_and_forward

from federation import Params, Workload
from federation.errors import ConfigError, SimulationError
from federation.models.units import PS_PER_S
from federation.pipeline.load import load_experiment
from federation.pipeline.point import prepare
from federation.pipeline.summary import message_table, summarize
from federation.programs.model import COMPUTE, FINISH, RECV, SEND, START, RankPrograms

MACHINE = {
    "topology": {"kind": "dragonfly", "p": 8, "a": 4, "h": 2},
    "links": {"terminal": {"bandwidth": "8GB/s", "latency": "10ns"},
              "local": {"bandwidth": "8GB/s", "latency": "30ns"},
              "global": {"bandwidth": "8GB/s", "latency": "100ns"}},
    "router": {"delay": "20ns", "vcs": 2},
    "packet_size": 512,
}


class Given(Workload):
    """A closed-loop workload that returns the programs it was made with."""

    name = "given"
    closed_loop = True

    def __init__(self, progs: RankPrograms) -> None:
        self.params = Params()
        self._progs = progs

    def programs(self, ctx):  # noqa: ANN001, ANN201
        return self._progs


class Prog:
    """Rank programs as lists: ``op(rank, kind, peer, bytes, tag, time_ps)`` returns the global
    index once :meth:`build` has numbered ranks in order (ops are kept per rank)."""

    def __init__(self, n_ranks: int) -> None:
        self.ops: list[list[tuple]] = [[] for _ in range(n_ranks)]
        self.deps: list[tuple[tuple[int, int], tuple[int, int], int]] = []

    def op(self, rank: int, kind: int, peer: int = -1, nbytes: int = 0, tag: int = 0,
           time_ps: int = 0, after: tuple = (), started: tuple = ()) -> tuple[int, int]:
        ref = (rank, len(self.ops[rank]))
        self.ops[rank].append((kind, peer, nbytes, tag, time_ps))
        self.deps += [(a, ref, FINISH) for a in after] + [(a, ref, START) for a in started]
        return ref

    def chain(self, rank: int, *ops: tuple) -> list[tuple[int, int]]:
        """Blocking operations one after the other."""
        refs: list[tuple[int, int]] = []
        for o in ops:
            refs.append(self.op(rank, *o, after=refs[-1:]))
        return refs

    def build(self, rank_node=None) -> RankPrograms:
        first = np.cumsum([0] + [len(o) for o in self.ops])
        flat = [o for ops in self.ops for o in ops]
        g = [int(first[r]) + i for (r, i) in (d[0] for d in self.deps)]
        h = [int(first[r]) + i for (r, i) in (d[1] for d in self.deps)]
        cols = list(zip(*flat, strict=True)) if flat else [[]] * 5
        return RankPrograms(first, cols[0], cols[1], cols[2], cols[3], cols[4], g, h,
                            [d[2] for d in self.deps], rank_node=rank_node)

    def gid(self, ref: tuple[int, int]) -> int:
        return sum(len(o) for o in self.ops[:ref[0]]) + ref[1]


def run(tmp_path, progs: RankPrograms, machine: dict | None = None, engine: str = "native",
        **nic):
    """Run ``progs`` (the workload is replaced by them) on ``machine`` with ``engine``;
    (prepared, raw, summary, packets table)."""
    m = dict(machine or MACHINE)
    if nic:
        m = {**m, "nic": nic}
    doc = {"machine": m, "routing": {"algorithm": "minimal"}, "engine": {"kind": engine},
           "workload": {"kind": "messages", "messages": [{"src": 0, "dst": 1, "size": 1}]},
           "stop": {"warmup": "0ns", "measure": "1us"}}
    (tmp_path / "e.yaml").write_text(yaml.safe_dump(doc))
    point = load_experiment(tmp_path / "e.yaml").points[0]
    point = dataclasses.replace(point, workload=Given(progs))
    prep = prepare(point)
    raw = point.engine.run(prep.job)
    summary, packets, _ = summarize(prep, raw)
    return prep, raw, summary, packets


def one_way_ps(tmp_path, src: int, dst: int, size: int, switching: str = "store_and_forward"
               ) -> int:
    """The closed-form latency of one packet of ``size`` bytes from ``src`` to ``dst``."""
    from conftest import simulate

    m = {**MACHINE, "router": {**MACHINE["router"], "switching": switching}}
    doc = {"machine": m, "routing": {"algorithm": "minimal"},
           "workload": {"kind": "messages", "messages": [{"src": src, "dst": dst,
                                                          "size": size}]},
           "stop": {"warmup": "0ns", "measure": "1us"}}
    prep, raw, _, _, _ = simulate(tmp_path, doc, name="probe.yaml")
    ser, lat, d = figures(prep, path_ports(prep, raw), size)
    return (cut_through if switching == "cut_through" else store_and_forward)(ser, lat, d)


def pingpong(size: int, iterations: int) -> RankPrograms:
    p = Prog(2)
    p.chain(0, *[o for _ in range(iterations) for o in ((SEND, 1, size), (RECV, 1, size))])
    p.chain(1, *[o for _ in range(iterations) for o in ((RECV, 0, size), (SEND, 0, size))])
    return p


@pytest.mark.parametrize("switching", ["store_and_forward", "cut_through"])
@pytest.mark.parametrize("protocol", ["eager", "rendezvous"])
def test_pingpong_is_its_closed_form_to_the_picosecond(tmp_path, switching, protocol):
    """Far nodes (another group).  Eager: a round trip is two one-way latencies.  Rendezvous
    (threshold below the size): request, reply, then the data, each a one-packet trip."""
    far = 8 * 4 * 9 - 1  # the last node: another group
    size, iters = 512, 3
    machine = {**MACHINE, "router": {**MACHINE["router"], "switching": switching}}
    nic = {"eager_threshold": 64 if protocol == "rendezvous" else 65536}
    progs = pingpong(size, iters).build(rank_node=[0, far])
    _, raw, summary, _ = run(tmp_path, progs, machine, **nic)
    data = one_way_ps(tmp_path, 0, far, size, switching)
    ctrl = one_way_ps(tmp_path, 0, far, 64, switching) if protocol == "rendezvous" else 0
    # the reply goes back along the reverse path: same figures on this symmetric machine
    expect = iters * 2 * (data + 2 * ctrl)
    assert summary.programs.completion_ns * 1000 == pytest.approx(expect, abs=0.5)
    assert int(raw.programs.rank_finish.max()) == expect
    # rank 1's last send finishes as its last packet leaves the NIC (512 B at 8 GB/s)
    assert int(raw.programs.rank_finish[1]) == expect - data + 64_000


def test_overheads_add_to_every_trip(tmp_path):
    progs = pingpong(8, 2).build(rank_node=[0, 1])
    _, raw, _, _ = run(tmp_path, progs, send_overhead="100ns", recv_overhead="50ns")
    trip = one_way_ps(tmp_path, 0, 1, 8) + 150_000
    assert int(raw.programs.rank_finish.max()) == 2 * 2 * trip


def test_network_latency_max_of_a_pingpong_is_its_closed_form(tmp_path):
    """One 8 B eager message each way between two groups: each is one packet that leaves an
    idle NIC when it is created, so its network latency (NIC to delivery) is the one-way
    closed form, as its latency is (the maximum was null: the loop kept none)."""
    far = 8 * 4 * 9 - 1
    progs = pingpong(8, 1).build(rank_node=[0, far])
    _, raw, summary, _ = run(tmp_path, progs)
    trip = one_way_ps(tmp_path, 0, far, 8)
    assert int(raw.programs.rank_finish.max()) == 2 * trip
    assert summary.latency_ns.max == summary.latency_ns.mean == trip / 1e3
    assert summary.network_latency_ns.mean == trip / 1e3
    assert summary.network_latency_ns.max == trip / 1e3


def test_a_rank_runs_one_compute_at_a_time_in_the_order_they_began(tmp_path):
    p = Prog(1)
    a = p.op(0, COMPUTE, time_ps=100_000)
    b = p.op(0, COMPUTE, time_ps=50_000)
    c = p.op(0, COMPUTE, time_ps=7, after=(a,))
    progs = p.build()
    _, raw, _, _ = run(tmp_path, progs)
    pg = raw.programs
    assert [int(pg.op_start[p.gid(x)]) for x in (a, b, c)] == [0, 100_000, 150_000]
    assert [int(pg.op_finish[p.gid(x)]) for x in (a, b, c)] == [100_000, 150_000, 150_007]
    _, _, summary, _ = run(tmp_path, progs)
    assert summary.programs.messages == 0  # compute only (padding is not a message)


def test_nonblocking_send_lets_compute_overlap(tmp_path):
    """isend then compute (START dependency) then wait: the compute starts at 0 and the
    rank finishes at max(compute, send), not their sum."""
    p = Prog(2)
    s = p.op(0, SEND, 1, 4096)
    c = p.op(0, COMPUTE, time_ps=2_000_000, started=(s,))
    p.op(0, COMPUTE, time_ps=0, after=(s, c))
    p.op(1, RECV, 0, 4096)
    progs = p.build()
    _, raw, _, _ = run(tmp_path, progs)
    pg = raw.programs
    assert int(pg.op_start[p.gid(c)]) == 0
    assert int(pg.rank_finish[0]) == 2_000_000


def test_receives_match_sends_in_order_per_channel(tmp_path):
    """Two messages on one channel (8 B, then 4 KiB) and two receives posted later: the first
    receive gets the first message (non-overtaking), the other channel (tag 1) its own."""
    p = Prog(2)
    p.chain(0, (SEND, 1, 8, 0), (SEND, 1, 4096, 0), (SEND, 1, 16, 1))
    wait = p.op(1, COMPUTE, time_ps=5_000_000)
    r = [p.op(1, RECV, 0, n, t, after=(wait,)) for n, t in ((16, 1), (8, 0), (4096, 0))]
    progs = p.build()
    prep, raw, _, _ = run(tmp_path, progs)
    pg = raw.programs
    assert [int(pg.op_msg[p.gid(x)]) for x in r] == [2, 0, 1]
    assert all(int(pg.op_finish[p.gid(x)]) == 5_000_000 for x in r)  # all arrived earlier
    table = message_table(prep, raw)
    assert (table["completed_ps"] < 5_000_000).all()


def test_unmatched_send_is_refused_before_the_run(tmp_path):
    p = Prog(2)
    p.chain(0, (SEND, 1, 8, 0), (SEND, 1, 8, 0))
    p.op(1, RECV, 0, 8, 0)
    with pytest.raises(ConfigError, match=r"rank 0 operation 1 \(send 8 B to rank 1 tag 0\).*"
                       "no receive takes this send"):
        run(tmp_path, p.build())


def unchecked(monkeypatch) -> None:
    """Skip the static checks of the point's programs, so that the engine's own report of
    programs that cannot finish is what a test sees (the checks find these deadlocks first:
    tests/test_program_preflight.py)."""
    monkeypatch.setattr("federation.pipeline.rank_programs.check_programs", lambda *a, **k: None)


def test_head_to_head_receives_end_with_the_operations_named(tmp_path, monkeypatch):
    p = Prog(2)
    p.chain(0, (RECV, 1, 8), (SEND, 1, 8))
    p.chain(1, (RECV, 0, 8), (SEND, 0, 8))
    with pytest.raises(ConfigError, match=r"cannot finish \(a deadlock, before any run\).*"
                       r"rank 0 operation 0 \(recv 8 B from rank 1 tag 0\) waits for rank 1 "
                       r"operation 1 \(send 8 B to rank 0 tag 0\), which never begins"):
        run(tmp_path, p.build())
    unchecked(monkeypatch)
    with pytest.raises(SimulationError, match=r"cannot finish.*rank 0 operation 0 \(recv 8 B "
                       r"from rank 1 tag 0\) started at 0ps: no send on its channel started"):
        run(tmp_path, p.build())


@pytest.mark.parametrize("size,stuck", [(1024, False), (200_000, True)])
def test_send_send_completes_eagerly_and_deadlocks_by_rendezvous(tmp_path, size, stuck,
                                                                 monkeypatch):
    """Both ranks send first, then receive: fine when sends complete locally (eager); with
    rendezvous each request waits for a receive that is never posted."""
    p = Prog(2)
    p.chain(0, (SEND, 1, size), (RECV, 1, size))
    p.chain(1, (SEND, 0, size), (RECV, 0, size))
    if not stuck:
        _, raw, summary, _ = run(tmp_path, p.build())
        assert summary.programs.messages == 2 and (raw.programs.rank_finish > 0).all()
        return
    with pytest.raises(ConfigError, match=r"rank 0 operation 0 \(send 200000 B to rank 1 tag "
                       r"0\) is above nic.eager_threshold \(65536 B\), so it waits for its "
                       r"receive to be posted: rank 1 operation 1"):
        run(tmp_path, p.build())
    unchecked(monkeypatch)
    with pytest.raises(SimulationError, match="rendezvous request was never answered"):
        run(tmp_path, p.build())


def test_wide_fan_out_grows_the_heap_and_conserves_bytes(tmp_path):
    """3,000 isends chained by START dependencies all begin at once (one event releases them
    all); 3,000 receives posted at 0.  Every byte injected is delivered, and the messages
    arrive in order on their channel."""
    n = 3000
    p = Prog(2)
    prev: tuple = ()
    sends = []
    for i in range(n):
        s = p.op(0, SEND, 1, 100 + i, started=prev)
        sends.append(s)
        prev = (s,)
    for i in range(n):
        p.op(1, RECV, 0, 100 + i)
    prep, raw, summary, packets = run(tmp_path, p.build())
    assert summary.packets_delivered == summary.packets_generated
    assert summary.bytes_delivered == sum(100 + i for i in range(n))
    pg = raw.programs
    recvs = np.arange(n, 2 * n)
    assert (pg.op_msg[recvs] == np.arange(n)).all()
    assert (np.diff(pg.msg_finish[:n]) > 0).all()


def test_same_programs_same_results(tmp_path):
    progs = pingpong(70_000, 2).build(rank_node=[3, 200])
    a = run(tmp_path, progs)
    b = run(tmp_path, progs)
    for k in ("created_ps", "injected_ps", "delivered_ps", "hops"):
        assert (a[3][k] == b[3][k]).all()
    assert a[2] == b[2]


def test_time_in_ps_survives_the_clock_units():
    assert PS_PER_S == 10**12


def ring(n: int, size: int, rounds: int) -> RankPrograms:
    """Every rank sends ``size`` bytes to the next and receives from the previous, ``rounds``
    times (irecv, send, wait)."""
    p = Prog(n)
    for r in range(n):
        prev: tuple = ()
        for _ in range(rounds):
            rv = p.op(r, RECV, (r - 1) % n, size, after=prev)
            s = p.op(r, SEND, (r + 1) % n, size, started=(rv,))
            prev = (rv, s)
    return p.build()


def test_packet_rows_are_recycled_and_the_pool_grows_on_demand(tmp_path):
    """A ring of 288 ranks sending 64 KiB (128 packets each) at once holds more packets in
    flight than the first pool (1,024 rows): the pool doubles, every packet is delivered
    once, and the rows in use at the end are none."""
    progs = ring(288, 65536, 2)
    _, raw, summary, _ = run(tmp_path, progs, eager_threshold=1 << 20)
    pg = raw.programs
    assert pg.row_flow.shape[0] > 1024  # it grew
    assert summary.packets_delivered == 288 * 2 * 128
    assert summary.bytes_delivered == 288 * 2 * 65536
    assert int(pg.pstat[0]) == summary.packets_delivered


@pytest.mark.parametrize("algorithm", ["valiant", "ugal", "par"])
def test_program_packets_draw_valiant_intermediates_in_the_loop(tmp_path, algorithm):
    """Routings built on Valiant's intermediates route program packets through intermediates
    too (drawn in the loop by the routing's intermediate_rule), and deliver everything."""
    progs = ring(288, 4096, 2)  # neighbours in other groups at the group edges
    m = dict(MACHINE)
    m["router"] = {**MACHINE["router"], "vcs": 4}
    doc_machine = m
    (tmp_path / "e.yaml").write_text(yaml.safe_dump({
        "machine": doc_machine, "routing": {"algorithm": algorithm},
        "workload": {"kind": "messages", "messages": [{"src": 0, "dst": 1, "size": 1}]},
        "stop": {"warmup": "0ns", "measure": "1us"}}))
    point = load_experiment(tmp_path / "e.yaml").points[0]
    point = dataclasses.replace(point, workload=Given(progs))
    prep = prepare(point)
    raw = point.engine.run(prep.job)
    summary, _, _ = summarize(prep, raw)
    assert summary.packets_delivered == 288 * 2 * 8
    # 9 of the 288 ring neighbours are in another group (32 nodes per group): Valiant sends
    # every one of their packets through an intermediate group, and no other packet
    if algorithm == "valiant":
        assert summary.nonminimal_fraction == 9 / 288
    assert summary.nonminimal_fraction <= 9 / 288


def test_a_routing_with_its_own_intermediates_and_no_rule_is_refused(tmp_path):
    from federation.plugins.routings.minimal import Minimal

    class Mine(Minimal):
        def intermediates(self, tables, src_router, dst_router, rng):  # noqa: ANN001
            return np.full(src_router.shape[0], -1, dtype=np.int32)

    (tmp_path / "e.yaml").write_text(yaml.safe_dump({
        "machine": MACHINE, "routing": {"algorithm": "minimal"},
        "workload": {"kind": "messages", "messages": [{"src": 0, "dst": 1, "size": 1}]},
        "stop": {"warmup": "0ns", "measure": "1us"}}))
    point = load_experiment(tmp_path / "e.yaml").points[0]
    point = dataclasses.replace(point, workload=Given(pingpong(8, 1).build()))
    point = dataclasses.replace(point, routing=Mine(point.routing.params))
    with pytest.raises(ConfigError, match="intermediates in Python.*intermediate_rule"):
        prepare(point)


def test_an_operation_finishing_past_the_clock_is_refused_naming_it(tmp_path):
    """A compute that fits the clock alone (the checks allow it) but starts after a message
    arrived finishes past 2^43 ps: the run stops with the operation named, not a wrapped
    time."""
    from federation.models.limits import TIME_LIMIT_PS

    p = Prog(2)
    p.chain(0, (RECV, 1, 8), (COMPUTE, -1, 0, 0, TIME_LIMIT_PS - 1000))
    p.op(1, SEND, 0, 8)
    with pytest.raises(SimulationError, match=r"refused to schedule an OP event \(rank 0 "
                       r"operation 1 \(compute \d+ ps\) finishing\)"):
        run(tmp_path, p.build())
