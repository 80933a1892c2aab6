"""Deadlock freedom proved before the run (issue 23, item 6).

The channel dependency graph of (topology, route tables, VC rule, declared VC plan) is built
before anything is simulated (:mod:`federation.network.deadlock`); a cycle is refused with
one cycle of channels printed.  Known-bad plans are refused with their cycle (a minimal
dragonfly on one VC, a torus without dateline, a third-party routing whose declared plan has
a cycle); every shipped machine with every built-in routing that applies passes; the walk's
dependencies are exactly those of every packet the routing can route (a per-packet reference
in plain Python, ``deadlock_reference.py``).
"""

from __future__ import annotations

import re
import textwrap
import types
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import fake_distribution, one_error
from deadlock_reference import Reference, projected_dependencies, reference_dependencies
from hypothesis import given, settings
from hypothesis import strategies as st
from test_third_party_plugin import federation

from federation.errors import ConfigError
from federation.network.deadlock import Channel, cycle_text, plan_problem, prove
from federation.network.dependencies import VCOverflow, table_edges
from federation.pipeline.build import routing_plan
from federation.pipeline.load import load_experiment, load_machine
from federation.pipeline.point import BuildCache, preflight
from federation.plugin.components import ClassPlan, TablePlan

REPO = Path(__file__).resolve().parent.parent
MACHINES = REPO / "schemas" / "machines"
LIMIT = 1 << 32


def closed_walk(cycle: tuple[Channel, ...]) -> None:
    """Each channel of a printed cycle leads to the router the next one leaves, and the last
    back to the first's."""
    for a, b in zip(cycle, cycle[1:] + cycle[:1], strict=True):
        assert a.peer == b.router, (a, b)


def experiment(tmp_path: Path, machine: object, routing: dict, name: str = "e.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump({
        "machine": machine, "routing": routing,
        "workload": {"kind": "synthetic", "pattern": "uniform", "load": 0.05},
        "stop": {"warmup": "0.2us", "measure": "1us"}}))
    return path


def built(tmp_path: Path, machine: object, routing: dict, check: bool = True):  # noqa: ANN201
    point = load_experiment(experiment(tmp_path, machine, routing)).points[0]
    return point, BuildCache(LIMIT, deadlock_check=check).get(point)


# --------------------------------------------------------------------------- known-bad plans


def test_minimal_dragonfly_on_one_vc_has_the_classic_cycle():
    """Without the VC bump on global links every hop is on VC 0: local, global, local, ...
    through three groups and back (Kim et al.'s reason for VC = global hops so far)."""
    rm = load_machine(MACHINES / "quickstart-dragonfly.yaml")
    net = rm.topology.build()
    t = rm.topology.minimal_routes(net)
    t.port_vc_bump = np.zeros_like(t.port_vc_bump)
    proof = prove(net, t, 1, TablePlan())
    assert not proof.deadlock_free
    cycle = proof.cycle
    assert len(cycle) == 6 and {c.vc for c in cycle} == {0}
    assert [c.link_class for c in cycle] == ["local", "global"] * 3
    closed_walk(cycle)
    assert proof.describe().startswith("a cycle of 6 channels: router ")
    # with the bump (2 VCs, the topology's own rule) there is none
    assert prove(net, rm.topology.minimal_routes(net), 2, TablePlan()).deadlock_free


def test_torus_without_dateline_has_a_ring_cycle():
    from federation.plugins.topologies.torus import Torus

    topo = Torus(Torus.Params(dims=[4, 4], nodes_per_router=1))
    net = topo.build()
    t = topo.minimal_routes(net)
    assert prove(net, t, 2, TablePlan()).deadlock_free
    t.port_dateline = np.zeros_like(t.port_dateline)
    cycle = prove(net, t, 2, TablePlan()).cycle
    assert len(cycle) == 4 and {c.vc for c in cycle} == {0}
    assert {c.link_class for c in cycle} == {"torus"}
    closed_walk(cycle)
    coords = net.coords["coord"][[c.router for c in cycle]]
    assert (coords == coords[0]).all(axis=0).sum() == 1  # one ring: one coordinate varies


