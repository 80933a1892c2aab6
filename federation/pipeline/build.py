"""Stage *build*: a resolved point's network, link figures, route tables and compiled routing,
and every check that needs them.

A sweep usually runs many points on one machine, so what is built depends only on the machine
and the routing (:func:`build_key`); the driver keeps the last one
(:class:`~federation.pipeline.point.BuildCache`).  Checks that need built objects live here:
the clock range of the link classes the network has, the memory of a network whose topology
could not count it before building, the route tables (:mod:`.tables_check`), the routing
program and the VCs it needs, and the proof that the routing cannot deadlock
(:func:`prove_deadlock_free`, :mod:`federation.network.deadlock`), kept with the build.

May import: :mod:`.points`, :mod:`.bounds`, :mod:`.tables_check` and the layers below the
pipeline.  Never another stage.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from federation.engine.native import LinkFigures
from federation.errors import ConfigError, RoutingError, TopologyError
from federation.models.machine import Machine
from federation.network import Network
from federation.network.deadlock import (
    DeadlockProof,
    VCShortfall,
    cycle_text,
    plan_problem,
    prove,
)
from federation.network.dependencies import ProofTooLarge
from federation.network.graph import network_problem
from federation.network.tables import ClassPlan, TablePlan
from federation.pipeline.bounds import (
    check_clock,
    check_network_memory,
    check_route_clock,
    topology_size,
)
from federation.pipeline.points import (
    Built,
    MemoryEstimate,
    ResolvedMachine,
    ResolvedPoint,
    builtin,
    figure_origin,
    link_figure,
    machine_prefix,
    plugin_of,
    refuse_figure,
    topology_owner,
)
from federation.pipeline.rings import smallest_packet
from federation.pipeline.tables_check import (
    check_point_routes,
    check_point_tables,
    tables_fault,
)
from federation.plugin.components import RouteTables, Routing, RoutingProgram


def resolve_links(machine: Machine, topology: Any, network: Network, source: str,
                  prefix: str = "") -> dict[str, LinkFigures]:
    """Per link class: machine file value, else the topology's default, else the global one."""
    out = {}
    for cls in network.link_classes:
        fig = LinkFigures(*(link_figure(machine, topology, cls, a)[0]
                            for a in ("bandwidth", "latency", "buffer")))
        if fig.buffer < machine.packet_size:
            raise ConfigError(
                f"buffer of link class {cls!r} ({fig.buffer:g} B) is smaller than packet_size "
                f"({machine.packet_size:g} B)", source=source, path=f"{prefix}links.{cls}.buffer")
        out[cls] = fig
    for name in machine.links:
        if name not in network.link_classes:
            raise ConfigError(
                f"the network has no link class {name!r} (it has: "
                f"{', '.join(network.link_classes)})", source=source, path=f"{prefix}links.{name}")
    return out


def build_network(point: ResolvedPoint) -> Network:
    """The point's network, checked (:func:`checked_network`)."""
    return checked_network(point.machine, machine_prefix(point))


def checked_network(rm: ResolvedMachine, prefix: str = "") -> Network:
    """A machine's network, checked (:meth:`Network.validate`) before anything reads it
    (``prefix``: where the machine sits in its file, ``machine.`` for one given inline).

    A topology plugin's refusal, a return value that is not a :class:`Network`, and a network
    that is malformed or invalid are each refused as the machine file's ``topology`` field,
    naming the topology (and the plugin, for a third-party one): the bare
    :class:`TopologyError` named neither, and a malformed network crashed later with NumPy's
    or the engine's own error."""
    topo = rm.topology
    owner = topology_owner(topo)
    where = {"source": rm.source, "path": f"{prefix}topology"}
    try:
        net = topo.build()
    except TopologyError as exc:
        raise ConfigError(f"{owner}: {exc}", **where) from None
    if not isinstance(net, Network):
        raise ConfigError(f"{owner}: build() returned {type(net).__name__}, not a "
                          "federation Network (build one with NetworkBuilder)", **where)
    why = network_problem(net)  # as validate() would, without its "malformed" preamble
    if why:
        raise ConfigError(f"{owner} built a malformed network: {why}", **where)
    try:
        net.validate_graph()  # the rest of validate()
    except TopologyError as exc:
        raise ConfigError(f"{owner} built an invalid network: {exc}", **where) from None
    why = size_problem(topology_size(rm, prefix), net)
    if why:
        raise ConfigError(f"{owner}: {why}", **where)
    return net


