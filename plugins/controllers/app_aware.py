"""Routing controller ``app_aware``: Algorithm 1 of De Sensi, Di Girolamo, Hoefler, SC'19
(application-aware routing; digest ``aries-routing-noise.md`` §2, §2.3, §4.2).

Each rank (each NIC: one rank per node, as in the paper) runs this at every send:

1. **Counters, read after the send.**  The NIC's counters (``NC_*``) are read at each call;
   what they moved since the previous call is the previous message's (it was sent then):
   ``L`` = request-to-response latency per request packet, ``s`` = stalled time per request
   flit.  They are the sample of the mode that message was sent with.  Reading at the next
   send rather than just after the previous one sees the same counters plus what that
   message's packets did since; nothing delays a send either way.
2. **Gate.**  A running total of message bytes: while it is below ``gate`` (4 KiB in the
   paper, set experimentally) the message goes with the high-bias mode (small messages are
   latency-bound), and once it reaches ``gate`` the total is reset [reset: inferred] and the
   decision below is made.
3. **selectRouting.**  ``ad`` is the adaptive mode (``adaptive``; for a message that carries
   a mode of its own, such as alltoall's ADAPTIVE_1 from ``collective_modes``, that mode:
   "for alltoall, ADAPTIVE is replaced everywhere by INCREASINGLY MINIMAL BIAS"); ``bs`` the
   high-bias mode (``bias``).  The sample of each mode is its latest (L, s) unless
   ``expire_samples`` samples (of either mode) have been taken since: stale data of an earlier
   phase is dropped, the paper's "after a given number of samples".  A reading in which no
   packet moved is no sample and ages nothing (a burst of sends handed to the NIC in one
   event reads the same counters at every send: counting those readings expired both samples
   half-way through an alltoall's 32-send burst, and sent the rest with ADAPTIVE).  A
   missing sample is estimated from the other: ``L_bs = L_ad * lambda``, ``s_bs = s_ad *
   sigma`` (and the inverse).  With ``p`` packets and ``f`` flits in the message, Eq. 3
   picks ``bs`` when ``((p + 512)/1024) L_bs + f (s_bs + 1) < ((p + 512)/1024) L_ad + f (s_ad
   + 1)``; this is Eq. 4 (``f < (L_ad - L_bs)/(s_bs - s_ad) (p + 512)/1024``) where ``s_bs >
   s_ad``, and stays right for the other sign, which the paper does not discuss.  Ties and no
   sample at all keep ``ad`` (the application starts on ADAPTIVE).  The same comparison is the
   "dual" branch when the current mode is ``bs``.

Parameters: ``gate`` 4 KiB is the paper's.  Not in the paper (assumed here, documented):
``latency_ratio`` lambda 0.9 (high bias has the lower latency, §4.1), ``stall_ratio`` sigma
1.5 (it stalls more, spreading over fewer paths), ``expire_samples`` 16.  ``packet_bytes`` 64
and ``flits_per_packet`` 5 give ``p`` and ``f`` as on Aries (a 64 B PUT request is 5 request
flits).  Counter units: ps for latency and stall time (``federation.engine.api``); the ``+ 1``
cycle per flit cancels out of the comparison.

Limits (refused before the run, naming the field and the limit): ``gate``, ``packet_bytes``,
``flits_per_packet`` and ``expire_samples`` at most :data:`MAX_COUNT` (10**18: the state is
int64; a run makes far fewer readings, so a larger ``expire_samples`` would mean the same,
never expire).  The arithmetic cannot wrap for any accepted value and any message size: the
gate compares ``size`` with what is left of it, ``p`` is a rounded-up quotient without the
sum, and ``f`` and Eq. 3 are computed in floats.  A mode never sampled is told apart by its
age :data:`NEVER` itself, not by comparing that with ``expire_samples`` (which took such a
mode for one sampled with ``L = s = 0`` from ``expire_samples >= 2**40``).

``latency_ratio`` and ``stall_ratio`` take any finite value above 0 (a ratio means what it
says; no bound would be more than a guess).  Eq. 3 is decided as the sign of ``w (L_bs - L_ad)
+ f (s_bs - s_ad)`` (the ``+ 1`` cancelled; a latency difference is no longer lost in the
rounding of a large stall term), never NaN: only an estimate can leave the float range, always
upwards, ``L_bs``/``s_bs`` (lambda, sigma large) making a difference +inf and ``L_ad``/``s_ad``
(small) making one -inf, and only one mode is estimated at a time, so no inf - inf; the stall
term of a 0 B message (``f = 0``) is 0, not 0 x inf.  The comparison of both costs took
``0 x inf`` = NaN, which compares false, for ``ad`` whatever the latencies; a 0 B message is
below any gate (at least 1 B), so a run never met that, only a direct call of :func:`select`.
"""

