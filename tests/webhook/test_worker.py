"""The worker's stop (kubegap/webhook/worker.py): what a TLS connection still owes its client is counted
down to the socket, so an idle connection is never aborted with an answer unsent; and every connection
accepted, still in its handshake or not, is waited for or aborted before the worker's tasks are cancelled."""

from __future__ import annotations

import asyncio
import socket
import ssl
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

from kubegap.webhook.worker import IDLE_SECONDS, Worker, _abort_idle, _Loop, _unsent

from .server import Certificates


def test_an_answer_waiting_beneath_tls_counts_as_unsent(tmp_path: Path) -> None:
    certificates = Certificates(tmp_path)
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(certificates.cert, certificates.key)

    async def scenario() -> tuple[int, int]:
        served: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

        def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            writer.write(b"x" * 32 * 2**20)  # more than the socket takes while the client reads nothing
            served.set_result(writer.transport)

        server = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=server_context)
        port = server.sockets[0].getsockname()[1]
        _, client = await asyncio.open_connection(
            "127.0.0.1", port, ssl=certificates.client_context(), server_hostname="127.0.0.1"
        )
        transport = await asyncio.wait_for(served, 10)
        await asyncio.sleep(0.2)  # the socket fills; the rest waits in the transports' buffers
        counted = transport.get_write_buffer_size(), _unsent(transport)
        client.close()
        transport.abort()
        server.close()
        return counted

    tls_only, unsent = asyncio.run(scenario())
    assert unsent > tls_only, "bytes waiting beneath TLS were not counted"


class _Served(asyncio.Protocol):
    """Sets `transport` when the connection is made, as gunicorn's protocol does, and has none of its
    request flags: once its handshake is done it never counts as idle."""

    transport: asyncio.BaseTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport


def test_a_connection_still_in_its_handshake_is_held_open_by_the_stop_until_aborted(tmp_path: Path) -> None:
    """gunicorn counts a connection only once its TLS handshake is done. The stop must count it from
    its accept: one that finished its handshake after gunicorn's count was taken had its request judged
    while the worker's tasks were cancelled, and its answer lost."""
    certificates = Certificates(tmp_path)
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(certificates.cert, certificates.key)
    loop = _Loop()
    loop.served = _Served  # what gunicorn's protocol is to the worker

    async def scenario() -> tuple[int, bool, bool, bool, bool]:
        server = await loop.create_server(_Served, "127.0.0.1", 0, ssl=server_context)
        port = server.sockets[0].getsockname()[1]
        other = await loop.create_server(asyncio.Protocol, "127.0.0.1", 0)  # as the metrics listener
        elsewhere = socket.create_connection(("127.0.0.1", other.sockets[0].getsockname()[1]))
        silent = socket.create_connection(("127.0.0.1", port))  # connected; never starts its handshake
        _, talking = await asyncio.open_connection(
            "127.0.0.1", port, ssl=certificates.client_context(), server_hostname="127.0.0.1"
        )
        server.close()
        worker = SimpleNamespace(loop=loop, cfg=SimpleNamespace(graceful_timeout=30), _quick_shutdown=False)
        settling = loop.create_task(Worker._settle(cast(Worker, worker)))  # the fields _settle reads
        await asyncio.sleep(4 * IDLE_SECONDS)
        # Held here, the one in its handshake first: the weak set forgets an aborted connection.
        held = sorted(loop.connections, key=lambda t: t.get_protocol().transport is not None)
        waited = not settling.done()  # both are open, and nothing aborts them yet
        aborting = loop.create_task(_abort_idle(loop.connections))
        await asyncio.sleep(4 * IDLE_SECONDS)
        handshaking, made = held
        silent_aborted, talking_kept = handshaking.is_closing(), not made.is_closing()
        made.close()
        await asyncio.wait_for(settling, 10)  # returns once the last one is closing
        aborting.cancel()
        talking.close()
        silent.close()
        elsewhere.close()
        other.close()
        return len(held), waited, silent_aborted, talking_kept, settling.done()

    try:
        accepted, waited, silent_aborted, talking_kept, settled = loop.run_until_complete(scenario())
    finally:
        loop.close()
    assert accepted == 2, "a connection in its handshake was not remembered, or another listener's was"
    assert waited, "the stop did not wait for open connections"
    assert silent_aborted, "a connection idle in its handshake was not aborted"
    assert talking_kept, "a connection past its handshake, with no request flags, was aborted"
    assert settled
