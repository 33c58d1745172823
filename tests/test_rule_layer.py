"""Rule layers against an independent brute-force solver over (position, counter) states.

The solver here shares nothing with :mod:`egtb.builder.solve`: it enumerates
positions itself, takes moves from the rules core's move generator (the one
:class:`egtb.rules.board.Board` uses), applies the move rule as
../shared/DESIGN.md states it (a quiet ply adds 1 to the counter, a zeroing ply
sets it to 0; no legal move loses, even at the limit; otherwise a counter at the
limit draws), and solves every state (position, counter) by backward induction
over the counter. The state graph is acyclic: a quiet ply raises the counter, and
a zeroing ply (or a plain man move, quiet or not) leaves the group of positions
with the same pieces, men and men advancement for a smaller one.

The tables must then agree at every counter ``c`` in 0..limit: the side to move
wins iff the category is WIN and ``dtz + c <= limit``, loses iff it is LOSS and
``dtz + c <= limit``, and draws otherwise.
"""

from __future__ import annotations

import itertools
import shutil
from collections import deque
from pathlib import Path

import numpy as np
import pytest

from egtb.rules.board import DRAW_RULES, Board
from egtb.rules.movegen import (M_BK, M_BM, M_CAPTURED, M_CROWNS, M_MAN, M_WK, M_WM,
                                generate_moves, new_move_buffer)
from egtb.rules.notation import parse_fen
from egtb.builder import pipeline, plan as planner
from egtb.builder import rule_layer
from egtb.formats import master
from egtb.positions.index import position_index
from egtb.positions.material import Material
from egtb.formats.values import LOSS as LOSS_CODE
from egtb.formats.values import WIN as WIN_CODE
from egtb.formats.values import DTZ_SATURATED, Category
from egtb.errors import SolverError

#: Oracle values for the side to move.
W, D, L = 1, 0, -1
PRESETS = tuple(DRAW_RULES)
#: 4-piece positions whose whole reachable state space the slow test solves (those
#: reaching few positions: men blocked or captures forced early).
SAMPLE_SEEDS = 12
SAMPLE_MAX_POSITIONS = 20_000
#: Bits of the squares a man of each colour never stands on (its crowning row).
BLACK_MEN_FORBIDDEN = 0xF0000000
WHITE_MEN_FORBIDDEN = 0x0000000F


# ------------------------------------------------------------------ the oracle

#: Each byte with its bits reversed.
_REVERSED_BYTE = [int(f"{b:08b}"[::-1], 2) for b in range(256)]


def mirror(bb: int) -> int:
    """Square s -> 33 - s: bit i -> bit 31 - i."""
    r = _REVERSED_BYTE
    return (r[bb & 255] << 24) | (r[(bb >> 8) & 255] << 16) | (r[(bb >> 16) & 255] << 8) \
        | r[bb >> 24]


class _Mirrors(dict):
    """mirror() of each bitboard asked for, computed once (the oracle's graph asks 2.5 million times
    for some thousands of bitboards)."""

    def __missing__(self, bb: int) -> int:
        self[bb] = mirrored = mirror(bb)
        return mirrored


def black_to_move(bm: int, bk: int, wm: int, wk: int, turn: int) -> tuple[int, int, int, int]:
    """The position with colours swapped and the board turned when White is to move."""
    if turn == 0:
        return bm, bk, wm, wk
    return mirror(wm), mirror(wk), mirror(bm), mirror(bk)


def group_rank(key: tuple[int, int, int, int]) -> tuple[int, int, int]:
    """(pieces, men, -advancement): every move but a king step lowers it."""
    bm, bk, wm, wk = key
    pieces = bm.bit_count() + bk.bit_count() + wm.bit_count() + wk.bit_count()
    advancement = sum(row * ((bm >> 4 * row) & 15).bit_count()
                      + (7 - row) * ((wm >> 4 * row) & 15).bit_count() for row in range(8))
    return pieces, bm.bit_count() + wm.bit_count(), -advancement


