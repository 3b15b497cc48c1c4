"""`kubegap mcp --http ADDR`: streamable HTTP, only behind a bearer token the user provides.

The token comes from the environment (KUBEGAP_MCP_TOKEN) or a file (--token-file), never from the command
line (where `ps` shows it). Without an address a bare port binds 127.0.0.1; another interface is used only
when named. Every HTTP request must carry `Authorization: Bearer <token>` (compared in constant time);
the SDK's DNS-rebinding protection stays on for loopback addresses.
"""

from __future__ import annotations

import hmac
import logging
import os
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

from kubegap.errors import UsageError

TOKEN_ENV = "KUBEGAP_MCP_TOKEN"
MIN_TOKEN = 16  # characters: a guessable token on an open port is no gate
LOOPBACK = ("127.0.0.1", "localhost", "::1")

log = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


def address(text: str) -> tuple[str, int]:
    """`8765`, `127.0.0.1:8765`, `[::1]:8765` or `0.0.0.0:8765` (binding beyond loopback only when named)."""
    host, _, port = text.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise UsageError(f"--http {text!r}: write PORT or HOST:PORT, e.g. 127.0.0.1:8765")
    return host, int(port)


def token(token_file: str | None) -> str:
    if token_file:
        try:
            value = Path(token_file).read_text("utf-8").strip()
        except OSError as exc:
            raise UsageError(f"--token-file {token_file}: {exc.strerror or exc}") from None
    else:
        value = os.environ.get(TOKEN_ENV, "").strip()
    if not value:
        raise UsageError(f"--http needs a bearer token: set {TOKEN_ENV} or pass --token-file FILE")
    if len(value) < MIN_TOKEN:
        raise UsageError(
            f"the bearer token is shorter than {MIN_TOKEN} characters (try `openssl rand -hex 32`)"
        )
    return value


class BearerGate:
    """ASGI middleware: HTTP requests without the token get 401 and never reach the MCP app."""

    def __init__(self, app: App, secret: str) -> None:
        self.app, self.expected = app, f"Bearer {secret}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                await _unauthorized(send)
                return
        await self.app(scope, receive, send)


async def _unauthorized(send: Send) -> None:
    body = b'{"error": "unauthorized: send Authorization: Bearer <token>"}'
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"www-authenticate", b"Bearer"),
    ]
    await send({"type": "http.response.start", "status": 401, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def serve(server: Any, host: str, port: int, secret: str) -> None:
    """Serve until interrupted; `server` is the MCPServer (typed loosely: the SDK is imported lazily)."""
    import uvicorn

    if host not in LOOPBACK:
        log.warning("serving MCP on %s:%d, beyond this machine; only the bearer token guards it", host, port)
    app = BearerGate(server.streamable_http_app(host=host), secret)
    uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning")).run()
