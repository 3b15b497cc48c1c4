"""AdmissionReview bodies for bench_webhook.py: a 16-worker PyTorchJob CREATE (~10 KB), a ~50 KB UPDATE and
a JobSet of 64 replicated jobs (~105 KB).

The objects look like what a training team submits: NCCL and framework env, probes, volumes, affinity.
They comply with every bundled rule, so each review runs every validation to the end.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable
from typing import Any


def _container(name: str, extra_env: int) -> dict[str, Any]:
    env = {
        "NCCL_IB_HCA": "mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7",
        "NCCL_SOCKET_IFNAME": "eth0",
        "NCCL_DEBUG": "WARN",
        "TORCH_NCCL_ASYNC_ERROR_HANDLING": "3",
        "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC": "300",
        "OMP_NUM_THREADS": "12",
        "PYTHONUNBUFFERED": "1",
        "HF_HOME": "/cache/huggingface",
        "WANDB_PROJECT": "llama-sft",
        "CUDA_DEVICE_MAX_CONNECTIONS": "1",
    }
    env.update({f"TRAINER_OPTION_{i:03d}": f"value-{i:03d}-" + "x" * 24 for i in range(extra_env)})
    return {
        "name": name,
        "image": "nvcr.io/nvidia/pytorch:24.10-py3",
        "command": ["torchrun"],
        "args": ["--nnodes=17", "--nproc_per_node=8", "train.py", "--ddp_timeout", "1200",
                 "--save_strategy", "steps", "--save_steps", "200", "--output_dir", "/ckpt/run-42"],
        "env": [{"name": k, "value": v} for k, v in env.items()],
        "resources": {
            "limits": {"nvidia.com/gpu": "8", "rdma/ib": "1", "cpu": "96", "memory": "1600Gi"},
            "requests": {"nvidia.com/gpu": "8", "rdma/ib": "1", "cpu": "90", "memory": "1500Gi"},
        },
        "livenessProbe": {"exec": {"command": ["/bin/sh", "-c", "find /tmp/heartbeat -mmin -10 | grep -q ."]},
                          "periodSeconds": 60, "failureThreshold": 5, "timeoutSeconds": 5},
        "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}, {"name": "ckpt", "mountPath": "/ckpt"},
                         {"name": "cache", "mountPath": "/cache"}],
        "securityContext": {"capabilities": {"add": ["IPC_LOCK"]}},
    }  # fmt: skip


def _replica(count: int, extra_env: int) -> dict[str, Any]:
    return {
        "replicas": count,
        "restartPolicy": "OnFailure",
        "template": {
            "metadata": {"labels": {"app": "llama-sft"}, "annotations": {"kubegap.dev/step-time": "2.5s"}},
            "spec": {
                "containers": [_container("pytorch", extra_env)],
                "volumes": [
                    {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "256Gi"}},
                    {"name": "ckpt", "persistentVolumeClaim": {"claimName": "llm-ckpt"}},
                    {"name": "cache", "persistentVolumeClaim": {"claimName": "hf-cache"}},
                ],
                "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [
                        {"key": "nvidia.com/gpu.product", "operator": "In", "values": ["NVIDIA-H100-SXM"]}
                    ]}]}}},
            },
        },
    }  # fmt: skip


def pytorchjob(extra_env: int) -> dict[str, Any]:
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {
            "name": "llama-70b-sft", "namespace": "research", "uid": "f1e2d3c4-b5a6-4798-8a9b-0c1d2e3f4a5b",
            "generation": 1, "creationTimestamp": "2026-11-30T09:12:44Z", "labels": {"team": "llm"},
        },
        "spec": {
            "runPolicy": {"backoffLimit": 3, "cleanPodPolicy": "None"},
            "pytorchReplicaSpecs": {"Master": _replica(1, extra_env), "Worker": _replica(16, extra_env)},
        },
    }  # fmt: skip


def review(obj: dict[str, Any], old: dict[str, Any] | None = None) -> bytes:
    group, version = obj["apiVersion"].split("/")
    kind = obj["kind"]
    request = {
        "uid": "c0ffee00-1234-4abc-9def-0123456789ab",
        "kind": {"group": group, "version": version, "kind": kind},
        "resource": {"group": group, "version": version, "resource": kind.lower() + "s"},
        "namespace": "research",
        "name": obj["metadata"]["name"],
        "operation": "UPDATE" if old else "CREATE",
        "userInfo": {"username": "alice@example.com", "groups": ["ml-researchers", "system:authenticated"]},
        "object": obj,
        "oldObject": old,
        "dryRun": False,
        "options": {"kind": "UpdateOptions" if old else "CreateOptions", "apiVersion": "meta.k8s.io/v1"},
    }
    body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
    return json.dumps(body, separators=(",", ":")).encode()


def jobset(jobs: int) -> dict[str, Any]:
    """A JobSet of `jobs` replicated jobs, each a 4-pod Job of one 8-GPU trainer."""
    replicated = []
    for index in range(jobs):
        container = _container("trainer", extra_env=0)
        template = {
            "metadata": {"annotations": {"kubegap.dev/step-time": "2.5s"}},
            "spec": {
                "containers": [container],
                "restartPolicy": "Never",
                "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}}],
            },
        }
        job = {"parallelism": 4, "completions": 4, "backoffLimit": 2, "template": template}
        replicated.append({"name": f"group-{index:02d}", "replicas": 1, "template": {"spec": job}})
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "llm-pretrain", "namespace": "research", "uid": "6b1f2b8e-0c39-4d55-9d8a"},
        "spec": {"failurePolicy": {"maxRestarts": 3}, "replicatedJobs": replicated},
    }  # fmt: skip


def payloads() -> dict[str, bytes]:
    small = review(pytorchjob(extra_env=40))
    big_obj = pytorchjob(extra_env=135)
    old = copy.deepcopy(big_obj)
    big_obj["metadata"]["labels"]["priority"] = "high"
    return {
        "pytorchjob-16w-create": small,
        "pytorchjob-update-50k": review(big_obj, old),
        "jobset-64-jobs-create": review(jobset(64)),
    }


def _containers(value: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    if isinstance(value, dict):
        if isinstance(value.get("containers"), list):
            found.extend(value["containers"])
        for item in value.values():
            found.extend(_containers(item))
    elif isinstance(value, list):
        for item in value:
            found.extend(_containers(item))
    return found


def copies(obj: dict[str, Any], count: int) -> list[dict[str, Any]]:
    """`count` copies that differ in every container's argv, as separate jobs of one team do."""
    out = []
    for index in range(count):
        clone = copy.deepcopy(obj)
        for container in _containers(clone):
            container["args"] = [*container.get("args", []), "--save_steps", str(200 + index)]
        out.append(clone)
    return out


