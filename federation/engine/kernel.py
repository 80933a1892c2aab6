"""The compiled event loop of the native packet-level engine.

Model (store-and-forward packets, credit-based flow control, input-queued VC routers):

* A packet leaves output port ``o`` when ``o`` is idle and the downstream VC has credit for the
  whole packet; it occupies ``o`` for ``ser = size / bandwidth`` and arrives (tail) at the peer's
  input buffer ``ser + latency`` later.
* At a router, a packet is routed ``router_delay`` after its tail arrived, or when it reaches
  the head of its input VC if that is later, then *requests* its output port.  Each output port
  serves requests oldest-first,
  skipping requests whose downstream VC lacks credit (so one blocked VC cannot stall others).
  Different outputs are served in parallel, like the CODES router model.
* When a packet's tail leaves an input buffer its bytes return upstream as a credit, which takes
  the cable's latency to arrive.
* NICs inject their packets in creation order at the NIC bandwidth and always accept ejected
  packets.

Why it is fast: all state is flat NumPy arrays, events are five integers in a binary heap keyed
by (time in integer picoseconds, sequence number), routing is table lookups, and the loop is
compiled by numba.  No Python object is created per packet or per event.  The loop returns to
Python every ``budget`` events (progress reports, heap growth) and at the edges of the
measurement window (per-port counters are read there) without losing state.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from federation.limits import HEAP_SEQ_BITS
from federation.limits import TIME_LIMIT_PS as _TIME_LIMIT_PS

# event types
EV_ARRIVE = 0  # a = packet, b = input port (tail arrived)
EV_READY = 1  # a = input port, b = vc (head packet finished its router delay)
EV_FREE = 2  # a = output port (serialization done)
EV_CREDIT = 3  # a = output port, b = vc, c = bytes
EV_NIC = 4  # a = node (a packet becomes available at the NIC)

# status codes
ST_DONE = 0
ST_DEADLOCK = 1
ST_BUDGET = 2
ST_HEAP_FULL = 3
ST_BAD_VC = 4
ST_TIME_LIMIT = 5
ST_UNTIL = 6  # the next event is at or after ``until``: every earlier event is done
ST_NO_ROUTE = 7  # a table entry a packet needed is -1 (packet S_BADPKT at router S_BAD_ROUTER)

# indices into the int64 scalar state array
S_NOW = 0
S_SEQ = 1
S_HEAP = 2
S_DELIVERED = 3
S_EVENTS = 4
S_HOPS = 5
S_BADPKT = 6
S_BAD_TIME = 7  # first event time refused by _push (0: none; 0 is never out of range)
S_BAD_EV = 8  # its kind, and its payload a, b (what the driver's message names)
S_BAD_A = 9
S_BAD_B = 10
S_BAD_ROUTER = 11
N_SCALARS = 12

INF_CREDIT = np.int64(1) << 60

# columns of the per-packet state matrix ``ps`` (int32, one 64-byte row per packet, so that
# handling a packet touches one cache line instead of one per field)
P_NEXT = 0
P_OUTVC = 1
P_VC = 2
P_LEVEL = 3
P_DIM = 4
P_PHASE = 5
P_HOPS = 6
P_MINIMAL = 7
P_DST = 8
P_SIZE = 9
P_VIA = 10
P_SRC = 11
PS_COLS = 16



# Event queue: a binary min-heap of int64 keys ``time << SEQ_BITS | seq`` (seq = scheduling order
# modulo 2**SEQ_BITS), so one integer comparison orders events by time, then by scheduling order;
# the payload (a*8 + type, b + c<<32) moves with the key.  Popping sinks the hole to a leaf
# choosing the smaller child without a data-dependent branch, then lifts the last element into
# it (Floyd's bottom-up variant): about half the unpredictable branches of a textbook heap.
SEQ_BITS = HEAP_SEQ_BITS
SEQ_MASK = (1 << SEQ_BITS) - 1
TIME_LIMIT_PS = _TIME_LIMIT_PS  # 8.8 simulated seconds (see federation.limits)
KEY_MAX = np.int64(0x7FFFFFFFFFFFFFFF)


@njit(cache=True, inline="always")
def _lift(hk, ha, hb, i, key, va, vb):
    """Place an event at free slot ``i``, moving it up past later parents."""
    while i > 0:
        parent = (i - 1) >> 1
        pk = hk[parent]
        if key < pk:
            hk[i] = pk
            ha[i] = ha[parent]
            hb[i] = hb[parent]
            i = parent
        else:
            break
    hk[i] = key
    ha[i] = va
    hb[i] = vb


@njit(cache=True, inline="always")
def _push(hk, ha, hb, sc, time, ev, a, b, c):
    """Schedule an event (the caller keeps ``sc[S_HEAP] + 2 <= len(hk)``).

    The time is checked here, where the key is made, because ``time << SEQ_BITS`` of a time
    past the clock range wraps to an earlier (even a plausible) time that no later check can
    tell from a real one.  Every operand the loop adds up is below ``TIME_LIMIT_PS`` (the
    driver checks the figures it passes), so ``time`` itself cannot have wrapped.  A refused
    event is recorded (the first one) and keyed at time -1 instead, so that it is the next
    event popped and the loop stops there with ``ST_TIME_LIMIT``.  The check is one
    well-predicted branch per push.
    """
    seq = sc[S_SEQ]
    sc[S_SEQ] = seq + 1
    if time < 0 or time >= TIME_LIMIT_PS:
        if sc[S_BAD_TIME] == 0:
            sc[S_BAD_TIME] = time
            sc[S_BAD_EV] = ev
            sc[S_BAD_A] = a
            sc[S_BAD_B] = b
        time = -1
    key = (time << SEQ_BITS) | (seq & SEQ_MASK)
    i = sc[S_HEAP]
    sc[S_HEAP] = i + 1
    _lift(hk, ha, hb, i, key, a * 8 + ev, b + (c << 32))


@njit(cache=True, inline="always")
def _pop_into(hk, ha, hb, sc, out):
    """Remove the earliest event; writes (time, ev, a, b, c) into ``out``."""
    out[0] = hk[0] >> SEQ_BITS
    va = ha[0]
    vb = hb[0]
    out[1] = va & 7
    out[2] = va >> 3
    out[3] = vb & 0xFFFFFFFF
    out[4] = vb >> 32
    n = sc[S_HEAP] - 1
    sc[S_HEAP] = n
    lk = hk[n]
    la = ha[n]
    lb = hb[n]
    hk[n] = KEY_MAX  # sentinel: a missing right child never wins
    # sink the hole to a leaf along the smaller children
    i = 0
    left = 1
    while left < n:
        m = left + (hk[left + 1] < hk[left])
        hk[i] = hk[m]
        ha[i] = ha[m]
        hb[i] = hb[m]
        i = m
        left = 2 * i + 1
    _lift(hk, ha, hb, i, lk, la, lb)  # the former last element, from the hole


@njit(cache=True, error_model="numpy")
def run_kernel(
    budget, until,
    # ---- topology / machine
    n_vcs, router_delay, cut_through, port_peer, port_router, port_ser, port_lat, port_buf,
    node_router, node_port, nic_port,
    # ---- routing
    gnext, lnext, rgroup, rlocal, vc_mode, vc_bump, port_dim, port_dateline,
    adaptive, adaptive_bias, phase_vc_offset,
    # ---- packets
    pkt_time, nic_first, nic_pkts,
    # ---- dynamic state
    sc, hk, ha, hb,
    ps,
    q_head, q_tail, occ, credits, busy_until, wake, req_head, req_tail, req_next, stall_start,
    nic_ptr, nic_wake,
    # ---- outputs
    pkt_inject, pkt_deliver, pkt_tail,
    port_bytes, port_pkts, port_busy, port_stall, port_peak,
):
    """Process events until done, ``budget`` events, the heap needs to grow, or the next
    event is at or after ``until`` (ps, at most ``TIME_LIMIT_PS``): the driver then reads the
    counters as they stand at exactly ``until`` (see ``native.counters_at``) and resumes."""
    V = n_vcs
    n_router_ports = nic_port[0] if nic_port.shape[0] > 0 else port_peer.shape[0]
    cur = np.zeros(5, dtype=np.int64)
    until_key = until << SEQ_BITS  # keys order like times: one comparison per event
    processed = 0
    while sc[S_HEAP] > 0:
        if processed >= budget:
            sc[S_EVENTS] += processed
            return ST_BUDGET
        if sc[S_HEAP] + 8 > hk.shape[0]:
            sc[S_EVENTS] += processed
            return ST_HEAP_FULL
        if hk[0] >= until_key:
            sc[S_EVENTS] += processed
            return ST_UNTIL
        _pop_into(hk, ha, hb, sc, cur)
        now = cur[0]
        if now < 0 or now >= TIME_LIMIT_PS:  # refused by _push (keyed at -1), or a bad start
            if sc[S_BAD_TIME] == 0:
                sc[S_BAD_TIME] = now
                sc[S_BAD_EV] = cur[1]
                sc[S_BAD_A] = cur[2]
                sc[S_BAD_B] = cur[3]
            sc[S_EVENTS] += processed
            return ST_TIME_LIMIT
        ev = cur[1]
        a = cur[2]
        b = cur[3]
        c = cur[4]
        sc[S_NOW] = now
        processed += 1

        o = -1  # output port to try after this event
        if ev == EV_ARRIVE:
            # tail arrived ``router_delay`` ago: the packet is ready to be routed
            pk = a
            ip = b
            if port_router[ip] < 0:
                pkt_deliver[pk] = now
                sc[S_DELIVERED] += 1
                continue
            vc = ps[pk, P_VC]
            qi = ip * V + vc
            ps[pk, P_NEXT] = -1
            if q_tail[qi] < 0:
                q_head[qi] = pk
                q_tail[qi] = pk
                ev = EV_READY  # it is the head: route it now
                a = ip
                b = vc
            else:
                ps[q_tail[qi], P_NEXT] = pk
                q_tail[qi] = pk
                continue
        if ev == EV_READY:
            ip = a
            vc = b
            qi = ip * V + vc
            pk = q_head[qi]
            r = port_router[ip]
            dnode = ps[pk, P_DST]
            dr = node_router[dnode]
            # ---------------- routing decision
            if dr == r:
                o = node_port[dnode]
                ovc = 0
            else:
                via = ps[pk, P_VIA]
                if adaptive and via >= 0 and ps[pk, P_HOPS] == 0 and ps[pk, P_PHASE] == 0:
                    # UGAL at the source router: occupancy of the minimal and Valiant first
                    # ports, the Valiant one weighted by its double path length
                    if rgroup[r] != rgroup[dr]:
                        om = gnext[r, rgroup[dr]]
                    else:
                        om = lnext[r, rlocal[dr]]
                    on = om
                    if rgroup[r] != via:
                        on = gnext[r, via]
                    qm = np.int64(0)
                    qn = np.int64(0)
                    for k in range(V):
                        qm += port_buf[port_peer[om]] - credits[om * V + k]
                        qn += port_buf[port_peer[on]] - credits[on * V + k]
                    if qm <= 2 * qn + adaptive_bias:
                        ps[pk, P_VIA] = -1
                        via = -1
                if via >= 0 and ps[pk, P_PHASE] == 0:
                    if rgroup[r] == via:
                        ps[pk, P_PHASE] = 1
                    else:
                        ps[pk, P_MINIMAL] = 0
                if via >= 0 and ps[pk, P_PHASE] == 0:
                    o = gnext[r, via]
                elif rgroup[r] != rgroup[dr]:
                    o = gnext[r, rgroup[dr]]
                else:
                    o = lnext[r, rlocal[dr]]
                if o < 0:
                    sc[S_BADPKT] = pk
                    sc[S_BAD_ROUTER] = r
                    sc[S_EVENTS] += processed
                    return ST_NO_ROUTE
                if vc_mode == 0:
                    ovc = ps[pk, P_LEVEL]
                    if vc_bump[o]:
                        ps[pk, P_LEVEL] += 1
                else:
                    d = port_dim[o]
                    if d != ps[pk, P_DIM]:
                        ps[pk, P_DIM] = d
                        ps[pk, P_LEVEL] = 0
                    if port_dateline[o]:
                        ps[pk, P_LEVEL] = 1
                    ovc = ps[pk, P_LEVEL]
                if via >= 0 and ps[pk, P_PHASE] == 1:
                    ovc += phase_vc_offset  # Valiant's second phase on its own VCs
                if ovc >= V:
                    sc[S_BADPKT] = pk
                    sc[S_EVENTS] += processed
                    return ST_BAD_VC
            ps[pk, P_OUTVC] = ovc
            req_next[qi] = -1
            if req_tail[o] < 0:
                req_head[o] = qi
            else:
                req_next[req_tail[o]] = qi
            req_tail[o] = qi
        elif ev == EV_FREE:
            if wake[a] != now:
                continue  # superseded by a later wake-up of the same port: stale
            wake[a] = -1
            o = a
        elif ev == EV_CREDIT:
            credits[a * V + b] += c
            o = a
        elif ev == EV_NIC:
            if nic_wake[a] != now:
                continue  # superseded by a later wake-up of the same NIC: stale
            nic_wake[a] = -1
            o = nic_port[a]
        if o < 0:
            continue

        # ---------------- try to start a transmission on output port o
        if o >= n_router_ports:
            node = o - n_router_ports
            ptr = nic_ptr[node]
            if ptr >= nic_first[node + 1]:
                continue
            pk = nic_pkts[ptr]
            tn = pkt_time[pk]
            if busy_until[o] > tn:
                tn = busy_until[o]
            if tn > now:
                if nic_wake[node] != tn:
                    nic_wake[node] = tn
                    _push(hk, ha, hb, sc, tn, EV_NIC, node, 0, 0)
                continue
            ovc = ps[pk, P_VC]  # the injection VC the driver chose (router.injection_vc)
            size = ps[pk, P_SIZE]
            if credits[o * V + ovc] < size:
                if stall_start[o] < 0:
                    stall_start[o] = now
                continue
            nic_ptr[node] = ptr + 1
            pkt_inject[pk] = now
        else:
            if busy_until[o] > now:
                if req_head[o] >= 0 and wake[o] != busy_until[o]:
                    wake[o] = busy_until[o]
                    _push(hk, ha, hb, sc, busy_until[o], EV_FREE, o, 0, 0)
                continue
            qi = req_head[o]
            prev = -1
            pk = -1
            while qi >= 0:
                cand = q_head[qi]
                if credits[o * V + ps[cand, P_OUTVC]] >= ps[cand, P_SIZE]:
                    pk = cand
                    break
                prev = qi
                qi = req_next[qi]
            if pk < 0:
                if req_head[o] >= 0 and stall_start[o] < 0:
                    stall_start[o] = now
                continue
            nxt = req_next[qi]
            if prev < 0:
                req_head[o] = nxt
            else:
                req_next[prev] = nxt
            if req_tail[o] == qi:
                req_tail[o] = prev
            ip = qi // V
            ivc = qi - ip * V
            nh = ps[pk, P_NEXT]
            q_head[qi] = nh
            if nh < 0:
                q_tail[qi] = -1
            size = ps[pk, P_SIZE]
            ovc = ps[pk, P_OUTVC]
            done = now + np.int64(size * port_ser[o] + 0.5)
            if cut_through and pkt_tail[pk] > done:
                done = pkt_tail[pk]  # the tail cannot leave before it has arrived
            occ[ip] -= size
            # the credit leaves when the tail has left, and crosses the input cable
            _push(hk, ha, hb, sc, done + port_lat[ip], EV_CREDIT, port_peer[ip], ivc, size)
            if nh >= 0:
                _push(hk, ha, hb, sc, now, EV_READY, ip, ivc, 0)
            if port_router[port_peer[o]] >= 0:
                ps[pk, P_HOPS] += 1
                sc[S_HOPS] += 1
        # ---------------- transmit pk on o into VC ovc downstream
        if stall_start[o] >= 0:
            port_stall[o] += now - stall_start[o]
            stall_start[o] = -1
        if o >= n_router_ports:
            done = now + np.int64(size * port_ser[o] + 0.5)
        credits[o * V + ovc] -= size
        busy_until[o] = done
        port_bytes[o] += size
        port_pkts[o] += 1
        port_busy[o] += done - now
        ps[pk, P_VC] = ovc
        dn = port_peer[o]
        arrive = done + port_lat[o]  # the tail's arrival (a NIC receives whole packets)
        if port_router[dn] >= 0:
            if cut_through:
                # virtual cut-through: routed once the head is in, the tail follows
                pkt_tail[pk] = arrive
                arrive = now + port_lat[o]
            arrive += router_delay
            occ[dn] += size
            if occ[dn] > port_peak[dn]:
                port_peak[dn] = occ[dn]
        _push(hk, ha, hb, sc, arrive, EV_ARRIVE, pk, dn, 0)
        if o >= n_router_ports:
            ptr = nic_ptr[node]
            if ptr < nic_first[node + 1]:
                tn = pkt_time[nic_pkts[ptr]]
                if tn < done:
                    tn = done
                if nic_wake[node] != tn:
                    nic_wake[node] = tn
                    _push(hk, ha, hb, sc, tn, EV_NIC, node, 0, 0)
        elif req_head[o] >= 0 and wake[o] != done:
            wake[o] = done
            _push(hk, ha, hb, sc, done, EV_FREE, o, 0, 0)
    sc[S_EVENTS] += processed
    if sc[S_DELIVERED] < pkt_time.shape[0]:
        return ST_DEADLOCK
    return ST_DONE
