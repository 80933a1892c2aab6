"""A topology's ``size()`` must count what its ``build()`` makes.

The checks before building (the memory estimate, listed nodes and node counts of job
placements, ``ranks`` against a placement) read ``Topology.size()``; a third-party topology
whose ``size()`` said 16 nodes while ``build()`` made 32 ran on, with those checks computed on
the wrong counts.  The build now compares them (:func:`federation.pipeline.build.size_problem`,
from ``checked_network``, the one path of ``run``, ``validate`` and ``topology``): routers and
nodes must be equal; cables and groups, which only feed the memory estimate, may be
overcounted (``random_shortcut``'s documented upper bound) but never undercounted.  A
``size()`` that raises :class:`TopologyError` or answers something other than a
:class:`TopologySize` of integers is refused too (it was a traceback).  A fake installed
distribution (as in ``test_network_checks``) drives the CLI.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from conftest import fake_distribution
from test_third_party_plugin import federation

from federation.pipeline.build import checked_network
from federation.pipeline.load import load_machine

REPO = Path(__file__).resolve().parent.parent
MACHINES = sorted((REPO / "schemas" / "machines").glob("*.yaml"))

#: ``case`` names the count ``size()`` gets wrong; ``build()`` always makes 8 routers in a
#: ring with 4 nodes each (32 nodes, 8 cables, each router its own group)
PLUGIN = textwrap.dedent('''\
    import numpy as np

    from federation import LinkDefaults, NetworkBuilder, Params, Topology, hookimpl
    from federation.errors import TopologyError
    from federation.plugin.components import TopologySize


    class Miscount(Topology):
        name = "miscount"
        link_defaults = {"terminal": LinkDefaults(), "ring": LinkDefaults()}

        class Params(Params):
            case: str = "ok"

        def build(self):
            b = NetworkBuilder(["ring"])
            for r in b.add_routers(8, radix=8):
                b.attach_nodes(r, 4)
            b.add_links(np.arange(8), (np.arange(8) + 1) % 8, "ring")
            return b.build()

        def size(self):
            if self.params.case == "raises":
                raise TopologyError("case 'raises' has no size")
            if self.params.case == "junk":
                return {"routers": 8, "nodes": 32}
            said = dict(routers=8, nodes=32, cables=8, groups=8)
            said.update({
                "ok": {}, "unknown": None,
                "nodes": dict(nodes=16), "routers_nodes": dict(routers=16, nodes=16),
                "routers": dict(routers=4), "cables_under": dict(cables=6),
                "cables_over": dict(cables=12), "groups_under": dict(groups=2),
                "groups_over": dict(groups=9), "negative": dict(cables=-1),
                "float": dict(nodes=32.0)}[self.params.case] or {})
            return None if self.params.case == "unknown" else TopologySize(**said)


    @hookimpl
    def federation_register_topologies(register):
        register(Miscount)
    ''')

OWNER = "topology 'miscount' (plugin 'miscount')"
TAIL = ("; the checks before the build (memory, job placements) used size(), which must "
        "count what build() makes")
BOUND = "; size() may overcount cables and groups (an upper bound for the memory check), never "

REFUSED = {
    "nodes": f"{OWNER}: size() said 16 nodes, build() made 32{TAIL}",
    # nodes first: the count job placements use
    "routers_nodes": f"{OWNER}: size() said 16 nodes, build() made 32{TAIL}",
    "routers": f"{OWNER}: size() said 4 routers, build() made 8{TAIL}",
    "cables_under": f"{OWNER}: size() said 6 cables, build() made 8{BOUND}undercount",
    "groups_under": f"{OWNER}: size() said 2 groups, build() made 8{BOUND}undercount",
    # size() itself: refused before anything reads it (these were tracebacks)
    "raises": f"{OWNER}: case 'raises' has no size",
    "junk": f"{OWNER}: size() returned {{'routers': 8, 'nodes': 32}}, not None or a "
            "TopologySize(routers, nodes, cables, groups) of integers >= 0",
    "negative": f"{OWNER}: size() returned TopologySize(routers=8, nodes=32, cables=-1, "
                "groups=8), not None or a TopologySize(routers, nodes, cables, groups) of "
                "integers >= 0",
    "float": f"{OWNER}: size() returned TopologySize(routers=8, nodes=32.0, cables=8, "
             "groups=8), not None or a TopologySize(routers, nodes, cables, groups) of "
             "integers >= 0",
}


def experiment(tmp_path: Path, case: str, workload: str | None = None,
               jobs: str | None = None) -> Path:
    """``e.yaml`` on the ``miscount`` machine: ``jobs`` (a ``jobs:`` block), else
    ``workload`` (default: one message to node 20)."""
    traffic = jobs or ("workload: " + (workload or "{kind: messages, messages: [{src: 0, "
                                                   "dst: 20, size: 64}]}") + "\n")
    (tmp_path / "e.yaml").write_text(
        f"machine:\n  topology: {{kind: miscount, case: {case}}}\n  router: {{vcs: 4}}\n"
        f"routing: {{algorithm: minimal}}\n{traffic}stop: {{warmup: 0ns, measure: 1us}}\n")
    return tmp_path / "e.yaml"


@pytest.fixture
def site(tmp_path):
    return fake_distribution(tmp_path / "site", "miscount", PLUGIN)


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_validate_refuses_a_size_that_disagrees_with_the_build(tmp_path, site, case):
    experiment(tmp_path, case)
    r = federation("validate", "e.yaml", sites=[site], cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert r.stdout == "" and "Traceback" not in r.stderr
    assert r.stderr.strip() == f"error: e.yaml: machine.topology: {REFUSED[case]}"


def test_run_refuses_it_before_anything_runs(tmp_path, site):
    experiment(tmp_path, "nodes")
    r = federation("run", "e.yaml", "--out", "out", sites=[site], cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    assert r.stderr.strip() == f"error: e.yaml: machine.topology: {REFUSED['nodes']}"
    assert not (tmp_path / "out" / "results.json").exists()


@pytest.mark.parametrize("command", ["topology", "validate"])
@pytest.mark.parametrize("case", ["nodes", "raises", "junk"])
def test_a_machine_file_is_refused_as_run_does(tmp_path, site, command, case):
    (tmp_path / "m.yaml").write_text(f"topology: {{kind: miscount, case: {case}}}\n")
    r = federation(command, "m.yaml", sites=[site], cwd=tmp_path)
    assert r.returncode == 2 and r.stdout == "" and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.strip() == f"error: m.yaml: topology: {REFUSED[case]}"


def test_a_listed_node_beyond_the_build_blames_the_plugin_not_the_job(tmp_path):
    """``size()`` said 64 nodes, ``build()`` made 32: the job's node 40 passed the placement
    check before the build, which now refuses the plugin's count."""
    plugin = PLUGIN.replace('"nodes": dict(nodes=16)', '"nodes": dict(nodes=64)')
    site = fake_distribution(tmp_path / "site", "miscount", plugin)
    experiment(tmp_path, "nodes", None, "jobs:\n  - name: a\n"
               "    workload: {kind: synthetic, load: 0.1}\n"
               "    placement: {kind: list, nodes: [0, 40]}\n")
    r = federation("validate", "e.yaml", sites=[site], cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip() == (f"error: e.yaml: machine.topology: {OWNER}: size() said 64 "
                                f"nodes, build() made 32{TAIL}")


@pytest.mark.parametrize("case", ["ok", "unknown", "cables_over", "groups_over"])
def test_exact_unknown_or_overcounted_sizes_validate(tmp_path, site, case):
    experiment(tmp_path, case)
    r = federation("validate", "e.yaml", sites=[site], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "valid experiment" in r.stdout


@pytest.mark.parametrize("path", MACHINES, ids=[p.name for p in MACHINES])
def test_every_shipped_machine_builds_what_its_size_says(path):
    """The built-ins pass the check (``test_topology_size`` pins their counts exactly)."""
    rm = load_machine(path)
    net = checked_network(rm)
    assert net.n_nodes == rm.topology.size().nodes
