from __future__ import annotations

from typing import Any

import pytest

from kubegap import facts
from kubegap.durations import format_seconds
from kubegap.facts import ObjectFacts, knobs
from kubegap.kinds import workload_of

CATALOGUE = knobs.load()


def gather(obj: dict[str, Any]) -> ObjectFacts:
    workload = workload_of(obj)
    assert workload is not None
    return facts.gather(obj, workload, CATALOGUE, {})


def pod_spec(*containers: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"containers": list(containers), **extra}


def gpu(
    name: str = "trainer", count: Any = 8, resource: str = "nvidia.com/gpu", **extra: Any
) -> dict[str, Any]:
    return {"name": name, "image": "t", "resources": {"limits": {resource: count}}, **extra}


def job(
    *containers: dict[str, Any], parallelism: int | None = None, labels: dict[str, str] | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {"template": {"spec": pod_spec(*containers)}}
    if parallelism is not None:
        spec["parallelism"] = parallelism
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "labels": labels or {}},
        "spec": spec,
    }


@pytest.mark.parametrize(
    ("resources", "gpus", "accelerators"),
    [
        ({"limits": {"nvidia.com/gpu": 8}}, 8, 8),
        ({"limits": {"nvidia.com/gpu": "8"}}, 8, 8),
        ({"limits": {"nvidia.com/gpu": " 4 "}}, 4, 4),
        ({"requests": {"nvidia.com/gpu": 2}}, 2, 2),
        ({"limits": {"nvidia.com/gpu": 4}, "requests": {"nvidia.com/gpu": 2}}, 4, 4),  # the limit counts
        ({"limits": {"nvidia.com/gpu": 0}, "requests": {"nvidia.com/gpu": 2}}, 0, 0),
        ({"limits": {"amd.com/gpu": 8}}, 8, 8),
        ({"limits": {"nvidia.com/mig-1g.10gb": 2, "nvidia.com/mig-3g.40gb": 1}}, 3, 3),
        ({"limits": {"habana.ai/gaudi": 8}}, 0, 8),
        ({"limits": {"google.com/tpu": "4"}}, 0, 4),
        ({"limits": {"aws.amazon.com/neuroncore": 32, "vpc.amazonaws.com/efa": 4}}, 0, 32),
        ({"limits": {"nvidia.com/gpu": "8k"}}, 0, 0),
        ({"limits": {"nvidia.com/gpu": "1.5"}}, 0, 0),
        ({"limits": {"nvidia.com/gpu": "+8"}}, 0, 0),
        ({"limits": {"nvidia.com/gpu": True}}, 0, 0),
        ({"limits": {"nvidia.com/gpu": -2}}, 0, 0),
        ({"limits": {"nvidia.com/gpu": None}}, 0, 0),
        ({"limits": ["nvidia.com/gpu"]}, 0, 0),
        ("8 GPUs", 0, 0),
        ({"limits": {"cpu": "8", "memory": "64Gi"}}, 0, 0),
    ],
)
def test_container_counts(resources: Any, gpus: int, accelerators: int) -> None:
    obj = job({"name": "c", "resources": resources})
    container = gather(obj).units["container"][0].bindings["container"]
    assert (container["gpus"], container["accelerators"]) == (gpus, accelerators)


def test_init_containers_and_sidecars() -> None:
    obj = job(gpu("a", 4), gpu("b", 2), {"name": "log"})
    obj["spec"]["template"]["spec"]["initContainers"] = [gpu("init", 8)]
    gathered = gather(obj)
    (template,) = gathered.units["template"]
    assert template.bindings["template"]["gpusPerPod"] == 6
    assert [u.container for u in gathered.units["container"]] == ["a", "b", "log"]
    assert gathered.facts["totalGpus"] == 6


def pytorchjob(
    master: int | None, workers: int, per_pod: int = 8, resource: str = "nvidia.com/gpu"
) -> dict[str, Any]:
    specs: dict[str, Any] = {
        "Worker": {"replicas": workers, "template": {"spec": pod_spec(gpu(count=per_pod, resource=resource))}}
    }
    if master is not None:
        specs["Master"] = {
            "replicas": master,
            "template": {"spec": pod_spec(gpu(count=per_pod, resource=resource))},
        }
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "p"},
        "spec": {"pytorchReplicaSpecs": specs},
    }


