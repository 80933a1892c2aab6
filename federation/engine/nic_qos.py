"""QoS classes at injection (``at: [..., injection]``; the loop's ``QOS_NIC`` variant): a
NIC keeps its waiting packets per class and picks the class that sends next by the policy
that arbitrates the router output ports (:func:`federation.engine.qos.pick_class`, its
counters kept for the NIC port like for any port).

What is modelled.  Open-loop packets wait in the feed, a node's in creation order
(:mod:`federation.engine.feed`); each (node, class) has its own pointer
(``QosState.nic_ptr``) at its oldest unsent slot, and each slot's class word links to its
node's next slot of the same class (``qos.LINK_SHIFT``, made as the feed loads), so each class
is its own queue in creation order and its head is one read.  A slot sent out of turn is marked
(``F_ID = -1``; the feed's spare last row counts the marks,
:func:`federation.engine.feed.waiting`) and the node's own pointer ``nic_ptr`` stays at its
oldest unsent slot, so the driver's backlog (what a new chunk keeps) is exactly the unsent
packets.  Rank-program packets keep their NIC's one flow queue (in the
order sends handed them over): its head competes as a packet of its own class, against that
class's open-loop head (the older goes first, the open-loop one on a tie, as without QoS).
So a program's packets of two classes at one NIC are *not* reordered between them (a head of
one class blocks the other's behind it); open-loop classes, and open-loop against program
traffic, are.  A class's candidate is its head if it is due and its class's injection VC has
credit for it (a due head without credit blocks its class only); the NIC stalls (``stall_start``)
when some class is due and none can send.  Open-loop packets are born (take a row) as they
leave; a flow's head is born at the head, as without QoS.

A node whose waiting packets are all of one class (most NICs when classes come from jobs or
sources; marked at each load, :func:`federation.engine.qos.reset_nic_ptrs`) takes a shorter
path to the same answer (:func:`federation.engine.loop.inject_one`): its head is its class's
head, so it sends as without classes.  So does a node of several classes whose oldest unsent
packet alone is due and has credit (the walk would find that one candidate,
:func:`lone_send`).  The policy is still told of each send (:func:`one_class_send`):
``bandwidth_caps`` counts it at once (its window and ring must see every send),
``strict_priority`` keeps no state, and ``weighted_round_robin`` settles it lazily
(:func:`federation.engine.qos.wrr_catch_up`): a lone send zeroes the row's other deficits
and leaves its pointer at its class, so the row after any series of lone sends depends only
on its last run of one class, whose deficit has a closed form in the bytes sent
(:func:`federation.engine.qos.wrr_settle`); a NIC of several classes records where each run
starts (:func:`federation.engine.qos.wrr_lone`), and the row is settled when the NIC next
picks among its classes (:func:`nic_pick`) or the feed loads
(:func:`federation.engine.qos.settle_nics`).  Measured on CODES at load 0.5 with classes by
destination (every NIC of two classes): the same events, x1.014 (0.972-1.031) over telling
the policy at each lone send, on a loaded host.
"""

from __future__ import annotations

import numpy as np

from federation.engine.api import P_CLASS, P_SIZE, P_VC
from federation.engine.events import TIME_LIMIT_PS
from federation.engine.feed import F_CLS, F_ID, F_SIZE, F_TIME, F_VC, born
from federation.engine.jit import part
from federation.engine.programs import new_packet
from federation.engine.qos import (
    K_CAPS,
    K_WRR,
    LINK_SHIFT,
    pick_class,
    wrr_catch_up,
    wrr_lone,
)


@part
def class_head(st, node, c):
    """Feed slot of class ``c``'s oldest unsent open-loop packet at ``node`` (the node's end:
    none): its pointer, which :func:`nic_take` moves along the class's links."""
    return st.nic_ptr[node * st.n_classes + c]


