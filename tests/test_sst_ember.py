"""SST ember configurations for the closed-loop workloads with an ember twin.

The generated ``.py`` runs under the fake ``sst`` module of ``test_sst_adapter`` (which records
components, parameters and links); every motif parameter is compared with figures written out
by hand from the workload, every node's placement with the workload's rank placement, and
every firefly host-side delay with the zero (or the mirrored NIC figure) the header states.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from test_sst_adapter import MACHINES, execute, point_for

from federation.errors import ConfigError

DRAGONFLY = "quickstart-dragonfly.yaml"  # 72 nodes
TORUS = "manynode-torus-5x5x4.yaml"  # 2,400 nodes
FATTREE = {"topology": {"kind": "fattree", "k": 4, "n": 3}}  # 64 nodes
MACHINES_ = [(DRAGONFLY, 72), (TORUS, 2400), (FATTREE, 64)]

#: every firefly delay the header says is zeroed, by (component type, parameter)
ZEROED = {
    "firefly.nic": {"nic2host_lat": "0ns", "rxMatchDelay_ns": 0, "txDelay_ns": 0,
                    "hostReadDelay_ns": 0, "shmemRxDelay_ns": 0, "packetOverhead": 0},
    "firefly.hades": {"functionSM.defaultEnterLatency": 0,
                      "functionSM.defaultReturnLatency": 0},
    "firefly.VirtNic": {"latPerSend_ns": 0},
    "firefly.CtrlMsgProto": {
        "matchDelay_ns": 0, "sendAckDelay_ns": 0, "regRegionBaseDelay_ns": 0,
        "regRegionPerPageDelay_ns": 0, "sendStateDelay_ps": 0, "recvStateDelay_ps": 0,
        "waitallStateDelay_ps": 0, "waitanyStateDelay_ps": 0,
        **{f"{m}Params.range.0": "0-:0ns" for m in (
            "txSetupMod", "rxSetupMod", "rxPostMod", "txFiniMod", "rxFiniMod",
            "txMemcpyMod", "rxMemcpyMod")},
        "txMemcpyModParams.op": "Mult", "rxMemcpyModParams.op": "Mult"},
}


def generate(tmp_path: Path, machine: str | dict, workload: dict, **exp: object):
    from federation.adapters.sst import build_config
    from federation.pipeline.build import build_network

    point = point_for(tmp_path, machine, workload=workload, **exp)
    return build_config(point, build_network(point), point.engine.params)


def engines(fake) -> dict[int, object]:
    """node -> its ember engine."""
    return {int(c.name.removeprefix("nic").split("core")[0]): c
            for c in fake.of_type("ember.EmberEngine")}


def after_init(motifs: dict) -> dict:
    """``motifs`` renumbered behind ember's ``InitMotif`` (motif 0), as every rank runs it."""
    out = {"motif0.name": "ember.InitMotif", "motif_count": motifs["motif_count"] + 1}
    for k, v in motifs.items():
        if k != "motif_count":
            head, _, rest = k.partition(".")
            out[f"motif{int(head[5:]) + 1}.{rest}"] = v
    return out


def check_endpoints(fake, n_nodes: int, rank_node: list[int], motifs: dict,
                    eager: int = 65536) -> None:
    """One firefly endpoint per node, placed as ``rank_node``, with the delays of ZEROED."""
    eps = engines(fake)
    assert sorted(eps) == list(range(n_nodes))
    rank_of = {node: r for r, node in enumerate(rank_node)}
    for node, ep in eps.items():
        os_ = ep.subs["OS"]
        assert os_.type == "firefly.hades"
        assert ep.params["api.0.module"] == "firefly.hadesMP"
        if node in rank_of:
            assert ep.params["jobId"] == 0
            assert os_.params["netMapId"] == rank_of[node]
            assert os_.params["netMapSize"] == len(rank_node)
            assert {k: v for k, v in ep.params.items()
                    if k.startswith("motif") and k != "motifLog"} == after_init(motifs)
            assert ep.params["motifLog"] == "motifs"  # read back by ember_output
        else:
            assert ep.params["jobId"] == -1 and os_.params["netMapId"] == -1
            assert ep.params["motif0.name"] == "ember.NullMotif"
            assert "motifLog" not in ep.params  # idle nodes log nothing
        assert os_.params["netId"] == node
        nic = fake.components[f"nic{node}"]
        assert nic.type == "firefly.nic" and nic.params["nid"] == node
        assert nic.subs["rtrLink"].type == "merlin.linkcontrol"
        assert fake.peer(f"nic{node}:rtrLink", "rtr_port")[0].startswith("rtr")
        virt, proto = os_.subs["virtNic"], os_.subs["proto"]
        assert fake.peer(virt.name, "nic")[:2] == (f"nic{node}", "core0")
        assert fake.peer(proto.subs["process"].name, "loop")[:2] == (f"loopBack{node}",
                                                                     "nic0core0")
        for comp in (nic, os_, virt, proto):
            for k, v in ZEROED[comp.type].items():
                assert comp.params[k] == v, (comp.name, k)
        assert proto.params["shortMsgLength"] == eager
        assert proto.subs["process"].params == proto.params
    assert not fake.of_type("merlin.offered_load")


