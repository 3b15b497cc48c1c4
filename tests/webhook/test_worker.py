"""The worker's stop: what a TLS connection still owes its client is counted down to the socket, so an
idle connection is never aborted with an answer unsent (kubegap/webhook/worker.py)."""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path
from typing import Any

from kubegap.webhook.worker import _unsent

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
