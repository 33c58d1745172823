"""Compact-native tables: a solved pair written straight into its compact files, and a
dependency read back from them through the prober.

From :data:`egtb.builder.contents.NATIVE_PIECES` pieces on (or with
``egtb build --compact-native``) a table is its compact files alone: ``.wld``
(the values), ``.wcdf`` (the ``wcdf`` categories at counter 0) and ``.dtz``
(the wins' and losses' DTZ), each with its marks file, and no HDF5 master.
The three phases here, in the order a pair meets them:

1. :func:`read_categories` - a finished dependency's ``wcdf`` categories, as
   the solver's exits read them: its ``.wcdf`` file decoded block by block
   through the prober's reader, and the positions that file leaves out (the
   side to move must capture) answered from the tables the pair has loaded
   (:mod:`egtb.builder.dependency_captures`), or where they do not hold a
   capture's table by the prober's capture search
   (:meth:`Tablebase.probe_batch_rule` at counter 0: an exit always zeroes the
   counter), as syzygy1/tb's generator reads its sub-tables through its prober;
2. :func:`write_material` - a solved material's three compact files and their
   marks, each written atomically, then its summary;
3. :func:`summary_path` - ``<material>.native.json``, written last: the
   counts, the ``wcdf`` layer's category counts, longest DTZ and CRC-32 (the
   same checksum an HDF5 master's layer carries, so the reference rows compare
   either way) and each compact file's size and header CRC. It is the table's
   stamp of completeness: :func:`is_complete` reads it.

The compact files are byte-identical to those ``egtb compact`` writes from a
master of the same table (the same codes go through the same encoder).

>>> summary_path("/t", Material.parse("2k-2k")).name
'2k-2k.native.json'
"""

from __future__ import annotations

import json
import os
import zlib
from pathlib import Path

import numpy as np

from egtb.builder.contents import LEAN_RULES
from egtb.builder.dependency_captures import LoadedTables
from egtb.builder.rule_layer import LAYER_SLICE, PRESETS, LayerTally, values_of
from egtb.positions.index import unrank_positions
from egtb.positions.walk import left_out_flags, unrank_captures
from egtb.rules.squares import WHITE_CROWN_ROW
from egtb.errors import MissingTableError, SolverError, TableError
from egtb.formats.compact.layout import (DTZ_KINDS, HEADER, RULE_KINDS, WDL, category_codes, compact_path,
                                         dtz_codes, material_counts)
from egtb.formats.compact.reader import CompactTable
from egtb.formats.compact import writer as compact_writer
from egtb.formats.compact.exceptions import codes_as_exceptions, exceptions_bytes, is_exceptions_file, read_exceptions
from egtb.formats.compact.writer import encode_kinds, write_compact, write_marks
from egtb.formats.master import table_path
from egtb.formats.values import CAT_WIN, CATEGORY_OF_CODE
from egtb.positions.material import Material, count_positions

#: Suffix of a compact-native table's summary (its stamp of completeness).
SUMMARY_SUFFIX = ".native.json"
#: Positions unranked and capture-checked at a time when a dependency is read.
READ_CHUNK = 1 << 22
#: The kinds of compact file a native table has, in the order they are written.
NATIVE_KINDS = (WDL, RULE_KINDS[LEAN_RULES], DTZ_KINDS[LEAN_RULES])
#: The fewest pieces whose pairs keep their DTZ on one side (:func:`keep_dtz_on_one_side`); the
#: tables of fewer keep both files, byte for byte as before.
ONE_SIDED_DTZ_PIECES = 8


def summary_path(directory: os.PathLike | str, material: Material) -> Path:
    """Where a compact-native table's summary lies."""
    return Path(directory) / f"{material.name}{SUMMARY_SUFFIX}"


def categories_path(directory: os.PathLike | str, material: Material) -> Path:
    """A table's ``.wcdf`` file: what :func:`read_categories` decodes.

    >>> categories_path("/t", Material.parse("2k-2k")).name
    '2k-2k.wcdf'
    """
    return compact_path(directory, material, kind=RULE_KINDS[LEAN_RULES])


