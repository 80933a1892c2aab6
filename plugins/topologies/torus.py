"""Topologies ``torus`` (k-ary n-cube / mesh, one length per dimension) and ``hypercube``.

``torus`` parameters:

* ``dims``: length of each dimension, e.g. ``[8, 8, 8]`` (Blue Gene/P midplane) or
  ``[8, 4, 4, 4, 2]`` (Blue Gene/Q rack); ``prod(dims)`` routers;
* ``mesh``: ``true`` drops the wrap-around links (a mesh); default ``false`` (a torus);
* ``parallel``: parallel cables per direction, one number for every dimension or one per
  dimension (e.g. ``4`` for the many-node paper's 5x5x4 torus; ``[1, 1, 1, 1, 2]`` to model the
  two E links of Blue Gene/Q that join the same pair of nodes);
* ``nodes_per_router``: nodes attached to each router (default 1).

Wiring: router ``r`` has coordinates ``c_i = (r // s_i) % k_i`` with ``s_0 = 1`` and
``s_(i+1) = s_i * k_i`` (dimension 0 varies fastest).  In each dimension of length ``k``:

* ``k >= 3``: ``r`` is cabled to its ``+1`` and ``-1`` neighbours (``parallel`` cables each);
  on a mesh the ends (``c = 0`` and ``c = k - 1``) lack the wrap cable;
* ``k = 2``: the ``+1`` and ``-1`` neighbours coincide, so there is *one* set of ``parallel``
  cables per pair (not two); this is what makes ``hypercube`` a 2-ary n-cube;
* ``k = 1``: no cable.

Radix = ``nodes_per_router`` + sum over dimensions of ``2 * parallel`` (``k >= 3``),
``parallel`` (``k = 2``) or 0 (``k = 1``): ``2n * parallel + nodes`` when every ``k >= 3``.
One link class, ``torus`` (``hypercube`` for the hypercube).  Nodes are router-major.
``coords["coord"]`` is the ``R x n`` coordinate matrix.

``hypercube`` parameters: ``n`` dimensions (``2^n`` routers, ``n * 2^(n-1)`` links, degree
``n``), ``parallel``, ``nodes_per_router``.

Minimal routing (both): dimension-order routing (dimension 0 first), shortest way round each
ring.  At router ``r`` (coordinate ``c`` in the dimension ``i`` being corrected) a packet for
``d`` has ``h = d // (s_i * k_i)``, the index of ``d``'s digits above dimension ``i`` (0 in the
last dimension), and ``p`` parallel cables per direction:

* an exact half-way distance on an even ring (``k/2``) is a tie, broken towards ``+`` when
  ``(c mod k/2) + h // p`` is even, else ``-``.  The ``+`` link leaving coordinate ``x`` carries
  the tie routes entering the ring at the ``k/2`` coordinates ``x - k/2 + 1 .. x``, so a rule
  that is ``k/2``-periodic in ``c`` gives every link the same number of them, and alternating
  with ``h // p`` sends half of each entry's tie traffic each way (``h // p`` rather than ``h``,
  which also picks the lane, so that both halves cover every lane).  Under uniform traffic every
  link of one dimension then carries the same load when ``k/2`` is even or the higher digits
  take a multiple of ``2p`` values (8x8x8 and the four rings of 8x4x4x4x2: max/mean 1.0 per
  dimension; the former rule, "away from the wrap link", put every tie route of ``c < k/2`` on
  the ``+`` links and none of ``c >= k/2``: 1.25 on rings of 8, 1.5 on rings of 4);
* the lane (parallel cables numbered in port order) is ``(d_i + h) mod p``, ``d_i`` the target
  coordinate: for each ``d_i`` the higher digits of the destinations crossing a link cycle
  through all lanes.  (``d mod p``, used before, is constant when the strides of the remaining
  dimensions are multiples of ``p``, e.g. on a hypercube, where it left a lane idle.)

Routes are per (router, destination router), so in the *last* dimension a link carries only the
flows towards the at most ``k/2`` destinations ahead of it on its ring, each on one lane:
parallel cables there cannot share the load evenly (5x5x4 with 4 lanes: busiest lane 4x the
mean of its dimension; the E links of 8x4x4x4x2: 2x).  Deadlock freedom: ``VC_DATELINE`` with the
dateline on the wrap-around cable of each ring direction (the ``+`` port at ``c = k - 1`` and the
``-`` port at ``c = 0``, for ``k >= 3``): a packet travels on VC 0 in a dimension until it takes
the wrap cable, then on VC 1; the VC resets when it changes dimension.  2 VCs on a torus, 1 on a
mesh, on a hypercube and when every dimension has length <= 2.
"""

