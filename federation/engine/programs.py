"""Rank programs inside the compiled loop: operations begin when their dependencies are met,
sends hand flows to NICs, receives match sends, and deliveries finish receives.

The semantics (see :mod:`federation.programs.model` for the operation graph):

* An operation *begins* when every dependency is met (operations without any begin at time
  0).  A send then *starts* and is matched; its message reaches the NIC ``o_send`` later.
  A receive starts (is *posted*) and is matched.  A compute starts when its rank's CPU is
  free (computes of one rank run one at a time, in the order they began).
* Matching: the k-th send started on a channel (source rank, destination rank, tag) pairs with
  the k-th receive posted on it: MPI's non-overtaking rule without wildcards.  Slots are
  allocated per channel before the run, so matching is two array writes.
* Eager (size up to ``nic.eager_threshold``): the message is one flow of data packets.  A send
  finishes when its last packet has left the NIC; the receive finishes ``o_recv`` after the
  last packet arrived or, if it was posted later, ``o_recv`` after it was posted.
* Rendezvous (above the threshold): a one-packet request (RTS) goes first; once it has arrived
  *and* the receive is posted, a one-packet reply (CTS) goes back, and its arrival queues the
  data.  The send finishes when its last data packet has left the NIC.
* A finished operation releases its FINISH successors; a started one its START successors.

Releasing uses an explicit queue (``Prog.ready``), not recursion, so chains of a million
operations cost no call depth.  Everything that finishes goes through an ``EV_OP`` event,
so an operation's successors always begin from the event loop in time order.
"""

from __future__ import annotations

import numpy as np

from federation.engine.api import (
    M_INJECT,
    M_TIME,
    P_HOPS,
    P_MINIMAL,
    P_SIZE,
    random_below,
    skip_past,
)
from federation.engine.events import (
    EV_OP,
    OP_FINISH,
    OP_HAND,
    S_FIN,
    S_FREE,
    S_KICK,
    S_OPS_DONE,
    S_QUEUED,
    S_READY_HEAD,
    S_STACK,
    push,
)
from federation.engine.feed import fill_row, record_program
from federation.engine.jit import part
from federation.engine.prefetch import prefetch
from federation.engine.queue import room

SEND = 0
RECV = 1
COMPUTE = 2
DEP_FINISH = 0
DEP_START = 1
FLOW_DATA = 0
FLOW_RTS = 1
FLOW_CTS = 2
# sums over delivered program packets (Prog.pstat)
PSTAT_PACKETS = 0
PSTAT_BYTES = 1
PSTAT_LATENCY = 2  # creation (queued at the NIC) to delivery, ps
PSTAT_NETWORK = 3  # leaving the NIC to delivery, ps
PSTAT_MAX = 4  # largest latency
PSTAT_HOPS = 5  # router-to-router hops
PSTAT_NONMINIMAL = 6  # packets the routing marked non-minimal
PSTAT_NETMAX = 7  # largest network latency


@part
def release(pg, sc, op, kind):
    """Count ``op``'s ``kind`` (FINISH or START) towards its successors; queue those whose
    last dependency this was (in operation order: each kind's edges are sorted by successor)."""
    k = 2 * op + kind
    for e in range(pg.succ_first[k], pg.succ_first[k + 1]):
        s = pg.succ_op[e]
        pg.op_wait[s] -= 1
        if pg.op_wait[s] == 0:
            pg.ready[sc[S_STACK]] = s
            sc[S_STACK] += 1


@part
def queue_flow(sim, pg, f, now):
    """Append flow ``f`` to its NIC's queue; the loop tries the NIC once the event is
    handled (``Prog.kick``), which costs no event."""
    n = pg.flow_node[f]
    pg.flow_time[f] = now
    pg.flow_next[f] = -1
    if pg.nic_ftail[n] < 0:
        pg.nic_fhead[n] = f
        pg.nic_fpos[n] = 0
    else:
        pg.flow_next[pg.nic_ftail[n]] = f
    pg.nic_ftail[n] = f
    sim.sc[S_QUEUED] += pg.flow_npk[f]
    pg.kick[sim.sc[S_KICK]] = n
    sim.sc[S_KICK] += 1


@part
def finish_at(sim, op, t):
    push(sim, t, EV_OP, op, OP_FINISH, 0)


@part
def finish_recv(sim, pg, op, now):
    """A receive's message is in and the receive posted: it finishes ``o_recv`` later (at
    once without an overhead: its successors are queued, no event is needed)."""
    if pg.o_recv == 0:
        to_finish(sim, pg, op)
    else:
        finish_at(sim, op, now + pg.o_recv)


@part
def to_finish(sim, pg, op):
    """``op`` finishes now: :func:`settle` finishes it after the event (one call site for
    :func:`finish` keeps the compiled loop small)."""
    pg.fin[sim.sc[S_FIN]] = op
    sim.sc[S_FIN] += 1


@part
def run_compute(sim, pg, op, now):
    pg.cpu_busy[pg.op_rank[op]] = op
    pg.op_start[op] = now
    release(pg, sim.sc, op, DEP_START)
    finish_at(sim, op, now + pg.op_time[op])


