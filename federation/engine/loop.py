"""The compiled event loop: events in time order, each handled by the router, NIC, routing and
arbiter parts.

The routing, the arbiter and the routing controller are *call-outs*: ``ROUTE`` and ``INJECT``
(the routing plugin's per-hop and at-injection functions), ``ARBITRATE`` (the arbiter's) and
``CONTROL`` (a routing controller's per-message decision, called only in a ``CONTROLLED``
variant).  The four imports below bind the built-in table routing, oldest-first arbitration
and no controller; for any other set, :mod:`federation.engine.compile` writes a copy of this
module with those four lines replaced and compiles that, so plugin code is compiled *into* the
loop (inlined by LLVM like the built-ins) and cached on disk like it.  Keep the marked block
exactly four import lines.  That is why this module is longer than the others: every part
that calls a call-out (the routing's ``route_answer`` and the NIC's ``launch``, the booksim_iq
router's cycle, ``try_send``) must live in the module that copy is made of; the parts that
call none are kept elsewhere (``router.py``, ``credits.py``, ``feed.py``, ``nic_qos.py``,
``programs.py``), but for the NIC's few helpers beside ``try_inject``.

Event kinds (see :mod:`federation.engine.events`): ARRIVE (a packet reached an input port or a
NIC), READY (a new head of an input queue is routed), FREE (an output port finished sending),
CREDIT (credit reached an output port), NIC (a node's next packet may leave).
"""

from __future__ import annotations

import numpy as np

from federation.engine.api import (
    M_INJECT,
    NC_STALL,
    P_CLASS,
    P_DST,
    P_HOPS,
    P_NEXT,
    P_OUTVC,
    P_SIZE,
    P_VC,
    S_VCBASE,
    random_below,
)
from federation.engine.arbiter_check import arbiter_answer_ok
from federation.engine.credits import credit_wait, returns_then, settle_credits
from federation.engine.events import (
    EV_ARRIVE,
    EV_CREDIT,
    EV_FREE,
    EV_NIC,
    EV_OP,
    EV_READY,
    EV_ROUTER,
    S_BAD_A,
    S_BAD_B,
    S_BAD_EV,
    S_BAD_ROUTER,
    S_BAD_TIME,
    S_BADPKT,
    S_CRFREE,
    S_DELIVERED,
    S_EVENTS,
    S_FREE,
    S_HOPS,
    S_KEY,
    S_KICK,
    S_LOADED,
    S_NOW,
    S_OPS_DONE,
    S_QUEUED,
    S_REC,
    SEQ_BITS,
    ST_BAD_PORT,
    ST_BAD_VC,
    ST_BUDGET,
    ST_DEADLOCK,
    ST_DONE,
    ST_HEAP_FULL,
    ST_HOP_LIMIT,
    ST_NO_ROUTE,
    ST_POOL_FULL,
    ST_PROGRAM_STUCK,
    ST_PROGRAMS_DONE,
    ST_RECORDS_FULL,
    ST_TIME_LIMIT,
    ST_UNTIL,
    TIME_LIMIT_PS,
    push,
)
from federation.engine.feed import (
    F_CLS,
    F_SIZE,
    F_TIME,
    F_VC,
    born,
    count_request,
    count_response,
    end_nic_stall,
    record,
    wake_nics,
)
from federation.engine.iq import C_BIRTHS as IQ_BIRTHS
from federation.engine.iq import C_CREDIT as IQ_CREDIT
from federation.engine.iq import C_CYCLE as IQ_CYCLE
from federation.engine.iq import C_PUSHES as IQ_PUSHES
from federation.engine.iq import C_VCRAND as IQ_VCRAND
from federation.engine.iq import activate
from federation.engine.iq import flits as iq_flits
from federation.engine.iq import landing as iq_landing
from federation.engine.iq import quiet as iq_quiet
from federation.engine.iq import receive as iq_receive
from federation.engine.iq import send as iq_send
from federation.engine.iq import send_nic as iq_send_nic
from federation.engine.iq import step_range as iq_steps
from federation.engine.iq import sw_select as iq_sw_select
from federation.engine.iq import take_granted as iq_take
from federation.engine.iq import vc_allocate as iq_vc_allocate
from federation.engine.jit import kernel, part
from federation.engine.nic_qos import (
    lone_send,
    nic_candidates,
    nic_next_due,
    nic_pick,
    nic_take,
    one_class_send,
)
from federation.engine.prefetch import prefetch_row
from federation.engine.programs import (
    FLOW_DATA,
    delivered,
    finish_at,
    handle_op,
    new_packet,
    settle,
    unsettled,
)
from federation.engine.qos import CLASS_MASK, LINK_SHIFT, NIC_WALK, ST_QOS_RING
from federation.engine.queue import ROOM, ahead, big, pop, room_events
from federation.engine.router import (
    enqueue,
    note_stall,
    post_request,
    take_request,
    transmit,
    wake_port_at,
)

