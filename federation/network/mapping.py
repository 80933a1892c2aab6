"""Rank mapping on a built network: the minimal paths between a job's nodes, the hop and
contention figures of its messages on them, and the two-opt search over rank placements.

The circulant thesis (Cui, SOKENDAI 2024, section 3.3, after Croes 1958) places ranks by
*two-opt*: start from an order, pick two ranks at random, swap their nodes, and keep the swap
when the objective of the job's messages drops.  The objective is computed from the job's own
messages (their endpoints, each counted once per message) and the routing's minimal paths, so
it works for any communication pattern:

* ``hops``: the total router-to-router hops of the messages on their minimal paths;
* ``contention``: the pairs of messages whose minimal paths share a (directed) cable, the
  thesis' "total number of possible contentions of the point-to-point communications on a
  link" read as every two messages on one link (it gives no counting rule).

Each swap recomputes only the messages of the two ranks swapped (*incremental cost*), in a
compiled loop (:mod:`federation.network.mapping_kernels`, imported when a search runs, so that
importing this module does not import numba), so 200,000 iterations on 512 ranks take well
under a second; the tests check the incremental figures against a full recomputation after
every accepted swap.

Units and slots: a job's *units* are its local nodes as its workload numbers them (rank
``r`` on local node ``r`` unless the workload says otherwise); its *slots* are its machine
nodes in the starting order.  A mapping ``pos`` puts unit ``u`` on slot ``pos[u]``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from federation.errors import TopologyError
from federation.network.graph import Network
from federation.network.routes import table_hops
from federation.network.tables import RouteTables

__all__ = ["Edges", "PairPaths", "contention_of", "edges_of", "hops_of", "router_paths",
           "sharing", "two_opt", "walk"]


@dataclass(frozen=True)
class PairPaths:
    """Minimal paths between every ordered pair of ``routers`` (``k`` distinct): pair
    ``(a, b)`` is ``a * k + b``; its cable ports are ``ports[first[p]:first[p + 1]]``."""

    routers: np.ndarray  #: int64[k]
    first: np.ndarray  #: int64[k * k + 1]
    ports: np.ndarray  #: int32[...] global port ids of cables, in path order

    @property
    def hops(self) -> np.ndarray:
        """int32[k, k]: router-to-router hops of each pair's path."""
        k = self.routers.shape[0]
        return np.diff(self.first).astype(np.int32).reshape(k, k)


#: most router pairs whose paths one mapping holds (about 12 bytes per pair and hop)
MAX_PAIRS = 1 << 26


def router_paths(network: Network, tables: RouteTables, routers: np.ndarray) -> PairPaths:
    """The paths of the minimal ``tables`` between every ordered pair of ``routers``."""
    routers = np.asarray(routers, dtype=np.int64)
    k = routers.shape[0]
    if k * k > MAX_PAIRS:
        raise TopologyError(f"the paths between {k} routers are {k * k} pairs, more than "
                            f"{MAX_PAIRS} this analysis holds")
    first, ports = walk(network, tables, np.repeat(routers, k), np.tile(routers, k))
    return PairPaths(routers, first, ports)


