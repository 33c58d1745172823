"""The Hub protocol (Scan's, as pydraughts adapts it to English draughts).

Both sides are here: :class:`HubEngine` runs an external program and is an
:class:`~tournament.engines.base.Engine` to the runner; :func:`serve` makes any of
our engines answer Hub commands on standard input and output
(``tournament hub-engine SPEC`` or ``python -m tournament.cli hub-engine SPEC``).
docs/hub-protocol.md lists the messages.

Positions travel in pydraughts' English encoding: the side to move, then one
letter per square, the board seen from White's side with the colours named as
in international draughts (where White moves first). Moves are in PDN
numbering: ``from-to``, or ``fromxto`` followed by ``x`` and every captured
square.

>>> from egtb import Board
>>> hub_position(Board("B:W18,24,K27:B12,16,K22"))
'WeeeeeBeebeWeeebeweeeweeeeeeeeeee'
>>> parse_hub_position('WeeeeeBeebeWeeebeweeeweeeeeeeeeee').fen()
'B:W18,24,K27:B12,16,K22'
>>> board = Board("B:W18,24,K27:B12,16,K22")
>>> hub_move(board.legal_moves()[0])
'22x15x18'
>>> parse_hub_move("22x15x18", board)
Move.from_pdn('22x15')
"""

from __future__ import annotations

import logging
import os
import queue
import re
import shlex
import subprocess
import sys
import threading
import time
from collections import deque
from pathlib import Path
from typing import IO, Sequence

from egtb.rules.board import BLACK, Board, Move
from egtb.rules.notation import is_move_text
from tournament.engines.base import Engine, EngineError, EngineTimeoutError, GameState, IllegalMoveError, Limit

__all__ = [
    "EngineTimeoutError", "HubEngine", "hub_move", "hub_position", "parse_hub_move",
    "parse_hub_position", "serve",
]

logger = logging.getLogger(__name__)

#: Seconds allowed for the "hub" ... "wait" and "init" ... "ready" handshakes: generous, as a
#: program may load an opening book or tables first, and a busy machine starts processes slowly.
HANDSHAKE_TIMEOUT = 30.0
#: Seconds an engine may exceed its move time before it is declared lost on time.
TIME_MARGIN = 1.0
#: Seconds "quit" gets before the process is killed.
QUIT_GRACE = 1.0
_TOKEN = re.compile(r'(\S+?)=("[^"]*"|\S*)|(\S+)')


# --- encodings ----------------------------------------------------------------

_HUB_PIECE = {"b": "w", "B": "W", "w": "b", "W": "B"}  # our piece -> pydraughts' hub letter


def hub_position(board: Board) -> str:
    """A position in pydraughts' English hub encoding (33 letters).

    Letter 0: "W" when Black (who starts) is to move, "B" for White. Letter i
    (1-32): the piece on square 33 - i, with "w"/"W" for a black man/king,
    "b"/"B" for a white man/king, "e" for an empty square.

    >>> hub_position(Board())[:5], hub_position(Board())[-4:]
    ('Wbbbb', 'wwww')
    """
    letters = ["W" if board.turn == BLACK else "B"]
    for i in range(1, 33):
        piece = board.piece_at(33 - i)
        letters.append("e" if piece is None else _HUB_PIECE[piece])
    return "".join(letters)


def parse_hub_position(text: str, *, rule: str = "wcdf") -> Board:
    """A Board from a hub position (see :func:`hub_position`) or a PDN FEN (contains ':').

    >>> parse_hub_position("B:W18:B14").fen()
    'B:W18:B14'
    """
    text = text.strip().strip('"')
    if ":" in text:
        return Board(text, rule=rule)
    if len(text) != 33 or text[0] not in "WB" or any(c not in "wbWBe" for c in text[1:]):
        raise ValueError(f"bad hub position {text!r}: want W or B then 32 letters from w, b, W, B, e")
    squares: dict[str, list[str]] = {"B": [], "W": []}
    for i, letter in enumerate(text[1:], start=1):
        if letter == "e":
            continue
        ours = _HUB_PIECE[letter]  # the mapping is its own inverse
        colour = "B" if ours.lower() == "b" else "W"
        squares[colour].append(("K" if ours.isupper() else "") + str(33 - i))
    turn = "B" if text[0] == "W" else "W"
    return Board(f"{turn}:W{','.join(squares['W'])}:B{','.join(squares['B'])}", rule=rule)


