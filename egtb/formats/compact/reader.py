"""Reading compact files: header, block index and the blocks (memory-mapped), one block at a time.

A :class:`CompactTable` answers index lookups only: the stored value code of a
position (:meth:`CompactTable.value`, meaningless where the side to move must
capture) and whole blocks; the capture search that recovers the positions it
leaves out belongs to the prober (:mod:`egtb.probe`).

The coded blocks stay where they are (the file is memory-mapped, 4 KB a
block). A lookup decodes from the decoder's state every :data:`MARK_EVERY`
runs (the block's marks, about 8 bytes a mark: a 7-piece block of ~7,000 runs
keeps ~220), at most MARK_EVERY runs, instead of the whole block. The marks
come from the file's marks file (:mod:`.sidecar`, memory-mapped too) when it
has a usable one: a block's first lookup checks the CRC-32 of the block and of
its marks. Otherwise the first lookup checks the block (CRC-32) and decodes it
once, keeping its marks (:class:`BlockMarks`) in a
:class:`~egtb.formats.cache.TableCache`: by default the process's one
(:func:`~egtb.formats.cache.process_cache`), under the budget the master
tables' blocks share; as for the master files' blocks the kernels read, a
lookup does not mark a block as used: the cache drops marks in the order they
were made. The kernels read the marks through :attr:`CompactTable.lookup`
(single lookups) and :attr:`CompactTable.marks_at` (batches).

>>> BlockMarks(np.zeros(4, dtype=np.int64), None, 0).nbytes == 4 * 8 + MARK_ENTRY_BYTES
True
"""

from __future__ import annotations

import bisect
import itertools
import os
import zlib
from pathlib import Path

import numpy as np

from egtb.errors import MissingRuleLayerError, TableError
from egtb.formats.cache import TableCache, process_cache
from egtb.formats.compact.codec import (EXCEPTION_LOSS, EXCEPTION_STEP, EXCEPTION_WIN, L_BLOCKS, L_DATA,
                                        L_DATA_LEN, L_EXCEPTION_COUNT, L_EXCEPTIONS, L_LUT, L_MARK_COUNTS, L_MARKS,
                                        L_STARTS, L_THREATS, LOOKUP_WIDTH, check_blocks, decode_block, decoding_table,
                                        mark_block, value_at_index)
from egtb.formats.compact.exceptions import Exceptions, is_exceptions_file, read_exceptions
from egtb.formats.compact.layout import (BLOCK_BYTES, DTZ_KINDS, FORMAT_VERSION, HEADER, INDEX_ENTRY, KINDS,
                                         MAX_CODE_BITS, NUM_BUCKETS, RULE_KINDS, SUFFIX, THREATS_VERSION, WCDF, WDL,
                                         mirror_dtz_path)
from egtb.formats.compact.sidecar import open_marks
from egtb.positions.material import Material

__all__ = ["BlockMarks", "CompactTable", "LARGE_PIECES", "MARK_EVERY", "MARK_EVERY_LARGE", "MARK_ENTRY_BYTES",
           "mark_spacing", "open_compact"]

#: Serial numbers of open compact files (their blocks' keys in a cache shared by many tables).
_SERIALS = itertools.count(1)
#: Runs between two marks of a block up to 7 pieces: a lookup decodes at most this many runs.
MARK_EVERY = 32
#: Runs between two marks of a block from 8 pieces on (:func:`mark_spacing`).
MARK_EVERY_LARGE = 128
#: The fewest pieces whose marks are MARK_EVERY_LARGE runs apart.
LARGE_PIECES = 8
#: Bytes of Python objects a block's marks take beside the marks themselves (cache entry, key,
#: array header), counted against the cache's budget.
MARK_ENTRY_BYTES = 400


