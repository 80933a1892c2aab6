"""Topology ``circulant``: the circulant graph C(n; c1, ..., ck) and the high-radix G(2^k, k).

Parameters (give either ``n`` and ``jumps`` or ``preset``):

* ``n``: number of switches (routers) ``v0 .. v(n-1)``;
* ``jumps``: the jump set; jump ``j`` (``1 <= j <= n/2``) links ``v_i`` to ``v_(i+j mod n)``
  and hence to ``v_(i-j mod n)``.  A jump of exactly ``n/2`` is its own inverse and gives a
  single link per switch pair, so the degree is ``2k`` or ``2k - 1`` with that jump;
* ``preset: {k: K}``: the high-radix circulant G(2^K, K) of Cui and Koibuchi (PDCAT'22; thesis
  §4.2): ``n = 2^K`` and jumps ``1, 2, 4, ..., n/2``, degree ``2K - 1``, diameter ``ceil(K/2)``;
* ``nodes_per_router``: hosts (compute nodes) per switch (the thesis uses 1);
* ``radix``: ports per switch, default degree + ``nodes_per_router``.

Wiring and numbering: router ``i`` is ``v_i``; cables are added jump by jump in the order the
jumps are given and, per jump, for ``i = 0 .. n-1`` the cable ``v_i -- v_(i+j)`` (for ``j = n/2``
only ``i < n/2``).  So at every router the cable ports come in jump order, and per jump the
``+j`` port precedes the ``-j`` port except at routers ``i < j`` (whose ``-j`` cable was added
first).  Nodes are router-major (``node = router * nodes_per_router + t``).  One link class,
``network``.

Routing: the default shortest-path tables (VC = hop index), so ``minimal`` needs ``diameter``
VCs, e.g. 5 for G(1024, 10): set ``router.vcs`` accordingly.  Among the shortest next hops the
tables pick by a fixed hash of the destination offset ``(d - r) mod n``, candidates ordered by
jump offset (:mod:`federation.network.routes`): destinations are spread over all equal-cost
jumps, and the tables are invariant under rotation, so every port of one jump carries the same
uniform-traffic load (G(1024, 10): busiest port 1.43 x the mean, against 1.38 if every flow
were split evenly over all shortest paths).
"""

from __future__ import annotations

from math import gcd
from typing import ClassVar

import numpy as np
from pydantic import Field, model_validator

from federation import LinkDefaults, Network, NetworkBuilder, Params, Topology, hookimpl
from federation.plugin.components import TopologySize


class HighRadixPreset(Params):
    """G(2^k, k): n = 2^k switches, jumps 1, 2, 4, ..., 2^(k-1) = n/2."""

    k: int = Field(ge=1, le=20, description="log2 of the number of switches (G(2^k, k))")


class CirculantParams(Params):
    n: int | None = Field(None, ge=2, description="number of switches (with 'jumps')")
    jumps: list[int] | None = Field(
        None, min_length=1,
        description="jump set c1 < ... < ck, each 1 <= c <= n/2 (with 'n')")
    preset: HighRadixPreset | None = Field(
        None, description="high-radix circulant G(2^k, k): {k: 10} gives G(1024, 10)")
    nodes_per_router: int = Field(1, ge=1, description="hosts (compute nodes) per switch")
    radix: int | None = Field(
        None, ge=1, description="ports per switch; default degree + nodes_per_router")

    @model_validator(mode="after")
    def _check(self) -> CirculantParams:
        if self.preset is not None:
            if self.n is not None or self.jumps is not None:
                raise ValueError("give either 'preset' or 'n' and 'jumps', not both")
        elif self.n is None or self.jumps is None:
            raise ValueError(
                "give 'n' and 'jumps' (e.g. n: 16, jumps: [1, 2, 4, 8]) or 'preset' "
                "(e.g. preset: {k: 10} for G(1024, 10))")
        n, jumps = self.size, self.jump_set
        if self.preset is None:
            if len(set(jumps)) != len(jumps):
                raise ValueError(f"jumps {jumps} contain a duplicate")
            bad = [j for j in jumps if not 1 <= j <= n // 2]
            if bad:
                raise ValueError(
                    f"jump {bad[0]} is outside 1..n/2 = 1..{n // 2} (jump j and n-j are the "
                    "same links; write the smaller one)")
            g = n
            for j in jumps:
                g = gcd(g, j)
            if g != 1:
                raise ValueError(
                    f"the circulant C({n}; {', '.join(map(str, jumps))}) is disconnected: n and "
                    f"all jumps share the factor {g}")
        if self.radix is not None and self.radix < self.degree + self.nodes_per_router:
            raise ValueError(
                f"radix {self.radix} is smaller than degree {self.degree} + "
                f"nodes_per_router {self.nodes_per_router}")
        return self

    @property
    def size(self) -> int:
        return 2 ** self.preset.k if self.preset is not None else int(self.n or 0)

    @property
    def jump_set(self) -> list[int]:
        if self.preset is not None:
            return [2**i for i in range(self.preset.k)]
        return list(self.jumps or [])

    @property
    def degree(self) -> int:
        n = self.size
        return sum(1 if 2 * j == n else 2 for j in self.jump_set)


def circulant_links(n: int, jumps: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Cable endpoints of C(n; jumps) in the documented order."""
    src, dst = [], []
    for j in jumps:
        m = n // 2 if 2 * j == n else n
        i = np.arange(m, dtype=np.int64)
        src.append(i)
        dst.append((i + j) % n)
    return np.concatenate(src), np.concatenate(dst)


class Circulant(Topology):
    """Circulant C(n; jumps) or high-radix G(2^k, k); shortest-path routing, VC = hop index."""

    name = "circulant"
    Params = CirculantParams
    link_defaults: ClassVar[dict[str, LinkDefaults]] = {
        "terminal": LinkDefaults(),
        "network": LinkDefaults(),
    }
    params: CirculantParams

    def build(self) -> Network:
        p = self.params
        n, jumps = p.size, p.jump_set
        radix = p.radix if p.radix is not None else p.degree + p.nodes_per_router
        b = NetworkBuilder(["network"])
        b.add_routers(n, radix=radix)
        for r in range(n):
            b.attach_nodes(r, p.nodes_per_router)
        src, dst = circulant_links(n, jumps)
        b.add_links(src, dst, "network")
        name = (f"G({n},{len(jumps)})" if p.preset is not None
                else f"C({n}; {', '.join(map(str, jumps))})")
        return b.build(
            coords={"index": np.arange(n, dtype=np.int32)},
            info={"graph": name, "n": n, "jumps": jumps, "degree": p.degree,
                  "nodes_per_router": p.nodes_per_router},
        )

    def size(self) -> TopologySize:
        """``n`` routers and ``n`` cables per jump (``n/2`` for the jump ``n/2``), as
        :func:`circulant_links` lays them; O(number of jumps)."""
        p = self.params
        n = p.size
        cables = sum(n // 2 if 2 * j == n else n for j in p.jump_set)
        return TopologySize(routers=n, nodes=n * p.nodes_per_router, cables=cables, groups=n)


@hookimpl
def federation_register_topologies(register) -> None:  # noqa: ANN001
    register(Circulant)
