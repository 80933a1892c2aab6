"""Per-message routing modes (issue 23 item 3): a message's mode reaches its packets
(``pkt_mode``), by precedence send > collective > job > experiment > the routing's own; names
the routing lacks are refused before the run, naming the field and the routing's modes.

``mode_probe`` (tests/mode_probe.py) is a minimal routing with modes ALPHA, BETA, GAMMA that
counts the packets each NIC sends by the mode they carry.
"""

from __future__ import annotations

import textwrap

import mode_probe
import numpy as np
import pytest
from conftest import one_error, run_cli, simulate

from federation.errors import ConfigError
from federation.programs.builder import ProgramBuilder, concatenate

NONE, ALPHA, BETA, GAMMA = 0, 1, 2, 3  # columns of the probe's counts (mode + 1)
TORUS = {"topology": {"kind": "torus", "dims": [4], "nodes_per_router": 1},
         "router": {"vcs": 2}}


@pytest.fixture(autouse=True)
def probe():
    from federation.plugin.registry import get_plugins

    plugins = get_plugins()
    if "mode_probe" not in plugins.routings.items:
        plugins.add(mode_probe, "mode_probe")
    return plugins


def doc(**extra):
    return {"machine": TORUS, "routing": {"algorithm": "mode_probe"},
            "workload": {"kind": "pingpong", "sizes": [8, 5000], "iterations": 3,
                         "nodes": [0, 2]}, **extra}


def seen(prep) -> np.ndarray:
    return prep.job.program.tables[1]


def test_the_experiments_mode_reaches_every_packet(tmp_path):
    prep, raw, *_ = simulate(tmp_path, doc(routing_mode="BETA"))
    s = seen(prep)
    n = prep.job.programs.n_packets
    assert s[0, BETA] + s[2, BETA] == n == s.sum()
    assert s[0, BETA] == s[2, BETA] > 0  # both ranks' sends


def test_without_a_mode_packets_carry_the_routings_own(tmp_path):
    prep, *_ = simulate(tmp_path, doc())
    assert seen(prep)[:, NONE].sum() == prep.job.programs.n_packets == seen(prep).sum()


def collective_doc(op: str, **extra):
    return {"machine": TORUS, "routing": {"algorithm": "mode_probe"},
            "workload": {"kind": "collective", "op": op, "size": 64}, **extra}


def test_collective_modes_come_before_the_experiments(tmp_path):
    """MPICH_GNI_A2A_ROUTING_MODE beside MPICH_GNI_ROUTING_MODE: alltoall takes its own."""
    prep, *_ = simulate(tmp_path, collective_doc(
        "alltoall", routing_mode="BETA", collective_modes={"alltoall": "GAMMA"}))
    s = seen(prep)
    assert s[:, GAMMA].sum() == prep.job.programs.n_packets == s.sum() > 0
    prep, *_ = simulate(tmp_path, collective_doc("allreduce", routing_mode="BETA"))
    s = seen(prep)
    assert s[:, BETA].sum() == prep.job.programs.n_packets == s.sum() > 0
    # an alltoall mode beside an allreduce would mark nothing: refused (test_models_leftovers)
    err = refusal(tmp_path, collective_doc("allreduce", routing_mode="BETA",
                                           collective_modes={"alltoall": "GAMMA"}))
    assert err.path == "collective_modes.alltoall"
    d = collective_doc("allreduce", collective_modes={"allreduce": "ALPHA"})
    d["workload"] = {"kind": "allreduce", "size": 64}  # the allreduce workload is one too
    prep, *_ = simulate(tmp_path, d)
    s = seen(prep)
    assert s[:, ALPHA].sum() == prep.job.programs.n_packets == s.sum() > 0


def test_a_jobs_mode_comes_before_the_experiments(tmp_path):
    pp = {"kind": "pingpong", "sizes": [8], "iterations": 2}
    d = {"machine": TORUS, "routing": {"algorithm": "mode_probe"}, "routing_mode": "BETA",
         "jobs": [{"name": "a", "workload": pp, "placement": {"kind": "list", "nodes": [0, 2]},
                   "routing_mode": "ALPHA"},
                  {"name": "b", "workload": pp, "placement": {"kind": "list", "nodes": [1, 3]}}]}
    prep, *_ = simulate(tmp_path, d)
    s = seen(prep)
    assert s[[0, 2], ALPHA].tolist() == [2, 2] and s[[1, 3], BETA].tolist() == [2, 2]
    assert s.sum() == 8