def positions_with(pieces: int):
    """Every Black-to-move placement of `pieces` pieces with both colours present."""
    for squares in itertools.combinations(range(32), pieces):
        for kinds in itertools.product(range(4), repeat=pieces):
            bb = [0, 0, 0, 0]
            for s, k in zip(squares, kinds):
                bb[k] |= 1 << s
            if not (bb[0] | bb[1]) or not (bb[2] | bb[3]):
                continue
            if bb[0] & BLACK_MEN_FORBIDDEN or bb[2] & WHITE_MEN_FORBIDDEN:
                continue
            yield tuple(bb)


def sample_positions(pieces: int, *, count: int, seed: int, min_men: int = 2) -> list[tuple]:
    """`count` random Black-to-move placements with at least `min_men` men (seeded)."""
    rng = np.random.default_rng(seed)
    found: list[tuple] = []
    while len(found) < count:
        squares = rng.choice(32, size=pieces, replace=False)
        bb = [0, 0, 0, 0]
        for s, k in zip(squares.tolist(), rng.integers(0, 4, size=pieces).tolist()):
            bb[k] |= 1 << s
        if not (bb[0] | bb[1]) or not (bb[2] | bb[3]) or (bb[0] | bb[2]).bit_count() < min_men:
            continue
        if bb[0] & BLACK_MEN_FORBIDDEN or bb[2] & WHITE_MEN_FORBIDDEN or tuple(bb) in found:
            continue
        found.append(tuple(bb))
    return found


class StateGraph:
    """Positions (Black to move, sorted by group rank) and their moves as flat arrays."""

    def __init__(self, seeds, *, max_positions: int | None = None) -> None:
        buffer = new_move_buffer()
        ids: dict[tuple, int] = {}
        keys: list[tuple] = []
        moves: list[tuple] = []  # (source key, target key or None, capture, crowning, man)
        queue = deque()
        mirrored = _Mirrors()
        for key in seeds:
            if key not in ids:
                ids[key] = len(keys)
                keys.append(key)
                queue.append(key)
        while queue:
            key = queue.popleft()
            n = generate_moves(*key, 0, buffer)
            for row in buffer[:n].tolist():
                target = (mirrored[row[M_WM]], mirrored[row[M_WK]], mirrored[row[M_BM]],
                          mirrored[row[M_BK]])  # White to move, seen as Black
                if not (target[0] | target[1]):
                    target = None  # the opponent has no pieces left: lost
                elif target not in ids:
                    if max_positions is not None and len(keys) >= max_positions:
                        raise OverflowError(f"more than {max_positions} reachable positions")
                    ids[target] = len(keys)
                    keys.append(target)
                    queue.append(target)
                moves.append((key, target, row[M_CAPTURED] != 0, row[M_CROWNS] != 0,
                              row[M_MAN] != 0))
        ranks = {key: group_rank(key) for key in keys}
        self.keys = sorted(keys, key=lambda k: (ranks[k], k))
        self.index = {key: i for i, key in enumerate(self.keys)}
        moves.sort(key=lambda m: self.index[m[0]])
        self.src = np.array([self.index[m[0]] for m in moves], dtype=np.int64)
        self.tgt = np.array([-1 if m[1] is None else self.index[m[1]] for m in moves],
                            dtype=np.int64)
        self.capture = np.array([m[2] for m in moves], dtype=bool)
        self.crowning = np.array([m[3] for m in moves], dtype=bool)
        self.man = np.array([m[4] for m in moves], dtype=bool)
        self.nmoves = np.bincount(self.src, minlength=len(self.keys))
        rank_list = [ranks[k] for k in self.keys]
        self.groups = [(a, a + len(list(g))) for a, g in _runs(rank_list)]
        king_step = ~self.capture & ~self.man
        self._check_order(rank_list, king_step)
        self._solved: dict[str, np.ndarray] = {}

    def _check_order(self, rank_list, king_step) -> None:
        """Every move but a king step goes to a smaller group rank; king steps stay."""
        group = np.zeros(len(self.keys), dtype=np.int64)  # positions sorted: group order = rank
        for g, (a, b) in enumerate(self.groups):
            group[a:b] = g
        moved = self.tgt >= 0
        src, tgt = group[self.src[moved]], group[self.tgt[moved]]
        assert (src[king_step[moved]] == tgt[king_step[moved]]).all()
        assert (src[~king_step[moved]] > tgt[~king_step[moved]]).all()

    def solve(self, preset: str) -> np.ndarray:
        """Values (W, D, L) of every state: array (positions, limit + 1) over counters."""
        if preset not in self._solved:
            self._solved[preset] = self._solve(preset)
        return self._solved[preset]

    def _solve(self, preset: str) -> np.ndarray:
        rule = DRAW_RULES[preset]
        limit = rule.limit_plies
        zeroing = self.capture | self.crowning | (self.man & rule.man_move_resets)
        values = np.zeros((len(self.keys), limit + 2), dtype=np.int8)
        starts = np.searchsorted(self.src, [a for a, _ in self.groups] + [len(self.keys)])
        for (a, b), ma, mb in zip(self.groups, starts[:-1], starts[1:]):
            src, tgt, zero = self.src[ma:mb] - a, self.tgt[ma:mb], zeroing[ma:mb]
            nmoves = self.nmoves[a:b]
            safe = np.where(tgt < 0, 0, tgt)
            values[a:b, limit] = np.where(nmoves == 0, L, D)  # the limit: draw unless no move
            for c in range(limit - 1, -1, -1):
                column = np.where(zero, 0, c + 1)
                after = np.where(tgt < 0, L, values[safe, column])
                wins = np.bincount(src, weights=after == L, minlength=b - a) > 0
                losses = np.bincount(src, weights=after == W, minlength=b - a) == nmoves
                values[a:b, c] = np.where(wins, W, np.where(losses, L, D))
        return values[:, :limit + 1]


