"""Checks of the route tables a routing hands over, before the compiled loop reads them.

The kernel indexes ``gnext``, ``lnext``, ``router_group``, ``router_local`` and the per-port
VC arrays without bounds checks (that is part of why it is fast).  Tables come from plugins --
a routing's :meth:`~federation.plugin.components.Routing.tables`, or a topology's
:meth:`~federation.plugin.components.Topology.minimal_routes` behind the built-in routings -- so an
out-of-range port, a table of the wrong shape, or a next hop on another router's port would
crash the interpreter, teleport packets between routers, or surface much later as a
misleading "needed a VC beyond router.vcs" message.  :func:`check_route_tables` refuses such
tables with one :class:`~federation.errors.RoutingError` naming the routing, the plugin, the
table and its first bad entry.

What a valid table set is (``R`` routers, ``P`` ports, see :mod:`federation.network`):

* ``gnext`` ``(R, G)`` and ``lnext`` ``(R, L)``: integer arrays whose entries in row ``r`` are
  -1 (no route) or a *cable* port of router ``r`` (terminal ports are the engine's to use:
  it delivers to a node through ``node_port`` when the packet reached the node's router);
* ``router_group`` and ``router_local``: integer ``(R,)`` arrays with values in ``[0, G)`` and
  ``[0, L)``; the routers that carry nodes (the only destinations) have distinct
  ``(group, local)`` pairs, since ``lnext[r, local]`` can lead to one of them only;
* ``port_vc_bump`` and ``port_dateline``: ``(P,)`` arrays of 0/1 (or bool); ``port_dim``:
  ``(P,)`` integers within int32; each may be ``None``;
* ``vc_mode`` one of the engine's VC rules; ``vcs_required >= 1``; ``phase_vc_offset`` in
  ``[0, vcs_required)``; ``adaptive_bias`` an integer within int64.

Entry scans run compiled, without temporaries: an 8,192-router shortest-path ``gnext`` has
67 million entries.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from federation.errors import ConfigError, RoutingError
from federation.network import Network
from federation.network.checks import RouteWalk, route_walk
from federation.pipeline.points import builtin, plugin_of
from federation.plugin.components import (
    VC_COUNTER,
    VC_DATELINE,
    RouteTables,
    RoutingProgram,
    TablePlan,
)

if TYPE_CHECKING:
    from federation.pipeline.points import ResolvedPoint

_INT32 = np.iinfo(np.int32)
_VC_RULES = {VC_COUNTER: "VC_COUNTER", VC_DATELINE: "VC_DATELINE"}


def _first_bad_next_hop(table: np.ndarray, port_router: np.ndarray,
                        port_link: np.ndarray) -> int:
    """Row-major index of the first entry of ``table`` that is neither -1 nor a cable port of
    its row's router; -1 when every entry is valid.  Vectorised a block of rows at a time, so
    that an 8,192-router table (64 M entries) needs no table-sized temporaries (and a run
    that loads its compiled loop need not import numba for this check)."""
    rows, cols = table.shape
    n_ports = port_router.shape[0]
    step = max(1, (1 << 20) // max(cols, 1))
    for r0 in range(0, rows, step):
        block = table[r0:r0 + step].astype(np.int64, copy=False)
        inside = (block >= 0) & (block < n_ports)
        p = np.where(inside, block, 0)
        owner = np.arange(r0, r0 + block.shape[0])[:, None]
        ok = (block == -1) | (inside & (port_router[p] == owner) & (port_link[p] >= 0))
        bad = np.flatnonzero(~ok)
        if bad.size:
            return r0 * cols + int(bad[0])
    return -1


def _integer_array(name: str, a: Any, shape: tuple[int | None, ...], what: str) -> str | None:
    """Why ``a`` is not an integer array of ``shape`` (``None`` = any length), or None."""
    if not isinstance(a, np.ndarray):
        return f"{name} must be a NumPy integer array ({what}), got {type(a).__name__}"
    if not np.issubdtype(a.dtype, np.integer):
        return f"{name} must be a NumPy integer array ({what}), got dtype {a.dtype}"
    if a.ndim != len(shape) or any(n is not None and n != m
                                   for n, m in zip(shape, a.shape, strict=True)):
        want = ", ".join("any" if n is None else str(n) for n in shape)
        if len(shape) == 1:
            want += ","
        return f"{name} has shape {a.shape}, expected ({want}) ({what})"
    return None


def _explain_next_hop(network: Network, name: str, table: np.ndarray, flat: int) -> str:
    pt = network.ports
    r, c = divmod(flat, table.shape[1])
    p = int(table[r, c])
    head = f"{name}[{r}, {c}] = {p}"
    rule = (f"each entry of row {r} must be one of router {r}'s cable ports, or -1 for no "
            "route")
    if p < -1:
        return f"{head} is negative; {rule}"
    if p >= pt.n_ports:
        return f"{head} is not a port (the network has ports 0..{pt.n_ports - 1}); {rule}"
    owner = int(pt.port_router[p])
    if owner < 0:
        return f"{head} is node {int(pt.port_node[p])}'s NIC port; {rule}"
    if owner != r:
        return f"{head} is a port of router {owner}, not of router {r}; {rule}"
    return (f"{head} is router {r}'s terminal port to node {int(pt.port_node[p])}; next hops "
            "must be cable ports (the engine delivers to a node on its own router itself)")


def _next_hops(network: Network, name: str, table: np.ndarray) -> str | None:
    pt = network.ports
    bad = int(_first_bad_next_hop(table, pt.port_router.astype(np.int32, copy=False),
                                  pt.port_link.astype(np.int32, copy=False)))
    return None if bad < 0 else _explain_next_hop(network, name, table, bad)


def _in_range(name: str, a: np.ndarray, lo: int, hi: int, what: str) -> str | None:
    """First value of ``a`` outside ``[lo, hi)``."""
    out = np.nonzero((a < lo) | (a >= hi))[0]
    if out.size:
        i = int(out[0])
        return f"{name}[{i}] = {int(a[i])} is outside [{lo}, {hi}) ({what})"
    return None


def _flags(name: str, a: Any, n_ports: int) -> str | None:
    if a is None:
        return None
    if isinstance(a, np.ndarray) and a.dtype == np.bool_:
        a = a.view(np.uint8)
    why = _integer_array(name, a, (n_ports,), "one 0/1 flag per port")
    if why is None:
        why = _in_range(name, a, 0, 2, "0 or 1 per port")
    return why


def route_table_problem(tables: Any, network: Network) -> str | None:
    """The first problem of ``tables`` for ``network`` (see the module docstring), or None."""
    if not isinstance(tables, RouteTables):
        return f"tables() returned {type(tables).__name__}, not federation.RouteTables"
    R = network.n_routers
    P = network.ports.n_ports
    t = tables
    for name, a, shape, what in (
            ("gnext", t.gnext, (R, None), "next port per (router, group)"),
            ("lnext", t.lnext, (R, None), "next port per (router, local index)"),
            ("router_group", t.router_group, (R,), "group per router"),
            ("router_local", t.router_local, (R,), "index of each router in its group")):
        why = _integer_array(name, a, shape, what)
        if why:
            return why
    G, L = t.gnext.shape[1], t.lnext.shape[1]
    why = (_in_range("router_group", t.router_group, 0, G, f"gnext has {G} group columns")
           or _in_range("router_local", t.router_local, 0, L, f"lnext has {L} columns")
           or _next_hops(network, "gnext", t.gnext)
           or _next_hops(network, "lnext", t.lnext))
    if why:
        return why
    carriers = np.unique(network.node_router)
    key = t.router_group[carriers].astype(np.int64) * L + t.router_local[carriers]
    order = np.argsort(key, kind="stable")
    same = np.nonzero(np.diff(key[order]) == 0)[0]
    if same.size:
        a, b = sorted(int(carriers[order[i]]) for i in (same[0], same[0] + 1))
        return (f"routers {a} and {b} both carry nodes and share router_group "
                f"{int(t.router_group[a])} and router_local {int(t.router_local[a])}; "
                "lnext can lead to only one of them")
    why = (_flags("port_vc_bump", t.port_vc_bump, P)
           or _flags("port_dateline", t.port_dateline, P))
    if why:
        return why
    if t.port_dim is not None:
        why = (_integer_array("port_dim", t.port_dim, (P,), "dimension of each port")
               or _in_range("port_dim", t.port_dim, _INT32.min, _INT32.max + 1, "int32"))
        if why:
            return why
    return _scalars(t)


def _scalars(t: RouteTables) -> str | None:
    def integer(x: Any) -> bool:
        return isinstance(x, int | np.integer) and not isinstance(x, bool)

    if not integer(t.vc_mode) or int(t.vc_mode) not in _VC_RULES:
        rules = ", ".join(f"{k} ({v})" for k, v in _VC_RULES.items())
        return f"vc_mode = {t.vc_mode!r} is not one of the engine's VC rules: {rules}"
    if not integer(t.vcs_required) or t.vcs_required < 1:
        return f"vcs_required = {t.vcs_required!r} must be an integer >= 1"
    if not integer(t.phase_vc_offset) or not 0 <= t.phase_vc_offset < t.vcs_required:
        return (f"phase_vc_offset = {t.phase_vc_offset!r} must be a VC index in "
                f"[0, vcs_required = {t.vcs_required})")
    if not integer(t.adaptive_bias) or not -(2**62) < t.adaptive_bias < 2**62:
        return f"adaptive_bias = {t.adaptive_bias!r} must be an integer number of bytes"
    return None


def check_route_tables(tables: Any, network: Network, routing_name: str, plugin_name: str,
                       *, topology: tuple[str, str] | None = None) -> None:
    """Raise :class:`RoutingError` naming the routing, its plugin, the table and the first bad
    entry when ``tables`` cannot be handed to the engine for ``network``.

    ``topology`` (name, plugin) says whose ``minimal_routes`` the routing passed on, for the
    built-in routings, which make no tables of their own.
    """
    why = route_table_problem(tables, network)
    if why:
        origin = f"plugin {plugin_name!r}"
        if topology is not None:
            origin += (f"; the tables are the minimal routes of topology {topology[0]!r}, "
                       f"plugin {topology[1]!r}")
        raise RoutingError(f"routing {routing_name!r} ({origin}) handed over invalid route "
                           f"tables: {why}")


def check_point_tables(point: ResolvedPoint, network: Network, tables: Any) -> None:
    """:func:`check_route_tables` for a resolved point (what
    :func:`federation.pipeline.build.build` calls); the plugins are looked up only when there is
    something to blame, since that loads the plugin registry."""
    if route_table_problem(tables, network) is None:
        return
    routing = point.routing
    topology = None
    if builtin(routing):
        topo = point.machine.topology
        topology = (topo.name, plugin_of(topo, "topologies"))
    check_route_tables(tables, network, routing.name, plugin_of(routing, "routings"),
                       topology=topology)


def check_minimal_routes(tables: Any, network: Network, topology: Any, routing_name: str) -> None:
    """For routings that compute on a topology's ``minimal_routes`` before handing tables over
    (Valiant counts VC bumps along every table path): refuse bad tables before they are
    walked, naming the topology and its plugin."""
    why = route_table_problem(tables, network)
    if why:
        raise RoutingError(
            f"topology {topology.name!r} (plugin {plugin_of(topology, 'topologies')!r}) handed "
            f"over invalid minimal routes, which routing {routing_name!r} builds on: {why}")


def check_point_routes(point: ResolvedPoint, network: Network, tables: RouteTables,
                       program: RoutingProgram | None) -> RouteWalk | None:
    """Refuse route tables in which a route between two routers with nodes meets a -1 entry
    or loops (:func:`federation.network.checks.route_walk`), before the run: a loop passed
    the deadlock proof's "VC = hops so far" shortcut and surfaced mid-run as a VC beyond
    ``router.vcs`` blamed on the routing, a missing route as a run-time error naming neither
    the routing nor its plugin.  The tables are walked when the engine routes by them (no
    compiled program) or a compiled routing declares them its paths (a :class:`TablePlan`);
    a compiled routing with a class plan may use them as it likes.  A built-in routing hands
    over its topology's ``minimal_routes``, so the topology and its plugin are blamed, at
    ``machine.topology``; else the routing and its plugin, at ``routing``.  Returns the walk
    (its longest route serves the deadlock proof), None when the tables were not walked."""
    if program is not None and not isinstance(program.vc_plan, TablePlan):
        return None
    walk = route_walk(network, tables)
    if walk.problem is None:
        return walk
    raise tables_fault(point, f"has minimal routes (minimal_routes) that cannot deliver, which "
                              f"routing {point.routing.name!r} passes on: {walk.problem}",
                       f"handed over route tables that cannot deliver: {walk.problem}")


def tables_fault(point: ResolvedPoint, by_topology: str, by_routing: str) -> ConfigError:
    """A refusal of the point's route tables, blaming whoever made them: a built-in routing
    hands over its topology's ``minimal_routes``, so the topology and its plugin, at
    ``machine.topology`` (``by_topology`` follows their names); else the routing and its
    plugin, at ``routing`` (``by_routing``)."""
    from federation.pipeline.points import machine_prefix

    routing = point.routing
    if builtin(routing):
        topo = point.machine.topology
        return ConfigError(f"topology {topo.name!r} (plugin {plugin_of(topo, 'topologies')!r}) "
                           f"{by_topology}", source=point.machine.source,
                           path=f"{machine_prefix(point)}topology")
    return ConfigError(f"routing {routing.name!r} (plugin {plugin_of(routing, 'routings')!r}) "
                       f"{by_routing}", source=point.source, path="routing")
