"""Units, schema models and the exported JSON Schema."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from federation.models.units import parse_rate, parse_size, parse_time

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("text,expected", [
    ("512B", 512), ("8KiB", 8192), ("8kB", 8000), ("8KB", 8000), ("1MiB", 2**20),
    ("1Mb", 125_000), ("64b", 8), (512, 512), (1.5, 1.5), ("2 GiB", 2 * 2**30),
])
def test_sizes(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("text,expected", [
    ("5.25GiB/s", 5.25 * 2**30), ("100Gb/s", 12.5e9), ("100Gbps", 12.5e9), ("4.7GB/s", 4.7e9),
    ("1KiB/s", 1024), (1e9, 1e9),
])
def test_rates(text, expected):
    assert parse_rate(text) == pytest.approx(expected)


@pytest.mark.parametrize("text,expected", [
    ("100ns", 100e-9), ("1.5us", 1.5e-6), ("1.5µs", 1.5e-6), ("2ms", 2e-3), ("3s", 3.0),
    ("250ps", 250e-12), (1e-6, 1e-6),
])
def test_times(text, expected):
    assert parse_time(text) == pytest.approx(expected)


@pytest.mark.parametrize("bad,parse", [
    ("5GHz", parse_rate), ("10ns", parse_size), ("8KiB", parse_time), ("fast", parse_rate),
    ("1e999B", parse_size), (True, parse_size),
])
def test_bad_units_are_refused_with_a_hint(bad, parse):
    with pytest.raises(ValueError) as exc:
        parse(bad)
    msg = str(exc.value)
    assert repr(bad) in msg or "expected" in msg
    assert any(hint in msg for hint in ("such as", "e.g.", "finite"))


def test_machine_with_only_a_topology_is_complete(plugins):
    from federation.models.machine import Machine
    from federation.pipeline.load import resolve_machine

    m = Machine.model_validate({"topology": {"kind": "dragonfly", "p": 2, "a": 4, "h": 2}})
    assert m.packet_size == 512 and m.router.vcs == 3 and m.router.delay == 50e-9
    rm = resolve_machine(m, "inline", plugins)
    assert rm.topology.params.groups == 9


def test_component_round_trips_flat(plugins):
    from federation.models.machine import Machine

    doc = {"topology": {"kind": "dragonfly", "p": 2, "a": 4, "h": 2}}
    m = Machine.model_validate(doc)
    assert m.model_dump(mode="json")["topology"] == doc["topology"]


def generated_schemas():
    from federation.plugin.jsonschema import experiment_schema, machine_schema
    from federation.plugin.registry import FederationPlugins

    p = FederationPlugins()
    return machine_schema(p), experiment_schema(p)


def test_shipped_json_schema_is_current():
    """schemas/*.schema.json must equal `federation schema` output (regenerate with
    `federation schema --out schemas`)."""
    machine, experiment = generated_schemas()
    for name, doc in (("machine", machine), ("experiment", experiment)):
        shipped = json.loads((REPO / "schemas" / f"{name}.schema.json").read_text())
        assert shipped == json.loads(json.dumps(doc)), f"regenerate schemas/{name}.schema.json"


def test_json_schema_validates_shipped_files_and_rejects_bad_ones():
    machine, experiment = generated_schemas()
    jsonschema.Draft202012Validator.check_schema(machine)
    jsonschema.Draft202012Validator.check_schema(experiment)
    for f in sorted((REPO / "schemas" / "machines").glob("*.yaml")):
        jsonschema.validate(yaml.safe_load(f.read_text()), machine)
    jsonschema.validate(yaml.safe_load((REPO / "schemas" / "quickstart.yaml").read_text()),
                        experiment)
    bad = {"topology": {"kind": "dragonfly", "p": 2, "a": 4, "h": 2, "q": 1}}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, machine)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"topology": {"kind": "dragonfly", "p": 2, "a": 4, "h": 2},
                             "links": {"local": {"bandwidth": "5GHz"}}}, machine)


def test_schema_command_writes_files(tmp_path, capsys):
    from federation.cli import main

    assert main(["schema", "--out", str(tmp_path)]) == 0
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["experiment.schema.json", "machine.schema.json"]


def test_plugins_command_lists_builtins(capsys):
    from federation.cli import main

    assert main(["plugins"]) == 0
    listing = json.loads(capsys.readouterr().out)
    by_name = {p["name"]: p for p in listing}
    assert by_name["dragonfly"]["source"] == "builtin"
    assert by_name["dragonfly"]["provides"] == {"topologies": ["dragonfly"]}
    assert "valiant" in by_name["valiant"]["provides"]["routings"]


def test_duplicate_component_names_the_plugins():
    import federation
    from federation import Topology, hookimpl
    from federation.errors import PluginError
    from federation.plugin.registry import FederationPlugins

    class Fake(Topology):
        name = "dragonfly"

        class Params(federation.Params):
            pass

    class Plugin:
        @hookimpl
        def federation_register_topologies(self, register):
            register(Fake)

    pm = FederationPlugins()
    with pytest.raises(PluginError, match=r"plugin 'fake'.*'dragonfly'.*already registered by "
                                          r"plugin 'dragonfly'"):
        pm.add(Plugin(), "fake")


def test_sweep_runs_one_point_per_value(tmp_path):
    from federation.pipeline.load import load_experiment

    (tmp_path / "e.yaml").write_text(
        "machine: {topology: {kind: dragonfly, p: 1, a: 2, h: 1}}\n"
        "workload: {kind: synthetic, load: 0.1}\n"
        "sweep: {workload.load: [0.1, 0.2], routing.algorithm: [minimal, valiant]}\n")
    loaded = load_experiment(tmp_path / "e.yaml")
    assert [p.sweep for p in loaded.points] == [
        {"workload.load": 0.1, "routing.algorithm": "minimal"},
        {"workload.load": 0.1, "routing.algorithm": "valiant"},
        {"workload.load": 0.2, "routing.algorithm": "minimal"},
        {"workload.load": 0.2, "routing.algorithm": "valiant"},
    ]
    assert loaded.points[3].workload.params.load == 0.2
    assert loaded.points[3].routing.name == "valiant"


def test_buffer_limit_is_the_engines_unlimited_credit():
    """A buffer is at most what a NIC-facing port holds as unlimited credit (2**60 B): a
    larger one (above 2**63) wrapped in the engine's int64 credits and deadlocked falsely."""
    from federation.engine.events import INF_CREDIT
    from federation.models.limits import MAX_BUFFER_BYTES
    from federation.models.machine import LinkClass

    assert MAX_BUFFER_BYTES == int(INF_CREDIT) == 2**60
    assert LinkClass(buffer=2**60).buffer == 2**60
    with pytest.raises(ValueError, match=r"1e\+19 B is more than the engine's credit counters "
                       r"hold per VC \(2\*\*60 = 1152921504606846976 B\)"):
        LinkClass(buffer=1e19)


def _nodes(doc):
    """Every (path, mapping) in a JSON document."""
    stack = [("", doc)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, dict):
            yield path, node
            stack += [(f"{path}/{k}", v) for k, v in node.items()]
        elif isinstance(node, list):
            stack += [(f"{path}/{i}", v) for i, v in enumerate(node)]


def test_every_reference_resolves_and_every_default_is_valid():
    """A ``$ref`` to a removed definition (``router.arbiter`` pointed at ``ComponentSpec``,
    which the generator drops) breaks an editor's validation of any file that sets it; a
    default the schema itself refuses would mislead it.  Defaults made by factories are
    written (pingpong's ``sizes`` and ``nodes`` were absent)."""
    for doc in generated_schemas():
        defs = doc["$defs"]
        defaults = []
        for path, node in _nodes(doc):
            ref = node.get("$ref")
            if isinstance(ref, str):
                assert ref.startswith("#/$defs/") and ref[8:] in defs, (path, ref)
            if "default" in node and path.rsplit("/", 1)[-1] != "properties":
                sub = {k: v for k, v in node.items() if k != "default"}
                jsonschema.Draft202012Validator({**sub, "$defs": defs}).validate(node["default"])
                defaults.append(path)
        assert defaults, "no default checked"
    experiment = generated_schemas()[1]
    pingpong = next(v for v in experiment["properties"]["workload"]["anyOf"][1]["oneOf"]
                    if v["properties"]["kind"] == {"const": "pingpong"})
    assert pingpong["properties"]["sizes"]["default"] == [8.0]
    assert pingpong["properties"]["nodes"]["default"] == [0, 1]
    arbiter = experiment["$defs"]["RouterConfig"]["properties"]["arbiter"]
    assert arbiter["default"] == {"kind": "oldest_first"}


def test_bare_component_names_validate_where_the_loader_takes_them(tmp_path):
    """The loader takes a kind's bare name wherever it needs no parameter (``routing: ugal``,
    ``engine: native``); the schema refused it everywhere but placements and nested patterns.
    A kind with a required parameter stays an object in both (``topology: dragonfly``)."""
    from federation.pipeline.load import load_experiment

    machine, experiment = generated_schemas()
    m = {"topology": {"kind": "dragonfly", "p": 1, "a": 2, "h": 1}, "qos": "none",
         "router": {"arbiter": "round_robin"}}
    e = {"machine": m, "routing": "ugal", "engine": "native", "workload": "pingpong",
         "background": "synthetic", "routing_controller": None}
    jsonschema.validate(m, machine)
    jsonschema.validate(e, experiment)
    (tmp_path / "e.yaml").write_text(yaml.safe_dump(e))
    loaded = load_experiment(tmp_path / "e.yaml")
    assert loaded.experiment.routing.kind == "ugal"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**m, "topology": "dragonfly"}, machine)
