"""The MCP server: kubegap's tools on the official SDK (`mcp.server.MCPServer`), stdio or streamable HTTP.

Every tool is annotated read-only, non-destructive and idempotent and publishes an output schema (the
models in kubegap.mcp.models). A result carries a short text summary and the full records as
structuredContent. Each call is logged as one JSON line on stderr: tool, arguments (manifest text left
out, only its size), duration and result counts.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from functools import partial
from typing import Annotated, Any, TypeVar

import anyio
import anyio.from_thread
import anyio.to_thread
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from kubegap import __version__
from kubegap.errors import KubegapError
from kubegap.mcp.models import (
    AuditOutput,
    CostOutput,
    FixOutput,
    LintOutput,
    NodesOutput,
    PolicyDetail,
    PolicyList,
)
from kubegap.mcp.tools import MAX_LIMIT, Toolbox

log = logging.getLogger("kubegap.mcp.calls")

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True)
INSTRUCTIONS = (
    "kubegap checks GPU-training workloads and GPU nodes against rules drawn from public incident reports "
    "(NCCL timeouts, checkpoint intervals, NIC topology, probes, restarts, node health). Use lint_manifests "
    "before applying YAML, estimate_cost for the GPU-hours a workload stands to lose, audit_cluster and "
    "check_nodes to look at a cluster (read-only), explain_policy for the incident and fix behind a "
    "finding. Every tool only reads."
)
Output = TypeVar("Output", bound=BaseModel)


def result(record: BaseModel, text: str) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=record.model_dump(mode="json")
    )


def counts(record: BaseModel) -> dict[str, Any]:
    """Numbers, flags and list sizes at the top of a record: what a log line says about a result."""
    out: dict[str, Any] = {}
    for name, value in record.model_dump(mode="json").items():
        if isinstance(value, bool | int):
            out[name] = value
        elif isinstance(value, list):
            out[name] = len(value)
    return out


async def _call(
    tool: str, arguments: dict[str, Any], work: Callable[[], tuple[Output, str]]
) -> CallToolResult:
    """Run blocking work off the event loop, log the call, and turn kubegap's errors into tool errors."""
    started = time.monotonic()
    logged = {k: v for k, v in arguments.items() if k != "manifests"}
    if "manifests" in arguments:
        logged["manifestsBytes"] = len(arguments["manifests"].encode("utf-8"))
    fields: dict[str, Any] = {"tool": tool, "arguments": logged}
    try:
        record, text = await anyio.to_thread.run_sync(work)
    except KubegapError as exc:
        fields.update(error=str(exc), durationMs=_since(started))
        log.warning("tool_call", extra={"fields": fields})
        raise ToolError(str(exc)) from None
    except Exception as exc:  # a bug: logged here too, then the SDK reports it with its trace
        fields.update(error=f"internal error: {type(exc).__name__}", durationMs=_since(started))
        log.error("tool_call", extra={"fields": fields})
        raise
    fields.update(durationMs=_since(started), counts=counts(record))
    log.info("tool_call", extra={"fields": fields})
    return result(record, text)


def _since(started: float) -> float:
    return round((time.monotonic() - started) * 1000, 1)


def _reporter(ctx: Context) -> Callable[[str, int], None]:
    """Progress from the audit's worker thread, sent as MCP progress notifications on the event loop."""

    def report(message: str, done: int) -> None:
        anyio.from_thread.run(partial(ctx.report_progress, done, None, message))

    return report


def build(toolbox: Toolbox) -> MCPServer:
    server: MCPServer = MCPServer("kubegap", version=__version__, instructions=INSTRUCTIONS)
    for register in (_lint, _policies, _audit, _nodes):
        register(server, toolbox)
    return server


def _tool(server: MCPServer, title: str, description: str) -> Callable[[Any], Any]:
    return server.tool(title=title, description=description, annotations=READ_ONLY, structured_output=True)