def hub_move(move: Move) -> str:
    """A move in hub notation: "11-15", or "22x15x18" (from, to, then the captured squares).

    >>> hub_move(Move((9, 18, 27), captured=frozenset({14, 23})))
    '9x27x14x23'
    """
    if not move.captured:
        return f"{move.start}-{move.end}"
    return "x".join(str(s) for s in (move.start, move.end, *sorted(move.captured)))


def parse_hub_move(text: str, board: Board) -> Move:
    """The legal move of ``board`` written in hub notation (or as a PDN path); ValueError if none.

    >>> parse_hub_move("11-15", Board())
    Move.from_pdn('11-15')
    """
    text = text.strip().strip('"')
    separator = "x" if "x" in text else "-"
    try:
        squares = [int(part) for part in text.split(separator)]
    except ValueError:
        raise ValueError(f"move {text!r} is not hub notation (like 11-15 or 22x15x18)") from None
    if len(squares) < 2 or any(not 1 <= s <= 32 for s in squares):
        raise ValueError(f"move {text!r} is not hub notation (like 11-15 or 22x15x18)")
    start, end, captured = squares[0], squares[1], frozenset(squares[2:])
    capture = separator == "x"
    matches = [m for m in board.legal_moves() if m.start == start and m.end == end
               and m.is_capture == capture and (not captured or m.captured == captured)]
    if len(matches) == 1:
        return matches[0]
    if not matches and capture and len(squares) > 2:
        return Move.from_pdn(text, board)  # a full PDN path "9x18x27"
    if matches:
        raise ValueError(f"move {text!r} is ambiguous in {board.fen()}: {', '.join(map(hub_move, matches))}")
    raise ValueError(f"move {text!r} is not legal in {board.fen()}")


def parse_fields(text: str) -> dict[str, str]:
    """``name=x value="a b" flag`` -> {"name": "x", "value": "a b", "flag": ""}.

    >>> parse_fields('pos pos=Wbe moves="11-15 22-18"')
    {'pos': 'Wbe', 'moves': '11-15 22-18'}
    """
    fields: dict[str, str] = {}
    for match in _TOKEN.finditer(text):
        key, value, bare = match.groups()
        if bare is not None:
            fields.setdefault(bare, "")
        else:
            fields[key] = value.strip('"')
    return fields


# --- client -------------------------------------------------------------------

class _Process:
    """A subprocess with its output lines in a queue (read by a thread, so reads can time out)."""

    def __init__(self, command: Sequence[str], cwd: str | None) -> None:
        try:
            self.popen = subprocess.Popen(
                list(command), cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, text=True, bufsize=1, start_new_session=True)
        except OSError as error:
            raise EngineError(f"cannot start engine {shlex.join(command)!r}: {error}") from error
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.stderr_tail: deque[str] = deque(maxlen=20)
        threading.Thread(target=self._pump_stdout, daemon=True).start()
        self.stderr_reader = threading.Thread(target=self._pump_stderr, daemon=True)
        self.stderr_reader.start()

    def _pump_stdout(self) -> None:
        assert self.popen.stdout is not None
        for line in self.popen.stdout:
            self.lines.put(line.rstrip("\r\n"))
        self.lines.put(None)

    def _pump_stderr(self) -> None:
        assert self.popen.stderr is not None
        for line in self.popen.stderr:
            self.stderr_tail.append(line.rstrip("\r\n"))

    def alive(self) -> bool:
        return self.popen.poll() is None

    def write(self, line: str) -> None:
        assert self.popen.stdin is not None
        self.popen.stdin.write(line + "\n")
        self.popen.stdin.flush()

    def read(self, timeout: float | None) -> str | None:
        """The next line, None at end of output; queue.Empty after timeout seconds."""
        return self.lines.get(timeout=timeout)

    def kill(self) -> None:
        if self.alive():
            try:
                os.killpg(self.popen.pid, 9)
            except (ProcessLookupError, PermissionError):
                self.popen.kill()
        self.popen.wait()


