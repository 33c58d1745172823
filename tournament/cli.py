"""Command line: ``tournament run`` plays a match, ``tournament hub-engine`` serves an engine,
``tournament play`` serves the play-and-explore page, ``tournament review`` marks the moves of
PDN games that threw away a win or a draw.

Example::

    tournament run --engine easy --engine medium --openings 3-move --rounds 1 \\
        --tc 0.1 --tables data/tables --adjudicate-pieces 5 --out runs/demo --jobs 2

A second start of the same command resumes the run: only the missing games are
played. It prints the standings and the path of the PDN file.

>>> parse_time_control("10+0.1")
Limit(time=None, clock=10.0, increment=0.1, depth=None, nodes=None, moves=None)
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from egtb import __version__
from egtb.exit_status import EXIT_CODES_HELP, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from egtb.dask.options import add_scheduler_options

if TYPE_CHECKING:  # the engines, games and openings load the rules' numba kernels: each subcommand imports its own
    from tournament.config import GameSettings, TournamentConfig
    from tournament.engines.base import Limit
    from tournament.openings import Opening

__all__ = ["build_parser", "main", "parse_time_control"]


def parse_time_control(text: str) -> Limit:
    """``"0.1"`` is 0.1 s per move; ``"10+0.1"`` a 10 s clock with a 0.1 s increment; ``"40/120"`` 40 moves in 120 s.

    >>> parse_time_control("0.25")
    Limit(time=0.25, clock=None, increment=0.0, depth=None, nodes=None, moves=None)
    """
    from tournament.engines import config
    try:
        return config.parse_time_control(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def build_parser(*, only: str | None = None) -> argparse.ArgumentParser:
    """The argument parser of the ``tournament`` command; with `only`, the options of that subcommand alone.

    The options take their defaults and choices from modules that load no kernel
    (:mod:`egtb.rules.draw_rules`, :mod:`tournament.config`, :mod:`tournament.openings`),
    so that every ``--help`` and usage error starts without numba, numpy or h5py
    (tests/test_startup.py); ``only`` spares building the other subcommands' options.

    >>> sorted(build_parser(only="")._subparsers._group_actions[0].choices)
    ['hub-engine', 'play', 'review', 'run']
    """
    parser = argparse.ArgumentParser(prog="tournament", description="English draughts engine tournaments.",
                                     epilog=EXIT_CODES_HELP)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    for name, (help_text, register) in _COMMANDS.items():
        subparser = commands.add_parser(name, help=help_text, epilog=EXIT_CODES_HELP)
        if only is None or only == name:
            register(subparser)
    return parser


def _command_of(argv: Sequence[str]) -> str:
    """The subcommand named in `argv` (its first word that is not an option), or "" when none is.

    >>> _command_of(["--help"]), _command_of(["run", "--engine", "easy"]), _command_of(["nope"])
    ('', 'run', '')
    """
    word = next((word for word in argv if not word.startswith("-")), "")
    return word if word in _COMMANDS else ""


def _add_play(play: argparse.ArgumentParser) -> None:
    play.add_argument("--tables", default=None, metavar="DIR",
                      help="endgame table directory (default: $EGTB_DIR or data/egtb)")
    play.add_argument("--port", type=_port, default=None,
                      help="port on 127.0.0.1 (default 8765, or any free one when taken; 0: any free one)")
    play.add_argument("--no-browser", action="store_true", help="print the URL only; open no browser")
    play.set_defaults(func=_play)


def _port(text: str) -> int:
    """A TCP port number, 0-65535 (0: any free one), for ``play --port``.

    >>> _port("8765")
    8765
    >>> _port("-5")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: port -5 is outside 0..65535
    """
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"port {text!r} is not a whole number") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port {port} is outside 0..65535")
    return port


def _play(args: argparse.Namespace) -> int:
    """Serve the play-and-explore page until interrupted."""
    try:
        from tournament.web.server import describe_tables, serve
    except ImportError as exc:
        raise ValueError(f"the play page needs the web extras ({exc.name} is missing): "
                         "pip install 'draughts-egtb[web]'") from None
    if args.tables is not None and not Path(args.tables).is_dir():  # asked for, absent: bad setup
        raise ValueError(f"--tables {args.tables}: no such table directory")
    print(describe_tables(args.tables))
    try:
        serve(tables_dir=args.tables, port=args.port, open_browser=not args.no_browser,
              announce=lambda url: print(f"serving on {url} (Ctrl-C stops)", flush=True))
    except KeyboardInterrupt:
        print("tournament play: stopped", file=sys.stderr)
        return EXIT_INTERRUPTED
    return EXIT_OK


def _add_review(review: argparse.ArgumentParser) -> None:
    from egtb.rules.draw_rules import DRAW_RULES
    review.add_argument("pdn", metavar="GAMES.pdn",
                        help="a PDN file of English draughts games (e.g. a run's games.pdn)")
    review.add_argument("--tables", default=None, metavar="DIR",
                        help="endgame table directory (default: $EGTB_DIR or data/egtb)")
    review.add_argument("--rule", default="wcdf", choices=tuple(DRAW_RULES),
                        help="the move rule the games were played under (default wcdf: 40 moves each)")
    review.add_argument("--json", action="store_true", help="print the reviews as JSON")
    review.set_defaults(func=_review)


def _review(args: argparse.Namespace) -> int:
    """Print where each game entered the tables and the moves that threw away a win or a draw."""
    import json
    from tournament.review import format_review, open_tables, review_file, review_to_json
    with open_tables(args.tables) as tablebase:
        reviews = review_file(args.pdn, tablebase, rule=args.rule)
    if args.json:
        print(json.dumps(review_to_json(reviews), indent=2))
    else:
        print("\n".join(format_review(review) for review in reviews))
    return EXIT_OK


def _add_hub_engine(hub: argparse.ArgumentParser) -> None:
    hub.add_argument("spec", help="engine spec: random, easy, medium, hard, depth=N, time=S, module:Class, "
                                  "cblib:LIBRARY.so (a CheckerBoard engine loaded in this process) ...")
    hub.add_argument("--tables", default=None, help="endgame table directory")
    hub.add_argument("--seed", type=int, default=None, help="seed of the engine's randomness")
    hub.add_argument("--option", action="append", type=_engine_option, default=[], metavar="NAME=VALUE",
                     help="an engine option, e.g. --option noise=20, or --option fallback=depth=60 for perfect "
                          "(the engine that plays outside the tables); may be repeated")
    hub.set_defaults(func=_hub_engine)


def _engine_option(text: str) -> tuple[str, object]:
    """``NAME=VALUE`` of ``hub-engine --option``: the name and the value as Python (numbers, booleans).

    >>> _engine_option("fallback=depth=60"), _engine_option("noise=20")
    (('fallback', 'depth=60'), ('noise', 20))
    """
    from tournament.engines import config
    name, separator, value = text.partition("=")
    if not separator or not name.strip():
        raise argparse.ArgumentTypeError(f"option {text!r} is not NAME=VALUE")
    return name.strip(), config.option_value(value)


def _add_run(run: argparse.ArgumentParser) -> None:
    from egtb.rules.draw_rules import DEFAULT_RULE, DRAW_RULES
    from tournament.config import SprtSettings
    from tournament.config import DEFAULT_TIME_MARGIN
    from tournament.openings import OPENING_ORDERS
    run.add_argument("--engine", action="append", required=True, metavar="SPEC|SETTINGS",
                     help="engine spec (random, easy, medium, hard, depth=N, time=S, perfect, module:Class, "
                          "hub:CMD, cb:LIBRARY.so) or settings 'name=N spec=SPEC tc=TC depth=N nodes=N option.NAME=VALUE "
                          "tables=DIR'; give two or more")
    run.add_argument("--each", action="append", default=[], metavar="SETTINGS",
                     help="settings every engine starts from, e.g. 'tc=10+0.1 option.Hash=64'")
    run.add_argument("--gauntlet", action="store_true", help="first engine against each other one")
    run.add_argument("--anchor", metavar="NAME",
                     help="with 3+ engines, rate this engine 0 (default: the average rating is 0)")
    run.add_argument("--openings", default="3-move",
                     help="3-move, 2-move, start or a FILE of FENs, move lines or PDN games")
    run.add_argument("--include-barred", action="store_true", help="add the barred ballots")
    run.add_argument("--openings-order", choices=OPENING_ORDERS, default="sequential",
                     help="walk the suite in file order or shuffled by --seed (default sequential)")
    run.add_argument("--openings-start", type=_positive, default=1, metavar="N",
                     help="begin with opening N of that order (1-based, default 1)")
    count = run.add_mutually_exclusive_group()
    count.add_argument("--rounds", type=_positive, default=1, help="times through the openings (default 1)")
    count.add_argument("--games", type=_positive, help="play exactly N games (openings cycled)")
    run.add_argument("--jobs", "-j", type=_positive, default=os.cpu_count() or 1,
                     help="games played at once, each in its own worker process (default: number of cores)")
    limit = run.add_mutually_exclusive_group()
    limit.add_argument("--tc", type=parse_time_control,
                       help="seconds per move (0.1), clock (10+0.1) or moves per period (40/120)")
    limit.add_argument("--depth", type=_positive, help="fixed search depth per move")
    run.add_argument("--timemargin", type=_non_negative_seconds, default=DEFAULT_TIME_MARGIN,
                     help=f"seconds an engine may overrun before forfeiting (default {DEFAULT_TIME_MARGIN})")
    run.add_argument("--rule", choices=sorted(DRAW_RULES), default=DEFAULT_RULE, help="draw-rule preset")
    run.add_argument("--tables", help="endgame table directory: adjudication and probing engines")
    run.add_argument("--adjudicate-pieces", type=_positive, help="adjudicate by the tables at N pieces or fewer")
    run.add_argument("--max-plies", type=_positive, help="draw a game that reaches N plies")
    run.add_argument("--heuristics", action="store_true", help="also adjudicate by material (resign/draw)")
    run.add_argument("--draw-adjudication", nargs="+", metavar="KEY=VALUE",
                     help="draw when both engines' scores stay within score=S (hundredths of a man) for "
                          "movecount=M moves each, from movenumber=N on")
    run.add_argument("--resign-adjudication", nargs="+", metavar="KEY=VALUE",
                     help="an engine whose score is -S or worse (score=S) for movecount=M moves loses; "
                          "twosided=true: its opponent must agree")
    run.add_argument("--sprt", type=SprtSettings.parse, metavar="ELO0,ELO1,ALPHA,BETA",
                     help="stop a two-engine match when the SPRT decides")
    run.add_argument("--out", default="runs/tournament",
                     help="output directory of the run: games.jsonl, games.pdn, summary.json (resumed when it exists)")
    run.add_argument("--seed", type=int, default=0, help="run seed (game seeds derive from it)")
    run.add_argument("--event", default="tournament", help="PDN Event tag")
    run.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    run.add_argument("--json", action="store_true", help="print the summary as JSON (as summary.json)")
    add_scheduler_options(run)  # --scheduler / --scheduler-file: play the games on a Dask cluster
    run.set_defaults(func=_run)


def _positive(text: str) -> int:
    """A whole number of 1 or more (games, rounds, jobs, a depth, plies, pieces).

    >>> _positive("4")
    4
    >>> _positive("-3")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: -3 is not a whole number of 1 or more
    """
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a whole number of 1 or more")
    return value


def _non_negative_seconds(text: str) -> float:
    """Seconds, 0 or more (``--timemargin``).

    >>> _non_negative_seconds("0.5")
    0.5
    >>> _non_negative_seconds("-1")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: -1 is not a number of seconds, 0 or more
    """
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"{text} is not a number of seconds, 0 or more")
    return value


def _openings(name: str, include_barred: bool) -> list[Opening]:
    """Ballots by name, the standard start, or a user file."""
    from tournament.openings import BALLOT_KINDS, Opening, load_ballots, load_openings_file
    if name in BALLOT_KINDS:
        return load_ballots(name, include_barred=include_barred)
    if name == "start":
        return [Opening("start", (), None)]
    if not Path(name).exists():
        raise ValueError(f"--openings {name!r}: not {', '.join(BALLOT_KINDS)}, 'start' or an existing file")
    return load_openings_file(name)


def _game_settings(args: argparse.Namespace) -> GameSettings:
    """How each game is played, from the options of ``tournament run``."""
    from tournament.adjudicate import ResignRule, ScoreDrawRule
    from tournament.config import GameSettings
    from tournament.engines.base import Limit
    limit = args.tc or (Limit(depth=args.depth) if args.depth else Limit())
    return GameSettings(rule=args.rule, limit=limit, time_margin=args.timemargin, tables_dir=args.tables,
                        adjudicate_pieces=args.adjudicate_pieces, max_plies=args.max_plies,
                        heuristics=args.heuristics,
                        draw_adjudication=ScoreDrawRule.parse(args.draw_adjudication)
                        if args.draw_adjudication else None,
                        resign_adjudication=ResignRule.parse(args.resign_adjudication)
                        if args.resign_adjudication else None)


def _tournament_config(args: argparse.Namespace) -> TournamentConfig:
    """The tournament the options of ``tournament run`` describe."""
    from tournament.config import TournamentConfig
    from tournament.engines import config
    from tournament.openings import order_openings
    if len(args.engine) < 2:
        raise ValueError("give at least two --engine options")
    each: dict = {}
    for text in args.each:
        extra = config.parse_settings(text)
        each = {**each, **extra, "options": {**each.get("options", {}), **extra.get("options", {})}}
    return TournamentConfig(
        engines=tuple(config.parse_engine(text, each=each) for text in args.engine),
        openings=tuple(order_openings(_openings(args.openings, args.include_barred), order=args.openings_order,
                                      start=args.openings_start, seed=args.seed)),
        gauntlet=args.gauntlet, rounds=args.rounds, games=args.games, seed=args.seed, game=_game_settings(args),
        sprt=args.sprt, event=args.event, anchor=args.anchor)


def _run(args: argparse.Namespace) -> int:
    config = _tournament_config(args)  # first: a usage error is told before the games' kernels load
    from tournament.schedule import run_tournament
    result = run_tournament(config, out_dir=args.out, concurrency=args.jobs,
                            progress=not args.quiet, executor=_game_executor(args))
    if args.json:
        print(result.summary_path.read_text(encoding="utf-8"), end="")
        return EXIT_OK
    print(result.standings)
    print(f"\n{len(result.records)}/{result.scheduled} games; PDN: {result.pdn_path}")
    print(f"summary: {result.summary_path}")
    return EXIT_OK


def _game_executor(args: argparse.Namespace):
    """None (the local pool) or the Dask cluster given by --scheduler / --scheduler-file."""
    from egtb.dask.executor import make_executor
    return make_executor(scheduler=args.scheduler, scheduler_file=args.scheduler_file)


def _hub_engine(args: argparse.Namespace) -> int:
    """Serve a built-in or plug-in engine over Hub on stdin/stdout until ``quit``."""
    from tournament.engines.hub import serve
    from tournament.engines.registry import make_engine
    with make_engine(args.spec, tables_dir=args.tables, seed=args.seed, options=dict(args.option)) as engine:
        serve(engine)
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``tournament`` command; returns the exit status.

    >>> main(["run", "--engine", "random", "--engine", "random"])  # doctest: +SKIP
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(processName)s %(name)s: %(message)s")
    args = build_parser(only=_command_of(argv)).parse_args(argv)
    try:
        return args.func(args)
    except KeyboardInterrupt:
        kept = ("the finished games are kept, with their games.pdn, summary.json and standings.txt; "
                "run the same command to resume" if args.command == "run" else "stopped")
        print(f"tournament {args.command}: interrupted; {kept}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except (ValueError, OSError) as exc:
        print(f"tournament {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE


_COMMANDS = {  # name: (help, the function that adds its options)
    "run": ("play a round-robin or gauntlet match (resumable)", _add_run),
    "hub-engine": ("serve an engine over the Hub protocol on stdin/stdout", _add_hub_engine),
    "play": ("play the engines and explore the tables in a browser page", _add_play),
    "review": ("mark the moves of PDN games that threw away a win or a draw, by the tables", _add_review),
}


if __name__ == "__main__":
    sys.exit(main())
