"""Shared loop of the fake Hub engines: answers the handshake, calls on_go for "go".

Pure Python (no project imports), so the fakes start fast. Every command
received is appended to the file named by the FAKE_HUB_LOG environment
variable, when set, so tests can check what the client sent; FAKE_HUB_HELLO,
when set, is one more line said before "wait" (a ``param`` line).
"""

from __future__ import annotations

import os
import sys
from typing import Callable


def run(on_go: Callable[[list[str]], None], name: str) -> None:
    """Answer Hub commands on stdin; on_go gets every "pos" line received so far."""
    log = os.environ.get("FAKE_HUB_LOG")
    positions: list[str] = []
    for line in sys.stdin:
        line = line.strip()
        if log:
            with open(log, "a") as f:
                f.write(line + "\n")
        command = line.split(" ", 1)[0]
        if command == "hub":
            say(f"id name={name} version=1")
            if os.environ.get("FAKE_HUB_HELLO"):
                say(os.environ["FAKE_HUB_HELLO"])
            say("wait")
        elif command == "init":
            say("ready")
        elif command == "pos":
            positions.append(line)
        elif command == "go":
            on_go(positions)
        elif command == "quit":
            return


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()
