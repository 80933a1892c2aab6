"""Every file an experiment reads (:func:`experiment_inputs`), found in what the loader
resolved, so that the commands that write (``run``, ``export``, ``comm --plot``) refuse an
output that would replace one of them
(:func:`~federation.results.destinations.check_not_input`)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Annotated, Any, get_args, get_origin

from pydantic import BaseModel

from federation.models.base import DocumentPath
from federation.pipeline.points import LoadedExperiment, point_jobs
from federation.results.destinations import check_not_input


def experiment_inputs(loaded: LoadedExperiment) -> list[Path]:
    """Every file or folder the experiment reads, as the loader found them: the file itself,
    each point's machine file (given by path, or inlined from one for a sweep or an
    override), and every path its components were given (their ``DocumentPath``
    parameters, however deep: a topology's graph file, a program or trace, a compute
    profile), already resolved against the folder of the file that names it.  Output
    commands refuse to write over any of them
    (:func:`~federation.results.destinations.check_not_input`): they were not tracked, and
    ``run --out DIR --overwrite`` replaced a results folder holding the machine file whole."""
    found = dict.fromkeys([loaded.source])
    for point in loaded.points:
        found[point.machine.source] = None
        components = [point.machine.topology, point.machine.qos, point.machine.arbiter,
                      point.routing, point.engine, point.workload, point.background,
                      point.controller,
                      *(c for j in point_jobs(point) for c in (j.workload, j.placement))]
        for value in [point.experiment, point.machine.machine,
                      *(getattr(c, "params", None) for c in components)]:
            found.update(dict.fromkeys(_document_paths(value)))
    return [Path(p) for p in found]


def _document_paths(value: Any, is_path: bool = False) -> list[str]:
    """The strings of ``value`` held by ``DocumentPath`` fields (``is_path``: ``value`` is
    such a field's), in models, lists and mappings.  A field whose type can hold none (a
    ``messages`` workload's million messages) is not walked."""
    if isinstance(value, str):
        return [value] if is_path else []
    if isinstance(value, BaseModel):
        out = []
        for name, f in type(value).model_fields.items():
            path = is_path or any(m in _PATH for m in f.metadata) or _names_path(f.annotation)
            if path or _may_hold_path(f.annotation):
                out += _document_paths(getattr(value, name, None), path)
        return out
    if isinstance(value, list | tuple):
        return [p for v in value for p in _document_paths(v, is_path)]
    if isinstance(value, dict):
        return [p for v in value.values() for p in _document_paths(v, is_path)]
    return []


#: what marks a ``DocumentPath`` (its validator, which resolves it against the file's folder)
_PATH = DocumentPath.__metadata__


def _names_path(annotation: Any) -> bool:
    """Whether ``annotation`` is or holds ``DocumentPath`` (``DocumentPath | None``,
    ``list[DocumentPath]``)."""
    if get_origin(annotation) is Annotated and any(m in _PATH for m in annotation.__metadata__):
        return True
    return any(_names_path(a) for a in get_args(annotation))


def _may_hold_path(annotation: Any, seen: frozenset[Any] = frozenset()) -> bool:
    """Whether a value of type ``annotation`` may hold a ``DocumentPath``: it names one, or
    a model that may, or leaves the type open (``Any``: a component's parameters)."""
    try:
        return _may_hold(annotation, seen)
    except TypeError:  # a type that cannot be hashed for the cache: walked, to be safe
        return True


@functools.cache
def _may_hold(annotation: Any, seen: frozenset[Any]) -> bool:
    if annotation is Any or annotation is object or _names_path(annotation):
        return True
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation not in seen and any(  # a model holding itself: its other fields
            any(m in _PATH for m in f.metadata) or _may_hold_path(f.annotation,
                                                                 seen | {annotation})
            for f in annotation.model_fields.values())
    return any(_may_hold_path(a, seen) for a in get_args(annotation))


def check_inputs(loaded: LoadedExperiment, out_dir: Path, out_source: str) -> None:
    """Refuse an output folder that is, or holds, a file the experiment reads (the file
    itself, a machine file, a program, trace or graph file: :func:`~federation.pipeline.inputs.
    experiment_inputs`), before anything runs: the folder is replaced whole."""
    inputs = experiment_inputs(loaded)
    folders = [p for p in inputs if p.is_dir()]  # a DUMPI trace
    check_not_input(out_dir, out_source, files=[p for p in inputs if p not in folders],
                    within=folders, whole=True)