@part
def nic_candidates(sim, pg, st, node, now, programs):
    """Fill ``st.first`` (>= 0: class ``c`` has a packet that can leave now; ``first_prev``
    -1 for the open-loop slot ``first``, else the flow) and ``st.size``.  Returns ``(number
    of such classes, the earliest time a class's head is due later or TIME_LIMIT_PS, 1 if a
    due head lacks credit, the class found last)``."""
    C = st.n_classes
    o = sim.nic_port[node]
    need = sim.vc_need
    end = sim.nic_first[node + 1]
    fc = np.int64(-1)
    ft = TIME_LIMIT_PS
    f = np.int64(-1)
    row = np.int64(-1)
    if programs:
        f = pg.nic_fhead[node]
        if f >= 0:
            if pg.nic_frow[node] < 0:
                pg.nic_frow[node] = new_packet(sim, pg, node, f)  # born at the head
            row = pg.nic_frow[node]
            fc = np.int64(sim.ps[row, P_CLASS])
            ft = pg.flow_time[f]
    n = 0
    last = np.int64(-1)
    later = TIME_LIMIT_PS
    blocked = 0
    feed = sim.feed
    for c in range(C):
        st.first[c] = -1
        p = class_head(st, node, c)
        t = feed[p, F_TIME] if p < end else TIME_LIMIT_PS
        src = np.int64(-1)
        if c == fc and ft < t:
            t = ft
            src = f
        if t >= TIME_LIMIT_PS:
            continue
        if t > now:
            later = min(later, t)
            continue
        if src >= 0:
            size = np.int64(sim.ps[row, P_SIZE])
            vc = np.int64(sim.ps[row, P_VC])
        else:
            size = feed[p, F_SIZE]
            vc = feed[p, F_VC]
        if sim.credits[o * sim.n_vcs + c * need + vc] < size:
            blocked = 1
            continue
        st.first[c] = p
        st.first_prev[c] = src
        st.size[c] = size
        n += 1
        last = np.int64(c)
    return n, later, blocked, last


@part
def nic_take(sim, pg, st, node, c):
    """Class ``c``'s candidate leaves: ``(its row, its flow or -1)``; an open-loop packet is
    born now and its slot marked sent (the node's pointer moves past sent slots)."""
    f = st.first_prev[c]
    if f >= 0:
        return pg.nic_frow[node], f
    p = st.first[c]
    row = born(sim, pg, node, p)
    feed = sim.feed
    feed[p, F_ID] = -1
    st.nic_ptr[node * st.n_classes + c] = feed[p, F_CLS] >> LINK_SHIFT  # its next slot
    marks = feed.shape[0] - 1  # the spare row: sent slots still in the feed
    feed[marks, 0] += 1
    end = sim.nic_first[node + 1]
    q = sim.nic_ptr[node]
    while q < end and feed[q, F_ID] < 0:
        q += 1
        feed[marks, 0] -= 1
    sim.nic_ptr[node] = q
    return row, np.int64(-1)


@part
def nic_next_due(sim, pg, st, node, c, n, blocked, later, now, programs):
    """After class ``c``'s packet left (``n`` candidates, ``blocked`` and ``later`` as
    :func:`nic_candidates` gave them): the earliest time a head of ``node`` may be due
    (``now``: one is already; TIME_LIMIT_PS: nothing left), so that the NIC wakes once."""
    if n > 1 or blocked:
        return now
    t = later
    end = sim.nic_first[node + 1]
    p = class_head(st, node, c)
    if p < end and sim.feed[p, F_TIME] < t:
        t = sim.feed[p, F_TIME]
    if programs:
        f = pg.nic_fhead[node]
        if f >= 0 and pg.flow_time[f] < t:
            t = pg.flow_time[f]
    return t


@part
def one_class_send(sim, st, o, c, size):
    """A one-class NIC (port ``o``) sends ``size`` bytes of class ``c``: the policy's part
    (module docstring): caps count it as a pick with one candidate; strict priority and
    weighted round-robin (settled later, :func:`nic_pick`) touch nothing."""
    if st.kind == K_CAPS:
        st.size[c] = size
        pick_class(sim, st, o, 1, c)


@part
def nic_pick(sim, st, node, o, n, one):
    """:func:`federation.engine.qos.pick_class` at ``node``'s NIC port ``o``: weighted
    round-robin first takes the one-class sends it has not seen, and accounts the packet it
    picks (the loop counts its bytes as it leaves)."""
    if st.kind == K_WRR:
        wrr_catch_up(sim, st, node, o)
    c = pick_class(sim, st, o, n, one)
    if st.kind == K_WRR and c >= 0:
        st.wsnap[node * st.n_classes + c] += st.size[c]
    return c


@part
def lone_send(sim, st, node, o, c, size):
    """A NIC of several classes (port ``o``) sends its lone candidate, ``size`` bytes of
    class ``c`` (:func:`federation.engine.loop.inject_one`): the policy picks it as
    :func:`nic_pick` does, weighted round-robin lazily (:func:`wrr_lone`)."""
    if st.kind == K_WRR:
        wrr_lone(sim, st, node, o, c)
        return
    st.size[c] = size
    nic_pick(sim, st, node, o, 1, c)
