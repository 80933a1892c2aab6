"""Messages the native engine ends a run with: what went wrong, named in the user's terms
(ports as ``router R port L``, operations as the rank program's, packets with their nodes)."""

from __future__ import annotations

from typing import Any

import numpy as np

from federation.engine import api as A
from federation.engine import events as E
from federation.engine.program_arrays import ProgramTraffic
from federation.engine.state import Prog
from federation.models.units import PS_PER_S, format_time
from federation.network import Network
from federation.plugin.components import RouteTables

#: the clock range as messages state it
CLOCK_RANGE = f"the engine's clock range [0, {format_time(E.TIME_LIMIT_PS / PS_PER_S)}) (2^43 ps)"


_EVENT_KINDS = {E.EV_ARRIVE: "ARRIVE", E.EV_READY: "READY", E.EV_FREE: "FREE",
                E.EV_CREDIT: "CREDIT", E.EV_NIC: "NIC", E.EV_OP: "OP"}
#: what an ``EV_OP`` event does to its operation (events.OP_*)
_OP_WHAT = {E.OP_BEGIN: "beginning", E.OP_FINISH: "finishing",
            E.OP_HAND: "handing its message to the NIC"}


def _port_name(net: Network, p: int) -> str:
    """``router R port L`` for a router port, ``node N's NIC`` for a NIC port."""
    pt = net.ports
    r = int(pt.port_router[p])
    if r < 0:
        return f"node {int(pt.port_node[p])}'s NIC"
    return f"router {r} port {int(p - pt.router_port_start[r])}"


def _event_meaning(net: Network, ev: int, a: int, b: int,
                   programs: ProgramTraffic | None = None) -> str:
    """What an event of kind ``ev`` with payload ``a, b`` is about (see events.EV_*)."""
    if ev == E.EV_ARRIVE:
        node = int(net.ports.port_node[b]) if net.ports.port_router[b] < 0 else -1
        return f"packet {a} reaching " + (f"node {node}" if node >= 0 else _port_name(net, b))
    if ev == E.EV_READY:
        return f"the head packet of {_port_name(net, a)} VC {b} routed"
    if ev == E.EV_FREE:
        return f"{_port_name(net, a)} free again"
    if ev == E.EV_CREDIT:
        return f"a credit reaching {_port_name(net, a)} VC {b}"
    if ev == E.EV_NIC:
        return f"node {a}'s next packet leaving its NIC"
    if ev == E.EV_OP:
        name = programs.programs.describe(a) if programs is not None else f"operation {a}"
        return f"{name} {_OP_WHAT.get(b, str(b))}"
    return f"payload {a}, {b}"


def time_limit_report(net: Network, sc: np.ndarray,
                       programs: ProgramTraffic | None = None) -> str:
    """Which event the loop refused to schedule, when, and the limit."""
    t = int(sc[E.S_BAD_TIME])
    now = format_time(int(sc[E.S_NOW]) / PS_PER_S)
    if t == 0:  # not expected: every start time is checked before the run
        return f"the run left {CLOCK_RANGE} at t={now}"
    ev, a, b = (int(sc[i]) for i in (E.S_BAD_EV, E.S_BAD_A, E.S_BAD_B))
    kind = _EVENT_KINDS.get(ev, str(ev))
    article = "an" if kind[0] in "AEIOU" else "a"
    return (f"the engine refused to schedule {article} {kind} event "
            f"({_event_meaning(net, ev, a, b, programs)}) at {format_time(t / PS_PER_S)}, while at "
            f"t={now}: outside {CLOCK_RANGE}; shorten the run, the link latencies or the "
            "router delay")


def routing_report(net: Network, job: Any, sim: Any, status: int, owner: str) -> str:
    """What was wrong with the routing's answer for the packet the loop stopped at."""
    sc, ps = sim.sc, sim.ps
    p, r = int(sc[E.S_BADPKT]), int(sc[E.S_BAD_ROUTER])
    o, vc = int(sc[E.S_BAD_A]), int(sc[E.S_BAD_B])
    who = f"{packet_name(sim, p)} at router {r}"
    if status == E.ST_HOP_LIMIT:
        return (f"{owner}: {who} has made {int(sim.max_hops)} router-to-router hops without "
                "arriving: the routing sends packets in circles")
    if status == E.ST_NO_ROUTE:
        if o != -1:  # the loop stops on any negative port: only -1 means "no route"
            return (f"{owner}: {who} was given port {o}, which is not a port (ports are "
                    f"0..{net.ports.n_ports - 1}; -1 means no route)")
        if job.program is None:  # the tables' own -1: name the routing that handed them over
            return (f"{routing_owner(owner)}: "
                    f"{_no_route_report(net, job.tables, ps, p, r, packet_name(sim, p))}")
        return f"{owner}: {who} got no output port (-1)"
    if status == E.ST_BAD_VC:
        C = max(1, int(job.n_classes))
        if C > 1:  # the routing answers in its packet's class's VCs (engine.qos)
            return (f"{owner}: {who} was given VC {vc}, outside 0..{job.n_vcs // C - 1} "
                    f"(router.vcs = {job.n_vcs}: {job.n_vcs // C} for each of {C} traffic "
                    "classes); the routing's declared VC count (vcs_required) is wrong")
        return (f"{owner}: {who} was given VC {vc}, outside 0..{job.n_vcs - 1} (router.vcs = "
                f"{job.n_vcs}); the routing's declared VC count (vcs_required) is wrong")
    first, end = (int(x) for x in net.ports.router_port_start[r:r + 2])
    if first <= o < end:
        return (f"{owner}: {who} was given port {o}, which leads to a node that is not its "
                "destination")
    return (f"{owner}: {who} was given port {o}, which is not one of router {r}'s ports "
            f"({first}..{end - 1})")


