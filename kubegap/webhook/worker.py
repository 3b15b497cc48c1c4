"""gunicorn's asyncio worker, made to stop promptly while clients hold idle connections, and to answer
every request it takes in as it stops.

gunicorn's ASGI worker waits, when it stops, for every open connection to close, up to the graceful
timeout; the API server keeps idle connections to its webhooks open, so every stop would take the whole
timeout (the thread worker closes them after a short linger). Here the worker remembers its connections
from the moment they are accepted and, once it has stopped accepting, closes the idle ones: those still
in their TLS handshake, waiting for a request, or still reading a request head, with nothing left to
send. They are aborted: a graceful TLS close would wait for the client's close_notify, and in tests it
let a request arriving meanwhile be read and then answered 500. A request already read is answered,
with `Connection: close`, and then its connection closes.

A connection is aborted only once it has been seen idle for `IDLE_SECONDS` with nothing left to send.
One that has just answered is already waiting for its next request, and its answer may still sit in the
socket transport beneath TLS, which the TLS transport's write-buffer size does not count and an abort
throws away, with the review it answers already judged. An idle connection that sends a request
meanwhile has it answered, as above.

gunicorn counts a connection only once its TLS handshake is done, and stops the worker (cancelling every
task) as soon as its count is zero. A connection accepted just before the listener closed could finish
its handshake after that count was taken, and have its request read and judged while the worker's tasks
were being cancelled: judged, never answered. So the worker first waits until every connection it
accepted is closing, answered or aborted, and only then lets gunicorn's stop run.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import Any

from gunicorn.asgi.protocol import ASGIProtocol  # type: ignore[import-untyped]
from gunicorn.workers.gasgi import ASGIWorker  # type: ignore[import-untyped]


class _Loop(asyncio.SelectorEventLoop):
    """The standard event loop, keeping a weak set of the transports of gunicorn's HTTP connections, each
    from its accept: the transport is made before the TLS handshake, and the protocol learns of it only
    after. Other connections on the loop (the metrics scrape listener) are left as they are."""

    served: type = ASGIProtocol

    def __init__(self) -> None:
        super().__init__()
        self.connections: weakref.WeakSet[Any] = weakref.WeakSet()

    # Where asyncio (3.11-3.13) makes an accepted connection's transport; kubegap serves TLS only, and the
    # plain path is kept so that the worker assumes nothing of its configuration.
    def _make_ssl_transport(self, rawsock: Any, protocol: Any, *args: Any, **kwargs: Any) -> Any:
        made = super()._make_ssl_transport(rawsock, protocol, *args, **kwargs)  # type: ignore[misc]
        return self._remember(made, protocol)

    def _make_socket_transport(self, sock: Any, protocol: Any, *args: Any, **kwargs: Any) -> Any:
        made = super()._make_socket_transport(sock, protocol, *args, **kwargs)  # type: ignore[misc]
        return self._remember(made, protocol)

    def _remember(self, transport: Any, protocol: Any) -> Any:
        if isinstance(protocol, self.served):
            self.connections.add(transport)
        return transport


# How long a connection must be seen idle before it is aborted: far longer than an answer takes to leave
# a socket's buffer, far shorter than the drain. The stop checks its connections five times as often.
IDLE_SECONDS = 0.25


class Worker(ASGIWorker):  # type: ignore[misc]  # gunicorn is untyped
    def _setup_event_loop(self) -> None:
        self.loop = _Loop()
        asyncio.set_event_loop(self.loop)

    async def _shutdown(self) -> None:
        for server in self.servers:
            server.close()  # no new connection; gunicorn's own shutdown closes them again, harmlessly
        closing = self.loop.create_task(_abort_idle(self.loop.connections))
        try:
            await self._settle()
            await super()._shutdown()  # waits for answers still being sent, then the app's lifespan
        finally:
            closing.cancel()

    async def _settle(self) -> None:
        """Until every connection accepted is closing (answered, as not alive, or aborted as idle), or the
        graceful timeout. The first look comes after a pause: a connection accepted just before the close
        has its transport made by a task already queued, which runs in the meantime."""
        deadline = self.loop.time() + self.cfg.graceful_timeout
        while not self._quick_shutdown and self.loop.time() < deadline:
            await asyncio.sleep(IDLE_SECONDS / 5)
            if all(transport.is_closing() for transport in list(self.loop.connections)):
                return


async def _abort_idle(connections: weakref.WeakSet[Any]) -> None:
    """Abort each connection once it has been idle for IDLE_SECONDS with nothing left to send."""
    loop = asyncio.get_running_loop()
    since: weakref.WeakKeyDictionary[Any, float] = weakref.WeakKeyDictionary()
    while True:
        now = loop.time()
        for transport in list(connections):
            if transport.is_closing():
                continue
            if not _idle(transport.get_protocol()) or _unsent(transport):
                since.pop(transport, None)
            elif now - since.setdefault(transport, now) >= IDLE_SECONDS:
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
    """No request taken in: still in the TLS handshake (the protocol has no transport yet), between
    requests, or still reading a request head. The flags are gunicorn 27's; without them a connection
    that finished its handshake never counts as idle, and the stop waits as gunicorn's own would."""
    if getattr(protocol, "transport", None) is None:
        return True
    ready = getattr(protocol, "_request_ready", None)
    return bool(getattr(protocol, "_awaiting_request", False)) and ready is not None and not ready.is_set()
