"""A hint that brings an array element's cache line in ahead of its use (LLVM's `llvm.prefetch`), for
compiled code: a leaf's NN-cache slot while its legal moves are generated and the next row's while a
leaf's priors are computed (nncache.prefetch_slot), the history rows the input planes read
(extend.prefetch_history) and the next first visit's parent position (shared_worker.py). A
prefetch never faults and changes no value: only when the memory arrives. (The tree rows of a node's
children prefetched before a pick's scan made picks slower on the VM: they are mostly in the caches.)"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from .spinlock import element_pointer


@intrinsic
def prefetch(typingctx, arr, idx):
    """Fetch the line of arr[idx] (a 1-d array) into every level of the CPU's caches, for reading."""
    if not (isinstance(arr, types.Array) and arr.ndim == 1 and isinstance(idx, types.Integer)):
        return None
    sig = types.void(arr, idx)

    def codegen(context, builder, signature, args):
        ptr = element_pointer(context, builder, signature, args)
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
        # (address, read, locality 3: keep in all levels, data cache)
        builder.call(fn, [builder.bitcast(ptr, i8p), ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return sig, codegen
