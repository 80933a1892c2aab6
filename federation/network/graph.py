"""The built network: what a topology plugin produces and what routing and engines consume.

A :class:`Network` is a plain set of flat arrays (routers, nodes attached to routers, full-duplex
router-router cables with a link class) plus a few labels.  Topology plugins fill one through
:class:`NetworkBuilder`; nothing about a topology's construction reaches the engine except these
arrays, so a third-party topology is exactly as fast to simulate as a built-in one.

Port numbering (shared by routing tables, the engine and the per-port result table):

* every router's ports are consecutive; a router first has one *terminal* port per attached node
  (in node order), then one port per cable end, in the order the cables were added;
* after all router ports come the NIC ports, one per node (``port = n_router_ports + node``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import scipy.sparse as sp

from federation.errors import TopologyError

TERMINAL = "terminal"


@dataclass(frozen=True)
class PortTable:
    """Flat description of every port; index = global port id."""

    router_port_start: np.ndarray  # int64[R+1]: CSR offsets of each router's ports
    port_router: np.ndarray  # int32[P]: owning router, -1 for NIC ports
    port_peer: np.ndarray  # int32[P]: port at the other end of the cable
    port_class: np.ndarray  # int16[P]: index into Network.link_classes
    port_node: np.ndarray  # int32[P]: node of a terminal/NIC port, -1 otherwise
    port_link: np.ndarray  # int32[P]: cable index of a router-router port, -1 otherwise
    node_port: np.ndarray  # int32[N]: router-side terminal port of each node
    nic_port: np.ndarray  # int32[N]: NIC port of each node
    n_router_ports: int

    @property
    def n_ports(self) -> int:
        return int(self.port_router.shape[0])


@dataclass(frozen=True)
class Network:
    """A built machine graph.

    ``router_group`` groups routers for hierarchical routing (a dragonfly group); topologies
    without groups leave each router in its own group.  ``coords`` holds per-router or per-node
    coordinate arrays that a topology wants to expose (e.g. torus coordinates).
    """

    n_routers: int
    node_router: np.ndarray
    link_src: np.ndarray
    link_dst: np.ndarray
    link_class: np.ndarray
    link_classes: tuple[str, ...]
    router_group: np.ndarray
    radix: np.ndarray
    coords: dict[str, np.ndarray] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def n_nodes(self) -> int:
        return int(self.node_router.shape[0])

    @property
    def n_links(self) -> int:
        return int(self.link_src.shape[0])

    @property
    def n_groups(self) -> int:
        return int(self.router_group.max()) + 1 if self.n_routers else 0

    @cached_property
    def node_group(self) -> np.ndarray:
        return self.router_group[self.node_router]

    @cached_property
    def ports(self) -> PortTable:
        return _build_ports(self)

    @cached_property
    def adjacency(self) -> sp.csr_matrix:
        """Router adjacency (symmetric, parallel cables collapsed to one edge)."""
        import scipy.sparse as sp

        n = self.n_routers
        data = np.ones(2 * self.n_links, dtype=np.int8)
        rows = np.concatenate([self.link_src, self.link_dst])
        cols = np.concatenate([self.link_dst, self.link_src])
        m = sp.csr_matrix((data, (rows, cols)), shape=(n, n))
        m.data[:] = 1
        return m

    def router_degree(self) -> np.ndarray:
        """Ports used per router: terminals plus cable ends (parallel cables count each)."""
        deg = np.bincount(self.node_router, minlength=self.n_routers)
        deg = deg + np.bincount(self.link_src, minlength=self.n_routers)
        deg = deg + np.bincount(self.link_dst, minlength=self.n_routers)
        return deg.astype(np.int64)

    def class_index(self, name: str) -> int:
        return self.link_classes.index(name)

    def validate(self) -> None:
        """Check the arrays' types, shapes and index ranges
        (:func:`network_problem`: a plugin may fill a network
        without :class:`NetworkBuilder`, and everything downstream indexes the arrays without
        bounds checks), then port counts within radix, no self-loops, and a connected router
        graph.

        A violation raises :class:`TopologyError` naming the array entry or the router.
        """
        why = network_problem(self)
        if why:
            raise TopologyError(f"the network is malformed: {why}")
        self.validate_graph()

    def validate_graph(self) -> None:
        """The checks of :meth:`validate` after the arrays' (which they assume): nodes and
        routers exist, port counts within radix, no self-loops, a connected router graph.
        For a caller that has already asked :func:`network_problem` (and words its answer
        itself), so that the arrays are not checked twice."""
        if self.n_routers == 0:
            raise TopologyError("the topology has no routers")
        if self.n_nodes == 0:
            raise TopologyError("the topology has no nodes")
        loops = np.nonzero(self.link_src == self.link_dst)[0]
        if loops.size:
            r = int(self.link_src[loops[0]])
            raise TopologyError(f"router {r} has a cable to itself")
        deg = self.router_degree()
        over = np.nonzero(deg > self.radix)[0]
        if over.size:
            r = int(over[0])
            raise TopologyError(
                f"router {r} uses {deg[r]} ports but its radix is {int(self.radix[r])}"
            )
        if self.n_routers > 1 and not self._connected():
            from scipy.sparse import csgraph

            ncomp, labels = csgraph.connected_components(self.adjacency, directed=False)
            if ncomp > 1:
                lonely = int(np.nonzero(labels != labels[0])[0][0])
                raise TopologyError(
                    f"the router graph is not connected: router {lonely} cannot reach router 0 "
                    f"({ncomp} components)"
                )

    def _connected(self) -> bool:
        """Every router reachable from router 0: a breadth-first search over the cables,
        a frontier at a time (NumPy; SciPy, 0.15 s to import, only names the components of
        a graph that is not connected)."""
        n = self.n_routers
        src = np.concatenate([self.link_src, self.link_dst]).astype(np.int64)
        dst = np.concatenate([self.link_dst, self.link_src]).astype(np.int64)
        order = np.argsort(src, kind="stable")
        dst = dst[order]
        start = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(src, minlength=n), out=start[1:])
        seen = np.zeros(n, dtype=bool)
        seen[0] = True
        frontier = np.array([0], dtype=np.int64)
        while frontier.size:
            counts = start[frontier + 1] - start[frontier]
            idx = np.repeat(start[frontier] - np.cumsum(counts) + counts, counts) + np.arange(
                int(counts.sum()))
            nxt = np.unique(dst[idx])
            frontier = nxt[~seen[nxt]]
            seen[frontier] = True
        return bool(seen.all())


class NetworkBuilder:
    """Incremental construction used by topology plugins.

    ``link_classes`` lists the cable classes the topology uses (the terminal class is added).
    """

    def __init__(self, link_classes: list[str] | tuple[str, ...]) -> None:
        classes = [c for c in link_classes if c != TERMINAL]
        self.link_classes: tuple[str, ...] = (TERMINAL, *classes)
        self._cls = {c: i for i, c in enumerate(self.link_classes)}
        self._router_group: list[int] = []
        self._radix: list[int] = []
        self._node_router: list[int] = []
        self._src: list[int] = []
        self._dst: list[int] = []
        self._lcls: list[int] = []

    @property
    def n_routers(self) -> int:
        return len(self._router_group)

    def add_routers(self, count: int, radix: int, group: int | None = None) -> range:
        """Add ``count`` routers of the given radix; returns their ids."""
        start = self.n_routers
        for i in range(count):
            self._router_group.append(start + i if group is None else group)
            self._radix.append(radix)
        return range(start, start + count)

    def attach_nodes(self, router: int, count: int) -> None:
        self._node_router.extend([router] * count)

    def _class_id(self, link_class: str) -> int:
        if link_class == TERMINAL:
            raise TopologyError("the terminal class is for node links; cables between routers "
                                "need a class of their own (e.g. 'local')")
        try:
            return self._cls[link_class]
        except KeyError:
            raise TopologyError(
                f"unknown link class {link_class!r}; declared: {list(self.link_classes)}"
            ) from None

    def add_link(self, a: int, b: int, link_class: str, count: int = 1) -> None:
        """Add ``count`` parallel full-duplex cables between routers ``a`` and ``b``."""
        c = self._class_id(link_class)
        for _ in range(count):
            self._src.append(a)
            self._dst.append(b)
            self._lcls.append(c)

    def add_links(self, src: np.ndarray, dst: np.ndarray, link_class: str) -> None:
        """Vectorised :meth:`add_link` for large generated topologies."""
        c = self._class_id(link_class)
        self._src.extend(np.asarray(src, dtype=np.int64).tolist())
        self._dst.extend(np.asarray(dst, dtype=np.int64).tolist())
        self._lcls.extend([c] * len(src))

    def build(self, *, group_routing: bool = False, coords: dict[str, np.ndarray] | None = None,
              info: dict[str, Any] | None = None) -> Network:
        """Freeze into a :class:`Network`.

        ``group_routing`` keeps the groups given to :meth:`add_routers` for hierarchical routing;
        otherwise every router is its own group.
        """
        n = self.n_routers
        group = np.asarray(self._router_group, dtype=np.int32)
        if not group_routing:
            group = np.arange(n, dtype=np.int32)
        else:
            # renumber groups densely in order of first appearance
            _, inv = np.unique(group, return_inverse=True)
            group = inv.astype(np.int32)
        net = Network(
            n_routers=n,
            node_router=np.asarray(self._node_router, dtype=np.int32),
            link_src=np.asarray(self._src, dtype=np.int32),
            link_dst=np.asarray(self._dst, dtype=np.int32),
            link_class=np.asarray(self._lcls, dtype=np.int16),
            link_classes=self.link_classes,
            router_group=group,
            radix=np.asarray(self._radix, dtype=np.int64),
            coords=dict(coords or {}),
            info=dict(info or {}),
        )
        for a, b in ((net.link_src, "src"), (net.link_dst, "dst")):
            if a.size and (a.min() < 0 or a.max() >= n):
                raise TopologyError(f"a cable {b} names a router outside 0..{n - 1}")
        if net.node_router.size and (net.node_router.min() < 0 or net.node_router.max() >= n):
            raise TopologyError(f"a node is attached to a router outside 0..{n - 1}")
        return net


def _build_ports(net: Network) -> PortTable:
    r = net.n_routers
    n = net.n_nodes
    L = net.n_links
    n_term = np.bincount(net.node_router, minlength=r)
    n_cab = np.bincount(net.link_src, minlength=r) + np.bincount(net.link_dst, minlength=r)
    start = np.zeros(r + 1, dtype=np.int64)
    np.cumsum(n_term + n_cab, out=start[1:])
    pr = int(start[-1])
    P = pr + n
    port_router = np.full(P, -1, dtype=np.int32)
    port_peer = np.full(P, -1, dtype=np.int32)
    port_class = np.zeros(P, dtype=np.int16)
    port_node = np.full(P, -1, dtype=np.int32)
    port_link = np.full(P, -1, dtype=np.int32)
    for rt in range(r):
        port_router[start[rt]:start[rt + 1]] = rt
    # terminal ports, nodes in order
    order = np.argsort(net.node_router, kind="stable")
    routers_sorted = net.node_router[order]
    first = np.searchsorted(routers_sorted, np.arange(r))
    rank = np.arange(n) - first[routers_sorted]
    node_port = np.empty(n, dtype=np.int64)
    node_port[order] = start[routers_sorted] + rank
    nic_port = pr + np.arange(n)
    port_node[node_port] = np.arange(n)
    port_node[nic_port] = np.arange(n)
    port_peer[node_port] = nic_port
    port_peer[nic_port] = node_port
    # cable ports, in cable order: src end then dst end
    ends = np.empty(2 * L, dtype=np.int64)
    ends[0::2] = net.link_src
    ends[1::2] = net.link_dst
    o = np.argsort(ends, kind="stable")
    e_sorted = ends[o]
    firstc = np.searchsorted(e_sorted, np.arange(r))
    rankc = np.arange(2 * L) - firstc[e_sorted]
    end_port = np.empty(2 * L, dtype=np.int64)
    end_port[o] = start[e_sorted] + n_term[e_sorted] + rankc
    sp_ = end_port[0::2]
    dp_ = end_port[1::2]
    port_peer[sp_] = dp_
    port_peer[dp_] = sp_
    port_class[sp_] = net.link_class
    port_class[dp_] = net.link_class
    port_link[sp_] = np.arange(L)
    port_link[dp_] = np.arange(L)
    return PortTable(
        router_port_start=start,
        port_router=port_router,
        port_peer=port_peer,
        port_class=port_class,
        port_node=port_node,
        port_link=port_link,
        node_port=node_port.astype(np.int32),
        nic_port=nic_port.astype(np.int32),
        n_router_ports=pr,
    )


# --------------------------------------------------------------------------- structure

# A Network built through NetworkBuilder is well formed by construction, but a plugin may
# also fill one directly (or return something else entirely).  Everything downstream (port
# numbering, route tables, the compiled loop) indexes these arrays without bounds checks, so a
# node on router 7 of a 4-router network, a cable of class 5 among 2 classes, or a group array
# one router short surfaced as a NumPy ValueError, an IndexError in the middle of the run, or
# a silently wrong result (cables counted as terminal links).  network_problem names the
# first such defect, vectorised (min/max over each array): a few milliseconds for 100,000
# routers.

_INT32_MAX = int(np.iinfo(np.int32).max)
_INT16_MAX = int(np.iinfo(np.int16).max)


def _integer(x: Any) -> bool:
    return isinstance(x, int | np.integer) and not isinstance(x, bool)


def _array_problem(name: str, a: Any, length: int, length_of: str, what: str) -> str | None:
    """Why ``a`` is not a 1-D NumPy integer array of ``length`` entries, or None."""
    if not isinstance(a, np.ndarray):
        return f"{name} must be a 1-D NumPy integer array ({what}), got {type(a).__name__}"
    if not np.issubdtype(a.dtype, np.integer):
        return f"{name} must be a 1-D NumPy integer array ({what}), got dtype {a.dtype}"
    if a.ndim != 1:
        return f"{name} must be a 1-D NumPy integer array ({what}), got shape {a.shape}"
    if a.shape[0] != length:
        return f"{name} has {a.shape[0]} entries but {length_of} is {length} ({what})"
    return None


def _range_problem(name: str, a: np.ndarray, lo: int, hi: int, what: str) -> str | None:
    """The first entry of ``a`` outside ``[lo, hi)`` (min/max first: no temporaries when
    every entry is in range), or None."""
    if a.size == 0 or (int(a.min()) >= lo and int(a.max()) < hi):
        return None
    i = int(np.flatnonzero((a < lo) | (a >= hi))[0])
    span = f"{lo}..{hi - 1}" if hi > lo else "none: there is no valid value"
    return f"{name}[{i}] = {int(a[i])} is outside {span} ({what})"


def _classes_problem(classes: Any) -> str | None:
    if not isinstance(classes, tuple | list) or not all(isinstance(c, str) for c in classes):
        return f"link_classes must be a tuple of class names, got {classes!r}"
    if not classes or classes[0] != TERMINAL:
        return (f"link_classes must start with {TERMINAL!r} (terminal and NIC ports are "
                f"class 0), got {tuple(classes)!r}")
    if len(set(classes)) != len(classes):
        return f"link_classes names a class twice: {tuple(classes)!r}"
    if len(classes) > _INT16_MAX:
        return f"link_classes has {len(classes)} classes, at most {_INT16_MAX}"
    return None


def network_problem(net: Network) -> str | None:
    """The first structural defect of ``net`` (types, shapes, dtypes, index ranges), or None.

    What a valid network is: ``n_routers`` an integer in ``[0, 2**31)``; ``link_classes`` a
    tuple of distinct names starting with ``'terminal'``; 1-D integer arrays ``radix`` and
    ``router_group`` of ``n_routers`` entries, ``node_router`` of any length, and
    ``link_src``, ``link_dst``, ``link_class`` of one length (the cables); routers in
    ``[0, n_routers)``, groups in ``[0, n_routers)`` (the route tables get one column per
    group), cable classes in ``[1, len(link_classes))`` (class 0 is the terminal links'),
    radixes ``>= 0``; ``coords`` and ``info`` dicts."""
    R = net.n_routers
    if not _integer(R) or not 0 <= R <= _INT32_MAX:
        return f"n_routers = {R!r} must be an integer in 0..{_INT32_MAX}"
    why = _classes_problem(net.link_classes)
    if why:
        return why
    L = net.link_src.shape[0] if isinstance(net.link_src, np.ndarray) and net.link_src.ndim else 0
    N = net.node_router.shape[0] if isinstance(net.node_router, np.ndarray) else 0
    arrays = (("node_router", net.node_router, N, "its length", "the router of each node"),
              ("link_src", net.link_src, L, "its length", "one end of each cable"),
              ("link_dst", net.link_dst, L, "the length of link_src", "the other end of "
               "each cable"),
              ("link_class", net.link_class, L, "the length of link_src", "the class of "
               "each cable"),
              ("router_group", net.router_group, R, "n_routers", "the group of each router"),
              ("radix", net.radix, R, "n_routers", "the ports of each router"))
    for name, a, n, n_of, what in arrays:
        why = _array_problem(name, a, n, n_of, what)
        if why:
            return why
    C = len(net.link_classes)
    if net.link_class.size and int(net.link_class.min()) == 0:
        i = int(np.flatnonzero(net.link_class == 0)[0])
        return (f"link_class[{i}] = 0 is the {TERMINAL!r} class, which is for node links; "
                "cables between routers need a class of their own")
    for name, a, lo, hi, what in (
            ("node_router", net.node_router, 0, R, f"the router of each node; n_routers = {R}"),
            ("link_src", net.link_src, 0, R, f"a cable's router; n_routers = {R}"),
            ("link_dst", net.link_dst, 0, R, f"a cable's router; n_routers = {R}"),
            ("link_class", net.link_class, 1, C, f"cable classes of link_classes "
             f"{tuple(net.link_classes)!r}"),
            ("router_group", net.router_group, 0, R, "the group of each router; at most one "
             "group per router"),
            ("radix", net.radix, 0, _INT32_MAX + 1, "ports per router")):
        why = _range_problem(name, a, lo, hi, what)
        if why:
            return why
    for name, d in (("coords", net.coords), ("info", net.info)):
        if not isinstance(d, dict):
            return f"{name} must be a dict, got {type(d).__name__}"
    return None