def _runs(values):
    start = 0
    for _, group in itertools.groupby(values):
        n = len(list(group))
        yield start, range(n)
        start += n


# ------------------------------------------------------------------ the tables

def stored_layer(directory: Path, keys: list[tuple], preset: str):
    """(category, dtz, wdl code) of each position from the table files."""
    category = np.zeros(len(keys), dtype=np.int8)
    dtz = np.zeros(len(keys), dtype=np.int64)
    wdl = np.zeros(len(keys), dtype=np.int64)
    by_material: dict[Material, list[int]] = {}
    for i, (bm, bk, wm, wk) in enumerate(keys):
        m = Material(bm.bit_count(), bk.bit_count(), wm.bit_count(), wk.bit_count())
        by_material.setdefault(m, []).append(i)
    for material, rows in by_material.items():
        data = master.open_table(master.table_path(directory, material), rules=(preset,))
        layer = data.rules[preset]
        for i in rows:
            j = position_index(*keys[i])
            category[i], dtz[i], wdl[i] = layer.category[j], layer.dtz[j], data.wdl[j]
    return category, dtz, wdl


def values_by_rule(category: np.ndarray, dtz: np.ndarray, limit: int) -> np.ndarray:
    """What the exactness rule makes of stored (category, dtz) at each counter 0..limit."""
    counters = np.arange(limit + 1)
    fits = dtz[:, None] + counters[None, :] <= limit
    win = (category == Category.WIN)[:, None] & fits
    loss = (category == Category.LOSS)[:, None] & fits
    return np.where(win, W, np.where(loss, L, D)).astype(np.int8)


def assert_agree(directory: Path, graph: StateGraph, preset: str) -> None:
    limit = DRAW_RULES[preset].limit_plies
    oracle = graph.solve(preset)
    category, dtz, wdl = stored_layer(directory, graph.keys, preset)
    expected = values_by_rule(category, dtz, limit)
    bad = np.flatnonzero((oracle != expected).any(axis=1))
    assert not len(bad), [(pipeline.fen_of(Material(*(b.bit_count() for b in graph.keys[i])),
                                          position_index(*graph.keys[i])),
                           int(category[i]), int(dtz[i])) for i in bad[:5]]
    # the sign of the category is the rule-free value; cursed and blessed exceed the limit
    assert np.array_equal(category > 0, wdl == WIN_CODE)
    assert np.array_equal(category < 0, wdl == LOSS_CODE)
    cursed = (category == Category.CURSED_WIN) | (category == Category.BLESSED_LOSS)
    assert (dtz[cursed] > limit).all()
    assert (dtz[category == Category.DRAW] == 0).all()


@pytest.fixture(scope="module")
def tables3(built_tables) -> Path:
    """Every table up to 3 pieces with all rule layers (shared: read only)."""
    return built_tables(3)