__all__ = ["run_loop"]

#: events ahead of the current one whose rows the loop prefetches (an arrival's row was last
#: touched a cable's latency ago: thousands of events, out of every cache but the last)
LOOKAHEAD = 8

# --- variant (compile.py replaces these lines): PROGRAMS False compiles a loop without rank
# programs, IQ True one of booksim_iq routers (federation.engine.iq), CHECK_ARBITER False one
# that trusts the arbiter's answers (engine: {kind: native, check_arbiter: false}), CONTROLLED
# True one that calls a routing controller at each send (without, the call is not compiled),
# QOS True one of several traffic classes owning disjoint VC sets, RINGS True one whose
# arbiter state is a federation.engine.qos.QosState with sliding windows (its rings may grow),
# QOS_NIC True one whose NICs pick the class that sends next by that QosState's policy,
# COUNTERS False one without the NIC counters (requests, flits, latency; outputs.nics off and no
# routing controller)
PROGRAMS = True
IQ = False
CHECK_ARBITER = True
CONTROLLED = False
QOS = False
RINGS = False
QOS_NIC = False
COUNTERS = True
# --- end of variant

# --- call-outs (compile.py replaces these lines)
from federation.engine.arbiters import oldest_first as ARBITRATE  # noqa: E402
from federation.engine.programs import keep_mode as CONTROL  # noqa: E402
from federation.engine.tables_route import inject as INJECT  # noqa: E402
from federation.engine.tables_route import route as ROUTE  # noqa: E402

# --- end of call-outs


@part
def control_sends(sim, pg):
    """The routing controller's decisions (``CONTROL``, compiled in only when ``CONTROLLED``)
    for the messages handed to their NICs by the event just handled, in the order they were
    handed: each message's mode, before its first packet is born."""
    for i in range(1, pg.ctl_pend[0] + 1):
        m = pg.ctl_pend[i]
        pg.msg_mode[m] = CONTROL(sim, pg.ctl, pg.flow_node[3 * m], pg.msg_size[m],
                                 pg.msg_mode[m])
    pg.ctl_pend[0] = 0


@part
def route_answer(sim, rt, r, ip, pk, eject_vc):
    """``(port, VC, status)`` of packet ``pk`` at router ``r`` (arrived on ``ip``): the port
    to its node, on ``eject_vc``, at its destination router, else the routing's answer,
    checked; status 0, or the ``ST_*`` code of a bad answer.  With QoS classes the routing
    answers in its own VCs ``0 .. need - 1`` (``need = n_vcs / classes``) and the packet's
    class's base ``class x need`` is added here, to the ejection VC too; the api's credit
    accessors see the class's VCs through ``sc[S_VCBASE]``, set here before ``ROUTE``."""
    V = sim.n_vcs
    base = np.int64(0)
    if QOS:
        V = sim.vc_need
        base = np.int64(sim.ps[pk, P_CLASS]) * V
        sim.sc[S_VCBASE] = base
        eject_vc += base
    dnode = sim.ps[pk, P_DST]
    if sim.node_router[dnode] == r:  # ejection
        return sim.node_port[dnode], eject_vc, 0
    if sim.ps[pk, P_HOPS] >= sim.max_hops:
        sim.sc[S_BADPKT] = pk
        sim.sc[S_BAD_ROUTER] = r
        return np.int64(-1), np.int64(0), ST_HOP_LIMIT
    o, ovc = ROUTE(sim, rt, r, ip, pk)
    status = 0
    if o < 0:
        status = ST_NO_ROUTE
    elif (o < sim.router_port_start[r] or o >= sim.router_port_start[r + 1]
          or sim.port_router[sim.port_peer[o]] < 0):
        status = ST_BAD_PORT  # another router's port, or a port to a node not the dst
    elif ovc < 0 or ovc >= V:
        status = ST_BAD_VC
    if status != 0:
        sim.sc[S_BADPKT] = pk
        sim.sc[S_BAD_ROUTER] = r
        sim.sc[S_BAD_A] = o
        sim.sc[S_BAD_B] = ovc
    return np.int64(o), np.int64(ovc) + base, status


