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
- ``GET /api/review?fen=&moves=&rule=&counter=``: the game reviewed with the tables (where it
  entered them, each move that threw away a win or a draw: :mod:`tournament.web.replay`);
- ``POST /api/pdn`` ``{text}``: the first game of pasted PDN or a move list (start, moves, tags);
- ``POST /api/engine-move`` ``{fen, history, strength, time, rule, counter, game}``: an engine's move;
- ``POST /api/engine-cancel`` ``{game}``: stop that game's search (no other game's).
- ``POST /api/analysis`` ``{fen, rule, counter, time, game}``: for a position outside the tables, the
  ``hard`` engine's score (engine units and words) and principal variation, searched for ``time``
  seconds (409 for a position the tables hold: ``/api/probe`` answers it); cancelled as an engine move.

Every input is checked into typed values (:mod:`tournament.web.inputs`): bad
input gets HTTP 400 with ``{"error": message}``, never a 500; a move chosen on
a position the game has left gets 409. A request to a host other than
localhost or 127.0.0.1 gets 400, one from another site's page (its ``Origin``)
403, and a POST not declared ``application/json`` 415 (:mod:`tournament.web.hosts`).
Engine searches run side by side (:class:`EngineService`); one whose client has
gone is stopped.

>>> from starlette.testclient import TestClient
>>> app = create_app(tables_dir="/nonexistent", engines=None)
>>> with TestClient(app, base_url="http://127.0.0.1") as client:
...     client.get("/api/moves", params={"fen": "B:W14,23:B9"}).json()["moves"][0]["move"]
'9x18x27'
"""

from __future__ import annotations

import asyncio
import logging
import os
from contextlib import asynccontextmanager
from importlib import resources
from pathlib import Path

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import FileResponse, JSONResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from egtb import __version__
from egtb.errors import MissingTableError, TableError
from egtb.formats import master
from egtb.probe.tablebase import Tablebase
from egtb.rules.board import DRAW_RULES
from tournament.engines.base import EngineError
from tournament.engines.search import TB_WIN
from tournament.web.engines import EngineCancelled, EngineService
from tournament.web.hosts import LoopbackHostMiddleware, SameOriginMiddleware
from tournament.web.inputs import (
    STRENGTHS, AnalysisRequest, BadRequest, EngineCancelRequest, EngineMoveRequest, MovesQuery, ProbeQuery, StaleMove,
    MAX_BODY_BYTES, MAX_SECONDS, parse_json_body,
)
from tournament.web.replay import pasted_game_record, review_record
from tournament.web.state import (
    analysis_record, ballots_record, forced_line, game_board, game_record, missing_record, move_record, probe_record,
)

__all__ = ["STATIC_DIR", "create_app"]

log = logging.getLogger(__name__)

#: Seconds between two checks that the client waiting for an engine's move is still there.
DISCONNECT_POLL = 0.25
#: The page's files, shipped as package data.
STATIC_DIR = Path(str(resources.files("tournament.web").joinpath("static")))
_NO_ENGINES = object()


def create_app(*, tables_dir: str | os.PathLike | None = None,
               engines: EngineService | None | object = _NO_ENGINES) -> Starlette:
    """The Starlette application serving the page and its API.

    ``tables_dir`` defaults to $EGTB_DIR or data/egtb (a missing directory
    means every position is outside the tables). ``engines`` defaults to a new
    :class:`EngineService` started with the application and ended with it;
    None serves no engine moves (503).
    """
    directory = master.resolve_dir(tables_dir)
    tablebase = Tablebase(directory)
    owned = engines is _NO_ENGINES
    service: EngineService | None = EngineService(tables_dir=directory) if owned else engines  # type: ignore[assignment]
    api = _Api(tablebase, service)

    @asynccontextmanager
    async def lifespan(app: Starlette):
        if service is not None:
            service.start(strengths=api.playable_strengths())
        try:
            yield
        finally:
            tablebase.close()
            if owned and service is not None:
                service.close()
    routes = [
        Route("/", _index),
        Route("/api/info", api.info),
        Route("/api/moves", api.moves),
        Route("/api/probe", api.probe),
        Route("/api/ballots", api.ballots),
        Route("/api/review", api.review),
        Route("/api/pdn", api.pdn, methods=["POST"]),
        Route("/api/engine-move", api.engine_move, methods=["POST"]),
        Route("/api/engine-cancel", api.engine_cancel, methods=["POST"]),
        Route("/api/analysis", api.analysis, methods=["POST"]),
        Mount("/static", StaticFiles(directory=STATIC_DIR), name="static"),
    ]
    app = Starlette(routes=routes, lifespan=lifespan,
                    middleware=[Middleware(LoopbackHostMiddleware), Middleware(SameOriginMiddleware)],
                    exception_handlers={StaleMove: _stale_move, BadRequest: _bad_request,
                                        ClientDisconnect: _client_gone, Exception: _server_error})
    app.state.tablebase = tablebase
    app.state.engines = service
    return app


async def _index(request: Request) -> FileResponse:
    return FileResponse(STATIC_DIR / "index.html", headers={"Cache-Control": "no-cache"})


async def _bad_request(request: Request, exc: Exception) -> JSONResponse:
    return JSONResponse({"error": str(exc)}, status_code=400)


async def _stale_move(request: Request, exc: Exception) -> JSONResponse:
    return JSONResponse({"error": str(exc), "stale": True}, status_code=409)


async def _client_gone(request: Request, exc: Exception) -> JSONResponse:
    """A client that went away before its request was read: one line in the log, no traceback (the
    answer goes nowhere)."""
    log.info("%s %s: the client went away before it was answered", request.method, request.url.path)
    return JSONResponse({"error": "the client went away"}, status_code=400)


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
            "strengths": self.playable_strengths(),
            "engines": self.engines is not None,
            "max_seconds": MAX_SECONDS,
        })

    def playable_strengths(self) -> list[str]:
        """The strengths offered: "perfect" only with tables to play from."""
        return [name for name in STRENGTHS if name != "perfect" or self.tablebase.max_pieces]

    async def moves(self, request: Request) -> JSONResponse:
        query = MovesQuery.from_params(request.query_params)
        board = game_board(query.fen, query.moves, rule=query.rule, counter=query.counter)
        return JSONResponse(game_record(board, headers=query.headers, end=query.end))

    async def probe(self, request: Request) -> JSONResponse:
        query = ProbeQuery.from_params(request.query_params)
        try:
            return JSONResponse(probe_record(self.tablebase, query.fen, rule=query.rule, counter=query.counter))
        except MissingTableError as exc:  # a KeyError: before ValueError on purpose
            return JSONResponse(missing_record(self.tablebase, query.fen, exc, rule=query.rule,
                                               counter=query.counter), status_code=404)
        except ValueError as exc:  # the prober's own checks of its input
            raise BadRequest(str(exc)) from None
        except TableError as exc:
            return JSONResponse({"fen": query.fen, "error": str(exc)}, status_code=500)

    async def ballots(self, request: Request) -> JSONResponse:
        if self._ballots is None:
            self._ballots = ballots_record()
        return JSONResponse(self._ballots)

    async def review(self, request: Request) -> JSONResponse:
        query = MovesQuery.from_params(request.query_params)
        return JSONResponse(review_record(self.tablebase, query))  # in the loop, as probe (one thread probes)

    async def pdn(self, request: Request) -> JSONResponse:
        return JSONResponse(pasted_game_record((await _json_body(request)).get("text")))

    async def engine_move(self, request: Request) -> JSONResponse:
        ask = EngineMoveRequest.from_body(await _json_body(request))
        board = game_board(ask.fen, ask.history, rule=ask.rule, counter=ask.counter)
        if board.is_game_over():
            raise BadRequest(f"the game is over ({board.outcome().termination.value}); no move to play")
        if ask.strength not in self.playable_strengths():
            raise BadRequest(f"strength {ask.strength} plays from the endgame tables, and there are none in "
                             f"{self.tablebase.directory}; choose another strength")
        if self.engines is None:
            return JSONResponse({"error": "this server runs without engines"}, status_code=503)
        try:
            reply = await self._search(request, ask.game, fen=board.start_fen, moves=list(ask.history), rule=ask.rule,
                                       strength=ask.strength, seconds=ask.seconds, counter=ask.counter)
        except EngineCancelled as exc:
            return JSONResponse({"error": str(exc), "cancelled": True}, status_code=409)
        except EngineError as exc:  # the engine's fault, in its own words, for the page to show
            return JSONResponse({"error": str(exc)}, status_code=500)
        move = {str(m): m for m in board.legal_moves()}.get(reply.move)
        if move is None:
            return JSONResponse({"error": f"engine {ask.strength} answered {reply.move!r}, not a legal move"},
                                status_code=500)
        return JSONResponse({**move_record(board, move), "strength": ask.strength,
                             "seconds": round(reply.seconds, 4), "source": reply.source})

    async def analysis(self, request: Request) -> JSONResponse:
        """The ``hard`` engine's score and line for a position outside the tables (forced moves played first)."""
        ask = AnalysisRequest.from_body(await _json_body(request))
        board = game_board(ask.fen, rule=ask.rule, counter=ask.counter)
        if board.is_game_over():
            raise BadRequest(f"the game is over ({board.outcome().termination.value}); nothing to search")
        if self._in_tables(board):
            return JSONResponse({"fen": board.fen(), "in_tables": True,
                                 "error": "the tables hold this position: /api/probe gives its value"},
                                status_code=409)
        if self.engines is None:
            return JSONResponse({"error": "this server runs without engines"}, status_code=503)
        after = board.copy()
        forced = forced_line(after, in_tables=self._in_tables)
        if after.is_game_over() or self._in_tables(after):
            score = self._table_score(after)
            return JSONResponse(analysis_record(board, forced, score=score, source="forced"))
        try:
            reply = await self._search(request, ask.game, fen=after.fen(), moves=[], rule=ask.rule,
                                       strength="hard", seconds=ask.seconds, counter=after.quiet_plies)
        except EngineCancelled as exc:
            return JSONResponse({"error": str(exc), "cancelled": True}, status_code=409)
        except EngineError as exc:
            return JSONResponse({"error": str(exc)}, status_code=500)
        return JSONResponse(analysis_record(board, forced, score=reply.score, pv=reply.pv, depth=reply.depth,
                                            seconds=reply.seconds, source=reply.source))

    def _in_tables(self, board) -> bool:
        """Whether the tables answer ``board`` under its rule from its counter."""
        if board.piece_count() > self.tablebase.largest_pieces:
            return False
        try:
            probe_record(self.tablebase, board.fen(), rule=board.rule.name, counter=board.quiet_plies)
        except (KeyError, ValueError, TableError):
            return False
        return True

    def _table_score(self, board) -> int | None:
        """The searcher's score of a position the game or the tables decide (None: neither does): a win
        TB_WIN, a loss -TB_WIN, a draw 0 (an ended game: analysis_record scores it)."""
        if board.is_game_over():
            return None
        record = probe_record(self.tablebase, board.fen(), rule=board.rule.name, counter=board.quiet_plies)
        outcome = record.get("outcome") or record.get("value")
        return {"win": TB_WIN, "loss": -TB_WIN}.get(outcome, 0)

    async def _search(self, request: Request, game: str, **play):
        """The engine's reply (``play``: :meth:`EngineService.play`'s arguments), searched in a thread; a
        client that goes away meanwhile stops the search."""
        search = self.engines.ticket(game=game)
        work = asyncio.ensure_future(run_in_threadpool(self.engines.play, game=game, search=search, **play))
        try:
            while not work.done():
                await asyncio.wait({work}, timeout=DISCONNECT_POLL)
                if not work.done() and await request.is_disconnected():
                    log.info("search of game %r: the client went away; it is stopped", game)
                    self.engines.stop(search)
            return work.result()
        finally:
            if not work.done():  # this handler was cancelled (the server stops): so is its search
                self.engines.stop(search)

    async def engine_cancel(self, request: Request) -> JSONResponse:
        ask = EngineCancelRequest.from_body(await _json_body(request))
        cancelled = self.engines.cancel(game=ask.game) if self.engines is not None else False
        return JSONResponse({"cancelled": cancelled})


async def _json_body(request: Request) -> dict:
    """The request's JSON object; a body declared too large is refused before it is read."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise BadRequest(f"the request body is {declared} bytes; at most {MAX_BODY_BYTES} are read")
    return parse_json_body(await request.body())