@pytest.fixture(scope="module")
def graph3() -> StateGraph:
    """Every position with 2 or 3 pieces."""
    return StateGraph(itertools.chain(positions_with(2), positions_with(3)))


@pytest.fixture(scope="module")
def tables_cursed(tables3, tmp_path_factory) -> Path:
    """Up to 3 pieces, plus the 4-piece pairs 2k-2k, 1m1k-2k and 2k-2m (cursed wins exist)."""
    directory = tmp_path_factory.mktemp("cursed")
    shutil.copytree(tables3, directory, dirs_exist_ok=True)
    for name in ("2k-2k", "1m1k-2k", "2k-2m"):
        pair = next(p for p in planner.plan_pairs(4, min_pieces=4)
                    if p.key == planner.pair_of(Material.parse(name))[0].name)
        pipeline.build_pair(directory, pair, planner.dependency_materials(pair))
    return directory


def test_graph_covers_every_position(graph3):
    assert len(graph3.keys) == 3488 + 196032  # published counts (DESIGN.md)


# forty-plies differs from crowning by its limit alone: a slow check
@pytest.mark.parametrize("preset", [pytest.param(p, marks=pytest.mark.slow) if p == "forty-plies" else p for p in PRESETS])
def test_every_state_up_to_3_pieces(tables3, graph3, preset):
    assert_agree(tables3, graph3, preset)


@pytest.mark.slow
@pytest.mark.parametrize("preset", PRESETS)
def test_sampled_4_piece_states(built_tables, preset):
    directory = built_tables(4)  # the session's shared set: read only
    graph = small_sampled_graph(4, seeds=SAMPLE_SEEDS, max_positions=SAMPLE_MAX_POSITIONS)
    assert sum(k == 4 for k in map(lambda key: sum(b.bit_count() for b in key),
                                   graph.keys)) >= SAMPLE_SEEDS
    assert_agree(directory, graph, preset)


def small_sampled_graph(pieces: int, *, seeds: int, max_positions: int) -> StateGraph:
    """The state graph of the first `seeds` random positions (seeded) whose reachable
    positions number at most `max_positions` each (their whole state space)."""
    kept = []
    for candidate in sample_positions(pieces, count=50 * seeds, seed=9):
        try:
            StateGraph([candidate], max_positions=max_positions)
        except OverflowError:
            continue
        kept.append(candidate)
        if len(kept) == seeds:
            return StateGraph(kept)
    raise AssertionError(f"fewer than {seeds} sampled positions reach at most {max_positions}")


# ------------------------------------------------------------------ positions by hand

def layer_of(directory: Path, fen: str, preset: str) -> tuple[Category, int, int]:
    """(category, dtz, dtw) of a FEN under a preset."""
    p = parse_fen(fen)
    key = black_to_move(p.black_men, p.black_kings, p.white_men, p.white_kings, p.turn)
    category, dtz, _ = stored_layer(directory, [key], preset)
    material = Material(*(b.bit_count() for b in key))
    data = master.open_table(master.table_path(directory, material), rules=False)
    return Category(int(category[0])), int(dtz[0]), int(data.dtw[position_index(*key)])


def oracle_at(graph: StateGraph, fen: str, preset: str, counter: int) -> int:
    p = parse_fen(fen)
    key = black_to_move(p.black_men, p.black_kings, p.white_men, p.white_kings, p.turn)
    return int(graph.solve(preset)[graph.index[key], counter])


def test_kings_only_win_longer_than_the_counter_left_is_a_draw(tables3, graph3):
    fen = "B:WK14:BK1,K2"  # two kings against one: 33 plies to the capture
    category, dtz, dtw = layer_of(tables3, fen, "wcdf")
    assert (category, dtz, dtw) == (Category.WIN, 33, 33)
    assert oracle_at(graph3, fen, "wcdf", 80 - 33) == W
    assert oracle_at(graph3, fen, "wcdf", 80 - 33 + 1) == D  # DTW exceeds the plies left
    assert oracle_at(graph3, fen, "forty-plies", 7) == W
    assert oracle_at(graph3, fen, "forty-plies", 8) == D


