"""Category files coded as exceptions to the WLD file: the ``.wcdf`` of a table of 8 pieces or more.

A material's categories under "wcdf" equal its WDL values at every stored position (one whose
side to move need not capture) but a few: its cursed wins (won without the move rule, drawn
by it) and blessed losses, one stored position in 15,000 to 140,000 of an 8-piece material
of at most 4 a side (4k-2m2k: 223,837 of 3.37 G; 2m2k-1m3k: 205,769 of 11.8 G). A category
file coded in full repeats the WLD file's runs (2m2k-1m3k: 587.2 MB beside the `.wld`'s
580.6 MB). Coded as exceptions it is a header and the ascending
indices of those few positions, and its reader decodes the WLD file's blocks: a win at an
exception is a cursed win, a loss a blessed loss (code + 2). Capture positions are left out,
as in every compact file.

Little-endian (:data:`EXCEPTIONS_HEADER`, 64 bytes), then the indices (int64 each):

====== ==== ==========================================================
offset size content
====== ==== ==========================================================
0      8    magic ``EGTBCAT\\0`` (a category file's)
8      2    format version, 1
10     2    kind, 3 (:data:`EXCEPTIONS_PRESET`)
12     4    material: black men, black kings, white men, white kings
16     8    positions of the material
24     8    exceptions
32     4    the header CRC-32 (its offset 56) of the WLD file it refines
36     4    CRC-32 of the indices
40     16   zero
56     4    CRC-32 of bytes 0-55
60     4    zero
====== ==== ==========================================================

>>> blob = exceptions_bytes(Material.parse("2k-1k"), 14384, np.array([5, 9]), wdl_crc=7)
>>> len(blob), is_exceptions_header(blob[:64])
(80, True)
"""

from __future__ import annotations

import os
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from egtb.errors import TableError
from egtb.formats.compact.layout import FORMAT_VERSION, WCDF
from egtb.positions.material import Material

__all__ = ["EXCEPTIONS_FROM_PIECES", "EXCEPTIONS_HEADER", "EXCEPTIONS_PRESET", "Exceptions", "codes_as_exceptions",
           "exceptions_bytes", "is_exceptions_file", "is_exceptions_header", "read_exceptions"]

#: The header's kind field (offset 10) of a category file coded as exceptions.
EXCEPTIONS_PRESET = 3
#: magic, version, kind, material (4 bytes), positions, exceptions, the WLD file's header CRC-32,
#: the indices' CRC-32, (zero), the CRC-32 of the bytes before it, (zero).
EXCEPTIONS_HEADER = struct.Struct("<8sHH4BQQII16xI4x")
#: Tables of this many pieces or more have their category files coded as exceptions (those of
#: fewer stay as they were built, byte for byte).
EXCEPTIONS_FROM_PIECES = 8


def codes_as_exceptions(material: Material) -> bool:
    """Whether a material's category file is coded as exceptions to its WLD file.

    >>> codes_as_exceptions(Material.parse("4k-4k")), codes_as_exceptions(Material.parse("3k-4k"))
    (True, False)
    """
    return material.pieces >= EXCEPTIONS_FROM_PIECES


def is_exceptions_header(head: bytes) -> bool:
    """Whether the first bytes of a file are those of a category file coded as exceptions."""
    return (len(head) >= EXCEPTIONS_HEADER.size and head[:8] == WCDF.magic
            and EXCEPTIONS_HEADER.unpack_from(head)[2] == EXCEPTIONS_PRESET)


def is_exceptions_file(path: os.PathLike | str) -> bool:
    """Whether a compact file is a category file coded as exceptions (TableError names a file that
    does not open)."""
    try:
        with open(path, "rb") as fh:
            return is_exceptions_header(fh.read(EXCEPTIONS_HEADER.size))
    except OSError as exc:
        raise TableError(f"{path}: unreadable compact file ({exc.strerror or exc})") from exc


@dataclass(frozen=True)
class Exceptions:
    """A category file coded as exceptions, read and checked."""

    material: Material
    positions: int
    wdl_crc: int
    """The header CRC-32 of the WLD file whose values it refines."""
    indices: np.ndarray
    """int64, ascending: the stored positions whose category is a cursed win or a blessed loss."""
    header_crc: int
    file_size: int


def exceptions_bytes(material: Material, positions: int, indices: np.ndarray, *, wdl_crc: int) -> bytes:
    """The bytes of a category file coded as exceptions: ``indices`` (ascending) of the positions
    of ``material`` whose category is a cursed win or blessed loss where the WLD file whose header
    CRC-32 is ``wdl_crc`` holds a win or loss."""
    body = np.ascontiguousarray(indices, dtype="<i8").tobytes()
    head = EXCEPTIONS_HEADER.pack(WCDF.magic, FORMAT_VERSION, EXCEPTIONS_PRESET, material.black_men,
                                  material.black_kings, material.white_men, material.white_kings, positions,
                                  len(body) // 8, wdl_crc, zlib.crc32(body), 0)
    crc = zlib.crc32(head[:EXCEPTIONS_HEADER.size - 8])
    return head[:EXCEPTIONS_HEADER.size - 8] + struct.pack("<I4x", crc) + body


def read_exceptions(path: os.PathLike | str) -> Exceptions:
    """Read a category file coded as exceptions; TableError names a file that is cut, damaged
    (a CRC-32 that does not match) or whose indices are not ascending within its positions.

    >>> read_exceptions("/nonexistent/4k-4k.wcdf")
    Traceback (most recent call last):
    ...
    egtb.errors.TableError: /nonexistent/4k-4k.wcdf: unreadable compact file (No such file or directory)
    """
    path = Path(path)
    try:
        blob = path.read_bytes()
    except OSError as exc:
        raise TableError(f"{path}: unreadable compact file ({exc.strerror or exc})") from exc
    if not is_exceptions_header(blob[:EXCEPTIONS_HEADER.size]):
        raise TableError(f"{path}: not a category file coded as exceptions")
    (_, version, _, bm, bk, wm, wk, positions, count, wdl_crc, indices_crc,
     header_crc) = EXCEPTIONS_HEADER.unpack_from(blob)
    if version != FORMAT_VERSION:
        raise TableError(f"{path}: compact format version {version} is not {FORMAT_VERSION}")
    if zlib.crc32(blob[:EXCEPTIONS_HEADER.size - 8]) != header_crc:
        raise TableError(f"{path}: header checksum mismatch (file corrupted)")
    body = blob[EXCEPTIONS_HEADER.size:]
    if len(body) != 8 * count:
        raise TableError(f"{path}: {len(body)} bytes of exceptions where its header says {count} "
                         f"({8 * count} bytes): the file is cut or extended")
    if zlib.crc32(body) != indices_crc:
        raise TableError(f"{path}: its exceptions are damaged (CRC-32 mismatch)")
    indices = np.frombuffer(body, dtype="<i8").astype(np.int64)
    if len(indices) and (indices[0] < 0 or indices[-1] >= positions or np.any(np.diff(indices) <= 0)):
        raise TableError(f"{path}: its exceptions are not ascending positions below {positions}")
    return Exceptions(Material(bm, bk, wm, wk), positions, wdl_crc, indices, header_crc, len(blob))
