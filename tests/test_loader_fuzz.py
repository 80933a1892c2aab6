"""Property-based loading: near-valid machine and experiment documents (a valid one with one or
more fields replaced by junk, removed, or an unknown key added) either load or are refused with
the project's own error naming the file, in one message, and never crash the loader; those
that load then pass or fail the checks made before a run (clock range, memory, network, route
tables, VCs) the same way.

Cheap (no simulation), so a few hundred examples run in CI; ``FEDERATION_FUZZ_EXAMPLES``
multiplies them for a longer search.  Seeded (``derandomize``) so CI is reproducible.
"""

from __future__ import annotations

import copy
import json
import math
import os
from typing import Any

import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from federation.errors import ConfigError, FederationError
from federation.pipeline.load import load_experiment
from federation.pipeline.point import preflight

EXAMPLES = 300 * max(1, int(os.environ.get("FEDERATION_FUZZ_EXAMPLES", "40")) // 40)

BASE = {
    "schema_version": 1,
    "machine": {
        "topology": {"kind": "dragonfly", "p": 2, "a": 4, "h": 2},
        "links": {"global": {"bandwidth": "4.7GiB/s", "latency": "100ns", "buffer": "16KiB"},
                  "terminal": {"bandwidth": "5.25GiB/s"}},
        "router": {"delay": "50ns", "vcs": 3},
        "nic": {"bandwidth": "5GiB/s"},
        "packet_size": 512,
    },
    "routing": {"algorithm": "ugal", "bias": "1KiB"},
    "workload": {"kind": "synthetic", "pattern": "uniform", "load": 0.3, "message_size": "1KiB"},
    "engine": {"kind": "native"},
    "seed": 3,
    "stop": {"warmup": "1us", "measure": "2us"},
    "sweep": {"workload.load": [0.1, 0.2]},
    "outputs": {"format": "csv", "packets": False},
}

JUNK = st.one_of(
    st.none(), st.booleans(),
    st.integers(-2**70, 2**70), st.sampled_from([0, -1, 1, 2**31, 2**63, 10**9]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["", "x", "5GHz", "1e99ns", "100", "1e-7", "3GiB", "1b", "-5ns", "nan",
                     "uniform", "dragonfly", "minimal", "0.5", "1e9", "9s", "true", "µs",
                     "x" * 500, "10ns", "1KiB", "2GiB/s"]),
    st.sampled_from([1, 2, 3, 0.5, 0.05, 1.0, 4096]),
    st.text(max_size=20),
    st.lists(st.integers(-3, 5), max_size=4),
    st.dictionaries(st.sampled_from(["kind", "p", "load", "zz"]), st.integers(-1, 3),
                    max_size=3),
)


def test_the_base_document_loads(tmp_path):
    (tmp_path / "e.yaml").write_text(yaml.safe_dump(BASE))
    assert len(load_experiment(tmp_path / "e.yaml").points) == 2


def paths(doc: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path to a value in ``doc`` (mappings and lists)."""
    out = [prefix] if prefix else []
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += paths(v, (*prefix, i))
    return out


@st.composite
def near_valid(draw: st.DrawFn) -> dict:
    doc = copy.deepcopy(BASE)
    for _ in range(draw(st.integers(1, 2))):
        where = draw(st.sampled_from(paths(doc)))
        parent = doc
        for part in where[:-1]:
            parent = parent[part]
        action = draw(st.sampled_from(["replace", "replace", "replace", "delete", "add"]))
        if action == "replace":
            parent[where[-1]] = draw(JUNK)
        elif action == "delete" and isinstance(parent, dict):
            del parent[where[-1]]
        elif isinstance(parent, dict):
            parent[draw(st.sampled_from(["zz", "Load", "vc", "latency"]))] = draw(JUNK)
        if not isinstance(doc.get("machine"), dict) and "machine" in doc:
            break
    return doc


def dump(doc: dict, suffix: str) -> str | None:
    if suffix == ".json":
        try:
            return json.dumps(doc, allow_nan=True)
        except (TypeError, ValueError):
            return None
    return yaml.safe_dump(doc)


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(doc=near_valid(), suffix=st.sampled_from([".yaml", ".json"]))
def test_near_valid_documents_load_or_are_refused_by_name(tmp_path, doc, suffix):
    text = dump(doc, suffix)
    if text is None:
        return
    path = tmp_path / f"e{suffix}"
    path.write_text(text)
    try:
        loaded = load_experiment(path)
    except ConfigError as exc:
        msg = str(exc)
        event("refused")
        assert msg.startswith(str(path)), msg
        assert "Traceback" not in msg
        return
    except FederationError as exc:  # a plugin refusing its parameters with its own error
        event("refused by a plugin")
        assert str(exc)
        return
    try:  # the checks before a run: clock range, memory, network, tables, VCs (no simulation)
        preflight(loaded, max_memory=1 << 30)
    except ConfigError as exc:
        event("refused before the run")
        assert str(exc).startswith(str(path)), str(exc)
        return
    except FederationError as exc:
        event("refused before the run by a plugin")
        assert str(exc)
        return
    event("loaded and checked")
    for point in loaded.points:
        m = point.machine.machine
        assert m.packet_size == int(m.packet_size) >= 1
        assert m.router.vcs >= 1 and not isinstance(m.router.vcs, bool)
        for cls in m.links.values():
            for value in (cls.bandwidth, cls.latency, cls.buffer):
                assert value is None or (math.isfinite(value) and value >= 0)
        load = getattr(point.workload.params, "load", None)
        assert load is None or 0 < load <= 1
        assert point.experiment.stop.warmup >= 0 and math.isfinite(point.experiment.stop.warmup)
