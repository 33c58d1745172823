"""A Hub engine that dies (exit code 3) when asked for a move."""

import sys

from _hub_loop import run


def on_go(positions: list[str]) -> None:
    print("segmentation fault (pretend)", file=sys.stderr)
    sys.exit(3)


run(on_go, "crashing")