def walk(network: Network, tables: RouteTables, src: np.ndarray,
         dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The cable ports of the minimal ``tables``' path from router ``src[i]`` to ``dst[i]``
    for every ``i`` (CSR: ``ports[first[i]:first[i + 1]]``, in path order), walked hop by hop
    for all pairs at once (:func:`~federation.network.routes.table_hops`)."""
    n = src.shape[0]
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    going = np.nonzero(src != dst)[0]
    rec_pair: list[np.ndarray] = []
    rec_port: list[np.ndarray] = []
    for port, pair in table_hops(network, tables, src[going], dst[going]):
        rec_pair.append(going[pair].astype(np.int32) if n < 2**31 else going[pair])
        rec_port.append(port.astype(np.int32))
    pairs = np.concatenate(rec_pair) if rec_pair else np.zeros(0, np.int64)
    ports = np.concatenate(rec_port) if rec_port else np.zeros(0, np.int32)
    order = np.argsort(pairs, kind="stable")  # hops were appended in path order
    first = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(pairs, minlength=n), out=first[1:])
    return first, ports[order]


@dataclass(frozen=True)
class Edges:
    """A job's messages between its units, aggregated: ``count`` messages from ``src`` to
    ``dst`` (units); ``inc_first``/``inc_edge``: the edges of each unit (CSR)."""

    src: np.ndarray  #: int64[E]
    dst: np.ndarray  #: int64[E]
    count: np.ndarray  #: int64[E]
    inc_first: np.ndarray  #: int64[U + 1]
    inc_edge: np.ndarray  #: int64[...]

    @property
    def messages(self) -> int:
        return int(self.count.sum())


def edges_of(src: np.ndarray, dst: np.ndarray, units: int) -> Edges:
    """Aggregate messages (``src[i]`` to ``dst[i]``, units) into edges; a message from a unit
    to itself goes nowhere and is left out."""
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    keep = src != dst
    key, count = np.unique(src[keep] * units + dst[keep], return_counts=True)
    s, d = key // units, key % units
    ends = np.concatenate([s, d])
    eid = np.concatenate([np.arange(key.shape[0]), np.arange(key.shape[0])])
    order = np.argsort(ends, kind="stable")
    first = np.zeros(units + 1, dtype=np.int64)
    np.cumsum(np.bincount(ends, minlength=units), out=first[1:])
    return Edges(s, d, count.astype(np.int64), first, eid[order].astype(np.int64))


def hops_of(edges: Edges, pos: np.ndarray, slot_pair: np.ndarray, hops: np.ndarray) -> int:
    """Total hops of the messages with unit ``u`` on slot ``pos[u]`` (``slot_pair[s]``: the
    router index of slot ``s`` in ``hops``)."""
    a = slot_pair[pos[edges.src]]
    b = slot_pair[pos[edges.dst]]
    return int((hops[a, b].astype(np.int64) * edges.count).sum())


def contention_of(edges: Edges, pos: np.ndarray, slot_pair: np.ndarray,
                  paths: PairPaths) -> tuple[int, int]:
    """The pairs of messages that share a cable, and the busiest cable's message count."""
    k = paths.routers.shape[0]
    p = slot_pair[pos[edges.src]] * k + slot_pair[pos[edges.dst]]
    return sharing(paths, p, edges.count)


def sharing(paths: PairPaths, pair: np.ndarray, count: np.ndarray) -> tuple[int, int]:
    """``count[i]`` messages on the path of router pair ``pair[i]`` each: the pairs of
    messages on each cable summed over the cables (a pair sharing k cables counts k times),
    and the busiest cable's message count."""
    lens = paths.first[pair + 1] - paths.first[pair]
    idx = np.repeat(paths.first[pair], lens) + (np.arange(int(lens.sum()))
                                                - np.repeat(np.cumsum(lens) - lens, lens))
    ports = paths.ports[idx]
    if ports.size == 0:
        return 0, 0
    _, which = np.unique(ports, return_inverse=True)
    n = np.bincount(which, weights=np.repeat(count, lens)).astype(np.int64)
    return int((n * (n - 1) // 2).sum()), int(n.max())


@dataclass(frozen=True)
class TwoOptResult:
    pos: np.ndarray  #: int64[U]: unit u's slot after the search
    before: int  #: the objective at the start
    after: int  #: and at the end
    accepted: int  #: swaps kept


#: random pairs drawn at a time (16 MiB)
PAIR_CHUNK = 1 << 20


def two_opt(edges: Edges, pos: np.ndarray, slot_pair: np.ndarray, paths: PairPaths,
            objective: str, iterations: int, rng: np.random.Generator) -> TwoOptResult:
    """Two-opt from the mapping ``pos`` (unit to slot; changed in place and returned): each
    iteration draws two distinct units and keeps their swap when ``objective`` (``hops`` or
    ``contention``) strictly drops."""
    from federation.network.mapping_kernels import two_opt_contention, two_opt_hops

    pos = np.ascontiguousarray(pos, dtype=np.int64)
    units = pos.shape[0]
    slot_pair = np.ascontiguousarray(slot_pair, dtype=np.int64)
    args = (edges.src, edges.dst, edges.count, edges.inc_first, edges.inc_edge, slot_pair)
    if objective == "hops":
        hops = paths.hops.astype(np.int64)
        before = hops_of(edges, pos, slot_pair, hops)
    else:
        k = paths.routers.shape[0]
        before = contention_of(edges, pos, slot_pair, paths)[0]
        load = np.zeros(int(paths.ports.max(initial=0)) + 1, dtype=np.int64)
        p = slot_pair[pos[edges.src]] * k + slot_pair[pos[edges.dst]]
        lens = paths.first[p + 1] - paths.first[p]
        idx = np.repeat(paths.first[p], lens) + (
            np.arange(int(lens.sum())) - np.repeat(np.cumsum(lens) - lens, lens))
        np.add.at(load, paths.ports[idx], np.repeat(edges.count, lens))
    change, accepted = 0, 0
    left = iterations if units >= 2 else 0
    while left > 0:
        n = min(left, PAIR_CHUNK)
        left -= n
        u = rng.integers(0, units, size=n)
        v = rng.integers(0, units - 1, size=n)
        v = v + (v >= u)
        pairs = np.ascontiguousarray(np.stack([u, v], axis=1), dtype=np.int64)
        if objective == "hops":
            d, a = two_opt_hops(pos, pairs, *args, hops)
        else:
            d, a = two_opt_contention(pos, pairs, *args, k, paths.first, paths.ports, load)
        change += int(d)
        accepted += int(a)
    return TwoOptResult(pos, int(before), int(before + change), accepted)
