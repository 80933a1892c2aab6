"""Route tables handed over by a routing plugin are checked before the engine reads them.

The compiled loop indexes the tables without bounds checks, so a plugin's out-of-range port
crashed the interpreter, a next hop on another router's port moved packets between routers,
and a wrong shape read past the arrays.  A third-party routing distribution (a fake installed
``*.dist-info`` beside a module, as in ``test_third_party_plugin``) returns the minimal tables
with one defect each; the CLI must refuse with exit status 2 and one line naming the routing,
the plugin, the table and its first bad entry.  In-process tests cover the rules one by one.
"""

from __future__ import annotations

import dataclasses
import re
import textwrap
from pathlib import Path

import numpy as np
import pytest
from conftest import fake_distribution
from test_third_party_plugin import federation

from federation.errors import RoutingError
from federation.pipeline.tables_check import check_route_tables, route_table_problem
from federation.plugin.components import RouteTables

REPO = Path(__file__).resolve().parent.parent

#: a routing that corrupts the topology's minimal tables as ``case`` says (quickstart
#: dragonfly: 36 routers of 2 terminal + 3 local + 2 global ports, 9 groups, 72 nodes)
PLUGIN = textwrap.dedent('''\
    import numpy as np

    from federation import Params, Routing, hookimpl


    class BadTables(Routing):
        """Minimal tables with one defect (tests only)."""

        name = "badtables"

        class Params(Params):
            case: str

        def tables(self, network, topology, machine):
            t = topology.minimal_routes(network)
            pt = network.ports
            case = self.params.case
            if case == "not_tables":
                return {"gnext": t.gnext}
            if case == "out_of_range":
                t.gnext[1, 5] = 10**6
            elif case == "other_router":
                t.gnext[2, 5] = t.gnext[3, 5] if t.gnext[3, 5] >= 0 else t.gnext[3, 6]
            elif case == "terminal_port":
                t.lnext[4, 1] = pt.node_port[8]  # router 4's own terminal port
            elif case == "nic_port":
                t.gnext[0, 3] = pt.nic_port[0]
            elif case == "wrong_shape":
                t.gnext = t.gnext[:-1]
            elif case == "float_table":
                t.lnext = t.lnext.astype(np.float64)
            elif case == "group_range":
                t.router_group = t.router_group.copy()
                t.router_group[7] = t.gnext.shape[1]
            elif case == "short_vc_flags":
                t.port_vc_bump = t.port_vc_bump[:10]
            elif case == "vc_flag_value":
                t.port_vc_bump = t.port_vc_bump.astype(np.int64) * 256
            elif case == "phase_offset":
                t.phase_vc_offset = t.vcs_required
            return t


    @hookimpl
    def federation_register_routings(register):
        register(BadTables)


    from federation.plugins.topologies.dragonfly import Dragonfly


    class BadDragonfly(Dragonfly):
        """A dragonfly whose minimal routes have an out-of-range port (tests only)."""

        name = "baddragonfly"

        def minimal_routes(self, network):
            t = super().minimal_routes(network)
            t.gnext[1, 5] = 10**6
            return t


    @hookimpl
    def federation_register_topologies(register):
        register(BadDragonfly)
    ''')

EXPERIMENT = textwrap.dedent(f"""\
    machine: {REPO / "schemas" / "machines" / "quickstart-dragonfly.yaml"}
    routing: {{algorithm: badtables, case: CASE}}
    workload: {{kind: synthetic, pattern: uniform, load: 0.2}}
    stop: {{warmup: 0.2us, measure: 1us}}
    """)

HEAD = "error: routing 'badtables' (plugin 'badtables') handed over invalid route tables: "

CASES = {
    "not_tables": "tables() returned dict, not federation.RouteTables",
    "out_of_range": "gnext[1, 5] = 1000000 is not a port (the network has ports 0..",
    "other_router": "gnext[2, 5] = ",
    "terminal_port": "lnext[4, 1] = 28 is router 4's terminal port to node 8; next hops must "
                     "be cable ports",
    "nic_port": "gnext[0, 3] = ",
    "wrong_shape": "gnext has shape (35, 9), expected (36, any) (next port per (router, group))",
    "float_table": "lnext must be a NumPy integer array (next port per (router, local index)), "
                   "got dtype float64",
    "group_range": "router_group[7] = 9 is outside [0, 9) (gnext has 9 group columns)",
    "short_vc_flags": "port_vc_bump has shape (10,), expected (",
    "vc_flag_value": "port_vc_bump[",
    "phase_offset": "phase_vc_offset = 2 must be a VC index in [0, vcs_required = 2)",
}


