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
classes' deficits, then the pointer), so that the arbitration of a port with one candidate
class, nine in ten, reads one cache line of the policy's state, not two.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from federation.engine.api import P_CLASS, P_OUTVC, P_SIZE
from federation.engine.events import S_NOW
from federation.engine.jit import part
from federation.engine.qos_rings import RING_START
from federation.engine.qos_rings import grow_rings as grow_rings  # the driver's, from here

#: loop status: a sliding window's ring of sends is full; the driver grows it and resumes
ST_QOS_RING = 40
#: deficit round-robin: bytes a weight of 1 adds to a class's deficit per round
QUANTUM = 256
#: policy numbers (``QosState.kind``)
K_CAPS, K_STRICT, K_WRR = 0, 1, 2
#: a feed slot's class word (``feed.F_CLS``): the class in the low 32 bits; with classes at
#: injection, the node's next slot of the same class above them (:func:`reset_nic_ptrs`).
#: A packet's int32 class column keeps the low half as it is born, so ``feed.born`` needs
#: no mask and a loop without classes at injection is the code it was.
LINK_SHIFT = 32
NIC_WALK = -2  #: ``QosState.nic_one`` of a node that always walks its classes (tests)
CLASS_MASK = (1 << LINK_SHIFT) - 1


class QosState(NamedTuple):
    """A QoS policy's per-port state: the arbiter state of a QoS run (``ab`` in the loop).
    Indices ``o * C + c`` (port, class); the rings ``(o * C + c) * K + i``."""

    kind: np.int64  #: K_CAPS, K_STRICT, K_WRR
    n_classes: np.int64
    window: np.int64  #: W, ps (bandwidth_caps; 1 otherwise)
    sliding: np.int64  #: 1: sliding window
    capw: np.ndarray  #: float64[C] cap x W (ps): the byte caps are this / ps-per-byte
    capb: np.ndarray  #: int64[P*C] the cap in bytes at each port (:func:`set_caps`)
    weight: np.ndarray  #: int64[C] weighted_round_robin's weights
    win: np.ndarray  #: int64[P] the end (ps) of the static window the port's counters cover
    bytes: np.ndarray  #: int64[P*C] static: bytes sent before the window; sliding: in the ring
    since: np.ndarray  #: int64[P*C] when the class turned inactive, -1: active
    inactive: np.ndarray  #: int64[P*C] ps spent inactive (closed spans)
    rr: np.ndarray  #: int64[P] bandwidth_caps' round-robin pointer: the class served last
    deficit: np.ndarray  #: int64[P*R] weighted_round_robin: per port its classes' deficits,
    #: then its pointer (the class served last), in a row of ``wrow`` (:func:`wrr_row`)
    wrow: np.int64  #: R, the power of two >= C + 1 (a row never straddles a cache line)
    first: np.ndarray  #: int64[C] scratch: each class's oldest sendable request
    first_prev: np.ndarray  #: int64[C] scratch: the request before it
    ring_t: np.ndarray  #: int64[P*C*K] sliding: send times
    ring_b: np.ndarray  #: int64[P*C*K] sliding: bytes
    ring_head: np.ndarray  #: int64[P*C] oldest entry's slot
    ring_n: np.ndarray  #: int64[P*C] entries
    ring_k: np.ndarray  #: int64[1] K, slots per ring
    full: np.ndarray  #: int64[1] non-zero: a ring is full (the loop stops with ST_QOS_RING)
    size: np.ndarray  #: int64[C] scratch: the size of each class's candidate packet
    nic: np.int64  #: 1: the policy applies at injection too (the loop's ``QOS_NIC``)
    nic_ptr: np.ndarray  #: int64[N*C] each (node, class)'s next feed slot (nic_qos.py)
    nic_one: np.ndarray  #: int64[N] the class of all a node's feed slots, -1: none or several
    #: (``NIC_WALK``: always the class walk, the reference the shorter paths match in tests)
    wsnap: np.ndarray  #: int64[N*C] weighted_round_robin at injection: each NIC port's bytes
    #: per class (the loop's counters) that its deficit row accounts for (:func:`wrr_catch_up`)
    qclass: np.ndarray  #: uint8[P*V] the class of input queue ``p * V + v`` (:func:`run_state`)
    ring_ser: np.ndarray  #: float64[P] sliding: each port's ps per byte (:func:`run_state`),
    #: for :func:`grow_rings`' bound on the sends a port starts in one window


