"""A plain-HTTP listener that serves `GET /metrics` and nothing else (`kubegap serve --metrics-port`).

A Prometheus that does not trust the webhook's CA scrapes here. The admission endpoint never answers on
this port, so no review travels without TLS. The master binds the socket before forking and every
worker serves it from its event loop, the way gunicorn shares its own listeners: one connection per
scrape, read with a size and time limit, answered, closed.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"  # the format prometheus-client writes (both ports)
HEAD_LIMIT = 8192  # bytes of request head; a scrape sends a few hundred
READ_SECONDS = 10.0  # Prometheus's default scrape timeout


def listen(host: str, port: int) -> socket.socket:
    """The listening socket, made in the master so that every worker accepts on it."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.create_server((host, port), family=family, backlog=64, reuse_port=False)
    sock.setblocking(False)
    return sock


async def serve(sock: socket.socket, render: Callable[[], str]) -> None:
    """Answer scrapes on `sock` until cancelled (the worker cancels its tasks when it stops)."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            async with asyncio.timeout(READ_SECONDS):
                head = await reader.readexactly(1)
                if head.isupper():  # a method; a TLS client's first byte (0x16) is answered at once
                    head += await reader.readuntil(b"\r\n\r\n")
                status, body, content_type = await _answer(head, render)
                writer.write(_response(status, body, content_type, head.startswith(b"HEAD ")))
                await writer.drain()
        except (TimeoutError, ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass  # a client that sent no complete head, or left: nothing to answer
        finally:
            writer.close()

    server = await asyncio.start_server(handle, sock=sock, limit=HEAD_LIMIT)
    async with server:
        await server.serve_forever()


async def _answer(head: bytes, render: Callable[[], str]) -> tuple[int, bytes, str]:
    words = head.split(b"\r\n", 1)[0].split(b" ")
    if len(words) != 3 or not words[2].startswith(b"HTTP/1."):
        return 400, b"bad request\n", "text/plain"
    method, target = words[0], words[1].split(b"?", 1)[0]
    if target != b"/metrics":
        return 404, b"not found: this port serves /metrics only\n", "text/plain"
    if method not in (b"GET", b"HEAD"):
        return 405, b"method not allowed\n", "text/plain"
    # Reading every process's files takes a few milliseconds: not on the loop that reads reviews.
    text = await asyncio.to_thread(render)
    return 200, text.encode(), CONTENT_TYPE


_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed"}


def _response(status: int, body: bytes, content_type: str, head_only: bool) -> bytes:
    lines = [
        f"HTTP/1.1 {status} {_REASONS[status]}",
        f"Content-Type: {content_type}",
        f"Content-Length: {len(body)}",
        "Connection: close",
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + (b"" if head_only else body)
