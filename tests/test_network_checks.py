"""What a topology or routing plugin hands over is checked before the run.

A topology may fill a :class:`~federation.network.Network` without ``NetworkBuilder``; its
arrays were trusted, so a node on a router out of range, a cable class out of range or
``terminal``, or a group array one router short crashed with NumPy's or the engine's own
error, or was silently accepted.  Route tables whose routes loop or are missing passed the
deadlock proof's "VC = hops so far" shortcut and failed mid-run, blaming the routing for a
VC count.  A third-party distribution (a fake installed ``*.dist-info``, as in
``test_third_party_plugin``) drives the CLI; in-process tests pin each rule.
"""

from __future__ import annotations

import dataclasses
import textwrap
from pathlib import Path

import numpy as np
import pytest
from conftest import fake_distribution
from test_third_party_plugin import federation

from federation.errors import TopologyError
from federation.network import Network, NetworkBuilder
from federation.network.checks import route_walk
from federation.network.deadlock import VCShortfall, prove
from federation.network.graph import network_problem
from federation.network.routes import most_vc_bumps, shortest_path_routes
from federation.network.tables import TablePlan
from federation.pipeline.load import load_machine

REPO = Path(__file__).resolve().parent.parent


def ring(n: int = 4) -> Network:
    b = NetworkBuilder(["ring"])
    for r in b.add_routers(n, radix=4):
        b.attach_nodes(r, 1)
        b.add_link(r, (r + 1) % n, "ring")
    return b.build()


def with_(net: Network, **kw: object) -> Network:
    return dataclasses.replace(net, **kw)


# --------------------------------------------------------------------------- network arrays


def test_malformed_networks_are_named_entry_by_entry():
    net = ring()
    assert network_problem(net) is None
    i32 = np.int32
    cases = {
        "node_router[3] = 7 is outside 0..3 (the router of each node; n_routers = 4)":
            with_(net, node_router=np.array([0, 1, 2, 7], i32)),
        "node_router[0] = -1 is outside 0..3 (the router of each node; n_routers = 4)":
            with_(net, node_router=np.array([-1, 1, 2, 3], i32)),
        "link_dst[0] = 11 is outside 0..3 (a cable's router; n_routers = 4)":
            with_(net, link_dst=np.array([11, 2, 3, 0], i32)),
        "link_dst has 3 entries but the length of link_src is 4 (the other end of each cable)":
            with_(net, link_dst=net.link_dst[:-1]),
        "link_class[0] = 5 is outside 1..1 (cable classes of link_classes ('terminal', "
        "'ring'))": with_(net, link_class=np.full(4, 5, np.int16)),
        "link_class[0] = 0 is the 'terminal' class, which is for node links; cables between "
        "routers need a class of their own": with_(net, link_class=np.zeros(4, np.int16)),
        "router_group has 3 entries but n_routers is 4 (the group of each router)":
            with_(net, router_group=np.arange(3, dtype=i32)),
        "router_group[0] = -1 is outside 0..3 (the group of each router; at most one group "
        "per router)":
            with_(net, router_group=np.full(4, -1, i32)),
        "radix has 2 entries but n_routers is 4 (the ports of each router)":
            with_(net, radix=np.full(2, 4)),
        "router_group has 4 entries but n_routers is 6 (the group of each router)":
            with_(net, n_routers=6),
        "link_classes must start with 'terminal' (terminal and NIC ports are class 0), got "
        "('ring', 'other')": with_(net, link_classes=("ring", "other")),
        "node_router must be a 1-D NumPy integer array (the router of each node), got list":
            with_(net, node_router=[0, 1, 2, 3]),
        "radix must be a 1-D NumPy integer array (the ports of each router), got dtype "
        "float64": with_(net, radix=np.full(4, 4.0)),
        "n_routers = True must be an integer in 0..2147483647": with_(net, n_routers=True),
    }
    for want, bad in cases.items():
        assert network_problem(bad) == want
        with pytest.raises(TopologyError) as e:
            bad.validate()
        assert str(e.value) == f"the network is malformed: {want}"


# --------------------------------------------------------------------------- route walks


