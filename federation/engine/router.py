"""Router and NIC mechanics of the compiled loop that no plugin changes: queues, requests,
transmission, credits.

Model (input-queued VC routers, credit flow control):

* Every (input port, VC) is a FIFO of packets; only its head is routed, and it then *requests*
  its output port (a linked list per output, ``req_*``), which an arbiter serves.
* A packet leaves output port ``o`` when ``o`` is idle and the downstream VC has credit for the
  whole packet; it occupies ``o`` for ``size / bandwidth`` (cut-through: at least until its tail
  has arrived) and reaches the peer that long plus the cable latency later (its tail;
  cut-through routers route on the head instead), plus the router delay at a router.
* When the tail leaves an input buffer its bytes return upstream as a credit after the input
  cable's latency.
"""

from __future__ import annotations

import numpy as np

from federation.engine.api import P_CLASS, P_HOPS, P_NEXT, P_OUTVC, P_SIZE, P_VC
from federation.engine.credits import credit_return, returns_then
from federation.engine.events import EV_ARRIVE, EV_FREE, EV_READY, S_HOPS, push
from federation.engine.jit import part


@part
def enqueue(sim, pk, ip):
    """A packet reached input port ``ip``: append it to its VC queue; True if it is the head
    (and must be routed now)."""
    qi = ip * sim.n_vcs + sim.ps[pk, P_VC]
    sim.ps[pk, P_NEXT] = -1
    if sim.q_tail[qi] < 0:
        sim.q_head[qi] = pk
        sim.q_tail[qi] = pk
        return True
    sim.ps[sim.q_tail[qi], P_NEXT] = pk
    sim.q_tail[qi] = pk
    return False


@part
def post_request(sim, qi, o):
    """The head of input queue ``qi`` asks for output ``o`` (appended: oldest first)."""
    sim.req_next[qi] = -1
    if sim.req_tail[o] < 0:
        sim.req_head[o] = qi
    else:
        sim.req_next[sim.req_tail[o]] = qi
    sim.req_tail[o] = qi
    sim.req_count[o] += 1


@part
def take_request(sim, o, qi, prev, now):
    """Serve request ``qi`` (after ``prev`` in ``o``'s list): unlink it, pop its packet off the
    input queue, return the credit upstream and route the next head.  Returns
    ``(packet, time its tail leaves)``."""
    nxt = sim.req_next[qi]
    if prev < 0:
        sim.req_head[o] = nxt
    else:
        sim.req_next[prev] = nxt
    if sim.req_tail[o] == qi:
        sim.req_tail[o] = prev
    sim.req_count[o] -= 1
    V = sim.n_vcs
    ip = qi // V
    ivc = qi - ip * V
    pk = sim.q_head[qi]
    nh = sim.ps[pk, P_NEXT]
    sim.q_head[qi] = nh
    if nh < 0:
        sim.q_tail[qi] = -1
    size = sim.ps[pk, P_SIZE]
    done = now + np.int64(size * sim.port_ser[o] + 0.5)
    if sim.cut_through and sim.pkt_tail[pk] > done:
        done = sim.pkt_tail[pk]  # the tail cannot leave before it has arrived
    sim.occ[ip] -= size
    # the credit leaves with the tail, and crosses the input cable
    credit_return(sim, sim.port_peer[ip], ivc, size, done + sim.port_lat[ip])
    if nh >= 0:
        push(sim, now, EV_READY, ip, ivc, 0)
    if sim.port_router[sim.port_peer[o]] >= 0:
        sim.ps[pk, P_HOPS] += 1
        sim.sc[S_HOPS] += 1
    return pk, done


@part
def transmit(sim, o, pk, ovc, done, now):
    """Send ``pk`` on ``o`` into ``ovc`` downstream, occupying ``o`` until ``done``."""
    if sim.stall_start[o] >= 0:
        sim.port_stall[o] += now - sim.stall_start[o]
        sim.stall_start[o] = -1
    size = sim.ps[pk, P_SIZE]
    sim.credits[o * sim.n_vcs + ovc] -= size
    sim.cwait[o] = 0
    sim.busy_until[o] = done
    if sim.n_classes > 1:  # per class only: the driver sums them into each port's bytes
        sim.port_class_bytes[o * sim.n_classes + sim.ps[pk, P_CLASS]] += size
    else:
        sim.port_bytes[o] += size
    sim.port_pkts[o] += 1
    sim.port_busy[o] += done - now
    sim.ps[pk, P_VC] = ovc
    dn = sim.port_peer[o]
    arrive = done + sim.port_lat[o]  # the tail's arrival (a NIC receives whole packets)
    if sim.port_router[dn] >= 0:
        if sim.cut_through:
            # virtual cut-through: routed once the head is in, the tail follows
            sim.pkt_tail[pk] = arrive
            arrive = now + sim.port_lat[o]
        arrive += sim.router_delay
        sim.occ[dn] += size
        if sim.occ[dn] > sim.port_peak[dn]:
            sim.port_peak[dn] = sim.occ[dn]
    push(sim, arrive, EV_ARRIVE, pk, dn, 0)


@part
def wake_port_at(sim, o, t):
    """Make sure a FREE event for ``o`` is pending at ``t`` (one per port: a wake-up at another
    time supersedes the pending one, which the loop then drops as stale)."""
    if sim.wake[o] != t:
        sim.wake[o] = t
        sim.wake_key[o] = push(sim, t, EV_FREE, o, 0, 0)
        returns_then(sim, o, t, sim.wake_key[o])


@part
def note_stall(sim, o, now):
    """Requests wait at ``o`` for credit: start its stall clock if not running."""
    if sim.req_head[o] >= 0 and sim.stall_start[o] < 0:
        sim.stall_start[o] = now


@part
def head_request(sim, qi):
    """``(packet, its output VC, its size)`` of the request of input queue ``qi``."""
    pk = sim.q_head[qi]
    return pk, sim.ps[pk, P_OUTVC], sim.ps[pk, P_SIZE]
