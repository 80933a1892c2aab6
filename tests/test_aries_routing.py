"""The ``aries`` routing's modes on the shipped Aries XC machine under uniform traffic, and its
intra-group non-minimal paths.

Facts (digest aries-routing-noise.md §2): a higher bias on non-minimal paths makes minimal
paths more likely, so the fraction of packets sent non-minimally falls from ADAPTIVE_0 (no
bias) through ADAPTIVE_1 and ADAPTIVE_2 to ADAPTIVE_3 (high bias); MIN_HASH and IN_ORDER never
leave minimal paths; NMIN_HASH sends every packet between groups non-minimally (5 in 6 of
uniform traffic on 6 groups).  Inside a group Aries also has two minimal and two non-minimal
candidates: a non-minimal path goes through another router of the source's row or column
(one detour hop, then at most two minimal hops a VC level up: 3 hops at most).
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np
import yaml
from conftest import simulate

from federation import hookimpl
from federation.engine.api import P_MODE
from federation.engine.jit import part
from federation.network.deadlock import prove
from federation.pipeline.load import load_experiment
from federation.pipeline.point import BuildCache
from federation.plugin.components import Routing
from federation.plugin.registry import get_plugins, reset_plugins
from federation.plugins.routings.aries import MODES, Aries

MACHINE = Path(__file__).resolve().parent.parent / "schemas" / "machines" / "aries-xc.yaml"
#: a small Aries: 3 groups of 3 chassis x 4 blades, 2 nodes per router (24 per group)
SMALL = {"topology": {"kind": "aries", "groups": 3, "chassis": 3, "blades": 4,
                      "nodes_per_router": 2, "global_tiles": 4, "tiles_per_global_link": 2},
         "router": {"vcs": 4}, "packet_size": "256B"}


def run(tmp_path, mode: str):
    return simulate(tmp_path, {
        "machine": yaml.safe_load(MACHINE.read_text()),  # 4 VCs as shipped
        "routing": {"algorithm": "aries", "mode": mode},
        "workload": {"kind": "synthetic", "load": 0.4},
        "stop": {"warmup": "0.3us", "measure": "1us"}, "seed": 3})


def test_modes_order_the_nonminimal_fraction(tmp_path):
    frac = {}
    for mode in ("ADAPTIVE_0", "ADAPTIVE_1", "ADAPTIVE_2", "ADAPTIVE_3", "MIN_HASH",
                 "NMIN_HASH", "IN_ORDER"):
        prep, raw, s, packets, _ = run(tmp_path, mode)
        assert (raw.pkt_deliver >= 0).all(), mode
        frac[mode] = s.nonminimal_fraction
        groups = prep.job.tables.router_group[prep.network.node_router]
        m = packets["measured"]
        between = groups[packets["src"][m]] != groups[packets["dst"][m]]
        if mode == "NMIN_HASH":  # every packet that leaves its router
            moved = packets["hops"][m] > 0
            assert (~packets["minimal"][m][between]).all()
            assert (~packets["minimal"][m][~between & moved]).all()
    order = [frac[m] for m in ("ADAPTIVE_0", "ADAPTIVE_1", "ADAPTIVE_2", "ADAPTIVE_3")]
    assert all(a > b for a, b in zip(order, order[1:], strict=False)), frac
    assert frac["MIN_HASH"] == frac["IN_ORDER"] == 0
    assert np.isclose(frac["NMIN_HASH"], 1.0, atol=0.003)  # 3 in 2,303: same router


def test_intra_group_traffic_takes_nonminimal_paths_under_load(tmp_path):
    """A job on one group only (uniform among its 24 nodes, load 0.7): ADAPTIVE sends a share
    of it through another router of the row or column, HIGH BIAS a smaller one, IN_ORDER
    none; a detour is one hop, then minimal (at most 2): 3 router hops at most."""
    frac, hops = {}, {}
    for mode in ("ADAPTIVE_0", "ADAPTIVE_3", "IN_ORDER"):
        prep, raw, s, pk, _ = simulate(tmp_path, {
            "machine": SMALL, "routing": {"algorithm": "aries", "mode": mode},
            "jobs": [{"name": "a", "workload": {"kind": "synthetic", "load": 0.7},
                      "placement": {"kind": "contiguous", "count": 24}}],
            "stop": {"warmup": "0.5us", "measure": "2us"}, "seed": 3})
        assert (raw.pkt_deliver >= 0).all(), mode
        m = pk["measured"]
        g = prep.job.tables.router_group[prep.network.node_router]
        assert (g[pk["src"][m]] == 0).all() and (g[pk["dst"][m]] == 0).all()
        frac[mode] = s.nonminimal_fraction
        hops[mode] = pk["hops"][m][~pk["minimal"][m]]
        assert pk["hops"][m].max() <= (3 if mode != "IN_ORDER" else 2)
    assert frac["ADAPTIVE_0"] > 2 * frac["ADAPTIVE_3"] > 0 == frac["IN_ORDER"], frac
    assert hops["ADAPTIVE_0"].min() >= 2 and hops["ADAPTIVE_0"].max() == 3


def _small_point(tmp_path):
    doc = {"schema_version": 1, "name": "t", "machine": SMALL,
           "routing": {"algorithm": "aries"},
           "workload": {"kind": "synthetic", "load": 0.1},
           "stop": {"warmup": "0us", "measure": "0.1us"}}
    (tmp_path / "e.yaml").write_text(yaml.safe_dump(doc))
    return load_experiment(tmp_path / "e.yaml").points[0]


def test_the_detour_plan_is_proved_and_its_level_is_needed(tmp_path):
    """The declared plan (detour, then minimal a VC level up) passes the proof; without the
    level (``detour_bump`` 0) a detour hop and a minimal hop on VC 0 close a cycle inside
    the group (a chassis' all-to-all: a triangle), which the proof prints."""
    point = _small_point(tmp_path)
    built = BuildCache(1 << 30).get(point)
    assert built.deadlock.deadlock_free
    plan = built.program.vc_plan
    assert plan.detour == "source" and plan.detour_bump == 1
    net, t = built.network, built.tables
    bad = prove(net, t, 4, dataclasses.replace(plan, detour_bump=0))
    assert not bad.deadlock_free
    classes = {c.link_class for c in bad.cycle}
    assert classes <= {"intra_chassis", "inter_chassis"} and {c.vc for c in bad.cycle} == {0}
    assert re.match(r"a cycle of \d+ channels: router ", bad.describe())
    assert prove(net, t, 4, dataclasses.replace(plan, detour="none")).dependencies < \
        built.deadlock.dependencies


def test_modes_are_listed_for_per_message_modes():
    assert Aries.modes() == MODES and MODES[0] == "ADAPTIVE_0" and MODES[3] == "ADAPTIVE_3"
    assert Routing.modes() == []


def test_a_detour_towards_a_router_of_the_row_goes_through_the_row(tmp_path):
    """Router 0 (chassis 0, slot 0) to router 4 (chassis 1, slot 0), two nodes each way at
    their NICs' full rate, more than the one inter-chassis link carries: packets detour, but
    only through another router of slot 0 (then one hop): through a router of chassis 0 the
    tables (intra-chassis first) would lead back through router 0.  So every packet makes 1
    hop (minimal) or 2 (detour), none 3."""
    prep, raw, s, pk, _ = simulate(tmp_path, {
        "machine": SMALL, "routing": {"algorithm": "aries", "mode": "ADAPTIVE_0"},
        "jobs": [{"name": "a", "workload": {"kind": "synthetic", "load": 1.0,
                                           "pattern": {"kind": "shift", "offset": 2}},
                  "placement": {"kind": "list", "nodes": [0, 1, 8, 9]}}],
        "stop": {"warmup": "0.5us", "measure": "2us"}, "seed": 3})
    m = pk["measured"]
    assert set(prep.network.node_router[pk["dst"][m]]) == {0, 4}
    hops, minimal = pk["hops"][m], pk["minimal"][m]
    assert (hops[minimal] == 1).all() and (hops[~minimal] == 2).all()
    assert (~minimal).sum() > 0.1 * m.sum()


@part
def _even_nodes_nmin_hash(sim, tables, node, pk):
    """At the NIC: packets of even nodes ask for NMIN_HASH (as a message's mode would)."""
    if node % 2 == 0:
        sim.ps[pk, P_MODE] = 5


class _PerPacketAries(Aries):
    name = "aries_per_packet_test"

    def program(self, network, topology, machine, tables):  # noqa: ANN001
        prog = super().program(network, topology, machine, tables)
        prog.inject = _even_nodes_nmin_hash
        return prog


class _Plugin:
    @staticmethod
    @hookimpl
    def federation_register_routings(register) -> None:  # noqa: ANN001
        register(_PerPacketAries)


def test_a_packet_mode_overrides_the_configured_one(tmp_path):
    """Configured IN_ORDER (always minimal); packets whose mode says NMIN_HASH (index 5 of
    ``Aries.modes()``) all go non-minimally, the others all minimally."""
    plugins = get_plugins()
    plugins.add(_Plugin(), "aries_per_packet_test", "test")
    try:
        _, raw, _, pk, _ = simulate(tmp_path, {
            "machine": SMALL, "routing": {"algorithm": "aries_per_packet_test",
                                          "mode": "IN_ORDER"},
            "workload": {"kind": "synthetic", "load": 0.2},
            "stop": {"warmup": "0.2us", "measure": "1us"}, "seed": 4})
    finally:
        reset_plugins()
    m = pk["measured"] & (pk["hops"] > 0)
    even = pk["src"][m] % 2 == 0
    assert even.sum() > 50 and (~even).sum() > 50
    assert (~pk["minimal"][m][even]).all() and pk["minimal"][m][~even].all()
    assert Aries.modes()[5] == "NMIN_HASH"
