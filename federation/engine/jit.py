"""How the engine's compiled code is declared, compiled and cached, and why a warm run never
imports numba.

**Parts.**  The event loop is assembled from small compiled functions (queues, credits, NICs,
routing, arbitration).  Each is a :func:`part`: compiled once per signature and cached on disk
on its own, without the Python and C wrappers a function called from Python needs (a part
taking the loop's ``Sim`` container would otherwise carry an unboxing wrapper for its fifty
arrays), and marked ``alwaysinline`` for LLVM, so that the loop that calls it gets its body
inlined, as if written in one piece.  Inlining numba's intermediate code instead
(``inline="always"``) retyped and deep-copied every callee at every call site: more than half
of a cold compile.  Parts are cached one by one, so a new loop (a routing or arbiter plugin's,
see :mod:`federation.engine.compile`) recompiles only what calls the plugin.

**Lazy.**  Declaring a part imports nothing: :func:`part`, :func:`kernel` and
:func:`intrinsic` return :class:`Lazy` placeholders, which become numba functions the first
time numba types a call to them (numba asks an object it meets as a global for its
``_numba_type_``).  A warm run loads its compiled loop as native code
(:mod:`federation.engine.native_code`) and never imports numba: importing it costs 0.5 s and
90 MB, its first dispatch another 0.35 s and 60 MB, more than the whole of a small run.

**Stamps.**  numba keys a cached function on the source of its own file only, but a cached
part holds the code of every part it inlined.  Editing ``events.py`` without touching
``loop.py`` would load a stale loop.  :func:`install_cache_stamps` puts locators in front of
numba's own for the files of this package: their stamp is a digest over every engine module
(``federation/engine``, the limits), so any edit there recompiles every part and loop; a
function in another file of the package (a built-in routing) also depends on the files beside
it.  The caches stay where numba puts them (``$NUMBA_CACHE_DIR``, else ``__pycache__`` beside
the source, else the user's cache folder).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from federation.engine import indexing

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
_ENGINE_FILES = ("engine/*.py", "models/limits.py")


class Lazy:
    """A compiled function not compiled yet: numba makes it on first use.

    ``py_func`` is the Python function (what :mod:`federation.engine.compile` recompiles
    into a loop); :meth:`compiled` makes the numba object; numba, meeting a ``Lazy`` as a
    global of a function it compiles, types it through ``_numba_type_``."""

    def __init__(self, fn: Callable, make: Callable[[Callable], Any]) -> None:
        self.py_func = fn
        self._make = make
        self._compiled: Any = None
        self.__name__ = getattr(fn, "__name__", "part")
        self.__qualname__ = getattr(fn, "__qualname__", self.__name__)
        self.__module__ = getattr(fn, "__module__", __name__)
        self.__doc__ = fn.__doc__

    def compiled(self) -> Any:
        if self._compiled is None:
            use_numba()
            self._compiled = self._make(self.py_func)
        return self._compiled

    @property
    def _numba_type_(self) -> Any:
        from numba.core.registry import cpu_target

        fresh = self._compiled is None
        value = self.compiled()
        if fresh:  # an intrinsic registers its typing and lowering when made: reload them
            cpu_target.typing_context.refresh()
            cpu_target.target_context.refresh()
        return cpu_target.typing_context.resolve_value_type(value)

    def __call__(self, *args: Any) -> Any:
        return self.compiled()(*args)

    def __repr__(self) -> str:
        return f"<compiled part {self.__module__}.{self.__qualname__}>"


def part(fn: Callable) -> Lazy:
    """``fn`` as a part of the engine's loop (see the module's docstring)."""

    def make(f: Callable) -> Any:
        from numba import njit

        return njit(**PART_OPTIONS)(f)

    return Lazy(fn, make)


def kernel(**options: Any) -> Callable[[Callable], Lazy]:
    """A compiled function called from Python or from a loop's entry (``njit(**options)``),
    made on first use."""

    def deco(fn: Callable) -> Lazy:
        def make(f: Callable) -> Any:
            from numba import njit

            return njit(**options)(f)

        return Lazy(fn, make)

    return deco


def intrinsic(fn: Callable) -> Lazy:
    """numba's ``@intrinsic`` (code generated for LLVM directly), made on first use."""

    def make(f: Callable) -> Any:
        from numba.extending import intrinsic as numba_intrinsic

        return numba_intrinsic(f)

    return Lazy(fn, make)


def compiled_function(fn: Any) -> Any:
    """The numba object behind ``fn`` (a :class:`Lazy`, or already numba's)."""
    return fn.compiled() if isinstance(fn, Lazy) else fn


@cache
def use_numba() -> None:
    """Import numba for a compile: once per process, with this package's cache stamps and
    its indexing (:mod:`federation.engine.indexing`)."""
    install_cache_stamps()
    indexing.install()


@cache
def engine_digest() -> str:
    """Digest of every engine module's source, numba's version, the part options and the
    index-check mode (:mod:`federation.engine.indexing`)."""
    h = hashlib.sha256(_numba_version().encode())
    h.update(repr(sorted(PART_OPTIONS.items())).encode())
    h.update(b"index-check" if indexing.check_mode() else b"")
    for pattern in _ENGINE_FILES:
        for path in sorted(_PACKAGE.glob(pattern)):
            h.update(path.name.encode())
            h.update(path.read_bytes())
    return h.hexdigest()


def _numba_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("numba")
    except PackageNotFoundError:  # pragma: no cover - numba is a dependency
        return "unknown"


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


def install_cache_stamps() -> None:
    """Put this package's locators first in numba's list (once per process)."""
    from numba.core import caching

    def named(*names: str) -> type | None:
        for name in names:  # numba renamed them (0.59: leading underscore)
            found = getattr(caching, name, None)
            if found is not None:
                return found
        return None

    impl = named("CacheImpl", "_CacheImpl")
    if impl is None or getattr(impl, "_federation_stamps", False):
        return

    def stamped(base: type) -> type:
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

    bases = [named(n, "_" + n) for n in
             ("UserProvidedCacheLocator", "InTreeCacheLocator", "UserWideCacheLocator")]
    impl._locator_classes = [stamped(b) for b in bases if b is not None] + list(
        impl._locator_classes)
    impl._federation_stamps = True
