"""Built-in injection processes (``synthetic``'s ``injection``): when each node creates a
message, at a mean of ``load`` times its NIC bandwidth.  :mod:`.processes`: ``bernoulli``
(BookSim's, one draw per message slot; the default), ``poisson``, ``periodic`` and ``on_off``
(bursts).  Registered through the ``injections`` entry point, as a third-party process would
be.
"""

from __future__ import annotations

from federation import hookimpl
from federation.plugins.injections.processes import Bernoulli, OnOff, Periodic, Poisson

__all__ = ["Bernoulli", "OnOff", "Periodic", "Poisson"]


@hookimpl
def federation_register_injections(register) -> None:  # noqa: ANN001
    for cls in (Bernoulli, Poisson, Periodic, OnOff):
        register(cls)
