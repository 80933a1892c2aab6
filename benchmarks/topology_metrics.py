"""Benchmark of :func:`federation.network.metrics.topology_metrics` on 8,192-switch graphs.

Graphs (one node per switch):

* the high-radix circulant G(8192, 13): jumps 1, 2, 4, ..., 4096 (degree 25, diameter 7);
* a ring plus random shortcuts, 8,192 switches of degree 13 (seed 1).

Both come from the ``circulant`` and ``random_shortcut`` plugins when they are registered,
otherwise they are built here with :class:`~federation.network.NetworkBuilder`.  For each graph
it prints the build time, the metrics time (exact diameter and ASPL over all 67 million ordered
pairs) and the figures.  Target: a few seconds per graph.

``--check`` also runs SciPy's per-source search (``method="scipy"``, ~10 s per graph) and checks
that it gives identical figures; ``--extra`` adds a 64x128 2-D torus, a 13-cube and a ring of
8,192 (the long-diameter case, where the SciPy path is chosen).

    python benchmarks/topology_metrics.py [--check] [--extra] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable

import numpy as np

from federation.network import Network, NetworkBuilder
from federation.network.metrics import topology_metrics

N = 8192


def _plugin(kind: str, **params: object) -> Network | None:
    from federation.plugin.registry import get_plugins

    topos = get_plugins().topologies
    if kind not in topos.names():
        return None
    cls = topos.get(kind)
    return cls(cls.Params(**params)).build()


def _from_edges(n: int, src: np.ndarray, dst: np.ndarray, radix: int) -> Network:
    b = NetworkBuilder(["network"])
    b.add_routers(n, radix=radix)
    for r in range(n):
        b.attach_nodes(r, 1)
    b.add_links(src, dst, "network")
    return b.build()


def circulant() -> tuple[Network, str]:
    jumps = [2**i for i in range(13)]
    net = _plugin("circulant", n=N, jumps=jumps)
    if net is not None:
        return net, "circulant plugin"
    i = np.arange(N)
    src = np.concatenate([i if 2 * j != N else i[: N // 2] for j in jumps])
    dst = np.concatenate([(i + j) % N if 2 * j != N else i[: N // 2] + j for j in jumps])
    return _from_edges(N, src, dst, radix=2 * 13 - 1 + 1), "NetworkBuilder"


def random_shortcut() -> tuple[Network, str]:
    net = _plugin("random_shortcut", n=N, degree=13, seed=1)
    if net is not None:
        return net, "random_shortcut plugin"
    # ring plus a random perfect matching of the remaining stubs (self-loops and repeats
    # dropped: degrees 11..13, fine for a speed figure)
    rng = np.random.default_rng(1)
    i = np.arange(N)
    stubs = rng.permutation(np.repeat(i, 11))
    a, b = stubs[0::2], stubs[1::2]
    key = np.minimum(a, b) * N + np.maximum(a, b)
    _, first = np.unique(key, return_index=True)
    keep = np.zeros(a.size, bool)
    keep[first] = True
    keep &= (a != b) & (np.abs(a - b) != 1) & (np.abs(a - b) != N - 1)
    return _from_edges(N, np.concatenate([i, a[keep]]), np.concatenate([(i + 1) % N, b[keep]]),
                       radix=14), "NetworkBuilder"


def torus_2d() -> tuple[Network, str]:
    net = _plugin("torus", dims=[64, 128])
    if net is not None:
        return net, "torus plugin"
    r = np.arange(N)
    x, y = r % 64, r // 64
    src = np.concatenate([r, r])
    dst = np.concatenate([(x + 1) % 64 + 64 * y, x + 64 * ((y + 1) % 128)])
    return _from_edges(N, src, dst, radix=5), "NetworkBuilder"


def hypercube() -> tuple[Network, str]:
    net = _plugin("hypercube", n=13)
    if net is not None:
        return net, "hypercube plugin"
    r = np.arange(N)
    src = np.concatenate([r[(r >> k) & 1 == 0] for k in range(13)])
    dst = np.concatenate([r[(r >> k) & 1 == 0] | (1 << k) for k in range(13)])
    return _from_edges(N, src, dst, radix=14), "NetworkBuilder"


def ring() -> tuple[Network, str]:
    r = np.arange(N)
    return _from_edges(N, r, (r + 1) % N, radix=3), "NetworkBuilder"


def measure(name: str, make: Callable[[], tuple[Network, str]], check: bool) -> dict:
    t0 = time.perf_counter()
    net, how = make()
    t1 = time.perf_counter()
    m = topology_metrics(net)
    t2 = time.perf_counter()
    out = {
        "graph": name, "built_by": how, "routers": m.routers, "cables": m.cables,
        "degree": str(m.neighbours), "diameter": m.diameter, "aspl": m.aspl,
        "moore_aspl": m.moore_aspl, "build_s": t1 - t0, "metrics_s": t2 - t1,
    }
    if check:
        t3 = time.perf_counter()
        ref = topology_metrics(net, method="scipy")
        out["scipy_s"] = time.perf_counter() - t3
        assert ref == m, f"{name}: SciPy path disagrees"
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare with SciPy's search (slow)")
    ap.add_argument("--extra", action="store_true", help="also torus, hypercube, ring")
    ap.add_argument("--json", action="store_true", help="JSON lines instead of a table")
    args = ap.parse_args(argv)
    graphs = [("G(8192,13) circulant", circulant), ("random shortcut d13", random_shortcut)]
    if args.extra:
        graphs += [("2-D torus 64x128", torus_2d), ("13-cube", hypercube), ("ring 8192", ring)]
    if not args.json:
        print(f"{'graph':<22} {'built by':<23} {'cables':>7} {'degree':>7} {'diam':>5} "
              f"{'ASPL':>9} {'Moore':>7} {'build s':>8} {'metrics s':>10}"
              + (f" {'scipy s':>8}" if args.check else ""))
    for name, make in graphs:
        r = measure(name, make, args.check)
        if args.json:
            print(json.dumps(r))
        else:
            print(f"{r['graph']:<22} {r['built_by']:<23} {r['cables']:>7} {r['degree']:>7} "
                  f"{r['diameter']:>5} {r['aspl']:>9.5f} {r['moore_aspl']:>7.4f} "
                  f"{r['build_s']:>8.2f} {r['metrics_s']:>10.2f}"
                  + (f" {r['scipy_s']:>8.2f}" if args.check else ""))
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
