"""Traffic classes (``machine.qos``) on SST merlin: strict priority between two classes of
open-loop jobs is mapped; every other policy is refused, naming ``qos.kind`` and why.

What merlin offers (sst-elements, ``merlin/interfaces``): hr_router's ports arbitrate their
output VCs with ``merlin.arb.output.basic`` (round-robin over every VC, no priority between
virtual networks) or ``merlin.arb.output.qos.multi``, whose ``qos_settings`` give each VN a
percentage of a *fixed* window of 100 flit cycles (a static window, not settable); VNs with
budget left are served in LRU order, and when none can send, any VN may (work-conserving, LRU
again).  A VN's traffic comes from its endpoint: ``merlin.offered_load`` sends on its one VN,
which ``merlin.linkcontrol``'s ``vn_remap`` carries on any VN of the network; firefly's NIC
chooses VNs by protocol (get responses, shmem).

Our policies against that:

* ``strict_priority`` with two classes, open loop: **mapped**.  ``qos_settings: [100, 0]``
  gives the first VN the whole window, which it cannot spend (a port sends at most one flit a
  flit cycle, and a VN is stopped only once its budget is spent), so it sends whenever it has
  a credited packet; the second VN sends only in the work-conserving pass, i.e. when the
  first cannot.  Each job's endpoints send on its class's VN (:mod:`.jobs`), ``num_vns`` is
  2, and each VN has the routing's VCs (our ``router.vcs`` = 2 x the routing's need).  What
  differs: within a class merlin round-robins the VN's output VCs where ours serves the oldest
  packet, and merlin arbitrates its output buffers (after the crossbar) where ours arbitrates
  the input queues.  With three or more classes the second pass is LRU among all the lower
  VNs, not priority: refused.  Classes by operation kind have no carrier (refused by
  :func:`.jobs.job_class`), and neither do rank programs (ember's NIC picks VNs by protocol).
* ``bandwidth_caps``: merlin's window is fixed at 100 flit cycles, its budgets are whole
  percents, and VNs within their budget are served LRU, where ours serve active classes in
  priority order: not the same mechanism.
* ``weighted_round_robin``: merlin's per-window budgets served LRU interleave classes
  differently from packet-by-packet weighted round-robin (same long-run shares when all
  classes are saturated, different latencies).
"""

from __future__ import annotations

from typing import Any

from .topologies import Refusal

#: why each policy kind has no faithful merlin twin here (the message's second half)
WHY = {
    "strict_priority": (
        "merlin's hr_router serves two VNs by strict priority (merlin.arb.output.qos.multi "
        "with qos_settings [100, 0]), not three or more: its second, work-conserving pass "
        "serves the lower VNs least-recently-used first"),
    "bandwidth_caps": (
        "merlin's only windowed budget (merlin.arb.output.qos.multi) has a fixed window of 100 "
        "flit cycles and serves the VNs within budget least-recently-used first, not by "
        "priority: not the caps' mechanism"),
    "weighted_round_robin": (
        "merlin.arb.output.qos.multi gives each VN a share of a 100-flit-cycle window served "
        "least-recently-used first: the same long-run shares as weighted round-robin only "
        "when every class is saturated, not its packet-by-packet order"),
}


def class_count(qos: Any) -> int:
    """The policy's traffic classes (its ``classes`` parameter, else ``n_classes()``)."""
    classes = getattr(getattr(qos, "params", None), "classes", None)
    if classes is not None:
        return len(classes)
    n = getattr(qos, "n_classes", None)
    return int(n()) if callable(n) else 1


#: why rank programs (ember on firefly) take no policy
CLOSED_LOOP = ("firefly's NIC chooses a packet's VN by protocol (get responses, shmem), not by "
               "job or operation, so no class reaches its VN")

#: merlin's output arbitration that serves the first of two VNs by strict priority
STRICT_TWO = {"num_vns": 2, "portcontrol.output_arb": "merlin.arb.output.qos.multi",
              "portcontrol.arbitration.qos_settings": [100, 0]}


def qos_router_params(point: Any, closed_loop: bool = False) -> dict[str, Any]:
    """The hr_router parameters of the point's policy: none for ``none`` (one VN), merlin's
    two-VN strict priority for ``strict_priority`` with two classes, open loop; a Refusal
    naming ``qos.kind``, the policy, its class count and why merlin cannot run it faithfully
    for the rest (see the module's docstring)."""
    qos = point.machine.qos
    if qos.name == "none":
        return {}
    n = class_count(qos)
    if qos.name == "strict_priority" and n == 2 and not closed_loop:
        return dict(STRICT_TWO)
    if qos.name == "strict_priority" and n == 1:
        return {}
    if closed_loop:
        why = CLOSED_LOOP
    else:
        why = WHY.get(qos.name, "merlin's output arbiters (merlin.arb.output.basic, "
                      "merlin.arb.output.qos.multi) have no twin of this policy")
    raise Refusal("qos.kind", f"QoS policy {qos.name!r} ({n} classes) is not "
                  f"mapped to merlin: {why}; use qos: none, or strict_priority with two "
                  "classes on open-loop jobs, with engine sst (docs/sst.md, QoS)")
