"""Every tool: annotated read-only, with an output schema, and results that validate against it."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from mcp import Client

from tests.audit.objects import node, pytorchjob
from tests.support.apiserver import ApiServer
from tests.support.samples import FAILING_PYTORCHJOB

pytestmark = pytest.mark.anyio

TOOLS = {
    "lint_manifests",
    "estimate_cost",
    "suggest_fix",
    "list_policies",
    "explain_policy",
    "audit_cluster",
    "check_nodes",
}
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("lint_manifests", {"manifests": FAILING_PYTORCHJOB}),
    ("lint_manifests", {"manifests": FAILING_PYTORCHJOB, "policies": ["nccl-timeout"]}),
    ("estimate_cost", {"manifests": FAILING_PYTORCHJOB}),
    ("suggest_fix", {"manifests": FAILING_PYTORCHJOB}),
    ("list_policies", {}),
    ("explain_policy", {"id": "checkpoint-interval"}),
    ("audit_cluster", {}),
    ("audit_cluster", {"namespace": "team-a", "kinds": ["PyTorchJob"], "limit": 1}),
    ("check_nodes", {}),
]


async def test_every_tool_is_read_only_idempotent_and_has_an_output_schema(client: Client) -> None:
    listed = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(listed) == TOOLS
    for tool in listed.values():
        hints = tool.annotations
        assert hints is not None, tool.name
        assert (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint) == (True, False, True)
        assert tool.output_schema and tool.output_schema.get("type") == "object", tool.name
        assert tool.description


async def test_every_result_validates_against_its_schema(client: Client, apiserver: ApiServer) -> None:
    apiserver.load([pytorchjob("llm", gpus=8), node("gpu-1", allocatable=7)])
    schemas = {tool.name: tool.output_schema for tool in (await client.list_tools()).tools}
    for name, arguments in CALLS:
        result = await client.call_tool(name, arguments)
        assert not result.is_error, (name, result.content)
        assert result.structured_content is not None
        jsonschema.validate(result.structured_content, schemas[name])
        text = result.content[0].text  # type: ignore[union-attr]
        assert text.strip() and len(text) < 40_000


async def test_a_schema_rejects_what_a_tool_does_not_return(client: Client) -> None:
    """The schemas are strict enough to mean something: a finding without its rule does not validate."""
    schemas = {tool.name: tool.output_schema for tool in (await client.list_tools()).tools}
    result = await client.call_tool("lint_manifests", {"manifests": FAILING_PYTORCHJOB})
    broken = dict(result.structured_content or {})
    broken["findings"] = [{k: v for k, v in f.items() if k != "rule"} for f in broken["findings"]]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, schemas["lint_manifests"])


async def test_a_bad_argument_is_a_tool_error_that_names_it(client: Client) -> None:
    unknown = await client.call_tool("explain_policy", {"id": "no-such-policy"})
    assert unknown.is_error and "nccl-timeout" in unknown.content[0].text  # type: ignore[union-attr]
    wrong = await client.call_tool("lint_manifests", {"manifests": "x: 1", "policies": ["nope"]})
    assert wrong.is_error and "unknown policy 'nope'" in wrong.content[0].text  # type: ignore[union-attr]
    kind = await client.call_tool("audit_cluster", {"kinds": ["Widget"]})
    assert kind.is_error and "unknown kind 'Widget'" in kind.content[0].text  # type: ignore[union-attr]


async def test_explain_policy_gives_the_incident_and_the_fix(client: Client) -> None:
    result = await client.call_tool("explain_policy", {"id": "nccl-timeout"})
    record = result.structured_content or {}
    assert record["id"] == "nccl-timeout" and record["remediation"]
    assert any(r["kind"] == "incident" for r in record["references"])
    assert record["params"]["maxCollectiveTimeout"] == "30m"
    assert "Fix:" in result.content[0].text  # type: ignore[union-attr]