def packet_name(sim: Any, row: int) -> str:
    """``packet K (node S -> D)`` for the packet in ``row`` (K: its number among the run's
    open-loop packets; a rank program's packet is named by its row)."""
    src, dst = int(sim.ps[row, A.P_SRC]), int(sim.ps[row, A.P_DST])
    k = int(sim.pm[row, A.M_ID])
    name = f"packet {k}" if k >= 0 else f"a rank-program packet (row {row})"
    return f"{name} (node {src} -> {dst})"


def _no_route_report(net: Network, t: RouteTables, ps: np.ndarray, p: int, r: int,
                     who: str) -> str:
    """Which -1 entry of the tables packet ``p`` needed at router ``r`` (the table routing's
    choice of table, replayed from the packet's state)."""
    dr = int(net.node_router[int(ps[p, A.P_DST])])
    via, phase = int(ps[p, A.P_VIA]), int(ps[p, A.P_PHASE])
    if via >= 0 and phase == 0:
        entry = f"gnext[{r}, {via}] (towards intermediate group {via})"
    elif t.router_group[r] != t.router_group[dr]:
        entry = f"gnext[{r}, {int(t.router_group[dr])}] (towards router {dr}'s group)"
    else:
        entry = f"lnext[{r}, {int(t.router_local[dr])}] (towards router {dr})"
    return (f"{who} has no route at router {r}: the route table entry {entry} is -1; the "
            "routing's tables are incomplete")


def stuck_report(job: Any, pg: Prog, now: int) -> str:
    """Why rank programs cannot finish: the operations that started and never finished (a
    receive nothing sent to, a rendezvous whose receive was never posted), else the first
    one that never began (its dependencies never finished)."""
    progs = job.programs
    assert progs is not None
    left = np.nonzero(pg.op_finish[:int(pg.n_ops)] < 0)[0]
    ranks = np.unique(pg.op_rank[left])
    head = (f"the rank programs cannot finish: at t={format_time(now / PS_PER_S)} nothing is "
            f"left to happen, and {left.size} operations on {ranks.size} ranks never finished")
    started = left[pg.op_start[left] >= 0]
    why = []
    for op in started[:3].tolist():
        kind = int(pg.op_kind[op])
        if kind == 1:  # a receive
            reason = ("no send on its channel started" if pg.op_msg[op] < 0 else
                      "its message never arrived")
        else:
            m = int(pg.op_msg[op])
            reason = ("its rendezvous request was never answered: the receive was never posted"
                      if pg.msg_rdv[m] and pg.msg_recv[m] < 0 else "its message never left")
        why.append(f"{_op_name(job, op)} started at "
                   f"{format_time(int(pg.op_start[op]) / PS_PER_S)}: {reason}")
    if not why:
        why.append(f"{_op_name(job, int(left[0]))} never began: an operation it depends on "
                   "never finished")
    return head + "; " + "; ".join(why)


def _op_name(job: Any, op: int) -> str:
    assert job.programs is not None
    return job.programs.programs.describe(op)


def deadlock_report(net: Network, V: int, q_head: np.ndarray, req_head: np.ndarray,
                     sc: np.ndarray, total: int, sim: Any = None, owner: str = "",
                     waiting: np.ndarray | None = None) -> str:
    """Which ports hold the undelivered packets; with ``sim``, also the output ports whose
    arbiter answered -1 although a request had credit (a port waiting for nothing).
    ``waiting``: the output ports waiting for credit when the router model does not keep the
    default model's request lists (``booksim_iq``: ports with an output VC held)."""
    withheld = withheld_ports(sim) if sim is not None else []
    text = _deadlock_text(net, V, q_head, req_head, sc, total, withheld, waiting)
    if withheld:
        return (f"{arbiter_owner(owner)} sent nothing from {len(withheld)} output ports "
                f"although a request there had credit ({_port_name(net, withheld[0])} "
                "first): its answer -1 lets a port wait, but only a credit return or a new "
                f"request wakes it; {text}")
    return text


