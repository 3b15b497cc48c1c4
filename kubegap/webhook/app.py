"""The webhook's HTTP face: an ASGI app in front of the pure admission logic, plus health, readiness and
metrics.

It runs in gunicorn's asyncio worker, so the TLS handshake, the request head and the body of every
connection are read by the event loop: an idle or trickling connection costs a little memory, never a
thread. Only a complete review goes to the evaluation pool (`threads` per worker), so the pool is never
parked on a slow client and a review never waits behind one. The routing is four fixed paths, written
here rather than taken from a web framework, which cost about a fifth of the time of a review.

Reviews are judged one at a time, in the order they were read, by one thread (`Lanes`). Threads share
one interpreter lock, so two reviews judged at once each take about twice as long, and a thread that gives
the lock up waits up to the interpreter's 5 ms switch interval to get it back: at 500 reviews/s, four
threads judging at will made the p99 latency 2-4 times what one thread gives (docs/speed.md). A review
that would wait behind one running longer than `ALONE_SECONDS` (a policy walking long lists, a huge
object) is judged beside it by one of the other `threads - 1` threads instead, so a slow review holds the
others back that long at most.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Awaitable, Callable, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

from kubegap import __version__, jsontext, policy, policyset
from kubegap.config import Settings
from kubegap.kinds import SUPPORTED_KINDS
from kubegap.webhook.actions import check_policy_ids, parse_config
from kubegap.webhook.admission import Reviewer, request_timeout
from kubegap.webhook.engines import build_engines
from kubegap.webhook.metrics import BAD_REQUESTS, BUILD_INFO, POLICIES, Metrics
from kubegap.webhook.review import MAX_BODY_BYTES, BadReview, decode
from kubegap.webhook.scrape import CONTENT_TYPE as _PROMETHEUS

log = logging.getLogger(__name__)

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

_JSON = "application/json"
# How long a review is judged alone before those waiting behind it are judged beside it: a typical review
# takes 1 to 5 ms, so only a slow one reaches this.
ALONE_SECONDS = 0.05
_review_text = jsontext.encoder(separators=(",", ":"))  # built once: json.dumps builds one per call
_TEXT = "text/plain; charset=utf-8"
_READ = ("GET", "HEAD")
_ROUTES = {"/validate": ("POST",), "/healthz": _READ, "/readyz": _READ, "/metrics": _READ}


@dataclass(slots=True)
class ServerState:
    """What outlives one request: the counters and whether the server is shutting down."""

    metrics: Metrics = field(default_factory=Metrics)
    draining: threading.Event = field(default_factory=threading.Event)


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    body: bytes
    content_type: str = _TEXT
    close: bool = False  # the rest of the request body is never read


def build_reviewer(settings: Settings, metrics: Metrics) -> Reviewer:
    """Validate the `webhook:` section and compile every engine; PolicyError before anything is served."""
    config = parse_config(settings.webhook)
    check_policy_ids(config, (p.id for p in policy.load(settings.policy_dirs)))
    engines = build_engines(settings, config)
    metrics.set(POLICIES, engines.policies)
    metrics.set(BUILD_INFO, 1, (__version__, policyset.of_settings(settings)))
    metrics.start_at_zero(((k.group, k.kind) for k in SUPPORTED_KINDS), engines.rules)
    log.info("loaded %d policies into %d engine(s)", engines.policies, engines.distinct)
    return Reviewer(engines, config, ((k.group, k.kind) for k in SUPPORTED_KINDS), metrics)


def create_app(
    settings: Settings,
    reviewer: Reviewer | None = None,
    state: ServerState | None = None,
    threads: int = 4,
) -> WebhookApp:
    """The webhook app; `reviewer` replaces the one built from `settings` (its metrics are served)."""
    state = state or ServerState(metrics=reviewer.metrics if reviewer else Metrics())
    return WebhookApp(reviewer or build_reviewer(settings, state.metrics), state, threads)


class WebhookApp:
    def __init__(self, reviewer: Reviewer, state: ServerState, threads: int) -> None:
        self.reviewer, self.state, self._threads = reviewer, state, threads
        self._lanes: Lanes | None = None  # made where it serves: threads do not survive fork

    async def __call__(self, scope: Message, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] == "http":
            await _send(send, await self._route(scope, receive), scope["method"] == "HEAD")
        else:  # a WebSocket upgrade: nothing here speaks it
            await send({"type": "websocket.close", "code": 1003})

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        # The evaluation pool is left to finish what it holds: shutting it down here cancelled reviews
        # already read (or refused ones read a moment later) with a 500 while the worker drained on
        # SIGTERM. Its threads are joined when the worker process exits.
        while (await receive())["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})

    async def _route(self, scope: Message, receive: Receive) -> Reply:
        path, method = scope["path"], scope["method"]
        if path not in _ROUTES:
            return Reply(404, b"not found\n")
        if method not in _ROUTES[path]:
            return Reply(405, b"method not allowed\n")
        if path == "/validate":
            return await self._validate(scope, receive)
        if path == "/metrics":  # adding up every worker's files takes milliseconds: not on the loop
            return Reply(200, (await asyncio.to_thread(self.state.metrics.render)).encode(), _PROMETHEUS)
        # Policies are compiled before the app exists, so only shutting down makes the server unready.
        if path == "/readyz" and self.state.draining.is_set():
            return Reply(503, b"shutting down\n")
        return Reply(200, b"ok\n")

    async def _validate(self, scope: Message, receive: Receive) -> Reply:
        started = time.monotonic()
        timeout = parse_qs(scope["query_string"].decode("latin-1")).get("timeout", [None])[0]
        headers = {name.lower(): value for name, value in scope["headers"]}
        try:
            length = headers.get(b"content-length")
            deadline = started + request_timeout(timeout)
            # Read (within the limits) even a body refused for its type: the connection then stays usable.
            body = await _read_body(receive, int(length) if length else None, deadline)
            if _mimetype(headers.get(b"content-type", b"")) != _JSON:
                raise _Refused(400, "content-type", f"Content-Type must be {_JSON}")
            answer = await self._evaluate(body, timeout, started)
        except _Refused as refused:
            return self._refuse(refused.status, refused.reason, str(refused))
        except BadReview as err:
            return self._refuse(400, "malformed", str(err))
        return Reply(200, answer, _JSON)

    async def _evaluate(self, body: bytes, timeout: str | None, started: float) -> bytes:
        """The answer, judged in the lane; or beside the lane's review, if that one has run too long and
        this one has not started."""
        lanes = self._lanes = self._lanes or Lanes(self._threads)
        job = lanes.lane.submit(lanes.in_lane, self._answer, body, timeout, started)
        answer = asyncio.wrap_future(job)
        while lanes.spill is not None and not (await asyncio.wait((answer,), timeout=ALONE_SECONDS))[0]:
            if lanes.held() and job.cancel():  # not started, and so never will be in the lane
                loop = asyncio.get_running_loop()
                return await loop.run_in_executor(lanes.spill, self._answer, body, timeout, started)
        return await answer

    def _answer(self, body: bytes, timeout: str | None, started: float) -> bytes:
        """In an evaluation thread: decoding a large review takes as long as judging it."""
        outcome = self.reviewer.review(decode(body), timeout, started)
        return _review_text(outcome.review).encode()

    def _refuse(self, status: int, reason: str, message: str) -> Reply:
        self.state.metrics.inc(BAD_REQUESTS, (reason,))
        log.info("refused request: %s", message, extra={"fields": {"refused": status, "reason": message}})
        return Reply(status, message.encode() + b"\n", close=status in (408, 413))


class Lanes:
    """The lane, one thread that judges reviews in the order they came, and the `threads - 1` threads that
    judge a review beside a slow one."""

    def __init__(self, threads: int) -> None:
        self.lane = ThreadPoolExecutor(1, "kubegap-review")
        self.spill = ThreadPoolExecutor(threads - 1, "kubegap-review") if threads > 1 else None
        self._began: float | None = None  # when the lane's review began; None while the lane is idle

    def in_lane(self, judge: Callable[..., bytes], *args: Any) -> bytes:
        self._began = time.monotonic()
        try:
            return judge(*args)
        finally:
            self._began = None

    def held(self) -> bool:
        """Whether the lane's review has run `ALONE_SECONDS` or more."""
        began = self._began
        return began is not None and time.monotonic() - began >= ALONE_SECONDS


