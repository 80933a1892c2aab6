"""JSON Schema of machine and experiment files for the plugins installed now.

The static models leave component parameters open (``{kind: ..., <params>}``) because plugins
add kinds at run time.  Here each component slot becomes a ``oneOf`` over the installed kinds,
each variant being that plugin's ``Params`` schema plus its ``kind`` constant, so an editor
validates ``topology: {kind: dragonfly, p: 2}`` as precisely as the loader does (as
``tox schema`` does for tox plugins).
"""

from __future__ import annotations

import copy
from typing import Any

from federation.models.experiment import Experiment
from federation.models.machine import Machine
from federation.plugin.registry import ComponentRegistry, FederationPlugins

DIALECT = "https://json-schema.org/draft/2020-12/schema"


def _component(registry: ComponentRegistry[Any], key: str, defs: dict[str, Any],
               open_loop_only: bool = False) -> dict[str, Any]:
    variants = []
    for name in registry.names():
        cls = registry.get(name)
        if open_loop_only and getattr(cls, "closed_loop", False):
            continue
        s = cls.Params.model_json_schema(ref_template="#/$defs/{model}")
        for dname, d in s.pop("$defs", {}).items():
            defs.setdefault(dname, d)
        props = {key: {"const": name}, **s.get("properties", {})}
        variants.append({
            "type": "object",
            "title": f"{registry.what} {name}",
            "description": cls.describe() or s.get("description", ""),
            "properties": props,
            "required": [key, *s.get("required", [])],
            "additionalProperties": False,
        })
    return {"oneOf": variants}


def _named(registry: ComponentRegistry[Any], defs: dict[str, Any]) -> dict[str, Any]:
    """A component slot that also takes a bare name (``placement: rest``)."""
    return {"anyOf": [{"type": "string", "enum": registry.names()},
                      _component(registry, "kind", defs)]}


def machine_schema(plugins: FederationPlugins) -> dict[str, Any]:
    s = Machine.model_json_schema(ref_template="#/$defs/{model}")
    defs = s.setdefault("$defs", {})
    s["properties"]["topology"] = _component(plugins.topologies, "kind", defs)
    qos = _component(plugins.qos, "kind", defs)
    qos["default"] = {"kind": "none"}
    s["properties"]["qos"] = qos
    defs.pop("ComponentSpec", None)
    s["$schema"] = DIALECT
    s["title"] = "hpc-federation machine file"
    return s


def experiment_schema(plugins: FederationPlugins) -> dict[str, Any]:
    s = Experiment.model_json_schema(ref_template="#/$defs/{model}")
    defs = s.setdefault("$defs", {})
    m = machine_schema(plugins)
    mdefs = m.pop("$defs", {})
    m.pop("$schema", None)
    for k, v in mdefs.items():
        defs.setdefault(k, v)
    defs["Machine"] = m
    s["properties"]["machine"] = {
        "anyOf": [{"type": "string", "description": "path of a machine file"},
                  {"$ref": "#/$defs/Machine"}],
    }
    s["properties"]["routing"] = _component(plugins.routings, "algorithm", defs)
    s["properties"]["routing"]["default"] = {"algorithm": "minimal"}
    s["properties"]["workload"] = _component(plugins.workloads, "kind", defs)
    background = s["properties"]["background"]  # open-loop kinds only, or null
    s["properties"]["background"] = {
        "anyOf": [_component(plugins.workloads, "kind", defs, open_loop_only=True),
                  {"type": "null"}],
        "default": None, "description": background.get("description", "")}
    s["properties"]["engine"] = _component(plugins.engines, "kind", defs)
    s["properties"]["engine"]["default"] = {"kind": "native"}
    job = defs["Job"]["properties"]
    job["workload"] = _component(plugins.workloads, "kind", defs)
    job["placement"] = _named(plugins.placements, defs)
    for name, registry in (("PatternSpec", plugins.patterns),
                           ("InjectionSpec", plugins.injections)):
        if name in defs:  # a workload's nested components (synthetic's pattern, injection)
            defs[name] = _named(registry, defs)
    for k in ("ComponentSpec", "AlgorithmSpec", "NestedSpec"):
        defs.pop(k, None)
    s["$schema"] = DIALECT
    s["title"] = "hpc-federation experiment file"
    return copy.deepcopy(s)
