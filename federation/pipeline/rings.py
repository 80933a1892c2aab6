"""A sliding QoS window's rings of sends (``bandwidth_caps`` with ``window_kind: sliding``) in
the memory estimate, and the smallest packet their bound assumes.

A ring holds at most a class's byte cap over the smallest packet, and the sends a port starts
in one window (:func:`~federation.engine.qos_rings.ring_entries`), so the rings' term needs
the smallest packet a point's traffic can make (:func:`smallest_packet`).  The engine makes
packets of ``packet_size`` and shorter ones: a message's last packet (its size modulo
``packet_size``, or the whole message when it is smaller), a rank program's rendezvous request
or reply (``nic.control_bytes``) and a zero-byte message's packet (1 B).  Where the files
state the sizes the smallest is exact: the built-in ``synthetic`` workload's
``message_size``, the ``messages`` workload's list, and rank programs once they are built
(:func:`program_smallest`: the preflight builds them before any point runs, for ``validate``
as for ``run``).  Any other open-loop workload tells its sizes only by generating them, after
the checks: its packets are assumed as small as the engine makes them, 1 B, so that the run
never grows past the estimate (a refusal says so, and why).

The refusals (:func:`federation.pipeline.bounds.check_ring_memory`) are in :mod:`.bounds`,
which imports this module: here are the figures.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from federation.engine.qos import cap_bytes
from federation.engine.qos_rings import RING_SLOT_BYTES, ring_entries, ring_peak_slots
from federation.models.units import PS_PER_S
from federation.pipeline.points import builtin, link_figure, point_jobs

if TYPE_CHECKING:
    from federation.models.machine import Machine
    from federation.pipeline.points import ResolvedJob, ResolvedMachine, ResolvedPoint
    from federation.plugin.components import Workload
    from federation.programs.model import RankPrograms


# --------------------------------------------------------------------------- smallest packet


@dataclass(frozen=True)
class Smallest:
    """The smallest packet a point's traffic can make, and what makes it (quoted by the
    rings' refusal after ``packets of N B, ``)."""

    bytes: int
    why: str


def packet_floor(sizes: np.ndarray, packet_size: int) -> tuple[int, int]:
    """The smallest packet messages of ``sizes`` B are cut into (as the engine cuts them:
    ``packet_size`` each, the last shorter; a zero-byte message is one 1 B packet), and the
    index of a message that makes it."""
    s = np.maximum(np.asarray(sizes, dtype=np.int64), 1)
    last = s % packet_size
    pieces = np.where(last == 0, packet_size, last)
    i = int(np.argmin(pieces))
    return int(pieces[i]), i


def _piece(size: int, packet_size: int, field: str) -> str:
    """Why a message of ``size`` B (given at ``field``) makes a packet below ``packet_size``."""
    if max(size, 1) <= packet_size:
        return f"a {size} B message ({field})"
    return f"the last packet of a {size} B message ({field})"


def _sizes(values: list) -> tuple[np.ndarray, np.ndarray]:
    """Message sizes as int64 and their positions, those past the engine's largest message
    left out: the workload's own check refuses them
    (:func:`federation.programs.checks.check_message_size`), before any count is made of
    them."""
    from federation.programs.checks import MAX_MESSAGE_BYTES

    kept = [(i, int(v)) for i, v in enumerate(values) if int(v) <= MAX_MESSAGE_BYTES]
    return (np.array([v for _, v in kept], dtype=np.int64),
            np.array([i for i, _ in kept], dtype=np.int64))


def _listed(workload: Workload) -> list | None:
    """The sizes an open-loop workload lists in its file (the built-in ``messages``
    workload), as given; ``None`` for any other."""
    listed = getattr(getattr(workload, "params", None), "messages", None)
    if not builtin(workload) or workload.closed_loop or not isinstance(listed, list | tuple):
        return None
    return [m.size for m in listed]


def listed_sizes(workload: Workload) -> np.ndarray | None:
    """Each message's size when an open-loop workload lists its messages in the file (the
    built-in ``messages`` workload); ``None`` when only generating tells, or when a size is
    past the engine's largest message (refused by the workload's check first)."""
    raw = _listed(workload)
    if raw is None:
        return None
    sizes, _ = _sizes(raw)
    return sizes if sizes.size == len(raw) else None