def new_state(kind: int, n_ports: int, n_classes: int, window_ps: int = 1,
              sliding: bool = False, caps: list[float] | None = None,
              weights: list[int] | None = None, ring: int = RING_START,
              n_nodes: int = 0) -> QosState:
    """A fresh state (every class active, counters zero) for ``n_ports`` ports; with
    ``n_nodes > 0`` the policy also applies at those nodes' NICs (``at: injection``)."""
    P, C = n_ports, n_classes
    i64 = np.int64
    K = ring if sliding else 1
    R = wrr_row(C)
    deficit = np.zeros(P * R, dtype=i64)
    deficit[C::R] = C - 1  # every pointer at the last class: class 0 is served first
    capw = np.array([float(c) * window_ps for c in (caps or [1.0] * C)], dtype=np.float64)
    return QosState(
        kind=i64(kind), n_classes=i64(C), window=i64(max(1, window_ps)), sliding=i64(sliding),
        capw=capw, capb=np.zeros(P * C, dtype=i64), weight=np.array(weights or [1] * C, dtype=i64),
        win=np.full(P, max(1, window_ps), dtype=i64), bytes=np.zeros(P * C, dtype=i64),
        since=np.full(P * C, -1, dtype=i64), inactive=np.zeros(P * C, dtype=i64),
        rr=np.full(P, C - 1, dtype=i64), deficit=deficit, wrow=i64(R),
        first=np.full(C, -1, dtype=i64), first_prev=np.full(C, -1, dtype=i64),
        ring_t=np.zeros(P * C * K if sliding else 1, dtype=i64),
        ring_b=np.zeros(P * C * K if sliding else 1, dtype=i64),
        ring_head=np.zeros(P * C, dtype=i64), ring_n=np.zeros(P * C, dtype=i64),
        ring_k=np.array([K], dtype=i64), full=np.zeros(1, dtype=i64),
        size=np.zeros(C, dtype=i64), nic=i64(n_nodes > 0),
        nic_ptr=np.zeros(max(n_nodes, 1) * C, dtype=i64),
        nic_one=np.full(max(n_nodes, 1), -1, dtype=i64),
        wsnap=np.zeros(max(n_nodes, 1) * C, dtype=i64), qclass=np.zeros(1, dtype=np.uint8),
        ring_ser=np.zeros(1, dtype=np.float64))


def wrr_row(n_classes: int) -> int:
    """Slots of a port's ``weighted_round_robin`` row: its ``n_classes`` deficits and its
    pointer, rounded up to a power of two (4 for two classes: 32 bytes, two ports a line)."""
    return 1 << int(n_classes).bit_length()


def reset_nic_ptrs(st: tuple, nic_first: np.ndarray, cls: np.ndarray) -> None:
    """A new feed was loaded (:func:`federation.engine.feed.load_chunk`: each NIC's unsent
    packets first, then the chunk's; ``cls`` is its class column, written here): every
    (node, class) pointer restarts at its node's first slot of that class (its node's end
    when it has none), and each slot's class word gets, above its class (``LINK_SHIFT``), its
    node's next slot of the same class (the node's end after its last), so that a class's
    next head comes with the row just sent and no NIC scans over the other classes' packets.
    A node whose slots are all of one class is marked with it (``nic_one``): its NIC takes
    the one-class path (:func:`federation.engine.loop.inject_one`) until the next load.
    Nothing for an arbiter state that is not a QoS policy's at injection."""
    if not (isinstance(st, QosState) and st.nic):
        return
    C = int(st.n_classes)
    ptr = st.nic_ptr.reshape(-1, C)
    ptr[:] = nic_first[1:, None]  # none of the class: the node's end
    N = nic_first.shape[0] - 1
    node = np.repeat(np.arange(N), np.diff(nic_first))
    own = cls & CLASS_MASK  # a backlog's slots come with the old feed's links
    link = nic_first[node + 1]
    kinds = np.zeros(N, dtype=np.int64)  # how many classes each node has slots of
    for c in range(C):
        rows = np.flatnonzero(own == c)
        if rows.size == 0:
            continue
        at = node[rows]
        first = np.ones(rows.size, dtype=bool)
        first[1:] = at[1:] != at[:-1]  # node-sorted: a node's first row of the class
        ptr[at[first], c] = rows[first]
        kinds[at[first]] += 1
        st.nic_one[at[first]] = c
        last = np.ones(rows.size, dtype=bool)
        last[:-1] = first[1:]  # a node's last row of the class keeps the node's end
        link[rows[~last]] = rows[1:][~last[:-1]]
    st.nic_one[:N][kinds != 1] = -1  # none or several
    cls[:] = own | (link << LINK_SHIFT)


