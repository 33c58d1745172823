"""A Hub engine that plays the moves given on its command line, one per "go", with info lines."""

import sys

from _hub_loop import run, say

replies = iter(sys.argv[1:])


def on_go(positions: list[str]) -> None:
    say("info depth=1 score=0.00 nodes=1")
    say(f"done move={next(replies)}")


run(on_go, "scripted")
