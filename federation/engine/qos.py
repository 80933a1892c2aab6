"""QoS traffic classes at the routers' output ports (and, with ``at: injection``, at the NICs:
:mod:`federation.engine.nic_qos` picks by :func:`pick_class`): the compiled arbitration of the
QoS policies (``plugins/qos``) and their per-port state.

A QoS policy with several classes arbitrates every router output port through the loop's
``ARBITRATE`` call-out (the same hook as ``router.arbiter``), with a :class:`QosState` as the
arbiter state.  Each function walks the port's request list once and keeps, per class, the
oldest request whose head packet has credit (``first``); the policy then picks a class, and
the answer is that class's oldest sendable request.  All of them are work-conserving: they
answer ``-1`` only when no request has credit.

``bandwidth_caps`` (the megafly QoS study's mechanism, Cheng et al.'s patent; digest
``megafly-qos.md`` §3), per output port ``o`` and class ``c``:

* ``capb[o, c] = cap x bandwidth(o) x W`` rounded to a whole byte;
* a class's bytes at ``o`` in the current window count the packets ``o`` started to send
  for ``c`` in it (a packet's whole size at the time it starts).  *Static* windows are
  ``[k W, (k + 1) W)`` from t = 0: the counts restart and inactive classes turn active at
  each edge (applied when the port next arbitrates, with the inactive time accounted up to
  the edge itself).  The loop counts every port's bytes per class anyway (the per-class
  results), so ``bytes[o, c]`` keeps that count as it stood when the window began and the
  window's bytes are the difference: a send updates one counter, not two.  *Sliding*: the
  bytes of the sends of the last ``W`` ps (a send at ``t`` counts during ``[t, t + W)``),
  kept exactly in a per-(port, class) ring of ``(time, bytes)`` sends; the ring keeps only
  the newest sends whose sum reaches the cap (older ones cannot change the answer: they
  expire first), so its length is bounded by cap / smallest packet, and by the sends the
  port can start in one window; every ring has the same ``K`` slots, which the driver
  grows when one fills (:data:`ST_QOS_RING`), never past that bound
  (:mod:`federation.engine.qos_rings`, whose formula the memory check before the run uses).
* The port is *oversubscribed* at an arbitration when two classes or more have a sendable
  request.  A class with a sendable request whose window's bytes reach its cap (``capb``)
  at an oversubscribed arbitration turns *inactive*: until the next window edge (static), or
  until its bytes in the last ``W`` fall below the cap (sliding, at the exact time the send
  that took it over expires).
* Active classes with a sendable request are served in class order (0 first); only when none
  has one, the inactive ones round-robin (from the class after the one the port last served
  that way): CODES' "ACTIVE classes in index order, otherwise round-robin over all".
* ``inactive[o, c]`` sums the ps each class spent inactive at each port (the driver closes
  the spans still open at the end of the run: :func:`inactive_time`).

``strict_priority``: the sendable class of lowest number.  ``weighted_round_robin``: deficit
round-robin over classes (Shreedhar and Varghese), per port: the class at the port's pointer
sends while its deficit covers its oldest sendable packet; else the pointer moves on and the
next class's deficit grows by ``weight x QUANTUM`` bytes; a class with nothing sendable loses
its deficit.  Byte shares of saturating classes converge to the weights.  A port's deficits
and its pointer share one row (``deficit[o * R : (o + 1) * R]``, ``R = QosState.wrow``: the
classes' deficits, the pointer, then the start of a run of lone sends), so that the
arbitration of a port with one candidate class, nine in ten, reads one cache line of the
policy's state, not two; and such an arbitration steps nothing while the class stays the
same: a run of lone sends of one class is recorded and settled in one step at the port's next
pick among classes (:func:`wrr_port_lone`, :func:`wrr_port_settle`).
"""

from __future__ import annotations

import numpy as np

from federation.engine.api import P_CLASS, P_OUTVC, P_SIZE
from federation.engine.events import S_NOW
from federation.engine.jit import part
from federation.engine.qos_rings import grow_rings
from federation.engine.qos_state import (
    CLASS_MASK,
    K_CAPS,
    K_STRICT,
    K_WRR,
    LINK_SHIFT,
    NIC_WALK,
    QUANTUM,
    ST_QOS_RING,
    QosState,
    cap_bytes,
    inactive_time,
    new_state,
    reset_nic_ptrs,
    run_state,
    set_caps,
    settle_nics,
    wrr_row,
)