class HubEngine(Engine):
    """An external engine speaking the Hub protocol over standard input and output.

    The process starts at once (handshake: ``hub`` ... ``wait``, ``init`` ...
    ``ready``) and again at the next :meth:`new_game` if it has died. Faults
    raise :class:`EngineError` (crash, garbage, illegal move; the message
    quotes what the engine said) or :class:`EngineTimeoutError` (no answer
    within the move time or the clock left, plus ``time_margin``; the process is then killed).

    >>> import sys
    >>> from egtb import Board
    >>> with HubEngine([sys.executable, "-m", "tournament.cli", "hub-engine", "depth=2"]) as engine:
    ...     engine.play(GameState.from_board(Board()), Limit(depth=2)) in Board().legal_moves()
    True
    """

    persistent = True

    def __init__(self, command: Sequence[str] | str, *, name: str | None = None, cwd: str | Path | None = None,
                 options: dict[str, str] | None = None, handshake_timeout: float = HANDSHAKE_TIMEOUT,
                 time_margin: float = TIME_MARGIN) -> None:
        self.command = shlex.split(command) if isinstance(command, str) else list(command)
        self.cwd = None if cwd is None else str(cwd)
        self.options = dict(options or {})
        self.handshake_timeout = handshake_timeout
        self.time_margin = time_margin
        self.id: dict[str, str] = {}
        self.params: dict[str, dict[str, str]] = {}
        self.last_info: dict[str, str] = {}
        self._process: _Process | None = None
        self.name = name or "hub"
        self._start()
        if name is None:
            self.name = self.id.get("name") or Path(self.command[0]).name

    # process life

    def _start(self) -> None:
        self._process = _Process(self.command, self.cwd)
        deadline = time.monotonic() + self.handshake_timeout
        self._send("hub")
        while True:
            command, fields = self._receive(deadline, "the hub handshake")
            if command == "wait":
                break
            if command == "id":
                self.id.update(fields)
            elif command == "param" and "name" in fields:
                self.params[fields["name"]] = fields
        for key, value in self.options.items():
            self._send(f"set-param name={key} value={_quote(value)}")
        self._send("init")
        while self._receive(deadline, "init")[0] != "ready":
            pass

    def alive(self) -> bool:
        """Whether the process is running."""
        return self._process is not None and self._process.alive()

    def new_game(self) -> None:
        if not self.alive():
            self._stop_process()
            self._start()
        self._send("new-game")

    def close(self) -> None:
        self._stop_process()

    def _stop_process(self, *, graceful: bool = True) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if graceful and process.alive():
            try:
                process.write("quit")
                process.popen.wait(timeout=QUIT_GRACE)
            except (OSError, subprocess.TimeoutExpired, ValueError):
                pass
        process.kill()

    # messages

    def _send(self, line: str) -> None:
        if self._process is None:
            raise EngineError(f"engine {self.name!r} is not running")
        logger.debug("%s << %s", self.name, line)
        try:
            self._process.write(line)
        except (BrokenPipeError, OSError, ValueError) as error:
            raise EngineError(f"engine {self.name!r} crashed{self._crash_detail()}") from error

    def _receive(self, deadline: float | None, waiting_for: str) -> tuple[str, dict[str, str]]:
        """The next non-empty line as (command, fields); raises on end of output or deadline."""
        assert self._process is not None
        while True:
            timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                line = self._process.read(timeout)
            except queue.Empty:
                self._stop_process(graceful=False)  # its state is unknown: no quit, just kill
                raise EngineTimeoutError(f"engine {self.name!r} did not answer in time during {waiting_for}") from None
            if line is None:
                raise EngineError(f"engine {self.name!r} crashed during {waiting_for}{self._crash_detail()}")
            logger.debug("%s >> %s", self.name, line)
            command, _, rest = line.strip().partition(" ")
            if command:
                return command, parse_fields(rest)

    def _crash_detail(self) -> str:
        process = self._process
        if process is None:
            return ""
        try:
            code = process.popen.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            code = None
        else:
            process.stderr_reader.join(timeout=1.0)  # its last words (a setup error) may still be in the pipe
        tail = " | ".join(list(process.stderr_tail)[-3:])
        return f" (exit code {code}{'; stderr: ' + tail if tail else ''})"

    # playing

    def play(self, state: GameState, limit: Limit) -> Move:
        if not self.alive():
            raise EngineError(f"engine {self.name!r} is not running{self._crash_detail()}")
        board = state.board()
        self._send_position(state)
        level = _level_line(limit)
        if level:
            self._send(level)
        self._send("go think")
        allowed = limit.time_allowed()  # the clock, not the share a move should aim at: the engine plans its time
        deadline = None if allowed is None else time.monotonic() + allowed + self.time_margin
        self.last_info = {}
        while True:
            command, fields = self._receive(deadline, "its move")
            if command == "done":
                text = fields.get("move", "")
                try:
                    return parse_hub_move(text, board)
                except ValueError as error:
                    fault = IllegalMoveError if is_move_text(text.strip().strip('"')) else EngineError
                    raise fault(f"engine {self.name!r} answered 'done move={text}': {error}") from None
            if command == "info":
                self.last_info = fields
            elif command == "error":
                raise EngineError(f"engine {self.name!r} reported an error: {fields.get('message', fields)}")
            else:
                logger.warning("%s: unexpected line during search: %s %s", self.name, command, fields)

    def reported_score(self) -> int | None:
        """The ``score`` of the last ``info`` line (in men, as Scan sends it) in hundredths, else None."""
        try:
            return round(float(self.last_info["score"]) * 100)
        except (KeyError, ValueError):
            return None

    def _send_position(self, state: GameState) -> None:
        """``pos pos=<start> moves="<moves>"``: the game's start and its moves in hub notation."""
        board = Board(state.start_fen, rule=state.rule)
        moves = []
        for text in state.moves:
            move = board.push_pdn(text)
            moves.append(hub_move(move))
        start = hub_position(Board(state.start_fen, rule=state.rule))
        self._send(f'pos pos={start} moves="{" ".join(moves)}"' if moves else f"pos pos={start}")