from __future__ import annotations

from math import prod
from typing import Annotated, ClassVar

import numpy as np
from pydantic import Field, model_validator

from federation import (
    LinkDefaults,
    Network,
    NetworkBuilder,
    Params,
    RouteTables,
    Topology,
    hookimpl,
)
from federation.errors import TopologyError
from federation.plugin.components import VC_DATELINE, TopologySize

PosInt = Annotated[int, Field(ge=1)]


class TorusParams(Params):
    dims: list[PosInt] = Field(
        min_length=1, description="length of each dimension, e.g. [8, 4, 4, 4, 2]")
    mesh: bool = Field(False, description="no wrap-around links (a mesh instead of a torus)")
    parallel: PosInt | list[PosInt] = Field(
        1, description="parallel cables per direction: one number or one per dimension")
    nodes_per_router: int = Field(1, ge=1, description="nodes attached to each router")

    @model_validator(mode="after")
    def _check(self) -> TorusParams:
        if isinstance(self.parallel, list) and len(self.parallel) != len(self.dims):
            raise ValueError(
                f"parallel has {len(self.parallel)} entries but dims has {len(self.dims)}; give "
                "one number for all dimensions or one per dimension")
        if prod(self.dims) > 2**20:
            raise ValueError(f"{prod(self.dims)} routers is more than this library supports "
                             "(2^20); routing tables are R x R")
        return self

    @property
    def lanes(self) -> list[int]:
        if isinstance(self.parallel, list):
            return list(self.parallel)
        return [self.parallel] * len(self.dims)


class HypercubeParams(Params):
    n: int = Field(ge=1, le=20, description="dimensions: 2^n routers, degree n")
    parallel: int = Field(1, ge=1, description="parallel cables per neighbour pair")
    nodes_per_router: int = Field(1, ge=1, description="nodes attached to each router")


