"""Cluster facts: GPU nodes seen with the pods bound to them, for the validations no single object can
answer (RULES.md §2 v3 `hot-spares`, `link-monitor`).

The view keeps per node only what those validations read (its pool label value, health, the distinct
images of its pods, the gangs of its GPU pods), never whole objects, so memory grows with nodes, not pods.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubegap import raw
from kubegap.facts.container import resource_counts
from kubegap.facts.knobs import Catalogue
from kubegap.facts.model import ObjectFacts, Unit
from kubegap.facts.node import node_facts

POOL_API_VERSION = "kubegap.dev/v1alpha1"  # a node pool is no API object: findings name it as this kind
POOL_KIND = "NodePool"
_DONE = ("Succeeded", "Failed")
# Labels the controllers of gang-scheduled workloads put on every pod of one job, nearest first:
# JobSet (jobset.sigs.k8s.io/jobset-name), Kubeflow training-operator (training.kubeflow.org/job-name),
# LeaderWorkerSet (leaderworkerset.sigs.k8s.io/name), Volcano (volcano.sh/job-name), KubeRay
# (ray.io/cluster), batch/v1 Job (batch.kubernetes.io/job-name, and job-name before Kubernetes 1.27).
GANG_LABELS = (
    "jobset.sigs.k8s.io/jobset-name",
    "training.kubeflow.org/job-name",
    "leaderworkerset.sigs.k8s.io/name",
    "volcano.sh/job-name",
    "ray.io/cluster",
    "batch.kubernetes.io/job-name",
    "job-name",
)


@dataclass(slots=True)
class SeenNode:
    name: str
    labels: Mapping[str, str]
    annotations: Mapping[str, Any]
    facts: dict[str, Any]  # node_facts: capacity, schedulable, …
    flagged: bool = False  # a node-scope policy failed on it (gpu-node-health: not healthy)
    images: set[str] = field(default_factory=set)  # of pods bound here and not finished
    gangs: set[str] = field(default_factory=set)  # of those pods that request GPUs


class ClusterView:
    """Nodes and Pods as an audit lists them; `units` turns them into facts once both lists are read."""

    def __init__(self, catalogue: Catalogue) -> None:
        self.catalogue = catalogue
        self.nodes: dict[str, SeenNode] = {}
        self._early: dict[str, tuple[set[str], set[str]]] = {}  # pods seen before their node

    def add_node(self, obj: Mapping[str, Any], flagged: bool) -> None:
        meta = raw.mapping(obj.get("metadata"))
        name = str(meta.get("name") or "")
        labels = {str(k): str(v) for k, v in raw.mapping(meta.get("labels")).items()}
        node = SeenNode(name, labels, raw.mapping(meta.get("annotations")), node_facts(obj, self.catalogue))
        node.flagged = flagged
        images, gangs = self._early.pop(name, (set(), set()))
        node.images |= images
        node.gangs |= gangs
        self.nodes[name] = node

    def add_pod(self, obj: Mapping[str, Any]) -> None:
        spec, status = raw.mapping(obj.get("spec")), raw.mapping(obj.get("status"))
        where = spec.get("nodeName")
        if not isinstance(where, str) or not where or status.get("phase") in _DONE:
            return
        images, gangs = self._holder(where)
        containers = [c for c in raw.items(spec.get("containers")) if isinstance(c, Mapping)]
        images.update(str(c.get("image")) for c in containers if c.get("image"))
        gpus = sum(n for c in containers for r, n in resource_counts(c).items() if self.catalogue.is_gpu(r))
        if gpus > 0:
            gangs.add(gang_of(obj))

    def _holder(self, node: str) -> tuple[set[str], set[str]]:
        seen = self.nodes.get(node)
        if seen is not None:
            return seen.images, seen.gangs
        return self._early.setdefault(node, (set(), set()))

    def gpu_nodes(self) -> list[SeenNode]:
        return [n for n in self.nodes.values() if n.facts["gpuCapacity"] > 0]


def gang_of(pod: Mapping[str, Any]) -> str:
    """`namespace/name` of a pod's job: the first gang label, else its controller, else the pod itself."""
    meta = raw.mapping(pod.get("metadata"))
    namespace = str(meta.get("namespace") or "")
    labels = raw.mapping(meta.get("labels"))
    for key in GANG_LABELS:
        if labels.get(key):
            return f"{namespace}/{labels[key]}"
    for owner in raw.items(meta.get("ownerReferences")):
        if isinstance(owner, Mapping) and owner.get("controller") is True:
            return f"{namespace}/{owner.get('kind', '')}/{owner.get('name', '')}"
    return f"{namespace}/{meta.get('name') or ''}"


def node_unit_facts(node: SeenNode) -> ObjectFacts:
    """One `cluster-node` unit: the node's facts plus the images of the pods running on it."""
    bindings = {"node": {**node.facts, "name": node.name, "images": sorted(node.images)}}
    annotations = ((("metadata", "annotations"), node.annotations),)
    unit = Unit("cluster-node", bindings, None, None, None, annotations)
    return ObjectFacts({"kind": "Node", "group": ""}, {"cluster-node": (unit,)})


def pools(view: ClusterView, label: str) -> list[tuple[str, ObjectFacts]]:
    """(pool name, facts) per value of `label` among GPU nodes; nodes without it form their own pool."""
    members: dict[str, list[SeenNode]] = {}
    for node in view.gpu_nodes():
        members.setdefault(node.labels.get(label, ""), []).append(node)
    out = []
    for value, nodes in sorted(members.items()):
        name = f"{label}={value}" if value else f"{label} unset"
        unit = Unit("pool", {"pool": pool_facts(name, nodes)}, None, None, None, ())
        out.append((name, ObjectFacts({"kind": POOL_KIND, "group": "kubegap.dev"}, {"pool": (unit,)})))
    return out


def pool_facts(name: str, nodes: list[SeenNode]) -> dict[str, Any]:
    spans: Counter[str] = Counter(g for n in nodes for g in n.gangs)  # gang -> nodes of this pool it holds
    spares = sorted(n.name for n in nodes if n.facts["schedulable"] and not n.flagged and not n.gangs)
    largest, gang = max(((count, g) for g, count in spans.items()), default=(0, ""))
    return {
        "name": name,
        "nodes": len(nodes),
        "spares": len(spares),
        "spareNodes": spares[:10],
        "busy": sum(1 for n in nodes if n.gangs),
        "unhealthy": sum(1 for n in nodes if n.flagged or not n.facts["schedulable"]),
        "largestGang": largest,
        "largestGangName": gang,
    }
