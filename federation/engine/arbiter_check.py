"""The check of an arbiter's answer, made by the loop right after ``ARBITRATE``.

An arbiter is plugin code compiled into the loop without bounds checks, and the loop acts on
its answer ``(qi, prev)`` at once: :func:`~federation.engine.router.take_request` unlinks
``qi`` after ``prev`` from the port's request list and pops ``qi``'s head packet, and
:func:`~federation.engine.router.transmit` takes its bytes of credit.  A wrong answer does not
fail there; it corrupts the run: a queue id past the arrays writes outside them (a crash), a
wrong ``prev`` cuts requests out of the list (they are never served: reported later as a
deadlock, blaming no one), a packet sent without credit over-fills the buffer downstream
(throughput several times too high, silently).  So the loop checks every answer first and
stops the run with ``ST_BAD_ARBITER``; :func:`federation.engine.reports.arbiter_report` then
says what was wrong, naming the arbiter and its plugin.

Cost: O(1) when ``prev`` is -1 (the answer is the list's head, as oldest-first's usually is);
otherwise a walk of the list up to ``prev``, which the arbiter itself walked just before (its
lines are in cache).  The check compiles out only with the engine's explicit switch
``engine: {kind: native, check_arbiter: false}`` (docs/plugins.md; the measured cost is in
docs/architecture.md).
"""

from __future__ import annotations

import numpy as np

from federation.engine.api import P_OUTVC, P_SIZE
from federation.engine.events import S_BAD_A, S_BAD_B, S_BADPKT, ST_BAD_ARBITER
from federation.engine.jit import part


@part
def requests_reach(sim, o, qi):
    """True if request ``qi`` is in output ``o``'s list (a walk bounded by the port's request
    count, so that even a list broken by an unchecked arbiter cannot loop forever)."""
    r = sim.req_head[o]
    for _ in range(sim.req_count[o]):
        if r < 0:
            return False
        if r == qi:
            return True
        r = sim.req_next[r]
    return False


@part
def arbiter_answer_ok(sim, o, qi, prev):
    """0 if ``(qi, prev)`` is a lawful answer for idle output port ``o``, else
    ``ST_BAD_ARBITER`` with the answer kept for the report (``S_BADPKT`` = the port,
    ``S_BAD_A`` = ``qi``, ``S_BAD_B`` = ``prev``).

    Lawful: ``qi == -1`` (the port sends nothing now; ``prev`` is then ignored), or ``qi`` a
    request waiting for ``o`` whose predecessor in ``o``'s list is ``prev`` (-1: ``qi`` is
    the list's head) and whose head packet has credit for its whole size downstream (the
    credits as settled before the arbiter ran)."""
    n = sim.req_next.shape[0]
    ok = True
    if qi >= n or qi < -1:
        ok = False
    elif qi >= 0:
        if prev == -1:
            ok = sim.req_head[o] == qi
        else:  # the successor link first (O(1)), then that prev is o's: qi then is too
            ok = (0 <= prev < n and sim.req_next[prev] == qi
                  and requests_reach(sim, o, prev))
        if ok:
            pk = sim.q_head[qi]
            ok = sim.credits[o * sim.n_vcs + sim.ps[pk, P_OUTVC]] >= sim.ps[pk, P_SIZE]
    if ok:
        return np.int64(0)
    sim.sc[S_BADPKT] = o
    sim.sc[S_BAD_A] = qi
    sim.sc[S_BAD_B] = prev
    return ST_BAD_ARBITER