@pytest.mark.parametrize("algorithm", ["valiant", "ugal"])
def test_valiant_family_on_a_dateline_torus_is_deadlock_free(tmp_path, algorithm):
    """Phase two restarts the dateline rule on its own VCs (the engine forgets the packet's
    dimension at the turn), so Valiant's phases are two dimension-ordered dateline routings
    on disjoint VC sets: no cycle.  (Until stop 33 the engine kept phase one's level into
    phase two, whose VC 3 then ran round a ring: refused.)"""
    machine = {"topology": {"kind": "torus", "dims": [4, 4]}, "router": {"vcs": 4}}
    proof = built(tmp_path, machine, {"algorithm": algorithm})[1].deadlock
    assert proof.deadlock_free and proof.dependencies > 0


def test_valiant_phase_two_restarts_the_dateline_rule_on_its_own_vcs(monkeypatch):
    """Every Valiant path on an 8-router ring, routed hop by hop by the engine's own
    ``follow`` (run as Python): phase one on VCs 0-1, phase two on 2-3, each by the dateline
    rule from its own start (level 0 until the ring's dateline, 1 after), including the
    paths whose first phase crossed the dateline and whose second goes on round the ring."""
    from federation.engine import tables_route as TR
    from federation.engine.api import P_DIM, P_LEVEL, P_PHASE, P_VIA, PS_COLS
    from federation.plugins.topologies.torus import Torus

    for name in ("table_port", "vc_rule"):
        monkeypatch.setattr(TR, name, getattr(TR, name).py_func)
    topo = Torus(Torus.Params(dims=[8], nodes_per_router=1))
    net = topo.build()
    t = topo.minimal_routes(net)
    t.phase_vc_offset, t.vcs_required = t.vcs_required, 2 * t.vcs_required  # as valiant.py
    tables = TR.program_tables(t, net.ports.n_ports)
    peer, owner = net.ports.port_peer, net.ports.port_router
    dateline = tables[6]
    carried = 0
    for src in range(8):
        for via in range(8):
            for dst in range(8):
                if len({src, via, dst}) < 3:
                    continue
                ps = np.zeros((1, PS_COLS), dtype=np.int32)
                ps[0, P_VIA], ps[0, P_DIM] = via, -1
                sim = types.SimpleNamespace(ps=ps)
                r, hops = src, []
                while r != dst:
                    o, vc = TR.follow.py_func(sim, tables, r, 0, dst, via)
                    hops.append((int(ps[0, P_PHASE]), int(vc), bool(dateline[o])))
                    r = int(owner[peer[o]])
                    assert len(hops) <= 8
                for phase in (0, 1):
                    vcs = [vc for ph, vc, _ in hops if ph == phase]
                    crossed = np.cumsum([d for ph, _, d in hops if ph == phase]) > 0
                    assert vcs == [2 * phase + int(c) for c in crossed], (src, via, dst, hops)
                first = [vc for ph, vc, _ in hops if ph == 0]
                second = [(vc, d) for ph, vc, d in hops if ph == 1]
                if second:  # (a first phase that meets the destination ends there)
                    carried += first[-1] == 1 and second[0] == (2, False)
                assert ps[0, P_LEVEL] in (0, 1)
    assert carried > 0  # paths that the old rule put on VC 3 from phase two's first hop


def test_aries_minimal_spread_is_refused_equal_cost_ports_break_dimension_order(tmp_path):
    """On the Aries XC a group is a 2-D all-to-all (chassis x slot) routed dimension-ordered;
    its equal-cost ports also take the other order, so intra- and inter-chassis hops on VC 0
    close a square.  The table routing of the same machine passes."""
    machine = str(MACHINES / "aries-xc.yaml")
    with pytest.raises(ConfigError, match="can deadlock") as e:
        built(tmp_path, machine, {"algorithm": "minimal", "spread": "hash"})
    cycle = re.findall(r"\((\w+) to router \d+\) VC (\d)", str(e.value))
    assert len(cycle) == 5 and {vc for _, vc in cycle} == {"0"}
    assert {cls for cls, _ in cycle} == {"intra_chassis", "inter_chassis"}
    assert built(tmp_path, machine, {"algorithm": "minimal"})[1].deadlock.deadlock_free


