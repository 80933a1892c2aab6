"""SST configuration generation: every shipped dragonfly, torus and fat tree, checked by running
the generated ``.py`` under a fake ``sst`` module that records components, parameters and links.

The checks do not reuse the adapter's port arithmetic: they re-apply merlin's own routing rules
(which port reaches which router, read from dragonfly.cc / torus.cc / fattree.cc of sst-elements
16.0) to the recorded links, and compare every parameter with figures written out by hand from
the machine files.  No SST is needed.
"""

from __future__ import annotations

import sys
import types
from math import prod
from pathlib import Path

import pytest
import yaml

from federation.errors import ConfigError

REPO = Path(__file__).resolve().parent.parent
MACHINES = REPO / "schemas" / "machines"


# --------------------------------------------------------------------------- fake sst


class FakeComponent:
    def __init__(self, model: FakeSst, name: str, type_: str) -> None:
        self.name, self.type, self.params, self.subs, self.stats = name, type_, {}, {}, {}
        self.model = model

    def addParams(self, params: dict) -> None:  # noqa: N802 - sst's API
        for k, v in params.items():
            self.addParam(k, v)

    def addParam(self, key: str, value: object) -> None:  # noqa: N802
        assert key not in self.params or self.params[key] == value, (self.name, key)
        self.params[key] = value

    def setSubComponent(self, slot: str, type_: str, num: int = 0) -> FakeComponent:  # noqa: N802
        assert slot not in self.subs, (self.name, slot)
        sub = FakeComponent(self.model, f"{self.name}:{slot}", type_)
        self.subs[slot] = sub
        return sub

    def enableStatistics(self, names: list, params: dict) -> None:  # noqa: N802
        for n in names:
            self.stats[n] = dict(params)


class FakeLink:
    def __init__(self, model: FakeSst, name: str) -> None:
        assert name not in model.link_names, name
        model.link_names.add(name)
        self.name, self.ends = name, None
        model.links.append(self)
        self.model = model

    def connect(self, a: tuple, b: tuple) -> None:
        assert self.ends is None
        for comp, port, _lat in (a, b):
            key = (comp.name, port)
            assert key not in self.model.ports, f"port used twice: {key}"
            self.model.ports[key] = self
        self.ends = (a, b)


class FakeSst:
    """What a configuration did to the ``sst`` module."""

    def __init__(self) -> None:
        self.components: dict[str, FakeComponent] = {}
        self.links: list[FakeLink] = []
        self.link_names: set[str] = set()
        self.ports: dict[tuple[str, str], FakeLink] = {}
        self.calls: list[tuple] = []

    def module(self) -> types.ModuleType:
        m = types.ModuleType("sst")

        def component(name: str, type_: str) -> FakeComponent:
            assert name not in self.components, name
            c = FakeComponent(self, name, type_)
            self.components[name] = c
            return c

        m.Component = component
        m.Link = lambda name: FakeLink(self, name)
        for fn in ("setStatisticLoadLevel", "setStatisticOutput",
                   "enableStatisticForComponentType"):
            m.__dict__[fn] = (lambda f: lambda *a: self.calls.append((f, *a)))(fn)
        return m

    def peer(self, comp: str, port: str) -> tuple[str, str, str]:
        """(component, port, latency) at the other end of ``comp``'s ``port``."""
        link = self.ports[(comp, port)]
        a, b = link.ends
        other = b if (a[0].name, a[1]) == (comp, port) else a
        return other[0].name, other[1], other[2]

    def of_type(self, type_: str) -> list[FakeComponent]:
        return [c for c in self.components.values() if c.type == type_]


def execute(text: str, monkeypatch: pytest.MonkeyPatch) -> FakeSst:
    fake = FakeSst()
    monkeypatch.setitem(sys.modules, "sst", fake.module())
    exec(compile(text, "config.py", "exec"), {"__name__": "__main__"})  # noqa: S102
    return fake


# --------------------------------------------------------------------------- helpers


def point_for(tmp_path: Path, machine: str | dict, **exp: object):
    from federation.pipeline.load import load_experiment

    doc = {"machine": str(MACHINES / machine) if isinstance(machine, str) else machine,
           "engine": {"kind": "sst"}, "stop": {"warmup": "1us", "measure": "3us"},
           "workload": {"kind": "synthetic", "load": 0.3}, **exp}
    path = tmp_path / "e.yaml"
    path.write_text(yaml.safe_dump(doc))
    return load_experiment(path).points[0]


