"""What plugins import keeps working: the public API, every import the docs show, and the import
paths of release 0.1 (moved, with a deprecation warning, for one release)."""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import federation
from federation._moved import MOVED

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def test_every_public_name_resolves():
    for name in federation.__all__:
        assert getattr(federation, name) is not None, name


def documented_imports() -> list[tuple[str, str]]:
    """``(doc, statement)`` for every ``import`` / ``from federation... import`` in the Python
    code blocks of the docs (examples that import a third-party plugin's own module are
    skipped: they need that plugin installed)."""
    out = []
    for doc in DOCS:
        for block in re.findall(r"```python\n(.*?)```", doc.read_text(), re.S):
            try:
                tree = ast.parse(block)
            except SyntaxError:
                continue
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                        "federation"):
                    out.append((doc.name, ast.unparse(node)))
                elif isinstance(node, ast.Import) and all(
                        a.name.startswith("federation.") or a.name == "federation"
                        for a in node.names):
                    out.append((doc.name, ast.unparse(node)))
    return out


@pytest.mark.parametrize(("doc", "statement"), documented_imports())
def test_documented_imports_work_without_warnings(doc, statement):
    """The docs show only current paths: each statement imports, and warns of nothing."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        exec(statement, {})  # noqa: S102 - the statement is one import line from our docs


def test_the_docs_show_imports():
    assert len(documented_imports()) >= 10


@pytest.mark.parametrize(("old", "new"), sorted(MOVED.items()))
def test_moved_paths_import_the_same_module_with_a_warning(old, new):
    """Each 0.1 path gives the very module of its new path (classes identical, so
    ``isinstance`` and ``mock.patch`` agree), and says where it went.  Run in a fresh
    interpreter: a module already imported under its old name would not warn again."""
    code = (
        "import importlib, sys, warnings\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    warnings.simplefilter('always')\n"
        f"    old = importlib.import_module({old!r})\n"
        f"new = importlib.import_module({new!r})\n"
        "assert old is new, (old, new)\n"
        "msgs = [str(x.message) for x in w if x.category is DeprecationWarning]\n"
        f"assert any({old!r} in m and {new!r} in m for m in msgs), msgs\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_old_from_import_of_a_class_is_the_new_class():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        old = importlib.import_module("federation.components")
    from federation.plugin.components import Routing

    assert old.Routing is Routing


def test_moved_table_names_only_modules_that_exist():
    for new in MOVED.values():
        importlib.import_module(new)