@part
def route_head(sim, rt, ip, vc, now):
    """Route the head packet of input queue (``ip``, ``vc``) and post its request; returns
    ``(output port, status)`` with status 0, or the ``ST_*`` code of a bad routing answer."""
    qi = ip * sim.n_vcs + vc
    pk = sim.q_head[qi]
    o, ovc, status = route_answer(sim, rt, sim.port_router[ip], ip, pk, np.int64(0))
    if status != 0:
        return np.int64(-1), status
    sim.ps[pk, P_OUTVC] = ovc
    post_request(sim, qi, o)
    return o, 0


@part
def try_send(sim, ab, o, now):
    """Output port ``o`` of a router: if idle, send what the arbiter picks.  Returns 0, or
    ``ST_BAD_ARBITER`` when the arbiter's answer is refused (``arbiter_answer_ok``)."""
    if sim.busy_until[o] > now:
        if sim.req_head[o] >= 0:
            wake_port_at(sim, o, sim.busy_until[o])
        return np.int64(0)
    settle_credits(sim, o)  # the credits returned by now
    qi, prev = ARBITRATE(sim, ab, o)
    if CHECK_ARBITER:
        bad = arbiter_answer_ok(sim, o, qi, prev)
        if bad != 0:
            return bad
    if qi < 0:
        note_stall(sim, o, now)
        if sim.req_head[o] >= 0:
            credit_wait(sim, o)
        return np.int64(0)
    pk, done = take_request(sim, o, qi, prev, now)
    transmit(sim, o, pk, sim.ps[pk, P_OUTVC], done, now)
    if sim.req_head[o] >= 0:
        wake_port_at(sim, o, done)
    return np.int64(0)


@part
def nic_next(sim, pg, node):
    """``(time, flow)`` of node ``node``'s next packet: the earlier of its next open-loop
    packet (creation order; flow -1) and the head of its rank-program flow queue
    (``TIME_LIMIT_PS``: it has none)."""
    t = TIME_LIMIT_PS
    ptr = sim.nic_ptr[node]
    if ptr < sim.nic_first[node + 1]:
        t = sim.feed[ptr, F_TIME]
    if PROGRAMS:
        f = pg.nic_fhead[node]
        if f >= 0 and pg.flow_time[f] < t:
            return pg.flow_time[f], f
    return t, np.int64(-1)


@part
def nic_head(sim, pg, node):
    """``(packet row, time it may leave, flow)`` of node ``node``'s next packet (see
    :func:`nic_next`; row -1: nothing to send).  A packet is born (takes a row) the first
    time it is the head."""
    t, f = nic_next(sim, pg, node)
    if PROGRAMS and f >= 0:
        if pg.nic_frow[node] < 0:
            pg.nic_frow[node] = new_packet(sim, pg, node, f)
        return pg.nic_frow[node], t, f
    if t == TIME_LIMIT_PS:
        return np.int64(-1), t, f
    if sim.nic_orow[node] < 0:
        sim.nic_orow[node] = born(sim, pg, node, sim.nic_ptr[node])
    return sim.nic_orow[node], t, f


@part
def nic_wake_at(sim, node, t):
    if sim.nic_wake[node] != t:
        sim.nic_wake[node] = t
        sim.nic_wake_key[node] = push(sim, t, EV_NIC, node, 0, 0)
        returns_then(sim, sim.nic_port[node], t, sim.nic_wake_key[node])


@part
def nic_advance(sim, pg, node, f, done):
    """The packet ``nic_head`` gave has left: move past it.  When it is the last packet of a
    send's data, the send finishes as it leaves (``done``)."""
    if not PROGRAMS or f < 0:
        sim.nic_ptr[node] += 1
        sim.nic_orow[node] = -1
        return
    pg.nic_frow[node] = -1
    pos = pg.nic_fpos[node] + 1
    if pos == 1 and pg.flow_kind[f] == FLOW_DATA:
        pg.msg_start[pg.flow_msg[f]] = sim.sc[S_NOW]
    if pos < pg.flow_npk[f]:
        pg.nic_fpos[node] = pos
        return
    nxt = pg.flow_next[f]
    pg.nic_fhead[node] = nxt
    pg.nic_fpos[node] = 0
    if nxt < 0:
        pg.nic_ftail[node] = -1
    if pg.flow_kind[f] == FLOW_DATA:
        finish_at(sim, pg.flow_op[f], done)


