"""The open-loop traffic's packets against ``--max-memory``: how many a point creates, and the
check of their memory beside the machine's estimate (network, route tables and a sliding QoS
window's rings, :class:`~federation.pipeline.points.MemoryEstimate`).

The run checks them as it prepares the traffic (:mod:`.messages`, :mod:`.traffic`), with the
count it takes: a streamed job's expected count from its offered load over its horizon
(:func:`expected_packets`), or the messages it generated whole.  The preflight
(:func:`federation.pipeline.traffic.check_given_traffic`) makes the same checks, in the same
words, before any point runs wherever the count is known without generating: a streamed job's
expected count, and the messages a file lists (:func:`listed_packets`).

May import: :mod:`.points`, :mod:`.bounds`, :mod:`.rings` and the layers below the pipeline.
Never another stage.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING

from federation.engine.traffic import CHUNK_PACKETS
from federation.models.units import PS_PER_S
from federation.pipeline.bounds import (
    PER_ROW,
    built_ring_site,
    check_point_memory,
    packets_memory,
)
from federation.pipeline.points import machine_prefix
from federation.pipeline.rings import listed_sizes, smallest_packet

if TYPE_CHECKING:
    from federation.pipeline.points import Built, MemoryEstimate, ResolvedJob, ResolvedPoint
    from federation.plugin.components import Workload


def stop_field(point: ResolvedPoint) -> str:
    name = "stop.messages" if point.experiment.stop.measure is None else "stop.measure"
    return f"sweep.{name}" if name in point.sweep else name


def check_packets_memory(point: ResolvedPoint, built: Built, n_packets: int,
                         max_memory: int, kept: bool, whole: bool = True) -> None:
    """Messages held whole (``whole``) and kept tables grow with the packet count; the
    packet rows in existence (a few chunks plus what is in flight) do not.  All of them
    beside the machine's estimate, its QoS rings included: when the rings are what does not
    fit beside the packets, the sliding window is refused (``qos.window``, with the longest
    that fits; :func:`~federation.pipeline.bounds.check_point_memory`)."""
    rows = 4 * CHUNK_PACKETS + 8 * built.network.n_nodes

    def estimate(keep: bool) -> MemoryEstimate:
        grows = packets_memory(n_packets, keep, n_packets if whole else 0)
        return replace(built.memory, packets=grows + rows * PER_ROW)

    est = estimate(kept)
    field = ("outputs.packets" if kept and estimate(False).total <= max_memory
             else stop_field(point))
    tables = (" with its packets and messages tables (outputs.packets, outputs.messages)"
              if kept else "")
    site = built_ring_site(point.machine, built.network, smallest_packet(point))
    check_point_memory(est, max_memory, f"this point ({n_packets} packets){tables}",
                       point.source, field, site, machine_prefix(point))


def message_rate(point: ResolvedPoint, built: Built | float,
                 job: ResolvedJob | None = None) -> tuple[float, float, float] | None:
    """``(load, message bytes, messages per second per node)`` of a workload that states
    an offered load (``None`` for one that does not), on the built machine's NICs (or NICs
    of the bandwidth ``built``)."""
    nic_bw = built if isinstance(built, float) else built.nic_bandwidth
    workload = job.workload if job is not None else point.workload
    load = workload.offered_load()
    if load is None:
        return None
    size = float(getattr(workload.params, "message_size", None)
                 or point.machine.machine.packet_size)
    return load, size, load * nic_bw / size


def packet_rate(point: ResolvedPoint, built: Built, job: ResolvedJob | None = None,
                n_nodes: int | None = None) -> float | None:
    """Packets per second the workload's nodes (the whole machine, or ``n_nodes``) create,
    for a workload with an offered load."""
    rate = message_rate(point, built, job)
    if rate is None:
        return None
    _, size, per_node = rate
    packet = float(point.machine.machine.packet_size)
    n = built.network.n_nodes if n_nodes is None else n_nodes
    return per_node * n * max(1.0, math.ceil(size / packet))  # whole packets: 513 B is 2


def expected_packets(point: ResolvedPoint, built: Built, horizon: int,
                     job: ResolvedJob | None, m: int) -> int:
    """The packets a streamed job on ``m`` nodes is expected to create before ``horizon``
    (ps on the machine's clock) from its start, at its offered load (0 for a workload that
    states none): the count the run checks its memory with (:func:`check_packets_memory`),
    and the preflight before it."""
    rate = packet_rate(point, built, job, m)
    start = job.start_ps if job is not None else 0
    return int(rate * max(0, horizon - start) / PS_PER_S) if rate is not None else 0


def listed_packets(workload: Workload, packet_size: int) -> int | None:
    """The packets of the messages an open-loop workload lists in its file (the
    ``messages`` workload), as the run counts those it generates; ``None`` when only
    generating tells."""
    sizes = listed_sizes(workload)
    if sizes is None:
        return None
    return int(((sizes + packet_size - 1) // packet_size).sum())
