"""JSON Schema of machine and experiment files for the plugins installed now.

The static models leave component parameters open (``{kind: ..., <params>}``) because plugins
add kinds at run time.  Here each component slot becomes a ``oneOf`` over the installed kinds,
each variant being that plugin's ``Params`` schema plus its ``kind`` constant, so an editor
validates ``topology: {kind: dragonfly, p: 2}`` as precisely as the loader does (as
``tox schema`` does for tox plugins).

A field whose default is made by a factory (a list, a nested model) gets that default written
too (:class:`FactoryDefaults`): pydantic leaves it out, and an editor would then show no
default for ``sizes`` of ``pingpong`` or a collective's ``compute``, which the program applies.
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema
from pydantic_core import core_schema

from federation.models.experiment import Experiment
from federation.models.machine import ComponentSpec, Machine
from federation.plugin.registry import ComponentRegistry, FederationPlugins

DIALECT = "https://json-schema.org/draft/2020-12/schema"


class FactoryDefaults(GenerateJsonSchema):
    """pydantic's generator, with the defaults that factories make, written as a file gives them.

    A nested model is written with the fields its factory set (``{dist: constant, value: 0}``,
    ``{}`` for a model of defaults only), a component as ``{kind: <name>, <params>...}``, a
    nested component with no parameters as its bare name: each is what a user may write."""

    def get_default_value(self, schema: core_schema.WithDefaultSchema) -> Any:
        factory = schema.get("default_factory")
        if factory is None or schema.get("default_factory_takes_data"):
            return super().get_default_value(schema)
        return factory()  # type: ignore[call-arg]

    def encode_default(self, dft: Any) -> Any:
        return super().encode_default(_as_written(dft))


def _as_written(value: Any) -> Any:
    if isinstance(value, ComponentSpec):
        params = value.params
        if isinstance(params, BaseModel):
            params = params.model_dump(mode="json", exclude_unset=True)
        return {value.component_key: value.kind, **params}
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_unset=True)
    return value


def _schema(model: type[BaseModel]) -> dict[str, Any]:
    return model.model_json_schema(ref_template="#/$defs/{model}",
                                   schema_generator=FactoryDefaults)


def _component(registry: ComponentRegistry[Any], key: str, defs: dict[str, Any],
               open_loop_only: bool = False) -> dict[str, Any]:
    """A component slot: ``{<key>: <name>, <params>...}`` of an installed kind, or the bare
    name of a kind that needs no parameter (``routing: ugal``, ``placement: rest``), as the
    loader takes them (:class:`~federation.models.machine.ComponentSpec`)."""
    variants, bare = [], []
    for name in registry.names():
        cls = registry.get(name)
        if open_loop_only and getattr(cls, "closed_loop", False):
            continue
        s = _schema(cls.Params)
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
        if not s.get("required"):
            bare.append(name)
    slot: dict[str, Any] = {"oneOf": variants}
    if bare:
        slot = {"anyOf": [{"type": "string", "enum": bare}, slot]}
    return slot


def _slot(props: dict[str, Any], field: str, component: dict[str, Any],
          nullable: bool = False) -> None:
    """Put ``component`` in ``props[field]``, keeping the field's description and default."""
    old = props[field]
    new = {"anyOf": [component, {"type": "null"}]} if nullable else component
    for k in ("description", "default"):
        if k in old:
            new[k] = old[k]
    props[field] = new


def machine_schema(plugins: FederationPlugins) -> dict[str, Any]:
    s = _schema(Machine)
    defs = s.setdefault("$defs", {})
    _slot(s["properties"], "topology", _component(plugins.topologies, "kind", defs))
    _slot(s["properties"], "qos", _component(plugins.qos, "kind", defs))
    _slot(defs["RouterConfig"]["properties"], "arbiter",
          _component(plugins.arbiters, "kind", defs))
    defs.pop("ComponentSpec", None)
    s["$schema"] = DIALECT
    s["title"] = "hpc-federation machine file"
    return s


def experiment_schema(plugins: FederationPlugins) -> dict[str, Any]:
    s = _schema(Experiment)
    defs = s.setdefault("$defs", {})
    m = machine_schema(plugins)
    mdefs = m.pop("$defs", {})
    m.pop("$schema", None)
    defs.update(mdefs)  # the machine's, with their component slots (router.arbiter)
    defs["Machine"] = m
    s["properties"]["machine"] = {
        "anyOf": [{"type": "string", "description": "path of a machine file"},
                  {"$ref": "#/$defs/Machine"}],
    }
    props = s["properties"]
    _slot(props, "routing", _component(plugins.routings, "algorithm", defs))
    _slot(props, "workload", _component(plugins.workloads, "kind", defs))
    _slot(props, "background",  # open-loop kinds only, or null
          _component(plugins.workloads, "kind", defs, open_loop_only=True), nullable=True)
    _slot(props, "routing_controller", _component(plugins.controllers, "kind", defs),
          nullable=True)
    _slot(props, "engine", _component(plugins.engines, "kind", defs))
    job = defs["Job"]["properties"]
    _slot(job, "workload", _component(plugins.workloads, "kind", defs))
    _slot(job, "placement", _component(plugins.placements, "kind", defs))
    for name, registry in (("PatternSpec", plugins.patterns),
                           ("InjectionSpec", plugins.injections)):
        if name in defs:  # a workload's nested components (synthetic's pattern, injection)
            defs[name] = _component(registry, "kind", defs)
    for k in ("ComponentSpec", "AlgorithmSpec", "NestedSpec"):
        defs.pop(k, None)
    s["$schema"] = DIALECT
    s["title"] = "hpc-federation experiment file"
    return copy.deepcopy(s)
