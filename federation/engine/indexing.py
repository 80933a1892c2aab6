"""Array indexing in this package's compiled code, without numpy's negative-index wrap-around.

numba follows numpy: ``a[i]`` with a signed ``i`` reads ``a[i + len(a)]`` when ``i < 0``.  So
every index in the loop costs a compare, an add and a select, and keeps the length of every
array it touches alive across the loop (spilled to the stack, at the loop's size).  The
engine never indexes from the end (an index that can be negative, a packet row or a queue
pointer of -1, is always tested first), so :func:`install` makes numba lower a signed index
as it is in the functions of this package: the engine's parts, the built-in plugins' compiled
functions and the generated loops.  On the CODES scenario the loop runs 12-15 % faster for it
(``benchmarks/engine.py --scenario codes``, the same events and figures).

Functions of other modules keep numpy's rule, a third-party plugin's routing or arbiter
included, although the loop inlines them: each is lowered on its own before LLVM inlines it.
numba names the code it lowers after the function's module (``_ZN10federation...`` for
``federation.*``; a generated loop's module is ``federation_loop_<digest>``), and that name is
what is tested.

``FEDERATION_INDEX_CHECK=1`` (read when numba is first imported for a compile; it is part of
the compiled code's digest) makes such an index trap instead (the process dies with SIGILL):
the test suite passes with it on, which is how this module's premise is checked.
"""

from __future__ import annotations

import os
import re
from typing import Any

#: the (mangled) names of the code compiled without wrap-around: a module ``federation.*``,
#: or a generated loop's ``federation_loop_<digest>``
_OURS = re.compile(r"_ZN(10federation\d|\d+federation_loop_)")


def check_mode() -> bool:
    """True when a negative index in this package's compiled code should trap."""
    return os.environ.get("FEDERATION_INDEX_CHECK", "") not in ("", "0")


def ours(name: str) -> bool:
    """True for the mangled name of a function of this package (or of a generated loop)."""
    return _OURS.match(name) is not None


def install() -> bool:
    """Make numba lower this package's signed indices without wrap-around; False (and
    numpy's rule everywhere) when this numba has no ``fix_integer_index`` to replace."""
    try:
        from numba.core import types
        from numba.np import arrayobj
    except ImportError:  # pragma: no cover - numba is a dependency
        return False
    original = getattr(arrayobj, "fix_integer_index", None)
    if original is None:  # pragma: no cover - a numba that lowers indices elsewhere
        return False
    if getattr(original, "_federation", False):
        return True
    check = check_mode()

    def fix_integer_index(context: Any, builder: Any, idxty: Any, idx: Any, size: Any) -> Any:
        if not (idxty.signed and ours(builder.function.name)):
            return original(context, builder, idxty, idx, size)
        ind = context.cast(builder, idx, idxty, types.intp)
        if check:
            from llvmlite import ir

            negative = builder.icmp_signed("<", ind, ir.Constant(ind.type, 0))
            with builder.if_then(negative, likely=False):
                trap = builder.module.declare_intrinsic("llvm.trap", (), ir.FunctionType(
                    ir.VoidType(), ()))
                builder.call(trap, ())
        return ind

    fix_integer_index._federation = True  # type: ignore[attr-defined]
    arrayobj.fix_integer_index = fix_integer_index
    return True
