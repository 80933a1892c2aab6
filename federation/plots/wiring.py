"""Each point's machine wired as the engines number its ports, for the reader's checks of the
ports and link-series tables and of the summary's busiest links.

A ports table row names a port and says which router owns it, its link class and where its
cable leads.  Those are facts of the machine, not of the run: the native engine (and SimGrid,
which reports through the same tables) numbers the ports across the machine, each router's
consecutively (its terminal ports, then its cable ends in cable order), then one port per NIC
(:class:`~federation.network.graph.PortTable`).  So once the point's machine is rebuilt from
its resolved document (:func:`wiring_of`), every row's router, link class, node, far-end
router and router-local number must be the ones of its port, and each port of the machine is
listed once.  A table whose router or port column was permuted, or that was copied in from a
run of another machine of the same size, fails that; it would otherwise draw a heatmap whose
rows are the wrong routers.  What cannot be told apart is two ports that agree on all of it
(two parallel cables between the same routers): swapping their rows changes no figure's
meaning either.

SST numbers merlin's ports per router (:func:`sst_ports`: the adapter's own mapping of the
machine, ``adapters/sst/topologies.py``), so there a row's ``(router, port)`` must be a port of
a merlin router and carry its link class (``unconnected`` for a port without a cable).  SST
writes a row per port that reported statistics, so a missing port is not refused there.

A machine that cannot be rebuilt here (a topology whose plugin is not installed, a graph file
that is not on this machine, no resolved document) has no wiring: those checks are skipped,
the range checks of :mod:`federation.plots.checks` still apply.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from federation.errors import ConfigError
from federation.plots.machines import PointMachine
from federation.results.model import PointResult

#: engines whose tables number ports across the machine, as the native engine does
GLOBAL_PORT_ENGINES = frozenset({"native", "simgrid"})
#: optional columns of a ports (or link-series) table that restate the machine's wiring:
#: checked against it when present (tables of older versions may lack them)
WIRING_COLUMNS = ("router", "link_class", "node", "peer_router", "local_port")


@dataclass(frozen=True)
class Wiring:
    """Per port of the machine (the native numbering), what a ports table states of it."""

    router: np.ndarray  #: owning router, -1 for a NIC's port
    link_class: np.ndarray  #: the link class's name (object array)
    node: np.ndarray  #: node of a terminal or NIC port, -1 otherwise
    peer_router: np.ndarray  #: router at the cable's far end (-1: a NIC)
    local_port: np.ndarray  #: number among its router's ports (0 for a NIC's)
    #: the network, for the SST mapping (not compared)
    network: Any = None
    #: the topology's kind and parameters, for the SST mapping
    kind: str = ""
    params: Any = None

    @property
    def ports(self) -> int:
        return int(self.router.shape[0])

    def column(self, name: str) -> np.ndarray:
        return getattr(self, name)

    def describe(self, port: int) -> str:
        """``router 1's port 2 (global, to router 4)``, as refusals name a port."""
        r, c, peer = int(self.router[port]), self.link_class[port], int(self.peer_router[port])
        to = f"router {peer}" if peer >= 0 else f"node {int(self.node[port])}"
        if r < 0:
            return f"the NIC port of node {int(self.node[port])} ({c}, to router {peer})"
        return f"router {r}'s port {int(self.local_port[port])} ({c}, to {to})"


@dataclass(frozen=True)
class SstPorts:
    """A machine as the SST adapter maps it onto merlin: each router's port count, and the
    link class of each wired ``(router, port)``."""

    num_ports: tuple[int, ...]
    classes: dict[tuple[int, int], str]


def wiring_of(m: PointMachine, source: str) -> Wiring | None:
    """The wiring of the point's machine (``None``: it cannot be rebuilt here, see the module
    docstring); machines are rebuilt once per document."""
    if m.document is None:
        return None
    return _wiring(m.document, source)


@lru_cache(maxsize=8)
def _wiring(document: str, source: str) -> Wiring | None:
    from federation.models.base import validate_model
    from federation.models.machine import Machine
    from federation.pipeline.build import checked_network
    from federation.pipeline.load import resolve_machine
    from federation.plugin.registry import get_plugins

    try:
        machine = validate_model(Machine, json.loads(document), source)
        rm = resolve_machine(machine, source, get_plugins())
        net = checked_network(rm)
        pt = net.ports
    except Exception:  # noqa: BLE001 - a plugin's topology may fail any way: no wiring then
        return None
    local = np.where(pt.port_router >= 0, np.arange(pt.n_ports)
                     - pt.router_port_start[np.maximum(pt.port_router, 0)], 0)
    return Wiring(router=pt.port_router.astype(np.int64),
                  link_class=np.array(net.link_classes, dtype=object)[pt.port_class],
                  node=pt.port_node.astype(np.int64),
                  peer_router=pt.port_router[pt.port_peer].astype(np.int64),
                  local_port=local.astype(np.int64), network=net,
                  kind=str(rm.topology.name), params=rm.topology.params)