def generate(tmp_path: Path, machine: str | dict, **exp: object):
    from federation.adapters.sst import build_config
    from federation.pipeline.build import build_network

    point = point_for(tmp_path, machine, **exp)
    return point, build_config(point, build_network(point), point.engine.params)


def rid(name: str) -> int:
    return int(name.removeprefix("rtr").split(":")[0])


def check_common(fake: FakeSst, nodes: int, routers: int, *, nic_bw: str, load: float,
                 packet: str, terminal_lat: str, warmup_ps: int, measure_ps: int) -> None:
    """Endpoints, NICs and statistics: the parts every configuration shares."""
    eps = fake.of_type("merlin.offered_load")
    assert len(eps) == nodes and len(fake.of_type("merlin.hr_router")) == routers
    for ep in eps:
        assert ep.params == {"offered_load": load, "num_peers": nodes, "link_bw": nic_bw,
                             "message_size": packet, "pattern": "merlin.targetgen.uniform",
                             "warmup_time": f"{warmup_ps}ps", "collect_time": f"{measure_ps}ps"}
        nic = ep.subs["networkIF"]
        assert nic.type == "merlin.linkcontrol" and nic.params["link_bw"] == nic_bw
        # endpoint id = node: the router port it hangs on is the one merlin gives that node
        comp, port, lat = fake.peer(nic.name, "rtr_port")
        assert lat == terminal_lat and fake.components[comp].type == "merlin.hr_router"
    assert ("setStatisticLoadLevel", 1) in fake.calls
    assert ("setStatisticOutput", "sst.statOutputCSV",
            {"filepath": "stats.csv", "separator": ", "}) in fake.calls
    # enabled by component type: sst 16.0 kept only node 0's when enabled on each linkcontrol
    stats = {(c[1], c[2]): c[3] for c in fake.calls if c[0] == "enableStatisticForComponentType"}
    assert set(stats) == {("merlin.hr_router", "send_bit_count"),
                          ("merlin.hr_router", "send_packet_count"),
                          ("merlin.linkcontrol", "send_bit_count"),
                          ("merlin.linkcontrol", "packet_latency")}
    for params in stats.values():
        assert params["startat"] == f"{warmup_ps}ps"
        assert params["stopat"] == f"{warmup_ps + measure_ps}ps"


# --------------------------------------------------------------------------- dragonfly

#: the shipped dragonflies with every figure written out from their files (CODES defaults
#: where a file leaves them: terminal/local 5.25 GiB/s, global 4.7 GiB/s, 10/30/100 ns, 8/8/16 KiB)
DRAGONFLIES = {
    "quickstart-dragonfly.yaml": dict(p=2, a=4, h=2, g=9, m=1, mode="absolute", delay=50000,
                                      packet=512, bw=("5637144576", "5637144576", "5046586572.8"),
                                      lat=(10000, 30000, 100000), buf=(8192, 8192, 16384)),
    # its file sets 1/10/100 ns (CODES' figures) instead of the 10/30/100 ns defaults
    "codes-dragonfly.yaml": dict(p=4, a=8, h=4, g=33, m=1, mode="absolute", delay=50000,
                                 packet=512, bw=("5637144576", "5637144576", "5046586572.8"),
                                 lat=(1000, 10000, 100000), buf=(8192, 8192, 16384)),
}


def dragonfly_figures(machine: str) -> dict:
    """The figures of any shipped dragonfly from its resolved links (used for the larger ones;
    the two above are also written out by hand)."""
    from federation.pipeline.build import resolve_links
    from federation.pipeline.load import load_machine

    m = load_machine(MACHINES / machine)
    net = m.topology.build()
    links = resolve_links(m.machine, m.topology, net, "x")
    pr = m.topology.params

    def num(x: float) -> str:
        return str(int(x)) if float(x).is_integer() else repr(float(x))

    return dict(p=pr.p, a=pr.a, h=pr.h, g=pr.groups, m=net.info["links_per_pair"],
                mode="absolute" if pr.arrangement == "absolute" else "relative",
                delay=round(m.machine.router.delay * 1e12), packet=int(m.machine.packet_size),
                bw=tuple(num(links[c].bandwidth) for c in ("terminal", "local", "global")),
                lat=tuple(round(links[c].latency * 1e12) for c in ("terminal", "local", "global")),
                buf=tuple(int(links[c].buffer) for c in ("terminal", "local", "global")))


