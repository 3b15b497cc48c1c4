"""`kubegap audit --demo`: the audit against an in-process API server, with no cluster and nothing to set up.

The server (kubegap.testserver, plain HTTP on 127.0.0.1 with a bearer token) serves the bundled policy
examples and a small GPU node pool, one node of which has lost a GPU, with a training job on the other two
and a health monitor's pods on every node but the degraded one. The audit then runs as against any
cluster, through the official client and a kubeconfig written to a temporary folder.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from kubegap import manifests, policyset
from kubegap.testserver.server import ApiServer
from kubegap.testserver.store import ApiError


def gpu_node(name: str, gpus: int = 8, allocatable: int = 8, xid: bool = False) -> dict[str, Any]:
    """An 8-GPU node with InfiniBand; `allocatable` below `gpus` is a GPU the driver lost."""
    conditions = [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]
    if xid:
        conditions.append({"type": "XIDErrors", "status": "True", "reason": "Xid79GpuFellOffTheBus"})
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"node.kubernetes.io/instance-type": "demo.8gpu"}},
        "spec": {},
        "status": {
            "capacity": {"cpu": "224", "memory": "2Ti", "nvidia.com/gpu": str(gpus), "rdma/ib": "8"},
            "allocatable": {
                "cpu": "223",
                "memory": "2Ti",
                "nvidia.com/gpu": str(allocatable),
                "rdma/ib": "8",
            },
            "conditions": conditions,
        },
    }


NODES = (
    gpu_node("demo-gpu-0"),
    gpu_node("demo-gpu-1"),
    gpu_node("demo-gpu-2", allocatable=7, xid=True),  # degraded, yet still schedulable
)


# A 2-node PyTorchJob holds demo-gpu-0 and demo-gpu-1 while demo-gpu-2 is degraded: no healthy, idle
# spare is left in the pool (hot-spares). Node Problem Detector runs on every node but demo-gpu-2, whose
# missing label keeps the DaemonSet off it (link-monitor).
JOB = "demo-llm"
NPD_IMAGE = "registry.k8s.io/node-problem-detector/node-problem-detector:v0.8.20"
UNMONITORED = "demo-gpu-2"


def training_job() -> dict[str, Any]:
    worker = {
        "replicas": 2,
        "template": {
            "spec": {
                "containers": [
                    {
                        "name": "pytorch",
                        "image": "nvcr.io/nvidia/pytorch:24.08-py3",
                        "command": ["torchrun", "--nnodes=2", "--nproc-per-node=8", "train.py"],
                        "resources": {"limits": {"nvidia.com/gpu": 8, "rdma/ib": 8}},
                    }
                ]
            }
        },
    }
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": JOB, "namespace": "demo-training"},
        "spec": {"pytorchReplicaSpecs": {"Worker": worker}},
    }


def bound_pod(
    name: str, namespace: str, node: str, container: Mapping[str, Any], **meta: Any
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, **meta},
        "spec": {"nodeName": node, "containers": [dict(container)]},
        "status": {"phase": "Running"},
    }


def cluster_pods(job: Mapping[str, Any], node_names: list[str]) -> Iterator[dict[str, Any]]:
    """The job's two workers (owned by it, so judged through the job) and one monitor pod per node."""
    owner = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": JOB, "controller": True}
    owner["uid"] = job["metadata"]["uid"]
    container = job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    labels = {"training.kubeflow.org/job-name": JOB, "training.kubeflow.org/replica-type": "worker"}
    for index, node in enumerate(("demo-gpu-0", "demo-gpu-1")):
        yield bound_pod(
            f"{JOB}-worker-{index}", "demo-training", node, container, labels=labels, ownerReferences=[owner]
        )
    monitor = {"name": "node-problem-detector", "image": NPD_IMAGE}
    for index, node in enumerate(n for n in node_names if n != UNMONITORED):
        yield bound_pod(f"node-problem-detector-{index:03d}", "kube-system", node, monitor)


def example_objects() -> Iterator[Mapping[str, Any]]:
    examples = [str(p) for p in sorted(policyset.bundled_root().glob("*/examples"))]
    for doc in manifests.Reader().read(examples):
        if doc.obj is not None:
            yield doc.obj


def load(server: ApiServer) -> int:
    """Serve the examples and the node pool; objects the server has no resource for, or that share a
    name with one already served, are left out. Returns how many objects are served."""
    served = 0
    nodes: list[str] = []
    for obj in (*example_objects(), *NODES):
        with contextlib.suppress(ValueError, ApiError):
            server.store.add(obj)
            served += 1
            nodes += [str(obj["metadata"]["name"])] if obj.get("kind") == "Node" else []
    job = server.store.add(training_job())
    pods = list(cluster_pods(job, nodes))
    for pod in pods:
        server.store.add(pod)
    return served + 1 + len(pods)


@contextlib.contextmanager
def cluster() -> Iterator[tuple[str, int]]:
    """(kubeconfig path, objects served) while the demo server runs."""
    with tempfile.TemporaryDirectory(prefix="kubegap-demo-") as folder, ApiServer() as server:
        served = load(server)
        yield str(server.kubeconfig(Path(folder) / "kubeconfig", context="kubegap-demo")), served
