"""Routing controller ``by_size``: a message's routing mode from its size alone, the smallest
useful policy, and the example of docs/plugins.md (*Writing a routing controller*).

Messages below ``threshold`` bytes go with ``small`` (a high-bias mode: small messages are
latency-bound), the others with ``large`` (an adaptive mode: large ones gain from path
diversity), the rule of thumb of De Sensi et al. (SC'19, §5.1) without the counters.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from federation import Params
from federation.engine.jit import part
from federation.models.units import ByteCount
from federation.plugin.components import Controller


@part
def decide(sim, state, node, size, mode):
    """``small`` below ``threshold`` bytes, else ``large`` (``state[0]``: the three)."""
    cfg = state[0]
    if size < cfg[0]:
        return cfg[1]
    return cfg[2]


class BySizeParams(Params):
    threshold: ByteCount = Field(4096.0, le=10**18, description="messages below this many bytes "
                                 "are small (at most 10**18: the state is int64)")
    small: str = Field("ADAPTIVE_3", description="routing mode of small messages")
    large: str = Field("ADAPTIVE_0", description="routing mode of the others")


class BySize(Controller):
    """Routing mode by message size: ``small`` below ``threshold``, else ``large``."""

    name = "by_size"
    Params = BySizeParams
    params: BySizeParams
    function = decide

    def check(self, modes: list[str]) -> None:
        for field in ("small", "large"):
            name = getattr(self.params, field)
            if name not in modes:
                raise ValueError(f"{field} {name!r} is not a mode of the routing (its modes: "
                                 f"{', '.join(modes) or 'none'})")

    def state(self, n_nodes: int, modes: list[str], packet_size: int) -> tuple:
        p = self.params
        return (np.array([int(p.threshold), modes.index(p.small), modes.index(p.large)],
                         dtype=np.int64),)
