"""Node facts for `gpu-node-health`: capacity against allocatable per extended resource, conditions, and
whether the scheduler may still place pods there (RULES.md §2)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kubegap import raw
from kubegap.facts.health import health_facts
from kubegap.facts.knobs import Catalogue
from kubegap.facts.model import ObjectFacts, Unit
from kubegap.quantities import count

_KEEP_OFF: Final = ("NoSchedule", "NoExecute")  # a tuple: a malformed effect may be an unhashable list


def node_facts(obj: Mapping[str, Any], catalogue: Catalogue) -> dict[str, Any]:
    spec, status = raw.mapping(obj.get("spec")), raw.mapping(obj.get("status"))
    capacity, allocatable = raw.mapping(status.get("capacity")), raw.mapping(status.get("allocatable"))
    resources: list[dict[str, Any]] = [
        {
            "name": str(name),
            "capacity": count(capacity.get(name)),
            "allocatable": count(allocatable.get(name, 0)),
        }
        for name in sorted(set(capacity) | set(allocatable), key=str)  # YAML keys need not all be str
        if "/" in str(name)  # extended resources only; cpu and memory are not judged here
    ]
    taints = raw.items(spec.get("taints"))
    tainted = any(isinstance(t, Mapping) and t.get("effect") in _KEEP_OFF for t in taints)
    conditions = raw.items(status.get("conditions"))
    return {
        "schedulable": spec.get("unschedulable") is not True and not tainted,
        "gpuCapacity": sum(r["capacity"] for r in resources if catalogue.is_gpu(r["name"])),
        "gpuResources": [r for r in resources if catalogue.is_gpu(r["name"])],
        "resources": resources,
        "conditions": [
            {"type": str(c.get("type", "")), "status": str(c.get("status", ""))}
            for c in conditions
            if isinstance(c, Mapping)
        ],
        **health_facts(raw.mapping(obj.get("metadata"))),  # marks of node-health systems (facts/health.py)
    }


def gather_node(obj: Mapping[str, Any], catalogue: Catalogue) -> ObjectFacts:
    metadata = raw.mapping(obj.get("metadata"))
    annotations = ((("metadata", "annotations"), raw.mapping(metadata.get("annotations"))),)
    unit = Unit("node", {"node": node_facts(obj, catalogue)}, None, None, ("status",), annotations)
    return ObjectFacts({"kind": "Node", "group": ""}, {"node": (unit,)})
