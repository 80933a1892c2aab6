"""Compile the event loop with a routing's, an arbiter's (and a routing controller's)
functions inside it.

Numba cannot cache a compiled function that takes another compiled function as an argument or
closes over one (the cache key then holds the callee's identity, new in every process), and a
loop that calls plugins through a function pointer could not inline them.  So for each loop
other than the built-in one, this module writes a copy of :mod:`federation.engine.loop` whose
call-out block imports the plugin's functions under the names the loop calls, into a cache
folder, and compiles it, with the plugin code inlined like built-in code.

A copy also fixes the *variant*: ``PROGRAMS = False`` compiles a loop without the rank-program
code, which open-loop runs (the quickstart, every synthetic sweep) use: it compiles in about
half the time; ``CHECK_ARBITER = False`` one that trusts the arbiter's answers (the engine's
``check_arbiter: false``, see :mod:`federation.engine.arbiter_check`).

Only what ``loop.py`` defines (the functions that call a plugin, and the loop) is compiled
for a copy: every other part (queue, router, NIC, programs) is a cached
:func:`~federation.engine.jit.part`, compiled once for all loops.  The compiled loop is kept as
native code (:mod:`federation.engine.native_code`) named by a digest of the copy's text, of
the source of the modules that define the call-outs, of every engine module and of the
run's argument types, so editing a plugin or the engine compiles a fresh loop instead of
loading a stale one, and a loop compiled before is loaded without importing numba.  A change
in a module that a plugin's modules import is not seen: ``FEDERATION_CACHE_DIR`` can be
emptied safely at any time.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from federation.engine import loop as default_loop
from federation.engine.jit import (
    PART_OPTIONS,
    Lazy,
    compiled_function,
    engine_digest,
    use_numba,
)
from federation.engine.native_code import NativeLoop, layout_of, native_loop
from federation.errors import RoutingError

_BEGIN = "# --- call-outs (compile.py replaces these lines)\n"
_END = "# --- end of call-outs\n"
_VARIANT = ("PROGRAMS = True\nIQ = False\nCHECK_ARBITER = True\nCONTROLLED = False\n"
            "QOS = False\nRINGS = False\nQOS_NIC = False\nCOUNTERS = True\n")


def cache_dir() -> Path:
    """Where generated loops live: ``$FEDERATION_CACHE_DIR``, else the user's cache folder."""
    env = os.environ.get("FEDERATION_CACHE_DIR")
    if env:
        base = Path(env)
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        base = (Path(xdg) if xdg else Path.home() / ".cache") / "hpc-federation"
    path = base / "loops"
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".writable"
        probe.touch()
        return path
    except OSError:  # a read-only home: compile per process in a temporary folder
        path = Path(tempfile.gettempdir()) / f"hpc-federation-{os.getuid()}" / "loops"
        path.mkdir(parents=True, exist_ok=True)
        return path


def _compiled(fn: Any) -> bool:
    """True for a compiled function: an engine part, or numba's ``@njit``."""
    if isinstance(fn, Lazy):
        return True
    if "numba" not in sys.modules:  # nothing made with numba exists yet
        return False
    from numba.core.registry import CPUDispatcher

    return isinstance(fn, CPUDispatcher)


def _where(fn: Any, what: str, owner: str) -> tuple[str, str]:
    """``(module, name)`` a generated module can import ``fn`` from; refuses what is not a
    compiled function importable by name."""
    if not _compiled(fn):
        raise RoutingError(f"{owner}: its {what} function {fn!r} is not compiled with "
                           "numba's @njit; the engine calls it inside its compiled loop")
    py = fn.py_func
    module, name = py.__module__, py.__name__
    try:
        found = getattr(importlib.import_module(module), name, None)
    except ImportError:
        found = None
    if found is not fn or module == "__main__":
        raise RoutingError(f"{owner}: its {what} function {module}.{name} must be defined at "
                           "module level of an importable module, so that the engine's loop "
                           "can import it")
    return module, name


def _module_source(module: str) -> str:
    try:
        return inspect.getsource(sys.modules[module])
    except (OSError, TypeError, KeyError):
        return ""


