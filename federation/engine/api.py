"""What a compiled routing or arbiter may read and write: the plugin authors' API.

A routing plugin's per-hop function has the signature ``route(sim, tables, r, ip, pk) ->
(port, vc)``: at router ``r`` the packet ``pk``, head of its queue on input port ``ip``, leaves
through global ``port`` (one of ``r``'s, see :func:`router_ports`) on output ``vc``.  Return
``(-1, 0)`` for "no route" (the run stops with a message naming the routing).  ``tables`` is
whatever tuple of arrays and numbers the plugin's Python side built once per run.  An
arbiter's ``arbitrate(sim, state, o) -> (qi, prev)`` reads output ``o``'s requests through
:func:`port_requests`, :func:`request_next`, :func:`request_head` and
:func:`request_credit_ok`, and their packets' age and class through :func:`pkt_created` and
:func:`pkt_class` (the loop checks its answer: :mod:`federation.engine.arbiter_check`).

These accessors are small compiled functions; numba inlines them, so reading through them
costs what reading the arrays directly costs, and plugin code keeps working when the
engine's state layout changes.  Everything here is usable only inside ``@njit`` code.

Per-packet fields owned by the routing: ``get_field(sim, pk, k)`` / ``set_field`` for ``k`` in
``0 .. N_FIELDS - 1``, zero at injection except ``F_VIA`` (the routing's ``intermediates``, -1
for none).  The built-in table routing uses ``F_LEVEL`` (VC level), ``F_DIM`` (current
dimension), ``F_PHASE`` (Valiant phase) and ``F_VIA``; a plugin may use any of them.
"""

from __future__ import annotations

import numpy as np

from federation.engine.credits import settle_credits
from federation.engine.events import S_NOW, S_RNG, S_SPARE
from federation.engine.jit import part

# columns of the per-packet state matrix ``sim.ps`` (int32, one 64-byte row per packet, so that
# handling a packet touches one cache line instead of one per field)
P_NEXT = 0  #: next packet in the same input VC queue
P_OUTVC = 1  #: output VC chosen by the routing (while it waits for its output)
P_VC = 2  #: the VC the packet is in (input side), or will be injected into
P_LEVEL = 3
P_DIM = 4
P_PHASE = 5
P_HOPS = 6  #: router-to-router hops so far
P_MINIMAL = 7  #: 1 until the routing marks the packet non-minimal
P_DST = 8
P_SIZE = 9
P_VIA = 10
P_SRC = 11
P_CLASS = 12  #: traffic class (QoS)
P_MODE = 15  #: routing mode the packet's message asked for (-1: the routing's own)
PS_COLS = 16

# columns of the per-row metadata ``sim.pm`` (int64, one 32-byte row per packet)
M_TIME = 0  #: creation time, ps
M_INJECT = 1  #: when it left its NIC, ps (-1: not yet)
M_ID = 2  #: open-loop packet number (-1: a rank program's packet, or a free row)
M_MSG = 3  #: open-loop message number
PM_COLS = 4

#: routing-owned fields, in the order ``get_field`` numbers them
F_LEVEL, F_DIM, F_PHASE, F_VIA, F_USER0, F_USER1 = range(6)
FIELD_COLUMNS = np.array([P_LEVEL, P_DIM, P_PHASE, P_VIA, 13, 14], dtype=np.int64)
N_FIELDS = 6

# columns of the per-NIC counters ``sim.nic_ctr`` (int64[N, NC_COLS]), as Aries' NIC counters
# (docs/architecture.md, "NIC counters"): request packets and flits count when a packet starts
# to leave the NIC; the stall when it ends (read it through ``nic_counter``/``nic_stall_now``,
# which add a stall still open); the latency when the packet is delivered
NC_REQ_FLITS = 0  #: request flits (ceil(bytes / nic.flit) per packet) the NIC injected
NC_STALL = 1  #: ps a ready packet was held at the NIC by back-pressure (no credit)
NC_REQ_PKTS = 2  #: request packets the NIC injected
NC_RSP_LAT = 3  #: cumulative request-to-response latency, ps (our packets have no responses:
#: each delivered packet adds its network latency, from leaving its NIC to its delivery)
NC_COLS = 4

