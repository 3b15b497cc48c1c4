"""A reproducible corpus of realistic training manifests (PyTorchJob, JobSet, Job; EFA, NCCL env,
Megatron-LM arguments) for the benchmarks. Deterministic: the same seed writes the same bytes."""

from __future__ import annotations

import random
from pathlib import Path

import yaml

_ENV = [
    ("NCCL_DEBUG", "WARN"),
    ("NCCL_SOCKET_IFNAME", "eth0"),
    ("FI_PROVIDER", "efa"),
    ("FI_EFA_USE_DEVICE_RDMA", "1"),
    ("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1"),
    ("NCCL_NVLS_ENABLE", "0"),
    ("CUDA_DEVICE_MAX_CONNECTIONS", "1"),
    ("OMP_NUM_THREADS", "8"),
]


def _container(rng: random.Random, name: str) -> dict[str, object]:
    save = rng.choice([100, 250, 500, 1000, 2000])
    timeout = rng.choice([10, 20, 30, 60])
    script = (
        "torchrun --nnodes $NNODES --nproc-per-node 8 pretrain_gpt.py "
        f"--tensor-model-parallel-size 8 --pipeline-model-parallel-size {rng.choice([1, 2, 4])} "
        f"--num-layers {rng.choice([32, 48, 80])} --hidden-size 8192 --seq-length 4096 "
        f"--micro-batch-size 1 --global-batch-size 1024 --save /ckpt --save-interval {save} "
        f"--distributed-timeout-minutes {timeout} --bf16 --use-flash-attn"
    )
    env = [{"name": n, "value": v} for n, v in rng.sample(_ENV, k=rng.randint(4, len(_ENV)))]
    return {
        "name": name,
        "image": f"registry.example.com/train/megatron:24.{rng.randint(1, 12):02d}",
        "command": ["bash", "-c"],
        "args": [script],
        "env": env,
        "resources": {
            "limits": {"nvidia.com/gpu": 8, "vpc.amazonaws.com/efa": 32, "memory": "1600Gi", "cpu": "180"},
            "requests": {"nvidia.com/gpu": 8, "vpc.amazonaws.com/efa": 32, "memory": "1600Gi", "cpu": "180"},
        },
        "volumeMounts": [{"name": "ckpt", "mountPath": "/ckpt"}, {"name": "dshm", "mountPath": "/dev/shm"}],
    }


def _pod(rng: random.Random, restart_policy: str | None = None) -> dict[str, object]:
    metadata = {"annotations": {"kubegap.dev/step-time": f"{rng.uniform(0.8, 9.0):.1f}s"}}
    spec: dict[str, object] = {
        "containers": [_container(rng, "trainer")],
        "volumes": [
            {"name": "ckpt", "persistentVolumeClaim": {"claimName": "ckpt"}},
            {"name": "dshm", "emptyDir": {"medium": "Memory"}},
        ],
        "nodeSelector": {"node.kubernetes.io/instance-type": "p5.48xlarge"},
    }
    if restart_policy is not None:
        spec["restartPolicy"] = restart_policy
    return {"metadata": metadata, "spec": spec}


def manifest(rng: random.Random, index: int) -> dict[str, object]:
    kind = rng.choice(["PyTorchJob", "JobSet", "Job"])
    meta = {
        "name": f"train-{index:05d}",
        "namespace": f"team-{index % 17}",
        "labels": {"team": f"t{index % 17}"},
    }
    if kind == "PyTorchJob":
        return {
            "apiVersion": "kubeflow.org/v1",
            "kind": kind,
            "metadata": meta,
            "spec": {
                "runPolicy": {"backoffLimit": rng.choice([0, 3])},
                "pytorchReplicaSpecs": {
                    "Worker": {"replicas": rng.choice([2, 4, 16]), "template": _pod(rng)}
                },
            },
        }
    if kind == "JobSet":
        return {
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": kind,
            "metadata": meta,
            "spec": {
                "failurePolicy": {"maxRestarts": rng.choice([0, 2])},
                "replicatedJobs": [
                    {
                        "name": "workers",
                        "replicas": 1,
                        "template": {"spec": {"parallelism": 4, "completions": 4, "template": _pod(rng)}},
                    }
                ],
            },
        }
    # The API server refuses a Job whose pods would restart `Always`, the default (batch validation); a
    # JobSet's webhook writes `OnFailure` into its child Jobs' pods, and the training operator its own.
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": meta,
        "spec": {
            "parallelism": 2,
            "completions": 2,
            "backoffLimit": rng.choice([0, 4]),
            "template": _pod(rng, "Never" if index % 2 else "OnFailure"),
        },
    }


def write(directory: Path, count: int, seed: int = 7) -> list[Path]:
    rng = random.Random(seed)
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for index in range(count):
        path = directory / f"train-{index:05d}.yaml"
        path.write_text(yaml.safe_dump(manifest(rng, index), sort_keys=False), "utf-8")
        paths.append(path)
    return paths