#: the state's names (:mod:`federation.engine.qos_state`) and the driver's grow_rings are
#: re-exported: a policy plugin and the driver need this one module
__all__ = [
    "CLASS_MASK",
    "K_CAPS",
    "K_STRICT",
    "K_WRR",
    "LINK_SHIFT",
    "NIC_WALK",
    "QUANTUM",
    "QosState",
    "ST_QOS_RING",
    "cap_bytes",
    "grow_rings",
    "inactive_time",
    "new_state",
    "reset_nic_ptrs",
    "run_state",
    "set_caps",
    "settle_nics",
    "wrr_row",
    "qos_scan",
    "sent",
    "over_cap",
    "expire",
    "refresh",
    "count_send",
    "take_class",
    "caps_pick",
    "strict_pick",
    "wrr_pick",
    "wrr_settle",
    "wrr_lone",
    "wrr_catch_up",
    "wrr_port_lone",
    "wrr_port_settle",
    "bandwidth_caps",
    "strict_classes",
    "weighted_classes",
    "pick_class",
]


# --------------------------------------------------------------------------- compiled


@part
def qos_scan(sim, st, o, stop0):
    """Each class's oldest request with credit at ``o``; returns ``(how many classes have
    one, the class found last, and that class's request, the request before it and its
    head packet's size)``.  With one candidate class (nine arbitrations in ten on the CODES
    scenario at load 0.5) the answer is those three values, kept in registers: the policies
    serve it without walking the classes (:func:`caps_pick`, :func:`wrr_pick`,
    :func:`strict_pick`), and nothing is stored, so that the loop's check of the answer
    (``arbiter_check``) reads the request's packet and credit where the scan left them.
    With two or more, ``st.first`` / ``st.first_prev`` / ``st.size`` hold every class's
    (``st.first`` -1: none).  The first request's class is read from its packet's row (read
    for its size anyway); after that a request's class is its input queue's: the classes own
    disjoint VC ranges, so ``qi``'s VC says it (``st.qclass``) without reading the packet,
    and a request of a class already found is passed over without loading its packet's row.
    ``stop0``: stop at the first class-0 candidate (``strict_priority``: nothing outranks
    it)."""
    C = st.n_classes
    V = sim.n_vcs
    n = 0
    last = np.int64(-1)
    lq = np.int64(-1)
    lp = np.int64(-1)
    ls = np.int64(0)
    found = np.int64(0)  # a bit per class found (classes <= VCs <= 64)
    qi = sim.req_head[o]
    prev = -1
    while qi >= 0:
        if found == 0:  # no class found yet: this request's packet row is read anyway
            pk = sim.q_head[qi]
            c = np.int64(sim.ps[pk, P_CLASS])
        else:
            c = np.int64(st.qclass[qi])
            pk = sim.q_head[qi] if (found >> c) & 1 == 0 else -1
        if pk >= 0:
            size = np.int64(sim.ps[pk, P_SIZE])
            if sim.credits[o * V + sim.ps[pk, P_OUTVC]] >= size:
                if n == 1:  # a second class: the first one's goes to the walk's tables
                    st.first[last] = lq
                    st.first_prev[last] = lp
                    st.size[last] = ls
                if n >= 1:
                    st.first[c] = qi
                    st.first_prev[c] = prev
                    st.size[c] = size
                lq = np.int64(qi)
                lp = np.int64(prev)
                ls = size
                found |= np.int64(1) << c
                n += 1
                last = c
                if n == C or (stop0 and c == 0):
                    break
        prev = qi
        qi = sim.req_next[qi]
    if n >= 2:  # the policies walk the classes: mark the others (with one, they read none)
        for c in range(C):
            if (found >> c) & 1 == 0:
                st.first[c] = -1
    return n, last, lq, lp, ls


@part
def sent(sim, o, c):
    """Bytes port ``o`` has started to send for class ``c`` since the run began: the loop's
    own per-class counters (:func:`federation.engine.router.transmit`)."""
    if sim.n_classes > 1:
        return sim.port_class_bytes[o * sim.n_classes + c]
    return sim.port_bytes[o]


@part
def over_cap(sim, st, o, c):
    """True if class ``c`` has sent its cap's worth at ``o`` in the window (static: what it
    sent since the window's start, when ``bytes`` took its count)."""
    i = o * st.n_classes + c
    if st.sliding:
        return st.bytes[i] >= st.capb[i]
    return sent(sim, o, c) - st.bytes[i] >= st.capb[i]


