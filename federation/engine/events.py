"""The event queue of the native engine and the codes the loop shares with its driver.

Events are five integers (time, kind, a, b, c) in a 4-ary min-heap keyed by (time in integer
picoseconds, scheduling order), so runs are deterministic and no Python object is created per
event.  Status codes say why the loop returned to its driver; ``S_*`` index the int64 scalar
array of the run's state.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from federation.models.limits import HEAP_SEQ_BITS
from federation.models.limits import TIME_LIMIT_PS as _TIME_LIMIT_PS

# event types
EV_ARRIVE = 0  # a = packet, b = input port (tail arrived)
EV_READY = 1  # a = input port, b = vc (head packet finished its router delay)
EV_FREE = 2  # a = output port (serialization done)
EV_CREDIT = 3  # a = output port, b = vc, c = bytes
EV_NIC = 4  # a = node (a packet becomes available at the NIC)
EV_OP = 5  # a = rank-program operation, b = OP_* (what happens to it)

# what an EV_OP event does to its operation (see federation.engine.programs)
OP_BEGIN = 0  # its dependencies are met (operations without any: at time 0)
OP_FINISH = 1  # it finishes
OP_HAND = 2  # a send's message reaches its NIC (after the send overhead)

# status codes
ST_DONE = 0
ST_DEADLOCK = 1
ST_BUDGET = 2
ST_HEAP_FULL = 3
ST_BAD_VC = 4
ST_TIME_LIMIT = 5
ST_UNTIL = 6  # the next event is at or after ``until``: every earlier event is done
ST_NO_ROUTE = 7  # the routing gave no port (-1) for packet S_BADPKT at router S_BAD_ROUTER
ST_BAD_PORT = 8  # the routing gave a port S_BAD_A that is not router S_BAD_ROUTER's
ST_HOP_LIMIT = 9  # packet S_BADPKT made more hops than any route needs: a routing loop
ST_PROGRAMS_DONE = 10  # every operation of every rank program has finished: the run ends
ST_PROGRAM_STUCK = 11  # nothing is left to happen, yet some operations never finished
ST_POOL_FULL = 12  # the packet row pool is nearly empty: the driver grows it
ST_RECORDS_FULL = 13  # the delivery records buffer is full: the driver drains it

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
S_RNG = 12  # the run's random stream (xorshift64* state), for routings and arbiters
S_OPS_DONE = 13  # rank-program operations finished
S_QUEUED = 14  # rank-program packets handed to their NICs so far
S_STACK = 15  # operations put on the ready queue so far (programs.settle)
S_READY_HEAD = 16  # operations taken off it so far
S_FREE = 17  # free rows in the packet pool (Prog.free)
S_KICK = 18  # NICs given a flow during the current event (Prog.kick), to try after it
S_FIN = 19  # operations that finished during the current event (Prog.fin), to settle
S_LOADED = 20  # open-loop packets the driver has loaded into rows so far
S_REC = 21  # delivery records waiting in Sim.rec for the driver
N_SCALARS = 22

INF_CREDIT = np.int64(1) << 60


# Event queue: a 4-ary min-heap of int64 keys ``time << SEQ_BITS | seq`` (seq = scheduling order
# modulo 2**SEQ_BITS), so one integer comparison orders events by time, then by scheduling order;
# the payload (a*8 + type, b + c<<32) moves with the key.  Keys are unique, so any correct heap
# pops events in the same order: four children per node halve the depth of a binary heap (the
# pop's chain of dependent loads was about 30 % of a rank-program run's time), and popping
# sinks the hole to a leaf choosing the smallest child without a data-dependent branch, then
# lifts the last element into it (Floyd's bottom-up variant).
SEQ_BITS = HEAP_SEQ_BITS
SEQ_MASK = (1 << SEQ_BITS) - 1
TIME_LIMIT_PS = _TIME_LIMIT_PS  # 8.8 simulated seconds (see federation.models.limits)
KEY_MAX = np.int64(0x7FFFFFFFFFFFFFFF)


@njit(cache=True, inline="always")
def _lift(hk, ha, hb, i, key, va, vb):
    """Place an event at free slot ``i``, moving it up past later parents."""
    while i > 0:
        parent = (i - 1) >> 2
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
    hk[n] = KEY_MAX  # sentinel: slots past the last event never win
    # sink the hole to a leaf along the smallest children (slots n .. n + 3 are KEY_MAX: the
    # loop keeps 8 free slots)
    i = 0
    c = 1
    while c < n:
        k0 = hk[c]
        k1 = hk[c + 1]
        k2 = hk[c + 2]
        k3 = hk[c + 3]
        m01 = c + (k1 < k0)
        m23 = c + 2 + (k3 < k2)
        m = m23 if min(k2, k3) < min(k0, k1) else m01
        hk[i] = hk[m]
        ha[i] = ha[m]
        hb[i] = hb[m]
        i = m
        c = 4 * i + 1
    _lift(hk, ha, hb, i, lk, la, lb)  # the former last element, from the hole


