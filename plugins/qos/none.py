"""QoS policy ``none``: one traffic class sharing every VC by the routing's rule."""

from __future__ import annotations

from federation import Params, QosPolicy, hookimpl


class NoQos(QosPolicy):
    """Single traffic class (no QoS)."""

    name = "none"

    class Params(Params):
        pass


@hookimpl
def federation_register_qos(register) -> None:  # noqa: ANN001
    register(NoQos)
