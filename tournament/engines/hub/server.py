"""The Hub server: any of our engines answering Hub commands on standard input and output.

``tournament hub-engine SPEC`` (or ``python -m tournament.cli hub-engine SPEC``)
runs :func:`serve`; a CheckerBoard library is served so (``cblib:PATH``), in a
process of its own.

>>> import io
>>> from tournament.engines.random import RandomEngine
>>> out = io.StringIO()
>>> serve(RandomEngine(seed=1), io.StringIO("hub\\ninit\\npos pos=B:W18:B14\\ngo think\\nquit\\n"), out)
>>> out.getvalue().splitlines()[-3:]
['wait', 'ready', 'done move=14x23x18']
"""

from __future__ import annotations

import contextlib
import sys
from typing import IO, TYPE_CHECKING

from egtb.rules.draw_rules import DEFAULT_RULE
from tournament.engines.base import Engine, GameState, Limit, PlayResult
from tournament.engines.hub.protocol import (
    MOVE_RULE_PARAM, format_info, hub_move, limit_from_level, move_rule_param, parse_fields, parse_hub_move,
    parse_hub_position, parse_rule_fields,
)

if TYPE_CHECKING:  # the board loads the move generator's numba kernels: ``init`` loads them, not ``hub``
    from egtb.rules.board import Board, Move

__all__ = ["HubServer", "serve"]


class HubServer:
    """State of one Hub session: the engine, the position, the level, the move rule."""

    def __init__(self, engine: Engine, out: IO[str]) -> None:
        self.engine = engine
        self.out = out
        self._board: Board | None = None
        self.limit = Limit()
        self.rule = DEFAULT_RULE
        """The move-rule preset of a ``pos`` without ``rule=`` (``set-param name=move-rule``)."""

    @property
    def board(self) -> Board:
        """The position of the last ``pos`` (the start before any): made on first use, so that a
        session that only asks who the engine is (``hub``) loads no numba kernel."""
        if self._board is None:
            from egtb.rules.board import Board
            self._board = Board()
        return self._board

    @board.setter
    def board(self, board: Board) -> None:
        self._board = board

    def say(self, line: str) -> None:
        """Write one line to the GUI at once."""
        self.out.write(line + "\n")
        self.out.flush()

    def handle(self, line: str) -> bool:
        """Answer one command; False after ``quit``."""
        command, _, rest = line.strip().partition(" ")
        fields = parse_fields(rest)
        if command == "quit":
            return False
        handler = self._HANDLERS.get(command)
        if handler is None:
            self.say(f'error message="unknown command {command}"')
        else:
            handler(self, fields)
        return True

    def hello(self, fields: dict[str, str]) -> None:
        """``hub``: who we are, the variant, that ``pos`` may carry the move rule, then ``wait``."""
        # pydraughts splits each field at "=", so a name must not contain one
        name = str(getattr(self.engine, "name", type(self.engine).__name__)).replace("=", ":").replace('"', "'")
        self.say(f'id name="{name}" version=0.1 author="draughts-egtb"')
        self.say('param name=variant value=english type=enum values="english"')
        self.say(move_rule_param(self.rule))
        self.say("wait")

    def init(self, fields: dict[str, str]) -> None:
        """``init``: load the compiled move generator now, not on the clock of the first move."""
        from egtb.rules.board import Board
        Board().legal_moves()
        self.say("ready")

    def set_param(self, fields: dict[str, str]) -> None:
        """``set-param``: the move rule is ours; others go to the engine's ``set_option``, and a refusal is
        told to the GUI as an ``error`` line."""
        if fields.get("name") == MOVE_RULE_PARAM:
            self.rule, _ = parse_rule_fields({"rule": fields.get("value", "")}, default_rule=self.rule)
            return
        setter = getattr(self.engine, "set_option", None)
        if setter is None or "name" not in fields:
            return
        if setter(fields["name"], fields.get("value", "")) is False:
            refused = f"the engine refused the option {fields['name']}={fields.get('value', '')}"
            self.say(f'error message="{refused}"')

    def set_position(self, fields: dict[str, str]) -> None:
        """``pos``: the position (with the move rule and its counter there, when given), then the moves
        played from it."""
        rule, counter = parse_rule_fields(fields, default_rule=self.rule)
        board = parse_hub_position(fields.get("pos", ""), rule=rule, quiet_plies=counter)
        for text in fields.get("moves", "").split():
            board.push(parse_hub_move(text, board))
        self.board = board

    def set_level(self, fields: dict[str, str]) -> None:
        """``level``: the limit of the following searches."""
        self.limit = limit_from_level(fields)

    def go(self, fields: dict[str, str]) -> None:
        """``go``: search, then what the search found (``info``: score, depth, principal variation, where
        the move came from) and the move (``done``)."""
        result = PlayResult.of(self.engine.play(GameState.from_board(self.board), self.limit))
        info = result.info
        line = format_info(result.score, int(info.get("depth", 0) or 0), nodes=int(info.get("nodes", 0) or 0),
                           source=str(info.get("source", "") or ""), pv=self.hub_line(info.get("pv") or ()))
        if line:
            self.say(line)
        self.say(f"done move={self.answer_text(result.move)}")

    def hub_line(self, line) -> list[str]:
        """An engine's principal variation (PDN moves from the position searched) in hub notation, as far
        as its moves are legal."""
        from egtb.rules.board import Move
        replay = self.board.copy()
        moves: list[str] = []
        for text in line:
            try:
                move = Move.from_pdn(str(text), replay)
                replay.push(move)
            except ValueError:
                break
            moves.append(hub_move(move))
        return moves

    def new_game(self, fields: dict[str, str]) -> None:
        """``new-game``: the engine forgets the last game."""
        self.engine.new_game()

    def pong(self, fields: dict[str, str]) -> None:
        """``ping``: ``pong``."""
        self.say("pong")

    def ignore(self, fields: dict[str, str]) -> None:
        """``stop``, ``ponder-hit``: the search is synchronous, so they have nothing to do."""

    _HANDLERS = {"hub": hello, "init": init, "ping": pong, "new-game": new_game, "pos": set_position,
                 "level": set_level, "go": go, "set-param": set_param, "stop": ignore, "ponder-hit": ignore,
                 "": ignore}

    def answer_text(self, answer: Move | str) -> str:
        """The engine's move in hub notation; text that names no legal move is passed on for the client to judge."""
        from egtb.rules.board import Move
        if isinstance(answer, Move):
            return hub_move(answer)
        try:
            return hub_move(Move.from_pdn(answer, self.board))
        except ValueError:
            return str(answer).strip().replace(" ", "") or "none"