def loop_and_hole() -> tuple[Network, object, object]:
    """A 4-ring's shortest-path tables, once with 0 -> 2 bouncing between routers 0 and 1,
    once with no route from router 3 to router 1."""
    net = ring()
    t = shortest_path_routes(net)
    loop = dataclasses.replace(t, gnext=t.gnext.copy())
    loop.gnext[0, 2] = t.gnext[0, 1]
    loop.gnext[1, 2] = t.gnext[1, 0]
    hole = dataclasses.replace(t, gnext=t.gnext.copy())
    hole.gnext[3, 1] = -1
    return net, loop, hole


def test_route_walk_finds_loops_holes_and_the_longest_route():
    net, loop, hole = loop_and_hole()
    assert route_walk(net, shortest_path_routes(net)).longest == 2
    assert route_walk(net, loop).problem == (
        "the route from router 0 to router 2 loops: it returns to router 0 (0 -> 1 -> 0) and "
        "never arrives")
    assert route_walk(net, hole).problem == (
        "there is no route from router 3 to router 1: the route table entry gnext[3, 1] "
        "(towards router 1's group) is -1 at router 3")
    # blocks of destinations give the same answer as one block
    assert route_walk(net, loop, max_entries=4).problem == route_walk(net, loop).problem
    # groups: the dragonfly's gnext/lnext lookup, against the pair-by-pair walk
    rm = load_machine(REPO / "schemas" / "machines" / "quickstart-dragonfly.yaml")
    dnet = rm.topology.build()
    dt = rm.topology.minimal_routes(dnet)
    walk = route_walk(dnet, dt, max_entries=100)
    assert walk.problem is None
    every = dataclasses.replace(dt, port_vc_bump=np.ones(dnet.ports.n_ports, np.uint8))
    assert walk.longest == most_vc_bumps(dnet, every) == 3


def test_rising_vc_shortcut_checks_the_longest_route_fits():
    """VC = hops so far proves no cycle, not that a 2-hop route fits in 1 declared VC."""
    net = ring()
    t = shortest_path_routes(net)
    assert prove(net, t, 2, TablePlan(), declared=False).deadlock_free
    t.vcs_required = 1
    with pytest.raises(VCShortfall) as e:
        prove(net, t, 1, TablePlan(), declared=False)
    assert str(e.value) == (
        "has routes of up to 2 hops on which every cable raises the VC (VC = hops so far), so "
        "a packet may be given VC 1 and needs 2 VCs, but its tables declare vcs_required = 1; "
        "the declared VC count is wrong")
    t.vcs_required = 2
    t.extra["vc_on_bump"] = True
    with pytest.raises(VCShortfall, match=r"raised on the hop itself\), so a packet may be "
                       r"given VC 2 and needs 3 VCs"):
        prove(net, t, 2, TablePlan(), declared=False, longest=2)


# --------------------------------------------------------------------------- the CLI


