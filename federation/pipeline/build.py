"""Stage *build*: a resolved point's network, link figures, route tables and compiled routing,
and every check that needs them.

A sweep usually runs many points on one machine, so what is built depends only on the machine
and the routing (:func:`build_key`); the driver keeps the last one
(:class:`~federation.pipeline.point.BuildCache`).  Checks that need built objects live here:
the clock range of the link classes the network has, the memory of a network whose topology
could not count it before building, the route tables (:mod:`.tables_check`), the routing
program and the VCs it needs.

May import: :mod:`.points`, :mod:`.bounds`, :mod:`.tables_check` and the layers below the
pipeline.  Never another stage.
"""

from __future__ import annotations

import json
from typing import Any

from federation.engine.native import LinkFigures, check_vcs
from federation.errors import ConfigError, RoutingError
from federation.models.machine import Machine
from federation.network import Network
from federation.pipeline.bounds import check_clock, check_network_memory
from federation.pipeline.points import (
    Built,
    MemoryEstimate,
    ResolvedPoint,
    figure_origin,
    link_figure,
    machine_prefix,
)
from federation.pipeline.tables_check import check_point_tables
from federation.plugin.components import RoutingProgram


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
    net = point.machine.topology.build()
    net.validate()
    return net


def build_key(point: ResolvedPoint) -> str:
    """What the network and tables depend on: the machine and the routing, nothing else."""
    return json.dumps([point.machine.machine.model_dump(mode="json"),
                       point.experiment.routing.model_dump(mode="json")], sort_keys=True)


def build(point: ResolvedPoint, max_memory: int,
          estimate: MemoryEstimate | None = None) -> Built:
    """Build the network, link figures and route tables of ``point`` and check them.

    ``estimate`` is the preflight's estimate of the network and tables from the topology's
    counts (:func:`federation.pipeline.preflight.check_point`, which refused them above
    ``max_memory`` before anything was allocated); without one, the built network is checked.
    """
    machine = point.machine.machine
    msrc = point.machine.source
    prefix = machine_prefix(point)
    est = estimate
    net = build_network(point)
    if est is None:  # the topology could not tell before building: check what it built
        est = check_network_memory(net, machine.router.vcs, max_memory, msrc, f"{prefix}topology")
    check_clock(point, net)
    links = resolve_links(machine, point.machine.topology, net, msrc, prefix)
    nic_bw = float(machine.nic.bandwidth or links["terminal"].bandwidth)
    tables = point.routing.tables(net, point.machine.topology, machine)
    check_point_tables(point, net, tables)
    owner = component_owner(point)
    try:
        program = point.routing.program(net, point.machine.topology, machine, tables)
    except RoutingError as exc:  # the routing cannot serve this machine with these options
        raise ConfigError(str(exc), source=point.source, path="routing") from None
    try:
        check_vcs(tables, machine.router.vcs, point.routing.name)
        if program is not None:
            check_program(program, machine.router.vcs, owner)
    except RoutingError as exc:
        o = figure_origin(point, "router.vcs")
        raise ConfigError(str(exc), source=o.source, path=o.path) from None
    return Built(build_key(point), net, links, nic_bw, tables, est, program, owner)


def component_owner(point: ResolvedPoint) -> str:
    """``routing 'x' (plugin p) with arbiter 'y' (plugin q)``: who messages about compiled
    routing or arbitration code blame."""
    from federation.plugin.registry import get_plugins

    plugins = get_plugins()
    r, a = point.routing.name, point.machine.arbiter.name
    rp = plugins.routings.items[r].plugin if r in plugins.routings.items else "?"
    ap = plugins.arbiters.items[a].plugin if a in plugins.arbiters.items else "?"
    return f"routing {r!r} (plugin {rp}) with arbiter {a!r} (plugin {ap})"


def check_program(program: RoutingProgram, n_vcs: int, owner: str) -> None:
    """A compiled routing's declared VC count against ``router.vcs``."""
    if program.vcs_required > n_vcs:
        raise RoutingError(
            f"{owner} needs {program.vcs_required} virtual channels "
            f"({program.description or 'its declared vcs_required'}) but the machine has "
            f"router.vcs = {n_vcs}; set router.vcs: {program.vcs_required} or more")