def mark_spacing(material: Material) -> int:
    """Runs between two marks of a material's blocks, when its marks are written or made: MARK_EVERY
    up to 7 pieces, MARK_EVERY_LARGE from 8 on (there the marks files would otherwise be a quarter
    of the compact files' bytes; a lookup decodes up to that many runs, about a microsecond).

    >>> mark_spacing(Material.parse("4k-3k")), mark_spacing(Material.parse("4k-4k"))
    (32, 128)
    """
    return MARK_EVERY_LARGE if material.pieces >= LARGE_PIECES else MARK_EVERY



class BlockMarks:
    """A block's marks in the cache: the decoder's state every MARK_EVERY runs (int64 each, see
    :func:`~egtb.formats.compact.codec.mark_block`); dropped from the cache, its table forgets it."""

    __slots__ = ("marks", "address", "count", "owner", "block", "key", "nbytes")

    def __init__(self, marks: np.ndarray, owner: "CompactTable | None", block: int) -> None:
        self.marks, self.owner, self.block = marks, owner, block
        self.address, self.count = marks.ctypes.data, len(marks)
        """The marks' address and number (Python ints: the lookup passes them to the kernel)."""
        self.key = ("compact", None if owner is None else owner.serial, block)
        self.nbytes = int(marks.nbytes) + MARK_ENTRY_BYTES

    def release(self) -> None:
        """Dropped from the cache: the table forgets it (the kernels see it absent)."""
        if self.owner is not None:
            self.owner.forget(self.block)