# --------------------------------------------------------------------------- every shipped machine

#: every built-in routing and mode that changes its moves
ROUTINGS = [{"algorithm": "minimal"}, {"algorithm": "minimal", "spread": "hash"},
            {"algorithm": "valiant"}, {"algorithm": "valiant", "intermediate": "router"},
            {"algorithm": "ugal"}, {"algorithm": "ugal", "decide": "injection"},
            {"algorithm": "par"}, {"algorithm": "ugal_global"}, {"algorithm": "prog_adaptive"},
            {"algorithm": "aries"}, {"algorithm": "aries", "mode": "NMIN_HASH"}]
#: (machine, routing) pairs whose cycle is real (the two tests above)
REAL_CYCLES = {("aries-xc", "minimal", "hash")}
SHIPPED = sorted(p.stem for p in MACHINES.glob("*.yaml"))
#: measured (build and proof, all routings, 2 shared cores): 2-5 s each, mostly building
#: their tables; the others under 1 s
BIG = {"bluegene-q-8x4x4x4x2", "circulant-g1024-10", "random-shortcut-1024-d19",
       "manynode-fattree-96-96-48"}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in BIG else n
                                  for n in SHIPPED])
def test_every_shipped_machine_with_every_built_in_routing_that_applies_passes(tmp_path, name):
    """A routing applies when the machine file as shipped takes it (enough ``router.vcs``, no
    equal-cost spreading on dimension-order tables): then the proof passes."""
    proved = 0
    for r in ROUTINGS:
        try:
            _, b = built(tmp_path, str(MACHINES / f"{name}.yaml"), r)
        except ConfigError as exc:
            msg = str(exc)
            if (name, r["algorithm"], r.get("spread")) in REAL_CYCLES:
                assert "can deadlock" in msg
                continue
            assert ("virtual channels" in msg and "router.vcs" in msg
                    or "dimension-order routing has one minimal port" in msg), msg
            continue
        assert b.deadlock is not None and b.deadlock.deadlock_free, (name, r)
        proved += 1
    assert proved >= 1  # minimal always applies


@pytest.mark.parametrize("name", ["quickstart-dragonfly", "codes-dragonfly",
                                  "manynode-dragonfly-5x18", "megafly-qos-megafly", "aries-xc"])
def test_dragonfly_family_with_every_routing_given_its_vcs(tmp_path, name):
    """With the VCs each routing asks for (4 for PAR, prog_adaptive, Aries and Valiant through
    a router), every built-in routing passes on the dragonfly family."""
    for r in ROUTINGS:
        if (name, r["algorithm"], r.get("spread")) in REAL_CYCLES:
            continue
        machine = yaml.safe_load((MACHINES / f"{name}.yaml").read_text())
        machine["router"] = {**machine.get("router", {}), "vcs": 4}
        _, b = built(tmp_path, machine, r)
        assert b.deadlock.deadlock_free, (name, r)
        assert b.deadlock.channels > 0 and b.deadlock.seconds < 5


# --------------------------------------------------------------------------- the walk is exact

SMALL = {
    "dragonfly": {"kind": "dragonfly", "p": 1, "a": 4, "h": 1},
    "megafly": {"kind": "megafly", "leaves": 2, "spines": 2, "nodes_per_leaf": 1,
                "global_links_per_spine": 1},
    "fattree": {"kind": "fattree", "k": 2, "n": 3},
    "torus": {"kind": "torus", "dims": [4, 3]},
    "circulant": {"kind": "circulant", "n": 8, "jumps": [1, 3]},
}
CROSS = [(t, r) for t in ("dragonfly", "megafly") for r in ROUTINGS] + [
    (t, r) for t in ("fattree", "torus", "circulant") for r in ROUTINGS[:1] + ROUTINGS[2:6]]


@pytest.mark.parametrize("topo, routing", CROSS,
                         ids=[f"{t}-{'-'.join(map(str, r.values()))}" for t, r in CROSS])
