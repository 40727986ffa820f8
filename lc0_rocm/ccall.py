"""C entry points for compiled code: the HIP runtime's functions called from numba, GIL released.

A search thread whose batch cycle stays compiled (search/core/cycle.py) must copy its batch to the GPU,
launch the captured graphs, copy the outputs back and wait, without returning to Python. numba cannot
call hip-python, so `ccall(fn, a, b, ...)` calls the C function at address `fn` itself (a numba
`@intrinsic` that emits LLVM's `inttoptr` + `call`): every argument is passed as the integer type it has
(int64 for pointers, handles and sizes; int32 for a C `int`/`unsigned`), the result is the C function's
32-bit status (hipError_t). The address is an argument, never a constant baked into the code, so the
on-disk cache of the compiled search stays valid from one process to the next (search/core/spinlock.py's
atomics are cached the same way).

This module imports nothing of lc0_rocm: the compiled search's cache key hashes it (lc0_rocm/jit.py).
backends/gpu_lanes.py takes the addresses (`hip_entry_points`) from the runtime hip-python opened.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.extending import intrinsic


def _c_type(ty):
    """The LLVM integer type a numba integer argument is passed as (None: not an integer)."""
    if isinstance(ty, types.Integer):
        return ir.IntType(ty.bitwidth)
    if isinstance(ty, types.Boolean):
        return ir.IntType(8)
    return None


@intrinsic
def ccall(typingctx, fn, *args):
    """Call the C function at address `fn` (int64) with integer arguments; returns its int32 result."""
    if isinstance(args, tuple) and len(args) == 1 and isinstance(args[0], types.BaseTuple):
        args = tuple(args[0])  # numba passes the star-args as one tuple type
    if not isinstance(fn, types.Integer) or any(_c_type(a) is None for a in args):
        return None
    sig = types.int32(fn, types.StarArgTuple(args))

    def codegen(context, builder, signature, llargs):
        fnty = ir.FunctionType(ir.IntType(32), [_c_type(a) for a in args])
        ptr = builder.inttoptr(llargs[0], fnty.as_pointer())
        packed = llargs[1]
        call_args = [builder.extract_value(packed, i) for i in range(len(args))]
        return builder.call(ptr, call_args)

    return sig, codegen
