"""``oldest_first``: the request that has waited longest, skipping those without credit (the
engine's behaviour before arbiters were pluggable; CODES serves its queues in arrival order)."""

from __future__ import annotations

from federation import Params
from federation.engine import arbiters as A
from federation.plugin.components import Arbiter


class OldestFirst(Arbiter):
    """The longest-waiting request with credit."""

    name = "oldest_first"
    function = A.oldest_first

    class Params(Params):
        pass