def job_smallest(job: ResolvedJob, packet_size: int) -> Smallest:
    """The smallest packet open-loop ``job`` can make, as its file states it: the listed
    messages' (``messages``), the one ``message_size`` (``synthetic``; default
    ``packet_size``), else 1 B (a workload that states no sizes).  A size past the engine's
    largest message counts for nothing: the workload's check refuses it."""
    w = job.workload
    P = int(packet_size)
    raw = _listed(w)
    field = f"{job.workload_field}.message_size"
    if raw is None and builtin(w) and hasattr(getattr(w, "params", None), "message_size"):
        raw = [w.params.message_size or P]
    elif raw is not None:
        field = f"{job.workload_field}.messages[{{}}].size"
    else:
        return Smallest(1, f"the engine's smallest: workload {w.name!r} "
                           f"({job.workload_field}) does not state its message sizes before "
                           "it generates them")
    sizes, at = _sizes(raw)
    if not sizes.size:
        return Smallest(P, "packet_size")
    b, i = packet_floor(sizes, P)
    return Smallest(b, "packet_size" if b == P else
                    _piece(int(sizes[i]), P, field.format(int(at[i]))))


def smallest_packet(point: ResolvedPoint) -> Smallest:
    """The smallest packet ``point``'s open-loop jobs can make (:func:`job_smallest`), or
    ``packet_size``.  Rank programs' packets are known once the programs are built: the
    traffic stage takes them in then (:func:`program_smallest`)."""
    P = int(point.machine.machine.packet_size)
    best = Smallest(P, "packet_size")
    for job in point_jobs(point):
        if not job.closed_loop:
            got = job_smallest(job, P)
            if got.bytes < best.bytes:
                best = got
    return best


def program_smallest(progs: RankPrograms, machine: Machine) -> Smallest | None:
    """The smallest packet rank programs ``progs`` make on ``machine`` (``None``: they send
    nothing): their messages' (a zero-byte one is 1 B), and ``nic.control_bytes`` when a
    message goes by rendezvous (above ``nic.eager_threshold``), as the engine makes them
    (:func:`federation.engine.program_arrays.build_traffic`)."""
    from federation.programs.checks import MAX_MESSAGE_BYTES
    from federation.programs.model import SEND

    sizes = progs.op_bytes[progs.op_kind == SEND].astype(np.int64)
    if not sizes.size:
        return None
    P = int(machine.packet_size)
    b, i = packet_floor(sizes, P)
    best = Smallest(b, "packet_size" if b == P else _piece(int(sizes[i]), P, "rank programs"))
    control = int(machine.control_packet_bytes())
    eager = min(int(machine.nic.eager_threshold), MAX_MESSAGE_BYTES)
    if control < best.bytes and bool((sizes > eager).any()):
        best = Smallest(control, "nic.control_bytes (rank programs' rendezvous requests and "
                                 "replies)")
    return best


# --------------------------------------------------------------------------- QoS rings


@dataclass(frozen=True)
class RingSite:
    """Where a sliding QoS window keeps rings of sends: the machine, its ports (every port
    has a ring per class: one layout, ``(o * C + c) * K``), its link classes (the router
    outputs' speeds) and the smallest packet assumed (``None``: ``packet_size``) with what
    makes it (``why``, for the refusal)."""

    machine: ResolvedMachine
    ports: int
    link_classes: list[str]
    smallest: int | None = None
    why: str | None = None


def ring_site(machine: ResolvedMachine, ports: int, link_classes: list[str],
              smallest: int | Smallest | None = None) -> RingSite:
    """A :class:`RingSite` for packets of at least ``smallest`` (B, or a :class:`Smallest`
    with its reason)."""
    if isinstance(smallest, Smallest):
        return RingSite(machine, ports, link_classes, smallest.bytes, smallest.why)
    return RingSite(machine, ports, link_classes, smallest)


