"""A Kubernetes API server stand-in for tests: HTTPS on 127.0.0.1 with its own CA and a bearer token.

It speaks the read protocol faithfully enough for the official Python client and for kubectl: discovery
(/api, /api/v1, /apis, /apis/<group>, /apis/<group>/<version>), list (cluster-wide and per namespace) with
limit/continue/resourceVersion/remainingItemCount and label/field selectors, get, Status bodies, and
create/update for resources that allow it (PolicyReports). Faults are injected per resource, namespace or
path; every request is recorded (method, path, query, User-Agent). A SelfSubjectRulesReview is answered
with the rules the test sets (`server.rules`, default: read-only, as `kubegap audit --print-rbac` prints).
See store.py for what is not emulated.

Plain HTTP unless given a `Tls` (the tests use a throwaway CA; `kubegap audit --demo` serves on loopback
without one). Run alone over TLS (used by the benchmark):
`python -m tests.support.apiserver --kubeconfig K --load objects.jsonl`.
"""

from __future__ import annotations

import base64
import contextlib
import json
import socket
import ssl
import threading
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import parse_qsl, urlsplit

import yaml

from kubegap.testserver.routes import Fault, Target, discovery, fault_error, resource_request, target_of
from kubegap.testserver.store import DEFAULT_RESOURCES, ApiError, Resource, Store

__all__ = ["TOKEN", "ApiServer", "Fault", "Request", "Resource", "Tls"]

TOKEN = "kubegap-test-token"
USER = "system:serviceaccount:kubegap:audit"


class Tls(Protocol):
    """Where the server's certificate comes from: a CA that issues one for 127.0.0.1."""

    ca_pem: bytes

    def configure(self, context: ssl.SSLContext) -> None: ...


@dataclass(frozen=True, slots=True)
class Request:
    method: str
    path: str
    query: Mapping[str, str]
    user_agent: str = ""


RULES_REVIEW = "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews"
# What every authenticated user holds (the system:basic-user ClusterRole): creating self-reviews.
BASIC_USER_RULE = {
    "verbs": ["create"],
    "apiGroups": ["authorization.k8s.io"],
    "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
}


def read_only_rules() -> list[dict[str, Any]]:
    """The audit's ClusterRole rules plus the basic-user rule: what a well-set-up agent identity holds."""
    from kubegap.audit.rbac import cluster_role

    return [*cluster_role()["rules"], BASIC_USER_RULE]


@dataclass(slots=True)
class _State:
    store: Store
    token: str
    faults: list[Fault] = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)
    continues: Counter[tuple[str, str]] = field(default_factory=Counter)
    rules: list[dict[str, Any]] = field(default_factory=read_only_rules)  # SelfSubjectRulesReview answer
    rules_incomplete: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)


class ApiServer:
    """`with ApiServer() as server:` serves until the block ends; `server.kubeconfig(path)` for clients."""

    def __init__(
        self, resources: Iterable[Resource] = DEFAULT_RESOURCES, token: str = TOKEN, tls: Tls | None = None
    ) -> None:
        self.state = _State(Store(resources), token)
        self.tls = tls
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle -------------------------------------------------------------------------------------

    def start(self) -> ApiServer:
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        httpd.daemon_threads = True
        if self.tls is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self.tls.configure(context)
            # The handshake happens in the handler thread, so a stalled client cannot block accept().
            httpd.socket = context.wrap_socket(httpd.socket, server_side=True, do_handshake_on_connect=False)
        httpd.state = self.state  # type: ignore[attr-defined]
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        for fault in self.state.faults:  # release held responses so handler threads end
            if fault.gate is not None:
                fault.gate.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> ApiServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self._httpd is not None, "server not started"
        scheme = "https" if self.tls is not None else "http"
        return f"{scheme}://127.0.0.1:{self._httpd.server_address[1]}"

    def kubeconfig(self, path: Path, context: str = "kubegap-test", token: str | None = None) -> Path:
        cluster: dict[str, str] = {"server": self.url}
        if self.tls is not None:
            cluster["certificate-authority-data"] = base64.b64encode(self.tls.ca_pem).decode()
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": context, "cluster": cluster}],
            "users": [{"name": context, "user": {"token": token or self.state.token}}],
            "contexts": [{"name": context, "context": {"cluster": context, "user": context}}],
            "current-context": context,
        }
        path.write_text(yaml.safe_dump(config), encoding="utf-8")
        return path

    # --- content, faults, records ----------------------------------------------------------------------

    @property
    def store(self) -> Store:
        return self.state.store

    def load(self, objects: Iterable[Mapping[str, Any]]) -> None:
        for obj in objects:
            self.store.add(obj)

    def inject(self, fault: Fault) -> Fault:
        with self.state.lock:
            self.state.faults.append(fault)
        return fault

    @property
    def requests(self) -> list[Request]:
        with self.state.lock:
            return list(self.state.requests)

    @property
    def rules(self) -> list[dict[str, Any]]:
        return self.state.rules

    @rules.setter
    def rules(self, rules: list[dict[str, Any]]) -> None:
        self.state.rules = rules

    def writes(self) -> list[Request]:
        return [r for r in self.requests if r.method not in ("GET", "HEAD")]