def test_a_sends_own_mode_comes_first():
    """``send(mode=)`` is the message's mode; the joined programs keep each part's names."""
    from federation.engine.program_arrays import ProgramFigures, build_traffic

    b = ProgramBuilder(2)
    b.rank(0).send(1, 8, mode="GAMMA")
    b.rank(0).send(1, 8)
    b.rank(1).recv(0, 8)
    b.rank(1).recv(0, 8)
    p = b.build()
    assert p.mode_names == ["GAMMA"] and p.op_mode.tolist() == [0, -1, -1, -1]
    c = ProgramBuilder(2)
    c.rank(0).isend(1, 8, mode="ALPHA")
    c.rank(1).recv(0, 8)
    c.rank(0).waitall()
    both = concatenate([p, c.build()])
    assert both.send_modes()[:5] == ["GAMMA", None, None, None, "ALPHA"]
    fig = ProgramFigures(64, 1 << 20, 8, modes=("ALPHA", "BETA", "GAMMA"))
    t = build_traffic(p, 2, fig, np.zeros(1, dtype=np.int64))
    assert t.prog.msg_mode[:2].tolist() == [2, -1]
    with pytest.raises(ConfigError, match=r"rank 0 operation 0 \(send 8 B to rank 1 tag 0\): "
                                          r"routing mode 'GAMMA' is not a mode of the routing "
                                          r"\(its modes: A, B\)"):
        build_traffic(p, 2, ProgramFigures(64, 1 << 20, 8, modes=("A", "B")),
                      np.zeros(1, dtype=np.int64))


def test_op_mode_must_index_mode_names():
    p = ProgramBuilder(2)
    p.rank(0).send(1, 8, mode="A")
    p.rank(1).recv(0, 8)
    good = p.build()
    from dataclasses import replace

    with pytest.raises(ConfigError, match="an index of mode_names"):
        replace(good, op_mode=np.array([1, -1], dtype=np.int8))


# --------------------------------------------------------------------------- refusals


def refusal(tmp_path, d) -> ConfigError:
    import yaml

    from federation.pipeline.bounds import default_max_memory
    from federation.pipeline.load import load_experiment
    from federation.pipeline.point import preflight

    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(d))
    with pytest.raises(ConfigError) as info:
        preflight(load_experiment(path), default_max_memory())
    assert info.value.source and info.value.source.endswith("exp.yaml")
    return info.value


@pytest.mark.parametrize("extra, path, words", [
    ({"routing_mode": "FAST"}, "routing_mode",
     "routing mode 'FAST' is not a mode of routing 'mode_probe' (its modes: ALPHA, BETA, "
     "GAMMA)"),
    ({"collective_modes": {"alltoall": "SLOW"}}, "collective_modes.alltoall",
     "routing mode 'SLOW' is not a mode"),
    ({"collective_modes": {"allreduse": "ALPHA"}}, "collective_modes.allreduse",
     "'allreduse' is not a collective (one of allgather, allreduce"),
    ({"routing_controller": {"kind": "by_size", "small": "TINY"}}, "routing_controller",
     "routing controller 'by_size' with routing 'mode_probe': small 'TINY' is not a mode of "
     "the routing (its modes: ALPHA, BETA, GAMMA)"),
    ({"routing_controller": {"kind": "app_aware"}}, "routing_controller",
     "adaptive 'ADAPTIVE_0' is not a mode of the routing"),
    ({"routing_controller": {"kind": "oracle"}}, "routing_controller.kind",
     "unknown routing controller 'oracle' (installed: app_aware, by_size"),
    ({"routing_controller": {"kind": "by_size", "threshold": -1}},
     "routing_controller.threshold", ""),
])
def test_bad_modes_are_refused_before_the_run(tmp_path, extra, path, words):
    err = refusal(tmp_path, doc(**extra))
    assert err.path == path
    assert words in err.message


def test_a_jobs_bad_mode_names_the_job(tmp_path):
    pp = {"kind": "pingpong", "sizes": [8]}
    d = {"machine": TORUS, "routing": {"algorithm": "mode_probe"},
         "jobs": [{"name": "a", "workload": pp, "placement": {"kind": "list", "nodes": [0, 2]},
                   "routing_mode": "FAST"}]}
    err = refusal(tmp_path, d)
    assert err.path == "jobs[0].routing_mode"


def jobs_doc(a_workload: dict, a_modes: dict) -> dict:
    """Job ``a`` (``a_workload``, its own ``collective_modes``) beside job ``b``, an
    alltoall."""
    b = {"kind": "collective", "op": "alltoall", "size": 64}
    return {"machine": TORUS, "routing": {"algorithm": "mode_probe"},
            "jobs": [{"name": "a", "workload": a_workload, "collective_modes": a_modes,
                      "placement": {"kind": "list", "nodes": [0, 2]}},
                     {"name": "b", "workload": b,
                      "placement": {"kind": "list", "nodes": [1, 3]}}]}


