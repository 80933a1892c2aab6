"""Credit returns of the default router model: not events, but a list per output port.

A credit returning to an output port is not an event: it waits in the port's list of returns
(by key, the one its event would have had) and is applied when the port's credits are read
(:func:`settle_credits`: arbitration, a routing's accessors, a NIC) at a later key.  Only a port
whose requests wait for credit gets an event, at its first pending return's key
(:func:`credit_wait`), and so does one that becomes idle, or a NIC that becomes due, at the
very time a credit returns that was scheduled before its own wake-up
(:func:`returns_then`): each does what that return's own event did, apply it and try the
port, at its place.  The returns still take their place in the scheduling order, so every
other event keeps its key; a credit event was four in ten events.  The results are those of
credit events except where a credit event tried a NIC nothing made wait: a rank program's next
packet is made when its NIC is next tried, so routings that draw from the run's stream as a
packet is made (``par``, Valiant, UGAL, random injection VCs) give other, equally valid samples
(docs/architecture.md, "Credit return").
"""

from __future__ import annotations

from federation.engine.events import (
    EV_CREDIT,
    S_CRFREE,
    S_KEY,
    S_SEQ,
    SEQ_BITS,
    SEQ_MASK,
    TIME_LIMIT_PS,
    push,
)
from federation.engine.jit import part
from federation.engine.queue import push_key


@part
def credit_return(sim, port, vc, size, time):
    """``size`` bytes of credit for ``port``'s ``vc`` reach it at ``time`` and are usable
    ``router.credit_delay`` later (0 by default: at once)."""
    time += sim.credit_delay
    sc = sim.sc
    if time < 0 or time >= TIME_LIMIT_PS:
        push(sim, time, EV_CREDIT, port, vc, size)  # the clock guard records it
        return
    seq = sc[S_SEQ]
    sc[S_SEQ] = seq + 1
    key = (time << SEQ_BITS) | (seq & SEQ_MASK)
    cr = sim.cr
    sc[S_CRFREE] -= 1
    n = sim.cr_free[sc[S_CRFREE]]
    cr[n, 0] = key
    cr[n, 1] = vc
    cr[n, 2] = size
    tail = sim.cr_tail[port]
    if tail < 0:
        cr[n, 3] = -1
        sim.cr_head[port] = n
        sim.cr_tail[port] = n
    elif cr[tail, 0] <= key:  # the usual case: later than every return pending
        cr[n, 3] = -1
        cr[tail, 3] = n
        sim.cr_tail[port] = n
    else:  # a faster link downstream: insert by key
        h = sim.cr_head[port]
        if key < cr[h, 0]:
            cr[n, 3] = h
            sim.cr_head[port] = n
        else:
            while cr[cr[h, 3], 0] <= key:
                h = cr[h, 3]
            cr[n, 3] = cr[h, 3]
            cr[h, 3] = n
    if sim.cwait[port]:
        wake_for_credit(sim, port, key)
    elif port < sim.n_router_ports:
        if sim.wake[port] == time and key < sim.wake_key[port]:
            wake_for_credit(sim, port, key)  # due before the port's own wake-up then
    else:
        node = port - sim.n_router_ports
        if sim.nic_wake[node] == time and key < sim.nic_wake_key[node]:
            wake_for_credit(sim, port, key)


@part
def settle_credits(sim, port):
    """Apply the credit returns of ``port`` due by the current event (its key)."""
    h = sim.cr_head[port]
    if h < 0:
        return
    cr = sim.cr
    sc = sim.sc
    k = sc[S_KEY]
    V = sim.n_vcs
    while h >= 0 and cr[h, 0] <= k:
        sim.credits[port * V + cr[h, 1]] += cr[h, 2]
        sim.cr_free[sc[S_CRFREE]] = h
        sc[S_CRFREE] += 1
        h = cr[h, 3]
    sim.cr_head[port] = h
    if h < 0:
        sim.cr_tail[port] = -1


@part
def wake_for_credit(sim, port, key):
    """Make sure the port's credit event is pending at ``key`` (the earliest one counts)."""
    if sim.cwake[port] < 0 or key < sim.cwake[port]:
        sim.cwake[port] = key
        push_key(sim.q, key, port * 8 + EV_CREDIT, 0)


@part
def returns_then(sim, port, t, key):
    """A port (or NIC) with requests waits for its event at ``t`` (``key``): a credit
    returning at ``t`` too, keyed before that event, would have woken it first, so it gets
    its event (the first such return's key)."""
    h = sim.cr_head[port]
    cr = sim.cr
    while h >= 0 and (cr[h, 0] >> SEQ_BITS) < t:
        h = cr[h, 3]
    if h >= 0 and (cr[h, 0] >> SEQ_BITS) == t and cr[h, 0] < key:
        wake_for_credit(sim, port, cr[h, 0])


@part
def credit_wait(sim, port):
    """``port``'s requests (or NIC) wait for credit: an event at its first pending return."""
    sim.cwait[port] = 1
    h = sim.cr_head[port]
    if h >= 0:
        wake_for_credit(sim, port, sim.cr[h, 0])
