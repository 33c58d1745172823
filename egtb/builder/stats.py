"""Statistics of a table directory: per material and per piece count.

Read from the file attributes only (cheap): positions, wins, losses, draws,
max DTW with a FEN reaching it, bytes on disk and bits per position; and per
rule layer (move-rule preset) the count of each category (win, cursed win,
draw, blessed loss, loss) and the longest DTZ, with the share of decisive
positions the move rule turns into draws (cursed wins and blessed losses).

>>> PUBLISHED_POSITIONS[2]
3488
"""

from __future__ import annotations

import json
from math import comb
import os
from dataclasses import asdict, dataclass, field

from egtb.formats import master
from egtb.builder.contents import LEAN_RULES
from egtb.builder.native import read_summary
from egtb.builder.plan import pieces_a_side
from egtb.positions.material import Material, all_materials

#: Positions with both colours present, one side to move (checkers proof tables).
PUBLISHED_POSITIONS = {2: 3488, 3: 196032, 4: 6209316, 5: 139450808, 6: 2426085676}
#: Published placements of n pieces of any colours (the checkers proof; the tables hold those
#: with both colours, the rest are placements of one colour alone: :func:`one_colour_placements`).
PUBLISHED_PLACEMENTS = {7: 34_779_531_480, 8: 406_309_208_481}
#: Published positions (both colours, Black to move) of a piece count cut to at most k pieces a
#: side, by (pieces, k): KingsRow's cut of its 10-piece set is 5 a side.
PUBLISHED_CUTS = {(8, 4): 111_378_534_401, (8, 5): 289_360_991_121}


def one_colour_placements(pieces: int) -> int:
    """Placements of `pieces` pieces all of one colour (men never on their crowning row).

    >>> one_colour_placements(7) + 34_243_113_624 == PUBLISHED_PLACEMENTS[7]
    True
    """
    return 2 * sum(comb(28, men) * comb(32 - men, pieces - men) for men in range(pieces + 1))
#: Figures kept per rule layer (attribute names of a layer's group).
LAYER_FIELDS = ("wins", "cursed_wins", "draws", "blessed_losses", "losses", "max_dtz",
                "max_dtz_cursed")