@dataclass(frozen=True)
class RingMemory:
    """A sliding QoS window's rings of sends at their largest, and what binds them."""

    bytes: int  #: the estimate's term: ring_peak_slots(slots) x 16 B x ports x classes
    slots: int  #: K: the most sends a ring holds, plus the one written before the oldest goes
    ports: int
    classes: int
    window_ps: int
    smallest: int  #: the smallest packet assumed (B)
    where: str  #: the ports that bind: ``link class 'local'`` or ``the NICs``
    bandwidth: float  #: theirs (B/s)
    name: str  #: the class that binds
    cap: float
    cap_bytes: int  #: its byte cap at those ports


def sliding(rm: ResolvedMachine) -> Any | None:
    """The QoS policy's parameters when it keeps rings of sends (``window_kind: sliding``),
    else ``None``; read by name: the policy is a plugin, above the pipeline."""
    params = getattr(rm.qos, "params", None)
    return params if getattr(params, "window_kind", None) == "sliding" else None


def machine_link_classes(rm: ResolvedMachine) -> list[str]:
    """The link classes the machine file and the topology's defaults name (before building:
    an upper bound of the network's)."""
    return list(dict.fromkeys(["terminal", *rm.topology.link_defaults, *rm.machine.links]))


def ring_memory(site: RingSite, window_ps: int | None = None) -> RingMemory | None:
    """The memory of a sliding window's rings of sends at ``site``; ``None`` when the QoS
    policy keeps none (a static window counts with the loop's own counters).  A ring's
    length is bounded exactly (:func:`~federation.engine.qos_rings.ring_entries`: the class's
    byte cap over the smallest packet, and the sends a port starts in one window) with the
    engine's figures: its byte caps (:func:`~federation.engine.qos.cap_bytes`), the ports'
    ps per byte (each link class's at the router outputs; the NICs' with ``injection`` in
    ``at``), the window in whole ps (``window_ps`` overrides it) and packets of at least
    ``site.smallest`` B (default ``packet_size``; :func:`smallest_packet` gives a point's).
    Every port gets the slots of the longest ring, held twice while they grow
    (:func:`~federation.engine.qos_rings.ring_peak_slots`)."""
    rm = site.machine
    p = sliding(rm)
    if p is None:
        return None
    machine, topo = rm.machine, rm.topology
    W = window_ps or max(1, int(round(float(p.window) * PS_PER_S)))
    s = max(1, int(site.smallest or machine.packet_size))
    speeds = [(f"link class {c!r}", link_figure(machine, topo, c, "bandwidth")[0])
              for c in site.link_classes]
    if "injection" in getattr(p, "at", ()):
        term, _ = link_figure(machine, topo, "terminal", "bandwidth")
        speeds.append(("the NICs", float(machine.nic.bandwidth or term)))
    best: tuple[int, str, float, Any, int] | None = None
    for where, bw in speeds:
        ser = PS_PER_S / bw
        for c in p.classes:
            held = int(cap_bytes(float(c.cap) * W, ser))
            n = int(ring_entries(held, ser, W, s))
            if best is None or n > best[0]:  # the first of equals binds
                best = (n, where, bw, c, held)
    if best is None:
        return None
    n, where, bw, c, held = best
    C = len(p.classes)
    return RingMemory(RING_SLOT_BYTES * site.ports * C * ring_peak_slots(n + 1), n + 1,
                      site.ports, C, W, s, where, bw, str(c.name), float(c.cap), held)


def longest_window(site: RingSite, budget: int, above: int) -> int:
    """The longest window (ps) below ``above`` whose rings take at most ``budget`` bytes, 0
    if none does: the rings only grow with the window, so a bisection finds it."""

    def fits(w: int) -> bool:
        r = ring_memory(site, w)
        return r is None or r.bytes <= budget

    if not fits(1):
        return 0
    lo, hi = 1, above  # fits(lo), not fits(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


def ps_floor(ps: int) -> str:
    """``ps`` as a time to write in a file, rounded down to 4 significant digits (a window
    advised as the longest that fits must not be printed longer than it is)."""
    for unit, factor in (("s", 10**12), ("ms", 10**9), ("us", 10**6), ("ns", 10**3)):
        if ps >= factor:
            digits = max(0, 4 - len(str(ps // factor)))
            whole = ps * 10**digits // factor
            text = f"{whole / 10**digits:.{digits}f}".rstrip("0").rstrip(".")
            return f"{text}{unit}"
    return f"{ps}ps"
