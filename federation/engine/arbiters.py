"""Built-in output-port arbiters: which waiting packet an idle output port sends next.

An arbiter is a compiled function ``arbitrate(sim, state, o) -> (qi, prev)``: among the
requests waiting for output ``o`` (a list of input queues ``qi = input_port * V + vc`` from
``sim.req_head[o]`` through ``sim.req_next``, oldest first) it returns one whose head packet
has credit downstream (``credit_ok``), and the request before it in the list (``-1`` if it
is the first), or ``(-1, -1)`` when none can go.  ``state`` is the arbiter's own tuple of
arrays (built once per run by its Python side), e.g. round-robin pointers.  Every arbiter must
skip requests without credit, so that one blocked VC cannot stall the others.
"""

from __future__ import annotations

import numpy as np

from federation.engine.api import P_CLASS, P_OUTVC, P_SIZE
from federation.engine.jit import part


@part
def credit_ok(sim, o, qi):
    """True if the head packet of input queue ``qi`` has credit to leave on ``o`` now."""
    pk = sim.q_head[qi]
    return sim.credits[o * sim.n_vcs + sim.ps[pk, P_OUTVC]] >= sim.ps[pk, P_SIZE]


@part
def oldest_first(sim, state, o):
    """The oldest request with credit (requests queue in the order their heads were routed)."""
    qi = sim.req_head[o]
    prev = -1
    while qi >= 0:
        if credit_ok(sim, o, qi):
            return qi, prev
        prev = qi
        qi = sim.req_next[qi]
    return -1, -1


@part
def round_robin(sim, state, o):
    """Round-robin over input VCs: the request with credit whose input queue id comes next
    after the one this port served last (``state[0][o]``), wrapping around."""
    last = state[0]
    n = sim.q_head.shape[0]
    best, best_prev, best_d = -1, -1, n + 1
    qi = sim.req_head[o]
    prev = -1
    while qi >= 0:
        if credit_ok(sim, o, qi):
            d = (qi - last[o] - 1) % n
            if d < best_d:
                best, best_prev, best_d = qi, prev, d
        prev = qi
        qi = sim.req_next[qi]
    if best >= 0:
        last[o] = best
    return best, best_prev


@part
def strict_priority(sim, state, o):
    """The request with credit of the lowest traffic class number (class 0 first), oldest
    first within a class."""
    best, best_prev, best_c = -1, -1, np.int64(1) << 40
    qi = sim.req_head[o]
    prev = -1
    while qi >= 0:
        if credit_ok(sim, o, qi):
            c = np.int64(sim.ps[sim.q_head[qi], P_CLASS])
            if c < best_c:
                best, best_prev, best_c = qi, prev, c
        prev = qi
        qi = sim.req_next[qi]
    return best, best_prev
