"""Reference figures of finished tables, kept in the repository.

``egtb/data/reference/tables.tsv`` (package data) lists, for every material up to 6 pieces, the
counts of wins, losses and draws, the longest DTW and the CRC-32 checksum of a
table built and verified by this project. A table built anywhere else must
match them exactly: the build is deterministic whatever the worker count.

``egtb/data/reference/rule_layers.tsv`` does the same for each rule layer
(material and preset): the count of each category, the longest DTZ of a win or
loss and of a cursed win or blessed loss, and the layer's own CRC-32.

>>> reference = load_reference()
>>> reference["2k-1k"].wins > reference["2k-1k"].losses
True
>>> load_rule_reference()["2k-1k", "wcdf"].max_dtz
33
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from egtb.builder import native
from egtb.errors import InvalidDataError
from egtb.builder.pipeline import count_codes
from egtb.builder.rule_layer import count_layer
from egtb.formats import master
from egtb.positions.material import Material
from egtb.formats.values import DRAW, LOSS, NO_MAX_DTW, WIN

#: The reference file shipped with the project.
REFERENCE_PATH = Path(str(resources.files("egtb").joinpath("data", "reference", "tables.tsv")))
_FIELDS = ("positions", "wins", "losses", "draws", "max_dtw", "checksum_crc32")
#: The figures a table without DTW shares with one that has it.
_VALUE_FIELDS = ("positions", "wins", "losses", "draws")
#: The rule-layer reference shipped with the project.
RULE_REFERENCE_PATH = REFERENCE_PATH.with_name("rule_layers.tsv")
_RULE_FIELDS = ("wins", "cursed_wins", "draws", "blessed_losses", "losses", "max_dtz",
                "max_dtz_cursed", "checksum_crc32")
#: Those compact files determine when a quiet cursed win or blessed loss (its DTZ in no file) is there.
_RULE_COUNT_FIELDS = _RULE_FIELDS[:6]


@dataclass(frozen=True)
class ReferenceEntry:
    """Figures of one finished table."""

    positions: int
    """Positions in the table."""
    wins: int
    """Positions won by the side to move."""
    losses: int
    """Positions lost by the side to move."""
    draws: int
    """Drawn positions."""
    max_dtw: int
    """Longest distance to win, in plies; :data:`NO_MAX_DTW` for a table stored without DTW."""
    checksum_crc32: int
    """CRC-32 of the stored datasets (docs/table-format.md)."""


@dataclass(frozen=True)
class RuleReferenceEntry:
    """Figures of one rule layer (a material under a preset)."""

    wins: int
    """Won under the rule."""
    cursed_wins: int
    """Won without the rule, drawn by it."""
    draws: int
    """Drawn either way."""
    blessed_losses: int
    """Lost without the rule, drawn by it."""
    losses: int
    """Lost under the rule."""
    max_dtz: int
    """Longest DTZ of a win or loss under the rule."""
    max_dtz_cursed: int
    """Longest DTZ of a cursed win or blessed loss (0 when none)."""
    checksum_crc32: int
    """CRC-32 of the layer's datasets (docs/table-format.md)."""


