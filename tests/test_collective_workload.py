"""The ``collective`` workload and the ``allreduce`` workload's ``algorithm``: experiment files
loaded and built, refusals naming their field, and every collective run to its end in the
native engine, eager and rendezvous."""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from conftest import one_error, run_cli
from test_program_workloads import ctx_for

from federation.errors import ConfigError
from federation.pipeline.load import load_experiment
from federation.pipeline.point import prepare
from federation.pipeline.summary import summarize
from federation.plugins.workloads.collective import Collective
from federation.plugins.workloads.programs import Allreduce
from federation.programs.assembler import ProgramAssembler
from federation.programs.checks import check_programs
from federation.programs.collectives import ALGORITHMS, collective
from federation.programs.model import COMPUTE, SEND

MACHINE = {
    "topology": {"kind": "dragonfly", "p": 2, "a": 4, "h": 2},
    "links": {"terminal": {"bandwidth": "8GB/s", "latency": "10ns"},
              "local": {"bandwidth": "8GB/s", "latency": "30ns"},
              "global": {"bandwidth": "8GB/s", "latency": "100ns"}},
    "router": {"delay": "20ns", "vcs": 2},
    "packet_size": 512,
}  # 9 groups x 4 routers x 2 nodes = 72 nodes


def make(n_nodes: int = 64, **params):  # noqa: ANN003, ANN201
    return Collective(Collective.Params(**params)).programs(ctx_for(n_nodes))