def test_a_man_move_resets_the_counter_in_time_only_under_wcdf(tables3, graph3):
    # Black wins with man and king against a king by pushing the man; under wcdf
    # each push zeroes the counter, under crowning/forty-plies only the crowning does
    fen = "B:WK32:B5,K22"
    wcdf, crowning = layer_of(tables3, fen, "wcdf"), layer_of(tables3, fen, "crowning")
    assert wcdf[0] == crowning[0] == Category.WIN
    assert wcdf[1] < crowning[1]
    counter = 80 - crowning[1] + 1
    assert oracle_at(graph3, fen, "wcdf", counter) == W
    assert oracle_at(graph3, fen, "crowning", counter) == D
    assert oracle_at(graph3, fen, "forty-plies", 40 - crowning[1] + 1) == D


def test_no_move_at_the_limit_is_a_loss(tables3, graph3):
    fen = "B:WK8,K11:B4"  # the man on 4 is blocked and cannot jump
    board = Board(fen, quiet_plies=80)
    assert board.outcome().winner == 1  # White: the rules core agrees
    for preset in PRESETS:
        assert layer_of(tables3, fen, preset)[:2] == (Category.LOSS, 0)
        assert oracle_at(graph3, fen, preset, DRAW_RULES[preset].limit_plies) == L


def test_a_move_at_the_limit_is_a_draw_even_when_it_wins(tables3, graph3):
    fen = "B:WK14:BK10,K15"  # Black captures at once
    assert layer_of(tables3, fen, "wcdf")[:2] == (Category.WIN, 1)
    assert oracle_at(graph3, fen, "wcdf", 79) == W
    assert oracle_at(graph3, fen, "wcdf", 80) == D


def test_blessed_loss_and_cursed_win(tables_cursed):
    blessed = "B:WK30,K31:B12,28"  # lost without the rule, saved by forty plies
    assert layer_of(tables_cursed, blessed, "wcdf")[0] == Category.LOSS
    category, dtz, dtw = layer_of(tables_cursed, blessed, "forty-plies")
    assert category == Category.BLESSED_LOSS and dtz > 40 and dtw > 40
    cursed = "B:W5,21:BK15,K19"  # won without the rule, drawn under forty plies
    assert layer_of(tables_cursed, cursed, "wcdf")[0] == Category.WIN
    assert layer_of(tables_cursed, cursed, "crowning")[0] == Category.WIN
    category, dtz, _ = layer_of(tables_cursed, cursed, "forty-plies")
    assert category == Category.CURSED_WIN and dtz > 40


@pytest.mark.slow
def test_blessed_and_cursed_against_the_oracle(tables_cursed):
    for fen, preset, expected in (("B:WK30,K31:B12,28", "forty-plies", Category.BLESSED_LOSS),
                                  ("B:W5,21:BK15,K19", "forty-plies", Category.CURSED_WIN)):
        p = parse_fen(fen)
        key = black_to_move(p.black_men, p.black_kings, p.white_men, p.white_kings, p.turn)
        graph = StateGraph([key])
        assert (graph.solve(preset)[graph.index[key]] == D).all()  # drawn at every counter
        assert_agree(tables_cursed, graph, preset)
        assert layer_of(tables_cursed, fen, preset)[0] == expected


def test_layer_arrays_survive_a_round_trip(tmp_path):
    material = Material.parse("1k-1k")
    wdl = np.array([1, 2, 3, 2], dtype=np.uint8)
    dtw = np.array([0, 5, 4, 300], dtype=np.uint16)
    preset = rule_layer.PRESETS["forty-plies"]
    dtz = np.array([0, 5, 4, 300], dtype=np.uint16)
    layer = rule_layer.make_layer(preset, rule_layer.categories(wdl, dtz, preset.limit_plies), dtz)
    path = master.write_table(tmp_path / "x.h5", material, wdl, dtw, rules={preset.name: layer})
    data = master.open_table(path)
    assert data.rules["forty-plies"].category.tolist() == [0, 2, -2, 1]
    assert data.rules["forty-plies"].dtz.tolist() == [0, 5, 4, 300]
    assert data.rules["forty-plies"].attrs["cursed_wins"] == 1
    assert master.open_table(path, rules=False).rules == {}
    with pytest.raises(master.TableError, match="no rule layer 'wcdf'"):
        master.open_table(path, rules=("wcdf",))


