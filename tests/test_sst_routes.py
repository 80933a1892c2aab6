"""Route packets through generated SST configurations with merlin's own routing rules.

For every pair of routers, a packet is walked hop by hop over the links recorded by the fake
``sst`` module, each router choosing its output port the way merlin's topology subcomponent does
(minimal routing of dragonfly.cc, dimension order of torus.cc, deterministic up/down of
fattree.cc, re-stated here from those sources).  It must reach the destination endpoint's host
port along a minimal path: merlin on the generated configuration then runs the machine we
built.  On tori and fat trees the hop count equals our network's shortest path; on dragonflies
every path is [local] global [local] (merlin and we may pick different parallel global links,
so whether a local hop is needed can differ).
"""

from __future__ import annotations

from math import prod
from pathlib import Path

import numpy as np
import pytest
from test_sst_adapter import FakeSst, execute, generate, rid


def hops_ours(net) -> np.ndarray:  # noqa: ANN001
    """Router-to-router shortest path lengths of our network (BFS)."""
    from scipy.sparse.csgraph import shortest_path

    return shortest_path(net.adjacency, unweighted=True).astype(int)


def walk(fake: FakeSst, src: int, dst_node: int, choose,  # noqa: ANN001
         classes: list[str] | None = None) -> tuple[int, str]:
    """Follow ``choose(router, src_router, dst_node) -> port`` from ``src`` until a host port;
    returns (router hops, endpoint reached); ``classes`` collects each cable's class."""
    r, hops = src, 0
    for _ in range(64):
        port = f"port{choose(r, src, dst_node)}"
        comp, _, _ = fake.peer(f"rtr{r}", port)
        if not comp.startswith("rtr"):
            return hops, comp
        if classes is not None:
            classes.append(fake.ports[(f"rtr{r}", port)].name.rsplit("_", 1)[0])
        r, hops = rid(comp), hops + 1
    raise AssertionError("routing loop")


