"""Tests for egtb.rules.board: one hand-made case per rule, draw rules, repetition, push/pop."""

from __future__ import annotations

import random

import pytest

from egtb.rules.board import BLACK, DRAW_RULES, WHITE, Board, Move, Outcome, Termination


def moves_of(board: Board) -> set[str]:
    return {str(move) for move in board.legal_moves()}


# --- capture rules ----------------------------------------------------------


def test_start_position_has_seven_moves():
    assert moves_of(Board()) == {"9-13", "9-14", "10-14", "10-15", "11-15", "11-16", "12-16"}


def test_capture_is_compulsory():
    board = Board("B:W14:B9,12")
    assert moves_of(board) == {"9x18"}
    with pytest.raises(ValueError, match="not legal"):
        Move.from_pdn("12-16", board)


def test_white_capture_is_compulsory_too():
    assert moves_of(Board("W:W18,30:B14,5")) == {"18x9"}


def test_multi_jump_continues_to_the_end():
    board = Board("B:W14,23:B9")
    (move,) = board.legal_moves()
    assert str(move) == "9x18x27" and move.captured == {14, 23}


def test_crowning_ends_the_move_mid_jump():
    # the man lands on 31 and is crowned; as a king it could jump 27 to 24, but stops
    board = Board("B:W26,27:B22")
    (move,) = board.legal_moves()
    assert str(move) == "22x31" and move.captured == {26}
    board.push(move)
    assert board.fen() == "W:W27:BK31"


def test_white_man_crowns_and_stops():
    board = Board("W:W11:B7,6")  # 11x2 crowns; as a king 2x9 over 6 would follow
    assert moves_of(board) == {"11x2"}
    board.push_pdn("11x2")
    assert board.piece_at(2) == "W" and board.piece_at(6) == "b"


def test_king_does_not_stop_on_the_crowning_row():
    board = Board("B:W26,27:BK22")
    assert moves_of(board) == {"22x31x24"}


def test_free_choice_among_capture_sequences():
    # 10x17x26 takes two pieces, 10x19 one: both are legal (no majority rule)
    board = Board("B:W14,15,22:B10")
    assert moves_of(board) == {"10x17x26", "10x19"}


def test_duplicate_capture_paths_are_one_move():
    # the king can go round the four pieces either way: same start, end, captures
    board = Board("B:W14,15,22,23:BK10")
    (move,) = board.legal_moves()
    assert move.start == move.end == 10 and move.captured == {14, 15, 22, 23}
    assert Move((10, 17, 26, 19, 10), frozenset({14, 15, 22, 23})) == move
    board.push(move)
    assert board.fen() == "W:W:BK10"


def test_same_ends_with_different_captures_are_two_moves():
    board = Board("B:W14,15,22,23:B10")
    assert moves_of(board) == {"10x17x26", "10x19x26"}


# --- game end ---------------------------------------------------------------


def test_no_pieces_loses():
    board = Board("B:W14:B9")
    board.push_pdn("9x18")
    assert board.outcome() == Outcome(Termination.NO_PIECES, BLACK)
    assert board.outcome().result() == "1-0"
    assert Board("B:W10:B").outcome() == Outcome(Termination.NO_PIECES, WHITE)


def test_no_move_loses():
    board = Board("B:W5,6,10:B1")
    assert board.legal_moves() == []
    assert board.outcome() == Outcome(Termination.NO_MOVES, WHITE)
    assert board.outcome().result() == "0-1"


def test_no_move_on_the_last_quiet_ply_is_a_loss_not_a_draw():
    board = Board("W:W5,6,K14:B1", quiet_plies=79)
    assert board.outcome() is None
    board.push_pdn("14-10")  # the 80th quiet ply leaves Black without a move
    assert board.quiet_plies == 80
    assert board.outcome() == Outcome(Termination.NO_MOVES, WHITE)


