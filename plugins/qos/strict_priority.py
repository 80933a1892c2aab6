"""QoS policy ``strict_priority``: at every router output port the sendable class of lowest
number (list order) goes first, oldest first within a class; each class in its own VCs."""

from __future__ import annotations

from federation import hookimpl
from federation.engine import qos as Q
from federation.network import Network
from federation.plugins.qos.classes import ClassParams, ClassPolicy


class StrictPriorityQos(ClassPolicy):
    """Strict priority among classes, in list order."""

    name = "strict_priority"
    function = Q.strict_classes

    class Params(ClassParams):
        pass

    def state(self, network: Network, n_vcs: int) -> Q.QosState:
        return Q.new_state(Q.K_STRICT, network.ports.n_ports, len(self.params.classes),
                           n_nodes=self.nic_nodes(network))


@hookimpl
def federation_register_qos(register) -> None:  # noqa: ANN001
    register(StrictPriorityQos)
