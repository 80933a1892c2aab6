"""``round_robin``: over input VCs, starting after the one served last (BookSim's separable
round-robin allocators; Dally & Towles, *Principles and Practices of Interconnection Networks*,
§18-19)."""

from __future__ import annotations

import numpy as np

from federation import Params
from federation.engine import arbiters as A
from federation.plugin.components import Arbiter


class RoundRobin(Arbiter):
    """Round-robin over input VCs, from the one after the last served."""

    name = "round_robin"
    function = A.round_robin

    class Params(Params):
        pass

    def state(self, network, n_vcs: int) -> tuple:  # noqa: ANN001
        # per output port: the input queue (port * V + vc) it served last
        return (np.full(network.ports.n_ports, -1, dtype=np.int64),)
