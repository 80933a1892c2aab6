"""What a workload or routing plugin hands over is checked before the compiled loop reads it.

The loop indexes node, group and size arrays without bounds checks, so an out-of-range value
from a plugin would silently read another node's state.  These plugins return such values; the
run must stop with one message naming the plugin and the first bad entry.
"""

from __future__ import annotations

import types

import numpy as np
import pytest
import yaml

from federation import Messages, Params, Workload, hookimpl
from federation.errors import ConfigError
from federation.pipeline.load import load_experiment
from federation.pipeline.point import prepare
from federation.plugin.registry import FederationPlugins
from federation.plugins.routings.valiant import Valiant

FAULTS = {
    "dst": (lambda m: m.__class__(m.time_ps, m.src, m.dst + 1000, m.size),
            "message 0 with destination node 1001; the machine has nodes 0 to 71"),
    "src": (lambda m: m.__class__(m.time_ps, m.src - 5, m.dst, m.size),
            "with source node -"),
    "size": (lambda m: m.__class__(m.time_ps, m.src, m.dst, m.size * 0),
             "of 0 bytes"),
    "order": (lambda m: m.__class__(m.time_ps[::-1].copy(), m.src, m.dst, m.size),
              "out of creation order"),
    "length": (lambda m: m.__class__(m.time_ps, m.src[:-1], m.dst, m.size),
               "arrays of different lengths"),
}


class Faulty(Workload):
    name = "faulty"

    class Params(Params):
        fault: str = "dst"

    def generate(self, ctx):  # noqa: ANN001
        m = Messages(np.arange(4, dtype=np.int64) * 1000, np.array([0, 1, 2, 3], np.int32),
                     np.array([1, 2, 3, 4], np.int32), np.full(4, 64, np.int64))
        return FAULTS[self.params.fault][0](m)


class BadVia(Valiant):
    name = "bad_via"

    def intermediates(self, tables, src_router, dst_router, rng):  # noqa: ANN001
        return np.full(src_router.shape[0], 99, dtype=np.int32)


@hookimpl
def federation_register_workloads(register) -> None:  # noqa: ANN001
    register(Faulty)


@hookimpl
def federation_register_routings(register) -> None:  # noqa: ANN001
    register(BadVia)


def point(tmp_path, workload: dict, routing: str | dict = "minimal"):
    module = types.ModuleType("faulty_plugins")
    module.federation_register_workloads = federation_register_workloads
    module.federation_register_routings = federation_register_routings
    pm = FederationPlugins(load_entrypoints=False)
    pm.add(module, "faulty", "tests")
    (tmp_path / "e.yaml").write_text(yaml.safe_dump({
        "machine": {"topology": {"kind": "dragonfly", "p": 2, "a": 4, "h": 2},
                    "router": {"vcs": 4}},
        "routing": routing if isinstance(routing, dict) else {"algorithm": routing},
        "workload": workload,
        "stop": {"warmup": "0ns", "measure": "1us"}}))
    return load_experiment(tmp_path / "e.yaml", plugins=pm).points[0]


@pytest.mark.parametrize("fault", list(FAULTS))
def test_bad_messages_are_refused_naming_the_workload(tmp_path, fault):
    p = point(tmp_path, {"kind": "faulty", "fault": fault})
    with pytest.raises(ConfigError, match="workload 'faulty' returned") as e:
        prepare(p)
    assert FAULTS[fault][1] in str(e.value)


def test_intermediates_outside_the_groups_are_refused_naming_the_routing(tmp_path):
    p = point(tmp_path, {"kind": "synthetic", "load": 0.3}, routing="bad_via")
    with pytest.raises(ConfigError, match="routing 'bad_via': intermediates gave packet 0 "
                       "intermediate 99, outside 0 to 8"):
        assert prepare(p).job.packets is None  # the engine side packetizes and checks


def test_valiant_through_routers_may_name_any_router(tmp_path):
    p = point(tmp_path, {"kind": "synthetic", "load": 0.3},
              routing={"algorithm": "valiant", "intermediate": "router"})
    prep = prepare(p)  # routers 0..35 pass, though there are only 9 groups
    via = prep.job.packets.via
    assert via.max() >= 9 and via.max() < 36
