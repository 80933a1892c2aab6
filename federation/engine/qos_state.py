"""The QoS policies' per-port state (:class:`QosState`, the ``ab`` of a QoS run's loop) and
what is done with it outside the loop: made fresh (:func:`new_state`), sized for a run
(:func:`run_state`, :func:`set_caps`), its NIC pointers reset and weighted round-robin's lazy
NIC deficits settled as each feed loads (:func:`reset_nic_ptrs`, :func:`settle_nics`), and the
inactive time read at the end (:func:`inactive_time`).  Apart from the compiled arbitration of
:mod:`federation.engine.qos`, which re-exports every name here, so that a policy plugin needs
one module."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from federation.engine.qos_rings import RING_START

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
    wrow: np.int64  #: R, the power of two >= C + 2 (a row never straddles a cache line)
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
    wrun: np.ndarray  #: int64[N*2] weighted_round_robin at injection, a NIC of several
    #: classes: the class of its last run of lone sends not yet settled (-1: none) and that
    #: class's counter as the run began (:func:`wrr_lone`)
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
        wsnap=np.zeros(max(n_nodes, 1) * C, dtype=i64),
        wrun=np.full(max(n_nodes, 1) * 2, -1, dtype=i64), qclass=np.zeros(1, dtype=np.uint8),
        ring_ser=np.zeros(1, dtype=np.float64))


def wrr_row(n_classes: int) -> int:
    """Slots of a port's ``weighted_round_robin`` row: its ``n_classes`` deficits, its
    pointer and the start of a run of lone sends (:func:`federation.engine.qos.wrr_port_lone`),
    rounded up to a power of two (4 for two classes: 32 bytes, two ports a line)."""
    return 1 << (int(n_classes) + 1).bit_length()


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
    """Bring every NIC's ``weighted_round_robin`` row up to date with the lone sends it has
    not seen (:func:`wrr_catch_up`, for all NICs at once): called as a feed loads, before
    the nodes' one-class marks change.  ``class_bytes``: the loop's bytes per port and class
    (one class: per port).  Nothing for other states."""
    if not (isinstance(st, QosState) and st.nic and st.kind == K_WRR):
        return
    C, R = int(st.n_classes), int(st.wrow)
    N = st.nic_one.shape[0]
    sent = class_bytes.reshape(-1, C)[nic_port[:N]]
    snap = st.wsnap.reshape(-1, C)
    pending = sent - snap
    rows = st.deficit.reshape(-1, R)
    run = st.wrun.reshape(-1, 2)
    lone = np.flatnonzero(run[:N, 0] >= 0)  # NICs of several classes with a run unseen
    if lone.size:  # only the last run counts, from a zero row if another class sent before
        c = run[lone, 0]
        other = ((pending[lone] > 0) & (np.arange(C) != c[:, None])).any(axis=1)
        o = nic_port[lone[other]]
        rows[o, :C] = 0
        rows[o, C] = (c[other] + 1) % C
        pending[lone] = 0
        pending[lone, c] = sent[lone, c] - run[lone, 1]
        run[lone, 0] = -1
    if np.any((pending > 0).sum(axis=1) > 1):  # the loop settles at every class walk
        raise AssertionError("a NIC has unsettled sends of two classes")
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