def test_move_rule_when_a_move_remains_on_the_last_quiet_ply():
    board = Board("W:W5,6,K14:B1,K32", quiet_plies=79)
    board.push_pdn("14-10")
    assert board.outcome() == Outcome(Termination.MOVE_RULE, None)
    assert board.outcome().result() == "1/2-1/2"


# --- draw by the move rule: each preset at exactly its ply -----------------

KINGS_ONLY = "B:WK29,K31:BK2,K4"
WITH_MEN = "B:WK29,K31,24:BK2,K4,9"


def is_man_move(board: Board, move: Move) -> bool:
    return board.piece_at(move.start) in ("b", "w")


def crowns(board: Board, move: Move) -> bool:
    piece = board.piece_at(move.start)
    return (piece == "b" and move.end >= 29) or (piece == "w" and move.end <= 4)


def walk_quiet(board: Board, plies: int, *, seed: int = 0, men: bool = False) -> int:
    """Push `plies` non-capturing moves that reach only new positions (no repetition).

    King moves only, or also man moves that do not crown when men is true (man
    moves tried first). Searches depth first, fails if no such walk exists, and
    returns how many man moves the walk made.
    """
    rng = random.Random(seed)

    def allowed(move: Move) -> bool:
        if move.is_capture or crowns(board, move) or (is_man_move(board, move) and not men):
            return False
        board.push(move)
        fresh = board.repetition_count() == 1 and not any(m.is_capture for m in board.legal_moves())
        board.pop()
        return fresh

    def extend(remaining: int) -> bool:
        if remaining == 0:
            return True
        candidates = [move for move in board.legal_moves() if allowed(move)]
        rng.shuffle(candidates)
        candidates.sort(key=lambda move: not is_man_move(board, move))
        for move in candidates:
            board.push(move)
            if extend(remaining - 1):
                return True
            board.pop()
        return False

    replay, start = board.copy(), len(board.move_stack)
    assert extend(plies), f"no quiet walk of {plies} plies from {board.fen()}"
    man_moves = 0
    for move in board.move_stack[start:]:
        man_moves += is_man_move(replay, move)
        replay.push(move)
    return man_moves


@pytest.mark.parametrize("rule", list(DRAW_RULES))
def test_move_rule_fires_at_exactly_its_ply(rule):
    limit = DRAW_RULES[rule].limit_plies
    board = Board(KINGS_ONLY, rule=rule)
    walk_quiet(board, limit - 1)
    assert board.quiet_plies == limit - 1
    assert board.outcome() is None
    walk_quiet(board, 1, seed=1)
    assert board.quiet_plies == limit
    assert board.outcome() == Outcome(Termination.MOVE_RULE, None)


def test_wcdf_man_move_resets_the_count():
    board = Board(WITH_MEN, rule="wcdf")
    walk_quiet(board, 50)
    board.push_pdn("9-13")  # a man move
    assert board.quiet_plies == 0
    walk_quiet(board, 79, seed=2)
    assert board.outcome() is None
    walk_quiet(board, 1, seed=3)
    assert board.outcome() == Outcome(Termination.MOVE_RULE, None)


@pytest.mark.parametrize("rule", ["crowning", "forty-plies"])
def test_plain_man_moves_do_not_reset_crowning_presets(rule):
    limit = DRAW_RULES[rule].limit_plies
    board = Board(WITH_MEN, rule=rule)
    assert walk_quiet(board, limit - 1, men=True) >= 2
    assert board.quiet_plies == limit - 1 and board.outcome() is None
    walk_quiet(board, 1, seed=4)
    assert board.outcome() == Outcome(Termination.MOVE_RULE, None)


@pytest.mark.parametrize("rule", list(DRAW_RULES))
@pytest.mark.parametrize("fen, move", [
    ("B:WK32:B26", "26-30"),  # a crowning
    ("B:WK14,K32:BK9,K1", "9x18"),  # a capture
])
def test_crowning_and_capture_reset_the_count(rule, fen, move):
    limit = DRAW_RULES[rule].limit_plies
    board = Board(fen, rule=rule, quiet_plies=limit - 1)
    board.push_pdn(move)
    assert board.quiet_plies == 0 and board.outcome() is None