from __future__ import annotations

from typing import Annotated

import numpy as np
from pydantic import BeforeValidator, Field

from federation import Params
from federation.engine.api import NC_REQ_FLITS, NC_REQ_PKTS, NC_RSP_LAT, NC_STALL, nic_counter
from federation.engine.jit import part
from federation.models.units import ByteCount
from federation.plugin.components import Controller

#: ``cfg`` entries of the state
C_AD, C_BS, C_GATE, C_EXPIRE, C_PACKET, C_FLITS = range(6)
#: the age of a mode never sampled (ages saturate below it: no run makes 2**62 readings)
NEVER = 1 << 62
#: largest gate, packet_bytes, flits_per_packet and expire_samples: int64 state, with room
MAX_COUNT = 10**18


@part
def estimate(lat, stall, age, node, ad, bs, expire, lam, sig):
    """``(L_ad, s_ad, L_bs, s_bs, ok)`` for ``node``: each mode's sample unless expired, a
    missing one estimated from the other by lambda and sigma; ``ok`` false: no sample at all."""
    have_ad = age[node, ad] < NEVER and age[node, ad] <= expire
    have_bs = age[node, bs] < NEVER and age[node, bs] <= expire
    l_ad, s_ad, l_bs, s_bs = lat[node, ad], stall[node, ad], lat[node, bs], stall[node, bs]
    if not have_ad and not have_bs:
        return 0.0, 0.0, 0.0, 0.0, False
    if not have_bs:
        l_bs, s_bs = l_ad * lam, s_ad * sig
    elif not have_ad:
        l_ad, s_ad = l_bs / lam, s_bs / sig
    return l_ad, s_ad, l_bs, s_bs, True


@part
def select(cfg, ratios, lat, stall, age, node, size, ad, bs):
    """``selectRouting(msgSize)``: the high-bias mode when Eq. 3 says it costs less."""
    l_ad, s_ad, l_bs, s_bs, ok = estimate(lat, stall, age, node, ad, bs, cfg[C_EXPIRE],
                                          ratios[0], ratios[1])
    if not ok:
        return ad
    p = (size - 1) // cfg[C_PACKET] + 1  # ceil(size / packet bytes), no sum to wrap; 0 B: 0
    f = p * float(cfg[C_FLITS])  # floats: p * flits may pass int64
    w = (p + 512.0) / 1024.0  # at least 1/2
    # Eq. 3 as the sign of cost(bs) - cost(ad), never NaN (the module docstring)
    diff = w * (l_bs - l_ad)
    if f > 0.0:
        diff += f * (s_bs - s_ad)
    if diff < 0.0:
        return bs
    return ad


@part
def sample(snap, lat, stall, age, prev, node, counters):
    """Take ``node``'s NIC counters (``counters``: request flits, stalled ps, request packets,
    cumulative latency ps): what moved since the last reading is the sample of ``prev``, the
    mode of the message sent then (no sample when no packet went)."""
    flits = counters[0] - snap[node, 0]
    pkts = counters[2] - snap[node, 2]
    if pkts <= 0:  # nothing moved (a burst of sends in one event): no sample, nothing ages
        return
    for k in range(age.shape[1]):
        if age[node, k] < NEVER:
            age[node, k] += 1
    if prev >= 0:
        lat[node, prev] = (counters[3] - snap[node, 3]) / pkts
        stall[node, prev] = (counters[1] - snap[node, 1]) / max(flits, 1)
        age[node, prev] = 1
    for j in range(4):
        snap[node, j] = counters[j]


@part
def step(state, node, size, mode, counters):
    """Algorithm 1 for one send of ``node`` given its NIC counters as they stand (the module
    docstring); returns the mode.  Apart from :func:`decide` so that tests can script the
    counters."""
    cfg, ratios, total, cur, snap, lat, stall, age = state
    sample(snap, lat, stall, age, cur[node], node, counters)
    ad = mode if mode >= 0 else cfg[C_AD]
    bs = cfg[C_BS]
    if size < cfg[C_GATE] - total[node]:  # total + size < gate, no sum to wrap
        total[node] += size
        cur[node] = bs
        return bs
    total[node] = 0
    choice = select(cfg, ratios, lat, stall, age, node, size, ad, bs)
    cur[node] = choice
    return choice