def size_problem(size: Any, net: Network) -> str | None:
    """How the topology's :meth:`~federation.plugin.components.Topology.size` (``None``:
    unknown, nothing to compare) disagrees with the network its ``build()`` made, or None.

    The checks before building read ``size()``: nodes (listed nodes and node counts of job
    placements, ``ranks``), routers, cables and groups (the memory estimate, whose refusal
    quotes routers and nodes).  Nodes, then routers, must be exact; cables and groups only
    feed the estimate, so an overcount is safe (``random_shortcut`` documents its cables as
    an upper bound) and only an undercount is refused."""
    if size is None:
        return None
    for what, said, made in (("nodes", size.nodes, net.n_nodes),
                             ("routers", size.routers, net.n_routers)):
        if said != made:
            return (f"size() said {said} {what}, build() made {made}; the checks before the "
                    "build (memory, job placements) used size(), which must count what "
                    "build() makes")
    for what, said, made in (("cables", size.cables, net.n_links),
                             ("groups", size.groups, net.n_groups)):
        if said < made:
            return (f"size() said {said} {what}, build() made {made}; size() may overcount "
                    "cables and groups (an upper bound for the memory check), never undercount")
    return None


def build_key(point: ResolvedPoint) -> str:
    """What the network and tables depend on: the machine and the routing, nothing else."""
    return json.dumps([point.machine.machine.model_dump(mode="json"),
                       point.experiment.routing.model_dump(mode="json")], sort_keys=True)


def build(point: ResolvedPoint, max_memory: int, estimate: MemoryEstimate | None = None,
          deadlock_check: bool = True) -> Built:
    """Build the network, link figures and route tables of ``point`` and check them.

    ``estimate`` is the preflight's estimate of the network, tables and QoS rings from the
    topology's counts (:func:`federation.pipeline.preflight.machine_estimate`, which refused
    them above ``max_memory`` before anything was allocated); without one, the built network
    is checked, with its rings for the point's smallest packet.
    ``deadlock_check`` proves the routing deadlock-free (:func:`prove_deadlock_free`; off:
    ``--no-deadlock-check``).
    """
    machine = point.machine.machine
    msrc = point.machine.source
    prefix = machine_prefix(point)
    est = estimate
    net = build_network(point)
    if est is None:  # the topology could not tell before building: check what it built,
        # and a sliding QoS window's rings on its ports, as the preflight does for the others
        est = check_network_memory(net, machine.router.vcs, max_memory, msrc, f"{prefix}topology",
                                   machine=point.machine, prefix=prefix,
                                   smallest_packet=smallest_packet(point))
    check_clock(point, net)
    links = resolve_links(machine, point.machine.topology, net, msrc, prefix)
    nic_bw = float(machine.nic.bandwidth or links["terminal"].bandwidth)
    tables = make_tables(point, net)
    check_point_tables(point, net, tables)
    owner = component_owner(point)
    try:
        program = point.routing.program(net, point.machine.topology, machine, tables)
    except RoutingError as exc:  # the routing cannot serve this machine with these options
        raise ConfigError(str(exc), source=point.source, path="routing") from None
    # a compiled routing's own count, not its tables' (which it may not follow); with
    # traffic classes ``router.vcs`` is exactly classes x that (check_class_vcs says so: the
    # routing's own count alone, "or more", would advise a figure refused next)
    if point.machine.qos.n_classes() <= 1:
        try:
            if program is None:
                check_vcs(tables, machine.router.vcs, point.routing.name)
            else:
                check_program(program, machine.router.vcs, owner)
        except RoutingError as exc:
            o = figure_origin(point, "router.vcs")
            raise ConfigError(str(exc), source=o.source, path=o.path) from None
    check_class_vcs(point, program.vcs_required if program is not None
                    else tables.vcs_required)
    walk = check_point_routes(point, net, tables, program)
    check_route_clock(point, net, tables, links, nic_bw, program)
    built = Built(build_key(point), net, links, nic_bw, tables, est, program, owner)
    if not deadlock_check:
        return built
    return prove_deadlock_free(point, built, None if walk is None else walk.longest)


