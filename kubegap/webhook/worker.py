"""gunicorn's asyncio worker, made to stop promptly while clients hold idle connections.

gunicorn's ASGI worker waits, when it stops, for every open connection to close, up to the graceful
timeout; the API server keeps idle connections to its webhooks open, so every stop would take the whole
timeout (the thread worker closes them after a short linger). Here the worker remembers its connections
and, once it has stopped accepting and no review is in flight, closes the ones left: none of them is in
the middle of an answer. A request that arrives meanwhile is still answered, with `Connection: close`.
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
        deadline = self.loop.time() + self.cfg.graceful_timeout
        while self.asgi.in_flight and self.loop.time() < deadline:
            await asyncio.sleep(0.05)
        for protocol in list(self.loop.protocols):
            transport = getattr(protocol, "transport", None)
            if transport is not None:
                transport.abort()  # close() would wait for a TLS close_notify an idle client never sends
        await super()._shutdown()
