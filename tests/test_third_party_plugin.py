"""A third-party plugin distribution, installed with pip as a user would, drives the CLI.

``examples/federation-ring`` is copied to a temporary directory and pip-installed into a private
``--target`` directory there.  Nothing goes into the test venv.  The CLI then runs in a subprocess
with that directory on ``PYTHONPATH`` and entry-point autoloading switched on.  Broken plugins
are fake distributions: a ``*.dist-info`` folder with an ``entry_points.txt``, beside a module.
"""

from __future__ import annotations

import difflib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import fake_distribution, pip_build_flags

from federation.errors import ConfigError

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "federation-ring"
DOCS = REPO / "docs" / "plugins.md"
_SCRIPT = Path(sys.executable).with_name("federation")
#: the console script of the venv running the tests (same code, same entry points)
FEDERATION = ([str(_SCRIPT)] if _SCRIPT.exists() else
              [sys.executable, "-c", "from federation.cli import entry; entry()"])


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@pytest.fixture(scope="module")
def ring_site(tmp_path_factory) -> Path:
    """``<tmp>/site`` with federation-ring installed; the sources sit in ``<tmp>/federation-ring``
    (copied, so that the build's ``build/`` and ``*.egg-info`` never land in the repository)."""
    tmp = tmp_path_factory.mktemp("ring")
    src = tmp / "federation-ring"
    shutil.copytree(EXAMPLE, src, ignore=shutil.ignore_patterns(
        "build", "*.egg-info", "__pycache__"))
    site = tmp / "site"
    r = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check",
         "--no-deps", *pip_build_flags(), "--target", str(site), str(src)],
        capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (site / "federation_ring.py").exists()
    return site