PLUGIN = textwrap.dedent('''\
    import numpy as np

    from federation import Params, Routing, Topology, LinkDefaults, NetworkBuilder, hookimpl
    from federation.network.graph import Network


    class RawTopo(Topology):
        name = "rawtopo"
        link_defaults = {"terminal": LinkDefaults(), "ring": LinkDefaults()}

        class Params(Params):
            case: str = "ok"

        def build(self):
            c, n = self.params.case, 4
            if c == "none":
                return None
            if c == "disconnected":
                b = NetworkBuilder(["ring"])
                for r in b.add_routers(n, radix=4):
                    b.attach_nodes(r, 1)
                b.add_link(0, 1, "ring")
                b.add_link(2, 3, "ring")
                return b.build()
            kw = dict(n_routers=n, node_router=np.arange(n, dtype=np.int32),
                      link_src=np.arange(n, dtype=np.int32),
                      link_dst=((np.arange(n) + 1) % n).astype(np.int32),
                      link_class=np.ones(n, dtype=np.int16), link_classes=("terminal", "ring"),
                      router_group=np.arange(n, dtype=np.int32),
                      radix=np.full(n, 3, dtype=np.int64))
            if c == "node_oob":
                kw["node_router"] = np.array([0, 1, 2, 7], dtype=np.int32)
            elif c == "class_oob":
                kw["link_class"] = np.full(n, 5, dtype=np.int16)
            elif c == "class_terminal":
                kw["link_class"] = np.zeros(n, dtype=np.int16)
            elif c == "group_short":
                kw["router_group"] = np.arange(n - 1, dtype=np.int32)
            return Network(**kw)

        def minimal_routes(self, network):
            t = super().minimal_routes(network)
            if self.params.case == "route_loop":
                t.gnext[0, 2] = t.gnext[0, 1]
                t.gnext[1, 2] = t.gnext[1, 0]
            elif self.params.case == "few_vcs":
                t.vcs_required = 1  # 2-hop routes, VC = hops so far: 2 VCs
            return t


    class HoleRouting(Routing):
        name = "holes"

        def tables(self, network, topology, machine):
            t = topology.minimal_routes(network)
            t.gnext[:] = -1
            return t


    @hookimpl
    def federation_register_topologies(register):
        register(RawTopo)


    @hookimpl
    def federation_register_routings(register):
        register(HoleRouting)
    ''')

TOPO = "error: e.yaml: machine.topology: topology 'rawtopo' (plugin 'rawtopo')"

CLI_CASES = {
    "none": f"{TOPO}: build() returned NoneType, not a federation Network (build one with "
            "NetworkBuilder)",
    "node_oob": f"{TOPO} built a malformed network: node_router[3] = 7 is outside 0..3 "
                "(the router of each node; n_routers = 4)",
    "class_oob": f"{TOPO} built a malformed network: link_class[0] = 5 is outside 1..1 (cable "
                 "classes of link_classes ('terminal', 'ring'))",
    "class_terminal": f"{TOPO} built a malformed network: link_class[0] = 0 is the "
                      "'terminal' class, which is for node links; cables between routers need "
                      "a class of their own",
    "group_short": f"{TOPO} built a malformed network: router_group has 3 entries but "
                   "n_routers is 4 (the group of each router)",
    "disconnected": f"{TOPO} built an invalid network: the router graph is not connected: "
                    "router 2 cannot reach router 0 (2 components)",
    "route_loop": f"{TOPO} has minimal routes (minimal_routes) that cannot deliver, which "
                  "routing 'minimal' passes on: the route from router 0 to router 2 loops: it "
                  "returns to router 0 (0 -> 1 -> 0) and never arrives",
}


def run_case(tmp_path: Path, topology: str, routing: str = "{algorithm: minimal}"):
    site = fake_distribution(tmp_path / "site", "rawtopo", PLUGIN)
    exp = tmp_path / "e.yaml"
    exp.write_text(f"machine:\n  topology: {topology}\n  router: {{vcs: 4}}\n"
                   f"routing: {routing}\n"
                   "workload: {kind: messages, messages: [{src: 0, dst: 2, size: 64}]}\n"
                   "stop: {warmup: 0ns, measure: 1us}\n")
    return federation("validate", "e.yaml", sites=[site], cwd=tmp_path)


@pytest.mark.parametrize("case", sorted(CLI_CASES))
def test_a_bad_topology_plugin_is_refused_naming_file_field_topology_and_plugin(tmp_path, case):
    r = run_case(tmp_path, f"{{kind: rawtopo, case: {case}}}")
    assert r.returncode == 2, r.stderr
    assert r.stdout == "" and "Traceback" not in r.stderr
    assert r.stderr.strip() == CLI_CASES[case]


def test_incomplete_routing_tables_are_refused_before_the_run_naming_the_routing(tmp_path):
    r = run_case(tmp_path, "{kind: rawtopo}", "{algorithm: holes}")
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip() == (
        "error: e.yaml: routing: routing 'holes' (plugin 'rawtopo') handed over route tables "
        "that cannot deliver: there is no route from router 0 to router 1: the route table "
        "entry gnext[0, 1] (towards router 1's group) is -1 at router 0")


