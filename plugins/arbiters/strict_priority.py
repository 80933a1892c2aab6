"""``strict_priority``: the lowest traffic class number first, oldest first within a class (the
megafly QoS study's high-priority class, Mubarak et al., digest megafly-qos.md §3)."""

from __future__ import annotations

from federation import Params
from federation.engine import arbiters as A
from federation.plugin.components import Arbiter


class StrictPriority(Arbiter):
    """Lowest traffic class first, oldest first within a class."""

    name = "strict_priority"
    function = A.strict_priority

    class Params(Params):
        pass