def torus_coords(dims: list[int]) -> np.ndarray:
    """``R x n`` coordinates, dimension 0 varying fastest."""
    r = np.arange(prod(dims), dtype=np.int64)
    strides = np.cumprod([1, *dims[:-1]])
    return ((r[:, None] // strides[None, :]) % np.asarray(dims)[None, :]).astype(np.int32)


def torus_size(dims: list[int], mesh: bool, lanes: list[int], nodes: int) -> TopologySize:
    """What :func:`build_torus` builds, from the dimensions alone (O(len(dims))).

    Per dimension of length ``k`` with ``p`` lanes: a ring of ``k`` cables (torus, ``k >= 3``),
    a path of ``k - 1`` cables (mesh), one cable per pair (``k = 2``) or none (``k = 1``), for
    each of the ``R / k`` rings, times ``p``.  Every router is its own routing group.
    """
    R = prod(dims)
    cables = 0
    for k, p in zip(dims, lanes, strict=True):
        per_ring = 0 if k == 1 else 1 if k == 2 else k - 1 if mesh else k
        cables += R // k * per_ring * p
    return TopologySize(routers=R, nodes=R * nodes, cables=cables, groups=R)


def build_torus(dims: list[int], mesh: bool, lanes: list[int], nodes: int,
                link_class: str, info: dict) -> Network:
    R = prod(dims)
    coord = torus_coords(dims)
    strides = np.cumprod([1, *dims[:-1]])
    ports = sum((2 * p if k >= 3 else p if k == 2 else 0) for k, p in zip(dims, lanes, strict=True))
    b = NetworkBuilder([link_class])
    b.add_routers(R, radix=ports + nodes)
    for r in range(R):
        b.attach_nodes(r, nodes)
    rid = np.arange(R, dtype=np.int64)
    for i, (k, p) in enumerate(zip(dims, lanes, strict=True)):
        c = coord[:, i]
        if k == 1:
            continue
        if k == 2:
            src = rid[c == 0]
        elif mesh:
            src = rid[c < k - 1]
        else:
            src = rid
        dst = src + np.where(c[src] == k - 1, -(k - 1), 1) * strides[i]
        b.add_links(np.repeat(src, p), np.repeat(dst, p), link_class)
    return b.build(coords={"coord": coord}, info=info)


def dor_routes(network: Network, dims: list[int], mesh: bool, lanes: list[int]) -> RouteTables:
    """Dimension-order tables with dateline VCs (see the module docstring for the rules)."""
    R = network.n_routers
    n = len(dims)
    pt = network.ports
    coord = network.coords["coord"].astype(np.int64)
    k = np.asarray(dims, dtype=np.int64)
    rp = pt.n_router_ports
    cable = np.nonzero(pt.port_link[:rp] >= 0)[0]
    o = pt.port_router[cable].astype(np.int64)
    q = pt.port_router[pt.port_peer[cable]].astype(np.int64)
    differ = coord[o] != coord[q]
    if cable.size and not (differ.sum(axis=1) == 1).all():
        raise TopologyError("a torus cable joins routers differing in more than one coordinate")
    dim = np.argmax(differ, axis=1) if cable.size else np.zeros(0, np.int64)
    co = coord[o, dim]
    cq = coord[q, dim]
    kd = k[dim]
    plus = (cq == (co + 1) % kd) | (kd == 2)
    direction = np.where(plus, 0, 1)
    pmax = max(lanes)
    # lane = rank among the ports of the same (router, dim, direction), in port order
    key = (o * n + dim) * 2 + direction
    order = np.lexsort((cable, key))
    ks = key[order]
    first = np.searchsorted(ks, ks, side="left")
    lane = np.empty(cable.size, dtype=np.int64)
    lane[order] = np.arange(cable.size) - first
    port_of = np.full((R, n, 2, pmax), -1, dtype=np.int32)
    port_of[o, dim, direction, lane] = cable
    # dateline ports: the wrap-around cable of each ring direction (k >= 3, torus only)
    wrap = (~plus & (co == 0) | plus & (co == kd - 1)) & (kd >= 3) & (not mesh)
    P = pt.n_ports
    port_dim = np.full(P, -1, dtype=np.int16)
    port_dim[cable] = dim
    dateline = np.zeros(P, dtype=np.uint8)
    dateline[cable[wrap]] = 1

    lanes_a = np.asarray(lanes, dtype=np.int64)
    above = np.cumprod(k)  # above[i]: stride of dimension i + 1 (d // above[i]: higher digits)
    gnext = np.full((R, R), -1, dtype=np.int32)
    dest = np.arange(R, dtype=np.int64)
    cd = coord  # R x n
    chunk = max(1, 2**22 // max(1, R * n))
    for r0 in range(0, R, chunk):
        r1 = min(R, r0 + chunk)
        cr = coord[r0:r1]  # B x n
        delta = (cd[None, :, :] - cr[:, None, :]) % k  # B x R x n, forward distance
        nz = delta != 0
        has = nz.any(axis=2)
        i = np.argmax(nz, axis=2)  # first differing dimension
        f = np.take_along_axis(delta, i[:, :, None], axis=2)[:, :, 0]
        ki = k[i]
        ci = np.take_along_axis(np.broadcast_to(cr[:, None, :], delta.shape), i[:, :, None],
                                axis=2)[:, :, 0]
        pi = lanes_a[i]
        hi = dest[None, :] // above[i]  # the destination's digits above dimension i
        if mesh:
            go_plus = ci + f < ki  # destination coordinate is larger (no wrap)
        else:
            # half-way tie: + when (c mod k/2) + hi // p is even (module docstring)
            tie_plus = ((ci % np.maximum(ki // 2, 1) + hi // pi) % 2) == 0
            go_plus = (2 * f < ki) | ((2 * f == ki) & tie_plus)
        go_plus |= ki == 2
        dirn = np.where(go_plus, 0, 1)
        ln = ((ci + f) % ki + hi) % pi  # (destination coordinate + higher digits) mod p
        rows = np.arange(r0, r1)[:, None]
        port = port_of[np.broadcast_to(rows, i.shape), i, dirn, ln]
        gnext[r0:r1] = np.where(has, port, -1)
    if ((gnext < 0) & ~np.eye(R, dtype=bool)).any():
        raise TopologyError("dimension-order routing found no port for some router pair")
    torus_dims = [d for d in dims if d >= 3]
    vcs = 2 if torus_dims and not mesh else 1
    kind = "mesh" if mesh else "torus"
    return RouteTables(
        gnext=gnext,
        lnext=np.full((R, 1), -1, dtype=np.int32),
        router_group=np.arange(R, dtype=np.int32),
        router_local=np.zeros(R, dtype=np.int32),
        vcs_required=vcs,
        vc_mode=VC_DATELINE,
        port_dim=port_dim,
        port_dateline=dateline,
        description=(f"dimension-order on a {'x'.join(map(str, dims))} {kind}, "
                     + ("dateline VCs (2)" if vcs == 2 else "1 VC")),
    )


class Torus(Topology):
    """k-ary n-cube (or mesh) with a length per dimension; dimension-order, dateline VCs."""

    name = "torus"
    Params = TorusParams
    link_defaults: ClassVar[dict[str, LinkDefaults]] = {
        "terminal": LinkDefaults(),
        "torus": LinkDefaults(),
    }
    params: TorusParams

    def build(self) -> Network:
        p = self.params
        dims = list(p.dims)
        mesh_diam = sum(k - 1 for k in dims)
        torus_diam = sum(k // 2 for k in dims)
        info = {"dims": dims, "mesh": p.mesh, "parallel": p.lanes,
                "nodes_per_router": p.nodes_per_router,
                "diameter": mesh_diam if p.mesh else torus_diam}
        return build_torus(dims, p.mesh, p.lanes, p.nodes_per_router, "torus", info)

    def size(self) -> TopologySize:
        """Counts from ``dims``, ``mesh`` and ``parallel`` (see :func:`torus_size`)."""
        p = self.params
        return torus_size(list(p.dims), p.mesh, p.lanes, p.nodes_per_router)

    def minimal_routes(self, network: Network) -> RouteTables:
        return dor_routes(network, list(self.params.dims), self.params.mesh, self.params.lanes)


class Hypercube(Topology):
    """Binary n-cube (2^n routers, degree n); dimension-order (e-cube) routing, 1 VC."""

    name = "hypercube"
    Params = HypercubeParams
    link_defaults: ClassVar[dict[str, LinkDefaults]] = {
        "terminal": LinkDefaults(),
        "hypercube": LinkDefaults(),
    }
    params: HypercubeParams

    def build(self) -> Network:
        p = self.params
        info = {"n": p.n, "parallel": p.parallel, "nodes_per_router": p.nodes_per_router,
                "diameter": p.n}
        return build_torus([2] * p.n, False, [p.parallel] * p.n, p.nodes_per_router,
                           "hypercube", info)

    def size(self) -> TopologySize:
        """``2^n`` routers and ``n * 2^(n-1) * parallel`` cables (a 2-ary n-cube)."""
        p = self.params
        return torus_size([2] * p.n, False, [p.parallel] * p.n, p.nodes_per_router)

    def minimal_routes(self, network: Network) -> RouteTables:
        p = self.params
        return dor_routes(network, [2] * p.n, False, [p.parallel] * p.n)


@hookimpl
def federation_register_topologies(register) -> None:  # noqa: ANN001
    register(Torus)
    register(Hypercube)