def test_the_walk_has_exactly_the_dependencies_of_every_packet(tmp_path, topo, routing):
    """The state walk's channel dependencies equal those of every packet the routing may
    route, followed one by one (``deadlock_reference``): sound (nothing missed) and exact
    (no dependency no packet makes)."""
    point, b = built(tmp_path, {"topology": SMALL[topo], "router": {"vcs": 6}}, routing,
                     check=False)
    plan = routing_plan(point, b)
    src, dst, _ = table_edges(b.network, b.tables, 6, plan, "test")
    walk = projected_dependencies(src, dst, b.network.ports.n_ports * 6)
    ref = reference_dependencies(b.network, b.tables, 6, plan)
    assert ref and walk == ref


@pytest.mark.parametrize("n_vcs", [1, 2, 3])
@pytest.mark.parametrize("topo, routing", CROSS,
                         ids=[f"{t}-{'-'.join(map(str, r.values()))}" for t, r in CROSS])
def test_the_walk_finds_exactly_the_hops_beyond_the_vcs(tmp_path, topo, routing, n_vcs):
    """With fewer VCs than a routing needs, the ports on which some packet would be given a
    VC that does not exist are exactly those the per-packet reference finds (the walk used
    to leave such hops out and prove the rest); with none, or with a Valiant phase or a
    detour (whose supersets are not refused), the dependencies are equal."""
    point, b = built(tmp_path, {"topology": SMALL[topo], "router": {"vcs": 6}}, routing,
                     check=False)
    plan = routing_plan(point, b)
    ref = Reference(b.network, b.tables, n_vcs, plan)
    edges = ref.run()
    exact = plan.valiant == "none" and plan.detour == "none"  # else supersets: not refused
    try:
        src, dst, _ = table_edges(b.network, b.tables, n_vcs, plan, "test")
    except VCOverflow as over:
        assert exact and set(over.port.tolist()) == ref.over and (over.vc >= n_vcs).all()
    else:
        assert not (exact and ref.over)
        assert projected_dependencies(src, dst, b.network.ports.n_ports * n_vcs) == edges


def test_a_route_beyond_the_vcs_is_refused_naming_the_highest_vc():
    """A torus's dateline tables on one VC: the walk used to drop the hops after a dateline
    (VC 1) and find no cycle; the run then stopped on VC 1."""
    from federation.network.deadlock import VCShortfall
    from federation.plugins.topologies.torus import Torus

    topo = Torus(Torus.Params(dims=[4, 4], nodes_per_router=1))
    net = topo.build()
    t = topo.minimal_routes(net)
    t.vcs_required = 1
    with pytest.raises(VCShortfall) as e:
        prove(net, t, 1, TablePlan(), declared=False)
    # 4 rings of 4 in each of 2 dimensions, each crossing its dateline in both directions
    assert str(e.value) == (
        "gives packets VCs the machine does not have: followed with their VC rule, its routes "
        "make 16 hop(s) on VC 1 or above (VC 1 leaving router 0 port 2 (torus to router 3)), "
        "but router.vcs gives it 1 (its tables declare vcs_required = 1); the declared VC "
        "count is wrong")


# --------------------------------------------------------------------------- class plans


def dragonfly():  # noqa: ANN201
    rm = load_machine(MACHINES / "quickstart-dragonfly.yaml")
    net = rm.topology.build()
    return net, rm.topology.minimal_routes(net)


def test_class_plans_vc_per_hop_passes_a_vc_kept_across_a_class_pair_cycles():
    net, t = dragonfly()
    rising = ClassPlan(tuple((a, v, b, v + 1) for a in ("local", "global")
                             for b in ("local", "global") for v in range(3)))
    proof = prove(net, t, 4, rising)
    assert proof.deadlock_free and proof.method == "declared class transitions"
    assert proof.dependencies > 0
    flat = ClassPlan((("local", 0, "global", 0), ("global", 0, "local", 0)))
    cycle = prove(net, t, 2, flat).cycle
    assert cycle and {c.vc for c in cycle} == {0}
    classes = [c.link_class for c in cycle]
    assert all(a != b for a, b in zip(classes, classes[1:] + classes[:1], strict=True))
    closed_walk(cycle)
    # a VC beyond router.vcs never happens (the engine refuses it); terminals cannot loop
    beyond = ClassPlan((("local", 0, "global", 1), ("global", 1, "local", 0)))
    assert not prove(net, t, 2, beyond).deadlock_free
    assert prove(net, t, 1, beyond).deadlock_free
    assert prove(net, t, 2, ClassPlan((("terminal", 0, "terminal", 0),))).deadlock_free