@part
def post_recv(sim, pg, op, now):
    """A receive is posted: take the next slot of its channel; if that slot's send has
    started, they match, and what already arrived of the message is acted on."""
    c = pg.op_chan[op]
    k = pg.chan_nrecv[c]
    pg.chan_nrecv[c] = k + 1
    s = pg.chan_first[c] + k
    pg.slot_recv[s] = op
    m = pg.slot_msg[s]
    if m < 0:
        return  # matched when its send starts
    pg.msg_recv[m] = op
    pg.op_msg[op] = m
    if pg.msg_arrived[m] >= 0:
        if pg.msg_rdv[m]:
            queue_flow(sim, pg, 3 * m + 2, now)  # the request waited: reply now
        else:
            finish_recv(sim, pg, op, now)  # the eager data waited for the receive


@part
def start_send(sim, pg, op, now):
    """A send starts: take the next slot of its channel (matching a posted receive), and hand
    its message to the NIC after the send overhead."""
    m = pg.op_msg[op]
    prefetch(pg.msg_size, m + 1)  # its rank's next message and its data flow
    prefetch(pg.flow_msg, 3 * m + 3)
    pg.msg_post[m] = now
    c = pg.msg_chan[m]
    k = pg.chan_nsend[c]
    pg.chan_nsend[c] = k + 1
    s = pg.chan_first[c] + k
    pg.slot_msg[s] = m
    r = pg.slot_recv[s]
    if r >= 0:
        pg.msg_recv[m] = r
        pg.op_msg[r] = m
    if pg.o_send > 0:
        push(sim, now + pg.o_send, EV_OP, op, OP_HAND, 0)
    else:
        hand(sim, pg, op, now)


@part
def hand(sim, pg, op, now):
    """A send's message reaches its NIC: its first flow (the data, or the rendezvous
    request) is queued.  With a routing controller the message is noted for its decision,
    which the loop makes after the event, before any NIC is tried (``control_sends``)."""
    m = pg.op_msg[op]
    if pg.ctl_on:  # the controller decides its mode before its first packet is born
        k = pg.ctl_pend[0] + 1
        pg.ctl_pend[k] = m
        pg.ctl_pend[0] = k
    f = 3 * m
    if pg.msg_rdv[m]:
        f += 1
    queue_flow(sim, pg, f, now)


@part
def begin(sim, pg, op, now):
    """``op``'s dependencies are met: start it (a compute may wait for its CPU)."""
    prefetch(pg.op_kind, op + 1)  # its rank's next operation, and that one's successors
    prefetch(pg.succ_op, pg.succ_first[2 * op + 2])
    k = pg.op_kind[op]
    if k == COMPUTE:
        r = pg.op_rank[op]
        if pg.cpu_busy[r] >= 0:
            pg.op_next[op] = -1
            if pg.cpu_tail[r] < 0:
                pg.cpu_head[r] = op
            else:
                pg.op_next[pg.cpu_tail[r]] = op
            pg.cpu_tail[r] = op
            return
        run_compute(sim, pg, op, now)
        return
    pg.op_start[op] = now
    release(pg, sim.sc, op, DEP_START)
    if k == SEND:
        start_send(sim, pg, op, now)
    else:
        post_recv(sim, pg, op, now)


@part
def settle(sim, pg, now):
    """After an event that moved rank programs: finish what finished now and begin what became
    ready, until neither is left.  Operations that become ready together begin in operation
    order (a FIFO: each operation is queued once per run, so the queue is the array
    ``pg.ready`` with two counters that only grow), so receives are posted in program order.
    Each step schedules at most two events; when the queue is nearly full the rest waits
    and the loop returns for the driver to grow it, then resumes here (``run_loop``)."""
    sc = sim.sc
    while room(sim.q):
        if sc[S_FIN] > 0:
            sc[S_FIN] -= 1
            finish(sim, pg, pg.fin[sc[S_FIN]], now)
        elif sc[S_READY_HEAD] < sc[S_STACK]:
            op = pg.ready[sc[S_READY_HEAD]]
            sc[S_READY_HEAD] += 1
            begin(sim, pg, op, now)
        else:
            return


@part
def unsettled(sim):
    """Operations wait to finish or begin (the heap had to grow in :func:`settle`)."""
    return sim.sc[S_FIN] > 0 or sim.sc[S_READY_HEAD] < sim.sc[S_STACK]


@part
def finish(sim, pg, op, now):
    """``op`` finishes: release its FINISH successors; a compute frees its CPU for the next."""
    pg.op_finish[op] = now
    release(pg, sim.sc, op, DEP_FINISH)
    sim.sc[S_OPS_DONE] += 1
    r = pg.op_rank[op]
    pg.rank_left[r] -= 1
    if pg.rank_left[r] == 0:
        pg.rank_finish[r] = now
    if pg.op_kind[op] == COMPUTE:
        nxt = pg.cpu_head[r]
        pg.cpu_busy[r] = -1
        if nxt >= 0:
            pg.cpu_head[r] = pg.op_next[nxt]
            if pg.cpu_head[r] < 0:
                pg.cpu_tail[r] = -1
            run_compute(sim, pg, nxt, now)


