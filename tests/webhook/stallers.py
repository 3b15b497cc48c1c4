"""Clients that hold connections without finishing a request, as idle API server connections and slow or
hostile clients do: `idle` ones complete the TLS handshake and send nothing, `trickling` ones send a
request head one byte at a time and never finish it. A server that parks a thread on each of them stops
answering everyone else. Used by the end-to-end tests and by benchmarks/bench_webhook.py.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
from collections.abc import Callable

_HEAD = (
    b"POST /validate?timeout=10s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    b"Content-Length: 1000\r\nX-Padding: " + b"p" * 4096
)


class Stallers:
    """`idle` + `trickling` TLS connections to 127.0.0.1:`port`, held until stop(); a trickling connection
    the server closes is opened again, so the pressure lasts for the whole run."""

    def __init__(
        self, port: int, context: Callable[[], ssl.SSLContext], idle: int, trickling: int, every: float = 0.2
    ) -> None:
        self.port, self._context, self._every = port, context, every
        self.unanswered = 0  # handshakes the server did not complete in time
        self.idle = [self._open() for _ in range(idle)]
        self.trickling = [self._open() for _ in range(trickling)]
        self.reopened = 0  # trickling connections the server closed
        self._sent = [0] * trickling
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._trickle, daemon=True)
        self._thread.start()

    def _open(self) -> socket.socket:
        """A connection past its TLS handshake; one the server leaves unanswered is held all the same."""
        raw = socket.create_connection(("127.0.0.1", self.port), timeout=1)
        try:
            tls = self._context().wrap_socket(raw, server_hostname="127.0.0.1")
        except TimeoutError:
            self.unanswered += 1  # a server whose threads are all taken does not even shake hands
            return raw
        tls.settimeout(2)
        return tls

    def _trickle(self) -> None:
        while not self._stop.wait(self._every):
            for index, tls in enumerate(self.trickling):
                try:
                    tls.sendall(_HEAD[self._sent[index] % len(_HEAD) : self._sent[index] % len(_HEAD) + 1])
                    self._sent[index] += 1
                except OSError:
                    tls.close()
                    self.reopened += 1
                    self._sent[index] = 0
                    with contextlib.suppress(OSError):  # the server is gone or full: again on the next tick
                        self.trickling[index] = self._open()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)
        for tls in self.idle + self.trickling:
            tls.close()
