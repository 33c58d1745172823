"""A Hub engine that never answers in time (sleeps 30 s on "go")."""

import time

from _hub_loop import run


def on_go(positions: list[str]) -> None:
    time.sleep(30)


run(on_go, "sleeping")
