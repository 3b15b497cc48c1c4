"""Retries with backoff: the client library retries nothing for the audit, this module decides.

- 429, and 503 with Retry-After: the API server's priority-and-fairness filter is shedding load. Wait as
  told (each wait capped), up to `throttle_attempts` times per request and `throttle_budget` seconds per run.
- other 5xx, and connections that drop or time out: retry `attempts` times with capped exponential backoff
  and jitter (reads only; a write that may have landed is not repeated).
- everything else (403, 404, 410, ...) is the caller's to interpret.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kubegap.audit.transport import ApiFailure, Query, Reply, Transport, TransportError

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    attempts: int = 4  # tries of one request on 5xx or a dropped connection
    base_delay: float = 0.5
    max_delay: float = 8.0
    throttle_attempts: int = 10  # client-go retries a throttled request up to 10 times
    max_retry_after: float = 30.0  # one Retry-After is honoured up to this
    throttle_budget: float = 120.0  # all throttling waits of one run together


@dataclass(slots=True)
class RetryStats:
    requests: int = 0
    retries: int = 0
    throttled: int = 0  # 429/503 replies that were waited out
    waited: float = 0.0  # seconds slept on throttling and backoff

    def to_json(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "retries": self.retries,
            "throttled": self.throttled,
            "waitedSeconds": round(self.waited, 3),
        }


class Api:
    """JSON requests over a Transport, with the retry rules above; non-2xx replies raise ApiFailure."""

    def __init__(
        self,
        transport: Transport,
        policy: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        self.transport = transport
        self.policy = policy or RetryPolicy()
        self.stats = RetryStats()
        self._sleep, self._jitter = sleep, jitter
        self._throttle_spent = 0.0
        self._lock = threading.Lock()  # the audit fetches its next page in a thread (kubegap.audit.paging)

    def get(self, path: str, query: Query = ()) -> Any:
        return self._call("GET", path, query, None).json()

    def send(self, method: str, path: str, body: Mapping[str, Any]) -> Any:
        return self._call(method, path, (), body).json()

    def _call(self, method: str, path: str, query: Query, body: Mapping[str, Any] | None) -> Reply:
        failures = throttles = 0
        while True:
            with self._lock:
                self.stats.requests += 1
            try:
                reply = self.transport.request(method, path, query, body)
            except TransportError:
                failures += 1
                if method != "GET" or failures >= self.policy.attempts:
                    raise
                self._backoff(failures, f"{method} {path}: connection failed")
                continue
            if 200 <= reply.status < 300:
                return reply
            wait = self._retry_after(reply)
            if wait is not None:
                throttles += 1
                if throttles > self.policy.throttle_attempts or not self._afford(wait):
                    raise ApiFailure.of(reply, method, path)
                with self._lock:
                    self.stats.throttled += 1
                self._wait(wait, f"{method} {path}: {reply.status}, retry after {wait:g}s")
                continue
            if reply.status >= 500 and method == "GET":
                failures += 1
                if failures < self.policy.attempts:
                    self._backoff(failures, f"{method} {path}: {reply.status}")
                    continue
            raise ApiFailure.of(reply, method, path)

    def _retry_after(self, reply: Reply) -> float | None:
        """The wait a throttling reply asks for; None when the reply is not one to wait out."""
        if reply.status not in (429, 503):
            return None
        header = next((v for k, v in reply.headers.items() if k.lower() == "retry-after"), None)
        if header is None:
            return None if reply.status == 503 else self.policy.base_delay
        try:
            seconds = float(header)
        except ValueError:  # an HTTP date: rare from the API server; wait the cap
            seconds = self.policy.max_retry_after
        return min(max(seconds, 0.0), self.policy.max_retry_after)

    def _afford(self, wait: float) -> bool:
        with self._lock:
            if self._throttle_spent + wait > self.policy.throttle_budget:
                return False
            self._throttle_spent += wait
            return True

    def _backoff(self, failures: int, why: str) -> None:
        delay = min(self.policy.base_delay * 2 ** (failures - 1), self.policy.max_delay)
        self._wait(delay * (0.5 + self._jitter() / 2), why)

    def _wait(self, seconds: float, why: str) -> None:
        log.info("retrying in %.2fs: %s", seconds, why)
        with self._lock:
            self.stats.retries += 1
            self.stats.waited += seconds
        self._sleep(seconds)