def mpijob() -> dict[str, Any]:
    return {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": "m"},
        "spec": {
            "mpiReplicaSpecs": {
                "Launcher": {"replicas": 1, "template": {"spec": pod_spec({"name": "launcher"})}},
                "Worker": {"replicas": 4, "template": {"spec": pod_spec(gpu())}},
            }
        },
    }


def deployment(labels: dict[str, str] | None = None, replicas: int = 2) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "serve", "labels": labels or {}},
        "spec": {"replicas": replicas, "template": {"spec": pod_spec(gpu(count=1))}},
    }


def lws() -> dict[str, Any]:
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": "l"},
        "spec": {
            "replicas": 1,
            "leaderWorkerTemplate": {"size": 4, "workerTemplate": {"spec": pod_spec(gpu())}},
        },
    }


# (case, object, totalGpus, gpuPods, totalAccelerators, training, distributed, multiNode)
TOTALS: list[tuple[str, dict[str, Any], int, int, int, bool, bool, bool]] = [
    ("one GPU", job(gpu(count=1)), 1, 1, 1, True, False, False),
    ("one pod, eight GPUs", job(gpu()), 8, 1, 8, True, True, False),
    ("parallel pods", job(gpu(count=1), parallelism=4), 4, 4, 4, True, True, True),
    ("parallelism 0", job(gpu(), parallelism=0), 0, 0, 0, False, False, False),
    ("no accelerators", job({"name": "cpu"}), 0, 0, 0, False, False, False),
    (
        "labelled training without GPUs",
        job({"name": "cpu"}, labels={"kubegap.dev/workload": "training"}),
        0,
        0,
        0,
        True,
        False,
        False,
    ),
    (
        "labelled inference",
        job(gpu(), parallelism=2, labels={"kubegap.dev/workload": "inference"}),
        16,
        2,
        16,
        False,
        True,
        True,
    ),
    ("other label value", job(gpu(), labels={"kubegap.dev/workload": "batch"}), 8, 1, 8, True, True, False),
    (
        "TPUs train but are no GPUs",
        job(gpu(count=4, resource="google.com/tpu"), parallelism=2),
        0,
        0,
        8,
        True,
        False,
        False,
    ),
    ("master and workers", pytorchjob(1, 3), 32, 4, 32, True, True, True),
    ("workers only", pytorchjob(None, 2, per_pod=1), 2, 2, 2, True, True, True),
    ("launcher without GPUs", mpijob(), 32, 4, 32, True, True, True),
    ("Deployment serves", deployment(), 2, 2, 2, False, True, True),
    (
        "Deployment labelled training",
        deployment({"kubegap.dev/workload": "training"}),
        2,
        2,
        2,
        True,
        True,
        True,
    ),
    ("LeaderWorkerSet serves", lws(), 32, 4, 32, False, True, True),
]


@pytest.mark.parametrize(
    ("case", "obj", "total", "pods", "accelerators", "training", "distributed", "multi_node"),
    TOTALS,
    ids=[t[0] for t in TOTALS],
)
def test_workload_totals(
    case: str,
    obj: dict[str, Any],
    total: int,
    pods: int,
    accelerators: int,
    training: bool,
    distributed: bool,
    multi_node: bool,
) -> None:
    found = gather(obj).facts
    assert (found["totalGpus"], found["gpuPods"], found["totalAccelerators"]) == (total, pods, accelerators)
    assert (found["training"], found["distributed"], found["multiNode"]) == (
        training,
        distributed,
        multi_node,
    )


def test_kind_and_group() -> None:
    found = gather(pytorchjob(1, 1)).facts
    assert (found["kind"], found["group"]) == ("PyTorchJob", "kubeflow.org")


