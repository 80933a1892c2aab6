"""The built wheel: everything installs under ``federation/``, the shipped files are in it, and
it runs the quickstart in a fresh virtual environment without any generic top-level package.

The repository keeps ``plugins/``, ``adapters/`` and ``schemas/`` at the top level, and
``pyproject.toml`` maps them to ``federation.plugins``, ``federation.adapters`` and
``federation.schemas``.  This test checks that mapping on the real artefact.  The wheel is
built from a copy of the sources, so the build's ``build/`` and ``*.egg-info`` never land in the
work tree.  Dependencies of the fresh environment come from the package index (or pip's cache),
as for a user.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import pip_build_flags

REPO = Path(__file__).resolve().parent.parent
GENERIC = ("plugins", "adapters", "schemas")


def _ignore(folder: str, names: list[str]) -> set[str]:
    """What the copy leaves out: build and cache folders anywhere, and the run output folders
    (``results/``, ``out/``) of the repository's top level only (``federation/results/`` is
    a package)."""
    skip = set(shutil.ignore_patterns(
        ".venv", ".git", "__pycache__", "*.egg-info", "build", "dist", ".pytest_cache",
        ".ruff_cache", "*.nbi", "*.nbc")(folder, names))
    if Path(folder).resolve() == REPO.resolve():
        skip |= {"results", "out"} & set(names)
    return skip


def clean_env(**extra: str) -> dict[str, str]:
    """The environment minus anything that would point back at the repository or the test venv."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")
           and not k.startswith("FEDERATION_")}
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, Path]:
    """``(wheel, sources)``: the wheel built from a copy of the repository."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    shutil.copytree(REPO, src, ignore=_ignore)
    dist = tmp / "dist"
    r = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--disable-pip-version-check", "--no-deps",
         *pip_build_flags(), "-w", str(dist), str(src)],
        capture_output=True, text=True, env=clean_env())
    assert r.returncode == 0, r.stdout + r.stderr
    wheels = list(dist.glob("hpc_federation-*.whl"))
    assert len(wheels) == 1, list(dist.iterdir())
    return wheels[0], src


def test_wheel_has_no_generic_top_level_package(built):
    wheel, src = built
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/", 1)[0] for n in names}
    dist_info = {t for t in top if t.endswith(".dist-info")}
    assert len(dist_info) == 1
    assert top == {"federation", *dist_info}, sorted(top)
    assert not [n for n in names if n.split("/", 1)[0] in GENERIC]
    # the three folders are there, inside the federation package
    for pkg in GENERIC:
        assert f"federation/{pkg}/__init__.py" in names, pkg
    assert "federation/plugins/topologies/dragonfly.py" in names
    # every module of the federation package, plugins and adapters included: a subpackage
    # left out of [tool.setuptools] packages would build a wheel without it (e.g.
    # federation/plots/, federation/plugins/routings/)
    modules = sorted(p.relative_to(src).as_posix() for p in (src / "federation").rglob("*.py"))
    for folder in ("plugins", "adapters"):
        modules += sorted(f"federation/{p.relative_to(src).as_posix()}"
                          for p in (src / folder).rglob("*.py"))
    assert "federation/plots/standard.py" in modules
    assert "federation/plugins/routings/valiant.py" in modules
    assert not [m for m in modules if m not in names], [m for m in modules if m not in names]
    # every shipped machine/experiment file and JSON Schema
    shipped = sorted(p.relative_to(src / "schemas").as_posix()
                     for p in (src / "schemas").rglob("*")
                     if p.suffix in (".yaml", ".json"))
    assert "quickstart.yaml" in shipped and "machines/quickstart-dragonfly.yaml" in shipped
    missing = [s for s in shipped if f"federation/schemas/{s}" not in names]
    assert not missing, missing
    # built-in plugins are entry points into federation.plugins (federation.adapters for the
    # engines that drive external simulators), not into a top-level module
    info = next(iter(dist_info))
    eps = zipfile.ZipFile(wheel).read(f"{info}/entry_points.txt").decode()
    section = eps.split("[federation]", 1)[1].split("\n[", 1)[0]
    targets = [line.split("=", 1)[1].strip() for line in section.splitlines() if "=" in line]
    assert targets and all(t.startswith(("federation.plugins.", "federation.adapters."))
                           for t in targets), targets
    # the crossval pytest plugin and the shipped suite are in the wheel
    assert "federation.crossval.pytest_plugin" in eps.split("[pytest11]", 1)[1]
    assert "federation/schemas/crossval/native-vs-simgrid.crossval.yaml" in names


@pytest.mark.slow
def test_wheel_runs_quickstart_in_a_fresh_venv(built, tmp_path):
    wheel, _ = built
    venv = tmp_path / "venv"
    # no ensurepip: this venv's pip installs into the new one (pip --python), which is faster
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    r = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(py), "install", "-q",
         "--disable-pip-version-check", "--no-compile", str(wheel)],
        capture_output=True, text=True, env=clean_env())
    assert r.returncode == 0, r.stdout + r.stderr

    away = tmp_path / "elsewhere"  # not the repository: no plugins/ or schemas/ beside us
    away.mkdir()
    env = clean_env(FEDERATION_DISABLE_PLUGIN_AUTOLOAD="0")
    where = subprocess.run([str(py), "-c", "import federation; print(federation.__file__)"],
                           capture_output=True, text=True, cwd=away, env=env)
    assert where.returncode == 0, where.stderr
    assert Path(where.stdout.strip()).is_relative_to(venv), where.stdout

    out = tmp_path / "out"
    r = subprocess.run([str(venv / "bin" / "federation"), "run", "--out", str(out)],
                       capture_output=True, text=True, cwd=away, env=env, timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    res = json.loads((out / "results.json").read_text())
    assert res["experiment"] == "quickstart"
    assert len(res["points"]) == 5
    for point in res["points"]:
        s = point["summary"]
        assert s["packets_delivered"] == s["packets_generated"] > 0

    # the figures' dependency came with the wheel
    r = subprocess.run([str(venv / "bin" / "federation"), "plot", str(out)],
                       capture_output=True, text=True, cwd=away, env=env, timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (out / "plots" / "latency-load.png").is_file()

    r = subprocess.run([str(venv / "bin" / "federation"), "plugins"],
                       capture_output=True, text=True, cwd=away, env=env)
    assert r.returncode == 0, r.stderr
    modules = [p["module"] for p in json.loads(r.stdout)]
    assert "federation.plugins.topologies.dragonfly" in modules
    assert all(m.startswith("federation.plugins.") for m in modules), modules

    for name in GENERIC:
        r = subprocess.run([str(py), "-c", f"import {name}"],
                           capture_output=True, text=True, cwd=away, env=env)
        assert r.returncode != 0, f"'import {name}' works in a clean install: {r.stdout}"
        assert f"ModuleNotFoundError: No module named '{name}'" in r.stderr, r.stderr