@part
def expire(sim, st, o, c, now):
    """Sliding window: drop the sends of ``(o, c)`` older than the window (a send at ``t``
    counts until ``t + W``); an inactive class turns active when that takes it below its cap,
    at the expiry's time."""
    i = o * st.n_classes + c
    K = st.ring_k[0]
    W = st.window
    while st.ring_n[i] > 0:
        slot = i * K + st.ring_head[i]
        t = st.ring_t[slot]
        if t + W > now:
            return
        st.bytes[i] -= st.ring_b[slot]
        st.ring_head[i] = (st.ring_head[i] + 1) % K
        st.ring_n[i] -= 1
        if st.since[i] >= 0 and not over_cap(sim, st, o, c):
            st.inactive[i] += t + W - st.since[i]
            st.since[i] = -1


@part
def refresh(sim, st, o, now):
    """Bring port ``o``'s windows up to ``now``."""
    C = st.n_classes
    if st.sliding:
        for c in range(C):
            expire(sim, st, o, c, now)
        return
    edge = st.win[o]  # the end of the window the counters cover
    if now < edge:  # (kept as a time: no arithmetic on the common path)
        return
    for c in range(C):
        i = o * C + c
        if st.since[i] >= 0:
            st.inactive[i] += edge - st.since[i]
            st.since[i] = -1
        st.bytes[i] = sent(sim, o, c)  # every send so far was in an earlier window
    st.win[o] = (now // st.window + 1) * st.window


@part
def count_send(sim, st, o, c, size, now):
    """Port ``o`` starts sending ``size`` bytes of class ``c`` at ``now``: a sliding
    window's ring records it (a static window's count is the loop's own, :func:`sent`)."""
    if not st.sliding:
        return
    i = o * st.n_classes + c
    st.bytes[i] += size
    K = st.ring_k[0]
    n = st.ring_n[i]
    slot = i * K + (st.ring_head[i] + n) % K
    st.ring_t[slot] = now
    st.ring_b[slot] = size
    n += 1
    # keep only the newest sends whose sum reaches the cap: older ones expire first, so
    # they can never change whether the class is over its cap
    while n > 1:
        head = i * K + st.ring_head[i]
        rest = st.bytes[i] - st.ring_b[head]
        if rest < st.capb[i]:
            break
        st.bytes[i] = rest
        st.ring_head[i] = (st.ring_head[i] + 1) % K
        n -= 1
    st.ring_n[i] = n
    if n >= K:
        st.full[0] = 1  # room for no further send: the loop stops after this event


@part
def take_class(sim, st, o, c):
    """The answer serving class ``c``'s oldest sendable request, and count its bytes."""
    count_send(sim, st, o, c, st.size[c], sim.sc[S_NOW])
    return st.first[c], st.first_prev[c]


@part
def caps_pick(sim, st, o, n, one):
    """The class ``bandwidth_caps`` serves at port ``o`` (a router output or a NIC) among the
    classes with a candidate (``st.first[c] >= 0``, ``n`` of them, ``n >= 1``; ``one`` is
    the class when ``n`` is 1); -1 none."""
    now = sim.sc[S_NOW]
    refresh(sim, st, o, now)
    C = st.n_classes
    if n == 1:  # not oversubscribed: it is served, by the round-robin if inactive
        if st.since[o * C + one] >= 0:
            st.rr[o] = one
        return one
    for c in range(C):
        if st.first[c] < 0:
            continue
        i = o * C + c
        if st.since[i] < 0:
            if n >= 2 and over_cap(sim, st, o, c):
                st.since[i] = now  # over its cap on an oversubscribed port
            else:
                return c
    # every class with a sendable request is inactive: round-robin from the last served
    c = st.rr[o]
    for _ in range(C):
        c += 1
        if c == C:
            c = 0
        if st.first[c] >= 0:
            st.rr[o] = c
            return c
    return -1


@part
def strict_pick(st, n, one):
    """The class ``strict_priority`` serves: the candidate class of lowest number (``one``
    when there is one, ``n`` 1)."""
    if n == 1:
        return one
    for c in range(st.n_classes):
        if st.first[c] >= 0:
            return c
    return -1


@part
def wrr_pick(st, o, n, one):
    """The class ``weighted_round_robin`` serves at port ``o`` (deficit round-robin; sizes
    in ``st.size``) among ``n >= 1`` candidate classes (``one``: the class when ``n`` is 1).
    The port's row: ``deficit[o * R + c]`` per class, the pointer at ``o * R + C``."""
    C = st.n_classes
    base = o * st.wrow
    ptr = base + C
    if n == 1:  # it is served: the pointer reaches it (gaining a quantum if it was
        # elsewhere), and goes round until its deficit covers the packet; the others idle
        for c in range(C):
            if c != one:
                st.deficit[base + c] = 0
        d = st.deficit[base + one]
        q = st.weight[one] * QUANTUM
        if st.deficit[ptr] != one:
            d += q
        while d < st.size[one]:
            d += q
        st.deficit[base + one] = d - st.size[one]
        st.deficit[ptr] = one
        return one
    for c in range(C):
        if st.first[c] < 0:
            st.deficit[base + c] = 0  # an idle class keeps no deficit
    c = st.deficit[ptr]
    while True:
        if st.first[c] >= 0 and st.deficit[base + c] >= st.size[c]:
            st.deficit[base + c] -= st.size[c]
            st.deficit[ptr] = c
            return c
        c += 1
        if c == C:
            c = 0
        if st.first[c] >= 0:
            st.deficit[base + c] += st.weight[c] * QUANTUM


@part
def wrr_settle(st, o, c, total):
    """Port ``o``'s row after one-class sends of ``total > 0`` bytes of class ``c``, each
    served as :func:`wrr_pick` serves a lone candidate, in one step: from the deficit ``d``
    the first send starts with (plus a quantum ``q`` if the pointer was elsewhere), the
    deficit after sends of ``S`` bytes in all is ``d - S`` while that is not negative, else
    ``d - S`` plus the fewest quanta that make it so (each send adds quanta until its packet
    is covered: by induction, the sizes' split does not matter); the others' deficits are 0
    and the pointer is at ``c``."""
    C = st.n_classes
    base = o * st.wrow
    q = st.weight[c] * QUANTUM
    x = st.deficit[base + c] - total
    if st.deficit[base + C] != c:
        x += q
    if x < 0:
        x += q * ((q - 1 - x) // q)
    for k in range(C):
        st.deficit[base + k] = 0
    st.deficit[base + c] = x
    st.deficit[base + C] = c


@part
def wrr_lone(sim, st, node, o, c):
    """``weighted_round_robin`` at the NIC (port ``o``) of a node of several classes sending
    a lone candidate of class ``c`` (:func:`federation.engine.loop.inject_one`): served as
    :func:`wrr_pick` serves one, but settled later (:func:`wrr_catch_up`).  A lone send
    leaves the row's other deficits at zero and its pointer at ``c``, so the row after a
    series of them depends only on its last run of one class: where a run starts, its class
    and that class's counter are all it records."""
    i = node * 2
    if st.wrun[i] != c:
        st.wrun[i] = c
        st.wrun[i + 1] = sent(sim, o, c)


@part
def wrr_catch_up(sim, st, node, o):
    """``weighted_round_robin`` at injection keeps no state for a NIC's lone sends
    (:func:`federation.engine.loop.inject_one`); before the NIC's next pick by the policy,
    its row takes their bytes: the difference between the loop's per-class counters at its
    port ``o`` and the snapshot ``wsnap``.  At a one-class NIC only its class can have any
    (a node's class marks change only as a feed loads, and :func:`settle_nics` settles every
    NIC then); at a NIC of several classes only the last run counts (:func:`wrr_lone`),
    from a zero row whose pointer is elsewhere when another class sent before it."""
    C = st.n_classes
    i = node * 2
    r = st.wrun[i]
    if r >= 0:
        base = o * st.wrow
        for k in range(C):
            if k != r and sent(sim, o, k) > st.wsnap[node * C + k]:
                for j in range(C):
                    st.deficit[base + j] = 0
                st.deficit[base + C] = (r + 1) % C
                break
        total = sent(sim, o, r) - st.wrun[i + 1]
        if total > 0:  # (always: a run starts with a send)
            wrr_settle(st, o, r, total)
        for k in range(C):
            st.wsnap[node * C + k] = sent(sim, o, k)
        st.wrun[i] = -1
        return
    c = st.nic_one[node]  # a one-class NIC: only its class (a NIC of several classes has
    if c >= 0:  # sent nothing unseen but a run of lone sends, and a walking one nothing)
        i = node * C + c
        total = sent(sim, o, c) - st.wsnap[i]
        if total > 0:
            wrr_settle(st, o, c, total)
            st.wsnap[i] += total


@part
def bandwidth_caps(sim, st, o):
    """The ``bandwidth_caps`` policy's arbitration at output port ``o`` (module docstring)."""
    n, one, qi, prev, size = qos_scan(sim, st, o, False)
    if n == 0:
        return -1, -1
    c = caps_pick(sim, st, o, n, one)
    if c < 0:
        return -1, -1
    if n == 1:
        count_send(sim, st, o, c, size, sim.sc[S_NOW])
        return qi, prev
    return take_class(sim, st, o, c)


@part
def strict_classes(sim, st, o):
    """The ``strict_priority`` policy: the sendable class of lowest number, oldest first."""
    n, one, qi, prev, _ = qos_scan(sim, st, o, True)
    if n < 2:  # none (-1, -1), or the one class's
        return qi, prev
    c = strict_pick(st, n, one)
    return st.first[c], st.first_prev[c]


@part
def wrr_port_lone(sim, st, o, c, size):
    """``weighted_round_robin`` at router output ``o`` serving a lone candidate of class
    ``c`` (``size`` bytes), nine arbitrations in ten: as at a NIC (:func:`wrr_lone`), the
    row after a run of lone sends of one class depends only on where the run started and
    its bytes, so a run is recorded, not stepped, and settled at the port's next pick among
    classes (:func:`wrr_port_settle`).  The row's pointer slot holds ``C + c`` while a run
    of ``c`` is recorded, the slot after it the run's start: the class's counter
    (:func:`sent`) after the run's first send, stepped here as the walk steps it, when the
    run starts from a settled row; ``-1 -`` the counter before it when it follows a run of
    another class, which left every deficit zero and the pointer elsewhere (that row is
    not written: the settling writes it)."""
    C = st.n_classes
    ptr = o * st.wrow + C
    p = st.deficit[ptr]
    if p == C + c:  # the run goes on
        return
    if p >= C:  # after a run of another class
        st.deficit[ptr] = C + c
        st.deficit[ptr + 1] = -1 - sent(sim, o, c)
        return
    st.size[c] = size  # from a settled row: its first send is stepped
    wrr_pick(st, o, 1, c)
    st.deficit[ptr] = C + c
    st.deficit[ptr + 1] = sent(sim, o, c) + size


@part
def wrr_port_settle(sim, st, o):
    """Router output ``o``'s row brought up to date with the run of lone sends recorded by
    :func:`wrr_port_lone` (nothing when none is)."""
    C = st.n_classes
    base = o * st.wrow
    p = st.deficit[base + C]
    if p < C:
        return
    c = p - C
    start = st.deficit[base + C + 1]
    if start < 0:  # from a zero row, the pointer elsewhere
        for k in range(C):
            st.deficit[base + k] = 0
        st.deficit[base + C] = (c + 1) % C
        start = -1 - start
    else:  # from the row its first send left
        st.deficit[base + C] = c
    total = sent(sim, o, c) - start
    if total > 0:
        wrr_settle(st, o, c, total)


@part
def weighted_classes(sim, st, o):
    """The ``weighted_round_robin`` policy: deficit round-robin over classes at ``o``."""
    n, one, qi, prev, size = qos_scan(sim, st, o, False)
    if n == 0:
        return -1, -1
    if n == 1:  # the scan left the one class's size in a register
        wrr_port_lone(sim, st, o, one, size)
        return qi, prev
    wrr_port_settle(sim, st, o)
    c = wrr_pick(st, o, n, one)
    return st.first[c], st.first_prev[c]


@part
def pick_class(sim, st, o, n, one):
    """The class the policy (``st.kind``) serves at port ``o`` among its ``n >= 1``
    candidate classes (``one``: the class when ``n`` is 1), its bytes counted
    (``bandwidth_caps``); -1 none."""
    if st.kind == K_CAPS:
        c = caps_pick(sim, st, o, n, one)
        if c >= 0:
            count_send(sim, st, o, c, st.size[c], sim.sc[S_NOW])
        return c
    if st.kind == K_STRICT:
        return strict_pick(st, n, one)
    return wrr_pick(st, o, n, one)
