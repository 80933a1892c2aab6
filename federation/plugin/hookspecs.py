"""Hook specifications of hpc-federation.

Every component (topology, routing, QoS policy, workload, engine) reaches the framework through
one of the registration hooks below.  Built-in components use them exactly like third-party
ones: both are modules named in the ``federation`` entry-point group.

A plugin module implements any subset::

    from federation import hookimpl

    @hookimpl
    def federation_register_topologies(register):
        register(MyTopology)

``register`` takes a component *class* (with ``name`` and a nested ``Params`` model).  The host
records which plugin supplied it, rejects duplicate names naming both plugins, and checks the
class, so a plugin author gets a clear error instead of a late crash.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from federation.plugin.components import (
        Arbiter,
        Controller,
        Engine,
        QosPolicy,
        Routing,
        Topology,
        Workload,
    )
    from federation.plugin.jobs import InjectionProcess, Placement, TrafficPattern

hookspec = pluggy.HookspecMarker("federation")

# ---------------------------------------------------------------------------
# registration hooks: called once when the plugin manager loads
# ---------------------------------------------------------------------------


@hookspec
def federation_register_topologies(register: Callable[[type[Topology]], None]) -> None:
    """Register :class:`~federation.plugin.components.Topology` subclasses.

    :param register: call once per class; its ``name`` is the ``kind`` used in machine files.
    """


@hookspec
def federation_register_routings(register: Callable[[type[Routing]], None]) -> None:
    """Register :class:`~federation.plugin.components.Routing` subclasses.

    :param register: call once per class; its ``name`` is the ``algorithm`` in experiment files.
    """


@hookspec
def federation_register_qos(register: Callable[[type[QosPolicy]], None]) -> None:
    """Register :class:`~federation.plugin.components.QosPolicy` subclasses
    (``machine.qos.kind``)."""


@hookspec
def federation_register_arbiters(register: Callable[[type[Arbiter]], None]) -> None:
    """Register :class:`~federation.plugin.components.Arbiter` subclasses
    (``machine.router.arbiter``)."""


@hookspec
def federation_register_controllers(register: Callable[[type[Controller]], None]) -> None:
    """Register :class:`~federation.plugin.components.Controller` subclasses (an
    experiment's ``routing_controller.kind``): per-message routing-mode policies run in the
    engine's loop at each send."""


@hookspec
def federation_register_workloads(register: Callable[[type[Workload]], None]) -> None:
    """Register :class:`~federation.plugin.components.Workload` subclasses (``workload.kind``)."""


@hookspec
def federation_register_engines(register: Callable[[type[Engine]], None]) -> None:
    """Register :class:`~federation.plugin.components.Engine` subclasses (``engine.kind``)."""


@hookspec
def federation_register_placements(register: Callable[[type[Placement]], None]) -> None:
    """Register :class:`~federation.plugin.jobs.Placement` subclasses (a job's
    ``placement.kind``)."""


@hookspec
def federation_register_patterns(register: Callable[[type[TrafficPattern]], None]) -> None:
    """Register :class:`~federation.plugin.jobs.TrafficPattern` subclasses (``synthetic``'s
    ``pattern``)."""


@hookspec
def federation_register_injections(register: Callable[[type[InjectionProcess]], None]) -> None:
    """Register :class:`~federation.plugin.jobs.InjectionProcess` subclasses (``synthetic``'s
    ``injection``)."""


# ---------------------------------------------------------------------------
# CLI hooks
# ---------------------------------------------------------------------------


@hookspec
def federation_add_commands(app: Any) -> None:
    """Add sub-commands to the ``federation`` command line.

    :param app: the :class:`typer.Typer` application; use ``@app.command()``.
    """