def read_summary(directory: os.PathLike | str, material: Material) -> dict | None:
    """A compact-native table's summary, or None when it has none (not built, or unfinished).

    >>> read_summary("/nonexistent", Material.parse("1k-1k")) is None
    True
    """
    try:
        return json.loads(summary_path(directory, material).read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise TableError(f"{summary_path(directory, material)}: unreadable summary ({exc})") from exc


def is_complete(directory: os.PathLike | str, material: Material) -> bool:
    """Whether a material's compact-native files are all there and are those its summary names
    (size and header CRC-32 of each; a file changed or cut since is not complete).

    >>> is_complete("/nonexistent", Material.parse("1k-1k"))
    False
    """
    summary = read_summary(directory, material)
    if summary is None:
        return False
    for name, (size, crc) in summary["files"].items():
        path = Path(directory) / name
        try:
            if path.stat().st_size != size:
                return False
            table = CompactTable(path, use_marks_file=False)
            table.close()
            if table.header_crc != crc:
                return False
        except (OSError, TableError):
            return False
    return True


def has_compact_table(directory: os.PathLike | str, material: Material) -> bool:
    """Whether a material's three compact files (values, ``wcdf`` categories, DTZ) are all in
    `directory` and their headers read: a table the build can read without its master, however
    its files were written (a compact-native build, or ``egtb compact`` of a master since deleted).

    >>> has_compact_table("/nonexistent", Material.parse("1k-1k"))
    False
    """
    for kind in NATIVE_KINDS:
        try:
            CompactTable(compact_path(directory, material, kind=kind), use_marks_file=False).close()
        except TableError:
            return False
    return True


def has_native(directory: os.PathLike | str, material: Material) -> bool:
    """Whether a material's ``.wcdf`` file is in `directory`: what the build reads through
    :func:`read_categories` when the material has no master."""
    return categories_path(directory, material).exists()


def is_native_only(directory: os.PathLike | str, material: Material) -> bool:
    """Whether a material's table in `directory` is compact files alone: no master, a ``.wcdf``
    file (:func:`has_native`), so that the build reads it through :func:`read_categories`.

    >>> is_native_only("/nonexistent", Material.parse("1k-1k"))
    False
    """
    return not table_path(directory, material).exists() and has_native(directory, material)


def holds(contents) -> bool:
    """Whether compact files alone hold all a build of `contents` reads of a dependency: the
    values and the ``wcdf`` categories, no DTW, no other preset."""
    return not contents.dtw and contents.names == (LEAN_RULES,)


def refuse_unheld(directory: os.PathLike | str, material: Material, contents, *, needed_by: str) -> None:
    """MissingTableError naming `material` (a table of compact files alone) and the pair
    `needed_by` when that pair's `contents` need more of it than its compact files hold."""
    if not holds(contents):
        wanted = ", ".join(("DTW",) * contents.dtw + contents.names)
        raise MissingTableError(
            f"{needed_by} needs {wanted} of {material.name}, whose table in {directory} is compact "
            f"files alone (values and {LEAN_RULES}): build with --rules {LEAN_RULES} --no-dtw, or "
            "--compact-native, or rebuild its master")


def write_material(directory: os.PathLike | str, material: Material, category: np.ndarray,
                   dtz: np.ndarray, *, seconds: float = 0.0, threats: bool = False) -> dict:
    """Write a solved material's compact files (values, ``wcdf`` categories, DTZ), each with its
    marks file, then its summary (last, so that a killed writer leaves the table incomplete);
    return the summary.

    `category` and `dtz`: the ``wcdf`` layer as the solver leaves it (int8 categories, the DTZ of
    every position), arrays or rows read by ranges (:class:`egtb.formats.scratch.ReadOnce`); the
    files are coded a chunk at a time (:func:`egtb.formats.compact.writer.encode_kinds`). Files of
    another run are replaced. With `threats` the WLD file leaves threat positions out too.
    """
    directory = Path(directory)
    summary_path(directory, material).unlink(missing_ok=True)
    files = {}
    positions = count_positions(material)
    tally, checksum = LayerTally(), LayerChecksum(dtz.dtype)
    counted = 0  # the positions from the first whose DTZ is checked, counted and summed, in order

    def count(lo: int, hi: int, part: np.ndarray, part_dtz: np.ndarray) -> None:
        nonlocal counted
        if lo <= counted < hi:  # the first read of these positions (the encoder reads each twice)
            new = slice(counted - lo, hi - lo)
            check_written_dtz(material, counted, part[new], part_dtz[new])
            tally.add(part[new], part_dtz[new])
            checksum.add(part[new], part_dtz[new])
            counted = hi

    def codes_of(lo: int, hi: int) -> list[np.ndarray]:
        part, part_dtz = category[lo:hi], dtz[lo:hi]
        count(lo, hi, part, part_dtz)
        return [values_of(part), category_codes(part), dtz_codes(part, part_dtz)]

    as_exceptions = codes_as_exceptions(material)
    blobs = encode_kinds(material, codes_of, NATIVE_KINDS, as_exceptions=as_exceptions, threats=threats)
    for lo in range(counted, positions, LAYER_SLICE):  # what the encoder did not read in order (none)
        hi = min(lo + LAYER_SLICE, positions)
        count(lo, hi, category[lo:hi], dtz[lo:hi])
    attrs = tally.attrs(PRESETS[LEAN_RULES], dtz.dtype)  # (refuses a saturated DTZ before any file is written)
    for kind, (blob, _) in zip(NATIVE_KINDS, blobs):
        path = write_compact(compact_path(directory, material, kind=kind), blob)
        if not (as_exceptions and kind in RULE_KINDS.values()):  # one coded as exceptions reads the WLD file's
            write_marks(path)
        files[path.name] = [len(blob), HEADER.unpack_from(blob)[-1]]  # the header's own CRC-32
    summary = {"material": material.name, "positions": positions,
               "wins": attrs["wins"] + attrs["cursed_wins"],
               "losses": attrs["losses"] + attrs["blessed_losses"], "draws": attrs["draws"],
               "rules": {LEAN_RULES: dict(attrs, checksum_crc32=checksum.value())},
               "files": files, "build_seconds": round(seconds, 3)}
    _write_json(summary_path(directory, material), summary)
    return summary


def keep_dtz_on_one_side(directory: os.PathLike | str, materials: tuple[Material, ...]) -> Path | None:
    """Delete the larger ``.dtz`` file (with its marks) of a compact-native pair of two materials:
    the prober derives that side's DTZ from its moves, one ply into the other's file
    (:mod:`egtb.probe.derived_dtz`). Its summary then names the kept file in its place (so that
    the table is complete only while that file is the one written), and is written first: a
    kill between the two leaves a file no summary names, deleted on the next call. Returns the
    file deleted, None when there is none (a pair of one material, or either table incomplete).

    >>> keep_dtz_on_one_side("/nonexistent", (Material.parse("2k-1k"), Material.parse("1k-2k"))) is None
    True
    """
    directory = Path(directory)
    if len(materials) != 2:
        return None
    paths = [compact_path(directory, m, kind=DTZ_KINDS[LEAN_RULES]) for m in materials]
    # one file or none: nothing to delete (done before, or not built), without reading the tables
    if not all(path.exists() for path in paths) or not all(is_complete(directory, m) for m in materials):
        return None
    summaries = [read_summary(directory, m) for m in materials]
    named = [path.name in summary["files"] for path, summary in zip(paths, summaries)]
    if all(named):  # the larger goes, its marks counted
        sizes = [sum(f.stat().st_size for f in (path, Path(f"{path}.marks")) if f.exists()) for path in paths]
        drop = 0 if sizes[0] > sizes[1] else 1  # the pair's second on a tie
        kept = 1 - drop
        summary = summaries[drop]
        del summary["files"][paths[drop].name]
        summary["files"][paths[kept].name] = summaries[kept]["files"][paths[kept].name]
        _write_json(summary_path(directory, materials[drop]), summary)
    elif any(named):  # dropped before: what a kill left of it
        drop = named.index(False)
    else:
        return None
    found = [path for path in (paths[drop], Path(f"{paths[drop]}.marks")) if path.exists()]
    for path in found:
        path.unlink()
    return paths[drop] if found else None


def keep_dtz_on_one_side_in(directory: os.PathLike | str, *, min_pieces: int | None = None) -> list[Path]:
    """:func:`keep_dtz_on_one_side` for every pair of compact-native tables of at least
    ``min_pieces`` pieces (default ONE_SIDED_DTZ_PIECES) in `directory` (both built); the files deleted.

    >>> keep_dtz_on_one_side_in("/nonexistent")
    []
    """
    directory = Path(directory)
    if not directory.is_dir():
        return []
    stamped = sorted({Material.parse(path.name[:-len(SUMMARY_SUFFIX)])
                      for path in directory.glob(f"*{SUMMARY_SUFFIX}")}, key=lambda m: m.name)
    dropped, min_pieces = [], ONE_SIDED_DTZ_PIECES if min_pieces is None else min_pieces
    for material in stamped:
        mirrored = material.mirrored()
        if material.pieces >= min_pieces and material.name < mirrored.name:
            found = keep_dtz_on_one_side(directory, tuple(sorted((material, mirrored))))
            dropped += [found] if found is not None else []
    return dropped


def check_written_dtz(material: Material, first: int, category: np.ndarray, dtz: np.ndarray) -> None:
    """Refuse to write a DTZ that was never written: a win (category CAT_WIN) is at least one ply
    from its zeroing move, so a DTZ of 0 there means the solver's DTZ for its unit was lost (a
    scratch file read back as zeros). SolverError names the material and the first such position,
    so the pair is solved again instead of being stamped complete with wrong DTZ.

    >>> check_written_dtz(Material.parse("2k-1k"), 100, np.array([0, 2, -2]), np.array([0, 3, 0]))
    >>> check_written_dtz(Material.parse("2k-1k"), 100, np.array([0, 2, 2]), np.array([0, 3, 0]))
    Traceback (most recent call last):
    ...
    egtb.errors.SolverError: 2k-1k: 1 win with DTZ 0 from position 102 on: the DTZ of its unit was never written (its pair's scratch lost it); delete the pair's scratch directory to solve it again
    """
    lost = np.flatnonzero((category == CAT_WIN) & (np.asarray(dtz) == 0))
    if len(lost):
        raise SolverError(f"{material.name}: {len(lost):,} win{'s' if len(lost) > 1 else ''} with DTZ 0 from "
                          f"position {first + int(lost[0])} on: the DTZ of its unit was never written (its "
                          "pair's scratch lost it); delete the pair's scratch directory to solve it again")


def recode_categories(directory: os.PathLike | str, material: Material) -> tuple[int, int]:
    """Re-code a compact-native table's category file coded in full as exceptions to its WLD file
    (:mod:`egtb.formats.compact.exceptions`, as tables of 8 pieces or more are written now), and
    name the new file in its summary; return the file's bytes before and after. A file already
    coded as exceptions is left as it is (a killed run is finished by running it again).

    >>> recode_categories("/nonexistent", Material.parse("4k-4k"))
    Traceback (most recent call last):
    ...
    egtb.errors.TableError: /nonexistent/4k-4k.wcdf: unreadable compact file (No such file or directory)
    """
    path = categories_path(directory, material)
    table = CompactTable(path, use_marks_file=False)
    before = table.file_size
    if table.coded_path == path:
        wdl_crc = CompactTable(compact_path(directory, material), use_marks_file=False).header_crc
        blob, _ = encode_kinds(material, lambda lo, hi: [table.codes(lo, hi)], [table.kind], as_exceptions=True,
                               wdl_crc=wdl_crc)[0]
        write_compact(path, blob)
        table = CompactTable(path, use_marks_file=False)
    _name_in_summary(directory, material, {path.name: [table.file_size, table.header_crc]})
    return before, table.file_size


def recode_threats(directory: os.PathLike | str, material: Material) -> tuple[int, int]:
    """Write a table's WLD file again leaving threat positions out (:mod:`egtb.rules.threats`,
    format version 2), with its marks; its category file, where coded as exceptions, again with
    the new file's header CRC-32; both named in its summary. Return the WLD file's bytes before
    and after. A file that leaves them out already is kept (a killed run is finished by running
    it again).

    >>> recode_threats("/nonexistent", Material.parse("4k-4k"))
    Traceback (most recent call last):
    ...
    egtb.errors.TableError: /nonexistent/4k-4k.wld: unreadable compact file (No such file or directory)
    """
    path = compact_path(directory, material)
    table = CompactTable(path, use_marks_file=False)
    before = table.file_size
    if not table.threats:
        blob, _ = encode_kinds(material, lambda lo, hi: [table.codes(lo, hi)], [WDL], threats=True)[0]
        table.close()
        write_marks(write_compact(path, blob))
        table = CompactTable(path, use_marks_file=False)
    files = {path.name: [table.file_size, table.header_crc]}
    categories = categories_path(directory, material)
    if categories.exists() and is_exceptions_file(categories):
        found = read_exceptions(categories)
        if found.wdl_crc != table.header_crc:
            write_compact(categories, exceptions_bytes(material, found.positions, found.indices,
                                                       wdl_crc=table.header_crc))
        layer = CompactTable(categories, use_marks_file=False)
        files[categories.name] = [layer.file_size, layer.header_crc]
    _name_in_summary(directory, material, files)
    return before, table.file_size


def _name_in_summary(directory: os.PathLike | str, material: Material, files: dict[str, list[int]]) -> None:
    """Name files re-coded (name -> [bytes, header CRC-32]) in a compact-native table's summary, if
    it has one and names others."""
    summary = read_summary(directory, material)
    if summary is not None and any(summary["files"].get(name) != entry for name, entry in files.items()):
        summary["files"].update(files)
        _write_json(summary_path(directory, material), summary)


class LayerChecksum:
    """The CRC-32 of a layer's categories' bytes then of its DTZ's in the stored type, the
    checksum an HDF5 master's layer carries (:func:`egtb.formats.master.layer_checksum`), its
    slices added in order: the CRC-32 of the categories and that of the DTZ in each type it may be
    stored in (:func:`egtb.formats.master.narrow_type`: one byte, or two when a DTZ of 256 or more
    comes) run side by side, joined at the end (:func:`crc32_combine`), so that the layer is read once.

    >>> from egtb.formats import master
    >>> category = np.array([2, 0, -2], dtype=np.int8)
    >>> for dtz, stored in ((np.array([3, 0, 4], np.uint16), np.uint8), (np.array([300, 0, 4], np.uint16), np.uint16)):
    ...     checksum = LayerChecksum(dtz.dtype)
    ...     checksum.add(category[:2], dtz[:2])
    ...     checksum.add(category[2:], dtz[2:])
    ...     print(checksum.value() == master.layer_checksum(category, dtz.astype(stored)))
    True
    True
    """

    def __init__(self, dtz_type: np.dtype) -> None:
        one, two = np.dtype(np.uint8), np.dtype("<u2")
        self.category, self.positions, self.top = 0, 0, 0
        self.dtz = {one: 0} if dtz_type == one else {one: 0, two: 0}

    def add(self, category: np.ndarray, dtz: np.ndarray) -> None:
        """Add the next slice's categories and DTZ (of the same positions)."""
        self.category = zlib.crc32(np.ascontiguousarray(category).view(np.uint8), self.category)
        if len(self.dtz) > 1 and len(dtz):
            self.top = max(self.top, int(np.max(dtz)))
        for stored in self.dtz:
            self.dtz[stored] = zlib.crc32(np.ascontiguousarray(dtz, dtype=stored).view(np.uint8), self.dtz[stored])
        self.positions += len(category)

    def state(self) -> dict:
        """The CRCs so far, as plain JSON types (:meth:`from_state` takes them again)."""
        return {"category": self.category, "positions": self.positions, "top": self.top,
                "dtz": {str(stored.itemsize): crc for stored, crc in self.dtz.items()}}

    @classmethod
    def from_state(cls, state: dict) -> "LayerChecksum":
        """A checksum that goes on from :meth:`state`'s CRCs."""
        sizes = sorted(int(size) for size in state["dtz"])
        checksum = cls(np.dtype(np.uint8) if sizes == [1] else np.dtype("<u2"))
        checksum.category, checksum.positions, checksum.top = (int(state[k]) for k in ("category", "positions", "top"))
        checksum.dtz = {stored: int(state["dtz"][str(stored.itemsize)]) for stored in checksum.dtz}
        return checksum

    def value(self) -> int:
        """The checksum of the slices added."""
        stored = np.dtype(np.uint8) if len(self.dtz) == 1 or self.top < 256 else np.dtype("<u2")
        return crc32_combine(self.category, self.dtz[stored], self.positions * stored.itemsize)


def crc32_combine(first: int, second: int, length: int) -> int:
    """CRC-32 of two byte strings one after the other, from their CRCs and the second's `length`
    (zlib's crc32_combine, which Python's zlib does not expose): the categories' CRC and the
    DTZ's are computed in one pass, yet a layer's checksum runs over the one then the other.

    >>> crc32_combine(zlib.crc32(b"ab"), zlib.crc32(b"cd"), 2) == zlib.crc32(b"abcd")
    True
    """
    if length <= 0:
        return first
    odd = [0xEDB88320] + [1 << n for n in range(31)]  # the operator of one zero bit
    even = _square(odd)  # two zero bits
    odd = _square(even)  # four
    while True:
        even = _square(odd)  # apply the operator of one zero byte, then doubling, as zlib does
        if length & 1:
            first = _times(even, first)
        length >>= 1
        if not length:
            break
        odd = _square(even)
        if length & 1:
            first = _times(odd, first)
        length >>= 1
        if not length:
            break
    return first ^ second


def _times(matrix: list[int], vector: int) -> int:
    total, row = 0, 0
    while vector:
        if vector & 1:
            total ^= matrix[row]
        vector >>= 1
        row += 1
    return total


def _square(matrix: list[int]) -> list[int]:
    return [_times(matrix, matrix[n]) for n in range(32)]


def read_categories(directory: os.PathLike | str, material: Material, out: np.ndarray, *,
                    tablebase=None, loaded: LoadedTables | None = None, crowned_only: bool = False) -> None:
    """Fill `out` (int8, a position each) with a compact-native table's ``wcdf`` categories at
    counter 0, those of its capture positions from the tables `loaded` or else the prober's
    capture search (:func:`category_chunks`; with `crowned_only`, only the capture positions a
    crowning reaches).

    `tablebase`: the prober of `directory` to use (default: one made here and closed). Raises
    TableError naming a file that does not read, MissingTableError when a table the capture
    search needs is absent.
    """
    if len(out) != count_positions(material):
        raise TableError(f"{categories_path(directory, material)}: {material.name} has "
                         f"{count_positions(material)} positions, the build expects {len(out)}")
    for start, categories in category_chunks(directory, material, tablebase=tablebase, loaded=loaded,
                                             crowned_only=crowned_only):
        out[start:start + len(categories)] = categories


def category_chunks(directory: os.PathLike | str, material: Material, *, tablebase=None,
                    loaded: LoadedTables | None = None, first: int = 0, last: int | None = None,
                    crowned_only: bool = False):
    """Yield (first position, int8 categories) of a compact-native table's ``wcdf`` categories
    at counter 0, positions `first` to `last` (default: all), :data:`READ_CHUNK` at a time: the
    blocks of its ``.wcdf`` file that hold them decoded (:meth:`CompactTable.codes`), the
    positions it leaves out (the side to move must capture) answered from the tables a pair has `loaded`
    (:class:`egtb.builder.dependency_captures.LoadedTables`), and those they do not hold (or all,
    without them) by the prober's capture search; so are the threat positions a WLD file its
    categories refine leaves out (:mod:`egtb.rules.threats`), by the prober's search. Memory
    stays at a chunk, however big the table.

    With `crowned_only` only the capture positions a crowning can reach are answered (a white
    king on White's crowning row: the side that just moved crowned a man); the others keep the
    code the file holds for them, which means nothing. A pair reads a dependency of its own
    piece count only after a crowning (every other exit captures), so that is all it needs of
    it, and most of the searches are saved. `tablebase`: as :func:`read_categories`'s.
    """
    from egtb.probe.tablebase import Tablebase  # the prober reads the finished tables
    directory = Path(directory)
    table = CompactTable(categories_path(directory, material))
    own = tablebase is None
    tablebase = Tablebase(directory) if own else tablebase
    try:
        if table.positions != count_positions(material):
            raise TableError(f"{table.path}: {table.positions} positions, {material.name} has "
                             f"{count_positions(material)}")
        last = table.positions if last is None else last
        for lo in range(first, last, READ_CHUNK):
            categories = CATEGORY_OF_CODE[table.codes(lo, min(lo + READ_CHUNK, last))]
            _answer_captures(tablebase, loaded, material, lo, categories, crowned_only=crowned_only)
            if table.threats:
                _answer_threats(tablebase, material, lo, categories, crowned_only=crowned_only)
            yield lo, categories
    finally:
        table.close()
        if own:
            tablebase.close()


def _answer_captures(tablebase, loaded: LoadedTables | None, material: Material, first: int,
                     categories: np.ndarray, *, crowned_only: bool) -> None:
    """Replace the categories of the positions first.. whose side to move must capture (with
    `crowned_only`, those a crowning reaches): from the tables `loaded`, where they hold every
    capture's table, else by the prober's capture search (at counter 0: an exit always zeroes
    the counter)."""
    at, *boards = capture_positions(material_counts(material), first, first + len(categories),
                                    crowned_only=crowned_only)
    if len(at) and loaded is not None:
        left = loaded.fill(at, tuple(boards), categories, first)
        at, boards = at[left], [board[left] for board in boards]
    if len(at):
        _, category, _ = tablebase.probe_batch_rule(*boards, 0, 0, rule=LEAN_RULES)
        categories[at - first] = category


def _answer_threats(tablebase, material: Material, first: int, categories: np.ndarray, *, crowned_only: bool) -> None:
    """Replace the categories of the positions first.. that are threat positions its WLD file leaves
    out (with `crowned_only`, those a crowning reaches) by the prober's search."""
    counts = material_counts(material)
    last = first + len(categories)
    must, threat = np.empty(len(categories), dtype=np.bool_), np.empty(len(categories), dtype=np.bool_)
    left_out_flags(counts, first, last, must, threat)
    at = first + np.flatnonzero(threat)
    boards = tuple(np.empty(len(at), dtype=np.int64) for _ in range(4))
    unrank_positions(at, material.black_men, material.black_kings, material.white_men, material.white_kings,
                     *boards)
    if crowned_only:
        crowned = (boards[3] & WHITE_CROWN_ROW) != 0
        at, boards = at[crowned], tuple(board[crowned] for board in boards)
    if len(at):
        _, category, _ = tablebase.probe_batch_rule(*boards, 0, 0, rule=LEAN_RULES)
        categories[at - first] = category


def capture_positions(counts: np.ndarray, lo: int, hi: int, *, crowned_only: bool = False) -> tuple[np.ndarray, ...]:
    """(index, bm, bk, wm, wk) of the positions lo..hi-1 of a material (Black to move) whose side
    to move must capture, in order (with `crowned_only`, only those with a white king on White's
    crowning row): the range unranked step by step
    (:func:`egtb.positions.walk.unrank_captures`), never a whole unit (an all-kings 8-piece
    unit holds 736 M positions).

    >>> at, bm, bk, wm, wk = capture_positions(np.array([0, 1, 1, 0]), 0, 868)
    >>> len(at), int(at[0]) < 868
    (72, True)
    >>> at, *_ = capture_positions(np.array([0, 1, 0, 2]), 0, 14880, crowned_only=True)   # 1k-2k
    >>> len(at) < len(capture_positions(np.array([0, 1, 0, 2]), 0, 14880)[0])
    True
    """
    out = [np.empty(hi - lo, dtype=np.int64) for _ in range(5)]
    count = unrank_captures(counts, lo, hi, *out, crowned_only)
    return tuple(array[:count] for array in out)


def remove_leftovers(directory: os.PathLike | str) -> list[Path]:
    """Delete the temporary files a killed native writer left (compact files, marks files,
    stamps), those of a process still running kept; return them.

    >>> remove_leftovers("/nonexistent")
    []
    """
    return compact_writer.remove_leftovers(directory, also=(SUMMARY_SUFFIX,))


def _write_json(path: Path, value: dict) -> None:
    """Write a JSON file atomically (temporary name, fsync, rename)."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w") as fh:
        json.dump(value, fh, indent=1, sort_keys=True)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