def _quote(value: str) -> str:
    return f'"{value}"' if " " in str(value) else str(value)


def _level_line(limit: Limit) -> str:
    """The ``level`` command for a Limit ("" for no limit)."""
    if limit.clock is not None:
        # as pydraughts sends it: the engine adds the increment itself
        moves = f"moves={limit.moves} " if limit.moves else ""
        return f"level {moves}time={limit.clock - limit.increment:g} inc={limit.increment:g}"
    if limit.time is not None:
        return f"level move-time={limit.time:g}"
    if limit.depth is not None:
        return f"level depth={limit.depth}"
    if limit.nodes is not None:
        return f"level nodes={limit.nodes}"
    return ""


# --- server -------------------------------------------------------------------

def _limit_from_level(fields: dict[str, str]) -> Limit:
    """A Limit from the fields of a ``level`` command."""
    if "infinite" in fields:
        return Limit()
    inc = float(fields.get("inc", 0) or 0)
    return Limit(
        time=float(fields["move-time"]) if "move-time" in fields else None,
        clock=float(fields["time"]) + inc if "time" in fields else None,
        increment=inc,
        depth=int(fields["depth"]) if "depth" in fields else None,
        nodes=int(fields["nodes"]) if "nodes" in fields else None,
        moves=int(fields["moves"]) if fields.get("moves") else None,
    )