def test_a_loop_met_while_a_routing_makes_its_tables_blames_the_topology(tmp_path):
    """``minimal`` with ``vc_step: on`` counts VC bumps along every route: a loop there was a
    bare one-line error naming neither file, topology nor plugin."""
    r = run_case(tmp_path, "{kind: rawtopo, case: route_loop}",
                 "{algorithm: minimal, vc_step: 'on'}")
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip() == (
        f"{TOPO} has minimal routes (minimal_routes) that routing 'minimal' cannot build on: "
        "a route from router 1 to router 2 loops")


def test_routes_longer_than_the_declared_vcs_are_refused_before_the_run(tmp_path):
    """The "VC = hops so far" proof held, but a 2-hop route needs 2 VCs and the topology's
    tables declared 1: the run stopped on VC 1 (with router.vcs = 1) or the traffic classes
    shared VCs.  No --no-deadlock-check hint: the run would fail anyway."""
    r = run_case(tmp_path, "{kind: rawtopo, case: few_vcs}")
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip() == (
        "error: e.yaml: routing: routing 'minimal' (plugin minimal) has routes of up to 2 hops "
        "on which every cable raises the VC (VC = hops so far), so a packet may be given VC 1 "
        "and needs 2 VCs, but its tables declare vcs_required = 1; the declared VC count is "
        "wrong (the tables are the minimal routes of topology 'rawtopo', plugin 'rawtopo')")


def test_an_intact_raw_network_validates(tmp_path):
    r = run_case(tmp_path, "{kind: rawtopo}")
    assert r.returncode == 0, r.stderr
    assert "valid experiment" in r.stdout


# --------------------------------------------------------------------------- run-time reports


def test_a_negative_port_other_than_minus_one_is_reported_as_an_invalid_port():
    """The loop stops on any negative port; -2 was reported as "got no output port (-1)"."""
    from types import SimpleNamespace

    from federation.engine import api as A
    from federation.engine import events as E
    from federation.engine.reports import routing_report

    net = ring()
    sc = np.zeros(max(E.S_BADPKT, E.S_BAD_ROUTER, E.S_BAD_A, E.S_BAD_B) + 1, np.int64)
    sc[E.S_BADPKT], sc[E.S_BAD_ROUTER], sc[E.S_BAD_A], sc[E.S_BAD_B] = 0, 1, -2, 0
    ps = np.zeros((1, max(A.P_SRC, A.P_DST) + 1), np.int64)
    ps[0, A.P_SRC], ps[0, A.P_DST] = 1, 3
    pm = np.zeros((1, A.M_ID + 1), np.int64)
    sim = SimpleNamespace(sc=sc, ps=ps, pm=pm)
    job = SimpleNamespace(program=object(), tables=None)
    owner = "routing 'x' (plugin p) with arbiter 'y' (plugin q)"
    assert routing_report(net, job, sim, E.ST_NO_ROUTE, owner) == (
        f"{owner}: packet 0 (node 1 -> 3) at router 1 was given port -2, which is not a port "
        "(ports are 0..15; -1 means no route)")
    sc[E.S_BAD_A] = -1
    assert routing_report(net, job, sim, E.ST_NO_ROUTE, owner) == (
        f"{owner}: packet 0 (node 1 -> 3) at router 1 got no output port (-1)")


@pytest.mark.parametrize("case", ["none", "node_oob", "disconnected"])
def test_the_topology_command_refuses_a_bad_network_as_run_does(tmp_path, case):
    """``federation topology`` on a machine file built the network without ``run``'s checks:
    ``build()`` returning None was a traceback, a malformed network named no topology."""
    site = fake_distribution(tmp_path / "site", "rawtopo", PLUGIN)
    (tmp_path / "m.yaml").write_text(f"topology: {{kind: rawtopo, case: {case}}}\n")
    r = federation("topology", "m.yaml", sites=[site], cwd=tmp_path)
    assert r.returncode == 2 and r.stdout == "" and "Traceback" not in r.stderr, r.stderr
    want = CLI_CASES[case].replace("error: e.yaml: machine.topology:", "error: m.yaml: topology:")
    assert r.stderr.strip() == want