class CompactTable:
    """One open compact file (WLD or categories): header, block index and the blocks (memory-mapped).

    >>> CompactTable("/nonexistent/1k-1k.wld")
    Traceback (most recent call last):
    ...
    egtb.errors.TableError: /nonexistent/1k-1k.wld: unreadable compact file (No such file or directory)
    """

    dtz_file: "CompactTable | None" = None
    """A category file's DTZ file (``<material>.dtz``) when there is one, opened with the
    category file by :meth:`layer`."""
    mirror_dtz: "CompactTable | None" = None
    """A category file without a DTZ file of its own: its mirror material's DTZ file, when that
    one is there (a pair may hold its DTZ on one side alone; the prober derives this side's from
    its moves, one ply into the mirror's: :mod:`egtb.probe.derived_dtz`)."""

    def __init__(self, path: os.PathLike | str, *, cache: TableCache | None = None,
                 mark_every: int | None = None, use_marks_file: bool = True) -> None:
        self.path = Path(path)
        self._layers: dict[str, CompactTable] = {}
        self.coded_path = self.path
        """The file whose blocks it decodes: itself, or the WLD file of a category file coded as
        exceptions (:mod:`.exceptions`)."""
        self.exceptions = _NO_EXCEPTIONS
        """int64, ascending: the positions where a win of the coded file is a cursed win and a loss a
        blessed loss (a category file coded as exceptions; none in every other file)."""
        if is_exceptions_file(self.path):
            self._read_coded(self.path.with_suffix(SUFFIX))
            self._refine(read_exceptions(self.path))
        else:
            self._read_coded(self.path)
        self.cache = cache if cache is not None else process_cache()
        """Where the blocks' marks go (the process's cache unless given)."""
        self.serial = next(_SERIALS)
        self.marks_file = (open_marks(self.coded_path, mark_every=mark_every, n_blocks=self.n_blocks,
                                      compact_size=self._coded_size, compact_crc=self._coded_crc)
                           if use_marks_file else None)
        """Its marks file (:mod:`.sidecar`; a category file coded as exceptions: its WLD file's) when
        there is a usable one: a block's marks are then read from it (checked on the block's first
        lookup), not made in memory. With ``mark_every`` given, only one of that spacing is used."""
        self.mark_every = (self.marks_file.every if self.marks_file is not None
                           else mark_every or mark_spacing(self.material))
        """Runs between two marks of a block: its marks file's, else ``mark_every``, else
        :func:`mark_spacing`."""
        self._marks: list[BlockMarks | None] = [None] * self.n_blocks
        self.marks_at = np.zeros(max(self.n_blocks, 1), dtype=np.int64)
        """Address of each block's marks (0 while it has none in memory), for the kernels."""
        self.mark_counts = np.zeros(max(self.n_blocks, 1), dtype=np.int64)
        """Number of each block's marks (valid where marks_at is not 0)."""
        self.lookup = np.zeros(LOOKUP_WIDTH, dtype=np.int64)
        """The descriptor the lookup kernels read (L_* columns of :mod:`.codec`): addresses of the
        arrays above, kept alive by the table."""
        self.lookup[[L_DATA, L_STARTS, L_MARKS, L_MARK_COUNTS, L_LUT, L_DATA_LEN, L_BLOCKS, L_EXCEPTIONS,
                     L_EXCEPTION_COUNT, L_THREATS]] = (
            self.data.ctypes.data if len(self.data) else 0, self.starts.ctypes.data, self.marks_at.ctypes.data,
            self.mark_counts.ctypes.data, self.lut.ctypes.data, len(self.data), self.n_blocks,
            self.exceptions.ctypes.data, len(self.exceptions), self.threats)
        self._lookup_at = self.lookup.ctypes.data
        self._ends = np.empty(self.max_runs, dtype=np.int64)
        self._vals = np.empty(self.max_runs, dtype=np.uint8)
        self._scratch_marks = np.empty(self.max_runs // self.mark_every + 1, dtype=np.int64)
        self.value_of = tuple(int(v) for v in self.kind.value_of_code)
        """WDL (WLD file) or category (category file) of each value code."""
        if self.marks_file is not None:
            self._marks_base = self.marks_file.marks.ctypes.data

    def _read_coded(self, path: Path) -> None:
        """Read the header, code-length table and block index of the file whose blocks it decodes,
        and map its blocks."""
        self.coded_path = path
        try:
            with open(path, "rb") as fh:
                head = fh.read(HEADER.size)
                self._parse_header(head)
                head += fh.read(self.kind.lengths_bytes)
                self._parse_lengths(head)
                index = fh.read(INDEX_ENTRY.size * self.n_blocks)
            self._parse_index(head, index)
            size = self.file_size = self._coded_size = path.stat().st_size
            self.data = (np.memmap(path, dtype=np.uint8, mode="r", offset=self.data_offset)
                         .view(np.ndarray)  # a plain array for numba; the map stays open
                         if size > self.data_offset else np.zeros(0, dtype=np.uint8))
        except OSError as exc:
            raise TableError(f"{path}: unreadable compact file ({exc.strerror or exc})") from exc
        self._coded_crc = self.header_crc

    def _refine(self, found: Exceptions) -> None:
        """Become the category file coded as exceptions `found`, over the WLD file just read
        (TableError when that WLD file is not the one it refines)."""
        if self.kind is not WDL or (found.material, found.positions) != (self.material, self.positions):
            raise TableError(f"{self.path}: refines a WLD file of {found.material.name}, and "
                             f"{self.coded_path} is not one")
        if found.wdl_crc != self.header_crc:
            raise TableError(f"{self.path}: refines another {self.coded_path.name} than the one beside "
                             "it (its header CRC-32 differs): write both again")
        self.kind = WCDF
        self.header_crc, self.file_size, self.exceptions = found.header_crc, found.file_size, found.indices
        self.largest_code = int(EXCEPTION_STEP + self.largest_code) if len(self.exceptions) else self.largest_code

    def _parse_header(self, head: bytes) -> None:
        kind = KINDS.get(HEADER.unpack(head)[2]) if len(head) == HEADER.size else None
        if kind is None or head[:8] != kind.magic:
            raise TableError(f"{self.coded_path}: not a compact WLD, category or DTZ file")
        self.kind = kind
        (_, version, _, bm, bk, wm, wk, positions, block_bytes, code_bits, n_blocks, max_runs,
         buckets, data_offset, _) = HEADER.unpack(head)
        if version != FORMAT_VERSION and not (version == THREATS_VERSION and kind is WDL):
            raise TableError(f"{self.coded_path}: compact format version {version} is not {FORMAT_VERSION}"
                             f"{f' (or {THREATS_VERSION}, a WLD file)' if kind is WDL else ''}")
        self.threats = version == THREATS_VERSION
        """Whether the file leaves out threat positions as well (:mod:`egtb.rules.threats`)."""
        if (block_bytes, code_bits, buckets) != (BLOCK_BYTES, MAX_CODE_BITS, NUM_BUCKETS):
            raise TableError(f"{self.coded_path}: unsupported block size, code length or buckets")
        self.material = Material(bm, bk, wm, wk)
        self.positions = positions
        self.n_blocks = n_blocks
        self.max_runs = max(1, max_runs)
        self.data_offset = data_offset

    def _parse_lengths(self, head: bytes) -> None:
        kind = self.kind
        if len(head) != HEADER.size + kind.lengths_bytes:
            raise TableError(f"{self.coded_path}: truncated code-length table")
        lengths = np.zeros((kind.contexts + 1, kind.symbols), dtype=np.int64)
        lengths[1:] = np.frombuffer(head[HEADER.size:], dtype=np.uint8).reshape(kind.contexts, -1)
        self.lut = decoding_table(lengths, kind)
        coded = [int(kind.value_of_choice[ctx, s // NUM_BUCKETS]) for ctx in range(1, kind.contexts + 1)
                 for s in np.flatnonzero(lengths[ctx]).tolist()]
        self.largest_code = max(coded, default=0)
        """The largest value code the file's runs can have (one with a Huffman code)."""

    def _parse_index(self, head: bytes, index: bytes) -> None:
        if len(index) != INDEX_ENTRY.size * self.n_blocks:
            raise TableError(f"{self.coded_path}: truncated block index")
        stored = self.header_crc = HEADER.unpack(head[:HEADER.size])[-1]
        crc = zlib.crc32(index, zlib.crc32(head[HEADER.size:], zlib.crc32(head[:HEADER.size - 8])))
        if crc != stored:
            raise TableError(f"{self.coded_path}: header checksum mismatch (file corrupted)")
        entries = np.frombuffer(index, dtype=np.dtype([("start", "<u8"), ("crc", "<u4"),
                                                       ("ctx", "u1"), ("pad", "V3")]))
        self.starts = np.append(entries["start"].astype(np.int64), np.int64(self.positions))
        self.crcs = np.ascontiguousarray(entries["crc"], dtype=np.uint32)
        self.ctx = np.ascontiguousarray(entries["ctx"], dtype=np.uint8)
        self._starts_list = self.starts.tolist()

    @property
    def max_dtz(self) -> int | None:
        """The largest DTZ of a win or loss, from its DTZ file's code table (at least 1, the DTZ
        of a capture position, which the file leaves out); with its DTZ derived, a bound: one ply
        more than its mirror's largest (a move into the mirror adds one, a zeroing move gives 1);
        None without either file."""
        if self.dtz_file is not None:
            return max(self.dtz_file.largest_code - 1, 1)
        if self.mirror_dtz is not None:
            return max(self.mirror_dtz.largest_code - 1, 1) + 1
        return None

    @property
    def dtz_derived(self) -> bool:
        """Whether its DTZ is derived from its moves (no DTZ file of its own, its mirror's there)."""
        return self.dtz_file is None and self.mirror_dtz is not None

    def __repr__(self) -> str:
        return f"CompactTable({str(self.path)!r}, blocks={self.n_blocks})"

    @property
    def nbytes(self) -> int:
        """Bytes of the file and of its DTZ file (what a Tablebase counts against its memory limit; a
        category file coded as exceptions counts its own, not its WLD file's)."""
        own = self.file_size if self.coded_path != self.path else self.data_offset + len(self.data)
        return int(own) + (0 if self.dtz_file is None else self.dtz_file.nbytes)

    def __len__(self) -> int:
        return self.positions

    def layer(self, rule: str) -> "CompactTable":
        """The category file of a preset next to this WLD file (opened once, sharing the cache),
        with its DTZ file (:attr:`dtz_file`) when there is one.

        MissingRuleLayerError when there is none: compact category files exist
        for "wcdf" only.
        """
        found = self._layers.get(rule)
        if found is not None:
            return found
        kind = RULE_KINDS.get(rule)
        path = self.path.with_suffix(kind.suffix) if kind is not None and self.kind is WDL else None
        if path is None or not path.exists():
            raise MissingRuleLayerError(
                f"{self.path}: a compact file has no rule layer for preset {rule!r} "
                f"(compact category files exist for {', '.join(RULE_KINDS)} only, "
                f"as <material>{WCDF.suffix}); probe with rule_free=True")
        found = self._sibling(path, kind)
        dtz_path = path.with_suffix(DTZ_KINDS[rule].suffix)
        mirror_path = mirror_dtz_path(self.path.parent, self.material, rule)
        if dtz_path.exists():
            found.dtz_file = self._sibling(dtz_path, DTZ_KINDS[rule])
        elif mirror_path is not None:
            found.mirror_dtz = self._sibling(mirror_path, DTZ_KINDS[rule], material=self.material.mirrored())
        self._layers[rule] = found
        return found

    def open_sibling(self, path: Path) -> "CompactTable":
        """Open another compact file of this material (the prober opens its own kinds of file)."""
        return CompactTable(path, cache=self.cache)

    def _sibling(self, path: Path, kind, *, material: Material | None = None) -> "CompactTable":
        """Another compact file of this material, or of ``material`` (its mirror, as many positions);
        TableError when it is of another material or kind."""
        material = material or self.material
        found = self.open_sibling(path)
        if found.material != material or found.positions != self.positions:
            raise TableError(f"{path}: holds material {found.material.name}, not {material.name}")
        if found.kind is not kind:
            raise TableError(f"{path}: a {found.kind.suffix} file, not a {kind.suffix} file")
        return found

    def block_of(self, index: int) -> int:
        """The block holding a position index."""
        if not 0 <= index < self.positions:
            raise IndexError(f"{self.path}: position {index} outside 0..{self.positions - 1}")
        return bisect.bisect_right(self._starts_list, index) - 1

    def decode(self, block: int) -> tuple[np.ndarray, np.ndarray]:
        """(run ends, run values) of a block, checked; TableError names a damaged block. A category
        file coded as exceptions gives its WLD file's runs (:meth:`codes` applies the exceptions)."""
        lo, hi, count = self._checked_block(block)
        n = decode_block(self.data, lo, hi, count, self.ctx[block], self.lut,
                         self._ends, self._vals)
        self._check_decoded(block, n)
        return self._ends[:n].copy(), self._vals[:n].copy()

    def block_marks(self, block: int) -> BlockMarks:
        """The marks of a block (checked on first use, and made unless its marks file holds them;
        made ones asked for again are dropped last from the cache). TableError names a damaged
        block."""
        if self.marks_file is not None:
            self.load_block(block)
            return BlockMarks(self.marks_file.block(block), None, block)
        found = self._marks[block]
        if found is not None:
            self.cache.touch(found.key)
            return found
        found = BlockMarks(self.mark_block(block), self, block)
        self._marks[block] = found
        self.marks_at[block] = found.address
        self.mark_counts[block] = found.count
        self.cache.put(found.key, self.path, found)
        return found

    def mark_block(self, block: int) -> np.ndarray:
        """The marks of a block made from its bits (a new array), its CRC-32 checked; TableError
        names a damaged block."""
        lo, hi, count = self._checked_block(block)
        n = mark_block(self.data, lo, hi, count, self.ctx[block], self.lut, self.mark_every,
                       self._scratch_marks)
        self._check_decoded(block, n)
        return self._scratch_marks[:n].copy()

    def load_block(self, block: int) -> None:
        """Make the marks of a block the batch kernel missed available: from the marks file (the
        block's CRC-32 and its marks' checked once), or made in memory."""
        if self.marks_file is None:
            self.block_marks(block)
            return
        if self.marks_at[block]:
            return
        self._checked_block(block)
        if not self.marks_file.check(block):
            raise TableError(f"{self.marks_file.path}: the marks of block {block} are damaged (CRC-32 mismatch)")
        first, end = self.marks_file.offsets[block:block + 2].tolist()
        self.mark_counts[block] = end - first
        self.marks_at[block] = self._marks_base + 8 * first

    def load_blocks(self, indices: np.ndarray) -> None:
        """Make the marks of every block holding one of the ascending position ``indices`` available
        (as :meth:`load_block`, one call for a sorted batch's positions in this table)."""
        blocks = np.searchsorted(self.starts, indices, side="right") - 1
        blocks = blocks[np.flatnonzero(np.diff(blocks, prepend=-1))]
        blocks = blocks[self.marks_at[blocks] == 0]
        if self.marks_file is None:
            for block in blocks.tolist():
                self.block_marks(block)
            return
        mf = self.marks_file
        bad = check_blocks(blocks, self.data, self.crcs, mf.marks.view(np.uint8), mf.offsets, mf.crcs)
        if bad >= 0:
            self.load_block(bad)  # raises, naming the block or its marks
        self.mark_counts[blocks] = mf.offsets[blocks + 1] - mf.offsets[blocks]
        self.marks_at[blocks] = self._marks_base + 8 * mf.offsets[blocks]

    def forget(self, block: int) -> None:
        """A block's marks left the cache."""
        self._marks[block] = None
        self.marks_at[block] = 0

    def _checked_block(self, block: int) -> tuple[int, int, int]:
        """(first byte, end) of a block in :attr:`data` and its positions, its CRC-32 checked;
        TableError names a damaged block."""
        lo = block * BLOCK_BYTES
        hi = min(lo + BLOCK_BYTES, len(self.data))
        if zlib.crc32(self.data[lo:hi]) != int(self.crcs[block]):
            raise TableError(f"{self.coded_path}: block {block} is damaged (CRC-32 mismatch)")
        return lo, hi, self._starts_list[block + 1] - self._starts_list[block]

    def _check_decoded(self, block: int, runs: int) -> None:
        """A decoder's answer for a block: -1 when its bits do not decode (TableError names it)."""
        if runs < 0:
            raise TableError(f"{self.coded_path}: block {block} does not decode")

    def value(self, index: int) -> int:
        """Stored value code of a position (meaningless where the side to move must capture)."""
        if not 0 <= index < self.positions:
            raise IndexError(f"{self.path}: position {index} outside 0..{self.positions - 1}")
        found = value_at_index(self._lookup_at, index)
        if found < 0:  # its block has no marks in memory yet
            self.block_marks(-1 - found)
            found = value_at_index(self._lookup_at, index)
        return found

    def value_at(self, index: int) -> int:
        """WDL (WLD file), category (category file) or DTZ (DTZ file) of a position, meaningless
        where the side to move must capture."""
        return self.value_of[self.value(index)]

    def distance_at(self, index: int) -> int | None:
        """The DTZ from the DTZ file of a category file (meaningful at a win or loss whose side to
        move need not capture); None without one (a WLD file holds no DTW)."""
        return None if self.dtz_file is None else self.dtz_file.value_at(index)

    def warm(self, blocks: int | None) -> None:
        """Mark the first ``blocks`` blocks (None: all) into the block cache."""
        for block in range(self.n_blocks if blocks is None else min(blocks, self.n_blocks)):
            self.block_marks(block)

    def close(self) -> None:
        """Drop its blocks' marks from the cache (the map goes with the table)."""
        for found in [found for found in self._marks if found is not None]:
            self.cache.discard(found.key)
        for layer in self._layers.values():
            layer.close()
        for dtz in (self.dtz_file, self.mirror_dtz):
            if dtz is not None:
                dtz.close()

    def values(self) -> np.ndarray:
        """Stored value codes of every position (uint8), decoding every block (a whole file in
        memory: :meth:`codes` reads a range)."""
        return self.codes(0, self.positions)

    def codes(self, lo: int, hi: int) -> np.ndarray:
        """Stored value codes (uint8) of positions lo..hi, decoding (and checking) only the blocks
        that hold them: what a check of a file too large to decode whole reads a chunk at a time."""
        if not 0 <= lo <= hi <= self.positions:
            raise IndexError(f"{self.path}: positions {lo}..{hi} outside 0..{self.positions}")
        out = np.empty(hi - lo, dtype=np.uint8)
        if lo == hi:
            return out
        for block in range(self.block_of(lo), self.block_of(hi - 1) + 1):
            ends, vals = self.decode(block)
            base = self._starts_list[block]
            first, end = max(lo, base) - base, min(hi - base, int(ends[-1]))  # within the block
            # only the runs that cover first..end: a block of a well-compressed table spans
            # hundreds of millions of positions, many chunks
            r0, r1 = np.searchsorted(ends, first, side="right"), np.searchsorted(ends, end, side="left") + 1
            stops = np.minimum(ends[r0:r1], end)
            out[first + base - lo:end + base - lo] = np.repeat(vals[r0:r1], np.diff(stops, prepend=first))
        return self._refined(out, lo)

    def _refined(self, codes: np.ndarray, lo: int) -> np.ndarray:
        """The codes of positions lo.. with its exceptions applied (a category file coded as
        exceptions: a win at one is a cursed win, a loss a blessed loss)."""
        if len(self.exceptions):
            _step_exceptions(codes, self.exceptions[np.searchsorted(self.exceptions, lo):
                                                    np.searchsorted(self.exceptions, lo + len(codes))] - lo)
        return codes

    def refined_at(self, indices: np.ndarray, codes: np.ndarray) -> np.ndarray:
        """The codes of positions at ascending ``indices``, given the codes of the WLD file it refines
        there (``codes``, changed in place), with its exceptions applied; as they are in a file not
        coded as exceptions. What a lookup of those positions gives, without decoding their blocks
        again.

        >>> table = CompactTable.__new__(CompactTable); table.exceptions = np.array([5, 9])
        >>> table.refined_at(np.array([3, 5, 6, 9]), np.array([2, 2, 1, 3])).tolist()
        [2, 4, 1, 5]
        >>> table.refined_at(np.array([5, 5, 7, 9, 9, 9]), np.array([2, 1, 2, 3, 3, 2])).tolist()
        [4, 1, 2, 5, 5, 4]
        """
        if len(self.exceptions) and len(indices):
            # the exceptions within the indices' range searched among them: far fewer searches than
            # the indices among the exceptions (a verify's chunk reads a million successors)
            near = self.exceptions[np.searchsorted(self.exceptions, indices[0]):
                                   np.searchsorted(self.exceptions, indices[-1], side="right")]
            first, end = np.searchsorted(indices, near), np.searchsorted(indices, near, side="right")
            hits = end - first  # an index given more than once is refined at each place
            if hits.any():
                places = np.arange(int(hits.sum())) + np.repeat(first - np.cumsum(hits) + hits, hits)
                _step_exceptions(codes, places)
        return codes


def _step_exceptions(codes: np.ndarray, at: np.ndarray) -> None:
    """Make the wins among ``codes[at]`` cursed wins and the losses blessed losses (the exceptions of
    a category file coded as exceptions; a draw there stays a draw)."""
    at = at[(codes[at] == EXCEPTION_WIN) | (codes[at] == EXCEPTION_LOSS)]
    codes[at] += EXCEPTION_STEP


#: The exceptions of every file not coded as exceptions: none.
_NO_EXCEPTIONS = np.zeros(1, dtype=np.int64)[:0]


def open_compact(path: os.PathLike | str, *, cache: TableCache | None = None) -> CompactTable:
    """Open a compact file; its decoded blocks go to ``cache`` (default: the process's)."""
    return CompactTable(path, cache=cache)