def make_tables(point: ResolvedPoint, network: Network) -> Any:
    """The routing's route tables; a :class:`TopologyError` raised while it makes them (a
    route of the topology's ``minimal_routes`` that is missing or loops, found by a walk such
    as :func:`federation.network.routes.most_vc_bumps`) is refused naming the file, the
    topology and its plugin for a built-in routing (it only passes the topology's routes
    on), else the routing and its plugin."""
    routing = point.routing
    try:
        return routing.tables(network, point.machine.topology, point.machine.machine)
    except TopologyError as exc:
        raise tables_fault(point, f"has minimal routes (minimal_routes) that routing "
                                  f"{routing.name!r} cannot build on: {exc}",
                           f"could not make its route tables: {exc}") from None


def check_vcs(tables: RouteTables, n_vcs: int, routing_name: str) -> None:
    """The route tables' VC count against ``router.vcs``."""
    if tables.vcs_required > n_vcs:
        raise RoutingError(
            f"routing {routing_name!r} ({tables.description}) needs {tables.vcs_required} virtual "
            f"channels for deadlock freedom but the machine has router.vcs = {n_vcs}; set "
            f"router.vcs: {tables.vcs_required} or more"
        )


def check_class_vcs(point: ResolvedPoint, need: int) -> None:
    """With C > 1 traffic classes each class owns ``need`` VCs of its own (class ``c``: VCs
    ``c x need .. (c + 1) x need - 1``), so ``router.vcs`` must be exactly ``C x need``; and
    the booksim_iq router model, which allocates VCs itself, takes no classes."""
    qos = point.machine.qos
    C = int(qos.n_classes())
    if C <= 1:
        return
    router = point.machine.machine.router
    if router.vcs != C * need:
        raise refuse_figure(point, "router.vcs", (
            f"QoS policy {qos.name!r} has {C} traffic classes, each in its own VCs, and "
            f"routing {point.routing.name!r} needs {need} per class, so router.vcs must be "
            f"{C} x {need} = {C * need}; it is {router.vcs}"))
    if router.model == "booksim_iq":
        raise refuse_figure(point, "router.model", (
            f"router.model booksim_iq allocates VCs itself; QoS policy {qos.name!r} with {C} "
            "traffic classes needs the default router model"))


def class_vcs(point: ResolvedPoint) -> int:
    """The VCs one traffic class owns: ``router.vcs / classes`` (every class's VC set is
    the same plan, disjoint from the others', so proving one class proves them all)."""
    return point.machine.machine.router.vcs // max(1, int(point.machine.qos.n_classes()))


def component_owner(point: ResolvedPoint) -> str:
    """``routing 'x' (plugin p) with arbiter 'y' (plugin q)``: who messages about compiled
    routing or arbitration code blame."""
    from federation.plugin.registry import active_plugins

    plugins = active_plugins()
    r, a = point.routing.name, point.machine.arbiter.name
    rp = plugins.routings.items[r].plugin if r in plugins.routings.items else "?"
    q = point.machine.qos.name
    if getattr(point.machine.qos, "as_arbiter", None) is not None and q in plugins.qos.items:
        return (f"routing {r!r} (plugin {rp}) with QoS policy {q!r} "
                f"(plugin {plugins.qos.items[q].plugin})")
    ap = plugins.arbiters.items[a].plugin if a in plugins.arbiters.items else "?"
    return f"routing {r!r} (plugin {rp}) with arbiter {a!r} (plugin {ap})"


def check_program(program: RoutingProgram, n_vcs: int, owner: str) -> None:
    """A compiled routing's declared VC count against ``router.vcs``."""
    if program.vcs_required > n_vcs:
        raise RoutingError(
            f"{owner} needs {program.vcs_required} virtual channels "
            f"({program.description or 'its declared vcs_required'}) but the machine has "
            f"router.vcs = {n_vcs}; set router.vcs: {program.vcs_required} or more")