@part
def decide(sim, state, node, size, mode):
    """The controller's call-out: :func:`step` with ``node``'s NIC counters."""
    counters = state[8]
    counters[0] = nic_counter(sim, node, NC_REQ_FLITS)
    counters[1] = nic_counter(sim, node, NC_STALL)
    counters[2] = nic_counter(sim, node, NC_REQ_PKTS)
    counters[3] = nic_counter(sim, node, NC_RSP_LAT)
    return step(state[:8], node, size, mode, counters)


def _whole(value: object) -> object:
    """A whole float (``1e20`` in a file) or numeric string (``'1e20'``) as an int, so that
    one past the bound is refused naming the bound rather than as "not a valid integer"."""
    num = value
    if isinstance(value, str):
        try:
            num = float(value)
        except ValueError:
            return value
    if isinstance(num, float) and num.is_integer():
        return int(num)
    return value


#: a count in a file: an int, or a whole float or string such as ``1e6``
Count = Annotated[int, BeforeValidator(_whole)]


class AppAwareParams(Params):
    adaptive: str = Field("ADAPTIVE_0", description="the adaptive mode (paper: ADAPTIVE); a "
                          "message with a mode of its own (collective_modes) uses that")
    bias: str = Field("ADAPTIVE_3", description="the high-bias mode (paper: ADAPTIVE WITH "
                      "HIGH BIAS)")
    gate: ByteCount = Field(4096.0, le=MAX_COUNT, description="running total of message bytes "
                            "below which messages go with the high-bias mode (paper: 4 KiB); "
                            "at most 10**18")
    latency_ratio: float = Field(0.9, gt=0, description="lambda: L_bs = L_ad * lambda when "
                                 "the high-bias sample is missing (not in the paper)")
    stall_ratio: float = Field(1.5, gt=0, description="sigma: s_bs = s_ad * sigma (not in the "
                               "paper)")
    expire_samples: Count = Field(16, ge=1, le=MAX_COUNT, description="a mode's (L, s) is "
                                  "dropped after this many later samples (readings in which "
                                  "packets moved; the number is not in the paper); at most "
                                  "10**18")
    packet_bytes: ByteCount = Field(64.0, le=MAX_COUNT, description="bytes per packet for p "
                                    "(Aries: 64 B; s and L come from the NIC counters, which "
                                    "count the machine's packets: give its packet_size to "
                                    "match them); at most 10**18")
    flits_per_packet: Count = Field(5, ge=1, le=MAX_COUNT, description="request flits per "
                                    "packet for f (Aries PUT: 5, a header flit included; the "
                                    "counters' s is per flit of nic.flit bytes, no header: "
                                    "packet_size / nic.flit matches them); at most 10**18")


class AppAware(Controller):
    """Application-aware routing (De Sensi et al., SC'19, Algorithm 1) from NIC counters."""

    name = "app_aware"
    Params = AppAwareParams
    params: AppAwareParams
    function = decide

    def check(self, modes: list[str]) -> None:
        for field in ("adaptive", "bias"):
            name = getattr(self.params, field)
            if name not in modes:
                known = ", ".join(modes) if modes else "none"
                raise ValueError(f"{field} {name!r} is not a mode of the routing (its modes: "
                                 f"{known})")

    def state(self, n_nodes: int, modes: list[str], packet_size: int) -> tuple:
        p = self.params
        k = max(len(modes), 1)
        cfg = np.array([modes.index(p.adaptive), modes.index(p.bias), int(p.gate),
                        p.expire_samples, max(int(p.packet_bytes), 1), p.flits_per_packet],
                       dtype=np.int64)
        return (cfg, np.array([p.latency_ratio, p.stall_ratio]),
                np.zeros(n_nodes, dtype=np.int64), np.full(n_nodes, -1, dtype=np.int64),
                np.zeros((n_nodes, 4), dtype=np.int64), np.zeros((n_nodes, k)),
                np.zeros((n_nodes, k)), np.full((n_nodes, k), NEVER, dtype=np.int64),
                np.zeros(4, dtype=np.int64))  # the counters read (no allocation per send)
