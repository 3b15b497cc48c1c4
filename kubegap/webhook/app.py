"""The Flask app: HTTP in front of the pure admission logic, plus health, readiness and metrics."""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from dataclasses import dataclass, field

from flask import Flask, Response, request

from kubegap import policy
from kubegap.config import Settings
from kubegap.webhook.actions import check_policy_ids, parse_config
from kubegap.webhook.admission import Reviewer, request_timeout
from kubegap.webhook.engines import build_engines
from kubegap.webhook.metrics import BAD_REQUESTS, POLICIES, Metrics
from kubegap.webhook.review import MAX_BODY_BYTES, BadReview, decode
from kubegap.workloads import SUPPORTED_KINDS

log = logging.getLogger(__name__)

_CHUNK = 64 * 1024
_JSON = "application/json"
_PROMETHEUS = "text/plain; version=0.0.4; charset=utf-8"


@dataclass(slots=True)
class ServerState:
    """What outlives one request: the counters and whether the server is shutting down."""

    metrics: Metrics = field(default_factory=Metrics)
    draining: threading.Event = field(default_factory=threading.Event)


def build_reviewer(settings: Settings, metrics: Metrics) -> Reviewer:
    """Validate the `webhook:` section and compile every engine; PolicyError before anything is served."""
    config = parse_config(settings.webhook)
    check_policy_ids(config, (p.id for p in policy.load(settings.policy_dirs)))
    engines = build_engines(settings, config)
    metrics.set(POLICIES, engines.policies)
    log.info("loaded %d policies into %d engine(s)", engines.policies, engines.distinct)
    return Reviewer(engines, config, ((k.group, k.kind) for k in SUPPORTED_KINDS), metrics)


def create_app(
    settings: Settings, reviewer: Reviewer | None = None, state: ServerState | None = None
) -> Flask:
    """The webhook app; `reviewer` replaces the one built from `settings` (its metrics are served)."""
    state = state or ServerState(metrics=reviewer.metrics if reviewer else Metrics())
    reviewer = reviewer or build_reviewer(settings, state.metrics)
    app = Flask("kubegap.webhook")

    @app.post("/validate")
    def validate() -> Response:
        started = time.monotonic()
        timeout = request.args.get("timeout")
        try:
            if request.mimetype != _JSON:
                raise _Refused(400, "content-type", f"Content-Type must be {_JSON}")
            body = _read_body(started + request_timeout(timeout))
            outcome = reviewer.review(decode(body), timeout, started)
        except _Refused as refused:
            return _refuse(state, refused.status, refused.reason, str(refused))
        except BadReview as err:
            return _refuse(state, 400, "malformed", str(err))
        return Response(json.dumps(outcome.review, separators=(",", ":")), 200, mimetype=_JSON)

    @app.get("/healthz")
    def healthz() -> Response:
        return Response("ok\n", 200, mimetype="text/plain")

    @app.get("/readyz")
    def readyz() -> Response:
        # Policies are compiled before the app exists, so only shutting down makes the server unready.
        if state.draining.is_set():
            return Response("shutting down\n", 503, mimetype="text/plain")
        return Response("ok\n", 200, mimetype="text/plain")

    @app.get("/metrics")
    def metrics() -> Response:
        return Response(state.metrics.render(), 200, content_type=_PROMETHEUS)

    return app


class _Refused(Exception):
    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.status, self.reason = status, reason


def _read_body(deadline: float) -> bytes:
    """The body, refused past MAX_BODY_BYTES (checked while reading: chunked bodies are bounded too) or
    when it has not arrived by the time the API server stops waiting (a trickling client must not hold a
    worker thread for ever)."""
    if request.content_length is not None and request.content_length > MAX_BODY_BYTES:
        raise _Refused(413, "too-large", f"request body exceeds {MAX_BODY_BYTES} bytes")
    given = request.environ.get("gunicorn.socket")
    sock = given if isinstance(given, socket.socket) else None
    previous = sock.gettimeout() if sock else None
    parts: list[bytes] = []
    size = 0
    try:
        while True:
            if sock:
                sock.settimeout(max(deadline - time.monotonic(), 0.001))
            if not (chunk := request.stream.read(_CHUNK)):
                return b"".join(parts)
            size += len(chunk)
            if size > MAX_BODY_BYTES:
                raise _Refused(413, "too-large", f"request body exceeds {MAX_BODY_BYTES} bytes")
            parts.append(chunk)
    except TimeoutError as err:
        raise _Refused(408, "timeout", "request body did not arrive before the request's timeout") from err
    finally:
        if sock:
            sock.settimeout(previous)


def _refuse(state: ServerState, status: int, reason: str, message: str) -> Response:
    state.metrics.inc(BAD_REQUESTS, (reason,))
    log.info("refused request: %s", message, extra={"fields": {"refused": status, "reason": message}})
    response = Response(message + "\n", status, mimetype="text/plain")
    if status in (408, 413):
        response.headers["Connection"] = "close"  # the rest of the body is never read
    return response
