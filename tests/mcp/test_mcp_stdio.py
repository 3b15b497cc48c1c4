"""`kubegap mcp` as an agent starts it: a subprocess speaking MCP over stdio, logging JSON lines on stderr."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.audit.objects import pytorchjob
from tests.support.apiserver import RULES_REVIEW, ApiServer
from tests.support.samples import FAILING_PYTORCHJOB

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_stdio_server_answers_tools_and_logs_each_call(
    apiserver: ApiServer, kubeconfig: Path, tmp_path: Path
) -> None:
    apiserver.load([pytorchjob("llm")])
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "kubegap", "mcp", "--kubeconfig", str(kubeconfig), "--require-read-only"],
        cwd=str(tmp_path),
    )
    with (tmp_path / "stderr.log").open("w+", encoding="utf-8") as errlog:
        async with Client(stdio_client(params, errlog=errlog)) as client:
            assert client.server_info is not None and client.server_info.name == "kubegap"
            tools = {t.name for t in (await client.list_tools()).tools}
            lint = await client.call_tool("lint_manifests", {"manifests": FAILING_PYTORCHJOB})
            audit = await client.call_tool("audit_cluster", {"namespace": "team-a"})
        errlog.seek(0)
        lines = [json.loads(line) for line in errlog.read().splitlines() if line.strip()]
    assert tools == {
        "lint_manifests",
        "estimate_cost",
        "suggest_fix",
        "list_policies",
        "explain_policy",
        "audit_cluster",
        "check_nodes",
    }
    assert not lint.is_error and (lint.structured_content or {})["total"] > 0
    assert not audit.is_error and (audit.structured_content or {})["access"]["readOnly"] is True
    calls = [line for line in lines if line.get("event") == "tool_call"]
    assert [c["tool"] for c in calls] == ["lint_manifests", "audit_cluster"]
    assert calls[0]["arguments"] == {"policies": None, "manifestsBytes": len(FAILING_PYTORCHJOB)}
    assert calls[1]["counts"]["findings"] == (audit.structured_content or {})["total"] > 0
    start = next(line for line in lines if line.get("event") == "credentials")
    assert start["access"]["readOnly"] is True and start["cluster"]["userAgent"].startswith("kubegap/")
    writes = [r for r in apiserver.requests if r.method != "GET"]
    assert [(r.method, r.path) for r in writes] == [("POST", RULES_REVIEW)] * 2  # at start, and the audit


async def test_clients_on_the_initialize_handshake_get_the_same_tools(
    kubeconfig: Path, tmp_path: Path
) -> None:
    """Agents released before the 2026 protocol speak the initialize handshake: same tools, same schemas."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "kubegap", "mcp", "--kubeconfig", str(kubeconfig)],
        cwd=str(tmp_path),
    )
    with (tmp_path / "stderr.log").open("w", encoding="utf-8") as errlog:
        async with Client(stdio_client(params, errlog=errlog), mode="legacy") as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            lint = await client.call_tool("lint_manifests", {"manifests": FAILING_PYTORCHJOB})
    assert all(t.output_schema and t.annotations and t.annotations.read_only_hint for t in tools.values())
    assert len(tools) == 7 and (lint.structured_content or {})["total"] > 0
    assert lint.content[0].text.startswith("kubegap lint: 1 object(s) checked")  # type: ignore[union-attr]
