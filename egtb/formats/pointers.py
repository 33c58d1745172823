"""Raw typed pointers for numba kernels that read many arrays through one table of addresses.

The batch probing kernels (:mod:`egtb.probe.kernels`, :mod:`egtb.probe.compact_kernels`) look up
tables of different lengths by material code; they receive each array's
``ctypes.data`` address in an int64 array and read it through these intrinsics.
The caller must keep every array alive (referenced) for the whole call.

>>> import numpy as np
>>> from numba import njit
>>> @njit
... def second(address):
...     return uint16_ptr(address)[1]
>>> values = np.array([7, 9], dtype=np.uint16)
>>> int(second(values.ctypes.data))
9
"""

from __future__ import annotations

from numba import types
from numba.extending import intrinsic, overload

__all__ = ["as_int32_ptr", "int8_ptr", "int32_ptr", "int64_ptr", "uint8_ptr", "uint16_ptr", "uint32_ptr"]


def _pointer_of(element):
    """An intrinsic turning an int64 address into a pointer to ``element``."""

    @intrinsic
    def pointer(typingctx, address):
        signature = types.CPointer(element)(types.int64)

        def codegen(context, builder, sig, args):
            return builder.inttoptr(args[0], context.get_value_type(sig.return_type))
        return signature, codegen
    return pointer


int8_ptr = _pointer_of(types.int8)
int32_ptr = _pointer_of(types.int32)
int64_ptr = _pointer_of(types.int64)
uint8_ptr = _pointer_of(types.uint8)
uint16_ptr = _pointer_of(types.uint16)
uint32_ptr = _pointer_of(types.uint32)


def as_int32_ptr(values):
    """In a kernel: a pointer to the int32 values of an array, or the pointer itself when given one.
    A kernel that reads a small table in a loop through a pointer may run twice as fast as through
    the array (the compact decoder's table, :func:`egtb.formats.compact.codec.decode_block`).

    >>> import numpy as np
    >>> from numba import njit
    >>> @njit
    ... def third(values):
    ...     return as_int32_ptr(values)[2]
    >>> int(third(np.array([4, 5, 6], dtype=np.int32)))
    6
    """
    raise NotImplementedError("as_int32_ptr is for numba kernels")


@overload(as_int32_ptr, inline="always")
def _as_int32_ptr(values):
    if isinstance(values, types.Array):
        return lambda values: int32_ptr(values.ctypes.data)
    return lambda values: values
