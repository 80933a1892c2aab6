"""The ``aries`` routing's modes on the shipped Aries XC machine under uniform traffic.

Facts (digest aries-routing-noise.md §2): a higher bias on non-minimal paths makes minimal
paths more likely, so the fraction of packets sent non-minimally falls from ADAPTIVE_0 (no
bias) through ADAPTIVE_1 and ADAPTIVE_2 to ADAPTIVE_3 (high bias); MIN_HASH and IN_ORDER never
leave minimal paths; NMIN_HASH sends every packet between groups non-minimally (5 in 6 of
uniform traffic on 6 groups).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import yaml
from conftest import simulate

MACHINE = Path(__file__).resolve().parent.parent / "schemas" / "machines" / "aries-xc.yaml"


def run(tmp_path, mode: str):
    machine = yaml.safe_load(MACHINE.read_text())
    machine["router"]["vcs"] = 4
    return simulate(tmp_path, {
        "machine": machine, "routing": {"algorithm": "aries", "mode": mode},
        "workload": {"kind": "synthetic", "load": 0.4},
        "stop": {"warmup": "0.3us", "measure": "1us"}, "seed": 3})


def test_modes_order_the_nonminimal_fraction(tmp_path):
    frac = {}
    for mode in ("ADAPTIVE_0", "ADAPTIVE_1", "ADAPTIVE_2", "ADAPTIVE_3", "MIN_HASH",
                 "NMIN_HASH", "IN_ORDER"):
        prep, raw, s, packets, _ = run(tmp_path, mode)
        assert (raw.pkt_deliver >= 0).all(), mode
        frac[mode] = s.nonminimal_fraction
        if mode == "NMIN_HASH":
            groups = prep.job.tables.router_group[prep.network.node_router]
            m = packets["measured"]
            between = groups[packets["src"][m]] != groups[packets["dst"][m]]
            assert (~packets["minimal"][m][between]).all()  # every inter-group packet
            assert packets["minimal"][m][~between].all()
    order = [frac[m] for m in ("ADAPTIVE_0", "ADAPTIVE_1", "ADAPTIVE_2", "ADAPTIVE_3")]
    assert all(a > b for a, b in zip(order, order[1:], strict=False)), frac
    assert frac["MIN_HASH"] == frac["IN_ORDER"] == 0
    assert np.isclose(frac["NMIN_HASH"], 5 / 6, atol=0.03)
