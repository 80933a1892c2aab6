"""Output-port arbitration and per-class byte counters.

A QoS policy of the test's own (class 0 for small messages, 1 for large ones) and a hotspot:
32 nodes each send two single-packet messages to node 0 at the same time, half of them small
and half large, so the ports towards node 0 hold both classes at once.  With
``strict_priority`` small packets overtake the large ones waiting in other input queues; with
``oldest_first`` they do not.  The
per-class byte counters add up to each port's bytes.
"""

from __future__ import annotations

import types

import numpy as np
import pytest
import yaml

from federation import Params, QosPolicy, hookimpl
from federation.pipeline.load import load_experiment
from federation.pipeline.point import prepare
from federation.pipeline.summary import summarize
from federation.plugin.registry import FederationPlugins


class BySize(QosPolicy):
    """Class 0 up to 256 B, class 1 above."""

    name = "by_size"

    class Params(Params):
        pass

    def traffic_class(self, messages):  # noqa: ANN001
        return (messages.size > 256).astype(np.int16)

    def n_classes(self) -> int:
        return 2


@hookimpl
def federation_register_qos(register) -> None:  # noqa: ANN001
    register(BySize)


def plugins() -> FederationPlugins:
    module = types.ModuleType("qos_by_size")
    module.federation_register_qos = federation_register_qos
    pm = FederationPlugins(load_entrypoints=False)
    pm.add(module, "qos_by_size", "tests")
    return pm


def hotspot(tmp_path, arbiter: str):
    # alternate sources send two large or two small messages: within one input queue packets
    # stay in order whatever the arbiter, so the classes must come from different queues
    msgs = [{"at": "0ns", "src": s, "dst": 0, "size": 512 if k % 2 else 200}
            for k, s in enumerate(range(8, 72, 2)) for _ in range(2)]
    doc = {"machine": {"topology": {"kind": "dragonfly", "p": 2, "a": 4, "h": 2},
                       "qos": {"kind": "by_size"},  # 2 classes x minimal's 2 VCs
                       "router": {"arbiter": {"kind": arbiter}, "vcs": 4}},
           "routing": {"algorithm": "minimal"},
           "workload": {"kind": "messages", "messages": msgs},
           "stop": {"warmup": "0ns", "measure": "1us"}}
    path = tmp_path / f"{arbiter}.yaml"
    path.write_text(yaml.safe_dump(doc))
    point = load_experiment(path, plugins=plugins()).points[0]
    prep = prepare(point)
    raw = point.engine.run(prep.job)
    _, packets, ports = summarize(prep, raw)
    return prep, raw, packets, ports


@pytest.mark.parametrize("arbiter", ["oldest_first", "round_robin", "strict_priority"])
def test_class_bytes_add_up_to_port_bytes(tmp_path, arbiter):
    prep, raw, packets, ports = hotspot(tmp_path, arbiter)
    assert (raw.pkt_deliver >= 0).all()
    assert (ports["bytes_class_0"] + ports["bytes_class_1"] == ports["bytes"]).all()
    to_node0 = int(prep.network.ports.node_port[0])
    assert ports["bytes_class_0"][to_node0] == 32 * 200
    assert ports["bytes_class_1"][to_node0] == 32 * 512


def test_strict_priority_lets_the_small_class_overtake(tmp_path):
    lat = {}
    for arbiter in ("oldest_first", "strict_priority"):
        _, _, p, _ = hotspot(tmp_path, arbiter)
        t = p["delivered_ps"] - p["created_ps"]
        small = p["size"] == 200
        lat[arbiter] = (t[small].mean(), t[~small].mean())
    small_sp, large_sp = lat["strict_priority"]
    small_of, _ = lat["oldest_first"]
    assert small_sp < large_sp  # served first wherever both wait
    assert small_sp < 0.8 * small_of  # and much sooner than when served by age
