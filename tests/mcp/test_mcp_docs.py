"""The session transcript in docs/mcp.md is what the tools return today (the deterministic calls)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from mcp import Client

pytestmark = pytest.mark.anyio
PAGE = (Path(__file__).resolve().parents[2] / "docs" / "mcp.md").read_text("utf-8")


def block(after: str, language: str) -> str:
    section = PAGE[PAGE.index(after) :]
    found = re.search(rf"```{language}\n(.*?)```", section, re.S)
    assert found, f"no {language} block after {after!r} in docs/mcp.md"
    return found.group(1)


async def test_the_lint_manifests_transcript_is_current(client: Client) -> None:
    manifest = block("#### lint_manifests", "yaml")
    result = await client.call_tool("lint_manifests", {"manifests": manifest})
    assert result.content[0].text == block("#### lint_manifests", "text")  # type: ignore[union-attr]


async def test_the_explain_policy_transcript_is_current(client: Client) -> None:
    result = await client.call_tool("explain_policy", {"id": "nccl-timeout"})
    assert result.content[0].text == block("#### explain_policy", "text")  # type: ignore[union-attr]


async def test_the_readme_transcript_is_current(client: Client) -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text("utf-8")
    section = readme[readme.index("calls `estimate_cost` with the manifest") :]
    shown = re.search(r"```text\n(.*?)```", section, re.S)
    assert shown, "no transcript in the README's agents section"
    example = Path(__file__).resolve().parents[2] / "policies/checkpoint-interval/examples"
    text = (example / "fail-4096-gpus-five-hour-interval.yaml").read_text("utf-8")
    result = await client.call_tool("estimate_cost", {"manifests": text})
    assert result.content[0].text == shown.group(1)  # type: ignore[union-attr]
    fix = await client.call_tool("suggest_fix", {"manifests": text})
    diff = (fix.structured_content or {})["diff"]
    assert "-                - --save-interval=1500\n+                - --save-interval=50\n" in diff
