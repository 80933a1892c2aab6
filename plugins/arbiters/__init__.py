"""Built-in output-port arbiters (``machine.router.arbiter.kind``), one module each:
:mod:`.oldest_first`, :mod:`.round_robin`, :mod:`.strict_priority`.  Their compiled functions
live in :mod:`federation.engine.arbiters`; this package registers the three through its
``federation`` entry point (``arbiters``), exactly as a third-party plugin would.
"""

from __future__ import annotations

from federation import hookimpl
from federation.plugins.arbiters.oldest_first import OldestFirst
from federation.plugins.arbiters.round_robin import RoundRobin
from federation.plugins.arbiters.strict_priority import StrictPriority

__all__ = ["OldestFirst", "RoundRobin", "StrictPriority"]


@hookimpl
def federation_register_arbiters(register) -> None:  # noqa: ANN001
    register(OldestFirst)
    register(RoundRobin)
    register(StrictPriority)