#: ``sim.sc`` slot: the first VC of the traffic class of the packet being routed or injected
#: (QoS: class ``c`` owns VCs ``c x need .. (c + 1) x need - 1``; 0 without QoS).  The loop
#: sets it before it calls a routing's ``route`` or ``inject``, so that the credit accessors
#: below take a routing's VC numbers (``0 .. need - 1``) in the packet's own class's VCs
S_VCBASE = S_SPARE


# --------------------------------------------------------------------------- the router


@part
def router_ports(sim, r):
    """``(first, end)``: router ``r`` owns global ports ``first .. end - 1`` (its terminal
    ports first, then its cable ports)."""
    return sim.router_port_start[r], sim.router_port_start[r + 1]


@part
def peer_router(sim, port):
    """The router at the far end of ``port``; -1 if it leads to a node."""
    return sim.port_router[sim.port_peer[port]]


@part
def free_credit(sim, port, vc):
    """Bytes the input buffer of ``vc`` behind ``port`` can still accept (credits held);
    ``vc`` is the routing's number, in the routed packet's class's VCs (QoS)."""
    settle_credits(sim, port)
    return sim.credits[port * sim.n_vcs + sim.sc[S_VCBASE] + vc]


@part
def used_credit(sim, port, vc):
    """Bytes sent on ``port`` into ``vc`` whose credit has not come back: the far-end
    congestion a router knows from credits alone (zero towards a node); ``vc`` in the routed
    packet's class's VCs (QoS)."""
    if sim.port_router[sim.port_peer[port]] < 0:
        return np.int64(0)
    settle_credits(sim, port)
    return (sim.port_buf[sim.port_peer[port]]
            - sim.credits[port * sim.n_vcs + sim.sc[S_VCBASE] + vc])


@part
def used_credit_all(sim, port):
    """:func:`used_credit` summed over the port's VCs (QoS: the routed packet's class's)."""
    total = np.int64(0)
    for v in range(sim.vc_need):
        total += used_credit(sim, port, v)
    return total


@part
def congestion(sim, port, size):
    """Bytes ahead of a ``size``-byte packet on ``port``: the packets waiting for it at this
    router (counted at ``size`` each) plus the bytes sent on it whose credit has not returned
    (far-end congestion).  The port cost of ``aries`` and ``prog_adaptive``."""
    return queued(sim, port) * size + used_credit_all(sim, port)


@part
def queued(sim, port):
    """Packets at this router waiting for ``port`` (heads of input VCs routed to it)."""
    return sim.req_count[port]


@part
def busy_until(sim, port):
    """When ``port``'s current transmission ends (ps; in the past when idle)."""
    return sim.busy_until[port]


@part
def now(sim):
    return sim.sc[S_NOW]


# --------------------------------------------------------------------------- the packet


@part
def pkt_src(sim, pk):
    """Source node."""
    return np.int64(sim.ps[pk, P_SRC])


@part
def pkt_dst(sim, pk):
    """Destination node."""
    return np.int64(sim.ps[pk, P_DST])


@part
def pkt_dst_router(sim, pk):
    return sim.node_router[sim.ps[pk, P_DST]]


@part
def pkt_src_router(sim, pk):
    return sim.node_router[sim.ps[pk, P_SRC]]


@part
def pkt_hops(sim, pk):
    """Router-to-router hops made so far."""
    return np.int64(sim.ps[pk, P_HOPS])


@part
def pkt_vc(sim, pk):
    """The VC the packet occupies now (at the head of an input queue: its input VC), as the
    routing numbers it (QoS: less its class's first VC, ``sc[S_VCBASE]``; valid in a
    routing's ``route`` and ``inject``)."""
    return np.int64(sim.ps[pk, P_VC]) - sim.sc[S_VCBASE]


@part
def pkt_size(sim, pk):
    return np.int64(sim.ps[pk, P_SIZE])


@part
def pkt_class(sim, pk):
    """Traffic class (0 without QoS)."""
    return np.int64(sim.ps[pk, P_CLASS])


@part
def pkt_mode(sim, pk):
    """Routing mode the packet's message asked for (a per-message mode, as Cray's
    ``MPICH_GNI_ROUTING_MODE``); -1: the routing's own configured mode."""
    return np.int64(sim.ps[pk, P_MODE])


