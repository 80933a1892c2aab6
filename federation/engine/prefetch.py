"""``prefetch(array, i)``: ask the processor to bring ``array[i]``'s cache line in ahead of use.

A rank-program run touches each operation's, message's and flow's row for the first time when
it happens, and the 1,024 ranks of a collective walk their rows as 1,024 interleaved
sequences, more than a hardware prefetcher follows: most of those first touches miss every
cache.  The loop knows which rows come next (a rank's next operation, its next message), so it
asks for them while the current one is handled.  The open-loop loop likewise asks for the row
of the packet whose arrival comes a few events later (:func:`prefetch_row`).  A prefetch never
faults, whatever the index.
"""

from __future__ import annotations

from typing import Any

from federation.engine.jit import intrinsic


def _prefetch_call(context: Any, builder: Any, ptr: Any) -> None:
    """``llvm.prefetch`` (read, keep in all levels) of the address ``ptr``."""
    from llvmlite import ir
    from numba.core import cgutils

    i8p, i32 = ir.IntType(8).as_pointer(), ir.IntType(32)
    fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
    fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
    builder.call(fn, [builder.bitcast(ptr, i8p), i32(0), i32(3), i32(1)])


@intrinsic
def prefetch(typingctx, arr, idx):  # noqa: ANN001, ANN201, ARG001
    """Prefetch ``arr[idx]`` (1-D)."""
    from numba import types
    from numba.core import cgutils

    sig = types.void(arr, idx)

    def codegen(context, builder, signature, args):  # noqa: ANN001, ANN202, ARG001
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]],
                                       wraparound=False, boundscheck=False)
        _prefetch_call(context, builder, ptr)
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def prefetch_row(typingctx, arr, row):  # noqa: ANN001, ANN201, ARG001
    """Prefetch the first element of row ``row`` of a 2-D array."""
    from numba import types
    from numba.core import cgutils

    sig = types.void(arr, row)

    def codegen(context, builder, signature, args):  # noqa: ANN001, ANN202, ARG001
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        zero = context.get_constant(types.intp, 0)
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1], zero],
                                       wraparound=False, boundscheck=False)
        _prefetch_call(context, builder, ptr)
        return context.get_dummy_value()

    return sig, codegen
