"""Traffic classes (``machine.qos``) on SST merlin: what merlin has, and why this adapter maps
none of it.

What merlin offers (sst-elements, ``merlin/interfaces``): hr_router's ports arbitrate their
output VCs with ``merlin.arb.output.basic`` (round-robin over every VC, no priority between
virtual networks) or ``merlin.arb.output.qos.multi``, whose ``qos_settings`` give each VN a
percentage of a *fixed* window of 100 flit cycles (a static window, not settable); VNs with
budget left are served in LRU order, and when none can send, any VN may (work-conserving, LRU
again).  A VN's traffic comes from its endpoint: ``merlin.offered_load`` sends everything on
VN 0 (one VN, hard-coded), firefly's NIC chooses VNs by protocol (get responses, shmem), and
``merlin.linkcontrol``'s ``vn_remap`` moves a whole endpoint's traffic to another VN.

Our policies against that:

* ``strict_priority``: merlin can arbitrate it between *two* VNs (``qos_settings: [100, 0]``:
  the first VN owns the whole window, the second sends only in the work-conserving pass), not
  between three or more (the second pass is LRU among them all).  But the traffic cannot be
  put on its VN: the only way is per endpoint (``vn_remap``), and the adapter runs one job per
  point, whose endpoints all send one class; classes by operation kind or by workload field
  have no carrier at all.
* ``bandwidth_caps``: merlin's window is fixed at 100 flit cycles, its budgets are whole
  percents, and VNs within their budget are served LRU, where ours serve active classes in
  priority order: not the same mechanism.
* ``weighted_round_robin``: merlin's per-window budgets served LRU interleave classes
  differently from packet-by-packet weighted round-robin (same long-run shares when all
  classes are saturated, different latencies).

So every policy but ``none`` is refused before anything runs, naming ``qos.kind`` and the
reason; no QoS point is in the SST cross-validation suite (docs/sst.md, "QoS").
"""

from __future__ import annotations

from typing import Any

from .topologies import Refusal

#: why each policy kind has no faithful merlin twin here (the message's second half)
WHY = {
    "strict_priority": (
        "merlin's hr_router can serve two VNs by strict priority "
        "(merlin.arb.output.qos.multi with qos_settings [100, 0]), but this adapter cannot put "
        "a class's packets on its VN: merlin.offered_load sends on VN 0 only, firefly picks VNs "
        "by protocol, and a linkcontrol's vn_remap moves a whole endpoint, while an SST point "
        "runs one job"),
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


def check_qos(point: Any) -> None:
    """Refuse ``machine.qos`` unless it is ``none`` (see the module's docstring), naming
    ``qos.kind``, the policy, its class count and why merlin cannot run it faithfully."""
    qos = point.machine.qos
    if qos.name == "none":
        return
    why = WHY.get(qos.name, "merlin's output arbiters (merlin.arb.output.basic, "
                  "merlin.arb.output.qos.multi) have no twin of this policy")
    raise Refusal("qos.kind", f"QoS policy {qos.name!r} ({class_count(qos)} classes) is not "
                  f"mapped to merlin: {why}; use qos: none with engine sst (docs/sst.md, QoS)")
