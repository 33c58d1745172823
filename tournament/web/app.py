"""The play-and-explore page's web application: the JSON API and the static page.

Routes (documented with examples in docs/web.md):

- ``GET /`` the page; ``/static/...`` its script, style and images (package data);
- ``GET /api/info``: table directory, pieces covered, rules, strengths;
- ``GET /api/moves?fen=&moves=&rule=&counter=``: the game after ``moves`` from
  ``fen``: position, legal moves with full paths and captured squares, counter,
  end of the game, PDN;
- ``GET /api/probe?fen=&rule=&counter=``: the answer of ``egtb probe --json``
  (404 with a message for a position outside the tables);
- ``GET /api/ballots``: the 3-move and 2-move decks;
- ``POST /api/engine-move`` ``{fen, history, strength, time, rule}``: an engine's move;
- ``POST /api/engine-cancel``: stop the running search.

Bad input gets HTTP 400 with ``{"error": message}``, never a 500.

>>> from starlette.testclient import TestClient
>>> with TestClient(create_app(tables_dir="/nonexistent", engines=None)) as client:
...     client.get("/api/moves", params={"fen": "B:W14,23:B9"}).json()["moves"][0]["move"]
'9x18x27'
"""

from __future__ import annotations

import json
import logging
import os
from contextlib import asynccontextmanager
from importlib import resources
from pathlib import Path

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from egtb import __version__
from egtb.errors import MissingTableError, TableError
from egtb.probe.tablebase import Tablebase
from egtb.rules.board import DRAW_RULES
from egtb.formats import master
from tournament.web.engines import STRENGTHS, EngineCancelled, EngineService, parse_seconds, parse_strength
from tournament.web.state import (
    BadRequest, ballots_record, game_board, game_record, missing_record, move_record, parse_counter,
    parse_move_list, parse_rule, probe_record,
)

__all__ = ["STATIC_DIR", "create_app"]

log = logging.getLogger(__name__)

#: The page's files, shipped as package data.
STATIC_DIR = Path(str(resources.files("tournament.web").joinpath("static")))
#: The most moves a game sent to the API may hold.
MAX_MOVES = 2000
_NO_ENGINES = object()


def create_app(*, tables_dir: str | os.PathLike | None = None,
               engines: EngineService | None | object = _NO_ENGINES) -> Starlette:
    """The Starlette application serving the page and its API.

    ``tables_dir`` defaults to $EGTB_DIR or data/egtb (a missing directory
    means every position is outside the tables). ``engines`` defaults to a new
    :class:`EngineService` started with the application and ended with it;
    None serves no engine moves (503).
    """
    directory = Path(tables_dir) if tables_dir is not None else master.default_dir()
    tablebase = Tablebase(directory)
    owned = engines is _NO_ENGINES
    service: EngineService | None = EngineService(tables_dir=directory) if owned else engines  # type: ignore[assignment]

    @asynccontextmanager
    async def lifespan(app: Starlette):
        if service is not None:
            service.start()
        try:
            yield
        finally:
            tablebase.close()
            if owned and service is not None:
                service.close()

    api = _Api(tablebase, service)
    routes = [
        Route("/", _index),
        Route("/api/info", api.info),
        Route("/api/moves", api.moves),
        Route("/api/probe", api.probe),
        Route("/api/ballots", api.ballots),
        Route("/api/engine-move", api.engine_move, methods=["POST"]),
        Route("/api/engine-cancel", api.engine_cancel, methods=["POST"]),
        Mount("/static", StaticFiles(directory=STATIC_DIR), name="static"),
    ]
    app = Starlette(routes=routes, lifespan=lifespan,
                    exception_handlers={BadRequest: _bad_request, Exception: _server_error})
    app.state.tablebase = tablebase
    app.state.engines = service
    return app


async def _index(request: Request) -> FileResponse:
    return FileResponse(STATIC_DIR / "index.html", headers={"Cache-Control": "no-cache"})


async def _bad_request(request: Request, exc: Exception) -> JSONResponse:
    return JSONResponse({"error": str(exc)}, status_code=400)


async def _server_error(request: Request, exc: Exception) -> JSONResponse:
    log.exception("error answering %s", request.url)
    return JSONResponse({"error": f"internal error: {type(exc).__name__}: {exc}"}, status_code=500)