def test_plan_problems_name_the_field():
    net, _ = dragonfly()
    assert plan_problem(TablePlan(), net, 2) is None
    assert plan_problem(TablePlan(spread="some"), net, 2) == (
        "TablePlan.spread = 'some' is not one of ('none', 'source_group', 'all')")
    assert plan_problem(TablePlan(commit_bump=-1), net, 2) == (
        "TablePlan.commit_bump = -1 must be an integer >= 0")
    assert plan_problem(ClassPlan((("glbal", 0, "local", 0),)), net, 2) == (
        "ClassPlan transition ('glbal', 0, 'local', 0) names link class 'glbal', which this "
        "network does not have (it has: terminal, local, global)")
    assert "is not (link class, VC >= 0" in plan_problem(ClassPlan((("local", -1),)), net, 2)
    assert plan_problem({"transitions": []}, net, 2).startswith("the VC plan is a dict")


def test_cycle_text_leaves_out_the_middle_of_a_long_cycle():
    ring = tuple(Channel(i, 0, i, (i + 1) % 40, "ring") for i in range(40))
    text = cycle_text(ring)
    assert text.count(" -> ") == 17 and "... 24 more ..." in text
    assert text.endswith("router 0 port 0 (ring to router 1) VC 0")


# --------------------------------------------------------------------------- the build stage


def test_the_proof_is_kept_with_the_build_and_made_when_a_cached_build_lacks_it(tmp_path):
    point, b = built(tmp_path, str(MACHINES / "quickstart-dragonfly.yaml"),
                     {"algorithm": "minimal"}, check=False)
    assert b.deadlock is None
    cache = BuildCache(LIMIT, deadlock_check=False)
    assert cache.get(point).deadlock is None
    cache.deadlock_check = True
    proof = cache.get(point).deadlock
    assert proof.deadlock_free and (proof.channels, proof.states) == (288, 576)
    assert cache.proofs == {next(iter(cache.proofs)): ("minimal", proof)}


def test_the_plan_of_a_table_routing_follows_its_draws():
    """Table routings declare nothing: the plan is the engine's table routing, with Valiant
    phases where the routing draws intermediates (whatever the tables' flag says), outside the
    source and destination groups only when the draw is a built-in one."""
    from types import SimpleNamespace

    from federation.plugin.components import Routing
    from federation.plugins.routings.minimal import Minimal
    from federation.plugins.routings.valiant import Valiant

    class Mine(Routing):
        name = "mine"

        def intermediates(self, tables, src_router, dst_router, rng):  # noqa: ANN001, ANN202
            return np.zeros(src_router.shape[0], np.int32)  # group 0, even its own

    class Inherits(Valiant):
        name = "inherits"

    def plan(routing: Routing, valiant: bool = False) -> TablePlan:
        tables = SimpleNamespace(valiant=valiant)
        return routing_plan(SimpleNamespace(routing=routing),
                            SimpleNamespace(program=None, tables=tables))

    assert plan(Minimal(Minimal.Params())) == TablePlan()
    assert plan(Valiant(Valiant.Params())) == TablePlan(valiant="group")
    assert plan(Inherits(Valiant.Params())) == TablePlan(valiant="group")
    assert plan(Mine(Mine.Params())) == TablePlan(valiant="group", intermediates="any_group")
    assert plan(Minimal(Minimal.Params()), valiant=True) == TablePlan()  # draws nothing