def sst_ports(w: Wiring, routing: str) -> SstPorts | None:
    """The adapter's merlin mapping of the machine (``None`` when the adapter is not installed
    or does not map it: then it cannot have run it, and the other checks stand)."""
    try:
        from federation.adapters.sst.topologies import map_network
    except ImportError:
        return None
    try:
        net = map_network(w.kind, w.params, w.network, routing)
    except Exception:  # the adapter's Refusal, or a machine it does not expect  # noqa: BLE001
        return None
    classes = {(r, p): c for c, ra, pa, rb, pb in net.cables for r, p in ((ra, pa), (rb, pb))}
    classes.update({(r, p): "terminal" for _, r, p in net.hosts})
    return SstPorts(tuple(int(n) for n in net.num_ports), classes)


#: a table check's refusal: ``(column, message)`` to the error naming the table's file
Refuse = Callable[[str, str], ConfigError]


def check_global_ports(cols: dict[str, np.ndarray], w: Wiring, m: PointMachine,
                       refuse: Refuse, complete: bool) -> None:
    """A table that numbers ports across the machine (native, SimGrid): each row's port is
    one of the machine's, stated as wired (:data:`WIRING_COLUMNS` present in ``cols``); with
    ``complete`` (a ports table), each port listed exactly once."""
    port = cols["port"]
    bad = port >= w.ports
    if bad.any():
        raise refuse("port", f"port {int(port[bad][0])} is outside 0..{w.ports - 1}: the "
                     f"point's machine {m.title} has {w.ports} ports")
    if complete:
        counts = np.bincount(port, minlength=w.ports)
        twice = np.flatnonzero(counts > 1)
        if twice.size:
            k = int(twice[0])
            raise refuse("port", f"port {k} ({w.describe(k)}) has {int(counts[k])} rows; a "
                         "ports table has one row per port")
        missing = np.flatnonzero(counts == 0)
        if missing.size:
            k = int(missing[0])
            raise refuse("port", f"port {k} ({w.describe(k)}) has no row: the engine lists "
                         f"each of the point's machine's {w.ports} ports once "
                         f"({m.title})")
    for col in WIRING_COLUMNS:
        if col not in cols:
            continue
        have, want = cols[col], w.column(col)[port]
        bad = have != want
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            k = int(port[i])
            got = have[i].item() if hasattr(have[i], "item") else have[i]
            raise refuse(col, f"{got!r} on the row of port {k}, but port {k} of the point's "
                         f"machine is {w.describe(k)}: the rows are permuted or of another "
                         "machine")


def check_sst_ports(cols: dict[str, np.ndarray], sp: SstPorts, m: PointMachine,
                    refuse: Refuse) -> None:
    """An SST ports table: each ``(router, port)`` a port of a merlin router of the machine,
    with the link class the adapter wired it with."""
    r, port, cls = cols["router"], cols["port"], cols["link_class"]
    n = len(sp.num_ports)
    bad = (r < 0) | (r >= n)
    if bad.any():
        raise refuse("router", f"router {int(r[bad][0])} is outside 0..{n - 1}: SST's ports "
                     f"table lists merlin's routers, {n} for the point's machine {m.title}")
    limit = np.array(sp.num_ports, dtype=np.int64)[r]
    bad = port >= limit
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise refuse("port", f"port {int(port[i])} of router {int(r[i])} is outside "
                     f"0..{int(limit[i]) - 1}: merlin's router {int(r[i])} has {int(limit[i])} "
                     "ports for the point's machine")
    want = np.array([sp.classes.get((a, b), "unconnected")
                     for a, b in zip(r.tolist(), port.tolist(), strict=True)], dtype=object)
    bad = cls.astype(object) != want
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise refuse("link_class", f"{cls[i]!r} on port {int(port[i])} of router {int(r[i])}, "
                     f"but the SST adapter wires that port as {want[i]!r}: the rows are "
                     "permuted or of another machine")


def check_busiest_links(p: PointResult, m: PointMachine, source: str, where: str) -> None:
    """The summary's busiest links (native, SimGrid) named as the machine wires their ports:
    the report lists them by router, class and far end."""
    if p.engine not in GLOBAL_PORT_ENGINES or not p.summary.busiest_links:
        return
    w = wiring_of(m, source)
    if w is None:
        return
    for k, lk in enumerate(p.summary.busiest_links):
        at = f"{where}.summary.busiest_links[{k}]"
        if not 0 <= lk.port < w.ports:
            raise ConfigError(f"{lk.port} is outside 0..{w.ports - 1}: the point's machine "
                              f"{m.title} has {w.ports} ports", source=source,
                              path=f"{at}.port")
        r, peer = int(w.router[lk.port]), int(w.peer_router[lk.port])
        want_peer = f"router {peer}" if peer >= 0 else f"node {int(w.node[lk.port])}"
        for field, have, want in (("router", lk.router, r if r >= 0 else None),
                                  ("link_class", lk.link_class, w.link_class[lk.port]),
                                  ("peer", lk.peer, want_peer)):
            if have != want:
                raise ConfigError(f"{have!r}, but port {lk.port} of the point's machine is "
                                  f"{w.describe(lk.port)}: a busiest link of another port or "
                                  "machine", source=source, path=f"{at}.{field}")
