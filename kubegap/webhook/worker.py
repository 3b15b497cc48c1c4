"""gunicorn's asyncio worker, made to stop promptly while clients hold idle connections.

gunicorn's ASGI worker waits, when it stops, for every open connection to close, up to the graceful
timeout; the API server keeps idle connections to its webhooks open, so every stop would take the whole
timeout (the thread worker closes them after a short linger). Here the worker remembers its connections
and, once it has stopped accepting, closes the idle ones at once: those waiting for a request, or still
reading a request head, with nothing left to send. They are aborted: a graceful TLS close would wait for
the client's close_notify, and in tests it let a request arriving meanwhile be read and then answered 500.
A request already read is answered, with `Connection: close`, and then its connection closes.
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


class Worker(ASGIWorker):  # type: ignore[misc]  # gunicorn is untyped
    def _setup_event_loop(self) -> None:
        self.loop = _Loop()
        asyncio.set_event_loop(self.loop)

    async def _shutdown(self) -> None:
        for server in self.servers:
            server.close()  # no new connection; gunicorn's own shutdown closes them again, harmlessly
        for protocol in list(self.loop.protocols):
            transport = getattr(protocol, "transport", None)
            if transport is not None and _idle(protocol) and not transport.get_write_buffer_size():
                transport.abort()  # close() would wait for a TLS close_notify an idle client never sends
        await super()._shutdown()  # waits for the others: each closes after its answer, as not alive


def _idle(protocol: Any) -> bool:
    """Between requests, or still reading a request head: no request taken in. The flags are gunicorn
    27's; without them no connection counts as idle, and the stop waits as gunicorn's own would."""
    ready = getattr(protocol, "_request_ready", None)
    return bool(getattr(protocol, "_awaiting_request", False)) and ready is not None and not ready.is_set()