def test_verify_finds_a_wrong_rule_layer(tables3, tmp_path):
    import shutil
    from egtb.builder.verify import verify_directory
    for path in tables3.glob("*.h5"):
        if Material.parse(path.stem).pieces <= 3:
            shutil.copy(path, tmp_path / path.name)
    material = Material.parse("2k-1k")
    path = master.table_path(tmp_path, material)
    assert verify_directory(tmp_path, materials=[material]).ok
    data = master.open_table(path)
    layers = dict(data.rules)
    forty = layers["forty-plies"]
    dtz = forty.dtz.copy()
    i = int(np.flatnonzero(forty.category == Category.WIN)[0])
    dtz[i] += 2  # still a win within the limit, but not the fastest
    layers["forty-plies"] = master.RuleLayer(forty.category, dtz, forty.attrs)
    attrs = {k: v for k, v in data.attrs.items() if k != "checksum_crc32"}
    master.write_table(path, material, data.wdl, data.dtw, attrs=attrs, rules=layers)
    report = verify_directory(tmp_path, materials=[material])
    assert report.errors >= 1
    assert any("forty-plies" in m and "rule layer: DTZ" in m for m in report.messages)


def test_layers_match_the_reference_figures(tables3):
    import dataclasses
    from egtb.builder.reference import compare_with_reference, load_rule_reference
    from egtb.formats.master import stored_materials
    reference = load_rule_reference()
    materials = [m for m in stored_materials(tables3) if m.pieces <= 3]
    assert all((m.name, p) in reference for m in materials for p in PRESETS)
    assert compare_with_reference(tables3, materials, rule_reference=reference) == []
    entry = reference["2k-1k", "forty-plies"]
    reference["2k-1k", "forty-plies"] = dataclasses.replace(entry, max_dtz=entry.max_dtz + 1)
    problems = compare_with_reference(tables3, materials, rule_reference=reference)
    assert len(problems) == 1 and "2k-1k.h5: rule layer forty-plies" in problems[0]


def test_rule_reference_covers_six_pieces_in_every_preset_and_seven_in_wcdf():
    from egtb.builder.reference import load_reference, load_rule_reference
    from egtb.builder.stats import PUBLISHED_POSITIONS
    tables, layers = load_reference(), load_rule_reference()
    up_to_seven = [key for key in layers if Material.parse(key[0]).pieces <= 7]  # 8: the tables verified so far
    assert len(up_to_seven) == 155 * len(PRESETS) + 104  # 7 pieces: the wcdf layer only
    for pieces in range(2, 8):
        names = [n for n in tables if Material.parse(n).pieces == pieces]
        for preset in PRESETS if pieces < 7 else ("wcdf",):
            total = sum(sum(getattr(layers[n, preset], f) for f in (
                "wins", "cursed_wins", "draws", "blessed_losses", "losses")) for n in names)
            assert total == PUBLISHED_POSITIONS.get(pieces, sum(tables[n].positions for n in names))
            # the sign of each category is the rule-free value
            assert sum(layers[n, preset].wins + layers[n, preset].cursed_wins
                       for n in names) == sum(tables[n].wins for n in names)
            assert sum(layers[n, preset].losses + layers[n, preset].blessed_losses
                       for n in names) == sum(tables[n].losses for n in names)


def test_a_saturated_one_byte_dtz_is_refused_not_written():
    # a one-byte DTZ array (wcdf alone) saturates at DTZ_SATURATED: a table holding it must fail
    # rather than store a wrong distance; one ply less is a DTZ like any other
    category = np.array([2, -1], dtype=np.int8)
    assert rule_layer.layer_attrs(rule_layer.PRESETS["wcdf"], category, np.array([254, 200], dtype=np.uint8))["max_dtz"] == 254
    with pytest.raises(SolverError, match="DTZ of 255"):
        rule_layer.layer_attrs(rule_layer.PRESETS["wcdf"], category, np.array([7, DTZ_SATURATED], dtype=np.uint8))
    wide = rule_layer.layer_attrs(rule_layer.PRESETS["wcdf"], category, np.array([7, 300], dtype=np.uint16))
    assert wide["max_dtz_cursed"] == 300