@part
def launch(sim, rt, node, pk, ovc, base, now):
    """Packet ``pk`` leaves ``node``'s NIC (QoS classes at injection) into injection VC ``ovc``
    of its class's VCs (from ``base``, which the routing's credit accessors see): noted,
    counted, handed to ``INJECT``."""
    sim.ps[pk, P_VC] = ovc
    sim.sc[S_VCBASE] = base
    sim.pm[pk, M_INJECT] = now
    end_nic_stall(sim, node, now)
    if COUNTERS:
        count_request(sim, node, pk)
    INJECT(sim, rt, node, pk)


@part
def inject_one(sim, pg, rt, ab, node, c, now):
    """:func:`inject_classes` at a node whose feed slots are all of class ``c``
    (``QosState.nic_one``) or, ``c`` -1, of several classes, when it has no rank-program flow
    waiting.  Of one class, its class's head is its oldest unsent slot (none is ever sent out
    of turn there), so it goes as without classes, the policy told of the send (its counters
    at the NIC port stay exact).  Of several, the same holds when its oldest unsent slot is due
    and has credit and the next is not due (a node's slots are in time order, so no other
    class's head is due): the class walk would find that one candidate, and the policy picks it
    as the walk's :func:`nic_pick` does.  Returns False, having done nothing, where the class
    walk must decide (at once for a node marked ``NIC_WALK``).  The same packets at the same
    times as the class walk (tested)."""
    if c == NIC_WALK:
        return False
    p = sim.nic_ptr[node]
    end = sim.nic_first[node + 1]
    mixed = c < 0
    if p >= end:
        return not mixed
    feed = sim.feed
    t = feed[p, F_TIME]
    if t > now:
        if mixed:
            return False
        nic_wake_at(sim, node, t)
        return True
    if mixed:
        if p + 1 < end and feed[p + 1, F_TIME] <= now:
            return False  # two heads may be due
        c = feed[p, F_CLS] & CLASS_MASK
    o = sim.nic_port[node]
    size = feed[p, F_SIZE]
    base = c * sim.vc_need
    ovc = base + feed[p, F_VC]  # below vc_need (the feed's draw)
    if sim.credits[o * sim.n_vcs + ovc] < size:
        if mixed:
            return False
        if sim.stall_start[o] < 0:
            sim.stall_start[o] = now
        credit_wait(sim, o)
        return True
    if sim.sc[S_FREE] < 1:  # no row (never seen: the loop keeps 4 free per event)
        nic_wake_at(sim, node, now)
        return True
    if mixed:
        lone_send(sim, ab, node, o, c, size)
    else:
        one_class_send(sim, ab, o, c, size)  # the policy told (caps count it)
    pk = born(sim, pg, node, p)
    sim.nic_ptr[node] = p + 1
    ab.nic_ptr[node * ab.n_classes + c] = feed[p, F_CLS] >> LINK_SHIFT  # its class's next
    launch(sim, rt, node, pk, ovc, base, now)
    done = now + np.int64(size * sim.port_ser[o] + 0.5)
    transmit(sim, o, pk, ovc, done, now)
    if p + 1 < end:
        tn = feed[p + 1, F_TIME]
        nic_wake_at(sim, node, tn if tn > done else done)
    return True


