"""Topology ``ring``: ``n`` routers in a bidirectional ring, ``p`` nodes on each router.

A complete third-party topology plugin for hpc-federation.  Once the distribution is installed
(``pip install ./examples/federation-ring``) a machine file can say::

    topology: {kind: ring, n: 16, p: 2}

Parameters: ``n`` routers (3 to 4096), ``p`` nodes per router (default 1) and ``radix``, the ports
per router (default ``p + 2``).

Wiring: router ``i`` is cabled to router ``i + 1 mod n`` (link class ``ring``) and node ``k`` is
attached to router ``k // p``.

Minimal routing takes the shortest way round.  At the half-way point of an even ring the two ways
are equally long, and routers ``i < n/2`` go up (``+1``) while the others go down, which splits the
ties evenly.  Two VCs keep it deadlock-free for any ``n``.  A packet travels on VC 0 until it takes
the *dateline* cable (the one between routers ``n - 1`` and ``0``, in either direction) and on
VC 1 from then on.  Without the :meth:`Ring.minimal_routes` override the framework's default
shortest-path tables would work too, but their rule is VC = hop index, so they need
``router.vcs >= n // 2``.  Use ``routing: {algorithm: minimal}``; ``valiant`` runs each of its
two phases on its own pair of dateline VCs (``router.vcs: 4``).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from pydantic import Field, model_validator

from federation import (
    LinkDefaults,
    Network,
    NetworkBuilder,
    Params,
    RouteTables,
    Topology,
    hookimpl,
)
from federation.plugin.components import VC_DATELINE


class RingParams(Params):
    """What ``topology: {kind: ring, ...}`` accepts (unknown keys are errors)."""

    n: int = Field(ge=3, le=4096, description="routers in the ring")
    p: int = Field(1, ge=1, le=256, description="nodes attached to each router")
    radix: int | None = Field(None, ge=3, description="ports per router; default p + 2")

    @model_validator(mode="after")
    def _radix_fits(self) -> RingParams:
        if self.radix is not None and self.radix < self.p + 2:
            raise ValueError(
                f"radix {self.radix} is too small: every router needs p + 2 = {self.p + 2} "
                f"ports ({self.p} nodes and 2 ring cables)"
            )
        return self


class Ring(Topology):
    """Bidirectional ring of n routers with p nodes each; shortest way round, 2 VCs."""

    name = "ring"
    Params = RingParams
    #: figures for each link class this topology emits; a machine file overrides any of them
    link_defaults: ClassVar[dict[str, LinkDefaults]] = {
        "terminal": LinkDefaults(),
        "ring": LinkDefaults(latency=20e-9),  # cables between cabinets: longer than 10 ns
    }
    params: RingParams

    def build(self) -> Network:
        n, p = self.params.n, self.params.p
        b = NetworkBuilder(["ring"])
        b.add_routers(n, radix=self.params.radix or p + 2)
        for r in range(n):
            b.attach_nodes(r, p)
        up = np.arange(n)
        b.add_links(up, (up + 1) % n, "ring")
        return b.build(info={"n": n, "p": p, "diameter": n // 2})

    def minimal_routes(self, network: Network) -> RouteTables:
        n = network.n_routers
        pt = network.ports
        # the two cable ports of every router: towards r + 1 ("up") and towards r - 1 ("down")
        cable = np.nonzero(pt.port_link >= 0)[0]
        owner = pt.port_router[cable]
        goes_up = pt.port_router[pt.port_peer[cable]] == (owner + 1) % n
        up = np.empty(n, dtype=np.int32)
        down = np.empty(n, dtype=np.int32)
        up[owner[goes_up]] = cable[goes_up]
        down[owner[~goes_up]] = cable[~goes_up]
        # gnext[r, d]: the port router r sends a packet for router d through (-1 when r == d)
        r = np.arange(n)[:, None]
        ahead = (np.arange(n)[None, :] - r) % n  # hops from r to d going up
        go_up = (2 * ahead < n) | ((2 * ahead == n) & (2 * r < n))
        gnext = np.where(go_up, up[r], down[r]).astype(np.int32)
        gnext[ahead == 0] = -1
        # VC rule: one "dimension", dateline on the cable n-1 <-> 0 in both directions
        port_dim = np.full(pt.n_ports, -1, dtype=np.int16)
        port_dim[cable] = 0
        dateline = np.zeros(pt.n_ports, dtype=np.uint8)
        dateline[[up[n - 1], down[0]]] = 1
        return RouteTables(
            gnext=gnext,
            lnext=np.full((n, 1), -1, dtype=np.int32),  # no groups: every router is its own
            router_group=np.arange(n, dtype=np.int32),
            router_local=np.zeros(n, dtype=np.int32),
            vcs_required=2,
            vc_mode=VC_DATELINE,
            port_dim=port_dim,
            port_dateline=dateline,
            description=f"shortest way round a {n}-router ring, dateline VCs (2)",
        )


@hookimpl
def federation_register_topologies(register) -> None:  # noqa: ANN001
    register(Ring)