class _Refused(Exception):
    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.status, self.reason = status, reason


async def _read_body(receive: Receive, length: int | None, deadline: float) -> bytes:
    """The body, refused past MAX_BODY_BYTES (before reading it when its length is declared, while reading
    a chunked one) or when it has not arrived by the time the API server stops waiting."""
    if length is not None and length > MAX_BODY_BYTES:
        raise _Refused(413, "too-large", f"request body exceeds {MAX_BODY_BYTES} bytes")
    parts: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(max(deadline - time.monotonic(), 0.001)):
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    raise _Refused(408, "timeout", "the request body was cut off")
                parts.append(chunk := message.get("body", b""))
                size += len(chunk)
                if size > MAX_BODY_BYTES:
                    raise _Refused(413, "too-large", f"request body exceeds {MAX_BODY_BYTES} bytes")
                if not message.get("more_body"):
                    return b"".join(parts)
    except TimeoutError as err:
        raise _Refused(408, "timeout", "request body did not arrive before the request's timeout") from err


def _mimetype(value: bytes) -> str:
    return value.decode("latin-1").split(";", 1)[0].strip().lower()


async def _send(send: Send, reply: Reply, head_only: bool = False) -> None:
    headers = [
        (b"content-type", reply.content_type.encode()),
        (b"content-length", str(len(reply.body)).encode()),
    ]
    if reply.close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": reply.status, "headers": headers})
    await send({"type": "http.response.body", "body": b"" if head_only else reply.body})
