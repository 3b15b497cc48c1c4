"""Open-loop review load for the end-to-end fault tests: `rate` reviews a second for `seconds`, each with its
own uid, over kept-alive TLS connections as the API server keeps them. Every review's fate is recorded, so
a test can tell a review the server never received from one it dropped, by the uids in its log.
"""

from __future__ import annotations

import http.client
import json
import ssl
import threading
import time
from dataclasses import dataclass

from .conftest import payload
from .server import Server


@dataclass(frozen=True, slots=True)
class Outcome:
    uid: str
    sent: float  # monotonic, when the client started sending (or connecting)
    done: float
    status: int | None  # None: no HTTP answer
    allowed: bool | None = None
    error: str = ""
    stage: str = ""  # connect (never sent) | exchange (sent, then the connection failed) | skipped

    @property
    def seconds(self) -> float:
        return self.done - self.sent


class Load:
    def __init__(
        self, server: Server, rate: float, seconds: float, connections: int = 8, timeout: str = "5s"
    ) -> None:
        self.server, self.rate, self.timeout = server, rate, timeout
        self.total = int(rate * seconds)
        # The client gives up when the API server would; a server that stops answering fails the test in
        # bounded time: reviews not sent by the end of the run plus a grace period are recorded as skipped.
        self._wait = float(timeout.rstrip("s")) + 1.0
        self._seconds = seconds + 10.0
        self.connections = connections
        self.outcomes: list[Outcome | None] = [None] * self.total
        self._next = 0
        self._lock = threading.Lock()
        review = payload("pytorchjob-create-dryrun.json")
        review["request"]["uid"] = "@UID@"
        self._template = json.dumps(review).encode()
        self._threads = [threading.Thread(target=self._run, daemon=True) for _ in range(connections)]

    def start(self) -> Load:
        self._start = time.monotonic() + 0.1
        for thread in self._threads:
            thread.start()
        return self

    def join(self) -> list[Outcome]:
        for thread in self._threads:
            thread.join(120)
        assert all(o is not None for o in self.outcomes), "the load did not finish"
        return [o for o in self.outcomes if o is not None]

    def run(self) -> list[Outcome]:
        return self.start().join()

    def finished(self) -> int:
        return sum(o is not None for o in self.outcomes)

    def wait_for(self, count: int, seconds: float = 30) -> None:
        deadline = time.monotonic() + seconds
        while self.finished() < count and time.monotonic() < deadline:
            time.sleep(0.02)

    def _slot(self) -> int | None:
        with self._lock:
            if self._next >= self.total:
                return None
            self._next += 1
            return self._next - 1

    def _run(self) -> None:
        connection = self.server.connection(timeout=self._wait)
        while (slot := self._slot()) is not None:
            delay = self._start + slot / self.rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            if time.monotonic() > self._start + self._seconds:
                now = time.monotonic()
                self.outcomes[slot] = Outcome(f"load-{slot:06d}", now, now, None, stage="skipped")
                continue
            self.outcomes[slot] = self._post(connection, f"load-{slot:06d}")
        connection.close()

    def _post(self, connection: http.client.HTTPSConnection, uid: str) -> Outcome:
        sent = time.monotonic()
        if connection.sock is None:  # new, or closed after `Connection: close` or an error
            try:
                connection.connect()
            except (OSError, ssl.SSLError) as err:
                connection.close()
                return Outcome(uid, sent, time.monotonic(), None, error=repr(err), stage="connect")
        body = self._template.replace(b"@UID@", uid.encode())
        headers = {"Content-Type": "application/json"}
        try:
            connection.request("POST", f"/validate?timeout={self.timeout}", body=body, headers=headers)
            reply = connection.getresponse()
            data = reply.read()
        except (OSError, http.client.HTTPException) as err:
            connection.close()
            return Outcome(uid, sent, time.monotonic(), None, error=repr(err), stage="exchange")
        allowed = json.loads(data)["response"]["allowed"] if reply.status == 200 else None
        return Outcome(uid, sent, time.monotonic(), reply.status, allowed)