def routing_plan(point: ResolvedPoint, built: Built) -> TablePlan | ClassPlan | None:
    """What the deadlock proof walks: a compiled routing's declared ``vc_plan`` (``None``
    when it declares none), else the engine's table routing on the tables, with Valiant
    phases where the routing draws intermediates (the only source of a packet's
    intermediate, whatever the tables' ``valiant`` flag says): outside the packet's source
    and destination groups when the draw is a built-in routing's (they all draw so), anywhere
    when it is the plugin's own."""
    if built.program is not None:
        return built.program.vc_plan
    draw = type(point.routing).intermediates
    if draw is Routing.intermediates:
        return TablePlan()
    own = not draw.__module__.startswith(BUILTIN_ROUTINGS)
    return TablePlan(valiant="group", intermediates="any_group" if own else "other_groups")


#: the package of the built-in routings, whose draws keep intermediates out of the packet's
#: source and destination groups
BUILTIN_ROUTINGS = "federation.plugins.routings."


def prove_deadlock_free(point: ResolvedPoint, built: Built, longest: int | None = None) -> Built:
    """``built`` with the proof that its routing cannot deadlock on its network
    (:mod:`federation.network.deadlock`); a routing whose channel dependency graph has a
    cycle, or whose compiled program declares no VC plan, is refused naming the routing, its
    plugin and one cycle of channels.  ``longest``: the longest table route in hops when
    :func:`check_point_routes` walked them (else the proof walks them if it needs it); a
    routing whose routes need more VCs than it declared is refused without the
    ``--no-deadlock-check`` hint (the run would fail on that VC)."""
    routing = point.routing
    owner = f"routing {routing.name!r} (plugin {plugin_of(routing, 'routings')})"
    n_vcs = class_vcs(point)

    def refuse(why: str) -> ConfigError:
        return ConfigError(f"{owner} {why}; or run with --no-deadlock-check to simulate it "
                           "anyway", source=point.source, path="routing")

    plan = routing_plan(point, built)
    if plan is None:
        raise refuse("compiles its own per-hop routing (RoutingProgram) but declares no VC "
                     "plan (RoutingProgram.vc_plan), so it cannot be proved deadlock-free "
                     "before the run: declare one (docs/plugins.md, \"VC plans\")")
    why = plan_problem(plan, built.network, n_vcs)
    if why:
        raise refuse(f"declared an unusable VC plan: {why}")
    try:
        proof = prove(built.network, built.tables, n_vcs, plan, owner,
                      declared=built.program is not None, longest=longest)
    except VCShortfall as exc:  # the run would stop on the VC: no --no-deadlock-check hint
        if builtin(routing):
            topo = point.machine.topology
            exc = VCShortfall(f"{exc} (the tables are the minimal routes of topology "
                              f"{topo.name!r}, plugin {plugin_of(topo, 'topologies')!r})")
        raise ConfigError(f"{owner} {exc}", source=point.source, path="routing") from None
    except (RoutingError, ProofTooLarge) as exc:
        raise refuse(f"cannot be proved deadlock-free: {exc}") from None
    if proof.cycle:
        raise refuse(deadlock_message(proof, n_vcs, int(point.machine.qos.n_classes())))
    return replace(built, deadlock=proof)


def deadlock_message(proof: DeadlockProof, n_vcs: int, n_classes: int = 1) -> str:
    """``n_vcs``: the VCs the proof had (one traffic class's, with several)."""
    vcs = (f"router.vcs = {n_vcs}" if n_classes <= 1 else
           f"router.vcs = {n_vcs * n_classes}: {n_vcs} per traffic class")
    return (f"can deadlock on this machine ({vcs}): its channel dependency "
            f"graph ({proof.method}) has a cycle of {len(proof.cycle)} channels, buffers "
            f"that packets can fill while each waits for the next: {cycle_text(proof.cycle)}. "
            "Use a routing whose VC plan breaks the cycle (more router.vcs help only a "
            "routing that uses them)")