def federation(*args: str, sites: list[Path], cwd: Path, **env: str) -> subprocess.CompletedProcess:
    """Run the CLI with ``sites`` on PYTHONPATH and third-party autoloading on."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("FEDERATION_")}
    base.pop("PYTHONPATH", None)
    base["PYTHONPATH"] = os.pathsep.join(str(s) for s in sites)
    base["FEDERATION_DISABLE_PLUGIN_AUTOLOAD"] = "0"
    base.update(env)
    return subprocess.run([*FEDERATION, *args], capture_output=True, text=True, cwd=cwd,
                          env=base, timeout=600)


def listing(r: subprocess.CompletedProcess) -> dict[str, dict]:
    assert r.returncode == 0, r.stderr
    return {p["name"]: p for p in json.loads(r.stdout)}


# --------------------------------------------------------------------------- the installed plugin


def test_ring_experiment_runs_and_delivers_everything(ring_site, tmp_path):
    experiment = ring_site.parent / "federation-ring" / "ring-uniform.yaml"
    out = tmp_path / "out"
    r = federation("run", str(experiment), "--out", str(out), sites=[ring_site], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    res = json.loads((out / "results.json").read_text())
    assert res["machine"]["topology"]["kind"] == "ring"
    assert res["machine"]["routers"] == 16 and res["machine"]["nodes"] == 32
    assert len(res["points"]) == 3
    for point in res["points"]:
        s = point["summary"]
        assert s["packets_generated"] > 0
        assert s["packets_delivered"] == s["packets_generated"], point["sweep"]
        assert s["bytes_delivered"] == s["bytes_injected"]
        assert 0 < s["mean_hops"] <= 16 // 2


def test_plugins_lists_ring_with_its_distribution(ring_site, tmp_path):
    plugins = listing(federation("plugins", sites=[ring_site], cwd=tmp_path))
    ring = plugins["ring"]
    name, version = ring["source"].split(" ")
    assert normalize(name) == "federation-ring"
    assert version == "0.1.0"
    assert ring["module"] == "federation_ring"
    assert ring["provides"] == {"topologies": ["ring"]}
    assert plugins["dragonfly"]["source"] == "builtin"


def test_disable_plugins_switches_it_off(ring_site, tmp_path):
    plugins = listing(federation("plugins", sites=[ring_site], cwd=tmp_path,
                                 FEDERATION_DISABLE_PLUGINS="ring"))
    assert "ring" not in plugins and "dragonfly" in plugins
    experiment = ring_site.parent / "federation-ring" / "ring-uniform.yaml"
    r = federation("run", str(experiment), "--out", str(tmp_path / "out"), sites=[ring_site],
                   cwd=tmp_path, FEDERATION_DISABLE_PLUGINS="ring")
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    assert "topology.kind" in r.stderr and "unknown topology 'ring'" in r.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("env", "listed"), [
    ({"FEDERATION_LOAD_PLUGINS": "ring"}, True),
    ({"FEDERATION_LOAD_PLUGINS": "some_other_plugin"}, False),
    ({"FEDERATION_DISABLE_PLUGIN_AUTOLOAD": "1"}, False),
])
def test_allow_list_and_autoload_switch(ring_site, tmp_path, env, listed):
    plugins = listing(federation("plugins", sites=[ring_site], cwd=tmp_path, **env))
    assert ("ring" in plugins) is listed
    assert "dragonfly" in plugins and "native" in plugins  # built-ins always load


# --------------------------------------------------------------------------- broken plugins

BROKEN = {
    "import_error": (
        """raise ImportError("federation_broken needs libfoo, which is not installed")\n""",
        ["error: plugin 'broken': error importing federation_broken: ImportError: "
         "federation_broken needs libfoo"],
    ),
    "duplicate_topology": (
        textwrap.dedent("""\
            from federation import Topology, hookimpl


            class Dragonfly(Topology):
                name = "dragonfly"


            @hookimpl
            def federation_register_topologies(register):
                register(Dragonfly)
            """),
        # both plugins are named, whichever of them loads first
        ["error: plugin '", "topology 'dragonfly'", "already registered by plugin '",
         "'broken'", "federation_broken.Dragonfly", "'dragonfly'",
         "federation.plugins.topologies.dragonfly.Dragonfly"],
    ),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_broken_plugin_is_one_message_and_exit_2(tmp_path, case):
    source, expected = BROKEN[case]
    site = tmp_path / "site"
    fake_distribution(site, "broken", source)
    for args in (["plugins"], ["run", "--out", str(tmp_path / "out")]):
        r = federation(*args, sites=[site], cwd=tmp_path)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert "Traceback" not in r.stderr
        assert r.stdout == ""
        err = r.stderr.strip()
        assert len(err.splitlines()) == 1, err
        for piece in expected:
            assert piece in err, (piece, err)
    assert not (tmp_path / "out").exists()
    # the way out: switch the broken plugin off
    plugins = listing(federation("plugins", sites=[site], cwd=tmp_path,
                                 FEDERATION_DISABLE_PLUGINS="broken"))
    assert "broken" not in plugins and "dragonfly" in plugins


def test_duplicate_name_blames_the_third_party_plugin(tmp_path):
    site = tmp_path / "site"
    fake_distribution(site, "broken", BROKEN["duplicate_topology"][0])
    r = federation("plugins", sites=[site], cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.startswith("error: plugin 'broken': topology 'dragonfly'"), r.stderr


# --------------------------------------------------------------------------- in process


@pytest.fixture
def ring_plugins():
    """Built-in plugins plus federation_ring imported from examples/ (no install)."""
    from federation.plugin.registry import FederationPlugins

    spec = importlib.util.spec_from_file_location("federation_ring",
                                                  EXAMPLE / "federation_ring.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["federation_ring"] = module
    try:
        spec.loader.exec_module(module)
        plugins = FederationPlugins()
        plugins.add(module, "ring", "examples/federation-ring")
        yield plugins
    finally:
        sys.modules.pop("federation_ring", None)


@pytest.mark.parametrize("n", [3, 4, 7, 8, 16])
def test_ring_routes_are_shortest_with_two_vcs(ring_plugins, n):
    topo = ring_plugins.topologies.get("ring")(
        ring_plugins.topologies.get("ring").Params(n=n, p=2))
    net = topo.build()
    net.validate()
    assert (net.n_routers, net.n_nodes, net.n_links) == (n, 2 * n, n)
    t = topo.minimal_routes(net)
    assert t.vcs_required == 2
    pt = net.ports
    for s in range(n):
        for d in range(n):
            r, hops, level, seen = s, 0, 0, set()
            while r != d:
                port = int(t.gnext[r, t.router_group[d]])
                assert port >= 0, (s, d, r)
                seen.add(int(pt.port_router[pt.port_peer[port]]) - r)
                level = max(level, int(t.port_dateline[port]))
                r = int(pt.port_router[pt.port_peer[port]])
                hops += 1
            assert hops == min((d - s) % n, (s - d) % n), (s, d)
            assert len({x % n for x in seen}) <= 1, "a route changes direction"
            assert level <= 1


@pytest.mark.parametrize("n", [7, 8])
def test_ring_saturated_does_not_deadlock(ring_plugins, tmp_path, n):
    """Far past saturation every packet still arrives: the dateline VCs break the cycle."""
    from federation.pipeline.load import load_experiment
    from federation.pipeline.point import prepare

    (tmp_path / "e.yaml").write_text(
        f"machine: {{topology: {{kind: ring, n: {n}, p: 2}}, router: {{vcs: 2}},\n"
        "          links: {ring: {buffer: 1KiB}}}\n"
        "workload: {kind: synthetic, pattern: uniform, load: 0.9}\n"
        "stop: {warmup: 0.5us, measure: 3us}\n")
    point = load_experiment(tmp_path / "e.yaml", plugins=ring_plugins).points[0]
    prep = prepare(point)
    raw = point.engine.run(prep.job)
    assert raw.pkt_deliver.size > 100
    assert (raw.pkt_deliver >= 0).all()


@pytest.mark.parametrize(("params", "path", "message"), [
    ("n: 2", "topology.n", "greater than or equal to 3"),
    ("n: 8, p: 4, radix: 5", "topology", "radix 5 is too small"),
    ("n: 8, q: 1", "topology.q", "unknown key"),
])
def test_ring_params_are_validated(ring_plugins, params, path, message):
    import yaml

    from federation.models.base import validate_model
    from federation.models.machine import Machine
    from federation.pipeline.load import resolve_machine

    doc = yaml.safe_load(f"topology: {{kind: ring, {params}}}")
    with pytest.raises(ConfigError) as info:
        resolve_machine(validate_model(Machine, doc, "m.yaml"), "m.yaml", ring_plugins)
    assert info.value.path == path
    assert message in str(info.value)


def test_too_few_vcs_is_refused(ring_plugins, tmp_path):
    from federation.errors import ConfigError
    from federation.pipeline.load import load_experiment
    from federation.pipeline.point import prepare

    (tmp_path / "e.yaml").write_text(
        "machine: {topology: {kind: ring, n: 8}, router: {vcs: 1}}\n")
    point = load_experiment(tmp_path / "e.yaml", plugins=ring_plugins).points[0]
    with pytest.raises(ConfigError, match="router.vcs: 2") as info:
        prepare(point)
    assert str(info.value).startswith(f"{tmp_path / 'e.yaml'}: machine.router.vcs: ")


# --------------------------------------------------------------------------- docs


def fenced_blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```$", text, flags=re.S | re.M)


@pytest.mark.parametrize(("lang", "name"), [("python", "federation_ring.py"),
                                            ("toml", "pyproject.toml"),
                                            ("yaml", "ring-uniform.yaml")])
def test_docs_show_the_example_verbatim(lang, name):
    """docs/plugins.md includes the example's source; the two cannot drift apart."""
    source = (EXAMPLE / name).read_text()
    blocks = fenced_blocks(DOCS.read_text(), lang)
    if source in blocks:
        return
    first = source.splitlines()[0]
    near = [b for b in blocks if b.splitlines()[:1] == [first]] or blocks or [""]
    diff = "".join(difflib.unified_diff(near[0].splitlines(True), source.splitlines(True),
                                        "docs/plugins.md", f"examples/federation-ring/{name}"))
    pytest.fail(f"docs/plugins.md has no ```{lang} block equal to {name}:\n{diff}")