class _Api:
    """Handlers of the /api routes over one Tablebase and one EngineService."""

    def __init__(self, tablebase: Tablebase, engines: EngineService | None) -> None:
        self.tablebase = tablebase
        self.engines = engines
        self._ballots: dict | None = None

    async def info(self, request: Request) -> JSONResponse:
        materials = self.tablebase.materials()
        return JSONResponse({
            "version": __version__,
            "tables": str(self.tablebase.directory),
            "materials": len(materials),
            "max_pieces": self.tablebase.max_pieces,
            "rules": {name: {"limit": r.limit_plies, "man_move_resets": r.man_move_resets}
                      for name, r in DRAW_RULES.items()},
            "strengths": list(STRENGTHS),
            "engines": self.engines is not None,
        })

    async def moves(self, request: Request) -> JSONResponse:
        q = request.query_params
        rule = parse_rule(q.get("rule"))
        played = _checked_moves(q.get("moves"))
        board = game_board(q.get("fen"), played, rule=rule, counter=parse_counter(q.get("counter"), rule=rule))
        headers = {k: q[k] for k in ("Event", "Black", "White") if q.get(k)}
        return JSONResponse(game_record(board, headers=headers))

    async def probe(self, request: Request) -> JSONResponse:
        q = request.query_params
        fen = q.get("fen")
        if not fen:
            raise BadRequest("probe needs a position: ?fen=...")
        rule = parse_rule(q.get("rule"))
        counter = parse_counter(q.get("counter"), rule=rule)
        try:
            return JSONResponse(probe_record(self.tablebase, fen, rule=rule, counter=counter))
        except MissingTableError as exc:  # a KeyError: before ValueError on purpose
            return JSONResponse(missing_record(self.tablebase, fen, exc), status_code=404)
        except ValueError as exc:  # the prober's own checks of its input
            raise BadRequest(str(exc)) from None
        except TableError as exc:
            return JSONResponse({"fen": fen, "error": str(exc)}, status_code=500)

    async def ballots(self, request: Request) -> JSONResponse:
        if self._ballots is None:
            self._ballots = ballots_record()
        return JSONResponse(self._ballots)

    async def engine_move(self, request: Request) -> JSONResponse:
        body = await _json_body(request)
        rule = parse_rule(body.get("rule"))
        history = _checked_moves(body.get("history"))
        fen = body.get("fen")
        if fen is not None and not isinstance(fen, str):
            raise BadRequest(f"fen must be a string, got {fen!r}")
        strength = parse_strength(body.get("strength"))
        seconds = parse_seconds(body.get("time"))
        counter = parse_counter(body.get("counter"), rule=rule)
        board = game_board(fen, history, rule=rule, counter=counter)
        if board.is_game_over():
            raise BadRequest(f"the game is over ({board.outcome().termination.value}); no move to play")
        if self.engines is None:
            return JSONResponse({"error": "this server runs without engines"}, status_code=503)
        try:
            reply = await run_in_threadpool(self.engines.play, fen=board.start_fen, moves=history,
                                            rule=rule, strength=strength, seconds=seconds,
                                            counter=counter)
        except EngineCancelled as exc:
            return JSONResponse({"error": str(exc), "cancelled": True}, status_code=409)
        move = {str(m): m for m in board.legal_moves()}.get(reply.move)
        if move is None:
            return JSONResponse({"error": f"engine {strength} answered {reply.move!r}, not a legal move"},
                                status_code=500)
        return JSONResponse({**move_record(board, move), "strength": strength,
                             "seconds": round(reply.seconds, 4), "source": reply.source})

    async def engine_cancel(self, request: Request) -> JSONResponse:
        cancelled = self.engines.cancel() if self.engines is not None else False
        return JSONResponse({"cancelled": cancelled})


def _checked_moves(moves: object) -> list[str]:
    """A move list from the request (list or string), at most MAX_MOVES long."""
    if moves is not None and not isinstance(moves, (str, list)):
        raise BadRequest(f"moves must be a list of PDN strings or one string, got {moves!r}")
    played = parse_move_list(moves)  # type: ignore[arg-type]
    if len(played) > MAX_MOVES:
        raise BadRequest(f"{len(played)} moves is more than the {MAX_MOVES} a game may hold here")
    return played


async def _json_body(request: Request) -> dict:
    """The request's JSON object; BadRequest for anything else."""
    try:
        body = json.loads(await request.body() or b"{}")
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BadRequest(f"the request body is not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise BadRequest(f"the request body must be a JSON object, got {type(body).__name__}")
    return body
