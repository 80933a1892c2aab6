"""The bounds a point must fit, checked at each stage as soon as its figures exist: the engine's
clock range and the memory a run may use.

A wrong answer is worse than no answer.  Every time, size and rate a point feeds the engine is
compared with what the engine can represent (:mod:`federation.models.limits`), and the memory
a point needs is estimated from the topology's counts
(:meth:`federation.plugin.components.Topology.size`) *before* the network, its route tables or
its packets are allocated (a sliding QoS window's rings of sends, which grow with the run,
at their bound for the point's smallest packet: :mod:`.rings`).  The preflight checks what
the files say; the build checks the built network again (a topology that could not count
before building; link classes known only then); the traffic stage checks the packets (and
the rings again for rank programs' packets, known once they are built).  A refusal is one
:class:`~federation.errors.ConfigError` naming the file, the field and the limit
(:func:`~federation.pipeline.points.figure_origin`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from federation.engine.qos_rings import RING_SLOT_BYTES
from federation.errors import ConfigError, TopologyError
from federation.models.limits import CLOCK_LIMIT, MAX_BANDWIDTH, TIME_LIMIT_PS, TIME_LIMIT_S
from federation.models.units import PS_PER_S, format_rate, format_time, too_fast
from federation.pipeline.points import (
    MemoryEstimate,
    gib,
    known_link_classes,
    link_figure,
    point_jobs,
    refuse_figure,
    stop_path,
    topology_owner,
)
from federation.pipeline.rings import (  # the rings' figures, also read from here
    RingMemory,  # noqa: F401 - ring_memory's value
    RingSite,
    Smallest,
    longest_window,
    machine_link_classes,
    ps_floor,
    ring_memory,
    ring_site,
)

if TYPE_CHECKING:
    from federation.engine.run_types import LinkFigures
    from federation.models.machine import RouterConfig
    from federation.network import Network
    from federation.network.tables import RouteTables
    from federation.pipeline.points import ResolvedMachine, ResolvedPoint
    from federation.plugin.components import RoutingProgram, TopologySize

#: default share of the machine's physical memory a run may plan to use (``--max-memory``)
DEFAULT_MEMORY_FRACTION = 0.8
#: environment variable that sets ``--max-memory`` (bytes or a size such as ``8GiB``)
MAX_MEMORY_ENV = "FEDERATION_MAX_MEMORY"


# --------------------------------------------------------------------------- clock range


#: makes the refusal of a machine field: ``refuse(field, why)``
Refusal = Callable[[str, str], ConfigError]


def machine_clock(rm: ResolvedMachine, classes: list[str], refuse: Refusal,
                  built: bool = True) -> tuple[dict[str, float], float, float]:
    """A machine's figures against the clock range: each link class's bandwidth (at most one
    byte per picosecond: a topology's default; a file's is refused as it is read,
    :data:`federation.models.units.Bandwidth`), its latency and one packet's serialisation at
    its bandwidth, the NIC's serialisation and the router's delays; then, when ``classes``
    are the ``built`` network's, the QoS policy's parameters against its ports' figures
    (:func:`check_qos_ports`).  ``refuse(field, why)`` makes the refusal of a machine field
    (an experiment's point names where it was set; a machine file alone, the file).  Returns
    each class's serialisation plus latency, the NIC's serialisation and the router delay
    (s), for the experiment's trip bound."""
    machine, topo = rm.machine, rm.topology
    size = float(machine.packet_size)
    worst = {"terminal": 0.0}
    bandwidth: dict[str, float] = {}
    for cls in classes:
        bw, given = link_figure(machine, topo, cls, "bandwidth")
        bandwidth[cls] = bw
        if bw > MAX_BANDWIDTH:  # a file's value is refused as it is read; a plugin's default
            whose = "" if given else f" (the default of topology {topo.name!r})"
            raise refuse(f"links.{cls}.bandwidth", f"{bw:.4g} B/s{whose} {too_fast(bw)}")
        lat, _ = link_figure(machine, topo, cls, "latency")
        if lat >= TIME_LIMIT_S:
            raise refuse(f"links.{cls}.latency",
                         f"{format_time(lat)} is beyond {CLOCK_LIMIT}; plain numbers are seconds "
                         "(write '100ns', not 100)")
        ser = size / bw
        if ser >= TIME_LIMIT_S:
            raise refuse(f"links.{cls}.bandwidth",
                         f"one {size:g} B packet takes {format_time(ser)} to cross a link at "
                         f"{bw:g} B/s, beyond {CLOCK_LIMIT}")
        worst[cls] = ser + lat
    term_bw, _ = link_figure(machine, topo, "terminal", "bandwidth")
    nic_bw = float(machine.nic.bandwidth or term_bw)
    nic_ser = size / nic_bw
    if nic_ser >= TIME_LIMIT_S:
        raise refuse("nic.bandwidth",
                     f"one {size:g} B packet takes {format_time(nic_ser)} to leave a NIC at "
                     f"{nic_bw:g} B/s, beyond {CLOCK_LIMIT}")
    # a booksim_iq router has no router.delay: its cycle is checked by the model
    delay = float(machine.router.delay) if machine.router.model != "booksim_iq" else 0.0
    for name, value in (("router.delay", delay),
                        ("router.credit_delay", float(machine.router.credit_delay))):
        if value >= TIME_LIMIT_S:
            raise refuse(name, f"{format_time(value)} is beyond {CLOCK_LIMIT}; plain numbers "
                         "are seconds (write '50ns', not 50)")
    if built:
        check_qos_ports(rm, bandwidth, nic_bw, refuse)
    return worst, nic_ser, delay


def check_qos_ports(rm: ResolvedMachine, bandwidth: dict[str, float], nic_bw: float,
                    refuse: Refusal) -> None:
    """The QoS policy's own check of its parameters against the ports it arbitrates, whose
    link classes' ``bandwidth`` (B/s) :func:`machine_clock` has just read
    (:meth:`~federation.plugin.components.QosPolicy.port_problem`: ``bandwidth_caps``' window
    against the slowest port's packet time).  Here, beside the machine's other figures,
    because this is the one check that ``validate`` of a machine file and an experiment's
    build both make with the built network's link classes and a refusal that names where a
    field was set (a sweep's entry, the machine file, the inline ``machine:``); only with the
    built network's classes, since the estimate before building may name a class the
    network lacks (a one-group dragonfly's ``global``) and refuse on its figures."""
    why = rm.qos.port_problem(bandwidth, nic_bw, int(rm.machine.packet_size))
    if why is not None:
        field, message = why
        raise refuse(f"qos.{field}", message)


def check_clock(point: ResolvedPoint, network: Network | None = None) -> None:
    """Refuse any time, size or rate whose engine time would pass the clock range.

    Checked: the machine's figures (:func:`machine_clock`), the stop window, and the shortest
    possible delivery of a packet created at the end of the window.  The engine also
    refuses, at run time, any event it would schedule past the range (a longer path, a
    congested queue), so no wrapped time can reach a result.
    """
    classes = known_link_classes(point, network)
    worst, nic_ser, delay = machine_clock(
        point.machine, classes, lambda field, why: refuse_figure(point, field, why),
        built=network is not None)
    stop = point.experiment.stop
    if stop.warmup >= TIME_LIMIT_S:
        raise ConfigError(f"{format_time(stop.warmup)} is beyond {CLOCK_LIMIT}",
                          source=point.source, path=stop_path(point, "warmup"))
    horizon = stop.warmup + (stop.measure or 0.0)
    if horizon >= TIME_LIMIT_S:
        raise ConfigError(
            f"warmup + measure = {format_time(horizon)} is beyond {CLOCK_LIMIT}",
            source=point.source, path=stop_path(point, "measure"))
    # a packet created at the end of the window still has to reach its destination
    trip = nic_ser + worst["terminal"] + delay + max(worst.values())
    if (horizon + trip) * PS_PER_S >= TIME_LIMIT_PS:
        raise ConfigError(
            f"a packet created at the end of the window (at {format_time(horizon)}) needs at "
            f"least {format_time(trip)} more to be delivered, beyond {CLOCK_LIMIT}",
            source=point.source, path=stop_path(point, "measure"))


# --------------------------------------------------------------------------- longest route

#: packets whose route tables' walk :func:`check_route_clock` does at once (memory bound)
_ROUTE_PAIRS = 1 << 20


@dataclass(frozen=True)
class _Figures:
    """The per-hop figures of the zero-load trip, in seconds (classes by index)."""

    ser: np.ndarray  #: one packet's serialisation per link class
    lat: np.ndarray  #: latency per link class
    names: list[str]
    nic_ser: float
    delay: float
    credit_delay: float  #: -inf: the last credit is never the trip's last event (booksim_iq)
    cut_through: bool
    term: int  #: index of the terminal class
    delay_key: str = "router.delay"  #: the field a router's time comes from

    def hop(self) -> np.ndarray:
        """Per class: what one router-to-router hop of that class adds to a packet's trip."""
        return self.lat + self.delay + (0.0 if self.cut_through else self.ser)


def _figures(point: ResolvedPoint, network: Network, links: dict[str, LinkFigures],
             nic_bw: float) -> _Figures:
    machine = point.machine.machine
    router = machine.router
    size = float(machine.packet_size)
    names = list(network.link_classes)
    ser = np.array([size / float(links[c].bandwidth) for c in names])
    lat = np.array([float(links[c].latency) for c in names])
    nic_ser = size / nic_bw
    if router.model == "booksim_iq":
        return _iq_figures(router, ser, lat, names, nic_ser)
    return _Figures(ser, lat, names, nic_ser, float(router.delay),
                    float(router.credit_delay), router.switching == "cut_through",
                    names.index("terminal"))


def _iq_figures(router: RouterConfig, ser: np.ndarray, lat: np.ndarray, names: list[str],
                nic_ser: float) -> _Figures:
    """The booksim_iq router's zero-load figures, each at most what the engine takes
    (docs/architecture.md, "Router models"; tests/test_router_iq.py's closed forms): with a
    given ``router.cycle`` a link or NIC holds a packet whole cycles (its serialisation
    rounded up, one at least), latencies are rounded to whole cycles and a router takes one
    (speedup 2; two with speedup 1); with the default cycle (known once the traffic is: one
    largest packet on the fastest link) the exact figures, each below the engine's.  The
    last event counted is the delivery: this router returns a credit when the packet
    leaves its input buffer, before its next serialisation, so the credit branch of the
    default model's trip is no bound here (``credit_delay`` -inf turns it off).  Counting
    one cycle per router with the exact serialisation let a long cycle pass the check and
    fail at the clock's end mid-run."""
    none = float("-inf")
    if not router.cycle:
        return _Figures(ser, lat, names, nic_ser, 0.0, none, False, names.index("terminal"),
                        "router.cycle")
    c = round(float(router.cycle) * PS_PER_S)  # the engine's whole picoseconds

    def whole(t: np.ndarray) -> np.ndarray:  # whole cycles a packet holds a link (iq.flits;
        # the floor is at most the engine's rounding of the same product)
        return np.maximum(-(-np.floor(t * PS_PER_S) // c), 1) * c / PS_PER_S

    cycles = np.round(np.round(lat * PS_PER_S) / c)  # as the engine rounds port_lat (new_iq)
    return _Figures(whole(ser), cycles * c / PS_PER_S, names,
                    float(whole(np.array([nic_ser]))[0]), c / PS_PER_S, none, False,
                    names.index("terminal"), "router.cycle")


def _nonminimal(tables: RouteTables, program: RoutingProgram | None) -> bool:
    """Whether a packet may take a Valiant path: to an intermediate group or router, then a
    minimal route from there (so up to two of the tables' longest routes)."""
    plan = getattr(program, "vc_plan", None)
    return bool(tables.valiant or tables.adaptive
                or getattr(plan, "valiant", "none") != "none")


def _start_time(point: ResolvedPoint) -> float:
    """The latest time a packet can be created that the files say (seconds): the end of the
    open-loop traffic (``stop.warmup + stop.measure``), or a closed-loop job's later start."""
    stop = point.experiment.stop
    starts = [j.start_ps / PS_PER_S for j in point_jobs(point) if j.closed_loop]
    return max([stop.warmup + (stop.measure or 0.0), *starts])


def _route_parts(fig: _Figures, route: list[int]) -> dict[str, float]:
    """What each figure adds to the zero-load trip of a packet along ``route`` (the link
    classes of its router-to-router hops) up to its last event: its delivery, or the credit
    its last router returns over the cable it came in by (as the engine schedules them:
    :mod:`federation.engine.router`)."""
    t = fig.term
    parts: dict[str, float] = {}
    counts: dict[str, int] = {}

    def add(key: str, value: float, times: int = 1) -> None:
        parts[key] = parts.get(key, 0.0) + value * times
        counts[key] = counts.get(key, 0) + times

    add("nic.bandwidth", fig.nic_ser)
    add(f"links.{fig.names[t]}.latency", fig.lat[t])
    add(fig.delay_key, fig.delay, len(route) + 1)
    for c in route:
        add(f"links.{fig.names[c]}.latency", fig.lat[c])
        if not fig.cut_through:
            add(f"links.{fig.names[c]}.bandwidth", fig.ser[c])
    if fig.cut_through:  # the tail trails the head by the slowest serialisation
        c = max([t, *route], key=lambda k: fig.ser[k])
        add(f"links.{fig.names[c]}.bandwidth", fig.ser[c])
    else:
        add(f"links.{fig.names[t]}.bandwidth", fig.ser[t])
    last = route[-1] if route else t
    if fig.lat[last] + fig.credit_delay > fig.lat[t]:  # the credit back is the last event
        add(f"links.{fig.names[last]}.latency", fig.lat[last])
        add("router.credit_delay", fig.credit_delay)
    else:
        add(f"links.{fig.names[t]}.latency", fig.lat[t])
    return {(f"{counts[k]} x {k}" if counts[k] > 1 else k): v for k, v in parts.items() if v > 0}


def _longest_route(network: Network, tables: RouteTables, fig: _Figures) -> list[int]:
    """The link classes of the route of the tables whose zero-load trip is longest, among the
    routes between routers with nodes (one walk of every pair, :func:`table_hops`)."""
    from federation.network.routes import host_pairs, table_hops

    cls = network.ports.port_class
    hop = fig.hop()
    best, best_pair = -1.0, (0, 0)
    for src, dst in host_pairs(network, _ROUTE_PAIRS):
        acc = np.zeros(src.size)
        last = np.full(src.size, fig.term)
        for port, pair in table_hops(network, tables, src, dst):
            c = cls[port]
            acc[pair] += hop[c]
            last[pair] = c
        if acc.size:
            total = acc + np.maximum(fig.lat[last] + fig.credit_delay, fig.lat[fig.term])
            k = int(np.argmax(total))
            if total[k] > best:
                best, best_pair = float(total[k]), (int(src[k]), int(dst[k]))
    if best < 0:
        return []
    src, dst = (np.array([x]) for x in best_pair)
    return [int(cls[port[0]]) for port, _ in table_hops(network, tables, src, dst)]


def check_route_clock(point: ResolvedPoint, network: Network, tables: RouteTables,
                      links: dict[str, LinkFigures], nic_bw: float,
                      program: RoutingProgram | None = None,
                      last: tuple[float, str] | None = None) -> None:
    """Refuse a point whose packets cannot all reach their destination inside the clock
    range even without any queueing.

    :func:`check_clock` bounds one link's figures; a packet crosses a whole route, each
    router adding its delay and each hop its serialisation and latency, and the credit its
    last router returns crosses the cable again.  So the latest packet the files allow (one
    created at the end of the open-loop traffic, or a closed-loop job's start) is followed
    along the tables' longest route (two of them with a Valiant path), and refused when its
    last event would pass the clock: the run would stop half-way with the engine's refusal.
    The field blamed is the figure that adds most.  A congested run can still reach the
    clock later; the engine refuses that event when it would schedule it.

    ``last``: ``(seconds, field)`` of a message the files list after the traffic's end (they
    are sent: :func:`federation.pipeline.messages.check_given_traffic` passes the latest),
    followed instead and blamed on ``field`` when its creation time is what reaches the
    clock.
    """
    fig = _figures(point, network, links, nic_bw)
    t0 = _start_time(point) if last is None else last[0]
    twice = _nonminimal(tables, program)
    tail = fig.ser[fig.term] + max(fig.lat[fig.term], float(fig.lat.max()) + fig.credit_delay)
    head = fig.nic_ser + fig.lat[fig.term] + fig.delay
    hops = max(network.n_routers - 1, 0) * (2 if twice else 1)
    if (t0 + head + hops * float(fig.hop().max()) + tail) * PS_PER_S < TIME_LIMIT_PS:
        return  # not even a route through every router reaches the clock: no walk
    route = _longest_route(network, tables, fig)
    route = route * 2 if twice else route
    parts = _route_parts(fig, route)
    trip = sum(parts.values())
    if (t0 + trip) * PS_PER_S < TIME_LIMIT_PS:
        return
    if t0 > max(parts.values()):
        path = (last[1] if last is not None else
                stop_path(point, "measure" if point.experiment.stop.measure else "warmup"))
        blame = ConfigError("", source=point.source, path=path)
    else:
        blame = refuse_figure(point, max(parts, key=parts.__getitem__).split()[-1], "")
    named = ", ".join(f"{k} {format_time(v)}" for k, v in
                      sorted(parts.items(), key=lambda kv: -kv[1])[:4])
    how = (f"{len(route) // 2 + 1} routers, twice for a Valiant path" if twice
           else f"{len(route) + 1} routers")
    classes = " -> ".join(fig.names[c] for c in route) or "none"
    raise ConfigError(
        f"a packet created at {format_time(t0)} "
        f"({'the end of the traffic' if last is None else 'the last message listed'}) needs "
        f"{format_time(trip)} more at zero load to be delivered and its last credit returned, "
        f"on the longest route ({how}; router-to-router links: {classes}): {named}; that "
        f"ends at {format_time(t0 + trip)}, beyond {CLOCK_LIMIT}",
        source=blame.source, path=blame.path)


# --------------------------------------------------------------------------- memory


def physical_memory() -> int:
    """Bytes of physical memory on this machine (0 when unknown)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        return 0


def parse_memory_limit(text: str, source: str) -> int:
    """A memory limit as bytes: a size such as ``16GiB`` or a plain number of bytes."""
    from federation.models.units import parse_size

    value = text.strip()
    try:
        num = parse_size(float(value) if value.replace(".", "", 1).isdigit() else value)
    except ValueError as exc:
        raise ConfigError(str(exc), source=source) from None
    if num <= 0:
        raise ConfigError(f"must be positive, got {text!r}", source=source)
    return int(num)


def default_max_memory() -> int:
    """``--max-memory`` when not given: ``$FEDERATION_MAX_MEMORY`` or 80 % of physical memory."""
    env = os.environ.get(MAX_MEMORY_ENV)
    if env:
        return parse_memory_limit(env, MAX_MEMORY_ENV)
    phys = physical_memory()
    return int(phys * DEFAULT_MEMORY_FRACTION) if phys else 64 * 2**30


#: bytes per router, node and cable while building a network and its port table (Python lists
#: in NetworkBuilder, then the flat arrays and the engine's per-port state)
_PER_ROUTER = 256
_PER_NODE = 512
_PER_CABLE = 320
#: bytes per (router, routing group) entry: int32 next-hop table plus the transient int64 work
#: arrays that routing helpers build over the same shape
_PER_TABLE_ENTRY = 40
#: bytes per packet a run creates when the whole traffic is held at once (a workload that
#: generates all its messages before the run: message and packetized arrays of one chunk are
#: transient, so this is the messages' share), plus the per-packet table when it is kept
_PER_PACKET = 64
#: bytes per packet kept for the packets table (``outputs.packets``): its delivery record,
#: the table's columns and their conversion when written
_PER_KEPT = 256
#: bytes per packet row the engine holds (packets queued at NICs or in flight): the 64-byte
#: state row and the row's times, numbers and pool entries
PER_ROW = 128


def estimate_network(size: TopologySize, vcs: int) -> MemoryEstimate:
    """Memory to build a network of ``size`` and its route tables, before building it."""
    ports = 2 * size.nodes + 2 * size.cables
    net = (size.routers * _PER_ROUTER + size.nodes * _PER_NODE + size.cables * _PER_CABLE
           + ports * vcs * 48)
    tables = size.routers * max(size.groups, 1) * _PER_TABLE_ENTRY
    return MemoryEstimate(int(net), int(tables))


def check_memory(estimate: MemoryEstimate, limit: int, what: str, source: str,
                 path: str | None) -> None:
    """Refuse when ``estimate`` exceeds ``limit`` bytes, naming ``source`` and ``path``."""
    if estimate.total <= limit:
        return
    raise ConfigError(
        f"{what} needs about {gib(estimate.total)} of memory ({estimate.describe()}), more "
        f"than the limit of {gib(limit)} (--max-memory, or ${MAX_MEMORY_ENV}; default 80 % "
        "of physical memory)", source=source, path=path)


def topology_size(rm: ResolvedMachine, prefix: str = "") -> TopologySize | None:
    """The machine's :meth:`Topology.size`, checked: a :class:`TopologyError` it raises, or
    an answer that is not ``None`` or a :class:`TopologySize` of integers ``>= 0``, is
    refused as the machine file's ``topology`` field naming the topology (and its plugin)
    (``prefix``: where the machine sits in its file).  The checks before the build (memory,
    job placements) read it; :func:`~federation.pipeline.build.checked_network` compares it
    with what ``build()`` made."""
    from federation.plugin.components import TopologySize

    topo = rm.topology
    where = {"source": rm.source, "path": f"{prefix}topology"}
    try:
        size = topo.size()
    except TopologyError as exc:
        raise ConfigError(f"{topology_owner(topo)}: {exc}", **where) from None
    if size is None:
        return None
    counts = [getattr(size, f, None) for f in ("routers", "nodes", "cables", "groups")]
    if not isinstance(size, TopologySize) or not all(
            isinstance(c, int | np.integer) and not isinstance(c, bool) and c >= 0
            for c in counts):
        raise ConfigError(f"{topology_owner(topo)}: size() returned {size!r}, not None or a "
                          "TopologySize(routers, nodes, cables, groups) of integers >= 0",
                          **where)
    return size


def check_machine_memory(machine: ResolvedMachine, limit: int, prefix: str = "",
                         smallest_packet: int | Smallest | None = None
                         ) -> MemoryEstimate | None:
    """Estimate a machine's network and tables from :meth:`Topology.size` (no allocation),
    and a sliding QoS window's rings (:func:`~federation.pipeline.rings.ring_memory`, for
    packets of at least ``smallest_packet`` B, else ``packet_size``: a point's is
    :func:`~federation.pipeline.rings.smallest_packet`), and refuse them above ``limit``:
    the network as ``topology``, the rings beside it as ``qos.window``
    (:func:`check_ring_memory`); ``None`` when the topology cannot say before building."""
    size = topology_size(machine, prefix)
    if size is None:
        return None
    est = estimate_network(size, machine.machine.router.vcs)
    what = f"this machine ({size.routers} routers, {size.nodes} nodes, {size.cables} cables)"
    check_memory(est, limit, what, machine.source, f"{prefix}topology")
    ports = 2 * size.nodes + 2 * size.cables  # as estimate_network counts them
    site = ring_site(machine, ports, machine_link_classes(machine), smallest_packet)
    return check_ring_memory(est, site, limit, what, prefix)


def check_network_memory(network: Network, vcs: int, limit: int, source: str,
                         path: str | None, machine: ResolvedMachine | None = None,
                         prefix: str = "", smallest_packet: int | Smallest | None = None
                         ) -> MemoryEstimate:
    """The same check on a built network (topologies whose size is unknown before building);
    with ``machine``, its sliding QoS window's rings on the network's ports too."""
    from federation.plugin.components import TopologySize

    size = TopologySize(network.n_routers, network.n_nodes, network.n_links, network.n_groups)
    est = estimate_network(size, vcs)
    check_memory(est, limit, _machine_what(network), source, path)
    if machine is None:
        return est
    site = ring_site(machine, int(network.ports.n_ports), list(network.link_classes),
                     smallest_packet)
    return check_ring_memory(est, site, limit, _machine_what(network), prefix)


def _machine_what(network: Network) -> str:
    return (f"this machine ({network.n_routers} routers, {network.n_nodes} nodes, "
            f"{network.n_links} cables)")


def built_ring_site(machine: ResolvedMachine, network: Network,
                    smallest_packet: int | Smallest | None = None) -> RingSite:
    """The rings' site of a built ``network`` as its estimate counted it: the topology's
    counts and the link classes the files name when it could count before building
    (:func:`check_machine_memory`), else the network's own ports and classes
    (:func:`check_network_memory`)."""
    size = topology_size(machine)
    if size is None:
        return ring_site(machine, int(network.ports.n_ports), list(network.link_classes),
                         smallest_packet)
    return ring_site(machine, 2 * size.nodes + 2 * size.cables, machine_link_classes(machine),
                     smallest_packet)


def with_rings(est: MemoryEstimate, network: Network, machine: ResolvedMachine, limit: int,
               prefix: str = "", smallest_packet: int | Smallest | None = None
               ) -> MemoryEstimate:
    """``est``, a built ``network``'s estimate, with its sliding QoS window's rings for
    packets of at least ``smallest_packet`` in place of those it had, refused as
    :func:`check_ring_memory` refuses: for another point's workloads on the same build, or
    rank programs once they are built."""
    return check_ring_memory(replace(est, rings=0),
                             built_ring_site(machine, network, smallest_packet), limit,
                             _machine_what(network), prefix)


def check_ring_memory(est: MemoryEstimate, site: RingSite, limit: int, what: str,
                      prefix: str = "") -> MemoryEstimate:
    """``est`` with the rings' term (:func:`~federation.pipeline.rings.ring_memory`),
    refused as ``qos.window`` (``prefix``: where the machine sits in its file) when that
    passes ``limit``: the network alone fits (checked first), so it is the window that does
    not, and the refusal says the longest one that would."""
    r = ring_memory(site)
    if r is None:
        return est
    out = replace(est, rings=r.bytes)
    if out.total > limit:
        raise _ring_refusal(est, site, limit, what, prefix)
    return out


def check_point_memory(est: MemoryEstimate, limit: int, what: str, source: str,
                       path: str | None, site: RingSite, prefix: str = "") -> None:
    """A point's whole estimate (the machine's, its QoS rings and its ``packets``) against
    ``limit``, all of them together.  When it fits without the rings, which the machine's
    check let through beside the network alone, the sliding window is refused as
    ``qos.window`` with the longest one that fits beside this point's packets
    (:func:`check_ring_memory`'s words); else as :func:`check_memory`, at ``path``."""
    if est.total <= limit:
        return
    if est.rings and est.total - est.rings <= limit:
        raise _ring_refusal(replace(est, rings=0), site, limit, what, prefix)
    check_memory(est, limit, what, source, path)


def _ring_refusal(est: MemoryEstimate, site: RingSite, limit: int, what: str,
                  prefix: str) -> ConfigError:
    """The refusal of a sliding window whose rings do not fit beside ``est``."""
    r = ring_memory(site)
    assert r is not None
    out = replace(est, rings=r.bytes)
    longest = longest_window(site, limit - est.total, r.window_ps)
    beside = "the network" + (" and this point's packets" if est.packets else "")
    fix = (f"give a window of at most {ps_floor(longest)}" if longest else
           f"no sliding window fits beside {beside}")
    size = site.why or ("packet_size" if site.smallest in (None, site.machine.machine.packet_size)
                        else "the workloads' smallest")
    return ConfigError(
        f"a sliding window (window_kind: sliding) of {format_time(r.window_ps / PS_PER_S)} "
        f"keeps each port's sends of the last window per class: up to {r.slots - 1} in a ring "
        f"(class {r.name!r}: cap {r.cap:g} at {r.where}, {format_rate(r.bandwidth)}, is "
        f"{r.cap_bytes} B per window; packets of {r.smallest} B, {size}), {r.slots} slots "
        f"of {RING_SLOT_BYTES} B at each of {r.ports} ports x {r.classes} classes; with "
        f"them {what} needs about {gib(out.total)} of memory ({out.describe()}), more than "
        f"the limit of {gib(limit)} (--max-memory, or ${MAX_MEMORY_ENV}; default 80 % of "
        f"physical memory); {fix}, or window_kind: static (no rings), or raise --max-memory",
        source=site.machine.source, path=f"{prefix}qos.window")


def packets_memory(n_packets: int, kept: bool = False, whole: int | None = None) -> int:
    """Memory a run's ``n_packets`` need beyond the rows in existence: the messages of the
    ``whole`` of them generated before the run (default: all; a streamed workload's are
    drawn a chunk at a time, held by its rows), and the packets table when it is kept."""
    held = int(n_packets) if whole is None else int(whole)
    return held * _PER_PACKET + (int(n_packets) * _PER_KEPT if kept else 0)