def plugin_site(tmp_path: Path) -> Path:
    """An installed distribution ``federation-badtables`` with entry point ``badtables``."""
    return fake_distribution(tmp_path / "site", "badtables", PLUGIN)


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_tables_are_refused_by_the_cli_in_one_line(tmp_path, case):
    site = plugin_site(tmp_path)
    exp = tmp_path / "e.yaml"
    exp.write_text(EXPERIMENT.replace("CASE", case))
    r = federation("run", str(exp), "--out", str(tmp_path / "out"), sites=[site],
                   cwd=tmp_path)
    assert r.returncode == 2, (r.returncode, r.stderr)  # -11 was a segfault
    assert "Traceback" not in r.stderr and r.stdout == ""
    err = r.stderr.strip()
    assert len(err.splitlines()) == 1, err
    assert err.startswith(HEAD), err
    assert CASES[case] in err, err
    assert not (tmp_path / "out").exists()


def test_a_built_in_routing_blames_the_topology_whose_tables_it_passed_on(tmp_path):
    """``minimal`` hands over the topology's ``minimal_routes``: both plugins are named."""
    site = plugin_site(tmp_path)
    exp = tmp_path / "e.yaml"
    exp.write_text("machine: {topology: {kind: baddragonfly, p: 2, a: 4, h: 2}}\n"
                   "routing: {algorithm: minimal}\n")
    r = federation("validate", str(exp), sites=[site], cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    assert r.stderr.strip() == (
        "error: routing 'minimal' (plugin 'minimal'; the tables are the minimal routes of "
        "topology 'baddragonfly', plugin 'badtables') handed over invalid route tables: "
        "gnext[1, 5] = 1000000 is not a port (the network has ports 0..323); each entry of "
        "row 1 must be one of router 1's cable ports, or -1 for no route")


@pytest.mark.parametrize("routing", ["valiant", "ugal"])
def test_valiant_checks_the_topology_tables_before_walking_them(tmp_path, routing):
    """Valiant (and UGAL) count VC bumps along every path of the topology's tables before
    handing them over; bad tables were an IndexError traceback there."""
    site = plugin_site(tmp_path)
    exp = tmp_path / "e.yaml"
    exp.write_text("machine: {topology: {kind: baddragonfly, p: 2, a: 4, h: 2}}\n"
                   f"routing: {{algorithm: {routing}}}\n")
    r = federation("validate", str(exp), sites=[site], cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    assert r.stderr.strip() == (
        "error: topology 'baddragonfly' (plugin 'badtables') handed over invalid minimal "
        f"routes, which routing '{routing}' builds on: gnext[1, 5] = 1000000 is not a port "
        "(the network has ports 0..323); each entry of row 1 must be one of router 1's cable "
        "ports, or -1 for no route")


def test_other_router_and_nic_ports_name_their_owner(tmp_path):
    """The entry is explained: whose port it is, and what a next hop must be."""
    site = plugin_site(tmp_path)
    for case, owner in (("other_router", r"is a port of router 3, not of router 2"),
                        ("nic_port", r"is node 0's NIC port")):
        exp = tmp_path / f"{case}.yaml"
        exp.write_text(EXPERIMENT.replace("CASE", case))
        r = federation("validate", str(exp), sites=[site], cwd=tmp_path)
        assert r.returncode == 2, r.stderr
        assert owner in r.stderr, r.stderr
        assert "must be one of router" in r.stderr and "or -1 for no route" in r.stderr


def test_intact_tables_run(tmp_path):
    """The same plugin without a defect runs: the check refuses nothing valid."""
    site = plugin_site(tmp_path)
    exp = tmp_path / "e.yaml"
    exp.write_text(EXPERIMENT.replace("CASE", "none"))
    r = federation("run", str(exp), sites=[site], cwd=tmp_path)
    assert r.returncode == 0, r.stderr


# --------------------------------------------------------------------------- in process


@pytest.fixture(scope="module")
def ring():
    """4 routers in a ring, one node each, shortest-path tables (router r has ports 3r
    (terminal), 3r + 1 and 3r + 2 (cables); NIC ports 12..15)."""
    from federation.network import NetworkBuilder
    from federation.network.routes import shortest_path_routes

    b = NetworkBuilder(["ring"])
    b.add_routers(4, radix=4)
    for r in range(4):
        b.attach_nodes(r, 1)
        b.add_link(r, (r + 1) % 4, "ring")
    net = b.build()
    return net, shortest_path_routes(net)


def tables(base: RouteTables, **change: object) -> RouteTables:
    """A deep copy of ``base`` with ``change`` applied."""
    fields = {f.name: getattr(base, f.name) for f in dataclasses.fields(base)}
    for k, v in fields.items():
        if isinstance(v, np.ndarray):
            fields[k] = v.copy()
    fields.update(change)
    return RouteTables(**fields)


def test_every_shipped_table_passes(ring):
    net, t = ring
    assert route_table_problem(t, net) is None


@pytest.mark.parametrize(("edit", "message"), [
    (lambda t: t.gnext.__setitem__((0, 2), -2), r"gnext\[0, 2\] = -2 is negative"),
    (lambda t: t.gnext.__setitem__((3, 0), 99), r"gnext\[3, 0\] = 99 is not a port \(the "
                                                r"network has ports 0\.\.15\)"),
    (lambda t: t.gnext.__setitem__((1, 2), 7), r"gnext\[1, 2\] = 7 is a port of router 2, "
                                               r"not of router 1; each entry of row 1 must be "
                                               r"one of router 1's cable ports, or -1"),
    (lambda t: t.lnext.__setitem__((0, 0), 0), r"lnext\[0, 0\] = 0 is router 0's terminal "
                                               r"port to node 0"),
    (lambda t: t.router_local.__setitem__(2, 1), r"router_local\[2\] = 1 is outside \[0, 1\)"),
    (lambda t: t.router_group.__setitem__(slice(None), 0),
     r"routers 0 and 1 both carry nodes and share router_group 0 and router_local 0"),
])
def test_each_rule_names_the_first_bad_entry(ring, edit, message):
    net, t0 = ring
    t = tables(t0)
    edit(t)
    with pytest.raises(RoutingError, match=r"^routing 'x' \(plugin 'p'\) handed over invalid "
                       r"route tables: " + message):
        check_route_tables(t, net, "x", "p")


@pytest.mark.parametrize(("change", "message"), [
    ({"gnext": [[-1]]}, "gnext must be a NumPy integer array"),
    ({"router_group": np.zeros((4, 1), np.int32)}, r"router_group has shape \(4, 1\), "
                                                    r"expected \(4,\)"),
    ({"port_dateline": np.full(16, 3, np.uint8)}, r"port_dateline\[0\] = 3 is outside \[0, 2\)"),
    ({"port_dim": np.zeros(16, np.float32)}, "port_dim must be a NumPy integer array"),
    ({"port_vc_bump": np.ones(16, bool)}, None),  # bool flags are fine
    ({"vc_mode": 7}, r"vc_mode = 7 is not one of the engine's VC rules"),
    ({"vcs_required": 0}, r"vcs_required = 0 must be an integer >= 1"),
    ({"adaptive_bias": 2.5}, r"adaptive_bias = 2\.5 must be an integer"),
])
def test_types_shapes_and_scalars(ring, change, message):
    net, t0 = ring
    why = route_table_problem(tables(t0, **change), net)
    if message is None:
        assert why is None
    else:
        assert why is not None
        assert re.match(message, why), why


def test_a_missing_route_at_run_time_names_the_entry_not_the_vcs(ring):
    """-1 entries are allowed (a routing may leave unused pairs undefined); one that a packet
    needs stops the run naming it, instead of blaming the VC count."""
    from federation.engine.native import LinkFigures, NativeRun, Packets, run_native

    net, t0 = ring
    t = tables(t0)
    t.gnext[0, 2] = -1
    assert route_table_problem(t, net) is None
    packets = Packets(time_ps=np.zeros(1, np.int64), src=np.zeros(1, np.int64),
                      dst=np.full(1, 2, np.int64), size=np.full(1, 512, np.int64),
                      msg=np.zeros(1, np.int64), via=np.full(1, -1))
    fig = LinkFigures(bandwidth=5e9, latency=1e-8, buffer=4096)
    job = NativeRun(net, {"terminal": fig, "ring": fig}, 5e9, 5e-8, 2, t, packets,
                    owner="routing 'r' (plugin p) with arbiter 'oldest_first' (plugin q)")
    # the routing and its plugin are named (the arbiter has no say in a table entry)
    with pytest.raises(RoutingError) as e:
        run_native(job)
    assert str(e.value) == (
        "routing 'r' (plugin p): packet 0 (node 0 -> 2) has no route at router 0: the route "
        "table entry gnext[0, 2] (towards router 2's group) is -1; the routing's tables are "
        "incomplete")
