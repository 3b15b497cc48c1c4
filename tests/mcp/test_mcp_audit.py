"""audit_cluster and check_nodes against the test API server: the CLI's findings, pages, coverage, progress,
and only reads on the wire."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from kubegap import __version__
from kubegap.cli import main
from kubegap.findings import Severity
from tests.audit.objects import node, pod, pytorchjob
from tests.support.apiserver import RULES_REVIEW, ApiServer, Fault

pytestmark = pytest.mark.anyio
RANK = {s.value: s.rank for s in Severity}


@pytest.fixture
def cluster(apiserver: ApiServer) -> ApiServer:
    apiserver.load(
        [
            *(pytorchjob(f"llm-{i}", namespace=("team-a", "team-b")[i % 2], workers=i + 1) for i in range(5)),
            pod("notebook", namespace="team-b", gpus=1),
            pod("cpu-only", namespace="default", gpus=0),
            node("gpu-0"),
            node("gpu-1", allocatable=6),
        ]
    )
    return apiserver


def cli_audit(kubeconfig: Path, *extra: str) -> dict[str, Any]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["audit", "--kubeconfig", str(kubeconfig), "--format", "json", *extra])
    assert code == 1
    return json.loads(out.getvalue())  # type: ignore[no-any-return]


async def all_pages(client: Client, limit: int, **arguments: Any) -> list[dict[str, Any]]:
    pages = [(await client.call_tool("audit_cluster", {"limit": limit, **arguments})).structured_content]
    while pages[-1] and pages[-1]["nextCursor"]:
        result = await client.call_tool("audit_cluster", {"limit": limit, "cursor": pages[-1]["nextCursor"]})
        assert not result.is_error, result.content
        pages.append(result.structured_content)
    return [p for p in pages if p]


def canonical(findings: list[dict[str, Any]]) -> list[str]:
    return sorted(json.dumps(f, sort_keys=True) for f in findings)


async def test_audit_cluster_gives_exactly_the_cli_findings(
    client: Client, cluster: ApiServer, kubeconfig: Path
) -> None:
    expected = cli_audit(kubeconfig)
    pages = await all_pages(client, limit=3)
    assert len(pages) > 2  # the cursor was followed
    found = [f for page in pages for f in page["findings"]]
    assert canonical(found) == canonical(expected["findings"])
    assert {page["total"] for page in pages} == {len(expected["findings"])}
    assert pages[0]["truncated"] and not pages[-1]["nextCursor"]
    ranks = [RANK[f["severity"]] if f["result"] != "skip" else -1 for f in found]
    assert ranks == sorted(ranks, reverse=True)  # worst first, across pages
    assert pages[0]["summary"]["objects"] == expected["summary"]["objects"]
    assert pages[0]["coverage"]["complete"] is True


async def test_namespace_and_kinds_narrow_the_audit_like_the_cli(
    client: Client, cluster: ApiServer, kubeconfig: Path
) -> None:
    expected = cli_audit(kubeconfig, "--namespace", "team-a")
    pages = await all_pages(client, limit=50, namespace="team-a")
    assert canonical(pages[0]["findings"]) == canonical(expected["findings"])
    only = (await client.call_tool("audit_cluster", {"kinds": ["pytorchjobs"]})).structured_content or {}
    assert {f["object"]["kind"] for f in only["findings"]} == {"PyTorchJob"}
    assert [k["kind"] for k in only["coverage"]["kinds"]] == ["PyTorchJob"]


async def test_only_reads_reach_the_api_server_with_kubegaps_user_agent(
    client: Client, cluster: ApiServer
) -> None:
    await all_pages(client, limit=2)
    await client.call_tool("check_nodes", {})
    requests = cluster.requests
    assert {r.method for r in requests} == {"GET", "POST"}
    assert {r.path for r in requests if r.method != "GET"} == {RULES_REVIEW}
    assert sum(r.method == "POST" for r in requests) == 2  # one review per cluster call, none per page
    assert {r.user_agent for r in requests} == {f"kubegap/{__version__}"}
    assert not [r.path for r in requests if "secrets" in r.path or "configmaps" in r.path]


async def test_what_could_not_be_read_is_listed_not_passed(client: Client, cluster: ApiServer) -> None:
    cluster.inject(Fault("forbidden", plural="pytorchjobs", times=None))
    result = await client.call_tool("audit_cluster", {})
    record = result.structured_content or {}
    assert record["coverage"]["complete"] is False
    assert any("forbidden" in gap["reason"] for gap in record["coverage"]["notEvaluated"])
    assert "INCOMPLETE" in result.content[0].text  # type: ignore[union-attr]
    assert all(f["object"]["kind"] != "PyTorchJob" for f in record["findings"])


async def test_long_audits_report_progress(make_toolbox: Any, cluster: ApiServer) -> None:
    from kubegap.mcp import server

    seen: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, message))

    async with Client(server.build(make_toolbox(page_size=2))) as client:
        await client.call_tool("audit_cluster", {}, progress_callback=on_progress)
    assert len(seen) >= 5
    assert [p for p, _ in seen] == sorted(p for p, _ in seen)
    assert any(m and "PyTorchJob" in m for _, m in seen)


async def test_an_expired_cursor_says_to_run_again(client: Client, cluster: ApiServer) -> None:
    result = await client.call_tool("audit_cluster", {"cursor": "a999:50"})
    assert result.is_error and "run audit_cluster again" in result.content[0].text  # type: ignore[union-attr]


async def test_check_nodes_lists_unhealthy_gpu_nodes_first(client: Client, cluster: ApiServer) -> None:
    cluster.load(
        [
            {**node("gpu-2"), "spec": {"unschedulable": True}},
            {
                **node("gpu-3"),
                "status": {
                    "capacity": {"nvidia.com/gpu": "8"},
                    "allocatable": {"nvidia.com/gpu": "8"},
                    "conditions": [
                        {"type": "Ready", "status": "True"},
                        {"type": "XIDErrors", "status": "True"},
                    ],
                },
            },
            {**node("cpu-0"), "status": {"capacity": {"cpu": "8"}, "allocatable": {"cpu": "8"}}},
        ]
    )
    result = await client.call_tool("check_nodes", {})
    record = result.structured_content or {}
    names = [n["name"] for n in record["nodes"]]
    assert record["gpuNodes"] == 4 and "cpu-0" not in names
    assert names[-1] == "gpu-0" and set(names[:3]) == {"gpu-1", "gpu-2", "gpu-3"}
    by_name = {n["name"]: n for n in record["nodes"]}
    assert by_name["gpu-1"]["gpus"] == [{"name": "nvidia.com/gpu", "capacity": 8, "allocatable": 6}]
    assert by_name["gpu-1"]["findings"][0]["rule"] == "gpus-healthy"
    assert by_name["gpu-2"]["cordoned"] and not by_name["gpu-2"]["schedulable"]
    assert by_name["gpu-3"]["conditions"] == ["XIDErrors=True"]
    assert record["unhealthy"] == 3 and record["complete"] is True


@pytest.mark.parametrize("namespace", ["default/secrets", "../api", "Team-A", "a" * 64])
async def test_a_namespace_that_is_not_a_name_never_reaches_a_request_path(
    client: Client, cluster: ApiServer, namespace: str
) -> None:
    result = await client.call_tool("audit_cluster", {"namespace": namespace})
    assert result.is_error and "is not a namespace name" in result.content[0].text  # type: ignore[union-attr]
    assert cluster.requests == []
