"""GPU counts shown beside each offender in audit reports (RULES.md §1 GPU resources, default set)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubegap.workloads import workload_of

_GPU_NAMES = ("nvidia.com/gpu", "amd.com/gpu")
_GPU_PREFIXES = ("nvidia.com/mig-",)


def is_gpu(resource: str) -> bool:
    return resource in _GPU_NAMES or resource.startswith(_GPU_PREFIXES)


def _count(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return max(value, 0)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return 0


def _gpus(resources: Any) -> int:
    """A container's GPUs: its limit, else its request, per GPU resource name."""
    resources = resources if isinstance(resources, Mapping) else {}
    limits, requests = resources.get("limits"), resources.get("requests")
    limits = limits if isinstance(limits, Mapping) else {}
    requests = requests if isinstance(requests, Mapping) else {}
    names = {str(n) for n in (*limits, *requests) if is_gpu(str(n))}
    return sum(_count(limits[n]) if n in limits else _count(requests.get(n)) for n in names)


def gpu_count(obj: Mapping[str, Any]) -> int:
    """Total GPUs a workload asks for (replicas times GPUs per pod), or a Node's GPU capacity."""
    if obj.get("kind") == "Node" and obj.get("apiVersion") == "v1":
        status = obj.get("status")
        capacity = status.get("capacity") if isinstance(status, Mapping) else None
        if not isinstance(capacity, Mapping):
            return 0
        return sum(_count(v) for k, v in capacity.items() if is_gpu(str(k)))
    workload = workload_of(obj)
    if workload is None:
        return 0
    total = 0
    for template in workload.templates:
        per_pod = sum(_gpus(c.spec.get("resources")) for c in template.containers)
        total += template.replicas * per_pod
    return total
