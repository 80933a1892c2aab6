"""What the class-based QoS policies share: their ``classes`` list, and the arbiter that
runs their compiled arbitration (:mod:`federation.engine.qos`) at every router output port
and, with ``injection`` in ``at`` (the default), at every NIC (:mod:`federation.engine.nic_qos`).

A policy of this kind has several traffic classes, each in its own set of VCs
(``router.vcs`` = classes x the routing's need, checked before the run by
:mod:`federation.pipeline.build`), and replaces ``router.arbiter``: its ``function`` is the
loop's ``ARBITRATE`` call-out and :meth:`ClassPolicy.state` its state.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator

from federation import Params, QosPolicy
from federation.engine.qos import QosState
from federation.network import Network
from federation.plugin.components import Arbiter


class TrafficClass(Params):
    """One traffic class (its number is its position in ``classes``)."""

    name: str = Field(min_length=1, description="the class's name (jobs and operation kinds "
                                                "name classes by it)")


def unique_names(classes: list[Any]) -> list[Any]:
    """Refuse two classes of one name (jobs and programs name classes by it)."""
    seen: set[str] = set()
    for c in classes:
        if c.name in seen:
            raise ValueError(f"two traffic classes are named {c.name!r}; names must be unique")
        seen.add(c.name)
    return classes


class AtParams(Params):
    """Where a class policy applies: the routers' output ports (always: the native engine
    arbitrates them by the policy) and, with ``injection``, each NIC's choice of the class
    that sends next (:mod:`federation.engine.nic_qos`)."""

    at: list[Literal["router_outputs", "injection"]] = Field(
        default_factory=lambda: ["router_outputs", "injection"], min_length=1,
        description="where the policy applies: router_outputs (required), injection")

    @field_validator("at")
    @classmethod
    def _at(cls, v: list[str]) -> list[str]:
        if len(set(v)) != len(v):
            raise ValueError("lists a place twice")
        if "router_outputs" not in v:
            raise ValueError("must include router_outputs: the native engine arbitrates the "
                             "routers' output ports by the policy whenever it has classes")
        return v


class ClassParams(AtParams):
    """A ``classes`` list of at least one class, of unique names."""

    classes: list[TrafficClass] = Field(min_length=1)

    @field_validator("classes")
    @classmethod
    def _unique(cls, v: list[Any]) -> list[Any]:
        return unique_names(v)


class ClassPolicy(QosPolicy):
    """A QoS policy whose classes are listed in its parameters and which arbitrates the
    routers' output ports (see the module docstring)."""

    #: the compiled ``arbitrate(sim, state, o) -> (qi, prev)`` (:mod:`federation.engine.qos`)
    function: ClassVar[Any] = None

    def class_names(self) -> list[str]:
        return [c.name for c in self.params.classes]  # type: ignore[attr-defined]

    def state(self, network: Network, n_vcs: int) -> QosState:
        """The per-port state of one run."""
        raise NotImplementedError

    def nic_nodes(self, network: Network) -> int:
        """The nodes whose NICs the policy arbitrates (``new_state``'s ``n_nodes``): all of
        them with ``injection`` in ``at``, else none."""
        return network.n_nodes if "injection" in self.params.at else 0  # type: ignore[attr-defined]

    def as_arbiter(self) -> Arbiter:
        """The router arbiter that runs this policy (``point.machine.arbiter`` of its runs)."""
        return _arbiter_class(type(self))(self)


_ARBITERS: dict[type, type] = {}


def _arbiter_class(policy: type[ClassPolicy]) -> type[Arbiter]:
    """One :class:`Arbiter` subclass per policy class (its ``function`` is a class
    attribute, read as ``type(arbiter).function``)."""
    if policy not in _ARBITERS:

        def __init__(self: Any, qos: ClassPolicy) -> None:  # noqa: N807
            Arbiter.__init__(self, qos.params)
            self.qos = qos

        def state(self: Any, network: Network, n_vcs: int) -> QosState:
            return self.qos.state(network, n_vcs)

        def __reduce__(self: Any) -> tuple:  # noqa: N807
            return _policy_arbiter, (self.qos,), self.__dict__

        _ARBITERS[policy] = type(f"{policy.__name__}Arbiter", (Arbiter,), {
            "name": f"qos {policy.name}", "function": policy.function,
            "__init__": __init__, "state": state, "__reduce__": __reduce__,
            "__doc__": f"The output-port arbitration of QoS policy {policy.name!r}."})
    return _ARBITERS[policy]


def _policy_arbiter(qos: ClassPolicy) -> Arbiter:
    """``qos.as_arbiter()``: how a policy's arbiter is unpickled (a Dask worker's point).

    The arbiter's class is made at run time, so it has no importable name and cloudpickle would
    copy it by value, ``function`` included: the worker's copy of the compiled function would
    not be the one its module defines, which the engine requires
    (:func:`federation.engine.compile.loop_for` imports the call-outs by name).  Rebuilt from the
    policy's class (pickled by reference), it is this process's own class of that policy."""
    return qos.as_arbiter()
