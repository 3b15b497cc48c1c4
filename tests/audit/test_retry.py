"""Retry decisions, one reply sequence at a time (a scripted transport: no network, no sleeping)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from kubegap.audit.retry import Api, RetryPolicy
from kubegap.audit.transport import ApiFailure, Query, Reply, TransportError

OK = Reply(200, {}, b'{"ok": true}')


def status(code: int, retry_after: str | None = None) -> Reply:
    headers = {"Retry-After": retry_after} if retry_after is not None else {}
    return Reply(code, headers, b'{"kind": "Status", "reason": "R", "message": "m"}')


class Script:
    """Answers requests from a list; an exception in the list is raised instead of answering."""

    def __init__(self, *replies: Reply | Exception) -> None:
        self.replies = list(replies)
        self.calls = 0

    def request(
        self, method: str, path: str, query: Query = (), body: Mapping[str, Any] | None = None
    ) -> Reply:
        self.calls += 1
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply


RESET = TransportError("GET /x: ProtocolError: connection reset")

# (replies, method, expected sleeps, raises code, calls)
CASES: list[tuple[list[Reply | Exception], str, list[float], int | None, int]] = [
    ([OK], "GET", [], None, 1),
    ([status(429, "2"), status(429, "0"), OK], "GET", [2.0, 0.0], None, 3),
    ([status(429), OK], "GET", [0.5], None, 2),  # no Retry-After: the base delay
    ([status(429, "600"), OK], "GET", [30.0], None, 2),  # capped
    ([status(429, "Wed, 21 Oct 2026 07:28:00 GMT"), OK], "GET", [30.0], None, 2),  # a date: the cap
    ([status(503, "1"), OK], "GET", [1.0], None, 2),
    ([status(503), status(503), OK], "GET", [0.5, 1.0], None, 3),  # 503 without Retry-After: backoff
    ([status(500)] * 4, "GET", [0.5, 1.0, 2.0], 500, 4),
    ([RESET, RESET, OK], "GET", [0.5, 1.0], None, 3),
    ([status(403)], "GET", [], 403, 1),
    ([status(410)], "GET", [], 410, 1),
    ([status(404)], "GET", [], 404, 1),
    ([status(500)], "PUT", [], 500, 1),  # a write that may have landed is not repeated
    ([status(429, "1"), OK], "POST", [1.0], None, 2),  # ... but a throttled one never landed
]


@pytest.mark.parametrize(("replies", "method", "sleeps", "raises", "calls"), CASES)
def test_retry_rules(
    replies: list[Reply | Exception], method: str, sleeps: list[float], raises: int | None, calls: int
) -> None:
    slept: list[float] = []
    script = Script(*replies)
    api = Api(script, RetryPolicy(base_delay=0.5), sleep=slept.append, jitter=lambda: 1.0)
    if raises is None:
        assert (api.get("/x") if method == "GET" else api.send(method, "/x", {})) == {"ok": True}
    else:
        with pytest.raises(ApiFailure) as caught:
            api.get("/x") if method == "GET" else api.send(method, "/x", {})
        assert caught.value.code == raises and caught.value.detail == "m"
    assert (slept, script.calls) == (sleeps, calls)
    assert api.stats.requests == calls and api.stats.retries == len(sleeps)


def test_connection_failures_give_up_after_the_attempts() -> None:
    slept: list[float] = []
    api = Api(Script(RESET, RESET, RESET, RESET), RetryPolicy(), sleep=slept.append, jitter=lambda: 0.0)
    with pytest.raises(TransportError):
        api.get("/x")
    assert len(slept) == 3


def test_throttling_is_bounded_per_request_and_per_run() -> None:
    slept: list[float] = []
    policy = RetryPolicy(throttle_attempts=3, throttle_budget=10.0)
    api = Api(Script(*[status(429, "0")] * 4), policy, sleep=slept.append)
    with pytest.raises(ApiFailure):
        api.get("/x")
    assert slept == [0.0, 0.0, 0.0], "Retry-After: 0 must not spin for ever"
    budget = Api(Script(status(429, "6"), OK, status(429, "6")), policy, sleep=slept.append)
    assert budget.get("/x") == {"ok": True}
    with pytest.raises(ApiFailure):
        budget.get("/y")  # 6 + 6 would pass the 10 s budget of the run
    assert budget.stats.throttled == 1


def test_an_error_without_a_status_body_still_reads() -> None:
    api = Api(Script(Reply(502, {}, b"<html>bad gateway</html>")), RetryPolicy(attempts=1))
    with pytest.raises(ApiFailure) as caught:
        api.get("/x")
    assert (caught.value.code, caught.value.reason) == (502, "Error")
    assert "bad gateway" in caught.value.detail
