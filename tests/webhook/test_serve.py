"""End to end: the real `kubegap serve` (gunicorn, 2 workers, TLS), called the way the API server calls it."""

from __future__ import annotations

import json
import signal
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubegap import __version__, policy

from .conftest import PAYLOADS, payload
from .exposition import count, labels_of, total
from .server import Server, post_review, running
from .test_admission import _check_contract

pytestmark = pytest.mark.slow
# The fixtures are small jobs the cost model prices low: tiny thresholds keep their priced findings high.
ENFORCE = {
    "webhook": {"preset": "enforce", "onError": "allow"},
    "impact": {"highGpuHours": 1e-9, "mediumGpuHours": 1e-9},
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with running(tmp_path_factory.mktemp("serve"), ENFORCE, drain_seconds=0, access_log=True) as started:
        yield started


def test_reviews_over_one_kept_alive_tls_connection(server: Server) -> None:
    connection = server.connection()
    first_socket = None
    for name in PAYLOADS * 2:
        review = payload(name)
        status, reply = post_review(connection, review)
        assert status == 200, reply
        assert isinstance(reply, dict)
        response = _check_contract(reply, review["request"]["uid"])
        assert response["allowed"] is (name == "pytorchjob-create-dryrun.json")
        first_socket = first_socket or connection.sock
        assert connection.sock is first_socket  # no reconnect: keep-alive held
    connection.close()


def test_metrics_add_up_over_both_workers_at_once(server: Server) -> None:
    review = payload("jobset-create.json")  # as an UPDATE: a series no other test of this module touches
    review["request"].update(operation="UPDATE", oldObject=review["request"]["object"])
    connections = [server.connection() for _ in range(4)]  # spread over the workers
    for connection in connections:
        for _ in range(5):
            assert post_review(connection, review)[0] == 200
        connection.close()
    # No wait: every worker's counts are in the shared files the moment its review is answered.
    for text in (server.get("/metrics")[1], server.plain("GET", "/metrics")[1]):
        requests = "kubegap_webhook_requests_total"
        assert total(text, requests, kind="JobSet.jobset.x-k8s.io", operation="UPDATE") == 20
        assert count(text, requests, kind="Job.batch.volcano.sh", decision="denied", operation="CREATE") == 1
        assert total(text, "kubegap_webhook_policies_loaded") == len(policy.load())
        (build,) = labels_of(text, "kubegap_build_info")
        assert build["version"] == __version__ and len(build["policySet"]) == 12


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("GET", "/validate", 404),
        ("POST", "/validate", 404),
        ("GET", "/healthz", 404),
        ("POST", "/metrics", 405),
    ],
)
def test_the_plain_port_serves_metrics_only(server: Server, method: str, path: str, status: int) -> None:
    assert server.plain(method, path)[0] == status
    assert server.plain("HEAD", "/metrics") == (200, "")


def test_the_plain_port_never_speaks_tls(server: Server) -> None:
    raw = socket.create_connection(("127.0.0.1", server.metrics_port), timeout=5)
    with pytest.raises((ssl.SSLError, ConnectionError)):
        server.certificates.client_context().wrap_socket(raw, server_hostname="127.0.0.1")
    raw.close()


def test_every_log_line_is_json_gunicorn_s_included(server: Server) -> None:
    assert server.get("/healthz")[0] == 200
    deadline = time.monotonic() + 10  # the worker writes the access line after the answer has left
    while '"path":"/healthz"' not in server.logs() and time.monotonic() < deadline:
        time.sleep(0.05)
    lines = [json.loads(line) for line in server.logs().splitlines() if line.strip()]
    loggers = {line["logger"] for line in lines}
    assert {"gunicorn.error", "gunicorn.access", "kubegap.webhook.admission"} <= loggers
    assert any(line.get("message", "").startswith("Booting worker") for line in lines)
    access = [line for line in lines if line.get("event") == "access" and line["path"] == "/healthz"]
    assert access and access[-1]["status"] == 200 and access[-1]["method"] == "GET"
    assert access[-1]["duration_ms"] >= 0 and "timeout=" not in json.dumps(access)


def test_bad_requests_over_the_wire(server: Server) -> None:
    connection = server.connection()
    assert post_review(connection, b"{not json")[0] == 400
    assert (
        post_review(connection, b'{"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview"}')[0]
        == 400
    )
    connection.request("POST", "/validate", body=b"{}", headers={"Content-Type": "text/plain"})
    reply = connection.getresponse()
    assert (reply.status, reply.read()) == (400, b"Content-Type must be application/json\n")
    review = payload("pod-create.json")
    status, answer = post_review(connection, review)  # the connection survives refusals
    assert status == 200
    assert isinstance(answer, dict)
    _check_contract(answer, review["request"]["uid"])
    connection.close()


def test_an_oversized_chunked_body_is_a_413(server: Server) -> None:
    connection = server.connection(timeout=30)
    chunks = (b" " * (64 * 1024) for _ in range(7 * 16 + 1))  # 7 MiB and one chunk more
    headers = {"Content-Type": "application/json"}
    connection.request("POST", "/validate?timeout=10s", body=chunks, headers=headers, encode_chunked=True)
    reply = connection.getresponse()
    assert reply.status == 413
    assert b"exceeds" in reply.read()
    connection.close()


