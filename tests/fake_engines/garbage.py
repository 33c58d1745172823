"""A Hub engine that answers a search with nonsense."""

from _hub_loop import run, say


def on_go(positions: list[str]) -> None:
    say("%%% !!! fnord")
    say("done move=banana")


run(on_go, "garbage")
