"""A plug-in engine that plays the first legal move and reports the move rule and counter it was given.

Served by ``tournament hub-engine state_echo:StateEcho`` (with this folder as the working
directory): its ``info source=`` says what reached the engine through Hub's ``pos``.
"""

from tournament.engines.base import Engine, GameState, Limit, PlayResult


class StateEcho(Engine):
    name = "state-echo"

    def play(self, state: GameState, limit: Limit) -> PlayResult:
        board = state.board()
        seen = f"{state.rule}:{state.start_quiet_plies}:{state.quiet_plies}:{len(state.moves)}"
        return PlayResult(board.legal_moves()[0], info={"source": seen})
