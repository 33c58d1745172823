"""Answer only requests addressed to this machine, from its own page: guards against DNS
rebinding and cross-site requests.

The page listens on 127.0.0.1 alone, but a web page elsewhere can point a name
it controls at 127.0.0.1 and then read the answers as its own origin. The
browser still sends that foreign name in the ``Host`` header, so a request whose
host is not ``localhost`` or ``127.0.0.1`` (any port) gets HTTP 400 instead.

Any page the user visits may also send requests to the page's port (a form, a
``text/plain`` fetch): a foreign ``Origin`` gets 403, and a POST not declared
``application/json`` gets 415 (:class:`SameOriginMiddleware`).

>>> host_allowed("127.0.0.1:8765"), host_allowed("localhost"), host_allowed("evil.example:8765")
(True, True, False)
"""

from __future__ import annotations

import json

__all__ = ["ALLOWED_HOSTS", "LoopbackHostMiddleware", "SameOriginMiddleware", "host_allowed", "json_content_type",
           "origin_allowed"]

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
        await _refuse(send, 400, f"host {host!r} is not this machine: the page answers only localhost "
                                 f"and 127.0.0.1")


def origin_allowed(origin: str | None, host: str) -> bool:
    """Whether a request's ``Origin`` header (None: none sent) is the page's own: ``http://`` + its ``Host``.

    A browser sends ``Origin`` with every cross-site request and with the page's own POSTs; a request
    without one comes from a program, not from another site's page.

    >>> origin_allowed(None, "127.0.0.1:8765"), origin_allowed("http://127.0.0.1:8765", "127.0.0.1:8765")
    (True, True)
    >>> origin_allowed("http://evil.com", "127.0.0.1:8765"), origin_allowed("null", "127.0.0.1:8765")
    (False, False)
    >>> origin_allowed("http://localhost:9000", "localhost:8765")  # another local server's page
    False
    """
    if origin is None:
        return True
    return origin.strip().lower() == f"http://{host.strip().lower()}"


def json_content_type(content_type: str) -> bool:
    """Whether a ``Content-Type`` header declares JSON (parameters such as a charset are allowed).

    >>> json_content_type("application/json; charset=utf-8"), json_content_type("text/plain")
    (True, False)
    """
    return content_type.split(";", 1)[0].strip().lower() == "application/json"


class SameOriginMiddleware:
    """ASGI middleware against cross-site requests (any page the user visits may send them).

    A request whose ``Origin`` is not the page's own gets HTTP 403 naming that origin,
    and a POST whose body is not declared ``application/json`` gets 415: a foreign page
    can send a ``text/plain`` POST without asking the browser first, never a JSON one.
    """

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        origin = headers.get(b"origin")
        origin_text = None if origin is None else origin.decode("latin-1")
        host = headers.get(b"host", b"").decode("latin-1")
        if not origin_allowed(origin_text, host):
            await _refuse(send, 403, f"origin {origin_text!r} is not this page's (http://{host}): "
                                     f"requests from other sites are refused")
            return
        content_type = headers.get(b"content-type", b"").decode("latin-1")
        if scope.get("method") == "POST" and not json_content_type(content_type):
            await _refuse(send, 415, f"a POST body must be declared application/json, not "
                                     f"{content_type or 'left undeclared'!r}")
            return
        await self.app(scope, receive, send)


async def _refuse(send, status: int, message: str) -> None:
    """Answer with ``status`` and ``{"error": message}``."""
    body = json.dumps({"error": message}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
