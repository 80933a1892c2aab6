"""The event queue of the native engine and the codes the loop shares with its driver.

Events are five integers (time, kind, a, b, c), queued by (time in integer picoseconds,
scheduling order) in :mod:`federation.engine.queue`, so runs are deterministic and no Python
object is created per event.  Status codes say why the loop returned to its driver; ``S_*``
index the int64 scalar array of the run's state.
"""

from __future__ import annotations

import numpy as np

from federation.engine.jit import part
from federation.engine.queue import push_key
from federation.models.limits import HEAP_SEQ_BITS
from federation.models.limits import TIME_LIMIT_PS as _TIME_LIMIT_PS

# event types
EV_ARRIVE = 0  # a = packet, b = input port (tail arrived)
EV_READY = 1  # a = input port, b = vc (head packet finished its router delay)
EV_FREE = 2  # a = output port (serialization done)
EV_CREDIT = 3  # a = output port, b = vc, c = bytes
EV_NIC = 4  # a = node (a packet becomes available at the NIC)
EV_OP = 5  # a = rank-program operation, b = OP_* (what happens to it)
EV_ROUTER = 6  # a = router: its cycle (router.model booksim_iq, see federation.engine.iq)

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
ST_BAD_ARBITER = 14  # the arbiter's answer S_BAD_A (queue), S_BAD_B (prev) at output port
# S_BADPKT was refused (federation.engine.arbiter_check; reports.arbiter_report says why)

# indices into the int64 scalar state array
S_NOW = 0
S_SEQ = 1
S_SPARE = 2  # the VC base of the class being routed (api.S_VCBASE)
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
S_WAKES = 22  # NIC wake-ups the driver listed in Sim.wakes for the loop (feed.wake_nics)
S_KEY = 23  # key of the event being handled (credit returns due by it are applied)
S_CRFREE = 24  # free rows of the credit returns' pool (Sim.cr_free)
S_IQ_BUSY = 25  # booksim_iq: the last cycle something under way lands (iq.landing, iq.quiet)
N_SCALARS = 26

INF_CREDIT = np.int64(1) << 60


SEQ_BITS = HEAP_SEQ_BITS
SEQ_MASK = (1 << SEQ_BITS) - 1
TIME_LIMIT_PS = _TIME_LIMIT_PS  # 8.8 simulated seconds (see federation.models.limits)


@part
def push(sim, time, ev, a, b, c):
    """Schedule an event (the loop keeps :func:`~federation.engine.queue.room` for it);
    returns its key.  Its payload is two words, ``a * 8 + ev`` and ``b + (c << 32)``, which
    the loop unpacks as it pops the event (``run_loop``).

    The time is checked here, where the key is made, because ``time << SEQ_BITS`` of a time
    past the clock range wraps to an earlier (even a plausible) time that no later check can
    tell from a real one.  Every operand the loop adds up is below ``TIME_LIMIT_PS`` (the
    driver checks the figures it passes), so ``time`` itself cannot have wrapped.  A refused
    event is recorded (the first one) and keyed at time -1 instead, so that it is the next
    event popped and the loop stops there with ``ST_TIME_LIMIT``.  The check is one
    well-predicted branch per push.
    """
    sc = sim.sc
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
    push_key(sim.q, key, a * 8 + ev, b + (c << 32))
    return key