@part
def inject_classes(sim, pg, rt, ab, node, now):
    """Node ``node``'s NIC with QoS classes at injection (``QOS_NIC``,
    :mod:`federation.engine.nic_qos`): of the classes whose head is due and has credit, send
    the one the policy picks; else stall (a due head without credit) or wake when the next
    head is due."""
    o = sim.nic_port[node]
    if sim.busy_until[o] > now:  # looked at again when the link frees (births none now:
        if (sim.nic_ptr[node] < sim.nic_first[node + 1]  # an event births two packets at most)
                or (PROGRAMS and pg.nic_fhead[node] >= 0)):
            nic_wake_at(sim, node, sim.busy_until[o])
        return
    settle_credits(sim, o)  # the credits returned by now
    if not PROGRAMS or pg.nic_fhead[node] < 0:  # one class waits, or one head is due
        if inject_one(sim, pg, rt, ab, node, ab.nic_one[node], now):
            return
    n, later, blocked, one = nic_candidates(sim, pg, ab, node, now, PROGRAMS)
    if n > 0 and sim.sc[S_FREE] < 1:  # no row for an open-loop packet (never seen: the loop
        nic_wake_at(sim, node, now)  # keeps 4 free per event); again once the pool grows
        return
    c = np.int64(-1)
    if n > 0:
        c = nic_pick(sim, ab, node, o, n, one)
    if c < 0:
        if blocked:
            if sim.stall_start[o] < 0:
                sim.stall_start[o] = now
            credit_wait(sim, o)
        if later < TIME_LIMIT_PS:
            nic_wake_at(sim, node, later)
        return
    pk, f = nic_take(sim, pg, ab, node, c)
    base = c * sim.vc_need
    ovc = base + sim.ps[pk, P_VC]  # below vc_need (the feed's and the programs' draws)
    launch(sim, rt, node, pk, ovc, base, now)
    done = now + np.int64(ab.size[c] * sim.port_ser[o] + 0.5)
    if f >= 0:  # an open-loop packet's slot is passed in nic_take
        nic_advance(sim, pg, node, f, done)
    transmit(sim, o, pk, ovc, done, now)
    tn = nic_next_due(sim, pg, ab, node, c, n, blocked, later, now, PROGRAMS)
    if tn < TIME_LIMIT_PS:
        nic_wake_at(sim, node, tn if tn > done else done)


@part
def try_inject(sim, pg, rt, ab, node, now):
    """Node ``node``'s NIC: send its next packet if it exists, is due, and has credit."""
    if QOS_NIC:
        inject_classes(sim, pg, rt, ab, node, now)
        return
    pk, tn, f = nic_head(sim, pg, node)
    if pk < 0:
        return
    o = sim.nic_port[node]
    if sim.busy_until[o] > tn:
        tn = sim.busy_until[o]
    if tn > now:
        nic_wake_at(sim, node, tn)
        return
    ovc = sim.ps[pk, P_VC]  # the injection VC the driver chose (router.injection_vc)
    base = np.int64(0)
    if QOS:  # in the packet's class's VCs: the driver's choice modulo the routing's need
        base = np.int64(sim.ps[pk, P_CLASS]) * sim.vc_need
        ovc = base + ovc  # below vc_need (the feed's and the programs' draws)
    size = sim.ps[pk, P_SIZE]
    settle_credits(sim, o)
    if sim.credits[o * sim.n_vcs + ovc] < size:
        if sim.stall_start[o] < 0:
            sim.stall_start[o] = now
        credit_wait(sim, o)
        return
    if QOS:  # noted only as it leaves: a head that waits for credit is tried again as it
        sim.ps[pk, P_VC] = ovc  # was drawn (its class's base added once, not per try)
        sim.sc[S_VCBASE] = base
    sim.pm[pk, M_INJECT] = now
    end_nic_stall(sim, node, now)
    if COUNTERS:
        count_request(sim, node, pk)
    INJECT(sim, rt, node, pk)
    done = now + np.int64(size * sim.port_ser[o] + 0.5)
    nic_advance(sim, pg, node, f, done)
    transmit(sim, o, pk, ovc, done, now)
    tn, _ = nic_next(sim, pg, node)  # not born until it is the head
    if tn < TIME_LIMIT_PS:
        nic_wake_at(sim, node, tn if tn > done else done)


# --------------------------------------------------------------------------- booksim_iq


@part
def iq_route(sim, rt, r, ip, pk):
    """Lookahead routing: ``pk``'s output port (``iq.pout``) and VC at router ``r``, which it
    will enter on ``ip`` in the VC it is in (``P_VC``; an ejection keeps that VC, as
    BookSim's phase VCs do); returns the status."""
    o, ovc, status = route_answer(sim, rt, r, ip, pk, np.int64(sim.ps[pk, P_VC]))
    if status == 0:
        sim.iq.pout[pk, 0] = o
        sim.ps[pk, P_OUTVC] = ovc
    return status