@part
def nic_counter(sim, node, k):
    """Node ``node``'s NIC counter ``k`` (``NC_*``) as it stands now: exact at any event
    (``NC_STALL`` through :func:`nic_stall_now`)."""
    if k == NC_STALL:
        return nic_stall_now(sim, node)
    return sim.nic_ctr[node, k]


@part
def pkt_created(sim, pk):
    """When the packet was created (its message was generated or sent), ps: its age is
    ``now(sim) - pkt_created(sim, pk)`` (an age-based arbiter's key)."""
    return sim.pm[pk, M_TIME]


@part
def pkt_injected(sim, pk):
    """When the packet left its NIC, ps (-1: not yet)."""
    return sim.pm[pk, M_INJECT]


# --------------------------------------------------------------------------- requests
# What an arbiter reads: output port ``o``'s requests form a list, oldest first, from
# ``port_requests(sim, o)`` through ``request_next``; each is an input queue ``qi`` (input
# port x V + VC) whose head packet ``request_head(sim, qi)`` waits for ``o``.


@part
def port_requests(sim, o):
    """The first (oldest) request waiting for output port ``o``; -1: none."""
    return sim.req_head[o]


@part
def request_next(sim, qi):
    """The request after ``qi`` in its output port's list; -1: ``qi`` is the last."""
    return sim.req_next[qi]


@part
def request_head(sim, qi):
    """The packet at the head of input queue ``qi``: the one request ``qi`` would send."""
    return np.int64(sim.q_head[qi])


@part
def request_port(sim, qi):
    """The input port of queue ``qi``."""
    return qi // sim.n_vcs


@part
def request_vc(sim, qi):
    """The input VC of queue ``qi``."""
    return qi % sim.n_vcs


@part
def request_credit_ok(sim, o, qi):
    """True if request ``qi``'s head packet has credit for its whole size on output ``o``
    now (the loop settles returned credits before it calls the arbiter).  An arbiter must
    pick only such a request: the loop refuses any other."""
    pk = sim.q_head[qi]
    return sim.credits[o * sim.n_vcs + sim.ps[pk, P_OUTVC]] >= sim.ps[pk, P_SIZE]


@part
def nic_stall_now(sim, node):
    """Node ``node``'s stall counter up to now: the stalls that ended plus the one going on
    (its ready packet has waited for credit since ``stall_start`` of its NIC port)."""
    start = sim.stall_start[sim.nic_port[node]]
    total = sim.nic_ctr[node, NC_STALL]
    if start >= 0:
        total += sim.sc[S_NOW] - start
    return total


@part
def get_field(sim, pk, k):
    return np.int64(sim.ps[pk, FIELD_COLUMNS[k]])


@part
def set_field(sim, pk, k, value):
    sim.ps[pk, FIELD_COLUMNS[k]] = value


@part
def mark_nonminimal(sim, pk):
    """Record that the packet left its minimal path (reported per packet in the results)."""
    sim.ps[pk, P_MINIMAL] = 0


# --------------------------------------------------------------------------- randomness


@part
def random_u64(sim):
    """Next value of the run's random stream (xorshift64*), seeded from the experiment's seed,
    so a run is reproducible; shared by the routing and the arbiter in event order."""
    x = np.uint64(sim.sc[S_RNG])
    x ^= x >> np.uint64(12)
    x ^= x << np.uint64(25)
    x ^= x >> np.uint64(27)
    sim.sc[S_RNG] = np.int64(x)
    return x * np.uint64(0x2545F4914F6CDD1D)


@part
def random_below(sim, n):
    """Uniform integer in ``0 .. n - 1`` (``n >= 1``)."""
    return np.int64((random_u64(sim) >> np.uint64(11)) % np.uint64(n))


@part
def skip_past(x, a, b):
    """The ``x``-th group counting past groups ``a`` and ``b`` (``a != b``): with ``x``
    uniform in ``0 .. G - 3``, a uniform group other than the source's and the destination's
    (Valiant's intermediate, Aries' non-minimal candidates)."""
    lo = min(a, b)
    hi = max(a, b)
    if x >= lo:
        x += 1
    if x >= hi:
        x += 1
    return x
