"""The Flask app: HTTP in front of the pure admission logic, plus health, readiness and metrics."""

from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import dataclass, field

from flask import Flask, Response, request

from kubegap import policy
from kubegap.config import Settings
from kubegap.webhook.actions import check_policy_ids, parse_config
from kubegap.webhook.admission import Reviewer
from kubegap.webhook.engines import build_engines
from kubegap.webhook.metrics import BAD_REQUESTS, POLICIES, Metrics
from kubegap.webhook.review import MAX_BODY_BYTES, BadReview, decode
from kubegap.workloads import SUPPORTED_KINDS

log = logging.getLogger(__name__)

_CHUNK = 64 * 1024
_JSON = "application/json"


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
    state = state or ServerState()
    reviewer = reviewer or build_reviewer(settings, state.metrics)
    app = Flask("kubegap.webhook")

    @app.post("/validate")
    def validate() -> Response:
        started = time.monotonic()
        if request.mimetype != _JSON:
            return _refuse(state, 400, "content-type", f"Content-Type must be {_JSON}")
        body = _read_body()
        if body is None:
            return _refuse(state, 413, "too-large", f"request body exceeds {MAX_BODY_BYTES} bytes")
        try:
            outcome = reviewer.review(decode(body), request.args.get("timeout"), started)
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


_PROMETHEUS = "text/plain; version=0.0.4; charset=utf-8"


def _read_body() -> bytes | None:
    """The body, or None past MAX_BODY_BYTES: checked while reading, so chunked bodies are bounded too."""
    if request.content_length is not None and request.content_length > MAX_BODY_BYTES:
        return None
    parts: list[bytes] = []
    size = 0
    while chunk := request.stream.read(_CHUNK):
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            return None
        parts.append(chunk)
    return b"".join(parts)


def _refuse(state: ServerState, status: int, reason: str, message: str) -> Response:
    state.metrics.inc(BAD_REQUESTS, (reason,))
    log.info("refused request: %s", message, extra={"fields": {"refused": status, "reason": message}})
    response = Response(message + "\n", status, mimetype="text/plain")
    if status == 413:
        response.headers["Connection"] = "close"  # the rest of the body is never read
    return response