def test_validate_prints_the_proof(tmp_path, capsys):
    from federation.cli import main

    path = experiment(tmp_path, str(MACHINES / "quickstart-dragonfly.yaml"),
                      {"algorithm": "ugal"})
    assert main(["validate", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"{path}: valid experiment (1 point(s))"
    assert re.fullmatch(r"  deadlock-free: routing 'ugal': no cycle among 468 channels "
                        r"\(1,332 dependencies, 1,368 routing states; route tables; "
                        r"\d+\.\d\d s\)", out[1]), out[1]
    assert main(["validate", str(path), "--no-deadlock-check"]) == 0
    assert capsys.readouterr().out.splitlines() == [f"{path}: valid experiment (1 point(s))"]


# --------------------------------------------------------------------------- third-party plans

PLUGIN = textwrap.dedent('''\
    import numpy as np
    from numba import njit

    from federation import Params, Routing, hookimpl
    from federation.engine import api
    from federation.plugin.components import ClassPlan, RoutingProgram


    @njit(cache=True)
    def route(sim, tables, r, ip, pk):
        return -1, 0


    @njit(cache=True)
    def inject(sim, tables, node, pk):
        return


    class Cases(Routing):
        """Deadlock-proof cases (tests only)."""

        name = "cdgcases"

        class Params(Params):
            case: str

        def tables(self, network, topology, machine):
            t = topology.minimal_routes(network)
            if self.params.case == "one_vc":  # every hop on VC 0
                t.port_vc_bump = np.zeros_like(t.port_vc_bump)
                t.vcs_required = 1
            if self.params.case == "no_dateline":  # a torus whose rings never change VC
                t.port_dateline = np.zeros_like(t.port_dateline)
            return t

        def program(self, network, topology, machine, tables):
            case = self.params.case
            if case in ("one_vc", "no_dateline"):
                return None
            plans = {"no_plan": None,
                     "cyclic": ClassPlan((("local", 0, "global", 0), ("global", 0, "local", 0))),
                     "acyclic": ClassPlan((("local", 0, "global", 0), ("global", 0, "local", 1),
                                           ("local", 1, "global", 1)))}
            return RoutingProgram(route=route, inject=inject, vcs_required=2,
                                  tables=(np.zeros(1, dtype=np.int64),), vc_plan=plans[case])


    @hookimpl
    def federation_register_routings(register):
        register(Cases)
    ''')


@pytest.fixture(scope="module")
def cases_site(tmp_path_factory) -> Path:
    return fake_distribution(tmp_path_factory.mktemp("cdg") / "site", "cdgcases", PLUGIN)


def case_file(tmp_path: Path, case: str, vcs: int = 2,
              topology: str = "{kind: dragonfly, p: 2, a: 4, h: 2}") -> Path:
    path = tmp_path / f"{case}.yaml"
    path.write_text(textwrap.dedent(f"""\
        machine: {{topology: {topology}, router: {{vcs: {vcs}}}}}
        routing: {{algorithm: cdgcases, case: {case}}}
        workload: {{kind: messages, messages: [{{at: 0ns, src: 0, dst: 71, size: 512}}]}}
        stop: {{warmup: 0ns, measure: 2us}}
        """))
    return path


def test_a_third_party_routing_on_one_vc_is_refused_with_its_cycle(cases_site, tmp_path):
    """The tables' own cycle (no VC bump): refused by ``validate`` and ``run`` before
    anything is simulated, in one line; ``--no-deadlock-check`` runs it (one packet cannot
    deadlock)."""
    path = case_file(tmp_path, "one_vc", vcs=1)
    for cmd in (["validate", str(path)], ["run", str(path), "--out", str(tmp_path / "o")]):
        line = one_error(federation(*cmd, sites=[cases_site], cwd=tmp_path))
        assert line.startswith(f"error: {path}: routing: routing 'cdgcases' (plugin cdgcases) "
                               "can deadlock on this machine (router.vcs = 1): its channel "
                               "dependency graph (route tables) has a cycle of 6 channels, "
                               "buffers that packets can fill while each waits for the next: "
                               "router "), line
        local, glob = line.count("(local to router"), line.count("(global to router")
        assert local + glob == 7 and min(local, glob) == 3, line
    assert not (tmp_path / "o").exists()
    r = federation("run", str(path), "--out", str(tmp_path / "o"), "--no-deadlock-check",
                   sites=[cases_site], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "o" / "results.json").exists()


def test_a_torus_without_dateline_is_refused_before_the_run(cases_site, tmp_path):
    path = case_file(tmp_path, "no_dateline", topology="{kind: torus, dims: [4, 4]}")
    line = one_error(federation("run", str(path), "--out", str(tmp_path / "o"),
                                sites=[cases_site], cwd=tmp_path))
    cycle = re.findall(r"router (\d+) port \d+ \(torus to router (\d+)\) VC 0", line)
    assert "has a cycle of 4 channels" in line and len(cycle) == 5, line
    assert all(a[1] == b[0] for a, b in zip(cycle, cycle[1:], strict=False)), cycle
    assert not (tmp_path / "o").exists()


def test_a_third_party_cyclic_plan_is_refused_naming_its_plugin(cases_site, tmp_path):
    path = case_file(tmp_path, "cyclic")
    line = one_error(federation("validate", str(path), sites=[cases_site], cwd=tmp_path))
    assert line.startswith(f"error: {path}: routing: routing 'cdgcases' (plugin cdgcases) can "
                           "deadlock on this machine (router.vcs = 2): its channel dependency "
                           "graph (declared class transitions) has a cycle of "), line
    assert " VC 1" not in line and "(local to router" in line and "(global to router" in line
    path = case_file(tmp_path, "acyclic")
    r = federation("validate", str(path), sites=[cases_site], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "deadlock-free: routing 'cdgcases': no cycle among " in r.stdout
    assert "declared class transitions" in r.stdout


def test_a_compiled_routing_without_a_plan_is_refused_unless_the_check_is_off(cases_site,
                                                                              tmp_path):
    path = case_file(tmp_path, "no_plan")
    line = one_error(federation("validate", str(path), sites=[cases_site], cwd=tmp_path))
    assert line == (f"error: {path}: routing: routing 'cdgcases' (plugin cdgcases) compiles "
                    "its own per-hop routing (RoutingProgram) but declares no VC plan "
                    "(RoutingProgram.vc_plan), so it cannot be proved deadlock-free before "
                    "the run: declare one (docs/plugins.md, \"VC plans\"); or run with "
                    "--no-deadlock-check to simulate it anyway")
    r = federation("validate", str(path), "--no-deadlock-check", sites=[cases_site],
                   cwd=tmp_path)
    assert r.returncode == 0 and "deadlock-free" not in r.stdout, r.stderr


def test_a_sweep_is_refused_before_its_first_point_runs(tmp_path):
    """The proof is part of the preflight: a sweep whose second machine cannot be proved is
    refused before the first point runs, naming the point."""
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({
        "machine": str(MACHINES / "aries-xc.yaml"),
        "routing": {"algorithm": "minimal"},
        "workload": {"kind": "synthetic", "pattern": "uniform", "load": 0.05},
        "stop": {"warmup": "0.2us", "measure": "1us"},
        "sweep": {"routing.spread": ["table", "hash"]}}))
    with pytest.raises(ConfigError, match=r"routing 'minimal' \(plugin minimal\) can deadlock.*"
                       r"\(sweep point 1: routing.spread=hash\)$"):
        preflight(load_experiment(path), LIMIT)
    assert len(preflight(load_experiment(path), LIMIT, deadlock_check=False).proofs) == 0


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 30).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)),
                         max_size=60))))
def test_the_layered_acyclicity_check_agrees_with_strong_components(graph):
    """The proof's first test (Kahn's algorithm, a layer at a time, without scipy) says
    "no cycle" exactly when scipy's strongly connected components find none."""
    import scipy.sparse as sp
    from scipy.sparse import csgraph

    from federation.network.deadlock import acyclic

    n, edges = graph
    a = np.array([e[0] for e in edges], dtype=np.int64)
    b = np.array([e[1] for e in edges], dtype=np.int64)
    m = sp.csr_matrix((np.ones(a.size, np.int8), (a, b)), shape=(n, n))
    _, labels = csgraph.connected_components(m, directed=True, connection="strong")
    has_cycle = bool((np.bincount(labels) > 1).any() or (a == b).any())
    assert acyclic(a, b, n) == (not has_cycle)
