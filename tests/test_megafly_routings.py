"""Routings on a small megafly (5 groups of 4 leaves and 4 spines, 16 nodes per group).

Facts: under group shift every packet of a group must cross to the next group, whose 4 links
from this group carry at most 4 / 16 of the group's injection bandwidth with minimal routing
(0.25); Valiant spreads it over every group's links, and the progressive adaptive routings
(``par``, CODES' ``prog_adaptive``) move the excess to non-minimal paths, so they carry clearly
more; under uniform traffic they track minimal.
"""

from __future__ import annotations

import pytest
from conftest import simulate

MEGAFLY = {"kind": "megafly", "groups": 5, "leaves": 4, "spines": 4, "nodes_per_leaf": 4,
           "global_links_per_spine": 4, "radix": 8}


def run(tmp_path, routing: str, pattern: str, load: float):
    return simulate(tmp_path, {
        "machine": {"topology": MEGAFLY, "router": {"vcs": 4}},
        "routing": {"algorithm": routing},
        "workload": {"kind": "synthetic", "pattern": pattern, "load": load},
        "stop": {"warmup": "2us", "measure": "6us"}, "seed": 4})[2]


def test_group_shift_minimal_is_capped_and_the_others_carry_more(tmp_path):
    acc = {r: run(tmp_path, r, "group_shift", 0.6).accepted_load
           for r in ("minimal", "valiant", "par", "prog_adaptive")}
    assert acc["minimal"] <= 0.25 * 1.03, acc
    for r in ("valiant", "par", "prog_adaptive"):
        assert acc[r] > 1.4 * acc["minimal"], acc


@pytest.mark.parametrize("routing", ["par", "prog_adaptive"])
def test_progressive_routings_track_minimal_under_uniform_traffic(tmp_path, routing):
    s = run(tmp_path, routing, "uniform", 0.3)
    m = run(tmp_path, "minimal", "uniform", 0.3)
    assert s.accepted_load == pytest.approx(s.offered_load, rel=0.03)
    assert s.latency_ns.mean < 1.3 * m.latency_ns.mean