SHIPPED_DRAGONFLIES = ["quickstart-dragonfly.yaml", "codes-dragonfly.yaml",
                       "manynode-dragonfly-5x18.yaml", "thesis-dragonfly-64x16.yaml",
                       "megafly-qos-dragonfly.yaml"]


@pytest.mark.parametrize("machine", SHIPPED_DRAGONFLIES)
def test_shipped_dragonfly(machine: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    f = dragonfly_figures(machine)
    if machine in DRAGONFLIES:
        assert f == DRAGONFLIES[machine]  # the resolution agrees with the hand-written figures
    _, cfg = generate(tmp_path, machine)
    fake = execute(cfg.text, monkeypatch)
    p, a, h, g, m = f["p"], f["a"], f["h"], f["g"], f["m"]
    routers = fake.of_type("merlin.hr_router")
    check_common(fake, g * a * p, g * a, nic_bw=f"{f['bw'][0]}B/s", load=0.3,
                 packet=f"{f['packet']}B", terminal_lat=f"{f['lat'][0]}ps",
                 warmup_ps=10**6, measure_ps=3 * 10**6)
    for rtr in routers:
        r = rid(rtr.name)
        assert rtr.params == {
            "id": r, "num_ports": p + a - 1 + h, "num_vns": 1, "flit_size": f"{f['packet']}B",
            "link_bw": f"{max(f['bw'], key=float)}B/s",
            "xbar_bw": f"{max(f['bw'], key=float)}B/s",
            "link_bw:host": f"{f['bw'][0]}B/s", "link_bw:group": f"{f['bw'][1]}B/s",
            "link_bw:global": f"{f['bw'][2]}B/s",
            "input_buf_size": f"{f['buf'][0]}B", "input_buf_size:host": f"{f['buf'][0]}B",
            "input_buf_size:group": f"{f['buf'][1]}B", "input_buf_size:global": f"{f['buf'][2]}B",
            "output_buf_size": f"{f['packet']}B", "input_latency": f"{f['delay']}ps",
            "output_latency": "0ps"}
        topo = rtr.subs["topology"]
        assert topo.type == "merlin.dragonfly"
        expect = {"hosts_per_router": p, "routers_per_group": a, "intergroup_per_router": h,
                  "intergroup_links": m, "intragroup_links": 1, "num_groups": g,
                  "algorithm": "minimal", "global_route_mode": f["mode"]}
        if r == 0:
            glm = topo.params.pop("global_link_map")
        assert topo.params == expect
    check_dragonfly_wiring(fake, glm, p, a, h, g, m, f["mode"], f["lat"])


def check_dragonfly_wiring(fake: FakeSst, glm: list[int], p: int, a: int, h: int, g: int,
                           m: int, mode: str, lat: tuple[int, int, int]) -> None:
    """merlin's dragonfly rules (dragonfly.cc) applied to the recorded links."""
    assert len(glm) == a * h and sorted(v for v in glm if v >= 0) == list(range(m * (g - 1)))
    n_links = {"host": 0, "local": 0, "global": 0}
    for r in range(g * a):
        grp, idx = divmod(r, a)
        for port in range(p + a - 1 + h):
            name = f"port{port}"
            if (f"rtr{r}", name) not in fake.ports:
                assert port >= p + a - 1 and glm[idx * h + port - (p + a - 1)] == -1
                continue
            comp, other, latency = fake.peer(f"rtr{r}", name)
            if port < p:  # host port t carries endpoint r*p + t (getEndpointID)
                assert comp == f"nic{r * p + port}:networkIF" and latency == f"{lat[0]}ps"
                n_links["host"] += 1
            elif port < p + a - 1:  # port_for_router: router j on p + j (j < idx) or p + j - 1
                j = port - p + (port - p >= idx)
                assert rid(comp) == grp * a + j and latency == f"{lat[1]}ps"
                n_links["local"] += 1
            else:
                v = glm[idx * h + port - (p + a - 1)]
                assert v >= 0, (r, port)
                rank = v % (g - 1)
                target = rank + (rank >= grp) if mode == "absolute" else (grp + rank + 1) % g
                assert rid(comp) // a == target and latency == f"{lat[2]}ps"
                n_links["global"] += 1
    assert n_links == {"host": g * a * p, "local": g * a * (a - 1), "global": m * g * (g - 1)}


def test_dragonfly_arrangements_and_routings(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """relative and circulant arrangements (merlin 'relative' with our map), several links
    per pair with spare ports, valiant (3 VCs) and ugal with merlin's fixed bias."""
    for arrangement in ("relative", "circulant", "absolute"):
        machine = {"topology": {"kind": "dragonfly", "p": 2, "a": 4, "h": 3, "g": 6,
                                "arrangement": arrangement}}
        for routing in ({"algorithm": "valiant"}, {"algorithm": "ugal", "bias": "25600B"}):
            _, cfg = generate(tmp_path, machine, routing=routing)
            fake = execute(cfg.text, monkeypatch)
            r0 = fake.components["rtr0"].subs["topology"].params
            assert r0["algorithm"] == routing["algorithm"]
            assert r0["intergroup_links"] == 2 and r0["intergroup_per_router"] == 3
            assert r0["global_route_mode"] == ("absolute" if arrangement == "absolute"
                                               else "relative")
            rtr = fake.components["rtr0"].params
            assert rtr.get("oql_track_remote") == ("true" if routing["algorithm"] == "ugal"
                                                   else None)
            check_dragonfly_wiring(fake, r0["global_link_map"], 2, 4, 3, 6, 2, r0[
                "global_route_mode"], (10000, 30000, 100000))
            assert r0["global_link_map"].count(-1) == 2  # 12 ports, 10 used: 2 spare


# --------------------------------------------------------------------------- torus


@pytest.mark.parametrize("machine,dims,width,npr,bw,lat", [
    ("manynode-torus-5x5x4.yaml", [5, 5, 4], [4, 4, 4], 24, "12500000000", 90000),
    # the Blue Gene tori are refused (terminal and torus links differ: test_refusals); their
    # shape with the default figures (5.25 GiB/s, 10 ns) everywhere
    ({"topology": {"kind": "torus", "dims": [8, 4, 4, 4, 2], "parallel": [1, 1, 1, 1, 2]},
      "router": {"vcs": 2}}, [8, 4, 4, 4, 2], [1, 1, 1, 1, 2], 1, "5637144576", 10000),
])
def test_torus(machine: str | dict, dims: list, width: list, npr: int, bw: str, lat: int,
               tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _, cfg = generate(tmp_path, machine)
    terminal = lat
    fake = execute(cfg.text, monkeypatch)
    R = prod(dims)
    ports = 2 * sum(width) + npr
    check_common(fake, R * npr, R, nic_bw=f"{bw}B/s", load=0.3, packet="512B",
                 terminal_lat=f"{terminal}ps", warmup_ps=10**6, measure_ps=3 * 10**6)
    strides = [prod(dims[:d]) for d in range(len(dims))]
    cables = 0
    for rtr in fake.of_type("merlin.hr_router"):
        r = rid(rtr.name)
        assert rtr.params["num_ports"] == ports and rtr.params["id"] == r
        assert rtr.params["link_bw"] == f"{bw}B/s" and rtr.params["xbar_bw"] == f"{bw}B/s"
        assert rtr.params["flit_size"] == "512B" and rtr.params["num_vns"] == 1
        assert rtr.params["input_latency"] == "50000ps"
        assert rtr.subs["topology"].type == "merlin.torus"
        assert rtr.subs["topology"].params == {"shape": "x".join(map(str, dims)),
                                               "width": "x".join(map(str, width)),
                                               "local_ports": npr}
        coord = [(r // s) % k for s, k in zip(strides, dims, strict=True)]
        start = 0
        for d, (k, w) in enumerate(zip(dims, width, strict=True)):
            for direction, step in ((0, 1), (1, -1)):
                for lane in range(w):
                    key = (f"rtr{r}", f"port{start + direction * w + lane}")
                    if k == 2 and direction == 1:  # ring of 2: merlin only takes + ports
                        assert key not in fake.ports
                        continue
                    comp, _, latency = fake.peer(*key)
                    c2 = list(coord)
                    c2[d] = (coord[d] + step) % k
                    assert rid(comp) == sum(c * s for c, s in zip(c2, strides, strict=True))
                    assert latency == f"{lat}ps"
                    cables += 1
            start += 2 * w
        for t in range(npr):  # hosts on the last ports: endpoint r*npr + t
            assert fake.peer(f"rtr{r}", f"port{start + t}")[0] == f"nic{r * npr + t}:networkIF"
    assert cables == 2 * len(fake.links) - 2 * R * npr  # every cable seen from both ends


def test_ring_of_two(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A ring of 2 (here a hypercube, the torus 2x2) uses both routers' + ports only."""
    _, cfg = generate(tmp_path, {"topology": {"kind": "hypercube", "n": 2}})
    fake = execute(cfg.text, monkeypatch)
    # dims [2, 2]: dimension d has + port 2d and - port 2d + 1; only + ports are cabled
    assert fake.peer("rtr0", "port0")[:2] == ("rtr1", "port0")
    assert fake.peer("rtr0", "port2")[:2] == ("rtr2", "port2")
    assert ("rtr0", "port1") not in fake.ports and ("rtr0", "port3") not in fake.ports


# --------------------------------------------------------------------------- fat tree


def test_shipped_fattree_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as e:
        generate(tmp_path, "manynode-fattree-96-96-48.yaml")
    msg = str(e.value)
    assert "manynode-fattree-96-96-48.yaml: topology: engine sst:" in msg
    assert "12 parallel cables" in msg and "exactly one cable" in msg


@pytest.mark.parametrize("topology,downs,ups", [
    ({"kind": "fattree", "k": 4, "n": 3}, [4, 4, 4], [4, 4]),
    ({"kind": "fattree", "k": 4, "n": 3, "up": 2}, [4, 4, 4], [2, 2]),
    ({"kind": "fattree", "switch_radix": 8, "nodes_per_leaf": 4, "leaves": 4, "spine_up": 0},
     [4, 4], [4]),
])
def test_fattree(topology: dict, downs: list, ups: list, tmp_path: Path,
                 monkeypatch: pytest.MonkeyPatch) -> None:
    """merlin's fattree rules (fattree.cc) on the recorded links: down port j of a switch in
    group G leads to group G*downs + j one level down; up ports to the parent group."""
    _, cfg = generate(tmp_path, {"topology": topology})
    fake = execute(cfg.text, monkeypatch)
    shape = ":".join([f"{d},{u}" for d, u in zip(downs, ups, strict=False)] + [str(downs[-1])])
    hosts = prod(downs)
    per = [hosts // downs[0]]
    for lvl in range(1, len(downs)):
        per.append(per[-1] * ups[lvl - 1] // downs[lvl])
    first = [sum(per[:lvl]) for lvl in range(len(per))]
    check_common(fake, hosts, sum(per), nic_bw="5637144576B/s", load=0.3, packet="512B",
                 terminal_lat="10000ps", warmup_ps=10**6, measure_ps=3 * 10**6)

    def where(r: int) -> tuple[int, int, int]:
        lvl = max(i for i in range(len(per)) if first[i] <= r)
        return lvl, (r - first[lvl]) // prod(ups[:lvl]), (r - first[lvl]) % prod(ups[:lvl])

    for rtr in fake.of_type("merlin.hr_router"):
        r = rid(rtr.name)
        lvl, group, _ = where(r)
        top = lvl == len(per) - 1
        assert rtr.params["num_ports"] == downs[lvl] + (0 if top else ups[lvl])
        assert rtr.subs["topology"].params == {"shape": shape, "routing_alg": "deterministic"}
        for j in range(downs[lvl]):
            comp, _, _ = fake.peer(f"rtr{r}", f"port{j}")
            if lvl == 0:
                assert comp == f"nic{r * downs[0] + j}:networkIF"
            else:
                assert where(rid(comp))[:2] == (lvl - 1, group * downs[lvl] + j)
        for j in range(0 if top else ups[lvl]):
            comp, _, _ = fake.peer(f"rtr{r}", f"port{downs[lvl] + j}")
            assert where(rid(comp))[:2] == (lvl + 1, group // downs[lvl + 1])
