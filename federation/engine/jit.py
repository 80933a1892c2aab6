"""How the engine's compiled code is compiled and cached: :func:`part`, and cache stamps that
cover every module the compiled code comes from.

**Parts.**  The event loop is assembled from small compiled functions (queues, credits, NICs,
routing, arbitration).  Each is a :func:`part`: compiled once per signature and cached on disk
on its own, without the Python and C wrappers a function called from Python needs (a part
taking the loop's ``Sim`` container would otherwise carry an unboxing wrapper for its fifty
arrays), and marked ``alwaysinline`` for LLVM, so that the loop that calls it gets its body
inlined, as if written in one piece.  Inlining numba's intermediate code instead
(``inline="always"``) retyped and deep-copied every callee at every call site: more than half
of a cold compile.  Parts are cached one by one, so a new loop (a routing or arbiter plugin's,
see :mod:`federation.engine.compile`) recompiles only what calls the plugin.

**Stamps.**  numba keys a cached function on the source of its own file only, but a cached
loop holds the code of every part it inlined.  Editing ``events.py`` without touching
``loop.py`` would load a stale loop.  :func:`install_cache_stamps` puts locators in front of
numba's own for the files of this package: their stamp is a digest over every engine module
(``federation/engine``, the limits, the equal-cost masks), so any edit there recompiles every
part and loop; a function in another file of the package (a built-in routing) also depends
on its own file and those beside it.  The caches stay where numba puts them
(``$NUMBA_CACHE_DIR``, else ``__pycache__`` beside the source, else the user's cache folder).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import numba
from numba import njit
from numba.core import caching

#: options of every compiled part (see the module's docstring)
PART_OPTIONS: dict[str, Any] = {
    "cache": True,
    "forceinline": True,  # LLVM's alwaysinline: the caller gets the body
    "no_cpython_wrapper": True,  # never called from Python
    "no_cfunc_wrapper": True,
    "error_model": "numpy",  # no division checks (the loop's own model)
    "_nrt": False,  # the loop allocates nothing: no reference counting
}

_PACKAGE = Path(__file__).resolve().parents[1]  # federation/
_ROOT = _PACKAGE.parent  # the checkout (federation/, plugins/) or site-packages
#: files whose code compiled functions inline: a change in any recompiles every part
_ENGINE_FILES = ("engine/*.py", "models/limits.py", "network/equal_cost.py")


def part(fn: Callable) -> Any:
    """Compile ``fn`` as a part of the engine's loop (see the module's docstring)."""
    return njit(**PART_OPTIONS)(fn)


@cache
def engine_digest() -> str:
    """Digest of every engine module's source, numba's version and the part options."""
    h = hashlib.sha256(numba.__version__.encode())
    h.update(repr(sorted(PART_OPTIONS.items())).encode())
    for pattern in _ENGINE_FILES:
        for path in sorted(_PACKAGE.glob(pattern)):
            h.update(path.name.encode())
            h.update(path.read_bytes())
    return h.hexdigest()


@cache
def _dir_digest(folder: str) -> str:
    h = hashlib.sha256()
    for path in sorted(Path(folder).glob("*.py")):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def source_stamp(py_file: str) -> tuple[str, str]:
    """The stamp of a compiled function of this package defined in ``py_file``."""
    path = Path(py_file).resolve()
    if path.parent == _PACKAGE / "engine":
        return ("engine", engine_digest())
    return (_dir_digest(str(path.parent)), engine_digest())


def in_package(py_file: str) -> bool:
    """True for the files of this package (federation/ and the built-in plugins)."""
    try:
        rel = Path(py_file).resolve().relative_to(_ROOT)
    except ValueError:
        return False
    return rel.parts[:1] in (("federation",), ("plugins",))


def _stamped(base: type) -> type:
    """``base`` (one of numba's source-file locators) with this package's stamps, for this
    package's files only."""

    class Stamped(base):  # type: ignore[misc, valid-type]
        def get_source_stamp(self) -> tuple[str, str]:
            return source_stamp(self._py_file)

        @classmethod
        def from_function(cls, py_func: Any, py_file: str) -> Any:
            if not in_package(py_file):
                return None
            return super().from_function(py_func, py_file)

    Stamped.__name__ = Stamped.__qualname__ = f"Federation{base.__name__.lstrip('_')}"
    return Stamped


def _numba_names(*names: str) -> type | None:
    for name in names:  # numba renamed them (0.59: leading underscore)
        found = getattr(caching, name, None)
        if found is not None:
            return found
    return None


def install_cache_stamps() -> None:
    """Put this package's locators first in numba's list (once per process)."""
    impl = _numba_names("CacheImpl", "_CacheImpl")
    if impl is None or getattr(impl, "_federation_stamps", False):
        return
    bases = [_numba_names(n, "_" + n) for n in
             ("UserProvidedCacheLocator", "InTreeCacheLocator", "UserWideCacheLocator")]
    impl._locator_classes = [_stamped(b) for b in bases if b is not None] + list(
        impl._locator_classes)
    impl._federation_stamps = True


install_cache_stamps()
