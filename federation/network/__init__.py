"""The built network and what is known about it before any packet moves.

Stage: *build*.  Owns the flat-array :class:`Network` that every topology returns (``graph``),
route tables and shortest-path routes (``routes``), equal-cost next-hop sets (``equal_cost``)
and exact graph metrics (``metrics``).

May import: :mod:`federation.errors`, :mod:`federation.models`.  Nothing here knows about
plugins, traffic or the engine, so a topology's output can be analysed on its own.
"""

from federation.network.graph import TERMINAL, Network, NetworkBuilder, PortTable

__all__ = ["TERMINAL", "Network", "NetworkBuilder", "PortTable"]
