"""QoS policy ``bandwidth_caps``: per output port and class, a byte counter over a window; a
class that reaches its cap (a fraction of the link's bandwidth) while the port is
oversubscribed turns inactive until the window resets; active classes are served in priority
order (list order), inactive ones only when no active class can send, round-robin among them.
The megafly QoS study's mechanism (Mubarak et al.; Cheng et al.'s patent; CODES'
``qos_bandwidth`` and ``bw_reset_window``: digest megafly-qos.md §3), with a sliding window as
the study's future work suggests.  The exact rules: :mod:`federation.engine.qos`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from federation import hookimpl
from federation.engine import qos as Q
from federation.models.limits import TIME_LIMIT_PS
from federation.models.units import PS_PER_S, PositiveTime, format_time
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
            if not v * PS_PER_S < TIME_LIMIT_PS:
                raise ValueError(f"must be below {format_time(TIME_LIMIT_PS / PS_PER_S)} "
                                 "(the engine's clock)")
            return v

    def state(self, network: Network, n_vcs: int) -> Q.QosState:
        p = self.params
        return Q.new_state(Q.K_CAPS, network.ports.n_ports, len(p.classes),
                           window_ps=window_ps(p.window), sliding=p.window_kind == "sliding",
                           caps=[c.cap for c in p.classes], n_nodes=self.nic_nodes(network))


def window_ps(seconds: float) -> int:
    """The window in whole ps (at least 1)."""
    return max(1, int(round(seconds * PS_PER_S)))


@hookimpl
def federation_register_qos(register) -> None:  # noqa: ANN001
    register(BandwidthCaps)
