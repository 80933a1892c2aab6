"""Finding SimGrid's Python module without letting a system folder shadow our own packages.

SimGrid's Python bindings come from two places:

* ``pip install simgrid`` (4.x) puts ``simgrid`` on the interpreter's own path: a plain
  ``import simgrid`` finds it.
* Debian's ``python3-simgrid`` (3.32, installs in seconds; what CI uses) puts one extension
  module, ``simgrid.cpython-311-x86_64-linux-gnu.so``, in ``/usr/lib/python3/dist-packages``.
  A virtual environment on another CPython 3.11 (pyenv, python.org) does not see that folder.

Putting the whole of Debian's ``dist-packages`` on ``sys.path`` would work, but that folder also
holds Debian's numpy, pydantic, yaml... built for Debian's interpreter: ahead of the venv they
would silently replace the versions ``pyproject.toml`` pins, behind it they still leak in any
package the venv lacks.  So this module locates *only the SimGrid extension file* and loads it
under the name ``simgrid`` with :mod:`importlib`: nothing else from that folder becomes
importable.  The search order is

1. ``$FEDERATION_SIMGRID_MODULE``: the path of a SimGrid extension module (any install);
2. ``simgrid`` on the interpreter's own path (``pip install simgrid``);
3. the extension in Debian's ``dist-packages`` folders, if its ABI tag is this interpreter's.

Importing SimGrid prints a configuration line, and a SimGrid engine cannot be created twice in
one process, so the adapter imports it only in its worker process (:mod:`.worker`); the checks
here (:func:`module_file`, :func:`found`) only look for the file.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

#: environment variable naming a SimGrid extension module file explicitly
ENV_MODULE = "FEDERATION_SIMGRID_MODULE"
#: folders where Debian's python3-simgrid puts the extension
DEBIAN_DIRS = ("/usr/lib/python3/dist-packages", "/usr/local/lib/python3/dist-packages")
#: what to tell a user whose machine has no SimGrid
INSTALL_HINT = ("install it with 'apt-get install -y python3-simgrid' (Debian, SimGrid 3.32) or "
                f"'pip install simgrid', or set {ENV_MODULE} to its module file")


def _on_own_path() -> str | None:
    """The origin of a ``simgrid`` importable by this interpreter as it is, if any."""
    try:
        spec = importlib.util.find_spec("simgrid")
    except (ImportError, ValueError):
        return None
    return spec.origin if spec is not None and spec.origin else None


def module_file() -> str | None:
    """Where SimGrid's module is (see the module docstring for the order), or ``None``."""
    explicit = os.environ.get(ENV_MODULE)
    if explicit:
        return explicit if Path(explicit).is_file() else None
    own = _on_own_path()
    if own is not None:
        return own
    for folder in DEBIAN_DIRS:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            candidate = Path(folder) / f"simgrid{suffix}"
            if candidate.is_file():
                return str(candidate)
    return None


def found() -> bool:
    """True when a SimGrid module for this interpreter is installed (not imported here)."""
    return module_file() is not None


def import_simgrid() -> ModuleType:
    """Import SimGrid's module (in the worker process only; see the module docstring)."""
    if "simgrid" in sys.modules:
        return sys.modules["simgrid"]
    path = module_file()
    if path is None:
        raise ImportError(f"SimGrid is not installed: {INSTALL_HINT}")
    if os.environ.get(ENV_MODULE) is None and _on_own_path() == path:
        import simgrid

        return simgrid
    spec = importlib.util.spec_from_file_location("simgrid", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path} is not a Python extension module")
    module = importlib.util.module_from_spec(spec)
    sys.modules["simgrid"] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules["simgrid"]
        raise
    return module