def test_quiet_king_move_counts_in_every_preset():
    for rule in DRAW_RULES:
        board = Board(KINGS_ONLY, rule=rule, quiet_plies=5)
        board.push_pdn("2-6")
        assert board.quiet_plies == 6


def test_unknown_draw_rule():
    with pytest.raises(ValueError, match="unknown draw rule"):
        Board(rule="fifty")


# --- repetition -------------------------------------------------------------


def test_threefold_repetition_at_the_third_occurrence():
    board = Board("B:WK32:BK1")
    shuffle = ["1-5", "32-28", "5-1", "28-32"]
    for text in shuffle:
        board.push_pdn(text)
    assert board.repetition_count() == 2
    assert board.outcome() is None
    for text in shuffle[:-1]:
        board.push_pdn(text)
        assert board.outcome() is None
    board.push_pdn(shuffle[-1])
    assert board.repetition_count() == 3
    assert board.outcome() == Outcome(Termination.REPETITION, None)


def test_pop_takes_back_a_repetition():
    board = Board("B:WK32:BK1")
    for text in ["1-5", "32-28", "5-1", "28-32"] * 2:
        board.push_pdn(text)
    assert board.outcome() == Outcome(Termination.REPETITION, None)
    board.pop()
    assert board.repetition_count() == 2 and board.outcome() is None


# --- push / pop / copy ------------------------------------------------------


def snapshot(board: Board) -> tuple:
    return (board.fen(), board.turn, board.quiet_plies, board.repetition_count(), list(board.move_stack),
            sorted(map(str, board.legal_moves())), board.outcome(), dict(board._seen))


def test_push_pop_restore_everything():
    rng = random.Random(11)
    for _ in range(5):
        board = Board(rule=rng.choice(list(DRAW_RULES)))
        history = []
        while not board.is_game_over() and len(board.move_stack) < 150:
            history.append(snapshot(board))
            board.push(rng.choice(board.legal_moves()))
        while history:
            board.pop()
            assert snapshot(board) == history.pop()


def test_copy_is_independent():
    board = Board()
    board.push_pdn("11-15")
    other = board.copy()
    other.push_pdn("23-19")
    assert len(board.move_stack) == 1 and board.turn == WHITE
    assert board.fen() != other.fen()
    assert other.pop() == Move.from_pdn("23-19", board)


def test_push_illegal_move_raises():
    board = Board()
    with pytest.raises(ValueError, match="illegal move"):
        board.push(Move((12, 17)))


# --- Move.from_pdn ----------------------------------------------------------


def test_from_pdn_full_path():
    move = Move.from_pdn("9x18x27", Board("B:W14,23:B9"))
    assert move.path == (9, 18, 27) and move.captured == {14, 23}


def test_from_pdn_short_capture_form():
    move = Move.from_pdn("9x27", Board("B:W14,23:B9"))
    assert str(move) == "9x18x27"


def test_from_pdn_ambiguous_short_form():
    board = Board("B:W14,15,22,23:B10")
    with pytest.raises(ValueError, match="ambiguous"):
        Move.from_pdn("10x26", board)
    assert Move.from_pdn("10x19x26", board).captured == {15, 23}


@pytest.mark.parametrize("text", ["11-16x", "12-17", "9x18", "11x15", "33-29", "abc", "11-15-19"])
def test_from_pdn_rejects_illegal_or_malformed(text):
    with pytest.raises(ValueError):
        Move.from_pdn(text, Board())


def test_from_pdn_wrong_jump_shape():
    with pytest.raises(ValueError, match="not a jump"):
        Move.from_pdn("9x14x27", Board("B:W14,23:B9"))


def test_move_equality_ignores_the_path():
    a = Move((10, 19, 26, 17, 10), frozenset({14, 15, 22, 23}))
    b = Move((10, 17, 26, 19, 10), frozenset({14, 15, 22, 23}))
    assert a == b and hash(a) == hash(b) and str(a) != str(b)
