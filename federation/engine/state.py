"""The one typed container the compiled loop, routings and arbiters share: :class:`Sim`.

All state of a run is flat NumPy arrays held by the driver (``native.py``), so a loop slice
can stop and resume anywhere.  They travel into compiled code as one named tuple instead of
fifty positional arguments; numba types it field by field, so ``sim.credits[i]`` costs what a
bare array access costs.  Routing and arbiter plugins should read it through the accessors of
:mod:`federation.engine.api`, which keep working when fields are added or regrouped.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from federation.engine.iq import IQ
from federation.engine.queue import Queue


class Sim(NamedTuple):
    # ---- figures of the machine (read-only during a run)
    n_vcs: np.int64  #: VCs per port
    router_delay: np.int64  #: ps from arrival to routing
    credit_delay: np.int64  #: ps a returned credit takes to be usable upstream (default model)
    cut_through: bool  #: route on the head's arrival (virtual cut-through)
    n_router_ports: np.int64  #: ports below this id belong to routers, the rest to NICs
    max_hops: np.int64  #: more router-to-router hops than this is a routing loop
    port_peer: np.ndarray  #: int64[P] the port at the other end of each port's cable
    port_router: np.ndarray  #: int64[P] owning router, -1 for a NIC port
    port_ser: np.ndarray  #: float64[P] ps per byte out of the port
    port_lat: np.ndarray  #: int64[P] cable latency, ps
    port_buf: np.ndarray  #: int64[P] input buffer per VC behind the port, bytes
    router_port_start: np.ndarray  #: int64[R+1] router r owns ports [start[r], start[r+1])
    node_router: np.ndarray  #: int64[N]
    node_port: np.ndarray  #: int64[N] the router port that leads to the node
    nic_port: np.ndarray  #: int64[N] the node's NIC port
    # ---- traffic: a packet takes a row of the packet state when it reaches the head of its
    # NIC and gives it back on delivery.  Open-loop packets wait before that in the *feed*,
    # which the driver refills a chunk of time at a time (:mod:`federation.engine.feed`);
    # rank programs' wait as flows (:class:`Prog`)
    pm: np.ndarray  #: int64[rows, 4] of each row's packet: creation time (M_TIME), when it
    #: left its NIC (M_INJECT, -1 not yet), open-loop packet number (M_ID, -1: none) and
    #: message number (M_MSG): one cache line, read once at delivery
    nic_first: np.ndarray  #: int64[N+1] node n's waiting open-loop packets are feed slots
    #: nic_first[n] .. nic_first[n+1]-1, in creation order
    nic_orow: np.ndarray  #: int64[N] row of the node's head open-loop packet, -1 not born yet
    feed: np.ndarray  #: int64[S, 8] waiting packets, one 64-byte row each (feed.F_* columns)
    # ---- dynamic state
    sc: np.ndarray  #: int64 scalars (events.S_*)
    q: Queue  #: the event queue (:mod:`federation.engine.queue`)
    ps: np.ndarray  #: int32[rows, 16] packet state rows (api.P_* columns)
    q_head: np.ndarray  #: int32[P*V] head packet of each input VC queue, -1 empty
    q_tail: np.ndarray  #: int32[P*V]
    occ: np.ndarray  #: int64[P] bytes held in each input port's buffers
    credits: np.ndarray  #: int64[P*V] free bytes downstream of each output VC (the returns
    #: due by now applied: router.settle)
    cr: np.ndarray  #: int64[n, 4] pool of credit returns on their way: key, VC, bytes, next
    cr_free: np.ndarray  #: int64[n] free rows of the pool (sc[S_CRFREE] of them)
    cr_head: np.ndarray  #: int64[P] each output port's pending returns, by key (-1: none)
    cr_tail: np.ndarray  #: int64[P]
    cwait: np.ndarray  #: int64[P] 1: requests (or the NIC) wait there for credit
    cwake: np.ndarray  #: int64[P] key of the port's pending credit event, -1 none
    busy_until: np.ndarray  #: int64[P] when the port's current transmission ends
    wake: np.ndarray  #: int64[P] time of the port's pending FREE event, -1 none
    wake_key: np.ndarray  #: int64[P] and its key
    req_head: np.ndarray  #: int64[P] first input VC (p*V+v) requesting this output, -1 none
    req_tail: np.ndarray  #: int64[P]
    req_next: np.ndarray  #: int64[P*V] next request in the same output's list
    req_count: np.ndarray  #: int64[P] requests waiting for each output
    stall_start: np.ndarray  #: int64[P] start of the current credit stall, -1 none
    nic_ptr: np.ndarray  #: int64[N] next feed slot of each NIC
    nic_wake: np.ndarray  #: int64[N] time of the NIC's pending wake-up, -1 none
    nic_wake_key: np.ndarray  #: int64[N] and its key
    wakes: np.ndarray  #: int64[N, 2] NICs to wake (node, time) when the loop resumes
    # ---- results
    pkt_tail: np.ndarray  #: int64[rows] (cut-through only; length 1 otherwise)
    rec: np.ndarray  #: int64[cap, feed.REC_COLS] delivered open-loop packets (and program
    #: packets when ``Prog.keep``), drained by the driver (sc[S_REC] of them)
    port_bytes: np.ndarray  #: int64[P] (one class only: with several, per class below)
    port_pkts: np.ndarray  #: int64[P]
    port_busy: np.ndarray  #: int64[P]
    port_stall: np.ndarray  #: int64[P]
    port_peak: np.ndarray  #: int64[P]
    n_classes: np.int64  #: traffic classes
    #: VCs of each class, ``n_vcs // n_classes`` (kept: the loop divides by it on every hop)
    vc_need: np.int64
    port_class_bytes: np.ndarray  #: int64[P*C] bytes sent per port and class (counted with
    #: several classes only, when ``port_bytes`` is not: the driver sums them, one counter
    #: per hop; with one class ``port_bytes`` are they)
    nic_ctr: np.ndarray  #: int64[N, api.NC_COLS] per-NIC counters (api.NC_* columns)
    nic_flit: np.int64  #: bytes per flit (``nic.flit``): NC_REQ_FLITS counts size / flit
    iq: IQ | np.ndarray  #: the booksim_iq routers' state (:mod:`federation.engine.iq`; under
    #: the default model a one-element placeholder array, :func:`~federation.engine.iq.no_iq`)


class OpenPool(NamedTuple):
    """What an open-loop loop reads of the programs' state: the pool of packet rows and the
    NICs to try after an event.  Every compiled part the loop calls with it carries these 3
    arrays instead of :class:`Prog`'s 66 (numba passes a tuple's arrays one by one): a
    quarter of an open-loop loop's cold compile.  (A loop whose NICs pick classes, QoS at
    injection, reads the programs' flow queues too and gets an empty :class:`Prog`.)"""

    kick: np.ndarray  #: int64[2] NICs to try after the current event (sc[S_KICK])
    row_flow: np.ndarray  #: int64[rows] -1 (an open-loop packet's row, or free)
    free: np.ndarray  #: int64[rows] free rows (a stack; sc[S_FREE] of them)


