"""Set-wise operations on 32-bit bitboards (numba): bit counts, one-step shifts, simple-move counts.

Square ``s`` is bit ``s - 1`` (:mod:`egtb.rules.squares`). On the 32-square
board a step toward higher squares is a shift left by 4, or by 5 from an even
row not on the right edge, or by 3 from an odd row not on the left edge (toward
lower squares: right by 4, 3 or 5). The four shifts below move a whole set of
pieces one step in one direction; the edge masks keep them on the board. A
shifted set may carry bits above 31: every use masks it with the board (an
empty or an opponent set never has them).

>>> from egtb.rules.squares import bitboard_of, squares_of
>>> squares_of(down_left(bitboard_of([1, 5, 9])) & 0xFFFFFFFF)   # 1 -> 5, 5 is on the left edge, 9 -> 13
[5, 13]

popcount64 and lowest_bit64 are CPU instructions, callable from kernels only:

>>> from numba import njit
>>> njit(lambda b: (popcount64(b), lowest_bit64(b)))(bitboard_of([7, 9, 32]))
(3, 6)
"""

from __future__ import annotations

from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from egtb.rules.squares import EVEN_NOT_RIGHT, EVEN_ROWS, ODD_NOT_LEFT, ODD_ROWS

__all__ = ["count_steps", "down_left", "down_right", "lowest_bit64", "popcount64", "up_left", "up_right"]


@intrinsic
def popcount64(typingctx, x):
    """Number of set bits (the CPU's popcount instruction)."""
    if not isinstance(x, types.Integer):
        return None
    sig = types.int64(x)

    def codegen(context, builder, signature, args):
        value = context.cast(builder, args[0], signature.args[0], types.int64)
        return builder.ctpop(value)

    return sig, codegen


@intrinsic
def lowest_bit64(typingctx, x):
    """Index of the lowest set bit of a non-zero value (the CPU's count-trailing-zeros)."""
    if not isinstance(x, types.Integer):
        return None
    sig = types.int64(x)

    def codegen(context, builder, signature, args):
        value = context.cast(builder, args[0], signature.args[0], types.int64)
        return builder.cttz(value, ir.Constant(ir.IntType(1), 1))

    return sig, codegen


# Directions as in squares.DIRECTIONS: 0 down-left and 1 down-right go toward
# higher squares (Black's forward), 2 up-left and 3 up-right toward lower ones.


@njit(cache=True)
def down_left(s):
    """The set s moved one step in direction 0 (toward higher squares, column - 1)."""
    return ((s & EVEN_ROWS) << 4) | ((s & ODD_NOT_LEFT) << 3)


@njit(cache=True)
def down_right(s):
    """The set s moved one step in direction 1 (toward higher squares, column + 1)."""
    return ((s & EVEN_NOT_RIGHT) << 5) | ((s & ODD_ROWS) << 4)


@njit(cache=True)
def up_left(s):
    """The set s moved one step in direction 2 (toward lower squares, column - 1)."""
    return ((s & EVEN_ROWS) >> 4) | ((s & ODD_NOT_LEFT) >> 5)


@njit(cache=True)
def up_right(s):
    """The set s moved one step in direction 3 (toward lower squares, column + 1)."""
    return ((s & EVEN_NOT_RIGHT) >> 3) | ((s & ODD_ROWS) >> 4)


@njit(cache=True)
def count_steps(pm, pk, empty, turn):
    """Number of simple moves of men pm and kings pk (valid when there is no capture).

    Men step forward only (``turn`` 0, Black: toward higher squares), kings both ways.

    >>> from egtb.rules.squares import START_BM, START_WM
    >>> int(count_steps(START_BM, 0, 0xFFFFFFFF & ~(START_BM | START_WM), 0))
    7
    """
    if turn == 0:
        down, up = pm | pk, pk
    else:
        down, up = pk, pm | pk
    n = (popcount64((down << 4) & empty) + popcount64(((down & EVEN_NOT_RIGHT) << 5) & empty)
         + popcount64(((down & ODD_NOT_LEFT) << 3) & empty))
    if up:
        n += (popcount64((up >> 4) & empty) + popcount64(((up & EVEN_NOT_RIGHT) >> 3) & empty)
              + popcount64(((up & ODD_NOT_LEFT) >> 5) & empty))
    return n