def loop_for(route: Any, inject: Any, arbitrate: Any, owner: str, args: tuple,
             programs: bool = True, iq: bool = False, control: Any = None,
             check_arbiter: bool = True, qos: bool = False, rings: bool = False,
             qos_nic: bool = False, counters: bool = True) -> NativeLoop:
    """The compiled loop calling these functions (``owner`` names the routing and arbiter in
    messages) for arguments like ``args`` (``budget, until, sim, pg, rt, ab, cur``);
    ``programs=False``: the open-loop variant; ``iq``: booksim_iq routers; ``control``: a
    routing controller's ``decide`` (``None``: none, and no call is compiled);
    ``check_arbiter=False``: the arbiter's answers are not checked; ``qos``: several traffic
    classes, each in its own VCs; ``rings``: a QoS arbiter state with sliding windows
    (:mod:`federation.engine.qos`); ``qos_nic``: that state's policy picks the class each NIC
    sends next (:mod:`federation.engine.nic_qos`); ``counters=False``: no NIC counters."""
    layout = ("tuple", tuple(layout_of(a) for a in args))
    defaults = (default_loop.ROUTE, default_loop.INJECT, default_loop.ARBITRATE)
    controlled = control is not None and programs
    flags = {"PROGRAMS": programs, "IQ": iq, "CHECK_ARBITER": check_arbiter,
             "CONTROLLED": controlled, "QOS": qos, "RINGS": rings,
             "QOS_NIC": qos_nic, "COUNTERS": counters}
    variant = "".join(f"{k} = {v}\n" for k, v in flags.items())
    if (route, inject, arbitrate) == defaults and variant == _VARIANT:
        text = Path(default_loop.__file__).read_text()
        return _native(["loop.py", text], layout, owner,
                       lambda: compiled_function(default_loop.run_loop))
    calls = [(route, "route", "ROUTE"), (inject, "inject", "INJECT"),
             (arbitrate, "arbitrate", "ARBITRATE")]
    if controlled:
        calls.append((control, "decide", "CONTROL"))
    names = [_where(f, w, owner) for f, w, _ in calls]
    text = Path(default_loop.__file__).read_text()
    head, rest = text.split(_BEGIN, 1)
    old_block, tail = rest.split(_END, 1)
    if variant != _VARIANT:
        head = head.replace(_VARIANT, variant, 1)
    # each call-out is recompiled from its Python source as a part of the loop: LLVM then
    # inlines it, as it does the built-in parts (a call that is not inlined passes the whole
    # ``Sim`` container, hundreds of scalars once flattened, and costs more than the routing)
    options = ", ".join(f"{k}={v!r}" for k, v in PART_OPTIONS.items() if k != "cache")
    block = "".join(f"from {m} import {n} as _{alias}_SOURCE  # noqa: E402\n"
                    f"{alias} = njit({options})(_{alias}_SOURCE.py_func)\n"
                    for (m, n), (_, _, alias) in zip(names, calls, strict=True))
    if not controlled:  # the default's import, never called
        block += next(x + "\n" for x in old_block.splitlines() if " as CONTROL " in x)
    text = head + _BEGIN + "from numba import njit  # noqa: E402\n" + block + _END + tail
    parts = [text] + [_module_source(m) for m, _ in names]
    return _native(parts, layout, owner, lambda: _copy(text, parts).run_loop.compiled())


def _native(parts: list[str], layout: tuple, owner: str, make: Any) -> NativeLoop:
    """:func:`~federation.engine.native_code.native_loop` in the loops' cache folder; a
    plugin function that does not compile is the routing's or arbiter's fault."""

    def compiled() -> Any:
        use_numba()
        from numba.core.errors import NumbaError

        try:
            return make()
        except NumbaError as exc:
            lines = [x.strip() for x in str(exc).splitlines() if x.strip()]
            what = "; ".join(lines[:2]) if lines else type(exc).__name__  # kind, then detail
            raise RoutingError(f"{owner}: its compiled functions do not compile inside the "
                               f"engine's loop: {what}") from None

    try:
        return native_loop(cache_dir(), parts, layout, compiled)
    except RoutingError:
        raise
    except Exception as exc:  # numba's errors surface while the entry compiles
        if type(exc).__module__.startswith("numba"):
            lines = [x.strip() for x in str(exc).splitlines() if x.strip()]
            what = "; ".join(lines[:2]) if lines else type(exc).__name__
            raise RoutingError(f"{owner}: its compiled functions do not compile inside the "
                               f"engine's loop: {what}") from None
        raise


def _copy(text: str, parts: list[str]) -> Any:
    """The generated loop module of ``text`` (written to the cache folder, imported once).
    Its name holds a digest of ``parts`` (the text and the plugins' modules) and of every
    engine module: numba caches the functions the copy defines by the copy's own file, and
    they inline the engine's parts and the plugins' functions."""
    import hashlib

    digest = hashlib.sha256(engine_digest().encode())
    for p in parts:
        digest.update(p.encode())
    key = digest.hexdigest()[:20]
    name = f"federation_loop_{key}"
    if name in sys.modules:
        return sys.modules[name]
    path = cache_dir() / f"loop_{key}.py"
    if not path.exists():
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text)
        os.replace(tmp, path)  # atomic: concurrent processes write the same text
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # numba's cache re-imports the module by name
    spec.loader.exec_module(module)
    return module
