"""lint_manifests gives `kubegap lint -`'s findings; echoed values are redacted; each call is one log line."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import sys
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from kubegap import manifests
from kubegap.cli import main
from kubegap.config import Settings
from kubegap.evaluate import build_engine
from kubegap.mcp.redact import MARK, redact
from tests.support.samples import FAILING_PYTORCHJOB

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = "\n---\n".join(p.read_text("utf-8") for p in sorted(ROOT.glob("policies/*/examples/*.yaml")))
TOKEN = "ghp_" + "x7Kq2" * 8  # a GitHub token's shape
LEAKY_JOB = FAILING_PYTORCHJOB.replace(
    "              command: [python, train.py]\n",
    "              command: [python, train.py]\n"
    f"              env: [{{name: TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC, value: '{TOKEN}'}}]\n",
)


def cli_lint(monkeypatch: pytest.MonkeyPatch, text: str, *extra: str) -> dict[str, Any]:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode("utf-8"))))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["lint", "--format", "json", *extra, "-"])
    return json.loads(out.getvalue())  # type: ignore[no-any-return]


@pytest.mark.parametrize("policies", [[], ["nccl-timeout", "gpu-nic-topology"]])
async def test_lint_manifests_gives_exactly_the_clis_findings(
    client: Client, monkeypatch: pytest.MonkeyPatch, policies: list[str]
) -> None:
    expected = cli_lint(monkeypatch, EXAMPLES, *(a for p in policies for a in ("--policy", p)))
    result = await client.call_tool("lint_manifests", {"manifests": EXAMPLES, "policies": policies or None})
    record = result.structured_content or {}
    assert len(expected["findings"]) > 20
    assert record["findings"] == expected["findings"]  # same records, same order
    assert record["total"] == len(expected["findings"])
    assert record["summary"]["objects"] == expected["summary"]["objects"]
    assert record["summary"]["failuresBySeverity"] == expected["summary"]["failuresBySeverity"]


async def test_unreadable_documents_are_findings_and_the_rest_is_checked(client: Client) -> None:
    result = await client.call_tool(
        "lint_manifests", {"manifests": "a: [unclosed\n---\n" + FAILING_PYTORCHJOB}
    )
    record = result.structured_content or {}
    assert record["findings"][0]["policy"] == "invalid-manifest"
    assert record["summary"]["invalid"] == 1 and record["summary"]["objects"] == 1
    assert "1 document(s) could not be read" in result.content[0].text  # type: ignore[union-attr]


async def test_a_token_in_an_env_value_is_redacted_from_messages(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    cli = cli_lint(monkeypatch, LEAKY_JOB)
    assert any(TOKEN in f["message"] for f in cli["findings"])  # the rule does echo the value
    result = await client.call_tool("lint_manifests", {"manifests": LEAKY_JOB})
    echoed = [f for f in (result.structured_content or {})["findings"] if f["rule"] == "watchdog-enabled"]
    assert echoed and echoed[0]["message"].startswith(f"TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC={MARK} ")
    assert TOKEN not in json.dumps(result.structured_content)
    assert TOKEN not in result.content[0].text  # type: ignore[union-attr]


SECRETS = [
    "eyJhbGciOiJSUzI1NiIsImtpZCI6IjEifQ.eyJzdWIiOiJzeXN0ZW06c2EifQ.c2lnbmF0dXJlLXBhcnQ",
    "AKIAIOSFODNN7EXAMPLE",
    "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345",
    "xoxb-1234567890-abcdefghij",
    "sk-proj-AbCdEfGhIjKlMnOpQrStUv",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----",
    "Zm9vYmFyQmF6UXV4MTIzNDU2Nzg5MEFiQ2RFZg==",  # opaque base64 with digits and both cases
    "0123456789abcdef0123456789abcdef01234567",  # a 40-hex API key (W&B's shape)
]
KEPT = [
    "collective timeout 1h (--distributed-timeout-minutes) exceeds 30m",
    "NCCL_IB_HCA=mlx5_0,mlx5_1 NCCL_NET=Socket",
    "pytorchjob-llama-70b-finetune-worker-00001-abcde",
    "3f2504e0-4f89-11d3-9a0c-0305e82c3301",
    "/mnt/checkpoints/llama-70b/run-2024-05-01/step-000100",
    "/mnt/Checkpoints/Llama2-70B/Run1/global_step100",
]


@pytest.mark.parametrize("secret", SECRETS)
def test_token_shapes_are_redacted(secret: str) -> None:
    assert redact(f"value {secret} here") == f"value {MARK} here"


@pytest.mark.parametrize("name", ["API_TOKEN", "db_password", "WANDB_API_KEY", "aws-secret-access-key"])
def test_values_named_as_credentials_are_redacted(name: str) -> None:
    assert redact(f"{name}=hunter2 is set") == f"{name}={MARK} is set"


@pytest.mark.parametrize("text", KEPT)
def test_ordinary_settings_names_and_paths_are_kept(text: str) -> None:
    assert redact(text) == text


async def test_each_call_is_one_json_log_line_without_the_manifests(
    client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="kubegap.mcp.calls"):
        await client.call_tool(
            "lint_manifests", {"manifests": FAILING_PYTORCHJOB, "policies": ["nccl-timeout"]}
        )
        await client.call_tool("explain_policy", {"id": "nope"})
    records = [r for r in caplog.records if r.name == "kubegap.mcp.calls"]
    assert len(records) == 2
    lint, failed = (r.fields for r in records)  # type: ignore[attr-defined]
    assert lint["tool"] == "lint_manifests" and "manifests" not in lint["arguments"]
    assert lint["arguments"] == {"policies": ["nccl-timeout"], "manifestsBytes": len(FAILING_PYTORCHJOB)}
    assert lint["counts"]["total"] == 1 and lint["durationMs"] >= 0
    assert failed["tool"] == "explain_policy" and "no policy 'nope'" in failed["error"]


async def test_an_internal_error_is_a_tool_error_and_logged(
    make_toolbox: Any, caplog: pytest.LogCaptureFixture
) -> None:
    from kubegap.mcp import server

    toolbox = make_toolbox()

    def broken() -> None:
        raise RuntimeError("a bug")

    toolbox.list_policies = broken
    with caplog.at_level(logging.INFO, logger="kubegap.mcp.calls"):
        async with Client(server.build(toolbox)) as client:
            result = await client.call_tool("list_policies", {})
    assert result.is_error
    (record,) = [r for r in caplog.records if r.name == "kubegap.mcp.calls"]
    assert record.levelname == "ERROR" and record.fields["error"] == "internal error: RuntimeError"  # type: ignore[attr-defined]


async def test_estimate_cost_prices_the_incident_shaped_job(client: Client) -> None:
    examples = Path(str(files("kubegap.policies"))) / "checkpoint-interval" / "examples"
    example = examples / "fail-4096-gpus-five-hour-interval.yaml"
    result = await client.call_tool("estimate_cost", {"manifests": example.read_text("utf-8")})
    [workload] = result.structured_content["workloads"]  # type: ignore[index]
    assert workload["totalGpus"] == 4096
    lint = build_engine(Settings()).evaluate(next(iter(manifests.read([str(example)]))).obj or {})
    assert lint.cost is not None
    assert workload["lostGpuHoursPerMonth"] == round(lint.cost.lost, 1)  # the same model as kubegap lint
    [saving] = workload["savings"]
    assert (saving["policy"], saving["rule"]) == ("checkpoint-interval", "interval-bounded")
    assert saving["savedGpuHoursPerMonth"] > 400_000
    text = result.content[0].text  # type: ignore[union-attr]
    assert "GPU-h/month at risk  PyTorchJob/llm/llm-405b-pretrain (4096 GPUs)" in text
    assert "fixing checkpoint-interval/interval-bounded saves ≈ 441k" in text


async def test_suggest_fix_gives_exactly_the_diff_kubegap_fix_prints(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(FAILING_PYTORCHJOB.encode("utf-8"))))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["fix", "-"]) == 1  # a diff to show: the CLI says so with exit 1
    result = await client.call_tool("suggest_fix", {"manifests": FAILING_PYTORCHJOB})
    record = result.structured_content or {}
    assert record["changed"] is True and record["diff"] == out.getvalue()
    assert record["fixed"] + record["todo"] >= 1
    assert record["diff"] in result.content[0].text  # type: ignore[union-attr]
