"""Base classes of the components that make jobs: placement policies, traffic patterns and
injection processes.

A *placement* chooses the nodes of a job on the built machine (``placement: {kind: ...}`` of a
job); a *traffic pattern* maps the source nodes of a synthetic job's messages to their
destinations; an *injection process* decides when each node creates a message.  All three are
plugins like topologies and routings (a ``name``, a nested ``Params`` model, registered through
a hook), so a third-party placement, pattern or process gets the same checking and messages as
a built-in one.

Node numbers a pattern sees are the job's own: node ``i`` of a job is the ``i``-th node of its
placement in rank order (:attr:`PatternContext.nodes` maps them to the machine's), so a pattern
written for a whole machine confines itself to any job unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from federation.errors import ConfigError
from federation.plugin.components import Component

if TYPE_CHECKING:
    from federation.network import Network

__all__ = ["Arrivals", "Destinations", "InjectionContext", "InjectionProcess", "PatternContext",
           "Placement", "PlacementContext", "TrafficPattern"]


# --------------------------------------------------------------------------- placement


@dataclass(frozen=True)
class PlacementContext:
    """What a placement reads to choose a job's nodes."""

    network: Network  #: the whole machine
    free: np.ndarray  #: bool[N]: nodes no earlier job holds (a shared job's nodes stay free)
    rng: np.random.Generator  #: the job's own placement stream (from the experiment's seed)
    job: str  #: the job's name, for messages

    def refuse(self, message: str, field: str = "") -> ConfigError:
        """A refusal naming the job; ``field`` is relative to the placement (``count``)."""
        return ConfigError(f"job {self.job!r}: {message}", path=field or None)


class Placement(Component):
    """Chooses a job's nodes (:meth:`place`), reproducibly from ``ctx.rng``.

    The order of the returned nodes is the placement's own order (the ``placement`` rank
    order): the order a random draw took them, a ring's order from its start, a tree's
    breadth-first order.  Refusals raise :class:`~federation.errors.ConfigError` with a path
    relative to the placement's mapping (``count``); the runner names the job and the file."""

    #: takes whatever no other job took: placed after every other job
    takes_rest: ClassVar[bool] = False

    def count(self) -> int | None:
        """How many nodes :meth:`place` will return, known from the parameters alone, so the
        preflight can refuse jobs that cannot fit before building anything (``None``:
        known only on the machine)."""
        return None

    def listed(self) -> list[int] | None:
        """The explicit machine nodes of a placement that names them (``list``), so that
        overlapping lists are refused before anything is built, and such a placement is
        placed before the others (which then never draw its nodes); ``None`` otherwise."""
        return None

    def place(self, ctx: PlacementContext) -> np.ndarray:
        """The job's machine nodes (int64, distinct), in the placement's order."""
        raise NotImplementedError


# --------------------------------------------------------------------------- patterns


@dataclass(frozen=True)
class PatternContext:
    """What a traffic pattern reads: the job's nodes on the machine."""

    network: Network  #: the job's view: the machine's routers and cables, the job's nodes only
    nodes: np.ndarray  #: int64[n]: the machine node of each of the job's nodes
    machine: Network  #: the whole machine
    message_size: int  #: bytes per message

    @property
    def n_nodes(self) -> int:
        return int(self.nodes.shape[0])


#: draws the destinations (job node numbers, -1: no message) of messages from ``src`` (job
#: node numbers, in creation order); keeps whatever state the pattern needs between batches
Destinations = Callable[[np.ndarray], np.ndarray]


class TrafficPattern(Component):
    """Maps source nodes to destination nodes, vectorised and seeded.

    :meth:`check` refuses, before anything runs, a job the pattern cannot serve (a size that
    is not a power of two, no grid, a single node), with a ``ConfigError`` whose path is
    relative to the pattern (``offset``; empty for the pattern itself).  :meth:`start` returns
    the function that draws destinations batch after batch; a stateless pattern implements
    :meth:`destinations` only."""

    def check(self, ctx: PatternContext) -> None:
        if ctx.n_nodes < 2:
            raise ConfigError(f"pattern {self.name!r} needs at least 2 nodes (a node does not "
                              f"send to itself); the job has {ctx.n_nodes}")

    #: :meth:`numbers_messages` of a pattern that says it once for all its instances
    numbered: ClassVar[bool] = True

    def numbers_messages(self) -> bool:
        """Whether a message's destination depends on its place among its node's messages
        (``all_to_all`` and ``random_permutation`` with ``rotate_bytes`` number them): the
        workload then hands :meth:`start`'s drawer each node's messages in creation order,
        sorting a batch whose process draws times out of order (Poisson, on/off).  True
        unless a pattern says otherwise; one whose draw for a message depends on no message
        before it (a fixed mapping, independent draws) returns False and is spared the
        sort (its draws are paired with the times as the process drew them)."""
        return self.numbered

    def start(self, ctx: PatternContext, rng: np.random.Generator) -> Destinations:
        """The destination drawer of one run (called once per generation, before any batch;
        a pattern that draws a fixed mapping draws it here)."""
        return lambda src: self.destinations(src, ctx, rng)

    def destinations(self, src: np.ndarray, ctx: PatternContext,
                     rng: np.random.Generator) -> np.ndarray:
        raise NotImplementedError


# --------------------------------------------------------------------------- injection


@dataclass(frozen=True)
class InjectionContext:
    """What an injection process reads."""

    n_nodes: int  #: nodes that inject (the job's)
    slot_ps: int  #: ps one message takes at the NIC (size / NIC bandwidth)
    load: float  #: mean offered load, a fraction of the NIC bandwidth
    horizon_ps: int  #: no message at or after this time
    rng: np.random.Generator


#: the arrivals in ``[t0, t1)`` ps: ``(node, time_ps)`` arrays; called for consecutive spans
Arrivals = Callable[[int, int], tuple[np.ndarray, np.ndarray]]


class InjectionProcess(Component):
    """When each node creates a message: a stationary process whose mean is ``load`` messages
    per slot.  :meth:`start` draws what the process needs once (phases, first periods) and
    returns the function giving the arrivals of consecutive spans of time; a process restarted
    at a span's edge must be the same process, so spans only bound memory."""

    def check(self, ctx: InjectionContext) -> None:
        """Refuse parameters that cannot give ``ctx.load`` (path relative to the process)."""

    def start(self, ctx: InjectionContext) -> Arrivals:
        raise NotImplementedError
