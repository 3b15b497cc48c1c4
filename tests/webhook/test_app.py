"""The ASGI app called in process: status codes, limits, health, readiness and metrics."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from kubegap.config import Settings
from kubegap.webhook import app as app_module
from kubegap.webhook import create_app
from kubegap.webhook.admission import Reviewer
from kubegap.webhook.app import ServerState, WebhookApp
from kubegap.webhook.metrics import BAD_REASONS, Metrics
from kubegap.webhook.review import MAX_BODY_BYTES

from .asgi import STALL, Reply, call, call_together
from .conftest import PRICED_HIGH, payload
from .exposition import total
from .test_admission import FakeEngine, _check_contract, _fake_reviewer

MakeReviewer = Callable[..., Reviewer]
JSON = {"Content-Type": "application/json"}


@pytest.fixture
def state() -> ServerState:
    return ServerState(metrics=Metrics())


@pytest.fixture
def client(reviewer: MakeReviewer, state: ServerState) -> WebhookApp:
    return create_app(Settings(), reviewer({"preset": "enforce"}, state.metrics), state)


def _post(client: WebhookApp, body: bytes, headers: dict[str, str] | None = None, query: str = "") -> Reply:
    return call(client, "POST", "/validate", body, JSON if headers is None else headers, query)


def test_a_review_gets_a_200_admission_review(client: WebhookApp) -> None:
    review = payload("pod-create.json")
    reply = _post(client, json.dumps(review).encode(), query="?timeout=10s")
    assert reply.status == 200 and reply.headers["content-type"] == "application/json"
    response = _check_contract(reply.json(), review["request"]["uid"])
    assert response["allowed"] is False and response["status"]["code"] == 403


def test_the_app_factory_builds_its_own_engine_from_settings() -> None:
    app = create_app(Settings(webhook={"preset": "enforce"}, skip=("gpu-nic-topology",), impact=PRICED_HIGH))
    assert isinstance(app, WebhookApp)
    reply = _post(app, json.dumps(payload("job-update.json")).encode())
    assert reply.status == 200
    assert "gpu-nic-topology" not in reply.text
    assert "restart-budget" in reply.json()["response"]["status"]["message"]


def _deep_review(depth: int) -> bytes:
    review = json.dumps(payload("pod-create.json"))
    return review.replace('"labels": {', '"labels": {"deep": ' + "[" * depth + "]" * depth + ", ", 1).encode()


def _huge_int_review(digits: int) -> bytes:
    review = json.dumps(payload("pod-create.json"))
    return review.replace('"labels": {', '"labels": {"n": ' + "9" * digits + ", ", 1).encode()


BAD = [
    ("text/plain", b"{}", {"Content-Type": "text/plain"}, 400, "content-type", "Content-Type must be"),
    ("no content type", b"{}", {}, 400, "content-type", "Content-Type must be"),
    ("empty", b"", JSON, 400, "malformed", "request body is empty"),
    ("not json", b"apiVersion: v1", JSON, 400, "malformed", "not JSON"),
    ("deep", b"[" * 50_000 + b"]" * 50_000, JSON, 400, "malformed", "nested too deeply"),
    ("deep object", _deep_review(5_000), JSON, 400, "malformed", "nested too deeply"),
    ("huge int", b'{"n": ' + b"1" * 5000 + b"}", JSON, 400, "malformed", "number out of range"),
    ("100,000-digit int in the object", _huge_int_review(100_000), JSON, 400, "malformed",
     "number out of range"),
    ("4,000-digit int in the object", _huge_int_review(4_000), JSON, 400, "malformed", "number out of range"),
    ("v1beta1", b'{"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview"}', JSON, 400,
     "malformed", "expected apiVersion admission.k8s.io/v1"),
    ("no uid", json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
     "request": {"kind": {"group": "", "version": "v1", "kind": "Pod"}}}).encode(), JSON, 400, "malformed",
     "request.uid"),
    ("too large", b" " * (MAX_BODY_BYTES + 1), JSON, 413, "too-large", "exceeds"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("case", "body", "headers", "status", "reason", "text"), BAD, ids=[c[0] for c in BAD]
)
def test_bad_requests_are_refused_with_a_clear_message(
    client: WebhookApp,
    state: ServerState,
    case: str,
    body: bytes,
    headers: dict[str, str],
    status: int,
    reason: str,
    text: str,
) -> None:
    reply = _post(client, body, headers)
    assert reply.status == status
    assert text in reply.text
    assert "Traceback" not in reply.text
    text = call(client, "GET", "/metrics").text
    assert reason in BAD_REASONS  # a series that starts at zero
    assert total(text, "kubegap_webhook_bad_requests_total", reason=reason) == 1
    assert total(text, "kubegap_webhook_bad_requests_total") == 1


def test_a_null_object_on_create_is_a_400(client: WebhookApp) -> None:
    review = payload("job-update.json")
    review["request"]["object"] = None
    assert _post(client, json.dumps(review).encode()).status == 400


class Endless:
    """A chunked body that never ends; counts what the app reads of it."""

    def __init__(self) -> None:
        self.read_bytes = 0

    def __iter__(self) -> Iterator[bytes]:
        while True:
            self.read_bytes += 64 * 1024
            yield b"\0" * (64 * 1024)


def test_a_chunked_body_is_cut_off_at_the_limit(client: WebhookApp) -> None:
    stream = Endless()
    reply = _post(client, stream)  # type: ignore[arg-type]
    assert reply.status == 413 and b"exceeds" in reply.body
    assert reply.headers["connection"] == "close"  # the rest of the body is never read
    assert MAX_BODY_BYTES < stream.read_bytes <= MAX_BODY_BYTES + 2 * 64 * 1024


def test_a_chunked_review_within_the_limit_is_answered(client: WebhookApp) -> None:
    review = payload("jobset-create.json")
    body = json.dumps(review).encode()
    reply = call(client, "POST", "/validate", [body[:1000], body[1000:5000], body[5000:]], JSON)
    assert reply.status == 200
    _check_contract(reply.json(), review["request"]["uid"])


def test_a_declared_oversized_body_is_refused_before_it_is_read(client: WebhookApp) -> None:
    headers = {**JSON, "Content-Length": str(MAX_BODY_BYTES + 1)}
    reply = call(client, "POST", "/validate", iter([STALL]), headers)  # the body never comes
    assert reply.status == 413 and reply.headers["connection"] == "close"


def test_a_body_that_stops_arriving_is_a_408_at_the_requests_timeout(client: WebhookApp) -> None:
    # the first part arrives, the rest never does: the app's own deadline ends the wait
    reply = call(client, "POST", "/validate", iter([b'{"apiVersion": ', STALL]), JSON, "?timeout=1s")
    assert reply.status == 408 and b"did not arrive" in reply.body


def test_a_client_that_disconnects_mid_body_is_not_reviewed(client: WebhookApp, state: ServerState) -> None:
    messages = iter([{"type": "http.request", "body": b"{", "more_body": True}, {"type": "http.disconnect"}])
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return next(messages)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/validate", "query_string": b"",
             "headers": [(b"content-type", b"application/json")]}  # fmt: skip
    asyncio.run(client(scope, receive, send))
    assert sent[0]["status"] == 408
    assert total(state.metrics.render(), "kubegap_webhook_requests_total") == 0


def test_a_six_mib_update_is_accepted(client: WebhookApp) -> None:
    review = payload("job-update.json")
    blob = "x" * (3 * 1024 * 1024)  # the largest object the API server accepts, twice
    review["request"]["object"]["metadata"]["annotations"] = {"example.com/blob": blob}
    review["request"]["oldObject"]["metadata"]["annotations"] = {"example.com/blob": blob}
    body = json.dumps(review).encode()
    assert 6 * 1024 * 1024 < len(body) <= MAX_BODY_BYTES
    reply = _post(client, body, query="?timeout=10s")
    assert reply.status == 200
    _check_contract(reply.json(), review["request"]["uid"])


def test_an_internal_error_is_still_a_valid_answer_per_on_error(state: ServerState) -> None:
    failing = _fake_reviewer(FakeEngine(RuntimeError("boom at line 7")), {"onError": "deny"})
    client = create_app(Settings(), failing, state)
    review = payload("pod-create.json")
    reply = _post(client, json.dumps(review).encode())
    assert reply.status == 200
    response = _check_contract(reply.json(), review["request"]["uid"])
    assert response["allowed"] is False and "boom" not in response["status"]["message"]


def test_health_and_readiness_follow_the_drain(client: WebhookApp, state: ServerState) -> None:
    assert call(client, "GET", "/healthz").status == 200
    assert call(client, "GET", "/readyz").status == 200
    state.draining.set()
    assert call(client, "GET", "/readyz").status == 503
    assert call(client, "GET", "/healthz").status == 200
    assert _post(client, json.dumps(payload("pod-create.json")).encode()).status == 200  # still serving


def test_metrics_are_prometheus_text(client: WebhookApp) -> None:
    _post(client, json.dumps(payload("pytorchjob-create-dryrun.json")).encode())
    reply = call(client, "GET", "/metrics")
    assert reply.status == 200
    assert reply.headers["content-type"].startswith("text/plain; version=0.0.4")
    text = reply.text
    requests = "kubegap_webhook_requests_total"
    assert total(text, requests, decision="allowed", kind="PyTorchJob.kubeflow.org", operation="CREATE") == 1
    assert total(text, requests) == 1
    assert total(text, "kubegap_webhook_request_duration_seconds_count") == 1


@pytest.mark.parametrize(("method", "path", "status"), [("GET", "/validate", 405), ("POST", "/other", 404)])
def test_other_routes_are_refused(client: WebhookApp, method: str, path: str, status: int) -> None:
    assert call(client, method, path).status == status


def test_head_gets_the_headers_without_the_body(client: WebhookApp) -> None:
    reply = call(client, "HEAD", "/healthz")
    assert (reply.status, reply.headers["content-length"], reply.body) == (200, "3", b"")


def test_the_lifespan_starts_and_stops(client: WebhookApp) -> None:
    messages = iter([{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}])
    sent: list[str] = []

    async def receive() -> dict[str, Any]:
        return next(messages)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message["type"])

    asyncio.run(client({"type": "lifespan"}, receive, send))
    assert sent == ["lifespan.startup.complete", "lifespan.shutdown.complete"]


class _Judged(Reviewer):
    """The real reviewer, which also says how many reviews it is judging at once and lets a test hold the
    first one back (kubegap.webhook.app.Lanes)."""

    def __init__(self, real: Reviewer, hold_first: bool) -> None:
        self.__dict__.update(real.__dict__)
        self._lock = threading.Lock()
        self.active = self.most = self.started = 0
        self.hold_first = hold_first
        self.second_started = threading.Event()
        self.first_released: bool | None = None

    def review(self, review: Any, timeout: str | None = None, started: float | None = None) -> Any:
        with self._lock:
            self.active += 1
            self.started += 1
            order = self.started
            self.most = max(self.most, self.active)
        try:
            if order == 2:
                self.second_started.set()
            if self.hold_first and order == 1:
                self.first_released = self.second_started.wait(10)  # released only if the second ran
            else:
                time.sleep(0.02)  # the interpreter lock is free meanwhile: threads would overlap here
            return super().review(review, timeout, started)
        finally:
            with self._lock:
                self.active -= 1


def _judged(reviewer: MakeReviewer, state: ServerState, hold_first: bool) -> tuple[WebhookApp, _Judged]:
    judged = _Judged(reviewer({"preset": "enforce"}, state.metrics), hold_first)
    return create_app(Settings(), judged, state, threads=4), judged


def test_reviews_are_judged_one_at_a_time_however_many_threads(
    reviewer: MakeReviewer, state: ServerState, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(app_module, "ALONE_SECONDS", 30.0)  # none of these is slow
    app, judged = _judged(reviewer, state, hold_first=False)
    bodies = [json.dumps(payload("pod-create.json")).encode()] * 4
    replies = call_together(app, "POST", "/validate", bodies, JSON)
    assert [r.status for r in replies] == [200] * 4 and judged.started == 4
    assert judged.most == 1


def test_a_slow_review_lets_the_next_one_start_beside_it(
    reviewer: MakeReviewer, state: ServerState, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(app_module, "ALONE_SECONDS", 0.01)
    app, judged = _judged(reviewer, state, hold_first=True)
    bodies = [json.dumps(payload("pod-create.json")).encode()] * 2
    replies = call_together(app, "POST", "/validate", bodies, JSON)
    assert [r.status for r in replies] == [200, 200]
    assert judged.first_released is True and judged.most == 2
