"""The text part of a result stays under the cap on a 10,000-object cluster; records are paged."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from benchmarks.bench_audit import generate
from kubegap.config import Settings
from kubegap.mcp import server
from kubegap.mcp.cluster import Connection, Target
from kubegap.mcp.summary import TEXT_LIMIT, cap
from kubegap.mcp.tools import MAX_LIMIT, Toolbox
from tests.support.apiserver import ApiServer

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
OBJECTS = 10_000


@pytest.fixture(scope="module")
def big_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ApiServer, Path]]:
    work = tmp_path_factory.mktemp("big")
    generate(OBJECTS, work / "objects.jsonl")
    with ApiServer() as api, (work / "objects.jsonl").open(encoding="utf-8") as lines:
        api.load(json.loads(line) for line in lines)
        yield api, api.kubeconfig(work / "kubeconfig")


async def test_text_stays_under_the_cap_on_a_10000_object_cluster(
    big_cluster: tuple[ApiServer, Path],
) -> None:
    _api, kubeconfig = big_cluster
    toolbox = Toolbox(Settings(), Connection(Target(str(kubeconfig), None, "default"), False, 60.0))
    progress: list[float] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append(done)

    try:
        async with Client(server.build(toolbox)) as client:
            audit = await client.call_tool(
                "audit_cluster", {"limit": MAX_LIMIT}, progress_callback=on_progress
            )
            nodes = await client.call_tool("check_nodes", {})
    finally:
        toolbox.close()
    record: dict[str, Any] = audit.structured_content or {}
    assert record["coverage"]["totals"]["seen"] == OBJECTS
    assert record["total"] > OBJECTS  # more findings than objects: plenty to overflow a naive summary
    assert len(record["findings"]) == MAX_LIMIT and record["nextCursor"]
    for result in (audit, nodes):
        text = result.content[0].text  # type: ignore[union-attr]
        assert 0 < len(text) < TEXT_LIMIT
    assert len(progress) >= OBJECTS // 500  # one notification per page at least


def test_cap_cuts_oversized_text_and_says_so() -> None:
    text = "x" * (TEXT_LIMIT * 3)
    capped = cap(text)
    assert len(capped) < TEXT_LIMIT and capped.endswith("every record is in structuredContent)\n")
    assert cap("short\n") == "short\n"
