"""QoS policy ``weighted_round_robin``: at every router output port, deficit round-robin over
the classes (Shreedhar and Varghese), each adding ``weight x QUANTUM`` bytes per round: the
byte shares of classes that all have packets to send follow their weights; work-conserving."""

from __future__ import annotations

from pydantic import Field, field_validator

from federation import hookimpl
from federation.engine import qos as Q
from federation.network import Network
from federation.plugins.qos.classes import AtParams, ClassPolicy, TrafficClass, unique_names


class WeightedClass(TrafficClass):
    weight: int = Field(ge=1, le=1 << 20, description="the class's share, relative to the "
                                                      "others' weights")


class WeightedRoundRobin(ClassPolicy):
    """Deficit round-robin over classes with integer weights."""

    name = "weighted_round_robin"
    function = Q.weighted_classes

    class Params(AtParams):
        classes: list[WeightedClass] = Field(min_length=1)

        @field_validator("classes")
        @classmethod
        def _unique(cls, v: list[WeightedClass]) -> list[WeightedClass]:
            return unique_names(v)

    def state(self, network: Network, n_vcs: int) -> Q.QosState:
        p = self.params
        return Q.new_state(Q.K_WRR, network.ports.n_ports, len(p.classes),
                           weights=[c.weight for c in p.classes], n_nodes=self.nic_nodes(network))


@hookimpl
def federation_register_qos(register) -> None:  # noqa: ANN001
    register(WeightedRoundRobin)