class Prog(NamedTuple):
    """State of the rank programs of a closed-loop run (see :mod:`federation.engine.programs`).

    A *flow* is what a NIC queues as one unit: the packets of a message (``FLOW_DATA``), or a
    rendezvous request or reply (one control packet each); message ``m`` owns flows ``3m``,
    ``3m + 1`` and ``3m + 2``.  Program packets are born in the loop: a packet gets a row of
    the packet state when it reaches
    the head of its NIC, and gives it back when it is delivered, so memory follows the packets
    in flight, not the run's total.  Their figures are summed in ``pstat`` as they arrive,
    and recorded one by one like open-loop packets' only when the run keeps its packets
    table (``keep``).
    Without programs the operation, rank, message and flow arrays have length 1 and
    ``n_ops`` is 0; the pool of packet rows (``row_flow``, ``free``) serves open-loop packets
    too.

    The fields of operations (``op_*`` but ``op_next``), messages (``msg_*``), flows
    (``flow_*`` but ``flow_kind``), channels (``chan_*``) and matching slots (``slot_*``) are
    column views of one row-major table each (:func:`~federation.engine.program_arrays.
    build_traffic`): what the loop touches of one message is one cache line, not one per
    field.  The tables have a spare row or more; their columns are longer than the counts.
    """

    n_ops: np.int64
    o_send: np.int64  #: ps from a send's start to its message reaching the NIC
    o_recv: np.int64  #: ps from a message's arrival (receive posted) to the receive's finish
    packet_size: np.int64  #: bytes per data packet
    control_bytes: np.int64  #: bytes of a rendezvous request or reply
    vc_policy: np.int64  #: injection VC of program packets: 0 zero, 1 spread, 2 random
    via_mode: np.int64  #: intermediates of program packets: 0 none, 1 a group, 2 a router,
    #: 3 the router of a node drawn among all (a destination in the source group: none)
    keep: np.int64  #: 1: each delivered packet leaves a delivery record (``Sim.rec``) for the
    #: packets table (``outputs.packets``); 0: only ``pstat`` (set by the driver)
    # operations
    op_kind: np.ndarray  #: int64[O] SEND, RECV, COMPUTE (federation.programs.model)
    op_rank: np.ndarray  #: int64[O]
    op_time: np.ndarray  #: int64[O] compute duration, ps
    op_msg: np.ndarray  #: int64[O] a send's message; a receive's matched one (-1 until then)
    op_chan: np.ndarray  #: int64[O] a receive's channel (source, destination, tag)
    op_wait: np.ndarray  #: int64[O] dependencies not met yet
    op_start: np.ndarray  #: int64[O] ps, -1 not started
    op_finish: np.ndarray  #: int64[O] ps, -1 not finished
    op_next: np.ndarray  #: int64[O] next compute in its rank's CPU queue
    succ_first: np.ndarray  #: int64[2O+1] op i's FINISH successors: succ_op[succ_first[2i]:
    #: succ_first[2i + 1]], then its START ones up to succ_first[2i + 2]
    succ_op: np.ndarray  #: int64[D]
    succ_kind: np.ndarray  #: int8[D] FINISH or START (what of op i they wait for)
    ready: np.ndarray  #: int64[O] the ready queue: operations as their dependencies were met
    # ranks
    rank_left: np.ndarray  #: int64[R] operations not finished
    rank_finish: np.ndarray  #: int64[R] ps, -1 not finished
    cpu_busy: np.ndarray  #: int64[R] compute running on the rank's CPU, -1 idle
    cpu_head: np.ndarray  #: int64[R] computes waiting for it (FIFO via op_next)
    cpu_tail: np.ndarray  #: int64[R]
    # messages (one per send) and their matching
    msg_size: np.ndarray  #: int64[M] bytes (at least 1)
    msg_chan: np.ndarray  #: int64[M]
    msg_rdv: np.ndarray  #: int64[M] 1: rendezvous protocol
    msg_recv: np.ndarray  #: int64[M] matched receive, -1 none yet
    msg_arrived: np.ndarray  #: int64[M] eager data / rendezvous request arrived (ps), -1
    msg_post: np.ndarray  #: int64[M] the send started
    msg_start: np.ndarray  #: int64[M] its first data packet left the NIC
    msg_finish: np.ndarray  #: int64[M] its last data packet arrived
    msg_cls: np.ndarray  #: int64[M] traffic class of its packets (QoS; 0 without)
    chan_first: np.ndarray  #: int64[C+1] slots of channel c: chan_first[c] ...
    chan_nsend: np.ndarray  #: int64[C] sends started on the channel
    chan_nrecv: np.ndarray  #: int64[C] receives posted on the channel
    slot_msg: np.ndarray  #: int64[S] k-th send's message, -1
    slot_recv: np.ndarray  #: int64[S] k-th receive, -1
    # flows (3 per message) and NIC queues
    flow_kind: np.ndarray  #: int8[F] FLOW_DATA, FLOW_RTS, FLOW_CTS
    flow_msg: np.ndarray  #: int64[F]
    flow_op: np.ndarray  #: int64[F] the send whose message it carries
    flow_node: np.ndarray  #: int64[F] the NIC that sends it
    flow_dst: np.ndarray  #: int64[F] the node it goes to
    flow_npk: np.ndarray  #: int64[F]
    flow_left: np.ndarray  #: int64[F] packets not delivered yet
    flow_time: np.ndarray  #: int64[F] when it was queued at its NIC
    flow_next: np.ndarray  #: int64[F] next flow in the same NIC's queue
    nic_fhead: np.ndarray  #: int64[N] first queued flow of each NIC, -1 none
    nic_ftail: np.ndarray  #: int64[N]
    nic_fpos: np.ndarray  #: int64[N] packets of the head flow already injected
    nic_frow: np.ndarray  #: int64[N] row of the head flow's next packet, -1 not born yet
    nic_count: np.ndarray  #: int64[N] program packets injected (the ``spread`` VC rule)
    kick: np.ndarray  #: int64[F + 2] NICs to try after the current event (sc[S_KICK])
    fin: np.ndarray  #: int64[O + 1] operations finished by the current event (sc[S_FIN])
    # packet rows: the pool, and the sums over delivered program packets
    row_flow: np.ndarray  #: int64[rows] the flow of the program packet in each row (-1: an
    #: open-loop packet's row, or free)
    free: np.ndarray  #: int64[rows] free rows (a stack; sc[S_FREE] of them)
    pstat: np.ndarray  #: int64[8] PSTAT_* sums over delivered program packets
    # the intermediates drawn for program packets (Valiant and the routings built on it)
    router_group: np.ndarray  #: int64[R]
    group_first: np.ndarray  #: int64[G+1] routers of group g: group_routers[group_first[g]:...]
    group_routers: np.ndarray  #: int64[R]
    # routing modes per message, and the routing controller (federation.plugin.components.
    # Controller) that chooses them at each send
    msg_mode: np.ndarray  #: int64[M] routing mode of each message's packets (P_MODE), -1
    ctl_on: np.int64  #: 1: a controller decides each message's mode as it is handed to its NIC
    ctl_pend: np.ndarray  #: int64[M + 1] messages handed since the last decisions: [0] their
    #: count, then the messages in order
    ctl: tuple  #: the controller's own arrays (Controller.state)
