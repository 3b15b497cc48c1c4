"""A loopback Kubernetes API server that accepts every write, so that a real Helm install can render a chart.

Helm has no offline `template` action in the library the chart tests use; its install action needs a cluster.
This server answers discovery for the kinds the chart renders, stores what Helm creates (the release record
included) so that `lookup` and a later upgrade see it, and records every request for the tests to inspect.
It emulates no admission, validation, defaulting or resourceVersion semantics: it is a sink, not a cluster.
Standard library only: it runs under the Python of the Helm tool environment.
"""

from __future__ import annotations

import copy
import json
import threading
import urllib.parse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .discovery import (
    BUILTIN_RESOURCES,
    CERT_MANAGER_RESOURCES,
    PROMETHEUS_OPERATOR_RESOURCES,
    Resource,
    document,
)
from .protowire import ProtobufError, decode


@dataclass(slots=True)
class Recorded:
    method: str
    path: str
    query: dict[str, list[str]]
    body: Any

    def to_json(self) -> dict[str, Any]:
        return {"method": self.method, "path": self.path, "query": self.query, "body": self.body}


@dataclass(slots=True)
class _State:
    resources: tuple[Resource, ...]
    git_version: str
    objects: dict[str, dict[str, Any]] = field(default_factory=dict)  # item path -> stored object
    requests: list[Recorded] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    next_version: int = 1


@dataclass(frozen=True, slots=True)
class _Target:
    resource: Resource
    namespace: str | None
    name: str | None

    def collection(self) -> str:
        base = (
            f"/api/{self.resource.version}"
            if not self.resource.group
            else f"/apis/{self.resource.group_version}"
        )
        if self.namespace is not None:
            base += f"/namespaces/{self.namespace}"
        return f"{base}/{self.resource.plural}"

    def item(self, name: str) -> str:
        return f"{self.collection()}/{name}"


