"""Routing ``ugal``: UGAL-L, the source router chooses minimal or Valiant per packet.

At the packet's source router the engine compares the occupancy of the first output port of the
minimal path (``q_min``: bytes held in the downstream input buffers of that port, all VCs) with
that of the Valiant path (``q_val``) and routes minimally when ``q_min <= 2 * q_val + bias``: the
Valiant path is about twice as long, so its queue counts double (Kim, Dally, Scott, Abts, ISCA
2008; CODES' adaptive routing compares the two queues unweighted).  ``bias`` (bytes, default one
packet) favours the minimal path: without it a single packet queued ahead sends a tenth of
low-load traffic the long way.  The decision is made once; VCs as for ``valiant`` (3 on a
dragonfly).
"""

from __future__ import annotations

from pydantic import Field

from federation import Params, RouteTables, hookimpl
from federation.plugins.routing_valiant import Valiant
from federation.units import PositiveSize


class UgalParams(Params):
    bias: PositiveSize | None = Field(
        None, description="bytes added to the Valiant side (favours minimal); default: one "
        "packet, so a single packet ahead does not send traffic the long way")


class Ugal(Valiant):
    """UGAL-L: per packet at the source, minimal unless its first queue is twice the Valiant one."""

    name = "ugal"
    Params = UgalParams
    params: UgalParams

    def tables(self, network, topology, machine) -> RouteTables:  # noqa: ANN001
        t = super().tables(network, topology, machine)
        t.adaptive = True
        bias = self.params.bias
        t.adaptive_bias = int(machine.packet_size if bias is None else bias)
        t.description = f"UGAL-L (minimal or Valiant at the source router), {t.description}"
        return t


@hookimpl
def federation_register_routings(register) -> None:  # noqa: ANN001
    register(Ugal)
