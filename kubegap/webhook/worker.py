"""gunicorn's asyncio worker, made to stop promptly while clients hold idle connections.

gunicorn's ASGI worker waits, when it stops, for every open connection to close, up to the graceful
timeout; the API server keeps idle connections to its webhooks open, so every stop would take the whole
timeout (the thread worker closes them after a short linger). Here the worker remembers its connections
and, once it has stopped accepting, closes the idle ones at once: those waiting for a request, or still
reading a request head, with nothing left to send. They are aborted: a graceful TLS close would wait for
the client's close_notify, and in tests it let a request arriving meanwhile be read and then answered 500.
A request already read is answered, with `Connection: close`, and then its connection closes.

A connection is aborted only once it has been seen idle for `IDLE_SECONDS` with nothing left to send.
One that has just answered is already waiting for its next request, and its answer may still sit in the
socket transport beneath TLS, which the TLS transport's write-buffer size does not count and an abort
throws away, with the review it answers already judged. An idle connection that sends a request
meanwhile has it answered, as above.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import Any

from gunicorn.workers.gasgi import ASGIWorker  # type: ignore[import-untyped]


class _Loop(asyncio.SelectorEventLoop):
    """The standard event loop, keeping a weak set of the protocols of the connections it serves."""

    def __init__(self) -> None:
        super().__init__()
        self.protocols: weakref.WeakSet[Any] = weakref.WeakSet()

    async def create_server(self, protocol_factory: Any, *args: Any, **kwargs: Any) -> asyncio.Server:
        def remembered() -> Any:
            protocol = protocol_factory()
            self.protocols.add(protocol)
            return protocol

        return await super().create_server(remembered, *args, **kwargs)


# How long a connection must be seen idle before it is aborted: far longer than an answer takes to leave
# a socket's buffer, far shorter than the drain.
IDLE_SECONDS = 0.25


class Worker(ASGIWorker):  # type: ignore[misc]  # gunicorn is untyped
    def _setup_event_loop(self) -> None:
        self.loop = _Loop()
        asyncio.set_event_loop(self.loop)

    async def _shutdown(self) -> None:
        for server in self.servers:
            server.close()  # no new connection; gunicorn's own shutdown closes them again, harmlessly
        closing = self.loop.create_task(self._abort_idle())
        try:
            await super()._shutdown()  # waits for the others: each closes after its answer, as not alive
        finally:
            closing.cancel()

    async def _abort_idle(self) -> None:
        """Abort each connection once it has been idle for IDLE_SECONDS with nothing left to send."""
        since: dict[int, float] = {}
        while True:
            now = self.loop.time()
            for protocol in list(self.loop.protocols):
                transport = getattr(protocol, "transport", None)
                if transport is None or transport.is_closing():
                    continue
                if not _idle(protocol) or _unsent(transport):
                    since.pop(id(protocol), None)
                elif now - since.setdefault(id(protocol), now) >= IDLE_SECONDS:
                    transport.abort()  # close() would wait for a TLS close_notify an idle client never sends
            await asyncio.sleep(IDLE_SECONDS / 5)


def _unsent(transport: Any) -> int:
    """Bytes the transport still holds for the client. A TLS transport counts its own buffers only; the
    socket transport beneath it, where encrypted answers wait while the socket is full, is asyncio's
    (3.11-3.13 `_ssl_protocol._transport`): where it cannot be found, the idle time stands in for it."""
    below = getattr(getattr(transport, "_ssl_protocol", None), "_transport", None)
    held = below.get_write_buffer_size() if below is not None else 0
    return int(transport.get_write_buffer_size()) + int(held)


def _idle(protocol: Any) -> bool:
    """Between requests, or still reading a request head: no request taken in. The flags are gunicorn
    27's; without them no connection counts as idle, and the stop waits as gunicorn's own would."""
    ready = getattr(protocol, "_request_ready", None)
    return bool(getattr(protocol, "_awaiting_request", False)) and ready is not None and not ready.is_set()
