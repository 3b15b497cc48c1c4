"""`kubegap mcp --http`: streamable HTTP on loopback, and nothing answered without the bearer token."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from kubegap.cli import main
from kubegap.errors import UsageError
from kubegap.mcp.streamable import TOKEN_ENV, address, token
from tests.support.samples import FAILING_PYTORCHJOB

SECRET = "s3cret-token-for-tests-0123456789"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_listening(port: int, process: subprocess.Popen[bytes]) -> None:
    for _ in range(200):  # bounded: at most about 20 s on a loaded machine
        assert process.poll() is None, process.stderr.read() if process.stderr else b""
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    pytest.fail("kubegap mcp --http did not start listening")


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[str]:
    port = free_port()
    env = {**os.environ, TOKEN_ENV: SECRET}
    missing = str(tmp_path / "no-kubeconfig")  # lint needs no cluster; the server starts without one
    process = subprocess.Popen(
        [sys.executable, "-m", "kubegap", "mcp", "--kubeconfig", missing, "--http", str(port)],
        env=env,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
    )
    try:
        wait_listening(port, process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)
        if process.stderr:
            process.stderr.close()


@pytest.mark.slow
@pytest.mark.anyio
async def test_http_serves_tools_only_with_the_token(http_server: str) -> None:
    async with httpx2.AsyncClient() as plain:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        assert (await plain.post(http_server, json=body)).status_code == 401
        wrong = {"Authorization": "Bearer " + SECRET[:-1]}
        assert (await plain.post(http_server, json=body, headers=wrong)).status_code == 401
    headers = {"Authorization": f"Bearer {SECRET}"}
    async with (
        httpx2.AsyncClient(headers=headers) as authorised,
        Client(streamable_http_client(http_server, http_client=authorised)) as client,
    ):
        tools = {t.name for t in (await client.list_tools()).tools}
        result = await client.call_tool("lint_manifests", {"manifests": FAILING_PYTORCHJOB})
    assert "lint_manifests" in tools and not result.is_error


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("8765", ("127.0.0.1", 8765)),
        (":8765", ("127.0.0.1", 8765)),
        ("localhost:80", ("localhost", 80)),
        ("[::1]:8765", ("::1", 8765)),
        ("0.0.0.0:8765", ("0.0.0.0", 8765)),
    ],
)
def test_a_bare_port_binds_loopback(text: str, expected: tuple[str, int]) -> None:
    assert address(text) == expected


@pytest.mark.parametrize("text", ["", "host:", "host:port", "1:99999"])
def test_a_bad_address_is_a_usage_error(text: str) -> None:
    with pytest.raises(UsageError, match="HOST:PORT"):
        address(text)


def test_the_token_comes_from_the_environment_or_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    with pytest.raises(UsageError, match="needs a bearer token"):
        token(None)
    monkeypatch.setenv(TOKEN_ENV, "short")
    with pytest.raises(UsageError, match="shorter than 16"):
        token(None)
    monkeypatch.setenv(TOKEN_ENV, SECRET)
    assert token(None) == SECRET
    (tmp_path / "token").write_text(SECRET[::-1] + "\n", "utf-8")
    assert token(str(tmp_path / "token")) == SECRET[::-1]


def test_http_without_a_token_does_not_start(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    assert main(["mcp", "--http", "8765"]) == 2
    assert "--http needs a bearer token" in capsys.readouterr().err
