"""A machine as a SimGrid platform: XML with our own routes, so both engines use the same paths.

The platform is one ``Full`` zone (SimGrid looks each route up in a table, it computes nothing):

* one ``<host>`` per node (``n<node>``) and one ``<router>`` per router (``r<router>``);
* one ``SPLITDUPLEX`` ``<link>`` per router-to-router cable (``c<cable>``): its ``UP`` direction
  goes from the cable's ``link_src`` router to its ``link_dst`` router, each direction with the
  cable's class bandwidth, and as latency the class latency plus the router delay;
* two one-way links per node, because the native engine's two directions differ: the NIC
  (``p<nic port>``: NIC bandwidth, terminal latency plus the router delay) and the router's
  terminal port towards the node (``p<terminal port>``: terminal bandwidth and latency);
* one explicit ``<route>`` per (source, destination) node pair *that the traffic uses*: the
  source NIC, the cables our route tables choose hop by hop (parallel cables included), the
  destination's terminal port.

The router delay sits in the latency of every link that ends at a router, as in the native
engine (a packet's tail reaches the next router after serialisation, cable latency and router
delay), so an idle path has the same summed latency in both engines.  SimGrid's own
``DragonflyZone`` and ``FatTreeZone`` are not used: they route by their own rules (minimal only)
and merge parallel cables into one link of summed bandwidth.

A ``Full`` zone keeps a (hosts + routers)^2 table of route pointers and one route object per
pair, so the adapter refuses platforms above :data:`MAX_NETPOINTS` netpoints or
:data:`MAX_ROUTES` routes before writing anything.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from federation.engine.native import LinkFigures
from federation.errors import TopologyError
from federation.network import Network
from federation.plugin.components import RouteTables

#: most hosts plus routers in one platform: the Full zone's pointer table is this squared
#: (2048^2 pointers = 32 MiB)
MAX_NETPOINTS = 2048
#: most distinct (source, destination) node pairs, i.e. <route> elements (about 200 bytes of
#: XML and a few hundred bytes of SimGrid memory each)
MAX_ROUTES = 200_000


@dataclass
class Routes:
    """The paths of the node pairs a run uses, as global port ids (see :mod:`federation.network`).

    ``pair_src``/``pair_dst`` list the distinct pairs; ``ports`` holds each pair's ports
    (NIC, cables, terminal port) in CSR form (``offsets``); ``hops`` counts its router-to-router
    hops, the figure the native engine reports per packet.
    """

    pair_src: np.ndarray
    pair_dst: np.ndarray
    offsets: np.ndarray
    ports: np.ndarray
    hops: np.ndarray

    def path(self, i: int) -> np.ndarray:
        return self.ports[self.offsets[i]:self.offsets[i + 1]]


def router_path(network: Network, tables: RouteTables, src: int, dst: int) -> list[int]:
    """The cable ports from router ``src`` to router ``dst`` through minimal ``tables``."""
    pt = network.ports
    out: list[int] = []
    cur = src
    for _ in range(network.n_routers):
        if cur == dst:
            return out
        gd = int(tables.router_group[dst])
        if int(tables.router_group[cur]) != gd:
            port = int(tables.gnext[cur, gd])
        else:
            port = int(tables.lnext[cur, int(tables.router_local[dst])])
        if port < 0:
            raise TopologyError(f"no route from router {cur} to router {dst}")
        out.append(port)
        cur = int(pt.port_router[pt.port_peer[port]])
    if cur == dst:
        return out
    raise TopologyError(f"the route from router {src} to router {dst} loops")


def node_routes(network: Network, tables: RouteTables, src: np.ndarray,
                dst: np.ndarray) -> tuple[Routes, np.ndarray]:
    """Routes of the distinct pairs among (``src[i]``, ``dst[i]``), and each message's pair."""
    pt = network.ports
    key = src.astype(np.int64) * network.n_nodes + dst.astype(np.int64)
    pairs, pair_of = np.unique(key, return_inverse=True)
    ps = (pairs // network.n_nodes).astype(np.int32)
    pd = (pairs % network.n_nodes).astype(np.int32)
    cache: dict[tuple[int, int], list[int]] = {}
    chunks: list[list[int]] = []
    hops = np.empty(pairs.shape[0], dtype=np.int32)
    for i, (s, d) in enumerate(zip(ps.tolist(), pd.tolist(), strict=True)):
        rs, rd = int(network.node_router[s]), int(network.node_router[d])
        cables = cache.get((rs, rd))
        if cables is None:
            cables = cache[(rs, rd)] = router_path(network, tables, rs, rd)
        hops[i] = len(cables)
        chunks.append([int(pt.nic_port[s]), *cables, int(pt.node_port[d])])
    offsets = np.zeros(len(chunks) + 1, dtype=np.int64)
    np.cumsum([len(c) for c in chunks], out=offsets[1:])
    flat = np.fromiter((p for c in chunks for p in c), dtype=np.int64, count=int(offsets[-1]))
    return Routes(ps, pd, offsets, flat, hops), pair_of.astype(np.int64)


def port_figures(network: Network, links: dict[str, LinkFigures], nic_bandwidth: float,
                 router_delay: float) -> tuple[np.ndarray, np.ndarray]:
    """Per global port: bandwidth (B/s) and latency (s) of the SimGrid link direction it maps
    to, router delay included where the port leads to a router."""
    pt = network.ports
    cls = network.link_classes
    bw = np.array([links[c].bandwidth for c in cls], dtype=np.float64)[pt.port_class]
    lat = np.array([links[c].latency for c in cls], dtype=np.float64)[pt.port_class]
    bw[pt.nic_port] = nic_bandwidth
    lat = lat + np.where(pt.port_router[pt.port_peer] >= 0, router_delay, 0.0)
    return bw, lat


def shortest_flow(network: Network, links: dict[str, LinkFigures], nic_bandwidth: float,
                  router_delay: float) -> tuple[float, str]:
    """A lower bound on the time any message takes on this platform (seconds), and its terms
    in words: every route starts with a NIC link and ends with an ejection link, and moves at
    least one byte at most at the fastest link's bandwidth.  (Two nodes on one router meet
    the bound's latency part exactly.)"""
    from federation.models.units import format_time

    pt = network.ports
    bw, lat = port_figures(network, links, nic_bandwidth, router_delay)
    nic = float(lat[pt.nic_port].min()) if pt.nic_port.size else 0.0
    eject = float(lat[pt.node_port].min()) if pt.node_port.size else 0.0
    byte = 1.0 / float(bw.max())
    why = (f"{format_time(nic + eject + byte)} (NIC link latency {format_time(nic)} with the "
           f"router delay, ejection link {format_time(eject)}, one byte at the fastest "
           f"bandwidth {format_time(byte)})")
    return nic + eject + byte, why


def _num(x: float) -> str:
    """A float as SimGrid parses it back exactly (``repr`` round-trips)."""
    return repr(float(x))


def platform_xml(network: Network, links: dict[str, LinkFigures], nic_bandwidth: float,
                 router_delay: float, routes: Routes) -> str:
    """The SimGrid platform (see the module docstring) as XML text."""
    pt = network.ports
    bw, lat = port_figures(network, links, nic_bandwidth, router_delay)
    out = ["<?xml version='1.0'?>",
           '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">',
           '<platform version="4.1">',
           '<zone id="federation" routing="Full">']
    out += [f'<host id="n{n}" speed="1Gf"/>' for n in range(network.n_nodes)]
    out += [f'<router id="r{r}"/>' for r in range(network.n_routers)]
    # one split-duplex link per cable; its UP direction is the port on the link_src router
    up_port = _cable_up_ports(network)
    for c, p in enumerate(up_port.tolist()):
        out.append(f'<link id="c{c}" bandwidth="{_num(bw[p])}Bps" latency="{_num(lat[p])}s" '
                   'sharing_policy="SPLITDUPLEX"/>')
    for ports in (pt.nic_port, pt.node_port):
        for p in ports.tolist():
            out.append(f'<link id="p{p}" bandwidth="{_num(bw[p])}Bps" '
                       f'latency="{_num(lat[p])}s"/>')
    names = _link_refs(network, up_port)
    for i in range(routes.pair_src.shape[0]):
        ctn = "".join(names[p] for p in routes.path(i).tolist())
        out.append(f'<route src="n{routes.pair_src[i]}" dst="n{routes.pair_dst[i]}" '
                   f'symmetrical="NO">{ctn}</route>')
    out += ["</zone>", "</platform>", ""]
    return "\n".join(out)


def _cable_up_ports(network: Network) -> np.ndarray:
    """Per cable, its port on the ``link_src`` router (the split-duplex link's UP side)."""
    pt = network.ports
    up = np.full(network.n_links, -1, dtype=np.int64)
    cable_ports = np.nonzero(pt.port_link >= 0)[0]
    cable = pt.port_link[cable_ports]
    is_up = pt.port_router[cable_ports] == network.link_src[cable]
    up[cable[is_up]] = cable_ports[is_up]
    return up


def _link_refs(network: Network, up_port: np.ndarray) -> dict[int, str]:
    """``<link_ctn>`` element of every port (cables as a direction of their split link)."""
    pt = network.ports
    refs = {}
    for p in range(pt.n_ports):
        c = int(pt.port_link[p])
        if c >= 0:
            d = "UP" if int(up_port[c]) == p else "DOWN"
            refs[p] = f'<link_ctn id="c{c}" direction="{d}"/>'
        else:
            refs[p] = f'<link_ctn id="p{p}"/>'
    return refs
