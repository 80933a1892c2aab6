"""Each point's own machine, for the reader's checks and the figures' titles.

``results.json`` has one machine summary (``machine``: name, topology, routers, nodes, cables
per link class), the one of the run's first point; a sweep over the machine
(``sweep: {machine.topology.a: [2, 4]}``) runs other machines at its other points.  Every
point also carries its machine complete, every default filled in (``resolved.machine``), so:

* a point whose resolved topology agrees with the summary's (every parameter the summary names
  has the same value) is of the summary's machine; the summary's counts are checked once
  against what that topology builds (:meth:`~federation.plugin.components.Topology.size`, no
  network is built), so a hand-edited ``machine.routers`` is refused;
* any other point's routers and nodes are those its own topology builds.

Besides the counts, the reader's range checks need each point's link and NIC bandwidths and
its largest packet (:class:`PointMachine`): they come from the validated ``resolved.machine``
(``None`` when a point has none, as in a folder written before the resolved document).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from federation.errors import ConfigError, FederationError
from federation.results.model import MachineSummary, RunResult

#: most routers, nodes or ports a network may have: its arrays are int32
#: (:func:`federation.network.graph.network_problem`)
MAX_COUNT = 2**31 - 1


@dataclass(frozen=True)
class PointMachine:
    """One point's machine: what titles name and what the checks bound values by."""

    name: str | None
    kind: str
    topology: dict[str, Any]  #: kind and parameters (the resolved ones when known)
    routers: int
    nodes: int
    cables: int  #: router-to-router cables (an upper bound for a few topologies)
    link_classes: frozenset[str] = frozenset()  #: its link classes, ``terminal`` included
    #: per link class (``terminal`` included) its bandwidth in B/s; empty when unknown
    bandwidth: dict[str, float] = field(default_factory=dict)
    nic_bandwidth: float | None = None
    packet_size: int | None = None
    #: the resolved machine document without its name and description (``None``: unknown):
    #: two points ran the same machine when these are equal
    document: str | None = None

    @property
    def title(self) -> str:
        """``NAME (kind, R routers, N nodes)``, as figure titles name a machine."""
        name = f"{self.name} " if self.name else ""
        return f"{name}({self.kind}, {self.routers} routers, {self.nodes} nodes)"

    @property
    def identity(self) -> tuple[Any, ...]:
        """What makes two points' machines the same (the engine overlay compares only those):
        the whole resolved machine when known, else the summary's topology and counts."""
        if self.document is not None:
            return ("resolved", self.document)
        return ("summary", json.dumps(self.topology, sort_keys=True), self.routers, self.nodes)

    @property
    def ports(self) -> int:
        """How many ports the network has (a NIC's and a router's per node, two per cable):
        every port number is below it."""
        return 2 * self.nodes + 2 * self.cables


def _agrees(summary: dict[str, Any], resolved: Any) -> bool:
    """Whether every parameter of the summary's topology has its value in ``resolved``."""
    return isinstance(resolved, dict) and all(
        k in resolved and resolved[k] == v for k, v in summary.items())


def _figures(doc: dict[str, Any], source: str, where: str) -> tuple[Any, dict[str, float],
                                                                    float | None, int]:
    """The validated machine of a resolved document, its bandwidths and its packet size."""
    from federation.models.base import validate_model
    from federation.models.machine import Machine

    machine = validate_model(Machine, doc, source, prefix=where)
    bw = {c: float(f.bandwidth) for c, f in machine.links.items() if f.bandwidth is not None}
    nic = machine.nic.bandwidth
    return machine, bw, None if nic is None else float(nic), int(machine.packet_size)


def _size(machine: Any, source: str, where: str) -> tuple[int, int, int]:
    """``(routers, nodes, cables)`` the machine's topology builds (its ``size()``, else a
    build)."""
    from federation.pipeline.bounds import topology_size
    from federation.pipeline.load import resolve_machine
    from federation.plugin.registry import get_plugins

    rm = resolve_machine(machine, source, get_plugins(), prefix=where)
    size = topology_size(rm, prefix=f"{where}.")
    if size is not None:
        return int(size.routers), int(size.nodes), int(size.cables)
    try:  # a topology that cannot tell its size before building (a plugin's)
        net = rm.topology.build()
        return int(net.n_routers), int(net.n_nodes), int(net.link_src.shape[0])
    except (ValueError, TypeError, ArithmeticError, MemoryError, AttributeError) as exc:
        raise ConfigError(f"building the topology failed: {exc}", source=source,
                          path=f"{where}.topology") from None


