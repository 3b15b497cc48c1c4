"""Small objects for audit tests, built by hand so each test shows what it feeds the server."""

from __future__ import annotations

from typing import Any


def pytorchjob(
    name: str,
    namespace: str = "team-a",
    gpus: int = 8,
    workers: int = 2,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    container = {"name": "trainer", "image": "trainer:1", "resources": {"limits": {"nvidia.com/gpu": gpus}}}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "spec": {
            "pytorchReplicaSpecs": {
                "Worker": {"replicas": workers, "template": {"spec": {"containers": [container]}}}
            }
        },
    }


def pod(
    name: str,
    namespace: str = "team-a",
    gpus: int = 1,
    owner_uid: str | None = None,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": labels or {}}
    if owner_uid is not None:
        meta["ownerReferences"] = [
            {
                "apiVersion": "kubeflow.org/v1",
                "kind": "PyTorchJob",
                "name": "owner",
                "uid": owner_uid,
                "controller": True,
            }
        ]
    container = {"name": "main", "image": "trainer:1", "resources": {"limits": {"nvidia.com/gpu": gpus}}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {"containers": [container]}}


def monitor(
    node_name: str, image: str = "nvcr.io/nvidia/k8s/dcgm-exporter:3.3.7-3.5.0-ubuntu22.04"
) -> dict[str, Any]:
    """A health monitor's DaemonSet pod running on a node (what link-monitor looks for)."""
    return bound(pod(f"monitor-{node_name}", "gpu-operator", gpus=0), node_name, image=image)


def bound(
    obj: dict[str, Any], node_name: str, phase: str = "Running", image: str | None = None
) -> dict[str, Any]:
    """The pod as the scheduler and kubelet left it: on a node, in a phase."""
    obj["spec"]["nodeName"] = node_name
    obj["status"] = {"phase": phase}
    if image is not None:
        obj["spec"]["containers"][0]["image"] = image
    return obj


def node(name: str, gpus: int = 8, allocatable: int | None = None) -> dict[str, Any]:
    gpu = {"nvidia.com/gpu": str(gpus)}
    alloc = {"nvidia.com/gpu": str(gpus if allocatable is None else allocatable)}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {}},
        "spec": {},
        "status": {"capacity": gpu, "allocatable": alloc, "conditions": []},
    }


def configmap(name: str, namespace: str, data: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": data,
    }


def secret(name: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "data": {"token": "c2VjcmV0"},
    }