def owned(obj: dict[str, Any]) -> dict[str, Any]:
    """`obj` as a controller makes it (a Job's pod): the copies an engine remembers (kubegap.memo)."""
    made = copy.deepcopy(obj)
    owner = {"apiVersion": "batch/v1", "kind": "Job", "name": "owner", "uid": "5f0e", "controller": True}
    made["metadata"]["ownerReferences"] = [owner]
    return made


def renamed(body: bytes, count: int) -> list[bytes]:
    """`count` reviews of the review's object made by a controller under other names: the pods of one Job,
    which an engine that remembers identical objects (kubegap.memo) evaluates once."""
    base = owned(json.loads(body)["request"]["object"])
    names = ({**base, "metadata": {**base["metadata"], "name": f"pod-{i:05d}"}} for i in range(count))
    return _reviews(body, names)


def variants(body: bytes, count: int) -> list[bytes]:
    """`count` reviews of distinct objects (`copies` of the review's object): a webhook that remembers
    identical objects (kubegap.memo) evaluates each of these anew."""
    return _reviews(body, copies(json.loads(body)["request"]["object"], count))


def _reviews(body: bytes, objects: Iterable[dict[str, Any]]) -> list[bytes]:
    """The review `body` once for each of `objects`."""
    review = json.loads(body)
    out = []
    for obj in objects:
        review["request"]["object"] = obj
        out.append(json.dumps(review, separators=(",", ":")).encode())
    return out