#: what a refusal of collective_modes where no workload takes them adds
RULE = ("; collective_modes apply only to workloads of kind collective (to its op) and "
        "allreduce: a skeleton's or a program file's collectives are not told apart by "
        "collective and take routing_mode")


@pytest.mark.parametrize("workload, runs, rule", [
    ({"kind": "pingpong", "sizes": [8]}, "its workload 'pingpong' takes no collective_modes",
     RULE),
    ({"kind": "collective", "op": "allreduce", "size": 64}, "its workload 'collective' runs "
     "allreduce, not alltoall", ""),
])
def test_a_jobs_collective_mode_its_workload_lacks_is_refused(tmp_path, workload, runs, rule):
    """Job a's ``collective_modes: {alltoall: GAMMA}`` marked no message of job a (its
    workload has no alltoall; job b's alltoall is another job's) and the run went on as if
    it were not there."""
    err = refusal(tmp_path, jobs_doc(workload, {"alltoall": "GAMMA"}))
    assert err.path == "jobs[0].collective_modes.alltoall"
    assert err.message == f"job 'a': {runs}: the mode would apply to no message{rule}"


def test_cli_refuses_a_jobs_collective_mode_its_workload_lacks(tmp_path):
    """As a user sees it (aries: the CLI's child has no mode_probe): exit 2, one line."""
    import yaml

    d = jobs_doc({"kind": "pingpong", "sizes": [8]}, {"alltoall": "ADAPTIVE_1"})
    d["machine"] = {"topology": {"kind": "dragonfly", "p": 2, "a": 4, "h": 2},
                    "router": {"vcs": 4}}
    d["routing"] = {"algorithm": "aries"}
    (tmp_path / "e.yaml").write_text(yaml.safe_dump(d))
    want = ("error: e.yaml: jobs[0].collective_modes.alltoall: job 'a': its workload "
            "'pingpong' takes no collective_modes: the mode would apply to no message" + RULE)
    assert one_error(run_cli("validate", "e.yaml", cwd=tmp_path)) == want
    assert one_error(run_cli("run", "e.yaml", "--out", "o", cwd=tmp_path)) == want
    assert not (tmp_path / "o").exists()


def test_a_jobs_collective_mode_applies_to_its_collective(tmp_path):
    """The same mode on a job that runs the collective: its packets carry it, the other
    job's do not; and the experiment's ``collective_modes`` stay a default for every job,
    not refused for the jobs without that collective (job a's pingpong here)."""
    d = jobs_doc({"kind": "collective", "op": "alltoall", "size": 64}, {"alltoall": "GAMMA"})
    prep, *_ = simulate(tmp_path, d)
    s = seen(prep)
    assert s[[0, 2], GAMMA].sum() == s[[0, 2]].sum() > 0
    assert s[[1, 3], NONE].sum() == s[[1, 3]].sum() > 0
    d = jobs_doc({"kind": "pingpong", "sizes": [8]}, {})
    del d["jobs"][0]["collective_modes"]
    d["collective_modes"] = {"alltoall": "BETA"}
    prep, *_ = simulate(tmp_path, d)
    s = seen(prep)
    assert s[[0, 2], NONE].sum() == s[[0, 2]].sum() > 0
    assert s[[1, 3], BETA].sum() == s[[1, 3]].sum() > 0


def test_modes_without_rank_programs_are_refused(tmp_path):
    d = doc(routing_mode="ALPHA")
    d["workload"] = {"kind": "synthetic", "load": 0.1}
    err = refusal(tmp_path, d)
    assert err.path == "routing_mode"
    assert "apply to rank-program messages" in err.message


def test_cli_refuses_a_mode_of_a_routing_without_modes(tmp_path):
    (tmp_path / "e.yaml").write_text(textwrap.dedent("""
        machine:
          topology: {kind: torus, dims: [4], nodes_per_router: 1}
          router: {vcs: 2}
        routing: {algorithm: minimal}
        workload: {kind: pingpong, sizes: [8B]}
        routing_mode: ADAPTIVE_3
        """))
    line = one_error(run_cli("validate", str(tmp_path / "e.yaml"), cwd=tmp_path))
    assert "e.yaml" in line and "routing_mode" in line
    assert "routing mode 'ADAPTIVE_3' is not a mode of routing 'minimal' (it has no modes" \
        in line


def test_aries_lists_its_modes():
    from federation.plugins.routings.aries import MODES, Aries

    assert Aries(Aries.Params()).modes() == MODES
    assert MODES[:4] == ["ADAPTIVE_0", "ADAPTIVE_1", "ADAPTIVE_2", "ADAPTIVE_3"]
