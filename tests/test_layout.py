"""The package layout's rules, checked on the source: no import circles, and every import goes
down the layers that ``docs/architecture.md`` ("Import layers") writes down.

Every ``import`` and ``from ... import`` counts, wherever it is (module level, inside a function,
under ``TYPE_CHECKING``): a lazy or type-only import still ties two modules together, and the
circles this test was written against were mostly lazy ones.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: source folder -> dotted package it installs as (pyproject's package-dir)
SOURCES = {"federation": "federation", "plugins": "federation.plugins",
           "adapters": "federation.adapters", "schemas": "federation.schemas"}

#: layer of each top-level part of the package, lowest first; a module may import its own
#: part and any part of a lower layer, never a higher one or a sibling of its layer
LAYERS: list[tuple[str, ...]] = [
    ("errors", "interrupts", "_version", "_gc", "schemas"),
    ("models",),
    ("results", "network", "programs"),
    ("plugin",),
    ("engine",),
    ("pipeline",),
    ("api",),
    ("adapters",),
    ("plugins",),
    ("plots", "crossval"),
    ("cli",),
]


#: the pipeline's modules: values and bounds below everything, then the stages, which never
#: import each other, then the drivers that chain them (each may import those before it)
PIPELINE_BASE = ("points", "mode_rules", "rings", "bounds")
PIPELINE_STAGES: dict[str, tuple[str, ...]] = {
    "load": ("load", "overrides", "inputs"),
    "preflight": ("preflight",),
    "build": ("build", "tables_check"),
    "jobs": ("jobs",),
    "traffic": ("traffic", "messages", "rank_programs", "routing_modes", "traffic_memory"),
    "summary": ("summary", "job_figures"),
}
PIPELINE_DRIVERS = ("point", "distributed", "run")


def modules() -> dict[str, Path]:
    """Dotted name -> file of every module of the package (plugins and adapters included)."""
    out = {}
    for folder, dotted in SOURCES.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT / folder).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            out[".".join([dotted, *parts])] = path
    return out


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The package modules ``name`` imports (a ``from m import x`` names ``m.x`` when that is a
    module, else ``m``)."""
    tree = ast.parse(path.read_text(), str(path))
    is_pkg = path.name == "__init__.py"
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                pkg = name.split(".") if is_pkg else name.split(".")[:-1]
                pkg = pkg[:len(pkg) - node.level + 1]
                base = ".".join(pkg + ([base] if base else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base
                       for a in node.names]
        else:
            continue
        for t in targets:
            while t and t not in known:  # import a.b.c of a module a.b names a.b
                t = t.rpartition(".")[0]
            if t and t != name:
                out.add(t)
    return out


def graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    return {m: imports(m, p, known) for m, p in mods.items()}


def part(module: str) -> str:
    """``federation.pipeline.run`` -> ``pipeline``; the package's own ``__init__`` and the
    module of moved names are the public API, ``api``."""
    parts = module.split(".")
    if len(parts) == 1 or parts[1] == "_moved":
        return "api"
    return parts[1]


def layer(p: str) -> int:
    for i, names in enumerate(LAYERS):
        if p in names:
            return i
    raise AssertionError(f"package part {p!r} is in no layer of LAYERS: add it (and to "
                         "docs/architecture.md)")


def find_cycle(g: dict[str, set[str]]) -> list[str] | None:
    """One import circle of ``g`` (a list of modules, first == last), or ``None``."""
    colour: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> list[str] | None:
        colour[n] = 1
        stack.append(n)
        for m in sorted(g.get(n, ())):
            if colour.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in colour:
                found = visit(m)
                if found:
                    return found
        stack.pop()
        colour[n] = 2
        return None

    for n in sorted(g):
        if n not in colour:
            found = visit(n)
            if found:
                return found
    return None


def test_no_import_circles():
    cycle = find_cycle(graph())
    assert cycle is None, "import circle: " + " -> ".join(cycle)


def test_imports_go_down_the_layers():
    bad = []
    for mod, deps in sorted(graph().items()):
        here = part(mod)
        for dep in sorted(deps):
            there = part(dep)
            if there != here and layer(there) >= layer(here):
                bad.append(f"{mod} imports {dep} ({here} may not import {there})")
    assert not bad, "\n".join(bad)


def pipeline_rank(name: str) -> tuple[int, str]:
    """(order, group) of a pipeline module: base 0, stages 1 (each its own group), drivers
    2 + their position."""
    short = name.rpartition(".")[2]
    if short in PIPELINE_BASE:
        return 0, "base"
    for stage, mods in PIPELINE_STAGES.items():
        if short in mods:
            return 1, stage
    if short in PIPELINE_DRIVERS:
        return 2 + PIPELINE_DRIVERS.index(short), short
    if name == "federation.pipeline":
        return 0, "base"
    raise AssertionError(f"pipeline module {name} is in no group of PIPELINE_*: add it")


def test_pipeline_stages_call_only_downwards():
    """A stage imports the values of ``points`` and the ``bounds`` checks, never another
    stage; only the drivers chain stages.  So a point's path is read in one place
    (``pipeline/point.py``) and no stage climbs back into an earlier one."""
    bad = []
    for mod, deps in sorted(graph().items()):
        if part(mod) != "pipeline":
            continue
        here = pipeline_rank(mod)
        for dep in sorted(deps):
            if part(dep) != "pipeline" or dep == mod:
                continue
            there = pipeline_rank(dep)
            allowed = there[0] == 0 or (there[0] == 1 and (here[0] >= 2 or there == here)) \
                or (there[0] >= 2 and here[0] > there[0])
            if not allowed:
                bad.append(f"{mod} imports {dep}")
    assert not bad, "\n".join(bad)


def test_architecture_doc_states_the_layers():
    """The rule the test checks is the one the map shows."""
    doc = (ROOT / "docs" / "architecture.md").read_text()
    section = doc.split("## Import layers", 1)
    assert len(section) == 2, "docs/architecture.md has no '## Import layers' section"
    body = section[1].split("\n## ", 1)[0]  # up to the next section (others have tables too)
    rows = re.findall(r"^\| (\d+) \| ([^|]+) \|", body, re.M)
    assert [tuple(sorted(n.strip(" `") for n in names.split(","))) for _, names in rows] == \
        [tuple(sorted(names)) for names in LAYERS]


def test_cycle_finder_names_a_circle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


@pytest.mark.parametrize("package", ["models", "results", "network", "programs", "plugin",
                                     "engine", "pipeline", "plots", "crossval", "cli"])
def test_each_stage_says_what_it_owns(package):
    """Each package's ``__init__`` docstring says what the stage owns and what it may import."""
    init = ROOT / "federation" / package / "__init__.py"
    doc = ast.get_docstring(ast.parse(init.read_text())) or ""
    assert "May import" in doc, f"{init} docstring does not say what it may import"
