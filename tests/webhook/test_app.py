"""The Flask app through its test client: status codes, limits, health, readiness and metrics."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from werkzeug.test import EnvironBuilder, run_wsgi_app

from kubegap.config import Settings
from kubegap.webhook import create_app
from kubegap.webhook.admission import Reviewer
from kubegap.webhook.app import ServerState
from kubegap.webhook.metrics import Metrics
from kubegap.webhook.review import MAX_BODY_BYTES

from .conftest import PRICED_HIGH, payload
from .test_admission import FakeEngine, _check_contract, _fake_reviewer

MakeReviewer = Callable[..., Reviewer]
JSON = {"Content-Type": "application/json"}


@pytest.fixture
def state() -> ServerState:
    return ServerState(metrics=Metrics())


@pytest.fixture
def client(reviewer: MakeReviewer, state: ServerState) -> FlaskClient:
    return create_app(Settings(), reviewer({"preset": "enforce"}, state.metrics), state).test_client()


def _post(client: FlaskClient, body: bytes, headers: dict[str, str] | None = None, query: str = "") -> Any:
    return client.post(f"/validate{query}", data=body, headers=JSON if headers is None else headers)


def test_a_review_gets_a_200_admission_review(client: FlaskClient) -> None:
    review = payload("pod-create.json")
    reply = _post(client, json.dumps(review).encode(), query="?timeout=10s")
    assert reply.status_code == 200 and reply.mimetype == "application/json"
    response = _check_contract(reply.get_json(), review["request"]["uid"])
    assert response["allowed"] is False and response["status"]["code"] == 403


def test_the_app_factory_builds_its_own_engine_from_settings() -> None:
    app = create_app(Settings(webhook={"preset": "enforce"}, skip=("gpu-nic-topology",), impact=PRICED_HIGH))
    assert isinstance(app, Flask)
    reply = _post(app.test_client(), json.dumps(payload("job-update.json")).encode())
    assert reply.status_code == 200
    assert "gpu-nic-topology" not in reply.get_data(as_text=True)
    assert "restart-budget" in reply.get_json()["response"]["status"]["message"]


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
    client: FlaskClient,
    state: ServerState,
    case: str,
    body: bytes,
    headers: dict[str, str],
    status: int,
    reason: str,
    text: str,
) -> None:
    reply = _post(client, body, headers)
    assert reply.status_code == status
    assert text in reply.get_data(as_text=True)
    assert "Traceback" not in reply.get_data(as_text=True)
    assert f'kubegap_webhook_bad_requests_total{{reason="{reason}"}} 1' in client.get("/metrics").get_data(
        as_text=True
    )


def test_a_null_object_on_create_is_a_400(client: FlaskClient) -> None:
    review = payload("job-update.json")
    review["request"]["object"] = None
    assert _post(client, json.dumps(review).encode()).status_code == 400


class Endless(io.RawIOBase):
    """A chunked body that never ends; counts what the app reads of it."""

    def __init__(self) -> None:
        self.read_bytes = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        size = len(buffer)
        buffer[:size] = b"\0" * size
        self.read_bytes += size
        return size


def _chunked(app: Flask, stream: io.RawIOBase) -> tuple[str, bytes]:
    environ = EnvironBuilder(
        "/validate", method="POST", headers={**JSON, "Transfer-Encoding": "chunked"}
    ).get_environ()
    environ.pop("CONTENT_LENGTH", None)
    environ["wsgi.input"] = stream
    environ["wsgi.input_terminated"] = True  # as gunicorn sets it: the server de-chunks the body
    body, status, _headers = run_wsgi_app(app, environ, buffered=True)
    return status, b"".join(body)


def test_a_chunked_body_is_cut_off_at_the_limit(reviewer: MakeReviewer) -> None:
    app = create_app(Settings(), reviewer())
    stream = Endless()
    status, body = _chunked(app, stream)
    assert status.startswith("413") and b"exceeds" in body
    assert MAX_BODY_BYTES < stream.read_bytes <= MAX_BODY_BYTES + 2 * 64 * 1024


def test_a_chunked_review_within_the_limit_is_answered(reviewer: MakeReviewer) -> None:
    review = payload("jobset-create.json")
    status, body = _chunked(create_app(Settings(), reviewer()), io.BytesIO(json.dumps(review).encode()))
    assert status.startswith("200")
    _check_contract(json.loads(body), review["request"]["uid"])


def test_a_six_mib_update_is_accepted(client: FlaskClient) -> None:
    review = payload("job-update.json")
    blob = "x" * (3 * 1024 * 1024)  # the largest object the API server accepts, twice
    review["request"]["object"]["metadata"]["annotations"] = {"example.com/blob": blob}
    review["request"]["oldObject"]["metadata"]["annotations"] = {"example.com/blob": blob}
    body = json.dumps(review).encode()
    assert 6 * 1024 * 1024 < len(body) <= MAX_BODY_BYTES
    reply = _post(client, body, query="?timeout=10s")
    assert reply.status_code == 200
    _check_contract(reply.get_json(), review["request"]["uid"])


def test_an_internal_error_is_still_a_valid_answer_per_on_error(state: ServerState) -> None:
    failing = _fake_reviewer(FakeEngine(RuntimeError("boom at line 7")), {"onError": "deny"})
    client = create_app(Settings(), failing, state).test_client()
    review = payload("pod-create.json")
    reply = _post(client, json.dumps(review).encode())
    assert reply.status_code == 200
    response = _check_contract(reply.get_json(), review["request"]["uid"])
    assert response["allowed"] is False and "boom" not in response["status"]["message"]


def test_health_and_readiness_follow_the_drain(client: FlaskClient, state: ServerState) -> None:
    assert client.get("/healthz").status_code == 200
    assert client.get("/readyz").status_code == 200
    state.draining.set()
    assert client.get("/readyz").status_code == 503
    assert client.get("/healthz").status_code == 200
    assert _post(client, json.dumps(payload("pod-create.json")).encode()).status_code == 200  # still serving


def test_metrics_are_prometheus_text(client: FlaskClient) -> None:
    _post(client, json.dumps(payload("pytorchjob-create-dryrun.json")).encode())
    reply = client.get("/metrics")
    assert reply.status_code == 200
    assert reply.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    text = reply.get_data(as_text=True)
    assert 'kubegap_webhook_requests_total{decision="allowed",kind="PyTorchJob",operation="CREATE"} 1' in text
    assert "kubegap_webhook_request_duration_seconds_count 1" in text


@pytest.mark.parametrize(("method", "path", "status"), [("GET", "/validate", 405), ("POST", "/other", 404)])
def test_other_routes_are_refused(client: FlaskClient, method: str, path: str, status: int) -> None:
    assert client.open(path, method=method).status_code == status
