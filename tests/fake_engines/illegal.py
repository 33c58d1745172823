"""A Hub engine that answers with a well-formed but illegal move."""

from _hub_loop import run, say


def on_go(positions: list[str]) -> None:
    say("done move=22-17")


run(on_go, "illegal")
