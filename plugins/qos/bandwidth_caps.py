"""QoS policy ``bandwidth_caps``: per output port and class, a byte counter over a window; a
class that reaches its cap (a fraction of the link's bandwidth) while the port is
oversubscribed turns inactive until the window resets; active classes are served in priority
order (list order), inactive ones only when no active class can send, round-robin among them.
The megafly QoS study's mechanism (Mubarak et al.; Cheng et al.'s patent; CODES'
``qos_bandwidth`` and ``bw_reset_window``: digest megafly-qos.md §3), with a sliding window as
the study's future work suggests.  The exact rules: :mod:`federation.engine.qos`.

The window runs in whole ps (rounded to the nearest, as every time of a run is); one below
1 ps, or one in which some class's byte cap at some port the policy arbitrates is less than a
packet (:meth:`BandwidthCaps.port_problem`), is refused before the run: both ran, and gave
results that did not say what the file said.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field, field_validator

from federation import hookimpl
from federation.engine import qos as Q
from federation.models.limits import CLOCK_LIMIT, TIME_LIMIT_PS
from federation.models.units import PS_PER_S, PositiveTime, format_rate, format_time
from federation.network import Network
from federation.plugins.qos.classes import AtParams, ClassPolicy, TrafficClass, unique_names


class CapClass(TrafficClass):
    cap: float = Field(gt=0, le=1, description="the class's share of each link's bandwidth "
                                               "while the link is oversubscribed, in (0, 1]")


class BandwidthCaps(ClassPolicy):
    """Per-class bandwidth caps over a window, strict priority among active classes."""

    name = "bandwidth_caps"
    function = Q.bandwidth_caps

    class Params(AtParams):
        classes: list[CapClass] = Field(min_length=1, description="the classes, highest "
                                                                  "priority first")
        window: PositiveTime = Field(description="the monitoring window (CODES' "
                                                 "bw_reset_window; the study used 5ms)")
        window_kind: Literal["static", "sliding"] = Field(
            "static", description="static: counters reset every window from t=0; sliding: "
                                  "the bytes of the last window")

        @field_validator("classes")
        @classmethod
        def _unique(cls, v: list[CapClass]) -> list[CapClass]:
            return unique_names(v)

        @field_validator("window")
        @classmethod
        def _window(cls, v: float) -> float:
            """Within the clock range, and at least its unit: the engine's window is whole
            ps, and one below 1 ps ran as 1 ps while results.json kept the value written."""
            if not v * PS_PER_S < TIME_LIMIT_PS:
                raise ValueError(f"must be below {format_time(TIME_LIMIT_PS / PS_PER_S)} "
                                 "(the engine's clock)")
            if v * PS_PER_S < 1 - 1e-9:  # the tolerance: '1ps' in any unit is 1 ps
                raise ValueError(f"{v * 1e12:.3g}ps is below the engine's clock unit (1ps: "
                                 "its times are whole picoseconds); give at least 1ps")
            return v

    def state(self, network: Network, n_vcs: int) -> Q.QosState:
        p = self.params
        return Q.new_state(Q.K_CAPS, network.ports.n_ports, len(p.classes),
                           window_ps=window_ps(p.window), sliding=p.window_kind == "sliding",
                           caps=[c.cap for c in p.classes], n_nodes=self.nic_nodes(network))

    def port_problem(self, links: dict[str, float], nic_bandwidth: float,
                     packet_size: int) -> tuple[str, str] | None:
        """A window too short for some class's byte cap to hold one packet at some port the
        policy arbitrates (router outputs: every link class; the NICs too with ``injection``
        in ``at``) is refused with the shortest window that works.  With such a window every
        class passes its cap with its first packet of each window, so the caps shape nothing:
        caps 0.7 / 0.3 and 0.01 / 0.99 gave the same packets, byte for byte."""
        p = self.params
        ports = [(f"link class {name!r}", bw) for name, bw in links.items()]
        if "injection" in p.at:
            ports.append(("the NICs", nic_bandwidth))
        W = window_ps(p.window)
        need, worst = 0, None
        for c in p.classes:  # the smallest cap and the slowest port bind; the first of equals
            for where, bw in ports:
                w = min_window_ps(c.cap, PS_PER_S / bw, packet_size)
                if w > need:
                    need, worst = w, (c, where, bw)
        if W >= need or worst is None:
            return None
        c, where, bw = worst
        held = int(Q.cap_bytes(float(c.cap) * W, PS_PER_S / bw))
        fix = (f"give at least {exact_time(need)}" if need < TIME_LIMIT_PS else
               f"it would take {exact_time(need)}, beyond {CLOCK_LIMIT}: raise the bandwidth "
               "or the cap, or lower packet_size")
        return "window", (
            f"a window of {exact_time(W)} gives class {c.name!r} (cap {c.cap:g}, the smallest) "
            f"a cap of {held} B per window at {where} ({format_rate(bw)}, the slowest port the "
            f"policy arbitrates), less than one {packet_size} B packet (packet_size): every "
            "class would pass its cap with its first packet of each window, so the caps would "
            f"shape nothing; {fix}")


def window_ps(seconds: float) -> int:
    """The window in whole ps, rounded to the nearest as every time of a run is (at least 1:
    the field refuses a window below 1 ps)."""
    return max(1, int(round(seconds * PS_PER_S)))


def min_window_ps(cap: float, ser: float, packet_size: int) -> int:
    """The shortest window (whole ps) whose byte cap for ``cap`` at a port of ``ser`` ps per
    byte holds a ``packet_size`` B packet, by the engine's own rounding
    (:func:`federation.engine.qos.cap_bytes`); found from the closed form, then stepped to
    the exact boundary (a float's last bit can move it by one)."""
    def holds(w: int) -> bool:
        return bool(Q.cap_bytes(float(cap) * w, ser) >= packet_size)

    w = max(1, math.ceil((packet_size - 0.5) * ser / cap))
    if w >= TIME_LIMIT_PS:  # no window can be that long: no need to be exact (nor to step
        return w  # where a step of 1 ps no longer moves a float)
    while w > 1 and holds(w - 1):
        w -= 1
    while not holds(w):
        w += 1
    return w


def exact_time(ps: int) -> str:
    """``ps`` as a time to write in a file, exactly (``338.163ns``, not ``338.2ns``): a
    minimum that :func:`format_time` rounded down would itself be refused."""
    for unit, factor in (("s", 10**12), ("ms", 10**9), ("us", 10**6), ("ns", 10**3)):
        if ps >= factor:
            whole, rest = divmod(ps, factor)
            digits = len(str(factor)) - 1
            frac = f"{rest:0{digits}d}".rstrip("0")
            return f"{whole}.{frac}{unit}" if frac else f"{whole}{unit}"
    return f"{ps}ps"


@hookimpl
def federation_register_qos(register) -> None:  # noqa: ANN001
    register(BandwidthCaps)
