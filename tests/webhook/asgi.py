"""Calling the webhook's ASGI app in process, the way gunicorn's asyncio worker calls it: one request, its
body in chunks (a list, or any iterator: an endless one is a body that never stops; a STALL in it is a
client that stops sending without closing), the reply collected."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

STALL = b"<stall>"


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode()

    def json(self) -> Any:
        return json.loads(self.body)


def call(
    app: Any,
    method: str,
    path: str,
    body: bytes | Iterable[bytes] = b"",
    headers: dict[str, str] | None = None,
    query: str = "",
) -> Reply:
    return asyncio.run(_run(app, *_request(method, path, body, headers, query)))


def call_together(
    app: Any, method: str, path: str, bodies: list[bytes], headers: dict[str, str]
) -> list[Reply]:
    """Requests that arrive together, as on connections the API server holds open: one event loop."""

    async def run_all() -> list[Reply]:
        return list(
            await asyncio.gather(*(_run(app, *_request(method, path, b, headers, "")) for b in bodies))
        )

    return asyncio.run(run_all())


def _request(
    method: str, path: str, body: bytes | Iterable[bytes], headers: dict[str, str] | None, query: str
) -> tuple[dict[str, Any], Iterator[bytes]]:
    given = dict(headers or {})
    if isinstance(body, bytes):
        given.setdefault("Content-Length", str(len(body)))
        chunks: Iterator[bytes] = iter([body])
    else:
        given.setdefault("Transfer-Encoding", "chunked")
        chunks = iter(body)
    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "query_string": query.lstrip("?").encode(),
        "headers": [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in given.items()],
    }
    return scope, chunks


async def _run(app: Any, scope: dict[str, Any], chunks: Iterator[bytes]) -> Reply:
    upcoming = next(chunks, None)
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        nonlocal upcoming
        if upcoming is STALL:
            await asyncio.sleep(20)  # nothing more comes: the app's own deadline must end the wait first
            return {"type": "http.disconnect"}
        chunk, upcoming = upcoming or b"", next(chunks, None)
        return {"type": "http.request", "body": chunk, "more_body": upcoming is not None}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    start, *rest = sent
    headers = {k.decode(): v.decode() for k, v in start["headers"]}
    return Reply(start["status"], headers, b"".join(m.get("body", b"") for m in rest))
