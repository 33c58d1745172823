"""Answer only requests addressed to this machine: a guard against DNS rebinding.

The page listens on 127.0.0.1 alone, but a web page elsewhere can point a name
it controls at 127.0.0.1 and then read the answers as its own origin. The
browser still sends that foreign name in the ``Host`` header, so a request whose
host is not ``localhost`` or ``127.0.0.1`` (any port) gets HTTP 400 instead.

>>> host_allowed("127.0.0.1:8765"), host_allowed("localhost"), host_allowed("evil.example:8765")
(True, True, False)
"""

from __future__ import annotations

import json

__all__ = ["ALLOWED_HOSTS", "LoopbackHostMiddleware", "host_allowed"]

#: Host names (without the port) the page answers.
ALLOWED_HOSTS = frozenset({"localhost", "127.0.0.1"})


def host_allowed(host: str) -> bool:
    """Whether a ``Host`` header names this machine (the port is ignored; case too)."""
    name, _, port = host.strip().lower().rpartition(":")
    if not name or not port.isdigit():  # no port given
        name = host.strip().lower()
    return name in ALLOWED_HOSTS


class LoopbackHostMiddleware:
    """ASGI middleware: HTTP 400 with a JSON message for a request to a foreign host."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        host = headers.get(b"host", b"").decode("latin-1")
        if host_allowed(host):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        body = json.dumps({"error": f"host {host!r} is not this machine: the page answers only localhost "
                                    f"and 127.0.0.1"}).encode()
        await send({"type": "http.response.start", "status": 400,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})