@part
def draw_via(sim, pg, sr, dr):
    """A Valiant intermediate for a program packet from router ``sr`` to ``dr``, drawn from
    the run's stream as ``routing_valiant.draw_intermediate_groups`` draws open-loop ones: a
    uniform group other than the source and destination groups (-1 within one group), and in
    router mode a uniform router of it; in node mode the router of a uniform node."""
    gs = pg.router_group[sr]
    gd = pg.router_group[dr]
    if gs == gd:
        return np.int64(-1)
    if pg.via_mode == 3:  # BookSim's UGAL: a node anywhere (its router)
        return sim.node_router[random_below(sim, sim.node_router.shape[0])]
    G = pg.group_first.shape[0] - 1
    if G <= 2:
        return np.int64(-1)
    x = skip_past(random_below(sim, G - 2), gs, gd)
    if pg.via_mode == 1:
        return x
    n = pg.group_first[x + 1] - pg.group_first[x]
    return pg.group_routers[pg.group_first[x] + random_below(sim, n)]


@part
def new_packet(sim, pg, node, f):
    """The next packet of flow ``f`` (at the head of ``node``'s NIC) is born: it takes a free
    pool row, which gets what the driver fills in for open-loop packets (destination, size,
    injection VC, intermediate, source); returns the row."""
    sc = sim.sc
    sc[S_FREE] -= 1
    row = pg.free[sc[S_FREE]]
    pg.row_flow[row] = f
    m = pg.flow_msg[f]
    if pg.flow_kind[f] == FLOW_DATA:
        size = min(pg.packet_size, pg.msg_size[m] - pg.nic_fpos[node] * pg.packet_size)
    else:
        size = pg.control_bytes
    V = sim.vc_need  # the routing's VCs (QoS: of the packet's class, whose base the NIC adds)
    vc = np.int64(0)
    if pg.vc_policy == 1:
        vc = pg.nic_count[node] % V
    elif pg.vc_policy == 2:
        vc = random_below(sim, V)
    pg.nic_count[node] += 1
    dst = pg.flow_dst[f]
    via = np.int64(-1)
    if pg.via_mode > 0:
        via = draw_via(sim, pg, sim.node_router[node], sim.node_router[dst])
    # the message's routing mode and class (all its flows)
    fill_row(sim, row, node, dst, size, via, vc, pg.msg_cls[m], pg.msg_mode[m], pg.flow_time[f])
    return row


@part
def delivered(sim, pg, pk, now):
    """Program packet ``pk`` reached its destination NIC: count it (and record it when the run
    keeps its packets table), free its row, and when it completes its flow: data finishes (or
    awaits) the receive, a request is answered once the receive is posted, a reply queues the
    data."""
    st = pg.pstat
    lat = now - sim.pm[pk, M_TIME]
    st[PSTAT_PACKETS] += 1
    st[PSTAT_BYTES] += sim.ps[pk, P_SIZE]
    st[PSTAT_LATENCY] += lat
    net = now - sim.pm[pk, M_INJECT]
    st[PSTAT_NETWORK] += net
    if lat > st[PSTAT_MAX]:
        st[PSTAT_MAX] = lat
    if net > st[PSTAT_NETMAX]:
        st[PSTAT_NETMAX] = net
    st[PSTAT_HOPS] += sim.ps[pk, P_HOPS]
    st[PSTAT_NONMINIMAL] += 1 - sim.ps[pk, P_MINIMAL]
    f = pg.row_flow[pk]
    if pg.keep:  # the packets table: a record like an open-loop packet's
        record_program(sim, pk, f, now)
    pg.free[sim.sc[S_FREE]] = pk
    sim.sc[S_FREE] += 1
    pg.flow_left[f] -= 1
    if pg.flow_left[f] > 0:
        return
    m = pg.flow_msg[f]
    kind = pg.flow_kind[f]
    if kind == FLOW_DATA:
        pg.msg_finish[m] = now
        r = pg.msg_recv[m]
        if r >= 0:
            finish_recv(sim, pg, r, now)
        else:
            pg.msg_arrived[m] = now
    elif kind == FLOW_RTS:
        if pg.msg_recv[m] >= 0:
            queue_flow(sim, pg, f + 1, now)
        else:
            pg.msg_arrived[m] = now
    else:
        queue_flow(sim, pg, f - 2, now)  # the reply is back: the data goes


@part
def keep_mode(sim, state, node, size, mode):
    """The routing controller of a run without one: each message keeps its mode (the loop
    calls ``CONTROL`` only when a controller is compiled in)."""
    return mode


@part
def handle_op(sim, pg, op, what, now):
    """An ``EV_OP`` event (finishing and beginning happen in :func:`settle`)."""
    if what == OP_FINISH:
        to_finish(sim, pg, op)
    elif what == OP_HAND:
        hand(sim, pg, op, now)
    else:
        pg.ready[sim.sc[S_STACK]] = op
        sim.sc[S_STACK] += 1
