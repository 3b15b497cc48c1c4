"""`kubegap audit --demo`: the audit against an in-process API server, with no cluster and nothing to set up.

The server (kubegap.testserver, plain HTTP on 127.0.0.1 with a bearer token) serves the bundled policy
examples and a small GPU node pool, one node of which has lost a GPU. The audit then runs as against any
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


def example_objects() -> Iterator[Mapping[str, Any]]:
    examples = [str(p) for p in sorted(policyset.bundled_root().glob("*/examples"))]
    for doc in manifests.Reader().read(examples):
        if doc.obj is not None:
            yield doc.obj


def load(server: ApiServer) -> int:
    """Serve the examples and the node pool; objects the server has no resource for, or that share a
    name with one already served, are left out. Returns how many objects are served."""
    served = 0
    for obj in (*example_objects(), *NODES):
        with contextlib.suppress(ValueError, ApiError):
            server.store.add(obj)
            served += 1
    return served


@contextlib.contextmanager
def cluster() -> Iterator[tuple[str, int]]:
    """(kubeconfig path, objects served) while the demo server runs."""
    with tempfile.TemporaryDirectory(prefix="kubegap-demo-") as folder, ApiServer() as server:
        served = load(server)
        yield str(server.kubeconfig(Path(folder) / "kubeconfig", context="kubegap-demo")), served
