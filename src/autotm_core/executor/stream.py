"""Copies that stream past the caches (non-temporal stores), compiled with numba.

:func:`stream_copy` copies a byte array into another of the same size: the
bytes up to the target's first 64-byte boundary and those after its last one
with ordinary stores, every whole line between with two 32-byte non-temporal
stores (``vmovntps`` on x86-64, ``stnp`` on aarch64; loads may be unaligned),
then a full fence, so that the bytes are visible to any thread that learns the
copy is done. Non-temporal stores write the target without first reading it
into the caches (a third less memory traffic than a cached copy) and do not
evict what the caches hold; the speed is the same whatever the source's and the
target's alignment, unlike glibc's ``memcpy``, which can fall back to loops
several times slower when they differ. Its reference is ``numpy.copyto``,
tested byte-equal.
"""

from __future__ import annotations

from typing import Any

import numba
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

LINE_NBYTES = 64
"""Bytes copied by each :func:`_copy_line` (a cache line)."""


def _copy_line_typed(typingctx, target, target_index, source, source_index):
    """Copy ``source[source_index:][:64]`` to ``target[target_index:][:64]``, the target aligned."""
    signature = types.void(target, target_index, source, source_index)

    def codegen(context, builder, sig, args):
        to_array, to_index, from_array, from_index = args
        to_type, from_type = sig.args[0], sig.args[2]
        to_data = context.make_array(to_type)(context, builder, to_array)
        from_data = context.make_array(from_type)(context, builder, from_array)
        to = cgutils.get_item_pointer(context, builder, to_type, to_data, [to_index],
                                      wraparound=False)
        start = cgutils.get_item_pointer(context, builder, from_type, from_data, [from_index],
                                         wraparound=False)
        half = ir.VectorType(ir.IntType(64), 4)
        hint = builder.module.add_metadata([ir.Constant(ir.IntType(32), 1)])
        for offset in (0, 32):
            at = ir.Constant(ir.IntType(64), offset)
            value = builder.load(builder.bitcast(builder.gep(start, [at]), half.as_pointer()),
                                 align=1)
            store = builder.store(value, builder.bitcast(builder.gep(to, [at]),
                                                         half.as_pointer()), align=32)
            store.set_metadata("nontemporal", hint)
        return context.get_dummy_value()

    return signature, codegen


def _fence_typed(typingctx):
    """A full memory fence: it also drains the non-temporal stores' write-combining buffers."""
    signature = types.void()

    def codegen(context, builder, sig, args):
        builder.fence("seq_cst")
        return context.get_dummy_value()

    return signature, codegen


_copy_line: Any = intrinsic(_copy_line_typed)
_fence: Any = intrinsic(_fence_typed)


@numba.njit(cache=True, nogil=True)
def stream_copy(target, source):  # pragma: no cover - compiled
    """Copy the bytes of ``source`` into ``target`` (same size, not overlapping), streaming."""
    n = source.size
    head = min(n, (LINE_NBYTES - target.ctypes.data % LINE_NBYTES) % LINE_NBYTES)
    for i in range(head):
        target[i] = source[i]
    lines = (n - head) // LINE_NBYTES
    for line in range(lines):
        at = head + line * LINE_NBYTES
        _copy_line(target, at, source, at)
    for i in range(head + lines * LINE_NBYTES, n):
        target[i] = source[i]
    _fence()