def withheld_ports(sim: Any) -> list[int]:
    """Output ports with a request whose packet has credit, counting the returns still
    pending (at a deadlock every return is due): what a lawful arbiter would have sent."""
    V = int(sim.n_vcs)
    out = []
    for o in np.nonzero(sim.req_head >= 0)[0].tolist():
        free = sim.credits[o * V:(o + 1) * V].copy()
        h = int(sim.cr_head[o])
        while h >= 0:
            free[int(sim.cr[h, 1])] += sim.cr[h, 2]
            h = int(sim.cr[h, 3])
        for q in _requests(sim, o):
            pk = int(sim.q_head[q])
            if free[int(sim.ps[pk, A.P_OUTVC])] >= int(sim.ps[pk, A.P_SIZE]):
                out.append(o)
                break
    return out


def _deadlock_text(net: Network, V: int, q_head: np.ndarray, req_head: np.ndarray,
                   sc: np.ndarray, total: int, withheld: list[int],
                   waiting: np.ndarray | None = None) -> str:
    """The stuck ports: inputs holding packets, outputs waiting for credit (``withheld``:
    outputs holding a request with credit, named as such)."""
    pt = net.ports
    stuck_in = np.nonzero((q_head.reshape(-1, V) >= 0).any(axis=1))[0]
    held = set(withheld)
    out = np.nonzero(req_head >= 0)[0] if waiting is None else waiting
    stuck_out = np.array([p for p in out.tolist() if p not in held], dtype=np.int64)

    def name(p: int, what: str) -> str:
        r = int(pt.port_router[p])
        local = int(p - pt.router_port_start[r])
        return f"router {r} port {local} ({what}, {net.link_classes[pt.port_class[p]]})"

    names = [name(p, "input") for p in stuck_in[:8]]
    names += [name(p, "output holding a request with credit") for p in withheld[:8]]
    names += [name(p, "output waiting for credit") for p in stuck_out[:8]]
    outs = f"{stuck_out.size} output ports wait for credits"
    if withheld:
        outs += f", {len(withheld)} hold a request with credit"
    return (
        f"deadlock at t={int(sc[E.S_NOW])}ps: {total - int(sc[E.S_DELIVERED])} of {total} packets "
        f"undelivered; {stuck_in.size} input ports hold packets, {outs}. Stuck ports: "
        + "; ".join(names)
    )


def routing_owner(owner: str) -> str:
    """``routing 'x' (plugin p)`` out of the components' owner text (the arbiter has no say
    in a table's missing entry); ``the routing`` when the owner is not known."""
    return owner.partition(" with ")[0] or "the routing"


def arbiter_owner(owner: str) -> str:
    """``arbiter 'y' (plugin q)`` out of the components' owner text (``routing 'x' (plugin p)
    with arbiter 'y' (plugin q)``, :func:`federation.pipeline.build.component_owner`)."""
    _, sep, arb = owner.partition(" with ")
    return arb if sep else (owner or "the arbiter")


def arbiter_report(net: Network, sim: Any, owner: str) -> str:
    """What was wrong with the arbiter's answer the loop refused (``ST_BAD_ARBITER``: the
    state is as the arbiter left it; :mod:`federation.engine.arbiter_check` checks in the same
    order)."""
    sc = sim.sc
    o, qi, prev = int(sc[E.S_BADPKT]), int(sc[E.S_BAD_A]), int(sc[E.S_BAD_B])
    V = int(sim.n_vcs)
    n = int(sim.req_next.shape[0])
    head = (f"{arbiter_owner(owner)} answered (queue {qi}, prev {prev}) for output "
            f"{_port_name(net, o)} at t={int(sc[E.S_NOW])}ps: ")

    def queue(q: int) -> str:
        return f"queue {q} ({_port_name(net, q // V)} VC {q % V})"

    if not -1 <= qi < n:
        return head + (f"queue {qi} does not exist (queue ids are input port x {V} + VC, "
                       f"0..{n - 1}; -1: send nothing)")
    waiting = _requests(sim, o)
    if qi not in waiting:
        return head + (f"{queue(qi)} is not waiting for this port (its requests: "
                       f"{_queues(waiting, V)})")
    k = waiting.index(qi)
    before = waiting[k - 1] if k > 0 else -1
    if prev != before:
        return head + (f"prev must be the request before {queue(qi)} in the port's list, "
                       f"{before}{' (it is the first)' if before < 0 else ''}, not {prev}")
    pk = int(sim.q_head[qi])
    ovc, size = int(sim.ps[pk, A.P_OUTVC]), int(sim.ps[pk, A.P_SIZE])
    free = int(sim.credits[o * V + ovc])
    return head + (f"the head packet of {queue(qi)}, {packet_name(sim, pk)}, needs {size} B "
                   f"of credit on VC {ovc} and the port has {free} B: an arbiter must pick "
                   "only requests with credit (federation.engine.arbiters.credit_ok)")


def _requests(sim: Any, o: int) -> list[int]:
    """Output ``o``'s request list, in order (at most its request count)."""
    out, q = [], int(sim.req_head[o])
    while q >= 0 and len(out) < int(sim.req_count[o]):
        out.append(q)
        q = int(sim.req_next[q])
    return out


def _queues(qs: list[int], V: int) -> str:
    """The first few queue ids of a request list (``none`` when empty)."""
    if not qs:
        return "none"
    return ", ".join(str(q) for q in qs[:8]) + (", ..." if len(qs) > 8 else "")