def test_an_oversized_content_length_is_refused_before_the_body_is_sent(server: Server) -> None:
    tls = _connect(server)
    length = 7 * 1024 * 1024 + 1
    tls.sendall(
        f"POST /validate?timeout=10s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {length}\r\n\r\n".encode()
    )
    reply = _read_http(tls)
    tls.close()
    assert reply.startswith(b"HTTP/1.1 413 ") and b"exceeds" in reply


def _connect(server: Server) -> ssl.SSLSocket:
    raw = socket.create_connection(("127.0.0.1", server.port), timeout=20)
    return server.certificates.client_context().wrap_socket(raw, server_hostname="127.0.0.1")


def test_health_and_readiness(server: Server) -> None:
    assert server.get("/healthz") == (200, "ok\n")
    assert server.get("/readyz") == (200, "ok\n")


def test_certificates_replaced_under_load_fail_no_request(tmp_path: Path) -> None:
    with running(tmp_path, ENFORCE, drain_seconds=0) as server:
        old_der = server.certificates.der
        load = _Load(server, threads=3, limit=600)
        load.start()
        load.wait_for(40)
        server.certificates.rotate(key_later=True)
        new_der = server.certificates.der
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and load.served.count(new_der) < 8:
            time.sleep(0.05)
        done = load.done
        load.wait_for(done + 40)
        load.stop()
    assert load.failures == []
    assert load.served.count(new_der) >= 8, "new connections never got the new certificate"
    assert old_der in load.served
    assert load.done >= 80


class _Load:
    """Bounded load: each thread posts reviews, opening a new connection every few requests (handshakes
    during the rotation) and keeping one connection alive throughout (no failure across it)."""

    def __init__(self, server: Server, threads: int, limit: int) -> None:
        self.server, self.limit = server, limit
        self.failures: list[str] = []
        self.served: list[bytes] = []  # the certificate each new connection was given
        self.done = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, daemon=True) for _ in range(threads)]
        self._review = payload("pytorchjob-create-dryrun.json")

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(30)

    def wait_for(self, count: int) -> None:
        deadline = time.monotonic() + 30
        while self.done < min(count, self.limit) and time.monotonic() < deadline and not self.failures:
            time.sleep(0.02)

    def _run(self) -> None:
        kept = self.server.connection()
        fresh = None
        for index in range(self.limit):
            if self._stop.is_set() or self.done >= self.limit:
                break
            if index % 4 == 0:
                if fresh is not None:
                    fresh.close()
                fresh = self.server.connection()
                fresh.connect()
                assert isinstance(fresh.sock, ssl.SSLSocket)
                with self._lock:
                    self.served.append(fresh.sock.getpeercert(binary_form=True) or b"")
            for connection in (fresh, kept) if index % 2 else (fresh,):
                self._post(connection)
        kept.close()
        if fresh is not None:
            fresh.close()

    def _post(self, connection: Any) -> None:
        try:
            status, reply = post_review(connection, self._review)
            ok = status == 200 and isinstance(reply, dict) and reply["response"]["allowed"] is True
            problem = None if ok else f"{status}: {reply!r}"[:300]
        except (OSError, ssl.SSLError, ValueError) as err:
            problem = f"{type(err).__name__}: {err}"
        with self._lock:
            self.done += 1
            if problem:
                self.failures.append(problem)


def test_sigterm_fails_readiness_and_drains_in_flight_requests(tmp_path: Path) -> None:
    with running(tmp_path, ENFORCE, drain_seconds=1.0) as server:
        review = payload("pytorchjob-create-dryrun.json")
        review["request"]["object"]["metadata"]["annotations"] = {"example.com/padding": "p" * 512 * 1024}
        body = json.dumps(review).encode()
        half = len(body) // 2
        tls = _connect(server)
        head = (
            f"POST /validate?timeout=10s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode()
        tls.sendall(head + body[:half])  # a review in flight when the signal arrives
        server.signal(signal.SIGTERM)
        deadline = time.monotonic() + 10
        readiness = server.get("/readyz")[0]
        while readiness != 503 and time.monotonic() < deadline:
            time.sleep(0.05)
            readiness = server.get("/readyz")[0]
        assert readiness == 503
        assert server.get("/healthz")[0] == 200
        tls.sendall(body[half:])
        reply = _read_http(tls)
        tls.close()
        assert reply.startswith(b"HTTP/1.1 200 ")
        answer = json.loads(reply.split(b"\r\n\r\n", 1)[1])
        assert _check_contract(answer, review["request"]["uid"])["allowed"] is True
        assert server.wait() == 0
    assert '"SIGTERM: not ready; draining for 1.0s before stopping"' in server.logs()


def _read_http(tls: ssl.SSLSocket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = tls.recv(65536)
        assert chunk, "connection closed before a response"
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")
    )
    while len(rest) < length:
        chunk = tls.recv(65536)
        assert chunk
        rest += chunk
    return head + b"\r\n\r\n" + rest


def test_a_body_that_stops_arriving_is_cut_off_at_the_requests_timeout(server: Server) -> None:
    tls = _connect(server)
    tls.sendall(
        b"POST /validate?timeout=1s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b'Content-Length: 1000\r\n\r\n{"apiVersion": '
    )
    reply = _read_http(tls)  # the socket's own 20 s timeout bounds the test
    tls.close()
    assert reply.startswith(b"HTTP/1.1 408 ") and b"did not arrive" in reply
    assert server.get("/healthz")[0] == 200