@part
def iq_inject(sim, pg, rt, node, t):
    """Node ``node``'s NIC in cycle ``t``: send its next packet if it is created by then, the
    link is free and its router's input VC has credit for it.  Returns ``(status, the next
    cycle the NIC needs, -1 none)``."""
    iq = sim.iq
    C = iq.cfg[IQ_CYCLE]
    pk, tn, f = nic_head(sim, pg, node)
    if pk < 0:
        return 0, np.int64(-1)
    due = max((tn + C - 1) // C, iq.nic_free[node])
    if due > t:
        return 0, due
    o = sim.nic_port[node]
    V = sim.n_vcs
    size = sim.ps[pk, P_SIZE]
    vc = np.int64(sim.ps[pk, P_VC])
    if iq.cfg[IQ_VCRAND]:
        vc = random_below(sim, V)
    if sim.credits[o * V + vc] < size:
        sim.port_stall[o] += C
        sim.nic_ctr[node, NC_STALL] += C
        return 0, t + 1
    sim.ps[pk, P_VC] = vc
    sim.pm[pk, M_INJECT] = t * C
    if COUNTERS:
        count_request(sim, node, pk)
    INJECT(sim, rt, node, pk)
    r = sim.node_router[node]
    status = iq_route(sim, rt, r, sim.port_peer[o], pk)  # the source router's, now
    if status != 0:
        return status, np.int64(-1)
    sim.credits[o * V + vc] -= size
    F = iq_flits(iq, o, size)
    iq.nic_free[node] = t + F
    nic_advance(sim, pg, node, f, (t + F) * C)
    iq_send_nic(sim, o, pk, t, F)
    tn, _ = nic_next(sim, pg, node)
    if tn >= TIME_LIMIT_PS:
        return 0, np.int64(-1)
    return 0, max((tn + C - 1) // C, t + F)


@part
def iq_cycle(sim, pg, rt, r, t):
    """Router ``r``'s cycle ``t`` (:mod:`federation.engine.iq`): its NICs inject, arrivals
    join their input VCs, the internal steps allocate VCs and the switch, the output ports
    send, and the router books its next cycle.  Returns the status."""
    iq = sim.iq
    C = iq.cfg[IQ_CYCLE]
    first = sim.router_port_start[r]
    end = sim.router_port_start[r + 1]
    s0, ns = iq_steps(iq, t)
    nxt = np.int64(-1)
    for p in range(first, end):  # the NICs of this router's nodes
        q = sim.port_peer[p]
        if q >= sim.n_router_ports:
            status, c = iq_inject(sim, pg, rt, q - sim.n_router_ports, t)
            if status != 0:
                return status
            if c >= 0 and (nxt < 0 or c < nxt):
                nxt = c
    c = iq_receive(sim, r, t, s0)
    if c >= 0 and (nxt < 0 or c < nxt):
        nxt = c
    for k in range(ns):
        step = s0 + k
        iq_vc_allocate(sim, r, step)
        if iq_sw_select(sim, r, t, step) == 0:
            continue
        ready = t if k + 1 < ns else t + 1
        for o in range(first, end):
            ip = iq.sw_best[o]
            if ip < 0:
                continue
            iq.sw_best[o] = -1
            pk, vc = iq_take(sim, r, ip, o, step)
            iq.pout[pk, 1] = ready  # crosses the switch in the next step
            size = sim.ps[pk, P_SIZE]
            up = sim.port_peer[ip]  # the credit goes back, one per input port per cycle
            sent = max(t, iq.credit_next[ip])
            iq.credit_next[ip] = sent + 1
            due = sent + 1 + iq.lat[ip]
            if up < sim.n_router_ports:
                due += iq.cfg[IQ_CREDIT]
            push(sim, due * C, EV_CREDIT, up, vc, size)
            iq_landing(sim, due)
            sim.ps[pk, P_VC] = sim.ps[pk, P_OUTVC]  # its VC at the next router
            dn = sim.port_peer[o]
            if sim.port_router[dn] >= 0:
                sim.ps[pk, P_HOPS] += 1
                sim.sc[S_HOPS] += 1
                status = iq_route(sim, rt, sim.port_router[dn], dn, pk)
                if status != 0:
                    return status
    for o in range(first, end):  # the end of the cycle: each link sends its queue's head
        pk = iq.oq_head[o]
        if pk >= 0 and iq.pout[pk, 1] <= t and iq.link_free[o] <= t:
            nh = sim.ps[pk, P_NEXT]
            iq.oq_head[o] = nh
            if nh < 0:
                iq.oq_tail[o] = -1
            iq.r_load[r] -= 1
            iq_send(sim, o, pk, t)
        if iq.stalled[o] == t:
            sim.port_stall[o] += C
    if iq.r_load[r] > 0:
        if iq_quiet(sim, t):  # nothing under way and nothing moves: see iq's docstring
            return ST_DEADLOCK
        nxt = t + 1
    if nxt > t:
        activate(sim, r, nxt)
    return 0


@part
def iq_event(sim, pg, rt, ev, a, b, c, now):
    """An event of a booksim_iq run; returns the status."""
    iq = sim.iq
    C = iq.cfg[IQ_CYCLE]
    if ev == EV_ROUTER:
        t = (now - 1) // C
        if iq.r_next[a] != t:
            return 0  # superseded by an earlier cycle of the same router: stale
        iq.r_next[a] = -1
        return iq_cycle(sim, pg, rt, a, t)
    if ev == EV_CREDIT:
        sim.credits[a * sim.n_vcs + b] += c
    elif ev == EV_ARRIVE:  # only NICs receive through events
        sim.sc[S_DELIVERED] += 1
        if COUNTERS:
            count_response(sim, a, now)
        record(sim, pg, a, now)
    elif ev == EV_NIC:
        if sim.nic_wake[a] == now:
            sim.nic_wake[a] = -1
        activate(sim, sim.node_router[a], (now + C - 1) // C)
    return 0


# compiled into a native entry, never cached alone, never called from Python (no wrapper)
@kernel(error_model="numpy", _nrt=False, no_cpython_wrapper=True, no_cfunc_wrapper=True)
def run_loop(budget, until, sim, pg, rt, ab, cur):
    """Process events until done, ``budget`` events, the queue needs to grow, the next event is
    at or after ``until`` (ps: the driver reads counters there and resumes), or a routing
    answer is refused; returns the ``ST_*`` status.  ``rt`` and ``ab`` are the routing's and
    the arbiter's own tables, passed through to them; ``pg`` the rank programs' state;
    ``cur`` (8 int64) is scratch for an event taken off one of the queue's heaps (``pop``)."""
    sc = sim.sc
    q = sim.q
    until_key = until << SEQ_BITS  # keys order like times: one comparison per event
    processed = 0
    wake_nics(sim)  # the NICs a chunk the driver loaded gave packets to
    # every part below is inlined, so each is called from one place only (compile time grows
    # with every inlined copy): a NIC is tried through the ``kick`` list, rank programs
    # settle in one place, and a resumed slice settles before it takes an event
    # the limits below hold before every event; ``safe`` events in a row cannot break them
    # (each pushes ROOM events, births two packets and returns two credits at most, and
    # delivers one packet), so they are tested again only when those are used up
    safe = np.int64(0)
    while True:
        if processed >= budget:
            sc[S_EVENTS] += processed
            return ST_BUDGET
        if safe == 0:
            safe = room_events(q)
            if safe == 0:
                sc[S_EVENTS] += processed
                return ST_HEAP_FULL
            if sc[S_FREE] < 4 or sc[S_CRFREE] < 4:
                sc[S_EVENTS] += processed
                return ST_POOL_FULL if sc[S_FREE] < 4 else ST_HEAP_FULL
            if sc[S_REC] >= sim.rec.shape[0]:
                sc[S_EVENTS] += processed
                return ST_RECORDS_FULL
            if IQ:  # a router's cycle may push and birth more (iq.cycle_bounds): room for
                # them before every event; the driver grows the queue and pool to fit them
                if safe * ROOM < sim.iq.cfg[IQ_PUSHES]:
                    sc[S_EVENTS] += processed
                    return ST_HEAP_FULL
                if sc[S_FREE] < sim.iq.cfg[IQ_BIRTHS] + 4:
                    sc[S_EVENTS] += processed
                    return ST_POOL_FULL
                safe = 1
            else:
                safe = min(safe, (sc[S_FREE] - 2) >> 1, (sc[S_CRFREE] - 2) >> 1,
                           sim.rec.shape[0] - sc[S_REC])
        elif big(q):
            sc[S_EVENTS] += processed
            return ST_HEAP_FULL
        safe -= 1
        if RINGS:
            if ab.full[0] != 0:  # a sliding window's ring of sends is full: grown by the driver
                sc[S_EVENTS] += processed
                return ST_QOS_RING
        moved = PROGRAMS and unsettled(sim)  # operations left when the queue had to grow
        nic = np.int64(-1)
        if not moved:
            got, key, wa, wb = pop(q, until_key, cur)
            if got == 0:
                break
            if got == 2:
                sc[S_EVENTS] += processed
                return ST_UNTIL
            sc[S_KEY] = key
            # bring in the rows an event a few places ahead will read first: an arriving
            # packet's state and metadata (its delivery reads both), a waking NIC's next
            # waiting packet and the one after it (read once the first has left), a freed
            # port's first pending credit return and its first request's packet (each was
            # written a cable's latency or a chunk ago: out of every cache but the last)
            word = ahead(q, LOOKAHEAD)
            if word >= 0:
                kind = word & 7
                if kind == EV_ARRIVE:
                    prefetch_row(sim.ps, word >> 3)
                    prefetch_row(sim.pm, word >> 3)
                elif kind == EV_NIC:
                    prefetch_row(sim.feed, sim.nic_ptr[word >> 3])
                    prefetch_row(sim.feed, sim.nic_ptr[word >> 3] + 1)
                elif kind == EV_FREE:
                    if sim.cr_head[word >> 3] >= 0:
                        prefetch_row(sim.cr, sim.cr_head[word >> 3])
                    if sim.req_head[word >> 3] >= 0:
                        prefetch_row(sim.ps, np.int64(sim.q_head[sim.req_head[word >> 3]]))
            now = key >> SEQ_BITS  # the event's fields (events.push packs them)
            ev = wa & 7
            a = wa >> 3
            b = wb & 0xFFFFFFFF
            if now < 0 or now >= TIME_LIMIT_PS:  # refused by push (keyed at -1), or bad
                if sc[S_BAD_TIME] == 0:
                    sc[S_BAD_TIME] = now
                    sc[S_BAD_EV] = ev
                    sc[S_BAD_A] = a
                    sc[S_BAD_B] = b
                sc[S_EVENTS] += processed
                return ST_TIME_LIMIT
            sc[S_NOW] = now
            processed += 1
            o = np.int64(-1)
            if IQ:
                status = iq_event(sim, pg, rt, ev, a, b, wb >> 32, now)
                if status != 0:
                    sc[S_EVENTS] += processed
                    return status
                continue
            if ev == EV_ARRIVE:
                if sim.port_router[b] < 0:  # a NIC: delivered
                    sc[S_DELIVERED] += 1
                    if COUNTERS:
                        count_response(sim, a, now)
                    if not PROGRAMS or pg.row_flow[a] < 0:  # open loop: a record for the driver
                        record(sim, pg, a, now)
                        continue
                    delivered(sim, pg, a, now)  # a rank program's packet
                    moved = True
                elif not enqueue(sim, a, b):
                    continue  # queued behind another packet
                else:
                    ev = EV_READY
                    a, b = b, sim.ps[a, P_VC]
            if ev == EV_READY:
                o, status = route_head(sim, rt, a, b, now)
                if status != 0:
                    sc[S_EVENTS] += processed
                    return status
            elif ev == EV_FREE:
                if sim.wake[a] != now:
                    continue  # superseded by a later wake-up of the same port: stale
                sim.wake[a] = -1
                o = a
            elif ev == EV_CREDIT:  # a port waiting for credit: its first return is due
                if sim.cwake[a] != key:
                    continue  # superseded by an earlier return: stale
                sim.cwake[a] = -1
                settle_credits(sim, a)
                o = a
            elif ev == EV_NIC:
                if sim.nic_wake[a] != now:
                    continue  # superseded by a later wake-up of the same NIC: stale
                sim.nic_wake[a] = -1
                nic = a
            elif PROGRAMS and ev == EV_OP:
                handle_op(sim, pg, a, b, now)
                moved = True
            if o >= sim.n_router_ports:
                nic = o - sim.n_router_ports  # credit back at a NIC
            elif o >= 0:
                status = try_send(sim, ab, o, now)
                if status != 0:
                    sc[S_EVENTS] += processed
                    return status
        else:
            now = sc[S_NOW]
        if PROGRAMS and moved:
            settle(sim, pg, now)  # pushes many events: the limits are tested again
            safe = 0
            if CONTROLLED:
                control_sends(sim, pg)
        if nic >= 0:
            pg.kick[sc[S_KICK]] = nic
            sc[S_KICK] += 1
        while sc[S_KICK] > 0:
            sc[S_KICK] -= 1
            try_inject(sim, pg, rt, ab, pg.kick[sc[S_KICK]], now)
        if PROGRAMS and moved and sc[S_OPS_DONE] == pg.n_ops:
            sc[S_EVENTS] += processed
            return ST_PROGRAMS_DONE
    sc[S_EVENTS] += processed
    if sc[S_DELIVERED] < sc[S_LOADED] + sc[S_QUEUED]:
        return ST_DEADLOCK
    if PROGRAMS and sc[S_OPS_DONE] < pg.n_ops:
        return ST_PROGRAM_STUCK
    return ST_DONE