def load_rule_reference(path: os.PathLike | str = RULE_REFERENCE_PATH
                        ) -> dict[tuple[str, str], RuleReferenceEntry]:
    """Rule-layer reference entries by (material name, preset); ValueError names a bad line."""
    entries = {}
    for number, line in enumerate(Path(path).read_text().splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        name, preset, *values = line.split("\t")
        if len(values) != len(_RULE_FIELDS):
            raise InvalidDataError(f"{path}:{number}: expected {len(_RULE_FIELDS) + 2} "
                             "tab-separated fields")
        try:
            entries[Material.parse(name).name, preset] = RuleReferenceEntry(
                *(int(v) for v in values))
        except ValueError as exc:
            raise InvalidDataError(f"{path}:{number}: {exc}") from None
    return entries


def load_reference(path: os.PathLike | str = REFERENCE_PATH) -> dict[str, ReferenceEntry]:
    """Reference entries by material name; ValueError names a malformed line."""
    entries = {}
    for number, line in enumerate(Path(path).read_text().splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        name, *values = line.split("\t")
        if len(values) != len(_FIELDS):
            raise InvalidDataError(f"{path}:{number}: expected {len(_FIELDS) + 1} tab-separated fields")
        try:
            entries[Material.parse(name).name] = ReferenceEntry(
                *(NO_MAX_DTW if v == "-" else int(v) for v in values))
        except ValueError as exc:
            raise InvalidDataError(f"{path}:{number}: {exc}") from None
    return entries


def figures_from_data(path: os.PathLike | str, *, checksum: int | None = None) -> ReferenceEntry:
    """A table's figures recomputed from its stored data, never from its attributes.

    The checksum is computed afresh over the stored datasets, so a file whose
    data was changed after writing differs from the reference even though its
    attributes still carry the old figures. Read a slice at a time (7-piece
    tables hold billions of positions). `checksum`: that of the values, when the
    caller has it (:func:`egtb.formats.master.stored_checksums`).
    """
    counts = np.zeros(4, dtype=np.int64)
    max_dtw, positions, has_dtw = 0, 0, True
    for _, wdl, dtw, _, _ in master.read_slices(path, check=False):
        count_codes(wdl, counts)
        positions += len(wdl)
        has_dtw = dtw is not None
        if has_dtw and len(dtw):
            max_dtw = max(max_dtw, int(dtw.max()))
    crc = master.stored_checksums(path)[0] if checksum is None else checksum
    return ReferenceEntry(positions=positions, wins=int(counts[WIN]), losses=int(counts[LOSS]),
                          draws=int(counts[DRAW]), max_dtw=max_dtw if has_dtw else NO_MAX_DTW,
                          checksum_crc32=crc)


def layer_figures_from_data(path: os.PathLike | str, preset: str, *,
                            checksum: int | None = None) -> RuleReferenceEntry:
    """A rule layer's figures recomputed from its stored data (as :func:`figures_from_data`).

    Read a slice at a time; the checksum is recomputed over the stored bytes
    unless the caller gives it.
    """
    counts = np.zeros(5, dtype=np.int64)
    max_dtz = max_cursed = 0
    for _, _, _, category, dtz in master.read_slices(path, rules=(preset,), check=False):
        part, top, top_cursed = count_layer(category[0], dtz[0])
        counts += part
        max_dtz, max_cursed = max(max_dtz, int(top)), max(max_cursed, int(top_cursed))
    wins, cursed_wins, draws, blessed_losses, losses = counts[::-1].tolist()
    return RuleReferenceEntry(wins=wins, cursed_wins=cursed_wins, draws=draws,
                              blessed_losses=blessed_losses, losses=losses, max_dtz=max_dtz,
                              max_dtz_cursed=max_cursed,
                              checksum_crc32=master.stored_checksums(path, rules=(preset,))[1][preset]
                              if checksum is None else checksum)


def reference_lines(directory: os.PathLike | str, materials: list[Material]) -> tuple[list[str], list[str]]:
    """The lines of ``tables.tsv`` and of ``rule_layers.tsv`` for `materials`, from their files' data.

    For adding tables to the reference after ``egtb verify`` passed on them
    (``bench/make_reference.py``); a table without DTW gets ``-`` for its longest DTW.
    """
    table_lines, layer_lines = [], []
    for material in materials:
        path = master.table_path(directory, material)
        presets = tuple(master.rule_presets_in(path))
        crc, layer_crcs = master.stored_checksums(path, rules=presets)  # each dataset read once for them
        table_lines.append(table_line(material, figures_from_data(path, checksum=crc)))
        layer_lines += [layer_line(material, preset, layer_figures_from_data(path, preset, checksum=layer_crcs[preset]))
                        for preset in presets]
    return table_lines, layer_lines


def table_line(material: Material, found: ReferenceEntry) -> str:
    """A table's line of ``tables.tsv`` (``-`` for the longest DTW of a table without DTW).

    >>> table_line(Material.parse("1k-1k"), ReferenceEntry(992, 230, 108, 654, NO_MAX_DTW, 7)).split()
    ['1k-1k', '992', '230', '108', '654', '-', '7']
    """
    return "\t".join([material.name] + ["-" if name == "max_dtw" and found.max_dtw == NO_MAX_DTW
                                         else str(getattr(found, name)) for name in _FIELDS])


def layer_line(material: Material, preset: str, found: RuleReferenceEntry) -> str:
    """A rule layer's line of ``rule_layers.tsv``."""
    return "\t".join([material.name, preset] + [str(getattr(found, name)) for name in _RULE_FIELDS])


def compare_with_reference(directory: os.PathLike | str, materials: list[Material], *,
                           reference: dict[str, ReferenceEntry] | None = None,
                           rule_reference: dict | None = None) -> list[str]:
    """One message per table or rule layer whose figures differ from the reference.

    Materials the reference does not list are skipped, and so are layers a file
    does not hold (a build with fewer ``--rules``).
    """
    reference = load_reference() if reference is None else reference
    rule_reference = load_rule_reference() if rule_reference is None else rule_reference
    stamped = [m for m in materials if not master.table_path(directory, m).exists()]
    problems = [problem for m in stamped for problem in _compare_native(directory, m, reference, rule_reference)]
    materials = [m for m in materials if m not in stamped]
    problems += _compare_layers(directory, materials, rule_reference)
    for material in materials:
        expected = reference.get(material.name)
        if expected is None:
            continue
        path = master.table_path(directory, material)
        found = figures_from_data(path)
        # a file without DTW beside a reference with it (or the reverse): the values' counts
        fields = _FIELDS if (found.max_dtw == NO_MAX_DTW) == (expected.max_dtw == NO_MAX_DTW) \
            else _VALUE_FIELDS
        differ = _field_differences(asdict(found), asdict(expected), fields, "reference")
        if differ:
            problems.append(f"{path}: differs from the reference: {', '.join(differ)}")
    return problems


def _compare_native(directory: os.PathLike | str, material: Material, reference: dict,
                    rule_reference: dict) -> list[str]:
    """The messages of a compact-native table (no master) whose summary
    (:func:`egtb.builder.native.read_summary`) differs from the reference, or that has none, or
    whose files are not those it names."""
    summary = native.read_summary(directory, material)
    path = native.summary_path(directory, material)
    if summary is None:
        return [f"{path}: missing (the table has no master and no compact-native summary)"]
    problems = [] if native.is_complete(directory, material) else [
        f"{path}: its compact files are not those it names (changed or cut since the build)"]
    expected = reference.get(material.name)
    if expected is not None:
        differ = _field_differences(summary, asdict(expected), _VALUE_FIELDS, "reference")
        if differ:
            problems.append(f"{path}: differs from the reference: {', '.join(differ)}")
    layer = rule_reference.get((material.name, native.LEAN_RULES))
    if layer is not None:
        differ = _field_differences(summary["rules"][native.LEAN_RULES], asdict(layer), _RULE_FIELDS, "reference")
        if differ:
            problems.append(f"{path}: rule layer {native.LEAN_RULES} differs from the reference: "
                            f"{', '.join(differ)}")
    return problems


def recounted_differences(directory: os.PathLike | str, material: Material, values: ReferenceEntry,
                          layer: RuleReferenceEntry, *, rule: str = native.LEAN_RULES, dtz_known: bool = True,
                          reference: dict[str, ReferenceEntry] | None = None,
                          rule_reference: dict | None = None) -> list[str]:
    """One message for each place where a compact-native table's figures recounted from its files
    (``values`` and its ``rule`` layer's, :mod:`egtb.builder.figures`) differ from its summary (what
    the builder counted) or from the shipped reference (when it lists the material). Without
    ``dtz_known`` (quiet cursed wins or blessed losses, whose DTZ no compact file holds) the
    longest DTZ of one and the layer checksum are not compared.

    >>> from dataclasses import replace
    >>> found = ReferenceEntry(positions=4, wins=1, losses=1, draws=2, max_dtw=NO_MAX_DTW, checksum_crc32=7)
    >>> recounted_differences("/nonexistent", Material.parse("1k-1k"), found, None,
    ...                       reference={"1k-1k": replace(found, wins=2)}, rule_reference={})
    ['1k-1k: figures recounted from its files differ from the reference (tables.tsv): wins 1 (reference 2)']
    """
    reference = load_reference() if reference is None else reference
    rule_reference = load_rule_reference() if rule_reference is None else rule_reference
    rule_fields = _RULE_FIELDS if dtz_known else _RULE_COUNT_FIELDS
    problems = []
    summary = native.read_summary(directory, material)
    if summary is not None:
        stamped = native.summary_path(directory, material).name
        problems += _differing(material, values, summary, _VALUE_FIELDS, stamped, "stamped")
        if rule in summary.get("rules", {}):
            problems += _differing(material, layer, summary["rules"][rule], rule_fields,
                                   f"rule layer {rule} of {stamped}", "stamped")
    expected = reference.get(material.name)
    if expected is not None:  # a reference row with DTW has a checksum over the DTW too
        fields = _FIELDS if expected.max_dtw == NO_MAX_DTW else _VALUE_FIELDS
        problems += _differing(material, values, asdict(expected), fields, "the reference (tables.tsv)", "reference")
    expected_layer = rule_reference.get((material.name, rule))
    if expected_layer is not None:
        problems += _differing(material, layer, asdict(expected_layer), rule_fields,
                               f"the reference (rule_layers.tsv, {rule})", "reference")
    return problems


def _differing(material: Material, found, expected: dict, fields: tuple[str, ...], source: str,
               label: str) -> list[str]:
    """The message naming the figures of ``found`` that differ from ``expected``'s, or none."""
    differ = _field_differences(asdict(found), expected, fields, label)
    return [f"{material.name}: figures recounted from its files differ from {source}: {', '.join(differ)}"] \
        if differ else []


def _field_differences(found: dict, expected: dict, fields: tuple[str, ...], label: str) -> list[str]:
    """``name found (label expected)`` for each of ``fields`` whose figures differ.

    >>> _field_differences({"wins": 3, "draws": 1}, {"wins": 4, "draws": 1}, ("wins", "draws"), "reference")
    ['wins 3 (reference 4)']
    """
    return [f"{name} {found[name]} ({label} {expected[name]})" for name in fields if found[name] != expected[name]]


def _compare_layers(directory: os.PathLike | str, materials: list[Material],
                    reference: dict[tuple[str, str], RuleReferenceEntry]) -> list[str]:
    problems = []
    for material in materials:
        path = master.table_path(directory, material)
        for preset, attrs in sorted(master.read_layer_attrs(path).items()):
            expected = reference.get((material.name, preset))
            if expected is None:
                continue
            found = RuleReferenceEntry(*(int(attrs[name]) for name in _RULE_FIELDS))
            if found != expected:
                differ = _field_differences(asdict(found), asdict(expected), _RULE_FIELDS, "reference")
                problems.append(f"{path}: rule layer {preset} differs from the reference: "
                                f"{', '.join(differ)}")
    return problems