# --- request handling ------------------------------------------------------------------------------------


class _Dropped(Exception):
    pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in two writes; Nagle would hold the second
    server_version = "kubegap-test-apiserver"

    @property
    def state(self) -> _State:
        return self.server.state  # type: ignore[attr-defined,no-any-return]

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: tests read the request log instead."""

    def handle(self) -> None:
        # Clients that time out or drop leave broken sockets behind: their business, not an error here.
        with contextlib.suppress(ConnectionError, ssl.SSLError, TimeoutError, OSError):
            super().handle()

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_PUT(self) -> None:
        self._serve("PUT")

    def do_DELETE(self) -> None:
        self._serve("DELETE")

    def do_PATCH(self) -> None:
        self._serve("PATCH")

    def _serve(self, method: str) -> None:
        parts = urlsplit(self.path)
        query = dict(parse_qsl(parts.query, keep_blank_values=True))
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        with self.state.lock:
            self.state.requests.append(
                Request(method, parts.path, query, self.headers.get("User-Agent") or "")
            )
        try:
            if self.headers.get("Authorization") != f"Bearer {self.state.token}":
                raise ApiError(401, "Unauthorized", "Unauthorized")
            status, payload = self._route(method, parts.path.rstrip("/") or "/", query, body)
        except ApiError as error:
            self._send(error.code, json.dumps(error.status()).encode(), self._retry_after(error))
        except _Dropped:
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
        else:
            self._send(status, payload)

    @staticmethod
    def _retry_after(error: ApiError) -> dict[str, str]:
        seconds = error.details.get("retryAfterSeconds")
        return {} if seconds is None else {"Retry-After": str(seconds)}

    def _send(self, status: int, payload: bytes, headers: Mapping[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)

    def _route(self, method: str, path: str, query: Mapping[str, str], body: bytes) -> tuple[int, bytes]:
        self._path_faults(path)
        if method == "POST" and path == RULES_REVIEW:
            return self._rules_review(body)
        doc = discovery(self.state.store, path, self.server.server_address)
        if doc is not None:
            return 200, json.dumps(doc).encode()
        target = target_of(self.state.store, method, path, query)
        self._resource_faults(target, query)
        return resource_request(self.state.store, target, query, body)

    def _rules_review(self, body: bytes) -> tuple[int, bytes]:
        """Evaluated and returned, never stored, as the real API server does with review kinds."""
        review = json.loads(body or b"{}")
        if not isinstance(review, dict) or review.get("kind") != "SelfSubjectRulesReview":
            raise ApiError(400, "BadRequest", "the body is not a SelfSubjectRulesReview")
        with self.state.lock:
            rules, incomplete = list(self.state.rules), self.state.rules_incomplete
        review["status"] = {
            "resourceRules": rules,
            "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/api", "/api/*", "/apis/*"]}],
            "incomplete": incomplete,
        }
        return 201, json.dumps(review).encode()

    def _path_faults(self, path: str) -> None:
        for fault in self._fire(lambda f: f.path is not None and path.startswith(f.path)):
            self._act(fault, None)

    def _resource_faults(self, target: Target, query: Mapping[str, str]) -> None:
        resource = target.resource
        key = (resource.group, resource.plural)
        if query.get("continue") and target.verb == "list":
            with self.state.lock:
                self.state.continues[key] += 1
        nth = self.state.continues[key] if query.get("continue") else 0

        def matches(fault: Fault) -> bool:
            if fault.path is not None or (fault.verb is not None and fault.verb != target.verb):
                return False
            if fault.plural is not None and fault.plural != resource.plural:
                return False
            if fault.group is not None and fault.group != resource.group:
                return False
            if fault.on_continue is not None and fault.on_continue != nth:
                return False
            if fault.namespace is not None:
                wide = target.namespace is None and resource.namespaced and target.verb == "list"
                return wide or target.namespace == fault.namespace
            return True

        for fault in self._fire(matches):
            self._act(fault, target)

    def _fire(self, matches: Any) -> list[Fault]:
        fired: list[Fault] = []
        with self.state.lock:
            for fault in self.state.faults:
                if (fault.times is None or fault.fired < fault.times) and matches(fault):
                    fault.fired += 1
                    fired.append(fault)
        return fired

    def _act(self, fault: Fault, target: Target | None) -> None:
        if fault.action == "drop":
            raise _Dropped
        if fault.action == "slow":
            if fault.gate is not None:
                fault.gate.wait(timeout=fault.delay or 30)
            else:
                threading.Event().wait(fault.delay)
            return
        raise fault_error(fault, target, USER)
