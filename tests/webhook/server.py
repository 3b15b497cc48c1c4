"""A real `kubegap serve` in a subprocess on 127.0.0.1, and an HTTPS client calling it as the API server does.

Every wait is bounded: a server that does not become ready, or does not stop, fails the test instead of
hanging it, and is killed by its pid.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import trustme

START_SECONDS = 30.0
STOP_SECONDS = 40.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class Certificates:
    """A CA and a serving certificate for 127.0.0.1, replaceable on disk like a mounted Secret."""

    def __init__(self, directory: Path) -> None:
        self.ca = trustme.CA()
        self.cert, self.key = directory / "tls.crt", directory / "tls.key"
        self.der = b""
        self.rotate()

    def rotate(self, key_later: bool = False) -> None:
        """A new leaf; with key_later the files are written one after the other, as a naive tool would."""
        leaf = self.ca.issue_cert("127.0.0.1")
        chain = b"".join(blob.bytes() for blob in leaf.cert_chain_pems)
        if key_later:
            self.cert.write_bytes(chain)
            self.key.write_bytes(leaf.private_key_pem.bytes())
        else:
            for path, data in ((self.cert, chain), (self.key, leaf.private_key_pem.bytes())):
                temporary = path.with_suffix(".new")
                temporary.write_bytes(data)
                temporary.replace(path)
        self.der = ssl.PEM_cert_to_DER_cert(leaf.cert_chain_pems[0].bytes().decode())

    def client_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context()
        self.ca.configure_trust(context)
        return context


class Server:
    def __init__(
        self, directory: Path, certificates: Certificates, config: dict[str, Any] | None = None
    ) -> None:
        self.directory, self.certificates = directory, certificates
        self.port = free_port()
        self.metrics_port = free_port()  # the plain-HTTP /metrics listener
        self.config = directory / "config.yaml"
        document = {"apiVersion": "kubegap.dev/v1alpha1", "kind": "Config", **(config or {})}
        self.config.write_text(json.dumps(document))  # JSON is YAML
        self.log = directory / "serve.log"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, drain_seconds: float = 1.0, workers: int = 2, access_log: bool = False) -> None:
        command = [
            sys.executable, "-m", "kubegap", "serve",
            "--cert", str(self.certificates.cert), "--key", str(self.certificates.key),
            "--bind", "127.0.0.1", "--port", str(self.port), "--config", str(self.config),
            "--workers", str(workers), "--threads", "4", "--drain-seconds", str(drain_seconds),
            "--metrics-port", str(self.metrics_port), *(["--access-log"] if access_log else []),
        ]  # fmt: skip
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"kubegap serve exited with {self.process.returncode}:\n{self.logs()}")
            try:
                if self.get("/readyz")[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise AssertionError(f"kubegap serve did not become ready:\n{self.logs()}")

    def logs(self) -> str:
        return self.log.read_text(errors="replace")

    def connection(self, timeout: float = 10.0) -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection(
            "127.0.0.1", self.port, context=self.certificates.client_context(), timeout=timeout
        )

    def get(self, path: str) -> tuple[int, str]:
        connection = self.connection(timeout=2.0)
        try:
            connection.request("GET", path)
            reply = connection.getresponse()
            return reply.status, reply.read().decode()
        finally:
            connection.close()

    def plain(self, method: str, path: str) -> tuple[int, str]:
        """A request to the plain-HTTP metrics port."""
        connection = http.client.HTTPConnection("127.0.0.1", self.metrics_port, timeout=5.0)
        try:
            connection.request(method, path)
            reply = connection.getresponse()
            return reply.status, reply.read().decode()
        finally:
            connection.close()

    def workers(self) -> list[int]:
        """The pids of the master's worker processes, as the kernel lists its children."""
        assert self.process is not None
        tasks = Path(f"/proc/{self.process.pid}/task")
        found = [int(pid) for task in tasks.glob("*") for pid in (task / "children").read_text().split()]
        return sorted(found)

    def reviewed(self) -> set[str]:
        """The uids of the reviews the server took in and judged, from its JSON log lines."""
        uids = set()
        for line in self.logs().splitlines():
            if line.startswith("{") and '"event":"review"' in line:
                uids.add(json.loads(line)["uid"])
        return uids

    def signal(self, signum: int) -> None:
        assert self.process is not None
        os.kill(self.process.pid, signum)

    def wait(self, timeout: float = STOP_SECONDS) -> int:
        assert self.process is not None
        return self.process.wait(timeout)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.signal(signal.SIGTERM)
        try:
            self.process.wait(STOP_SECONDS)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(5)


@contextmanager
def running(
    directory: Path,
    config: dict[str, Any] | None = None,
    drain_seconds: float = 1.0,
    access_log: bool = False,
) -> Iterator[Server]:
    server = Server(directory, Certificates(directory), config)
    server.start(drain_seconds, access_log=access_log)
    try:
        yield server
    finally:
        server.stop()


def post_review(
    connection: http.client.HTTPSConnection, review: dict[str, Any] | bytes, timeout: str = "10s"
) -> tuple[int, dict[str, Any] | str]:
    """POST as the API server does: JSON, `?timeout=`, on a connection that is kept alive."""
    body = review if isinstance(review, bytes) else json.dumps(review).encode()
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    connection.request("POST", f"/validate?timeout={timeout}", body=body, headers=headers)
    reply = connection.getresponse()
    data = reply.read()
    if reply.status == 200:
        answer: dict[str, Any] = json.loads(data)
        return reply.status, answer
    return reply.status, data.decode(errors="replace")
