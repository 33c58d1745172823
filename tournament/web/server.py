"""Serve the play-and-explore page on 127.0.0.1 with uvicorn (``tournament play``).

>>> sock = bind_socket(0)        # any free port
>>> sock.getsockname()[0]
'127.0.0.1'
>>> sock.close()
"""

from __future__ import annotations

import os
import socket
import threading
import webbrowser
from collections.abc import Callable

__all__ = ["DEFAULT_PORT", "HOST", "SHUTDOWN_SECONDS", "bind_socket", "serve"]

HOST = "127.0.0.1"
#: Port tried first when none is given (any free port if it is taken).
DEFAULT_PORT = 8765
#: Seconds Ctrl-C waits for the requests in progress to be answered (the engines stop at once).
SHUTDOWN_SECONDS = 3.0


def bind_socket(port: int, *, host: str = HOST) -> socket.socket:
    """A listening TCP socket on ``host:port`` (port 0: any free one); OSError when taken."""
    # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY only on sockets that say so, and without
    # it every keep-alive response waits ~40 ms (Nagle against the client's delayed ACK)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


def _default_socket() -> socket.socket:
    """DEFAULT_PORT when free, else any free port."""
    try:
        return bind_socket(DEFAULT_PORT)
    except OSError:
        return bind_socket(0)


def serve(*, tables_dir: str | os.PathLike | None = None, port: int | None = None,
          open_browser: bool = True, announce: Callable[[str], None] = print) -> None:
    """Serve the page until interrupted; ``announce`` is told the URL once it listens.

    Ctrl-C ends the engines' searches at once and then raises KeyboardInterrupt.

    ``port`` None tries DEFAULT_PORT, then any free port; 0 takes any free
    port; another number that one (OSError when taken).
    """
    import uvicorn

    from tournament.web.app import create_app

    sock = _default_socket() if port is None else bind_socket(port)
    url = f"http://{HOST}:{sock.getsockname()[1]}/"
    app = create_app(tables_dir=tables_dir)
    # a connection still open after the engines have stopped (a browser's keep-alive) is not waited for long
    config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=SHUTDOWN_SECONDS)
    engines = app.state.engines

    class Server(uvicorn.Server):
        """On Ctrl-C (or SIGTERM) the engine processes end at once: the requests waiting for their
        moves are answered, so the graceful shutdown need not wait out a long search."""

        def handle_exit(self, sig, frame) -> None:
            super().handle_exit(sig, frame)
            if engines is not None:  # in a thread: the signal may have come while the loop held its lock
                threading.Thread(target=engines.close, name="engines stop", daemon=True).start()

    server = Server(config)
    watcher = threading.Thread(target=_announce_when_started, args=(server, url, announce, open_browser),
                               daemon=True)
    watcher.start()
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()


def _announce_when_started(server, url: str, announce: Callable[[str], None], open_browser: bool) -> None:
    """Wait for uvicorn to listen, then print the URL and open a browser."""
    while not server.started:
        if server.should_exit:
            return
        threading.Event().wait(0.05)
    announce(url)
    if open_browser:
        webbrowser.open(url)


def describe_tables(tables_dir: str | os.PathLike | None) -> str:
    """One line about the table directory the page will probe.

    >>> describe_tables("/nonexistent")
    'no table directory /nonexistent: the explorer will say every position is outside the tables'
    """
    from egtb.probe.moves import tablebase_for
    from egtb.formats import master

    directory = master.resolve_dir(tables_dir)
    if not directory.is_dir():
        return f"no table directory {directory}: the explorer will say every position is outside the tables"
    pieces = tablebase_for(directory).max_pieces  # the process's one Tablebase of it
    return f"tables: {directory} (complete up to {pieces} pieces)" if pieces else \
        f"tables: {directory} (no complete set of tables yet)"
