"""Topology ``random_shortcut``: a ring plus random shortcut links (Koibuchi et al., ISCA 2012).

Construction (Cui's thesis §3.1: "add links randomly by picking two nodes among the possible
nodes that have lower links than the network degree ... all the vertices have the same degree as
possible"):

1. the ring ``v_i -- v_(i+1 mod n)`` (link class ``ring``);
2. every switch gets ``degree - 2`` free *stubs*; the stubs are shuffled with a generator seeded
   by ``seed`` and paired off; a pair is kept as a shortcut (class ``shortcut``) unless it is a
   self-loop or duplicates an existing link, in which case both stubs go back to the pool, which
   is reshuffled (vectorised rounds, so 8,192 switches take well under a second);
3. stub pairs that still cannot be joined (e.g. the last two sit on adjacent switches) are
   placed by an edge swap: a shortcut ``x -- y``, drawn among all those with ``x`` not adjacent
   to ``u`` and ``y`` not adjacent to ``v``, becomes ``u -- x`` and ``v -- y``, which keeps
   every other degree unchanged;
4. a switch that remains short of ``degree`` (always the case for one switch when
   ``n * (degree - 2)`` is odd) is reported in ``Network.info["short_vertices"]`` as a list of
   ``[switch, missing links]`` pairs (empty when every switch has exactly ``degree`` links).  No
   warning is printed; read the field.

So degrees differ by at most one, and the same ``seed`` always gives the same graph.

Parameters: ``n`` switches, ``degree`` links per switch (ring included: ``degree = 19`` is 2 ring
links plus 17 shortcuts), ``seed`` (default 1), ``nodes_per_router`` hosts per switch, ``radix``
(default ``degree + nodes_per_router``).  Router ``i`` is ``v_i``; nodes are router-major.

Routing: the default shortest-path tables (VC = hop index), so ``minimal`` needs ``diameter``
VCs (4 for the thesis' 1,024-switch degree-19 network; the exact value depends on the seed and
is in the routing description).  Equal-cost next hops are chosen by a fixed hash of the
destination (see :mod:`federation.network.routes`), which spreads the destinations of a switch
over all its shortest-path neighbours: on the shipped 1,024-switch graph the busiest shortcut
carries 1.39 x the mean uniform load (2.17 x with the former lowest-port rule; 1.24 x if every
flow were split evenly over all shortest paths).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from pydantic import Field, model_validator

from federation import LinkDefaults, Network, NetworkBuilder, Params, Topology, hookimpl
from federation.plugin.components import TopologySize


class RandomShortcutParams(Params):
    n: int = Field(ge=3, description="number of switches on the ring")
    degree: int = Field(ge=2, description="links per switch, ring links included")
    seed: int = Field(1, ge=0, description="seed of the shortcut generator")
    nodes_per_router: int = Field(1, ge=1, description="hosts (compute nodes) per switch")
    radix: int | None = Field(
        None, ge=1, description="ports per switch; default degree + nodes_per_router")

    @model_validator(mode="after")
    def _check(self) -> RandomShortcutParams:
        if self.degree > self.n - 1:
            raise ValueError(
                f"degree {self.degree} needs at least degree + 1 = {self.degree + 1} switches "
                f"(a switch has at most n - 1 = {self.n - 1} distinct neighbours)")
        if self.radix is not None and self.radix < self.degree + self.nodes_per_router:
            raise ValueError(
                f"radix {self.radix} is smaller than degree {self.degree} + "
                f"nodes_per_router {self.nodes_per_router}")
        return self


def shortcut_links(n: int, degree: int, seed: int) -> tuple[np.ndarray, np.ndarray, list]:
    """Shortcut endpoints (``a < b`` per link) and the ``[switch, missing]`` list of short ones."""
    rng = np.random.default_rng(seed)
    if degree <= 2:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), []
    ring = np.arange(n, dtype=np.int64)
    ring_keys = np.minimum(ring, (ring + 1) % n) * n + np.maximum(ring, (ring + 1) % n)
    taken = np.unique(ring_keys)  # sorted keys a*n+b, a<b, of existing links
    pool = np.repeat(np.arange(n, dtype=np.int64), degree - 2)
    chosen: list[np.ndarray] = []
    stale = 0
    while pool.size >= 2 and stale < 8:
        rng.shuffle(pool)
        m = pool.size // 2
        a, b = pool[0:2 * m:2], pool[1:2 * m:2]
        lo, hi = np.minimum(a, b), np.maximum(a, b)
        keys = lo * n + hi
        ok = lo != hi
        pos = np.searchsorted(taken, keys)
        pos[pos >= taken.size] = 0
        ok &= taken[pos] != keys
        # keep the first occurrence of a key within this round
        _, first = np.unique(keys, return_index=True)
        once = np.zeros(m, dtype=bool)
        once[first] = True
        ok &= once
        if ok.any():
            stale = 0
            new = keys[ok]
            chosen.append(new)
            taken = np.union1d(taken, new)
        else:
            stale += 1
        rest = np.concatenate([a[~ok], b[~ok]])
        pool = np.concatenate([rest, pool[2 * m:]])
    keys = np.concatenate(chosen) if chosen else np.zeros(0, np.int64)
    sc = keys.copy()  # shortcut keys a*n+b (a < b)
    left = pool.tolist()
    rng.shuffle(left)
    short: dict[int, int] = {}
    while len(left) >= 2:
        u, v = left.pop(), left.pop()
        sc, ok = _place(sc, u, v, n, rng)
        if not ok:
            short[u] = short.get(u, 0) + 1
            short[v] = short.get(v, 0) + 1
    for u in left:
        short[u] = short.get(u, 0) + 1
    return sc // n, sc % n, [[k, short[k]] for k in sorted(short)]


def _place(sc: np.ndarray, u: int, v: int, n: int,
           rng: np.random.Generator) -> tuple[np.ndarray, bool]:
    """Give ``u`` and ``v`` one more link each (``u == v``: two more for ``u``).

    Directly when ``u -- v`` is allowed, else by an edge swap: a shortcut ``x -- y`` with ``x``
    not adjacent to ``u`` and ``y`` not adjacent to ``v`` becomes ``u -- x`` and ``v -- y``
    (chosen at random among all such shortcuts).  Returns the new shortcut keys and success.
    """
    a, b = sc // n, sc % n

    def banned(w: int) -> np.ndarray:
        m = np.zeros(n, dtype=bool)
        m[w] = m[(w + 1) % n] = m[(w - 1) % n] = True
        m[b[a == w]] = True
        m[a[b == w]] = True
        return m

    nu = banned(u)
    if u != v and not nu[v]:
        return np.append(sc, min(u, v) * n + max(u, v)), True
    nv = banned(v)
    nu[v] = nv[u] = True
    fwd = ~nu[a] & ~nv[b]  # u -- a, v -- b
    rev = ~nu[b] & ~nv[a]  # u -- b, v -- a
    cand = np.nonzero(fwd | rev)[0]
    if cand.size == 0:
        return sc, False
    i = int(cand[rng.integers(cand.size)])
    x, y = (int(a[i]), int(b[i])) if fwd[i] else (int(b[i]), int(a[i]))
    new = np.array([min(u, x) * n + max(u, x), min(v, y) * n + max(v, y)], dtype=np.int64)
    return np.concatenate([np.delete(sc, i), new]), True


class RandomShortcut(Topology):
    """Ring plus seeded random shortcuts to a uniform degree; shortest-path routing."""

    name = "random_shortcut"
    Params = RandomShortcutParams
    link_defaults: ClassVar[dict[str, LinkDefaults]] = {
        "terminal": LinkDefaults(),
        "ring": LinkDefaults(),
        "shortcut": LinkDefaults(),
    }
    params: RandomShortcutParams

    def build(self) -> Network:
        p = self.params
        n = p.n
        radix = p.radix if p.radix is not None else p.degree + p.nodes_per_router
        b = NetworkBuilder(["ring", "shortcut"])
        b.add_routers(n, radix=radix)
        for r in range(n):
            b.attach_nodes(r, p.nodes_per_router)
        ring = np.arange(n, dtype=np.int64)
        b.add_links(ring, (ring + 1) % n, "ring")
        a, c, short = shortcut_links(n, p.degree, p.seed)
        b.add_links(a, c, "shortcut")
        return b.build(
            coords={"index": np.arange(n, dtype=np.int32)},
            info={"n": n, "degree": p.degree, "seed": p.seed, "shortcuts": int(a.size),
                  "nodes_per_router": p.nodes_per_router, "short_vertices": short},
        )

    def size(self) -> TopologySize:
        """The ring's ``n`` cables plus one shortcut per pair of the ``n * (degree - 2)`` stubs.

        Counting the shortcuts exactly would mean running the seeded generator, i.e. allocating
        the stub pool; the stub count is known from the parameters.  It is exact whenever the
        generator pairs every stub but the odd one out, which it does unless ``degree = n - 1``
        asks for the complete graph: there the last pairs can find neither a direct link nor an
        edge swap, and ``cables`` is then an upper bound by at most a few cables (reported in
        ``Network.info["short_vertices"]``).  That is close enough for the memory estimate.
        """
        p = self.params
        n = p.n
        shortcuts = n * (p.degree - 2) // 2 if p.degree > 2 else 0
        return TopologySize(routers=n, nodes=n * p.nodes_per_router, cables=n + shortcuts,
                            groups=n)


@hookimpl
def federation_register_topologies(register) -> None:  # noqa: ANN001
    register(RandomShortcut)