def check_summary_counts(m: MachineSummary, source: str) -> None:
    """The summary's counts within what a network can have."""
    for name, v in (("routers", m.routers), ("nodes", m.nodes)):
        if not 1 <= v <= MAX_COUNT:
            raise ConfigError(f"{v} is outside 1..{MAX_COUNT}: a machine has at least one "
                              f"{name[:-1]}, and at most {MAX_COUNT} (a network's indices "
                              "are int32)", source=source, path=f"machine.{name}")
    for k, n in m.links.items():
        if not 0 <= n <= MAX_COUNT:
            raise ConfigError(f"{n} is outside 0..{MAX_COUNT} (a network's indices are int32)",
                              source=source, path=f"machine.links.{k}")
    if "terminal" in m.links and m.links["terminal"] != m.nodes:
        raise ConfigError(f"{m.links['terminal']} terminal links, but the machine has "
                          f"{m.nodes} nodes (one terminal link each)", source=source,
                          path="machine.links.terminal")


def point_machines(result: RunResult, source: str) -> dict[int, PointMachine]:
    """Each point's machine, by point index (see the module docstring); a count of the
    summary that its topology does not build, or a point whose machine differs from the
    summary's and cannot be sized, is a :class:`ConfigError` naming the field."""
    m = result.machine
    check_summary_counts(m, source)
    kind = str(m.topology.get("kind", "?"))
    summary_cables = sum(n for k, n in m.links.items() if k != "terminal")
    checked = False
    sizes: dict[str, tuple[int, int, int]] = {}
    validated: dict[str, tuple[Any, dict[str, float], float | None, int]] = {}
    out: dict[int, PointMachine] = {}
    for i, p in enumerate(result.points):
        where = f"points[{i}].resolved.machine"
        doc = p.resolved.get("machine")
        if not isinstance(doc, dict):  # no resolved document: the summary is all there is
            out[p.index] = PointMachine(m.name, kind, m.topology, m.routers, m.nodes,
                                        summary_cables, frozenset(m.links) | {"terminal"})
            continue
        key_doc = json.dumps(doc, sort_keys=True, default=repr)
        if key_doc not in validated:  # a sweep's points mostly share their machine
            validated[key_doc] = _figures(doc, source, where)
        machine, bw, nic, packet = validated[key_doc]
        topo = doc.get("topology")
        ident = json.dumps({k: v for k, v in doc.items() if k not in ("name", "description")},
                           sort_keys=True, default=repr)
        figures = {"link_classes": frozenset(machine.links) | {"terminal"}, "bandwidth": bw,
                   "nic_bandwidth": nic, "packet_size": packet, "document": ident}
        if _agrees(m.topology, topo) and machine.name == m.name:
            if not checked:
                checked = True
                _check_against(m, machine, source, where, sizes, topo)
            out[p.index] = PointMachine(m.name, kind, topo, m.routers, m.nodes, summary_cables,
                                        **figures)
            continue
        key = json.dumps(topo, sort_keys=True, default=repr)
        if key not in sizes:
            try:
                sizes[key] = _size(machine, source, where)
            except FederationError as exc:
                raise ConfigError(
                    f"this point's machine is not the one of results.json's machine summary, "
                    f"and its size cannot be told: {exc}", source=source,
                    path=f"{where}.topology") from None
        r, n, c = sizes[key]
        out[p.index] = PointMachine(machine.name, str(topo.get("kind", "?")), topo, r, n, c,
                                    **figures)
    return out


def _check_against(m: MachineSummary, machine: Any, source: str, where: str,
                   sizes: dict[str, tuple[int, int, int]], topo: dict[str, Any]) -> None:
    """The summary's routers and nodes are what its topology builds (skipped when the
    topology cannot be sized here, e.g. its plugin is not installed)."""
    try:
        r, n, c = _size(machine, source, where)
    except FederationError:
        return
    sizes[json.dumps(topo, sort_keys=True, default=repr)] = (r, n, c)
    for name, have, want in (("routers", m.routers, r), ("nodes", m.nodes, n)):
        if have != want:
            raise ConfigError(f"{have}, but the machine's topology ({where}.topology) builds "
                              f"{want} {name}", source=source, path=f"machine.{name}")


def rounding_factor(bandwidth: float, packet: int) -> float:
    """How much more than ``bandwidth`` a port can send: the engine serialises a packet of
    ``s`` bytes in ``int(s x ps_per_byte + 0.5)`` whole picoseconds (at least 1), down to half
    a picosecond less than exact; over a run of packets of ``1..packet`` bytes the worst is
    the size whose exact time is nearest 1.5 ps (1 ps then, a third faster).  A fraction of a
    percent for the usual figures (a 64 B packet at 5 GB/s: 12.8 ps, one part in 25)."""
    per_byte = 1e12 / bandwidth
    if not math.isfinite(per_byte) or per_byte <= 0:
        return 1.5
    s0 = int(1.5 / per_byte)
    worst = 1.0
    for s in {1, packet, max(1, min(packet, s0)), max(1, min(packet, s0 + 1))}:
        x = s * per_byte
        worst = min(worst, max(1.0, x - 0.5) / x)
    return 1.0 / worst