@pytest.mark.parametrize(("machine", "n"), MACHINES_)
def test_pingpong(machine, n: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nodes = [3, n - 1]
    wl = {"kind": "pingpong", "sizes": ["8B", "64KiB", "1MiB"], "iterations": 7,
          "nodes": nodes}
    cfg = generate(tmp_path, machine, wl)
    fake = execute(cfg.text, monkeypatch)
    motifs = {"motif_count": 3}
    for k, size in enumerate((8, 65536, 1 << 20)):
        motifs.update({f"motif{k}.name": "ember.PingPongMotif",
                       f"motif{k}.arg.messageSize": size, f"motif{k}.arg.iterations": 7,
                       f"motif{k}.arg.rank2": 1, f"motif{k}.arg.blockingSend": 1,
                       f"motif{k}.arg.blockingRecv": 1, f"motif{k}.arg.waitall": 0})
    check_endpoints(fake, n, nodes, motifs)
    # the same point gives the same bytes
    assert generate(tmp_path, machine, wl).text == cfg.text


@pytest.mark.parametrize(("machine", "n"), MACHINES_)
def test_halo3d(machine, n: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wl = {"kind": "halo3d", "nx": 20, "ny": 30, "nz": 40, "pex": 4, "pey": 2, "pez": 2,
          "iterations": 5, "computetime": "10us", "copytime": "3ns", "doreduce": 0,
          "fields_per_cell": 2, "datatype_width": 4}
    cfg = generate(tmp_path, machine, wl)
    fake = execute(cfg.text, monkeypatch)
    args = {"nx": 20, "ny": 30, "nz": 40, "pex": 4, "pey": 2, "pez": 2, "iterations": 5,
            "computetime": 10_000, "copytime": 3, "doreduce": 0, "fields_per_cell": 2,
            "datatype_width": 4, "peflops": 10_000_000_000, "flopspercell": 26}
    motifs = {"motif_count": 1, "motif0.name": "ember.Halo3DMotif",
              **{f"motif0.arg.{k}": v for k, v in args.items()}}
    check_endpoints(fake, n, list(range(16)), motifs)
    assert generate(tmp_path, machine, wl).text == cfg.text


def test_halo3d_grid_and_default_compute(tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Grid left to ember: written out as ember's own choice (12 ranks: 3 x 2 x 2); compute
    from the FLOPs: 10 x 10 x 10 cells x 26 FLOPs / 10 GFLOP/s = 2,600 ns."""
    wl = {"kind": "halo3d", "nx": 10, "ny": 10, "nz": 10, "ranks": 12, "doreduce": 0}
    fake = execute(generate(tmp_path, DRAGONFLY, wl).text, monkeypatch)
    ep = engines(fake)[0]
    assert [ep.params[f"motif1.arg.pe{d}"] for d in "xyz"] == [3, 2, 2]
    assert ep.params["motif1.arg.computetime"] == 2600
    assert sum(e.params["jobId"] == 0 for e in engines(fake).values()) == 12


def test_allreduce_one_rank(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wl = {"kind": "allreduce", "ranks": 1, "size": "64B", "iterations": 4, "compute": "2us"}
    fake = execute(generate(tmp_path, DRAGONFLY, wl).text, monkeypatch)
    motifs = {"motif_count": 1, "motif0.name": "ember.AllreduceMotif", "motif0.arg.count": 8,
              "motif0.arg.iterations": 4, "motif0.arg.compute": 2000}
    check_endpoints(fake, 72, [0], motifs)


def test_eager_threshold_mirrored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import yaml

    doc = yaml.safe_load((MACHINES / DRAGONFLY).read_text())
    doc.setdefault("nic", {})["eager_threshold"] = "12000B"
    for key in ("name",):
        doc.pop(key, None)
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump(doc))
    wl = {"kind": "pingpong", "sizes": ["8B"], "nodes": [0, 1]}
    cfg = generate(tmp_path, str(path), wl)
    fake = execute(cfg.text, monkeypatch)
    for ep in engines(fake).values():
        assert ep.subs["OS"].subs["proto"].params["shortMsgLength"] == 12000
    assert "shortMsgLength mirrors nic.eager_threshold (12000 B" in cfg.text


def refusal(tmp_path: Path, machine, workload: dict) -> str:
    with pytest.raises(ConfigError) as e:
        generate(tmp_path, machine, workload)
    return str(e.value)


@pytest.mark.parametrize(("workload", "field", "words"), [
    ({"kind": "allreduce", "ranks": 8}, "workload.kind", "binary tree"),
    ({"kind": "allreduce", "ranks": 1, "size": "12B"}, "workload.size", "doubles"),
    ({"kind": "allreduce", "ranks": 1, "compute": "1500ps"}, "workload.compute",
     "whole number of nanoseconds"),
    ({"kind": "halo3d", "nx": 2, "ny": 2, "nz": 2, "pex": 2, "pey": 2, "pez": 2},
     "workload.doreduce", "binary tree"),
    ({"kind": "halo3d", "nx": 2, "ny": 2, "nz": 2, "pex": 2, "pey": 2, "pez": 2,
      "doreduce": 0, "computetime": "1500ps"}, "workload.computetime", "nanoseconds"),
    ({"kind": "pingpong", "sizes": ["8B", "8GiB"]}, "workload.sizes[1]", "32-bit"),
    # ember's faces are uint32_t: 8 x 30000 x 30000 B = 7.2e9 was sent as 2,905,032,704 B
    ({"kind": "halo3d", "nx": 1, "ny": 30000, "nz": 30000, "pex": 2, "pey": 1, "pez": 1,
      "computetime": "1us", "doreduce": 0}, "workload.nz",
     "a x face of fields_per_cell x datatype_width x ny x nz = 7200000000 B does not fit "
     "ember's 32-bit message size"),
])
def test_workload_refusals(workload: dict, field: str, words: str, tmp_path: Path) -> None:
    msg = refusal(tmp_path, DRAGONFLY, workload)
    assert f"e.yaml: {field}: engine sst:" in msg and words in msg


def test_program_file_refused(tmp_path: Path) -> None:
    trace = Path(__file__).parent / "data" / "programs" / "hand.goal"
    msg = refusal(tmp_path, DRAGONFLY, {"kind": "program", "path": str(trace)})
    assert "e.yaml: workload.kind: engine sst:" in msg and "no ember motif twin" in msg


def test_background_beside_rank_programs_refused(tmp_path: Path) -> None:
    """A background beside rank programs was left out of the configuration without a word
    (ember ran the programs alone); it is refused, naming the field."""
    with pytest.raises(ConfigError) as e:
        generate(tmp_path, DRAGONFLY, {"kind": "pingpong"},
                 background={"kind": "synthetic", "load": 0.1})
    msg = str(e.value)
    assert "e.yaml: background: engine sst:" in msg and "without background traffic" in msg


def test_overhead_refused(tmp_path: Path) -> None:
    import yaml

    doc = yaml.safe_load((MACHINES / DRAGONFLY).read_text())
    doc.setdefault("nic", {})["send_overhead"] = "100ns"
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump(doc))
    msg = refusal(tmp_path, str(path), {"kind": "pingpong"})
    assert "m.yaml: nic.send_overhead: engine sst:" in msg


@pytest.mark.skipif(shutil.which("sst") is None, reason="sst is not on PATH")
def test_real_sst_pingpong(tmp_path: Path) -> None:
    cfg = generate(tmp_path, DRAGONFLY, {"kind": "pingpong", "sizes": ["8B"],
                                         "iterations": 2, "nodes": [0, 71]})
    (tmp_path / "config.py").write_text(cfg.text)
    done = subprocess.run(["sst", "config.py"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "PingPong: otherRank 1" in done.stdout


def test_halo3d_peflops_past_ember_s_uint64_is_not_written(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    """ember reads ``arg.peflops`` as uint64_t even where ``computetime`` (always written)
    decides: 1e20 was written whole, which would abort sst; ember's default stands in."""
    wl = {"kind": "halo3d", "nx": 8, "ny": 8, "nz": 8, "pex": 2, "pey": 1, "pez": 1,
          "peflops": 1e20, "doreduce": 0}
    ep = engines(execute(generate(tmp_path, DRAGONFLY, wl).text, monkeypatch))[0]
    assert "motif1.arg.peflops" not in ep.params
    assert ep.params["motif1.arg.computetime"] == 0  # 8**3 cells x 26 / 1e20 FLOP/s
