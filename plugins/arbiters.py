"""Built-in output-port arbiters (``machine.router.arbiter.kind``).

* ``oldest_first``: the request that has waited longest, skipping those without credit (the
  engine's behaviour before arbiters were pluggable; CODES serves its queues in arrival order).
* ``round_robin``: over input VCs, starting after the one served last (BookSim's separable
  round-robin allocators; Dally & Towles, *Principles and Practices of Interconnection
  Networks*, §18-19).
* ``strict_priority``: the lowest traffic class number first, oldest first within a class (the
  megafly QoS study's high-priority class, Mubarak et al., digest megafly-qos.md §3).

The compiled functions live in :mod:`federation.engine.arbiters`.
"""

from __future__ import annotations

import numpy as np

from federation import Params, hookimpl
from federation.components import Arbiter
from federation.engine import arbiters as A


class OldestFirst(Arbiter):
    """The longest-waiting request with credit."""

    name = "oldest_first"
    function = A.oldest_first

    class Params(Params):
        pass


class RoundRobin(Arbiter):
    """Round-robin over input VCs, from the one after the last served."""

    name = "round_robin"
    function = A.round_robin

    class Params(Params):
        pass

    def state(self, network, n_vcs: int) -> tuple:  # noqa: ANN001
        # per output port: the input queue (port * V + vc) it served last
        return (np.full(network.ports.n_ports, -1, dtype=np.int64),)


class StrictPriority(Arbiter):
    """Lowest traffic class first, oldest first within a class."""

    name = "strict_priority"
    function = A.strict_priority

    class Params(Params):
        pass


@hookimpl
def federation_register_arbiters(register) -> None:  # noqa: ANN001
    register(OldestFirst)
    register(RoundRobin)
    register(StrictPriority)
