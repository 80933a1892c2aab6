"""Traffic classes (``machine.qos``) on the other engines (issue 22, item 5).

SST merlin has no faithful twin of our QoS policies with this adapter's endpoints (see
``adapters/sst/qos.py`` and docs/sst.md, "QoS"): each policy is refused before anything runs,
open loop (merlin.offered_load) and closed loop (ember), naming the machine file, ``qos.kind``,
the policy and why.  SimGrid keeps refusing every policy the same way.  No SST is needed.

The QoS policies themselves (``strict_priority``, ``bandwidth_caps``,
``weighted_round_robin``, with the syntax of issue 22) are the qos-engine's; where they are not
installed, stand-ins of the same names and parameters are registered here.
"""

from __future__ import annotations

import types
from pathlib import Path

import pytest
import yaml

from federation import Params, QosPolicy, hookimpl
from federation.errors import ConfigError
from federation.plugin.registry import FederationPlugins


class _Class(Params):
    name: str
    cap: float | None = None
    weight: float | None = None


def _stand_in(kind: str) -> type[QosPolicy]:
    class StandIn(QosPolicy):
        name = kind

        class Params(Params):
            classes: list[_Class]
            window: str | None = None
            window_kind: str | None = None
            at: list[str] | None = None

        def class_names(self) -> list[str]:
            return [c.name for c in self.params.classes]

    return StandIn


KINDS = ("strict_priority", "bandwidth_caps", "weighted_round_robin")


def plugins() -> FederationPlugins:
    pm = FederationPlugins(load_entrypoints=False)
    missing = [k for k in KINDS if k not in pm.qos.items]
    if missing:

        @hookimpl
        def federation_register_qos(register) -> None:  # noqa: ANN001
            for k in missing:
                register(_stand_in(k))

        module = types.ModuleType("qos_stand_ins")
        module.federation_register_qos = federation_register_qos
        pm.add(module, "qos_stand_ins", "tests")
    return pm


QOS = {
    "strict_priority": {"kind": "strict_priority", "classes": [{"name": "high"},
                                                               {"name": "low"}]},
    "bandwidth_caps": {"kind": "bandwidth_caps", "window": "5us",
                       "classes": [{"name": "high", "cap": 0.7}, {"name": "low", "cap": 0.3}]},
    "weighted_round_robin": {"kind": "weighted_round_robin",
                             "classes": [{"name": "a", "weight": 3}, {"name": "b", "weight": 1}]},
}

WHY = {
    "strict_priority": "cannot put a class's packets on its VN: merlin.offered_load sends on "
                       "VN 0 only",
    "bandwidth_caps": "has a fixed window of 100 flit cycles and serves the VNs within budget "
                      "least-recently-used first, not by priority",
    "weighted_round_robin": "not its packet-by-packet order",
}


def point(tmp_path: Path, kind: str, engine: str, workload: dict):
    from federation.pipeline.load import load_experiment

    machine = {"topology": {"kind": "dragonfly", "p": 2, "a": 4, "h": 2},
               "router": {"vcs": 4}, "qos": QOS[kind]}  # 2 classes x minimal's 2 VCs
    (tmp_path / "m.yaml").write_text(yaml.safe_dump(machine))
    doc = {"machine": "m.yaml", "engine": {"kind": engine}, "workload": workload,
           "stop": {"warmup": "1us", "measure": "3us"}}
    (tmp_path / "e.yaml").write_text(yaml.safe_dump(doc))
    return load_experiment(tmp_path / "e.yaml", plugins=plugins()).points[0]


OPEN = {"kind": "synthetic", "load": 0.3}
CLOSED = {"kind": "pingpong", "sizes": ["64KiB"], "iterations": 1, "nodes": [0, 71]}


@pytest.mark.parametrize("workload", [OPEN, CLOSED], ids=["offered_load", "ember"])
@pytest.mark.parametrize("kind", KINDS)
def test_sst_refuses_each_policy_naming_qos_and_why(tmp_path, kind, workload):
    from federation.adapters.sst import build_config
    from federation.pipeline.build import build_network

    p = point(tmp_path, kind, "sst", workload)
    with pytest.raises(ConfigError) as e:
        build_config(p, build_network(p), p.engine.params)
    msg = str(e.value)
    assert msg.startswith(f"{tmp_path / 'm.yaml'}: qos.kind: engine sst: QoS policy "
                          f"{kind!r} (2 classes) is not mapped to merlin: "), msg
    assert WHY[kind] in msg, msg
    assert msg.endswith("use qos: none with engine sst (docs/sst.md, QoS)"), msg


def test_sst_maps_no_qos_to_one_vn(tmp_path):
    from federation.adapters.sst import build_config
    from federation.pipeline.build import build_network
    from federation.pipeline.load import load_experiment

    doc = {"machine": {"topology": {"kind": "dragonfly", "p": 2, "a": 4, "h": 2},
                       "qos": {"kind": "none"}},
           "engine": {"kind": "sst"}, "workload": OPEN,
           "stop": {"warmup": "1us", "measure": "3us"}}
    (tmp_path / "e.yaml").write_text(yaml.safe_dump(doc))
    p = load_experiment(tmp_path / "e.yaml").points[0]
    text = build_config(p, build_network(p), p.engine.params).text
    assert "'num_vns': 1" in text and "qos" not in text.split("ROUTER_PARAMS", 1)[1]


def test_simgrid_refuses_qos_naming_the_file_and_field(tmp_path):
    from federation.pipeline.build import build_network

    p = point(tmp_path, "strict_priority", "simgrid", {
        "kind": "messages", "messages": [{"at": "0ns", "src": 0, "dst": 9, "size": 64}]})
    with pytest.raises(ConfigError) as e:
        p.engine.check(p, types.SimpleNamespace(network=build_network(p)))
    assert str(e.value) == (f"{tmp_path / 'm.yaml'}: qos.kind: the simgrid engine has no QoS "
                            "model; qos 'strict_priority' cannot be represented (use qos: none, "
                            "or the native engine)")