def serve(engine: Engine, stdin: IO[str] | None = None, stdout: IO[str] | None = None) -> None:
    """Answer Hub commands from ``stdin`` on ``stdout`` with ``engine`` until ``quit`` or end of input.

    A command that fails (a bad position, an engine that raises) is answered with an ``error`` line,
    and the session goes on. Serving the process's own standard output, anything else printed
    goes to standard error, so that it cannot garble the protocol.

    >>> import io
    >>> from tournament.engines.random import RandomEngine
    >>> out = io.StringIO()
    >>> serve(RandomEngine(seed=1), io.StringIO("hub\\ninit\\nquit\\n"), out)
    >>> out.getvalue().splitlines()[-2:]
    ['wait', 'ready']
    """
    stdin = stdin if stdin is not None else sys.stdin
    server = HubServer(engine, stdout if stdout is not None else sys.stdout)
    with contextlib.redirect_stdout(sys.stderr) if stdout is None else contextlib.nullcontext():
        _answer(server, stdin)


def _answer(server: HubServer, stdin: IO[str]) -> None:
    """The session's loop: one command a line; a failure is an ``error`` line, not the end."""
    for line in stdin:
        try:
            if not server.handle(line):
                break
        except ValueError as error:  # a bad position or move: tell the GUI, keep going
            server.say(f'error message="{_message_text(str(error))}"')
        except Exception as error:  # noqa: BLE001 - the engine failed: the GUI hears it, the session lives on
            server.say(f'error message="{_message_text(f"{type(error).__name__}: {error}")}"')


def _message_text(text: str) -> str:
    """Text for an ``error message="..."`` field: no quotes, one line."""
    return text.replace('"', "'").replace("\n", " ")
