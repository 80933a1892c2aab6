"""The loader reads what the user wrote, no more and no less: no silent coercion, no key kept
twice, no unknown schema version, numbers in exponent notation, paths relative to their file."""

from __future__ import annotations

import json
import time

import pytest
from conftest import REPO

from federation.errors import ConfigError
from federation.models.base import MAX_DEPTH, read_document
from federation.models.limits import MAX_PACKET_BYTES
from federation.pipeline.load import load_experiment, load_machine

DRAGONFLY = "topology: {kind: dragonfly, p: 2, a: 4, h: 2}\n"


def machine_error(tmp_path, text: str, name: str = "m.yaml") -> str:
    (tmp_path / name).write_text(text)
    with pytest.raises(ConfigError) as info:
        load_machine(tmp_path / name)
    return str(info.value)


@pytest.mark.parametrize("text,path", [
    ("topology: {kind: dragonfly, p: true, a: 4, h: 2}\n", "topology.p: expected a whole number"),
    (DRAGONFLY + "router: {vcs: false}\n", "router.vcs: expected a whole number, got false"),
    (DRAGONFLY + "router: {vcs: '4'}\n", "router.vcs: Input should be a valid integer"),
    (DRAGONFLY + "router: {vcs: 2.5}\n", "router.vcs: "),
    (DRAGONFLY + "links: {global: {bandwidth: true}}\n", "links.global.bandwidth: "),
])
def test_no_silent_coercion(tmp_path, text, path):
    assert f"m.yaml: {path}" in machine_error(tmp_path, text)


@pytest.mark.parametrize("text,size", [
    ("1", 1), ("512", 512), ("4KiB", 4096), ("8b", 1), (str(MAX_PACKET_BYTES), MAX_PACKET_BYTES),
    ("2GiB", None), ("3GiB", None), ("1b", None), ("100.7", None), ("0", None), ("-4", None),
    (".nan", None), (".inf", None),
])
def test_packet_size_is_whole_bytes_the_engine_stores(tmp_path, text, size):
    doc = DRAGONFLY + f"packet_size: {text}\n"
    if size is None:
        assert "m.yaml: packet_size: " in machine_error(tmp_path, doc)
    else:
        (tmp_path / "m.yaml").write_text(doc + "links: {terminal: {buffer: 4GiB}, "
                                         "local: {buffer: 4GiB}, global: {buffer: 4GiB}}\n")
        assert load_machine(tmp_path / "m.yaml").machine.packet_size == size


def test_duplicate_keys_are_refused_in_yaml_and_json(tmp_path):
    msg = machine_error(tmp_path, DRAGONFLY + "packet_size: 512\nrouter: {vcs: 2, vcs: 3}\n")
    assert "m.yaml: duplicate key 'vcs' at line 3" in msg
    msg = machine_error(tmp_path, DRAGONFLY + "packet_size: 512\npacket_size: 1024\n")
    assert "duplicate key 'packet_size' at line 3 (first at line 2)" in msg
    (tmp_path / "m.json").write_text('{"topology": {"kind": "torus", "dims": [4]}, '
                                     '"packet_size": 1, "packet_size": 2}')
    with pytest.raises(ConfigError, match=r"m\.json: duplicate key 'packet_size'"):
        load_machine(tmp_path / "m.json")


@pytest.mark.parametrize("version,ok", [(1, True), (2, False), (99, False), ("1", False)])
def test_schema_version(tmp_path, version, ok):
    doc = DRAGONFLY + f"schema_version: {json.dumps(version)}\n"
    if ok:
        (tmp_path / "m.yaml").write_text(doc)
        load_machine(tmp_path / "m.yaml")
    else:
        assert "m.yaml: schema_version: " in machine_error(tmp_path, doc)


@pytest.mark.parametrize("text,value", [
    ("5e9", 5e9), ("1e-7", 1e-7), ("-2E+3", -2e3), ("1.5e3", 1.5e3), ("6.02e23", 6.02e23),
    ("'5e9'", "5e9"), ("1_000", 1000), ("0x10", 16), ("1e", "1e"), ("e5", "e5"),
])
def test_exponent_notation_is_a_number(tmp_path, text, value):
    (tmp_path / "d.yaml").write_text(f"x: {text}\n")
    assert read_document(tmp_path / "d.yaml")["x"] == value


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 3000, 20000])
@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_deep_nesting_is_refused(tmp_path, depth, suffix):
    text = "{\"a\": " * depth + "1" + "}" * depth if suffix == ".json" else \
        "[" * depth + "]" * depth
    (tmp_path / f"d{suffix}").write_text(text)
    with pytest.raises(ConfigError, match=f"d\\{suffix}: nested deeper than {MAX_DEPTH}"):
        read_document(tmp_path / f"d{suffix}")


def test_byte_order_mark_is_not_an_error(tmp_path):
    (tmp_path / "m.yaml").write_text(DRAGONFLY, encoding="utf-8-sig")
    (tmp_path / "m.json").write_text('{"topology": {"kind": "torus", "dims": [4]}}',
                                     encoding="utf-8-sig")
    assert load_machine(tmp_path / "m.yaml").machine.topology.kind == "dragonfly"
    assert load_machine(tmp_path / "m.json").machine.topology.kind == "torus"


