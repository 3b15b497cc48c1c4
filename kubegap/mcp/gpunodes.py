"""`check_nodes`: every GPU node with allocatable against capacity, problem conditions, cordons and taints,
plus the `gpu-node-health` findings the engine gives for it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubegap import raw
from kubegap.audit.discovery import ServedKind
from kubegap.audit.paging import Lister, ListScope
from kubegap.audit.retry import Api
from kubegap.audit.transport import ApiFailure, TransportError
from kubegap.evaluate import Engine
from kubegap.facts.node import node_facts
from kubegap.findings import ObjectRef
from kubegap.kinds import SUPPORTED_KINDS
from kubegap.mcp.models import GpuResource, NodeRecord
from kubegap.mcp.records import finding_record

NODE = next(info for info in SUPPORTED_KINDS if info.group == "" and info.kind == "Node")
_KEEP_OFF = ("NoSchedule", "NoExecute")


def _problem(condition: Mapping[str, Any]) -> bool:
    """Kubelet's `Ready` is healthy when True, its pressure conditions when False
    (https://kubernetes.io/docs/reference/node/node-status/#condition); node-problem-detector and GPU
    health agents add conditions that are problems when True, except `...Ready` ones (healthy when True)."""
    kind, status = str(condition.get("type", "")), str(condition.get("status", ""))
    return status != "True" if kind.endswith("Ready") else status == "True"


def node_record(obj: Mapping[str, Any], engine: Engine) -> NodeRecord | None:
    """None for a node without GPU capacity."""
    facts = node_facts(obj, engine.catalogue)
    if facts["gpuCapacity"] <= 0:
        return None
    spec, status = raw.mapping(obj.get("spec")), raw.mapping(obj.get("status"))
    taints = [raw.mapping(t) for t in raw.items(spec.get("taints"))]
    conditions = [raw.mapping(c) for c in raw.items(status.get("conditions"))]
    evaluation = engine.evaluate(obj)
    return NodeRecord(
        name=ObjectRef.of(obj).name,
        schedulable=facts["schedulable"],
        cordoned=spec.get("unschedulable") is True,
        taints=[f"{t.get('key', '')}:{t.get('effect', '')}" for t in taints if t.get("effect") in _KEEP_OFF],
        gpus=[GpuResource(**r) for r in facts["gpuResources"]],
        conditions=[f"{c.get('type')}={c.get('status')}" for c in conditions if _problem(c)],
        findings=[finding_record(f) for f in evaluation.findings],
    )


def list_gpu_nodes(api: Api, engine: Engine, page_size: int = 500) -> tuple[list[NodeRecord], list[str]]:
    """GPU nodes, problems first; and what could not be read (an API error is never a healthy node)."""
    nodes: list[NodeRecord] = []
    problems: list[str] = []
    lister = Lister(api, ServedKind(NODE, "v1"), ListScope(), page_size)
    try:
        for page in lister.pages():
            nodes += [r for r in (node_record(obj, engine) for obj in page) if r is not None]
    except ApiFailure as failure:
        problems.append(f"cannot list nodes: {failure.code} {failure.reason}: {failure.detail}")
    except TransportError as exc:
        problems.append(f"cannot list nodes: {exc}")
    nodes.sort(key=lambda n: (not unhealthy(n), n.name))
    return nodes, problems


def unhealthy(node: NodeRecord) -> bool:
    return bool(node.findings or node.conditions or node.taints or node.cordoned) or any(
        g.allocatable < g.capacity for g in node.gpus
    )