class _Server:
    """State of one Hub session: the engine, the position, the level."""

    def __init__(self, engine: Engine, out: IO[str]) -> None:
        self.engine = engine
        self.out = out
        self.board = Board()
        self.limit = Limit()

    def say(self, line: str) -> None:
        self.out.write(line + "\n")
        self.out.flush()

    def handle(self, line: str) -> bool:
        """Answer one command; False after ``quit``."""
        command, _, rest = line.strip().partition(" ")
        fields = parse_fields(rest)
        if command == "hub":
            # pydraughts splits each field at "=", so a name must not contain one
            name = str(getattr(self.engine, "name", type(self.engine).__name__)).replace("=", ":").replace('"', "'")
            self.say(f'id name="{name}" version=0.1 author="draughts-egtb"')
            self.say('param name=variant value=english type=enum values="english"')
            self.say("wait")
        elif command == "init":
            Board().legal_moves()  # load the compiled move generator now, not on the clock of the first move
            self.say("ready")
        elif command == "ping":
            self.say("pong")
        elif command == "new-game":
            self.engine.new_game()
        elif command == "pos":
            self.set_position(fields)
        elif command == "level":
            self.limit = _limit_from_level(fields)
        elif command == "go":
            answer = self.engine.play(GameState.from_board(self.board), self.limit)
            info = getattr(self.engine, "last_info", None)
            score = self.engine.reported_score()
            if score is not None:
                depth = getattr(info, "depth", 0)
                self.say(f"info depth={depth} score={score / 100:.2f}")
            self.say(f"done move={self.answer_text(answer)}")
        elif command == "quit":
            return False
        elif command == "set-param":
            setter = getattr(self.engine, "set_option", None)
            if setter is not None and "name" in fields:
                setter(fields["name"], fields.get("value", ""))
        elif command in ("stop", "ponder-hit", ""):
            pass  # accepted; the search is synchronous, so stop and ponder-hit have nothing to do
        else:
            self.say(f'error message="unknown command {command}"')
        return True

    def set_position(self, fields: dict[str, str]) -> None:
        board = parse_hub_position(fields.get("pos", ""))
        for text in fields.get("moves", "").split():
            board.push(parse_hub_move(text, board))
        self.board = board

    def answer_text(self, answer: Move | str) -> str:
        """The engine's move in hub notation; text that names no legal move is passed on for the client to judge."""
        if isinstance(answer, Move):
            return hub_move(answer)
        try:
            return hub_move(Move.from_pdn(answer, self.board))
        except ValueError:
            return str(answer).strip().replace(" ", "") or "none"


def serve(engine: Engine, stdin: IO[str] | None = None, stdout: IO[str] | None = None) -> None:
    """Answer Hub commands from ``stdin`` on ``stdout`` with ``engine`` until ``quit`` or end of input.

    >>> import io
    >>> from tournament.engines.random import RandomEngine
    >>> out = io.StringIO()
    >>> serve(RandomEngine(seed=1), io.StringIO("hub\\ninit\\nquit\\n"), out)
    >>> out.getvalue().splitlines()[-2:]
    ['wait', 'ready']
    """
    stdin = stdin if stdin is not None else sys.stdin
    server = _Server(engine, stdout if stdout is not None else sys.stdout)
    for line in stdin:
        try:
            if not server.handle(line):
                break
        except ValueError as error:  # a bad position or move: tell the GUI, keep going
            server.say(f'error message="{str(error).replace(chr(34), chr(39))}"')
