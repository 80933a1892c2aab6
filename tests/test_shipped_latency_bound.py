"""No shipped machine reports a latency below physics.

For every machine file in ``schemas/machines/`` a short, lightly loaded uniform run on the
native engine: every measured packet's latency, from creation and from injection, is at least
its zero-load bound (store-and-forward over its own hop count on the fastest links, see
:func:`conftest.zero_load_bound_ps`) and positive, and so are the summary's mean and minimum.
A unit slip in a machine file, a rounding change in the engine, or a wrapped time would show
up here as a packet faster than light.  The files are globbed at collection, so a new machine
is covered without touching this module.  Each machine runs with minimal and with Valiant
routing (the bound uses each packet's own hop count, so it holds for non-minimal paths too;
Valiant gets twice the file's VCs), 0.5 us of warm-up and 3 us measured at load 0.05: the file
takes seconds on one core.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import simulate, zero_load_bound_ps

MACHINES = sorted((Path(__file__).resolve().parent.parent / "schemas" / "machines")
                  .glob("*.yaml"))


@pytest.mark.parametrize("routing", ["minimal", "valiant"])
@pytest.mark.parametrize("path", MACHINES, ids=[p.stem for p in MACHINES])
def test_measured_latencies_respect_the_zero_load_bound(path, routing, tmp_path):
    machine: str | dict = str(path)
    if routing == "valiant":  # the files size router.vcs for minimal routing; Valiant's two
        # phases need at most twice that (the preflight would refuse fewer, naming the field)
        machine = yaml.safe_load(path.read_text())
        router = machine.setdefault("router", {})
        router["vcs"] = 2 * router.get("vcs", 3)
    prep, raw, s, packets, _ = simulate(tmp_path, {
        "machine": machine,
        "routing": {"algorithm": routing},
        "workload": {"kind": "synthetic", "pattern": "uniform", "load": 0.05},
        "stop": {"warmup": "0.5us", "measure": "3us"},
        "seed": 3,
    })
    m = packets["measured"]
    assert m.sum() == s.packets_measured > 0
    assert (packets["delivered_ps"][m] >= 0).all()  # every measured packet arrived
    bound = zero_load_bound_ps(prep, packets)[m]
    assert (bound > 0).all()
    latency = (packets["delivered_ps"] - packets["created_ps"])[m]
    network = (packets["delivered_ps"] - packets["injected_ps"])[m]
    for name, lat in (("latency", latency), ("network latency", network)):
        below = np.nonzero(lat < bound)[0]
        assert below.size == 0, (
            f"{path.name}: {below.size} packets' {name} below the zero-load bound, e.g. packet "
            f"{int(np.nonzero(m)[0][below[0]])}: {int(lat[below[0]])} < {int(bound[below[0]])} ps")
        assert lat.min() > 0
    # the summary agrees with the packets, in ns
    assert s.latency_ns.mean == pytest.approx(latency.mean() / 1e3, rel=1e-12)
    assert s.network_latency_ns.mean == pytest.approx(network.mean() / 1e3, rel=1e-12)
    for stats in (s.latency_ns, s.network_latency_ns):
        assert stats.mean >= bound.mean() / 1e3 > 0
        assert stats.p50 >= bound.min() / 1e3