@pytest.mark.parametrize(
    ("obj", "deadline", "restart"),
    [
        (job(gpu()), None, True),
        (
            {**job(gpu()), "spec": {**job(gpu())["spec"], "activeDeadlineSeconds": 300, "backoffLimit": 0}},
            300.0,
            False,
        ),
        # no runPolicy.backoffLimit: PyTorchJob pods default to OnFailure and restart without limit
        (pytorchjob(1, 1), None, True),
        (deployment(), None, None),
    ],
)
def test_deadline_and_restart(obj: dict[str, Any], deadline: float | None, restart: bool | None) -> None:
    found = gather(obj).facts
    assert found.get("deadlineSeconds") == deadline
    if restart is None:
        assert "restart" not in found
    else:
        assert found["restart"]["enabled"] is restart
        assert isinstance(found["restart"]["path"], str)


def test_restart_fact_points_at_the_deciding_field() -> None:
    obj = job(gpu())
    obj["spec"]["backoffLimit"] = 0
    assert gather(obj).facts["restart"] == {
        "enabled": False,
        "detail": "spec.backoffLimit is 0",
        "path": "spec.backoffLimit",
    }


@pytest.mark.parametrize(
    ("probe", "window"),
    [
        ({"exec": {"command": ["true"]}}, 31.0),
        ({"httpGet": {"path": "/", "port": 8080}, "periodSeconds": 60, "failureThreshold": 5}, 301.0),
        ({"tcpSocket": {"port": 1}, "periodSeconds": 30, "failureThreshold": 10, "timeoutSeconds": 5}, 305.0),
        ({"grpc": {"port": 1}, "periodSeconds": 0, "failureThreshold": -1, "timeoutSeconds": "9"}, 31.0),
        ({"exec": {}, "periodSeconds": True}, 31.0),
        ({"periodSeconds": 60}, None),  # no handler: not a probe
        ("yes", None),
        (None, None),
    ],
)
def test_liveness_window(probe: Any, window: float | None) -> None:
    container = gpu(livenessProbe=probe)
    found = gather(job(container)).units["container"][0].bindings["container"]
    if window is None:
        assert "liveness" not in found
    else:
        assert found["liveness"] == {
            "windowSeconds": window,
            "windowText": format_seconds(window),
            "path": "spec.template.spec.containers[0].livenessProbe",
        }


def test_startup_probe_flag() -> None:
    found = gather(job(gpu(startupProbe={"exec": {}}), gpu("b"))).units["container"]
    assert [u.bindings["container"]["startupProbe"] for u in found] == [True, False]


def test_template_facts() -> None:
    obj = job(
        gpu(resources={"limits": {"nvidia.com/gpu": 8, "rdma/ib": 1}, "requests": {"cpu": "4"}}),
        {"name": "side", "resources": {"limits": {"vpc.amazonaws.com/efa": 1}}},
        parallelism=3,
    )
    template = obj["spec"]["template"]
    template["metadata"] = {"annotations": {"k8s.v1.cni.cncf.io/networks": "ib0", "n": 5}}
    template["spec"].update({"hostNetwork": True, "resourceClaims": [{"name": "nic"}]})
    (unit,) = gather(obj).units["template"]
    assert unit.bindings["template"] == {
        "role": "Job",
        "path": "spec.template",
        "replicas": 3,
        "podLevel": True,
        "gpusPerPod": 8,
        "acceleratorsPerPod": 8,
        "annotations": {"k8s.v1.cni.cncf.io/networks": "ib0", "n": "5"},
        "resourceNames": ["cpu", "nvidia.com/gpu", "rdma/ib", "vpc.amazonaws.com/efa"],
        "resourceNamesText": "cpu\nnvidia.com/gpu\nrdma/ib\nvpc.amazonaws.com/efa",
        "resources": [
            {"name": "nvidia.com/gpu", "count": 8},
            {"name": "rdma/ib", "count": 1},
            {"name": "vpc.amazonaws.com/efa", "count": 1},
        ],
        "unreadableResources": [],
        "nics": {"multus": 1, "unresolved": []},
        "pinnedLabels": {},
        "ibHcaCounted": False,
        "hostNetwork": True,
        "fabricDevices": False,
        "resourceClaims": 1,
        "blanketToleration": "",
        "toleratedKeys": [],
        "toleratedKeysText": "",
        "toleratedKeyPaths": {},
    }


