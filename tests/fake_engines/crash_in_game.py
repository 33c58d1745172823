"""Our random mover served over Hub, dying (exit code 3) at its first move of game N (``new-game`` count).

Usage: crash_in_game.py N [STARTS_FILE]. Each process start appends a line to STARTS_FILE, so
tests can count how often the runner started it.
"""

import os
import sys

from tournament.engines.hub import serve
from tournament.engines.random import RandomEngine

crash_in, starts = int(sys.argv[1]), (sys.argv[2] if len(sys.argv) > 2 else None)
if starts:
    with open(starts, "a") as handle:
        handle.write(f"{os.getpid()}\n")


class CrashInGame(RandomEngine):
    games = 0

    def new_game(self) -> None:
        CrashInGame.games += 1

    def play(self, state, limit):
        if CrashInGame.games == crash_in:
            print(f"dying in game {crash_in} (pretend)", file=sys.stderr)
            sys.exit(3)
        return super().play(state, limit)


serve(CrashInGame(seed=1, name="crash-in-game"))