def test_graph_file_path_is_relative_to_the_machine_file(tmp_path, monkeypatch):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "ring.txt").write_text("0 1\n1 2\n2 0\n")
    (tmp_path / "sub" / "m.yaml").write_text("topology: {kind: graph_file, path: ring.txt}\n")
    monkeypatch.chdir(tmp_path)
    topo = load_machine("sub/m.yaml").topology
    assert topo.params.path == str(tmp_path / "sub" / "ring.txt")
    assert topo.build().n_routers == 3


def test_inline_machine_error_is_one_message_at_its_field(tmp_path):
    (tmp_path / "e.yaml").write_text(
        "machine: {topology: {kind: torus, dims: [4]}, links: {link: {bandwidth: 5GHz}}}\n")
    with pytest.raises(ConfigError) as info:
        load_experiment(tmp_path / "e.yaml")
    assert str(info.value).startswith("e.yaml: machine.links.link.bandwidth: ") or \
        str(info.value).startswith(f"{tmp_path / 'e.yaml'}: machine.links.link.bandwidth: ")
    assert "\n" not in str(info.value)
    (tmp_path / "e.yaml").write_text("machine: 5\n")
    with pytest.raises(ConfigError, match=r"e\.yaml: machine: "):
        load_experiment(tmp_path / "e.yaml")


def test_sweep_size_is_capped_before_expanding(tmp_path):
    (tmp_path / "m.yaml").write_text(DRAGONFLY)
    (tmp_path / "e.yaml").write_text(
        "machine: m.yaml\nsweep: {seed: " + json.dumps(list(range(10_000)))
        + ", workload.load: " + json.dumps([0.1] * 10_000) + "}\n")
    t = time.perf_counter()
    with pytest.raises(ConfigError, match=r"e\.yaml: sweep: .*100000000 points.*10000"):
        load_experiment(tmp_path / "e.yaml")
    assert time.perf_counter() - t < 30  # generous: refused from the lengths, not expanded


@pytest.mark.parametrize("text,field", [
    ("workload: {kind: synthetic, load: .nan}", "workload.load: Input should be a finite"),
    ("workload: {kind: synthetic, load: .inf}", "workload.load: Input should be a finite"),
    ("workload: {kind: synthetic, message_size: 100.5}", "workload.message_size: "),
    ("workload: {kind: messages, messages: [{src: 0, dst: 1, size: 0.5}]}",
     "workload.messages[0].size: "),
    ("sweep: {workload.load: []}", "sweep.workload.load: "),
    ("seed: true", "seed: expected a whole number"),
    ("schema_version: 99", "schema_version: "),
])
def test_experiment_fields_are_named(tmp_path, text, field):
    (tmp_path / "m.yaml").write_text(DRAGONFLY)
    (tmp_path / "e.yaml").write_text(f"machine: m.yaml\n{text}\n")
    with pytest.raises(ConfigError) as info:
        load_experiment(tmp_path / "e.yaml")
    assert f"e.yaml: {field}" in str(info.value)


def test_a_character_yaml_refuses_is_one_line_with_its_line(tmp_path):
    """PyYAML's reader errors carry no mark: the refusal was two lines (the problem, then
    'in "<unicode string>", position 154') and named no line."""
    (tmp_path / "d.yaml").write_text("a: 1\nb: x\x00y\n")
    with pytest.raises(ConfigError) as exc:
        read_document(tmp_path / "d.yaml")
    assert str(exc.value) == (f"{tmp_path / 'd.yaml'}: invalid YAML at line 2: unacceptable "
                              "character #x0000: special characters are not allowed")


@pytest.mark.parametrize(("text", "value"), [
    ("010", 10), ("-007", -7), ("0o10", 8), ("0x1f", 31), ("0b101", 5), ("1_000", 1000),
    ("1:20", "1:20"), ("20", 20),
])
def test_integers_are_read_as_yaml_1_2_reads_them(text, value):
    """YAML 1.1 (PyYAML's) read ``010`` as octal 8 and ``1:20`` as base-60 80: ``seed: 010``
    silently ran seed 8.  A file and ``--set`` read them alike."""
    from federation.models.base import parse_value

    assert parse_value(text) == value and type(parse_value(text)) is type(value)


def test_libyaml_reads_every_shipped_file_as_pyyaml_does():
    """Files are parsed by libyaml (three times as fast on long ones) with the same rules; on
    every shipped machine, experiment and example file the two parsers give the same data, and
    a file libyaml refuses is refused in PyYAML's words (the test of ``\\x00`` above)."""
    import yaml

    from federation.models.base import _FastLoader, _load_yaml, _Loader

    files = [p for pattern in ("schemas/**/*.yaml", "examples/**/*.yaml")
             for p in REPO.glob(pattern)]
    assert len(files) > 30
    for path in files:
        text = path.read_text(encoding="utf-8-sig")
        assert _load_yaml(text) == yaml.load(text, Loader=_Loader), path  # noqa: S506
    if yaml.__with_libyaml__:
        assert issubclass(_FastLoader, yaml.CSafeLoader)
    odd = "a: 010\nb: 5e9\non: 1\nc: 1:20\nd: 0x1f\ne: [1_000, -007, 0o10]\n"
    assert _load_yaml(odd) == {"a": 10, "b": 5e9, "on": 1, "c": "1:20", "d": 31,
                               "e": [1000, -7, 8]}