def settle_nics(st: tuple, class_bytes: np.ndarray, nic_port: np.ndarray) -> None:
    """Bring every NIC's ``weighted_round_robin`` row up to date with the one-class sends it
    has not seen (:func:`wrr_catch_up`, for all NICs at once): called as a feed loads, before
    the nodes' one-class marks change.  ``class_bytes``: the loop's bytes per port and class
    (one class: per port).  Nothing for other states."""
    if not (isinstance(st, QosState) and st.nic and st.kind == K_WRR):
        return
    C, R = int(st.n_classes), int(st.wrow)
    N = st.nic_one.shape[0]
    sent = class_bytes.reshape(-1, C)[nic_port[:N]]
    snap = st.wsnap.reshape(-1, C)
    pending = sent - snap
    if np.any((pending > 0).sum(axis=1) > 1):  # the loop settles at every class walk
        raise AssertionError("a NIC has unsettled sends of two classes")
    rows = st.deficit.reshape(-1, R)
    for c in range(C):
        nodes = np.flatnonzero(pending[:, c] > 0)
        if nodes.size == 0:
            continue
        o = nic_port[nodes]
        q = int(st.weight[c]) * QUANTUM
        x = rows[o, c] + np.where(rows[o, C] != c, q, 0) - pending[nodes, c]
        x = np.where(x < 0, x + q * ((q - 1 - x) // q), x)
        rows[o, :C] = 0
        rows[o, c] = x
        rows[o, C] = c
    snap[:] = sent


def cap_bytes(capw: np.ndarray | float, port_ser: np.ndarray | float) -> np.ndarray:
    """Byte caps ``cap x W / (ps per byte)`` rounded to a whole byte (at most 2**62): the one
    formula of :func:`set_caps` and of the check before the run that each cap holds a packet
    (``bandwidth_caps``' ``port_problem``), so that the two cannot disagree."""
    return np.minimum(np.rint(np.divide(capw, port_ser)), 2.0**62)


def set_caps(st: QosState, port_ser: np.ndarray) -> None:
    """Each port's byte caps: ``cap x bandwidth x W`` rounded to a whole byte (the driver
    calls it once the ports' figures are known)."""
    caps = cap_bytes(st.capw[None, :], port_ser[:, None])
    st.capb[:] = caps.astype(np.int64).reshape(-1)


def run_state(state: tuple, port_ser: np.ndarray, n_vcs: int) -> tuple[tuple, bool]:
    """``(the state one run starts from, whether it is a QoS policy's)``: a copy of the
    arbiter's state (the loop writes into it: QoS counters, round-robin pointers; a job may be
    run more than once, as the benchmarks' repeats are), with a QoS policy's byte caps set
    from the ports' figures and its queues' classes from the ``n_vcs`` VCs per port (class
    ``c`` owns VCs ``c * n_vcs / C`` up to the next class's)."""
    items = [x.copy() if isinstance(x, np.ndarray) else x for x in state]
    fresh = type(state)(*items) if hasattr(state, "_fields") else tuple(items)
    if isinstance(fresh, QosState):
        set_caps(fresh, port_ser)
        C = int(fresh.n_classes)
        per_vc = (np.arange(n_vcs) // max(1, n_vcs // C)).astype(np.uint8)
        fresh = fresh._replace(qclass=np.tile(per_vc, port_ser.shape[0]))
        if fresh.sliding:
            fresh = fresh._replace(ring_ser=np.asarray(port_ser, dtype=np.float64).copy())
        return fresh, True
    return fresh, False


def inactive_time(st: QosState, end: int) -> np.ndarray | None:
    """Ps each (port, class) spent inactive over ``[0, end]`` (ports x classes): the closed
    spans plus those still open, each closed where the policy would have closed it (the
    window edge; sliding: the expiry that takes the class below its cap), or at ``end``;
    ``None`` for a policy without inactive classes."""
    if st.kind != K_CAPS:
        return None
    C = int(st.n_classes)
    W = int(st.window)
    out = st.inactive.copy()
    K = int(st.ring_k[0])
    for i in np.nonzero(st.since >= 0)[0]:
        since = int(st.since[i])
        if not st.sliding:
            stop = (since // W + 1) * W
        else:
            total = int(st.bytes[i])
            stop = end
            for j in range(int(st.ring_n[i])):
                slot = i * K + (int(st.ring_head[i]) + j) % K
                total -= int(st.ring_b[slot])
                if total < int(st.capb[i]):
                    stop = int(st.ring_t[slot]) + W
                    break
        out[i] += max(0, min(stop, end) - since)
    return out.reshape(-1, C)


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
def wrr_catch_up(sim, st, node, o):
    """``weighted_round_robin`` at injection keeps no state for a one-class NIC's sends
    (:func:`federation.engine.loop.inject_one`); before the NIC's next pick by the policy,
    its row takes the bytes of those sends, the difference between the loop's per-class
    counters at its port ``o`` and the snapshot ``wsnap`` (only the NIC's one class can have
    any: a node's class marks change only as a feed loads, and :func:`settle_nics` settles
    every NIC then)."""
    C = st.n_classes
    for c in range(C):
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
def weighted_classes(sim, st, o):
    """The ``weighted_round_robin`` policy: deficit round-robin over classes at ``o``."""
    n, one, qi, prev, size = qos_scan(sim, st, o, False)
    if n == 0:
        return -1, -1
    if n == 1:  # the scan left the one class's size in a register
        st.size[one] = size
        wrr_pick(st, o, 1, one)
        return qi, prev
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
