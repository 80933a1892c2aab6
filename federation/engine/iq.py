"""``router.model: booksim_iq``: BookSim2's input-queued router, clocked, inside the event loop.

The default router model is event-driven: an output port serves the oldest routed head with
credit as soon as it is idle.  This one reproduces BookSim2's ``iq`` router as its example
dragonfly configures it (``src/examples/dragonflyconfig``), so that BookSim's figures can be
reproduced, saturation included:

* **Clock.**  A router works in cycles of ``router.cycle`` (BookSim: one flit per link per
  cycle), and in ``router.speedup`` internal *steps* per cycle (BookSim's internal speedup; the
  steps of cycle ``t`` are ``floor(t s) .. floor((t+1) s) - 1``, as BookSim accumulates them).
  A router that has nothing to do has no events; one with packets takes one event per cycle.
* **Input queues.**  A packet arriving in cycle ``t`` (its link's latency after it was sent)
  joins its input VC's FIFO in the first step of ``t``.  Routing is lookahead (BookSim's
  ``routing_delay = 0``): each router's output port and VC were computed by the router before
  it (by the NIC's side for the first router, when the packet is injected), so the head of an
  input VC asks at once for its output VC.
* **VC allocation** (separable, input-first, one iteration): an output VC goes to one packet
  at a time, from its allocation until the packet has crossed the switch; among the input VCs
  asking for a free output VC, a round-robin arbiter per output VC (pointer after the last
  winner, over the router's input VCs) picks one.  A winner may bid for the switch from the
  next step.
* **Switch allocation** (separable, input-first, one iteration): each input port picks, among
  its VCs holding an output VC with credit for the packet downstream, one per output port
  (round robin over VCs from an offset after its last winner) and then one output (round robin
  over outputs); each output port picks one of the inputs that chose it (round robin over
  inputs).  A winner leaves its input buffer (its credit goes back upstream), takes the
  downstream credit, frees its output VC, has its next router's route computed (lookahead), and
  crosses the switch into the output port's queue in the next step.  The new head of its input
  VC asks for an output VC from the next step.
* **Output queues** are unbounded (downstream credit bounds them); each link sends one packet
  per ``ceil(serialisation / cycle)`` cycles from its queue at the end of a cycle, and the
  packet arrives ``1 + latency / cycle`` cycles later at the next router (a cycle on the wire,
  then the channel's latency), or at the NIC.
* **Credits.**  An input port returns one credit per cycle (a second waits for the next
  cycle); it arrives upstream a link's latency later and can be used ``router.credit_delay``
  after that (at a NIC at once).  The NIC ports of routers have unlimited credit.
* **NICs.**  A NIC sends at most one packet per link slot, from the cycle after its creation
  (or the cycle it is created in, if at a cycle boundary); its injection VC is the packet's
  (``router.injection_vc``; ``random`` draws a new VC in each cycle it is blocked, as BookSim
  does); it needs credit for the packet in that VC of its router's input buffer.

* **Deadlock.**  A router that holds packets takes an event every cycle, so a deadlocked
  network never runs out of events (the default model's sign of a deadlock) and would turn
  cycles until the clock's end.  The loop keeps the last cycle in which something under way
  lands (``sc[S_IQ_BUSY]``: a packet sent reaches its next router or NIC, a credit returns);
  every move of a packet (an injection, a switch grant, a link send) schedules such a landing.
  Once every landing is past, the network's state changes only by allocation, which grants
  within a cycle or two when anything can move, and by NICs' random VC draws.  A router that
  still holds packets ``C_QUIET`` cycles after the last landing (``quiet_cycles``) ends the run
  as a deadlock.

What it does not model: BookSim's flits (a packet is one unit: a packet of ``F`` flits holds
its link for ``F`` cycles but crosses the switch in one step), speculative allocation,
priorities, iSLIP and the other allocators, ``vc_alloc_delay`` and ``sw_alloc_delay`` other
than one step.  Rank programs are refused with this model (their NICs are not clocked).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from federation.engine.api import P_NEXT, P_OUTVC, P_SIZE, P_VC
from federation.engine.events import EV_ARRIVE, EV_ROUTER, S_IQ_BUSY, push
from federation.engine.jit import part

# states of an input VC
IDLE = 0  #: empty
VCA = 1  #: its head waits for an output VC
ACTIVE = 2  #: its head holds an output VC and bids for the switch

# figures (IQ.cfg)
C_CYCLE = 0  #: ps per cycle
C_CREDIT = 1  #: credit delay, cycles
C_VCRAND = 2  #: 1: a NIC draws its injection VC anew in each cycle it tries (BookSim)
C_QUIET = 3  #: cycles of quiet after which a router that still holds packets is deadlocked
C_PUSHES = 4  #: events one router cycle may push at most (the loop keeps room for them)
C_BIRTHS = 5  #: packets one router cycle may birth at most (one per NIC of the router)
N_CFG = 6


class IQ(NamedTuple):
    """State of the booksim_iq routers (length-1 arrays when the run uses the default model)."""

    cfg: np.ndarray  #: int64[N_CFG]
    speedup: np.float64
    lat: np.ndarray  #: int64[P] link latency in cycles (out of each port)
    ser_ps: np.ndarray  #: float64[P] ps per byte of the link out of each port
    link_free: np.ndarray  #: int64[P] first cycle the port's link can send again
    credit_next: np.ndarray  #: int64[P] first cycle the input port can send a credit again
    in_head: np.ndarray  #: int64[P] packets on the way to this input port (FIFO), -1 none
    in_tail: np.ndarray  #: int64[P]
    oq_head: np.ndarray  #: int64[P] the output queue of each port, -1 empty
    oq_tail: np.ndarray  #: int64[P]
    swi_ptr: np.ndarray  #: int64[P] input arbiter of the switch allocator (router output idx)
    swo_ptr: np.ndarray  #: int64[P] output arbiter of the switch allocator (router input idx)
    sw_off: np.ndarray  #: int64[P] the input's VC round-robin offset
    sw_out: np.ndarray  #: int64[P] this step: the output the input chose, -1 none
    sw_vc: np.ndarray  #: int64[P] and the VC
    sw_best: np.ndarray  #: int64[P] this step: the input the output chose, -1 none
    stalled: np.ndarray  #: int64[P] last cycle a bid for the port waited for credit
    ivc_state: np.ndarray  #: int64[P*V] IDLE, VCA, ACTIVE
    ivc_ready: np.ndarray  #: int64[P*V] first step it may bid (VC or switch allocation)
    ovc_owner: np.ndarray  #: int64[P*V] input VC holding this output VC, -1 free
    vca_ptr: np.ndarray  #: int64[P*V] round-robin pointer of this output VC's arbiter
    vca_best: np.ndarray  #: int64[P*V] this step: the input VC the arbiter chose, -1 none
    vca_bestd: np.ndarray  #: int64[P*V]
    pout: np.ndarray  #: int64[rows, 2] per packet row: output port at the router it is in
    #: (or goes to), and the cycle it arrives there or may leave the output queue
    r_next: np.ndarray  #: int64[R] the router's scheduled cycle, -1 none
    r_load: np.ndarray  #: int64[R] packets in its input VCs and output queues
    nic_free: np.ndarray  #: int64[N] first cycle the NIC's link can send again


def no_iq() -> np.ndarray:
    """The placeholder of a default-model run: one array, not the 27 of :class:`IQ`.  The loop
    reads ``sim.iq`` only in its ``IQ`` variant (numba drops the other branches before it
    types them), and every part called with the loop's state carries each of its arrays, so
    a default-model loop with the whole placeholder compiled 27 arrays' worth of code into
    each of those calls."""
    return np.zeros(1, dtype=np.int64)


def new_iq(cycle_ps: int, speedup: float, credit_delay_ps: float, port_lat: np.ndarray,
           port_ser: np.ndarray, n_vcs: int, router_port_start: np.ndarray,
           node_router: np.ndarray, rows: int, random_vc: bool) -> IQ:
    """The booksim_iq state: ``port_lat`` ps and ``port_ser`` ps per byte of each port."""
    P = port_lat.shape[0]
    n_routers = router_port_start.shape[0] - 1
    n_nodes = node_router.shape[0]
    i64 = np.int64

    def full(n: int, v: int) -> np.ndarray:
        return np.full(n, v, dtype=i64)

    cfg = np.zeros(N_CFG, dtype=i64)
    cfg[C_CYCLE] = cycle_ps
    cfg[C_CREDIT] = int(round(credit_delay_ps / cycle_ps))
    cfg[C_VCRAND] = int(random_vc)
    cfg[C_QUIET] = quiet_cycles(n_vcs, random_vc)
    cfg[C_PUSHES], cfg[C_BIRTHS] = cycle_bounds(speedup, router_port_start, node_router)
    pout = np.zeros((rows, 2), dtype=i64)
    pout[:, 0] = -1
    return IQ(cfg=cfg, speedup=np.float64(speedup),
              lat=np.round(port_lat / cycle_ps).astype(i64),
              ser_ps=port_ser.astype(np.float64),
              link_free=full(P, 0), credit_next=full(P, 0), in_head=full(P, -1),
              in_tail=full(P, -1), oq_head=full(P, -1), oq_tail=full(P, -1),
              swi_ptr=full(P, 0), swo_ptr=full(P, 0), sw_off=full(P, 0), sw_out=full(P, -1),
              sw_vc=full(P, -1), sw_best=full(P, -1), stalled=full(P, -1),
              ivc_state=full(P * n_vcs, IDLE), ivc_ready=full(P * n_vcs, 0),
              ovc_owner=full(P * n_vcs, -1), vca_ptr=full(P * n_vcs, 0),
              vca_best=full(P * n_vcs, -1), vca_bestd=full(P * n_vcs, 0), pout=pout,
              r_next=full(n_routers, -1), r_load=full(n_routers, 0),
              nic_free=full(n_nodes, 0))


def cycle_bounds(speedup: float, router_port_start: np.ndarray,
                 node_router: np.ndarray) -> tuple[int, int]:
    """``(events, births)`` one router cycle may cause at most, which the loop must have room
    for before it (the default model's events push ``queue.ROOM`` and birth two at most).  In
    each of its ``ceil(speedup)`` steps every output port grants one input, whose credit goes
    back as an event; at the cycle's end every port sends one packet (an arrival event at a
    NIC, or the next router's cycle), and the router books its own next cycle.  Each of its
    NICs injects one packet a cycle, born then."""
    ports = int(np.diff(router_port_start).max(initial=0))
    nics = int(np.bincount(node_router).max(initial=0)) if node_router.shape[0] else 0
    return ports * (math.ceil(speedup) + 1) + 1, nics


def iq_margins(iq: IQ | np.ndarray) -> tuple[int, int]:
    """``(events, free rows)`` the driver grows the queue and the packet pool by, beyond their
    usual margins, when the loop returns for room: a router cycle's (0, 0 by default)."""
    if not isinstance(iq, IQ):
        return 0, 0
    return int(iq.cfg[C_PUSHES]), int(iq.cfg[C_BIRTHS]) + 4


def quiet_cycles(n_vcs: int, random_vc: bool) -> int:
    """Cycles without any landing after which a router holding packets is deadlocked.  Without
    random injection VCs nothing can move after the last landing but allocation (two steps);
    with them a NIC blocked on a full VC draws again every cycle, and one open VC of ``V``
    is missed ``M`` times running with probability ``((V - 1) / V) ** M``: below ``e ** -64``
    for ``M = 64 V``."""
    return 256 + (64 * n_vcs if random_vc else 0)


def grown_rows(iq: IQ | np.ndarray, rows: int) -> IQ | np.ndarray:
    """``iq`` with ``rows`` packet rows (the driver grew the pool)."""
    if not isinstance(iq, IQ):  # the default model's placeholder
        return iq
    pout = np.zeros((rows, 2), dtype=np.int64)
    pout[:, 0] = -1
    pout[:iq.pout.shape[0]] = iq.pout
    return iq._replace(pout=pout)


def default_cycle(port_ser: np.ndarray, packet_size: int) -> float:
    """ps the fastest link takes to send one packet: ``router.cycle``'s default."""
    return float(packet_size * port_ser.min())


def steps_of(t: int, speedup: float) -> tuple[int, int]:
    """``(first, count)`` of cycle ``t``'s internal steps (Python twin of :func:`step_range`)."""
    a = math.floor(t * speedup)
    return a, math.floor((t + 1) * speedup) - a


@part
def step_range(iq, t):
    """``(first step, steps)`` of cycle ``t``."""
    a = np.int64(np.floor(t * iq.speedup))
    b = np.int64(np.floor((t + 1) * iq.speedup))
    return a, b - a


@part
def flits(iq, o, size):
    """Cycles a packet of ``size`` bytes holds the link of port ``o``: its serialisation in
    whole picoseconds (rounded as the default router rounds it) over the cycle, rounded up.
    (Before stop 47 the exact serialisation was divided by the cycle, itself rounded to whole
    picoseconds: the default cycle, one packet on the fastest link, then made that link take
    two cycles a packet whenever its packet time had a fraction below half a picosecond.)"""
    ser = np.int64(size * iq.ser_ps[o] + 0.5)
    c = iq.cfg[C_CYCLE]
    return max((ser + c - 1) // c, np.int64(1))


@part
def activate(sim, r, c):
    """Router ``r`` works in cycle ``c`` (an earlier scheduled cycle covers it: the router
    then looks ahead at its end)."""
    iq = sim.iq
    if iq.r_next[r] < 0 or c < iq.r_next[r]:
        iq.r_next[r] = c
        push_router(sim, r, c)


@part
def landing(sim, c):
    """Something under way lands in cycle ``c`` (a packet reaches its next router or NIC, a
    credit returns): the deadlock watch waits for it (see the module docstring)."""
    if c > sim.sc[S_IQ_BUSY]:
        sim.sc[S_IQ_BUSY] = c


@part
def quiet(sim, t):
    """Nothing has landed for ``C_QUIET`` cycles before cycle ``t``: a router that still holds
    packets is deadlocked."""
    return t > sim.sc[S_IQ_BUSY] + sim.iq.cfg[C_QUIET]


@part
def push_router(sim, r, c):
    """The event of router ``r``'s cycle ``c``: one picosecond into the cycle, after the
    credits and deliveries of that instant."""
    push(sim, c * sim.iq.cfg[C_CYCLE] + 1, EV_ROUTER, r, 0, 0)


@part
def inflight_append(sim, ip, pk, cycle):
    """Packet ``pk`` reaches input port ``ip`` in ``cycle`` (links are FIFOs)."""
    iq = sim.iq
    iq.pout[pk, 1] = cycle
    sim.ps[pk, P_NEXT] = -1
    if iq.in_tail[ip] < 0:
        iq.in_head[ip] = pk
    else:
        sim.ps[iq.in_tail[ip], P_NEXT] = pk
    iq.in_tail[ip] = pk


@part
def receive(sim, r, t, step):
    """The packets reaching router ``r``'s input ports by cycle ``t`` join their input VCs;
    returns the earliest later arrival cycle (-1 none)."""
    iq = sim.iq
    V = sim.n_vcs
    nxt = np.int64(-1)
    for ip in range(sim.router_port_start[r], sim.router_port_start[r + 1]):
        pk = iq.in_head[ip]
        while pk >= 0 and iq.pout[pk, 1] <= t:
            following = sim.ps[pk, P_NEXT]
            iq.in_head[ip] = following
            if following < 0:
                iq.in_tail[ip] = -1
            qi = ip * V + sim.ps[pk, P_VC]
            sim.ps[pk, P_NEXT] = -1
            if sim.q_tail[qi] < 0:
                sim.q_head[qi] = pk
                iq.ivc_state[qi] = VCA
                iq.ivc_ready[qi] = step
            else:
                sim.ps[sim.q_tail[qi], P_NEXT] = pk
            sim.q_tail[qi] = pk
            iq.r_load[r] += 1
            pk = following
        if pk >= 0 and (nxt < 0 or iq.pout[pk, 1] < nxt):
            nxt = iq.pout[pk, 1]
    return nxt


@part
def wrap(x, m):
    """``x % m`` for ``-m < x < m``: a round-robin distance without a division (every
    pointer and index the allocators subtract lies in ``[0, m)``)."""
    return x + m if x < 0 else x


@part
def after(x, m):
    """``(x + 1) % m`` for ``0 <= x < m``: the round-robin pointer past ``x``."""
    return x + 1 if x + 1 < m else np.int64(0)


@part
def vc_allocate(sim, r, step):
    """One step of VC allocation at router ``r`` (see the module docstring)."""
    iq = sim.iq
    V = sim.n_vcs
    first = sim.router_port_start[r]
    end = sim.router_port_start[r + 1]
    nvc = (end - first) * V
    qi0 = first * V
    any_bid = False
    for qi in range(qi0, end * V):
        if iq.ivc_state[qi] != VCA or iq.ivc_ready[qi] > step:
            continue
        pk = sim.q_head[qi]
        k = iq.pout[pk, 0] * V + sim.ps[pk, P_OUTVC]
        if iq.ovc_owner[k] >= 0:
            continue  # held by another packet
        d = wrap(qi - qi0 - iq.vca_ptr[k], nvc)
        if iq.vca_best[k] < 0 or d < iq.vca_bestd[k]:
            iq.vca_best[k] = qi
            iq.vca_bestd[k] = d
        any_bid = True
    if not any_bid:
        return
    for qi in range(qi0, end * V):  # grant (each output VC once)
        if iq.ivc_state[qi] != VCA or iq.ivc_ready[qi] > step:
            continue
        pk = sim.q_head[qi]
        k = iq.pout[pk, 0] * V + sim.ps[pk, P_OUTVC]
        if iq.vca_best[k] == qi:
            iq.vca_best[k] = -1
            iq.ovc_owner[k] = qi
            iq.vca_ptr[k] = after(qi - qi0, nvc)
            iq.ivc_state[qi] = ACTIVE
            iq.ivc_ready[qi] = step + 1


@part
def sw_select(sim, r, t, step):
    """One step of switch allocation at router ``r``: fills ``sw_best[o]`` (the input port
    each output port grants, and through ``sw_vc`` its VC); returns the grants' count."""
    iq = sim.iq
    V = sim.n_vcs
    first = sim.router_port_start[r]
    end = sim.router_port_start[r + 1]
    n = end - first
    bids = 0
    for ip in range(first, end):
        best_key = np.int64(-1)
        for vc in range(V):
            qi = ip * V + vc
            if iq.ivc_state[qi] != ACTIVE or iq.ivc_ready[qi] > step:
                continue
            pk = sim.q_head[qi]
            o = iq.pout[pk, 0]
            if sim.credits[o * V + sim.ps[pk, P_OUTVC]] < sim.ps[pk, P_SIZE]:
                iq.stalled[o] = t
                continue
            # the input arbiter: outputs round robin from its pointer, then VCs from the
            # input's offset (BookSim keeps one VC per output, then picks an output)
            key = wrap(o - first - iq.swi_ptr[ip], n) * V + wrap(vc - iq.sw_off[ip], V)
            if best_key < 0 or key < best_key:
                best_key = key
                iq.sw_out[ip] = o
                iq.sw_vc[ip] = vc
        if best_key >= 0:
            bids += 1
            o = iq.sw_out[ip]
            d = wrap(ip - first - iq.swo_ptr[o], n)
            b = iq.sw_best[o]
            if b < 0 or d < wrap(b - first - iq.swo_ptr[o], n):
                iq.sw_best[o] = ip
        else:
            iq.sw_out[ip] = -1
    return bids


@part
def take_granted(sim, r, ip, o, step):
    """Input ``ip`` won output ``o``: the packet leaves its input VC, frees its output VC,
    takes the downstream credit and joins ``o``'s output queue from the next step.  Returns
    ``(packet, its input VC)``; the caller sends the credit back and routes ahead."""
    iq = sim.iq
    V = sim.n_vcs
    first = sim.router_port_start[r]
    n = sim.router_port_start[r + 1] - first
    vc = iq.sw_vc[ip]
    qi = ip * V + vc
    pk = sim.q_head[qi]
    nh = sim.ps[pk, P_NEXT]
    sim.q_head[qi] = nh
    if nh < 0:
        sim.q_tail[qi] = -1
        iq.ivc_state[qi] = IDLE
    else:
        iq.ivc_state[qi] = VCA
        iq.ivc_ready[qi] = step + 1
    ovc = sim.ps[pk, P_OUTVC]
    k = o * V + ovc
    iq.ovc_owner[k] = -1
    size = sim.ps[pk, P_SIZE]
    sim.credits[k] -= size
    sim.occ[ip] -= size
    iq.swo_ptr[o] = after(ip - first, n)
    iq.swi_ptr[ip] = after(o - first, n)
    iq.sw_off[ip] = after(vc, V)
    # the crossbar: in the output queue from the next step
    sim.ps[pk, P_NEXT] = -1
    if iq.oq_tail[o] < 0:
        iq.oq_head[o] = pk
    else:
        sim.ps[iq.oq_tail[o], P_NEXT] = pk
    iq.oq_tail[o] = pk
    return pk, np.int64(vc)


@part
def send(sim, o, pk, t):
    """Output port ``o`` sends ``pk`` at the end of cycle ``t``: it holds the link for its
    flits and reaches the peer a cycle and the link's latency after its last flit."""
    iq = sim.iq
    C = iq.cfg[C_CYCLE]
    size = sim.ps[pk, P_SIZE]
    F = flits(iq, o, size)
    iq.link_free[o] = t + F
    sim.port_bytes[o] += size
    sim.port_pkts[o] += 1
    sim.port_busy[o] += F * C
    sim.busy_until[o] = (t + F) * C
    arrival = t + F + iq.lat[o]
    landing(sim, arrival)
    dn = sim.port_peer[o]
    if sim.port_router[dn] < 0:
        push(sim, arrival * C, EV_ARRIVE, pk, dn, 0)  # delivered to the NIC
        return
    sim.occ[dn] += size
    if sim.occ[dn] > sim.port_peak[dn]:
        sim.port_peak[dn] = sim.occ[dn]
    inflight_append(sim, dn, pk, arrival)
    activate(sim, sim.port_router[dn], arrival)


@part
def send_nic(sim, o, pk, t, F):
    """The NIC port ``o`` sends ``pk`` in cycle ``t`` (``F`` cycles on the link)."""
    iq = sim.iq
    C = iq.cfg[C_CYCLE]
    size = sim.ps[pk, P_SIZE]
    sim.port_bytes[o] += size
    sim.port_pkts[o] += 1
    sim.port_busy[o] += F * C
    sim.busy_until[o] = (t + F) * C
    dn = sim.port_peer[o]
    sim.occ[dn] += size
    if sim.occ[dn] > sim.port_peak[dn]:
        sim.port_peak[dn] = sim.occ[dn]
    arrival = t + F + iq.lat[o]
    landing(sim, arrival)
    inflight_append(sim, dn, pk, arrival)