def _lint(server: MCPServer, toolbox: Toolbox) -> None:
    @_tool(
        server,
        "Lint Kubernetes manifests",
        "What admission would say before you apply: lint YAML or JSON text (one or many documents) with "
        "the same rules and findings as `kubegap lint -`. Nothing is sent to a cluster.",
    )
    async def lint_manifests(
        manifests: Annotated[str, Field(description="YAML or JSON text; documents separated by ---")],
        policies: Annotated[
            list[str] | None, Field(description="run only these policy ids (default: all)")
        ] = None,
    ) -> Annotated[CallToolResult, LintOutput]:
        args = {"manifests": manifests, "policies": policies}
        return await _call("lint_manifests", args, partial(toolbox.lint_manifests, manifests, policies or ()))

    @_tool(
        server,
        "Estimate what training workloads stand to lose",
        "The cost model over YAML or JSON text: each training workload's expected GPU-hours lost a month "
        "to failures, checkpoint saves and slow network paths, what fixing each failing rule would save, "
        "and Young's optimal checkpoint interval. Nothing is sent to a cluster.",
    )
    async def estimate_cost(
        manifests: Annotated[str, Field(description="YAML or JSON text; documents separated by ---")],
    ) -> Annotated[CallToolResult, CostOutput]:
        return await _call(
            "estimate_cost", {"manifests": manifests}, partial(toolbox.estimate_cost, manifests)
        )

    @_tool(
        server,
        "Suggest the fix for manifests",
        "The patch `kubegap fix` would make to YAML or JSON text, as a unified diff: the missing settings "
        "added where the framework reads them, in the file's own style, each checked by linting again. "
        "Nothing is applied or written; findings with no safe fix say why.",
    )
    async def suggest_fix(
        manifests: Annotated[str, Field(description="YAML or JSON text; documents separated by ---")],
    ) -> Annotated[CallToolResult, FixOutput]:
        return await _call("suggest_fix", {"manifests": manifests}, partial(toolbox.suggest_fix, manifests))


def _policies(server: MCPServer, toolbox: Toolbox) -> None:
    @_tool(server, "List kubegap policies", "Every rule kubegap checks, with severity and parameters.")
    async def list_policies() -> Annotated[CallToolResult, PolicyList]:
        return await _call("list_policies", {}, toolbox.list_policies)

    @_tool(
        server,
        "Explain a kubegap policy",
        "One rule in full: what it checks, its parameters, the public incident behind it, and the fix.",
    )
    async def explain_policy(
        id: Annotated[str, Field(description="policy id, e.g. nccl-timeout")],
    ) -> Annotated[CallToolResult, PolicyDetail]:
        return await _call("explain_policy", {"id": id}, partial(toolbox.explain_policy, id))


def _audit(server: MCPServer, toolbox: Toolbox) -> None:
    @_tool(
        server,
        "Audit the cluster's training workloads",
        "Read-only audit of the live cluster (GET/LIST only): findings worst first, at most `limit` per "
        "call (pass `next_cursor` back as `cursor` for more), counts by rule, worst offenders, coverage "
        "(what could not be read is listed, never passed), and what the credentials could do.",
    )
    async def audit_cluster(
        ctx: Context,
        namespace: Annotated[str | None, Field(description="only this namespace")] = None,
        kinds: Annotated[
            list[str] | None, Field(description="only these kinds, e.g. PyTorchJob, Job.batch, JobSet")
        ] = None,
        context: Annotated[
            str | None, Field(description="kubeconfig context (default: the server's)")
        ] = None,
        limit: Annotated[int, Field(ge=1, le=MAX_LIMIT, description="findings per page")] = 50,
        cursor: Annotated[str | None, Field(description="nextCursor of a previous call")] = None,
    ) -> Annotated[CallToolResult, AuditOutput]:
        args = {"namespace": namespace, "kinds": kinds, "context": context, "limit": limit, "cursor": cursor}
        work = partial(
            toolbox.audit_cluster, namespace, kinds or (), context, limit, cursor, progress=_reporter(ctx)
        )
        return await _call("audit_cluster", args, work)


def _nodes(server: MCPServer, toolbox: Toolbox) -> None:
    @_tool(
        server,
        "Check GPU nodes",
        "GPU node health, read-only: allocatable against capacity per GPU resource, problem conditions, "
        "cordons and taints, and the gpu-node-health findings; unhealthy nodes first.",
    )
    async def check_nodes(
        context: Annotated[
            str | None, Field(description="kubeconfig context (default: the server's)")
        ] = None,
        limit: Annotated[int, Field(ge=1, le=MAX_LIMIT, description="nodes listed at most")] = 100,
    ) -> Annotated[CallToolResult, NodesOutput]:
        return await _call(
            "check_nodes", {"context": context, "limit": limit}, partial(toolbox.check_nodes, context, limit)
        )