@dataclass
class LayerStats:
    """Category counts and longest DTZ of a material (or a piece count) under one preset."""

    wins: int = 0
    """Won under the rule."""
    cursed_wins: int = 0
    """Won without the rule, drawn by it."""
    draws: int = 0
    """Drawn either way."""
    blessed_losses: int = 0
    """Lost without the rule, drawn by it."""
    losses: int = 0
    """Lost under the rule."""
    max_dtz: int = 0
    """Longest DTZ of a win or loss under the rule."""
    max_dtz_cursed: int = 0
    """Longest DTZ of a cursed win or blessed loss (above the limit; 0 when none)."""

    @property
    def saved_share(self) -> float:
        """Share of the decisive positions (without the rule) that the rule draws.

        >>> LayerStats(wins=90, cursed_wins=6, blessed_losses=4).saved_share
        0.1
        """
        decisive = self.wins + self.cursed_wins + self.blessed_losses + self.losses
        return (self.cursed_wins + self.blessed_losses) / decisive if decisive else 0.0

    def add(self, other: "LayerStats") -> None:
        """Add a material's figures to this total."""
        for name in ("wins", "cursed_wins", "draws", "blessed_losses", "losses"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.max_dtz = max(self.max_dtz, other.max_dtz)
        self.max_dtz_cursed = max(self.max_dtz_cursed, other.max_dtz_cursed)

    def as_dict(self) -> dict:
        """Fields plus the share of decisive positions drawn by the rule."""
        return dict(asdict(self), saved_share=round(self.saved_share, 8))


@dataclass
class TableStats:
    """Figures of one material, or totals of a piece count (material = 'N pieces')."""

    material: str
    """Material name, or 'N pieces' for a total."""
    pieces: int
    """Number of pieces."""
    positions: int = 0
    """Positions (Black to move)."""
    wins: int | None = 0
    """Positions the side to move wins; None when compact files alone hold the material (they
    store no counts), or for a total over such a material."""
    losses: int | None = 0
    """Positions the side to move loses (None as for wins)."""
    draws: int | None = 0
    """Drawn positions (None as for wins)."""
    max_dtw: int | None = None
    """Longest DTW (plies); None when no file of it stores DTW (7 pieces by default)."""
    max_dtw_fen: str = ""
    """A position reaching the longest DTW."""
    bytes: int = 0
    """Bytes on disk."""
    rules: dict[str, LayerStats] = field(default_factory=dict)
    """Figures per rule layer (preset name), for the layers the files hold."""
    compact_only: bool = False
    """Held in compact files without a master table: the positions and bytes are their
    headers' and sizes, the counts unknown (None)."""

    @property
    def bits_per_position(self) -> float:
        """Bits on disk per position."""
        return 8 * self.bytes / self.positions if self.positions else 0.0

    def add(self, other: TableStats) -> None:
        """Add a material's figures to this total."""
        self.positions += other.positions
        for name in ("wins", "losses", "draws"):
            mine, theirs = getattr(self, name), getattr(other, name)
            setattr(self, name, None if mine is None or theirs is None else mine + theirs)
        self.bytes += other.bytes
        if other.max_dtw is not None and (self.max_dtw is None or other.max_dtw > self.max_dtw):
            self.max_dtw, self.max_dtw_fen = other.max_dtw, other.max_dtw_fen
        for preset, layer in other.rules.items():
            self.rules.setdefault(preset, LayerStats()).add(layer)

    def as_dict(self) -> dict:
        """Fields plus bits per position."""
        return dict(asdict(self), bits_per_position=round(self.bits_per_position, 4),
                    rules={p: layer.as_dict() for p, layer in self.rules.items()})


def material_stats(path: os.PathLike | str) -> TableStats:
    """Figures of one table file (attributes only)."""
    attrs = master.read_attrs(path)
    material = Material.parse(str(attrs["material"]))
    layers = master.read_layer_attrs(path)
    rules = {preset: LayerStats(*(int(layers[preset][name]) for name in LAYER_FIELDS))
             for preset in sorted(layers, key=_preset_order)}
    return TableStats(material.name, material.pieces, int(attrs["positions"]),
                      int(attrs["wins"]), int(attrs["losses"]), int(attrs["draws"]),
                      int(attrs["max_dtw"]) if "max_dtw" in attrs else None,
                      str(attrs.get("max_dtw_fen", "")),
                      os.path.getsize(path), rules)


def compact_material_stats(directory: os.PathLike | str, material: Material) -> TableStats:
    """Figures of a material held in compact files only: the positions their header gives and
    their bytes on disk. They store no win, loss or draw counts (None), unless the table was built
    compact-native: its stamp (:func:`egtb.builder.native.read_summary`) has them and the wcdf
    layer's.

    >>> compact_material_stats("/nonexistent", Material.parse("1k-1k"))
    Traceback (most recent call last):
    ...
    egtb.errors.TableError: /nonexistent/1k-1k.wld: unreadable compact file (No such file or directory)
    """
    from egtb.formats.compact import CompactTable, compact_paths
    from egtb.formats.compact.sidecar import marks_path
    paths = compact_paths(directory, material)
    table = CompactTable(paths[0], use_marks_file=False)
    try:
        positions = table.positions
    finally:
        table.close()
    size = sum(q.stat().st_size for path in paths for q in (path, marks_path(path)) if q.exists())
    summary = read_summary(directory, material)
    if summary is None:
        return TableStats(material.name, material.pieces, positions, None, None, None, None, "",
                          size, compact_only=True)
    layer = summary["rules"][LEAN_RULES]
    return TableStats(material.name, material.pieces, positions, summary["wins"], summary["losses"],
                      summary["draws"], None, "", size,
                      {LEAN_RULES: LayerStats(*(int(layer[name]) for name in LAYER_FIELDS))}, compact_only=True)


def _preset_order(name: str) -> tuple[int, str]:
    """Presets in DRAW_RULES order (wcdf, crowning, forty-plies), unknown ones last."""
    from egtb.rules.board import DRAW_RULES
    order = list(DRAW_RULES)
    return (order.index(name) if name in order else len(order), name)


def directory_stats(directory: os.PathLike | str) -> tuple[list[TableStats], list[TableStats]]:
    """(per material, per piece count) figures of every table in a directory (master tables, and
    compact files of materials without a master)."""
    from egtb.formats.compact import SUFFIX as COMPACT_SUFFIX
    masters = master.stored_materials(directory)
    tables = [material_stats(master.table_path(directory, m)) for m in masters]
    tables += [compact_material_stats(directory, m)
               for m in master.stored_materials(directory, suffix=COMPACT_SUFFIX) if m not in set(masters)]
    tables.sort(key=lambda t: (t.pieces, t.material))
    totals: dict[int, TableStats] = {}
    for t in tables:
        totals.setdefault(t.pieces, TableStats(f"{t.pieces} pieces", t.pieces)).add(t)
    return tables, [totals[n] for n in sorted(totals)]


def format_stats(tables: list[TableStats], totals: list[TableStats]) -> str:
    """A plain-text report; totals are compared with the published counts."""
    header = (f"{'material':<14}{'positions':>13}{'wins':>13}{'losses':>13}{'draws':>13}"
              f"{'maxDTW':>7}{'bytes':>12}{'bits/pos':>9}  longest")
    lines = [header]
    for t in tables + totals:
        lines.append(f"{t.material:<14}{t.positions:>13}{_count(t.wins):>13}{_count(t.losses):>13}"
                     f"{_count(t.draws):>13}{_count(t.max_dtw):>7}{t.bytes:>12}"
                     f"{t.bits_per_position:>9.3f}"
                     f"  {t.max_dtw_fen or (_COMPACT_NOTE if t.compact_only and t.wins is None else '')}")
    compact = [t.material for t in tables if t.compact_only and t.wins is None]
    if compact:
        lines += ["", f"{len(compact)} materials held in compact files only ({', '.join(compact[:6])}"
                  f"{', ...' if len(compact) > 6 else ''}): their headers give the positions, not the "
                  "wins, losses or draws ('-'); the master tables (.h5) hold those"]
    if any(t.rules for t in tables):
        lines += ["", format_rule_stats(tables, totals)]
    held = {}
    for t in tables:
        held.setdefault(t.pieces, set()).add(Material.parse(t.material))
    for t in totals:
        complete = held.get(t.pieces, set()) == set(all_materials(t.pieces, min_pieces=t.pieces))
        if not complete:
            lines.append(_partial_line(t, held.get(t.pieces, set())))
            continue
        expected = PUBLISHED_POSITIONS.get(t.pieces)
        if expected is not None:
            mark = "matches" if expected == t.positions else "DIFFERS from"
            lines.append(f"{t.pieces} pieces: {t.positions} positions {mark} the published "
                         f"{expected}")
        placements = PUBLISHED_PLACEMENTS.get(t.pieces)
        if placements is not None:
            total = t.positions + one_colour_placements(t.pieces)
            mark = "matches" if total == placements else "DIFFERS from"
            lines.append(f"{t.pieces} pieces: {t.positions} positions and "
                         f"{one_colour_placements(t.pieces)} placements of one colour: {total} "
                         f"{mark} the published {placements} placements")
    return "\n".join(lines)


def _partial_line(total: TableStats, held: set[Material]) -> str:
    """What a piece count held in part is: its materials, and its positions against the published
    count of its cut when it is one (all the materials of at most k pieces a side).

    >>> print(_partial_line(TableStats("8 pieces", 8, 111_378_534_401),
    ...                     {m for m in all_materials(8, min_pieces=8) if pieces_a_side(m) <= 4}))
    8 pieces, held in part: 25 of 147 materials, every one of at most 4 a side: 111378534401 positions matches the published 111378534401
    """
    every = set(all_materials(total.pieces, min_pieces=total.pieces))
    text = f"{total.pieces} pieces, held in part: {len(held)} of {len(every)} materials"
    cut = max(map(pieces_a_side, held), default=0)
    expected = PUBLISHED_CUTS.get((total.pieces, cut))
    if held != {m for m in every if pieces_a_side(m) <= cut} or expected is None:
        return text
    mark = "matches" if expected == total.positions else "DIFFERS from"
    return (f"{text}, every one of at most {cut} a side: {total.positions} positions {mark} the "
            f"published {expected}")


#: The "longest" column of a material held in compact files only.
_COMPACT_NOTE = "compact files: no win/loss/draw counts stored"


def _count(value: int | None) -> str:
    """A count, or '-' when the files do not hold it.

    >>> _count(12), _count(None)
    ('12', '-')
    """
    return "-" if value is None else str(value)


def format_rule_stats(tables: list[TableStats], totals: list[TableStats]) -> str:
    """Per material and preset: category counts and longest DTZ; then per piece count the
    share of decisive positions each preset draws."""
    lines = [f"{'material':<14}{'rule':<13}{'wins':>12}{'cursed':>10}{'draws':>12}"
             f"{'blessed':>10}{'losses':>12}{'maxDTZ':>7}{'cursedDTZ':>10}"]
    for t in tables + totals:
        for preset, layer in t.rules.items():
            lines.append(f"{t.material:<14}{preset:<13}{layer.wins:>12}{layer.cursed_wins:>10}"
                         f"{layer.draws:>12}{layer.blessed_losses:>10}{layer.losses:>12}"
                         f"{layer.max_dtz:>7}{layer.max_dtz_cursed:>10}")
    presets = list(dict.fromkeys(p for t in totals for p in t.rules))
    lines += ["", "decisive positions drawn by the move rule (cursed wins + blessed losses):",
              f"{'pieces':<8}" + "".join(f"{p:>16}" for p in presets)]
    for t in totals:
        lines.append(f"{t.pieces:<8}" + "".join(
            f"{100 * t.rules[p].saved_share:>15.4f}%" if p in t.rules else f"{'-':>16}"
            for p in presets))
    return "\n".join(lines)


def stats_json(tables: list[TableStats], totals: list[TableStats]) -> str:
    """The same figures as JSON."""
    return json.dumps({"materials": [t.as_dict() for t in tables],
                       "pieces": [dict(t.as_dict(),
                                       published=PUBLISHED_POSITIONS.get(t.pieces))
                                  for t in totals]}, indent=2)