def _resolve(resources: Iterable[Resource], path: str) -> _Target | None:
    parts = [p for p in path.split("/") if p]
    if parts[:1] == ["api"] and len(parts) >= 3:
        group, version, rest = "", parts[1], parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 4:
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    namespace: str | None = None
    if len(rest) >= 3 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    for res in resources:
        if (res.group, res.version, res.plural) == (group, version, rest[0]) and len(rest) <= 2:
            return _Target(res, namespace if res.namespaced else None, rest[1] if len(rest) == 2 else None)
    return None


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 merge; strategic-merge directives ($setElementOrder, $patch) are dropped, lists replaced."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key.startswith("$"):
            continue
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def selector_matches(selector: str, labels: Mapping[str, str]) -> bool:
    for term in filter(None, (t.strip() for t in selector.split(","))):
        if "!=" in term:
            key, value = term.split("!=", 1)
            if labels.get(key) == value:
                return False
        elif "=" in term:
            key, value = term.split("=", 1)
            if labels.get(key) != value.lstrip("="):
                return False
        elif labels.get(term) is None:
            return False
    return True


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes; with Nagle on, each response waits for a delayed ACK (~40 ms).
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # quiet: the tests read the recorded requests
        return

    def _send(self, code: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _status(self, code: int, reason: str, message: str) -> None:
        body = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message}
        self._send(code, {**body, "reason": reason, "code": code})

    def _read_body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.command not in ("POST", "PUT", "PATCH"):
            return None  # DeleteOptions and the like: read (the connection is reused), not needed
        if "protobuf" in (self.headers.get("Content-Type") or ""):
            return decode(raw)
        return json.loads(raw) if raw else None

    def _handle(self) -> None:
        url = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(url.query)
        try:
            body = self._read_body()
        except (ValueError, ProtobufError) as exc:
            self._status(415, "UnsupportedMediaType", str(exc))
            return
        state = self.server.state
        with state.lock:
            state.requests.append(Recorded(self.command, url.path, query, body))
        if self.command == "GET" and self._discovery(url.path):
            return
        target = _resolve(state.resources, url.path)
        if target is None:
            self._status(404, "NotFound", f"the server could not find the requested resource ({url.path})")
            return
        with state.lock:
            self._serve(target, query, body)

    def _discovery(self, path: str) -> bool:
        state = self.server.state
        answer = document(state.resources, state.git_version, path.rstrip("/"))
        if answer is not None:
            self._send(200, answer)
        return answer is not None

    def _serve(self, target: _Target, query: Mapping[str, list[str]], body: Any) -> None:
        state = self.server.state
        if self.command == "GET" and target.name is None:
            selector = query.get("labelSelector", [""])[0]
            prefix = target.collection() + "/"
            items = [
                obj
                for path, obj in sorted(state.objects.items())
                if path.startswith(prefix)
                and "/" not in path[len(prefix) :]
                and selector_matches(selector, obj.get("metadata", {}).get("labels") or {})
            ]
            kind = f"{target.resource.kind}List"
            self._send(200, {"kind": kind, "apiVersion": target.resource.group_version, "items": items})
            return
        if self.command == "POST" and target.name is None:
            self._store(target, body, create=True)
            return
        path = target.item(target.name or "")
        stored = state.objects.get(path)
        if self.command == "GET":
            self._found(stored, target)
        elif self.command == "PUT":
            self._store(target, body, create=False)
        elif self.command == "PATCH":
            if stored is None:
                self._found(None, target)
            else:
                self._store(target, merge_patch(stored, body), create=False)
        elif self.command == "DELETE":
            state.objects.pop(path, None)
            self._found(stored, target)
        else:
            self._status(405, "MethodNotAllowed", f"{self.command} is not supported")

    def _found(self, stored: dict[str, Any] | None, target: _Target) -> None:
        if stored is None:
            plural = target.resource.plural
            self._status(404, "NotFound", f'{plural} "{target.name}" not found')
        else:
            self._send(200, stored)

    def _store(self, target: _Target, body: Any, *, create: bool) -> None:
        state = self.server.state
        if not isinstance(body, dict):
            self._status(400, "BadRequest", "the body is not an object")
            return
        meta = body.setdefault("metadata", {})
        name = meta.get("name") or target.name
        path = target.item(str(name))
        if create and path in state.objects:
            self._status(409, "AlreadyExists", f'{target.resource.plural} "{name}" already exists')
            return
        if target.namespace is not None:
            meta["namespace"] = target.namespace
        meta["resourceVersion"] = str(state.next_version)
        meta.setdefault("uid", f"00000000-0000-0000-0000-{state.next_version:012d}")
        state.next_version += 1
        state.objects[path] = body
        self._send(201 if create else 200, body)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, state: _State) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.state = state


_KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- name: sink
  cluster: {{server: "{url}"}}
users:
- name: sink
  user: {{token: sink}}
contexts:
- name: sink
  context: {{cluster: sink, user: sink, namespace: "{namespace}"}}
current-context: sink
"""


class SinkAPIServer:
    """Serve on 127.0.0.1 (plain HTTP: nothing leaves the loopback) until `close()`."""

    def __init__(
        self, *, kube_version: str = "v1.33.0", cert_manager: bool = False, prometheus_operator: bool = False
    ) -> None:
        resources = BUILTIN_RESOURCES + (CERT_MANAGER_RESOURCES if cert_manager else ())
        resources += PROMETHEUS_OPERATOR_RESOURCES if prometheus_operator else ()
        self._state = _State(resources, kube_version)
        self._server = _Server(self._state)
        # A short poll interval: shutdown() waits for the serving loop to notice it.
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def kubeconfig(self, namespace: str) -> str:
        """A kubeconfig whose current context points at this server (YAML text, as Helm's loader wants)."""
        return _KUBECONFIG.format(url=self.url, namespace=namespace)

    def requests(self) -> list[Recorded]:
        with self._state.lock:
            return list(self._state.requests)

    def objects(self) -> dict[str, dict[str, Any]]:
        with self._state.lock:
            return copy.deepcopy(self._state.objects)

    def patch(self, path: str, merge: Mapping[str, Any]) -> bool:
        """Merge into a stored object, as if someone had edited it; False when there is none at `path`."""
        with self._state.lock:
            stored = self._state.objects.get(path)
            if stored is not None:
                self._state.objects[path] = merge_patch(stored, merge)
            return stored is not None

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> SinkAPIServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