@pytest.mark.parametrize(("host_network", "expected"), [(True, True), ("true", False), (None, False)])
def test_host_network_only_when_true(host_network: Any, expected: bool) -> None:
    obj = job(gpu())
    obj["spec"]["template"]["spec"]["hostNetwork"] = host_network
    assert gather(obj).units["template"][0].bindings["template"]["hostNetwork"] is expected


def test_units_carry_role_container_path_and_exemption_sources() -> None:
    obj = pytorchjob(1, 2)
    obj["metadata"]["annotations"] = {"w": "1"}
    obj["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["metadata"] = {"annotations": {"t": "2"}}
    gathered = gather(obj)
    assert [(u.scope, u.role) for u in gathered.units["workload"]] == [("workload", None)]
    templates = {u.role: u for u in gathered.units["template"]}
    assert set(templates) == {"Master", "Worker"}
    worker = next(u for u in gathered.units["container"] if u.role == "Worker")
    assert (worker.scope, worker.container) == ("container", "trainer")
    assert worker.path == ("spec", "pytorchReplicaSpecs", "Worker", "template", "spec", "containers", 0)
    assert [dict(notes) for _, notes in worker.annotations] == [{"t": "2"}, {"w": "1"}]  # nearest first
    assert worker.annotations[0][0] == (
        "spec",
        "pytorchReplicaSpecs",
        "Worker",
        "template",
        "metadata",
        "annotations",
    )


def test_env_facts_list_only_visible_values() -> None:
    container = gpu(
        env=[
            {"name": "NCCL_IB_HCA", "value": "mlx5_0"},
            {"name": "SECRET", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
        ]
    )
    found = gather(job(container)).units["container"][0].bindings["container"]
    assert found["env"] == {"NCCL_IB_HCA": "mlx5_0"}
    assert found["envNames"] == ["NCCL_IB_HCA", "SECRET"]
    assert found["envPaths"] == {
        "NCCL_IB_HCA": "spec.template.spec.containers[0].env[0]",
        "SECRET": "spec.template.spec.containers[0].env[1]",
    }
    assert found["unresolved"] == ["env SECRET from Secret s (never read)"]


def test_checkpoint_knobs_of_containers_without_accelerators_do_not_count() -> None:
    obj = job(
        gpu(args=["--save-interval", "100", "--save", "/ckpt"]),
        {"name": "uploader", "args": ["train_time_interval=01:00:00"]},
    )
    checkpoint = gather(obj).facts["checkpoint"]
    assert checkpoint["steps"]["steps"] == 100
    assert "interval" not in checkpoint


def test_least_safe_interval_across_templates_counts() -> None:
    obj = pytorchjob(1, 1)
    specs = obj["spec"]["pytorchReplicaSpecs"]
    specs["Master"]["template"]["spec"]["containers"][0]["args"] = ["train_time_interval=00:05:00"]
    specs["Worker"]["template"]["spec"]["containers"][0]["args"] = ["train_time_interval=00:20:00"]
    assert gather(obj).facts["checkpoint"]["interval"]["seconds"] == 1200.0


def test_namespace_defaults_for_configmaps() -> None:
    obj = job(gpu(env=[{"name": "A", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "a"}}}]))
    workload = workload_of(obj)
    assert workload is not None
    gathered = facts.gather(obj, workload, CATALOGUE, {("default", "cm"): {"a": "1"}})
    assert gathered.units["container"][0].bindings["container"]["env"] == {"A": "1"}


def test_node_facts_unit() -> None:
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n", "annotations": {"ignore.kubegap.dev/gpu-node-health": "burn-in"}},
        "spec": {},
        "status": {"capacity": {"nvidia.com/gpu": "8"}, "allocatable": {"nvidia.com/gpu": "8"}},
    }
    gathered = facts.gather_node(node, CATALOGUE)
    assert gathered.facts == {"kind": "Node", "group": ""}
    (unit,) = gathered.units["node"]
    assert unit.scope == "node"
    assert unit.bindings["node"]["gpuCapacity"] == 8
    assert unit.path == ("status",)
    assert dict(unit.annotations[0][1]) == {"ignore.kubegap.dev/gpu-node-health": "burn-in"}