def dragonfly_router(fake: FakeSst):  # noqa: ANN201
    t = fake.components["rtr0"].subs["topology"].params
    p, a, h, g = t["hosts_per_router"], t["routers_per_group"], t["intergroup_per_router"], \
        t["num_groups"]
    n, mode, glm = t["intergroup_links"], t["global_route_mode"], t["global_link_map"]
    gstart = p + a - 1
    data = {}
    for i, v in enumerate(glm):  # RouteToGroup::init_write
        if v >= 0:
            data[(v % (g - 1)) * n + v // (g - 1)] = (i // h, i % h + gstart)

    def port_for_router(me: int, other: int) -> int:
        return p + (other - 1 if other > me else other)

    def choose(r: int, src: int, d: int) -> int:
        grp, idx = divmod(r, a)
        dr = d // p
        dgrp, didx = divmod(dr, a)
        if dr == r:
            return d % p
        if dgrp == grp:
            return port_for_router(idx, didx)
        rank = (dgrp - 1 if dgrp > grp else dgrp) if mode == "absolute" else \
            (dgrp - grp - 1) % g
        slice_ = (src * p) % n  # global_slice = trusted source endpoint mod n
        router, port = data[rank * n + slice_]
        return port if router == idx else port_for_router(idx, router)

    return choose


@pytest.mark.parametrize("machine", ["quickstart-dragonfly.yaml", "codes-dragonfly.yaml",
                                     "manynode-dragonfly-5x18.yaml"])
def test_dragonfly_minimal_routes(machine: str, tmp_path: Path,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    point, cfg = generate(tmp_path, machine)
    fake = execute(cfg.text, monkeypatch)
    from federation.pipeline.build import build_network

    net = build_network(point)
    choose = dragonfly_router(fake)
    pr = point.machine.topology.params
    p, a = pr.p, pr.a
    for s in range(net.n_routers):
        for d in range(net.n_routers):
            node = d * p + (s % p)
            path: list[str] = []
            hops, comp = walk(fake, s, node, choose, path)
            assert comp == f"nic{node}:networkIF", (s, d)
            # minimal dragonfly path: [local] global [local], or one local hop inside a group
            want = [] if s == d else ["local"] if s // a == d // a else None
            if want is not None:
                assert path == want, (s, d, path)
            else:
                assert path.count("global") == 1 and len(path) <= 3, (s, d, path)
                g_at = path.index("global")
                assert g_at <= 1 and len(path) - g_at - 1 <= 1, (s, d, path)


def test_torus_dimension_order_routes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for machine in ("manynode-torus-5x5x4.yaml",
                    {"topology": {"kind": "torus", "dims": [4, 3, 2], "parallel": [1, 2, 2],
                                  "nodes_per_router": 2}, "router": {"vcs": 2}}):
        point, cfg = generate(tmp_path, machine)
        fake = execute(cfg.text, monkeypatch)
        t = fake.components["rtr0"].subs["topology"].params
        dims = [int(x) for x in t["shape"].split("x")]
        width = [int(x) for x in t["width"].split("x")]
        npr = t["local_ports"]
        start = np.concatenate([[0], np.cumsum([2 * w for w in width])])
        strides = [prod(dims[:i]) for i in range(len(dims))]

        def choose(r: int, src: int, d: int, dims=dims, width=width, npr=npr, start=start,
                   strides=strides) -> int:
            dr = d // npr
            if dr == r:
                return int(start[-1]) + d % npr
            for i, k in enumerate(dims):  # topo_torus::route_packet
                me, to = (r // strides[i]) % k, (dr // strides[i]) % k
                if me != to:
                    neg, pos = (me - to) % k, (to - me) % k
                    go_pos = pos <= neg
                    dist = pos if go_pos else neg
                    return int(start[i]) + (0 if go_pos else width[i]) + (
                        dist % width[i] if width[i] > 1 else 0)
            raise AssertionError

        from federation.pipeline.build import build_network

        dist = hops_ours(build_network(point))
        R = prod(dims)
        for s in range(R):
            for d in range(R):
                hops, comp = walk(fake, s, d * npr, choose)
                assert comp == f"nic{d * npr}:networkIF" and hops == dist[s, d], (s, d)


@pytest.mark.parametrize("topology", [
    {"kind": "fattree", "k": 4, "n": 3},
    {"kind": "fattree", "k": 3, "n": 3, "up": 2},
    {"kind": "fattree", "switch_radix": 8, "nodes_per_leaf": 4, "leaves": 4, "spine_up": 0},
])
def test_fattree_up_down_routes(topology: dict, tmp_path: Path,
                                monkeypatch: pytest.MonkeyPatch) -> None:
    point, cfg = generate(tmp_path, {"topology": topology})
    fake = execute(cfg.text, monkeypatch)
    shape = fake.components["rtr0"].subs["topology"].params["shape"].split(":")
    downs = [int(x.split(",")[0]) for x in shape]
    ups = [int(x.split(",")[1]) for x in shape[:-1]]
    per = [prod(downs) // downs[0]]
    for lvl in range(1, len(downs)):
        per.append(per[-1] * ups[lvl - 1] // downs[lvl])
    first = [sum(per[:i]) for i in range(len(per))]

    def choose(r: int, src: int, d: int) -> int:  # topo_fattree::route_deterministic
        lvl = max(i for i in range(len(per)) if first[i] <= r)
        lid = r - first[lvl]
        group = lid // prod(ups[:lvl])
        rid_span = prod(downs[:lvl + 1])
        low = group * rid_span
        factor = rid_span // downs[lvl]
        if low <= d < low + rid_span:
            return (d - low) // factor
        return downs[lvl] + (d // factor) % ups[lvl]

    from federation.pipeline.build import build_network

    net = build_network(point)
    leaves = per[0]
    dist = hops_ours(net)
    # our leaves are merlin's leaves (same ids); BFS distance between leaves is the up/down one
    seen = []
    for s in range(leaves):
        for d in range(leaves):
            node = d * downs[0] + s % downs[0]
            hops, comp = walk(fake, s, node, choose)
            assert comp == f"nic{node}:networkIF" and hops == dist[s, d], (s, d)
            seen.append(hops)
    assert max(seen) == 2 * (len(downs) - 1)
