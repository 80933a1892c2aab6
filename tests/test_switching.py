"""Store-and-forward and virtual cut-through against their closed forms on every shipped machine.

One packet alone in the network, from node 0 to a far node: its path is exactly the ports that
sent one packet (``ports.packets == 1``), ordered by walking from node 0's NIC.  With links
``0..n`` along it (``0`` the NIC's, ``n`` the last terminal link), serialisations ``s_i`` and
latencies ``l_i`` (rounded to picoseconds as the engine does) and router delay ``d``:

* store-and-forward: ``latency = sum(s_i + l_i) + n * d`` (every router receives the whole
  packet before routing it);
* cut-through: the head reaches router ``i`` and is routed ``l_{i-1} + d`` after it left
  router ``i-1``; the port then sends until ``max(start_i + s_i, tail_{i-1})`` where
  ``tail_{i-1}`` is when the tail arrived: so on equal bandwidths the serialisation is paid once.

The files' own figures are used unchanged (mixed bandwidths included), with one packet of the
file's packet size.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import simulate

from federation.models.units import PS_PER_S
from federation.pipeline.load import load_experiment

MACHINES = sorted((Path(__file__).resolve().parent.parent / "schemas" / "machines")
                  .glob("*.yaml"))


def path_ports(prep, raw) -> list[int]:
    """The ports the single packet crossed, in order from its source NIC."""
    pt = prep.network.ports
    used = set(np.nonzero(raw.port_pkts == 1)[0].tolist())
    assert (raw.port_pkts <= 1).all()
    src = int(prep.job.packets.src[0])
    p = int(pt.nic_port[src])
    order = [p]
    used.discard(p)
    while used:
        here = int(pt.port_router[pt.port_peer[p]])
        nxt = [q for q in used if int(pt.port_router[q]) == here]
        assert len(nxt) == 1, "the path visits a router twice"
        p = nxt[0]
        order.append(p)
        used.discard(p)
    assert int(pt.port_router[pt.port_peer[order[-1]]]) < 0  # ends at a NIC
    return order


def figures(prep, ports: list[int], size: int) -> tuple[list[int], list[int], int]:
    """Per-link serialisation and latency (ps, rounded like the engine) and the router delay."""
    job, pt = prep.job, prep.network.ports
    ser, lat = [], []
    for p in ports:
        if pt.port_router[p] < 0:
            bw = job.nic_bandwidth
            figs = job.links["terminal"]
        else:
            figs = job.links[prep.network.link_classes[pt.port_class[p]]]
            bw = figs.bandwidth
        ser.append(int(np.int64(size * (PS_PER_S / bw) + 0.5)))
        lat.append(int(round(figs.latency * PS_PER_S)))
    return ser, lat, int(round(job.router_delay_s * PS_PER_S))


def store_and_forward(ser: list[int], lat: list[int], d: int) -> int:
    return sum(ser) + sum(lat) + (len(ser) - 1) * d


def cut_through(ser: list[int], lat: list[int], d: int) -> int:
    start, done = 0, ser[0]
    for i in range(1, len(ser)):
        start += lat[i - 1] + d
        done = max(start + ser[i], done + lat[i - 1])
    return done + lat[-1]


@pytest.mark.parametrize("switching", ["store_and_forward", "cut_through"])
@pytest.mark.parametrize("path", MACHINES, ids=[p.stem for p in MACHINES])
def test_single_packet_latency_is_the_closed_form(path, switching, tmp_path):
    machine = yaml.safe_load(path.read_text())
    machine.setdefault("router", {})["switching"] = switching
    doc = {
        "machine": machine,
        "routing": {"algorithm": "minimal"},
        "workload": {"kind": "messages", "messages": [{"at": "1ns", "src": 0, "dst": 1,
                                                       "size": 1}]},
        "stop": {"warmup": "0ns", "measure": "1us"},
    }
    (tmp_path / "probe.yaml").write_text(yaml.safe_dump(doc))
    resolved = load_experiment(tmp_path / "probe.yaml").points[0].machine
    # one whole packet, to the last node: another group, or the far corner, on every file
    size = int(resolved.machine.packet_size)
    doc["workload"]["messages"][0].update(dst=resolved.topology.size().nodes - 1, size=size)
    prep, raw, s, packets, _ = simulate(tmp_path, doc)
    ports = path_ports(prep, raw)
    assert len(ports) >= 3  # NIC, at least one cable, terminal: a multi-hop path
    ser, lat, d = figures(prep, ports, size)
    expect = (cut_through if switching == "cut_through" else store_and_forward)(ser, lat, d)
    got = int(packets["delivered_ps"][0] - packets["created_ps"][0])
    assert got == expect, (path.stem, switching, len(ports), ser, lat, d)


def test_cut_through_pays_the_serialisation_once_on_equal_links():
    """The closed forms themselves: 4 links of 100 ps serialisation and 10 ps latency."""
    ser, lat = [100] * 4, [10] * 4
    assert store_and_forward(ser, lat, 5) == 400 + 40 + 15
    assert cut_through(ser, lat, 5) == 100 + 40 + 15
    # a slower middle link is paid in full, and the tail still bounds the faster links after it
    assert cut_through([100, 300, 100], [10, 10, 10], 0) == 10 + 10 + 300 + 10