def test_group_size_makes_row_communicators():
    p = make(24, op="allreduce", algorithm="ring", size=600, group_size=6, iterations=2,
             compute=1e-6)
    sends = p.op_kind == SEND
    assert ((p.op_rank[sends] // 6) == (p.op_peer[sends] // 6)).all()  # within a row
    assert int(sends.sum()) == 2 * 4 * 2 * 6 * 5  # iterations x rows x ring messages
    assert int((p.op_kind == COMPUTE).sum()) == 2 * 24
    check_programs(p, 24)
    assert p.meta["algorithm"] == "ring" and p.meta["group_size"] == 6


def test_auto_is_resolved_and_recorded():
    assert make(64, op="alltoall", size=64).meta["algorithm"] == "bruck"
    assert make(64, op="alltoall", size=4096).meta["algorithm"] == "scattered"
    assert make(12, op="allgather", size=8).meta["algorithm"] == "bruck"


def test_alltoallv_sizes_are_seeded_draws():
    a = make(8, op="alltoallv", size=100, size_max=200)
    b = make(8, op="alltoallv", size=100, size_max=200)
    assert np.array_equal(a.op_bytes, b.op_bytes)
    sent = a.op_bytes[a.op_kind == SEND]
    assert sent.min() >= 100 and sent.max() <= 200 and len(set(sent.tolist())) > 5


def test_alltoallv_draws_whole_elements_each_count_alike():
    """Sizes 8 .. 24 B in 8-byte elements: 1, 2 or 3 elements, each a third of the pairs (a
    byte drawn and cut down to elements gave 3 elements 1/17 of the pairs, 1 and 2 8/17)."""
    p = make(64, op="alltoallv", size=8, size_max=24, datatype_size=8, algorithm="linear")
    sent = p.op_bytes[p.op_kind == SEND]
    values, counts = np.unique(sent, return_counts=True)
    assert values.tolist() == [8, 16, 24]
    share = counts / counts.sum()
    assert np.all(np.abs(share - 1 / 3) < 0.03)  # 4,032 draws: 0.03 is 4 standard deviations


@pytest.mark.parametrize("params,path,words", [
    ({"op": "allgather", "algorithm": "recursive_doubling", "ranks": 12},
     "workload.algorithm", "power-of-two number of ranks, got 12"),
    ({"op": "allreduce", "algorithm": "rabenseifner", "size": 8, "ranks": 16},
     "workload.algorithm", "holds 8 element(s)"),
    ({"op": "allreduce", "ranks": 12, "group_size": 5}, "workload.group_size",
     "does not divide"),
    ({"op": "bcast", "ranks": 8, "group_size": 4, "root": 4}, "workload.root", "position"),
    ({"op": "allreduce", "ranks": 65}, "workload.ranks", "this machine has 64"),
    ({"op": "allreduce", "size": 12, "datatype_size": 8}, "workload.size", "8-byte"),
    ({"op": "alltoall", "ranks": 64, "size": "1GiB"}, "workload.size", "largest message"),
    ({"op": "alltoall", "ranks": 64, "size": "1MiB", "iterations": 100000},
     "workload.iterations", "operations"),
])
def test_refusals_name_the_field(params, path, words):
    with pytest.raises(ConfigError) as e:
        make(64, **params)
    assert e.value.path == path and words in str(e.value)


@pytest.mark.parametrize("params,words", [
    ({"op": "allreduce", "algorithm": "butterfly"}, "no algorithm 'butterfly'"),
    ({"op": "gather", "algorithm": "ring"}, "no algorithm 'ring'"),
    ({"op": "allreduce", "size_max": 100}, "size_max is for alltoallv"),
    ({"op": "scan"}, "Input should be"),
    # the library's 0-byte collective sends nothing; the workload's size is at least 1 B
    ({"op": "allreduce", "size": "0B"}, "at least 1"),
])
def test_schema_refusals(params, words):
    with pytest.raises(ValueError, match=words):
        Collective.Params(**params)


def test_allreduce_workload_takes_an_algorithm():
    ring = Allreduce(Allreduce.Params(ranks=8, size=800, algorithm="ring")).programs(
        ctx_for(8))
    assert int((ring.op_kind == SEND).sum()) == 2 * 8 * 7 and ring.meta["algorithm"] == "ring"
    auto = Allreduce(Allreduce.Params(ranks=8, size=8, algorithm="auto")).programs(ctx_for(8))
    default = Allreduce(Allreduce.Params(ranks=8, size=8)).programs(ctx_for(8))
    assert np.array_equal(auto.op_peer, default.op_peer) and "algorithm" not in default.meta
    with pytest.raises(ValueError, match="no algorithm 'tree'"):
        Allreduce.Params(algorithm="tree")
    with pytest.raises(ConfigError, match="holds 8 element"):
        Allreduce(Allreduce.Params(ranks=16, size=8, algorithm="rabenseifner")).programs(
            ctx_for(16))


def write(tmp_path, workload: dict, nic: dict | None = None) -> str:  # noqa: ANN001
    m = dict(MACHINE, **({"nic": nic} if nic else {}))
    doc = {"schema_version": 1, "name": "c", "machine": m, "routing": {"algorithm": "minimal"},
           "workload": workload, "seed": 3}
    path = tmp_path / "e.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def run(tmp_path, workload: dict, nic: dict | None = None):  # noqa: ANN001
    point = load_experiment(write(tmp_path, workload, nic)).points[0]
    prep = prepare(point)
    raw = point.engine.run(prep.job)
    summary, _, _ = summarize(prep, raw)
    return summary


@pytest.mark.parametrize("eager", ["64KiB", "1B"])
def test_every_collective_runs_to_its_end_in_the_engine(tmp_path, eager):
    """Each algorithm of each collective on 12 ranks (not a power of two; 8 where one is
    needed), with every send eager, then every send a rendezvous: the engine finishes each
    program (no deadlock, every receive met)."""
    for op, algs in ALGORITHMS.items():
        for alg in algs:
            n = 8 if alg in ("recursive_doubling", "scatter_doubling_allgather") and \
                op in ("allgather", "bcast") else 12
            wl = {"kind": "collective", "op": op, "algorithm": alg, "ranks": n,
                  "size": "24KiB", "root": 5, "iterations": 2}
            if op == "alltoallv":
                wl["size_max"] = "30KiB"
            s = run(tmp_path, wl, {"eager_threshold": eager})
            assert s.programs.ranks == n, (op, alg)
            assert s.programs.completion_ns > 0, (op, alg)


def test_an_experiment_file_loads_and_builds(tmp_path):
    point = load_experiment(write(tmp_path, {"kind": "collective", "op": "bcast", "size": "256KiB",
                                             "ranks": 16})).points[0]
    assert point.workload.name == "collective"
    p = point.workload.programs(ctx_for(72))
    assert p.meta["algorithm"] == "scatter_doubling_allgather"
    assert point.workload.params.model_dump()["op"] == "bcast"


def test_sub_communicators_do_not_cross():
    asm = ProgramAssembler(12)
    grid = np.arange(12).reshape(3, 4)
    t = collective(asm, "alltoall", grid, 16, algorithm="pairwise")
    collective(asm, "allgather", grid.T, 16, algorithm="ring", tag=t)
    p = asm.build()
    check_programs(p, 12)


def test_a_power_of_two_algorithm_on_twelve_ranks_is_one_message(tmp_path):
    from conftest import one_error, run_cli

    e = write(tmp_path, {"kind": "collective", "op": "allgather", "ranks": 12,
                         "algorithm": "recursive_doubling"})
    line = one_error(run_cli("validate", e, cwd=tmp_path))
    assert "e.yaml" in line and "workload.algorithm" in line
    assert "needs a power-of-two number of ranks, got 12" in line


@pytest.mark.parametrize(("workload", "line"), [
    ({"op": "reduce", "algorithm": "nonexistent"},
     "workload.algorithm: reduce has no algorithm 'nonexistent' (one of auto, binomial, "
     "rabenseifner, binary_tree)"),
    ({"op": "allreduce", "size_max": 100},
     "workload.size_max: size_max is for alltoallv only, and at least size"),
])
def test_a_bad_algorithm_names_its_field(tmp_path, workload, line):
    """An unknown algorithm blamed ``workload`` (a model validator's place); it names
    ``workload.algorithm`` and the op's algorithms, and ``size_max`` its own field."""
    path = write(tmp_path, {"kind": "collective", "ranks": 6, "size": 100, **workload})
    assert one_error(run_cli("validate", path, cwd=tmp_path)) == f"error: {path}: {line}"
