from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubegap.fieldpath import FieldPath, render
from kubegap.kinds import SUPPORTED_KINDS, kind_info, workload_of
from kubegap.workloads import KindInfo, PodTemplate, Workload

DATA = Path(__file__).parent / "data" / "workloads"
GOLDEN: dict[str, Any] = yaml.safe_load((DATA / "golden.yaml").read_text())
FIXTURES = sorted(path.name for path in DATA.glob("*.yaml") if path.name != "golden.yaml")


def _view(workload: Workload) -> dict[str, Any]:
    """The golden-file shape of a workload."""
    templates = []
    for template in workload.templates:
        row: dict[str, Any] = {
            "role": template.role,
            "path": render(template.path),
            "replicas": template.replicas,
            "containers": [container.name for container in template.containers],
        }
        if not template.pod_level:
            row["pod_level"] = False
        templates.append(row)
    return {
        "group": workload.group,
        "kind": workload.kind,
        "serving": workload.serving,
        "templates": templates,
    }


def _load(name: str) -> Mapping[str, Any]:
    obj = yaml.safe_load((DATA / name).read_text())
    assert isinstance(obj, Mapping)
    return obj


def test_every_fixture_has_a_golden_entry_and_back() -> None:
    assert sorted(GOLDEN) == FIXTURES


@pytest.mark.parametrize("name", FIXTURES)
def test_fixture_matches_golden(name: str) -> None:
    workload = workload_of(_load(name))
    assert workload is not None
    assert _view(workload) == GOLDEN[name]


@pytest.mark.parametrize("name", FIXTURES)
def test_paths_point_at_what_they_describe(name: str) -> None:
    obj = _load(name)
    workload = workload_of(obj)
    assert workload is not None
    for template in workload.templates:
        if template.pod_level:
            assert _at(obj, template.path).get("spec", {}) == template.spec
        for container in template.containers:
            target = _at(obj, container.path)
            if template.pod_level:
                assert target is container.spec
            else:  # TrainJob: the container is synthesized from the mapping at its path
                assert target["image"] == container.spec["image"]


def _at(obj: Any, path: FieldPath) -> Any:
    for part in path:
        obj = obj[part]
    return obj


def _obj(api_version: Any, kind: Any, spec: Any = None) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}}
    if spec is not None:
        obj["spec"] = spec
    return obj


@pytest.mark.parametrize(
    ("api_version", "kind", "expected"),
    [
        ("v1", "Pod", ("", "Pod", "pods", True)),
        ("v1", "Node", ("", "Node", "nodes", False)),
        ("batch/v1", "Job", ("batch", "Job", "jobs", True)),
        ("batch.volcano.sh/v1alpha1", "Job", ("batch.volcano.sh", "Job", "jobs", True)),
        ("batch/v1beta1", "CronJob", ("batch", "CronJob", "cronjobs", True)),  # any version
        ("apps/v1beta2", "Deployment", ("apps", "Deployment", "deployments", True)),
        ("kubeflow.org/v1", "MPIJob", ("kubeflow.org", "MPIJob", "mpijobs", True)),
        ("kubeflow.org/v2beta1", "MPIJob", ("kubeflow.org", "MPIJob", "mpijobs", True)),
        ("kubeflow.org/v2alpha1", "TrainJob", ("kubeflow.org", "TrainJob", "trainjobs", True)),
        ("trainer.kubeflow.org/v1alpha1", "ClusterTrainingRuntime",
         ("trainer.kubeflow.org", "ClusterTrainingRuntime", "clustertrainingruntimes", False)),
        ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet",
         ("leaderworkerset.x-k8s.io", "LeaderWorkerSet", "leaderworkersets", True)),
        ("v1", "Service", None),
        ("kubeflow.org/v1", "MXJob", None),
        ("ray.io/v1", "RayService", None),
        ("apps/v1", "Pod", None),  # right kind, wrong group
        ("jobset.x-k8s.io/v1alpha2", "Job", None),
        ("batch/v1", "job", None),  # kinds are case-sensitive
        (None, "Pod", None),
        ("v1", None, None),
        (1, "Pod", None),
        ("v1", ["Pod"], None),
    ],
)  # fmt: skip
def test_kind_info(api_version: Any, kind: Any, expected: tuple[str, str, str, bool] | None) -> None:
    info = kind_info(_obj(api_version, kind))
    got = None if info is None else (info.group, info.kind, info.plural, info.namespaced)
    assert got == expected


def test_volcano_job_is_not_a_batch_job() -> None:
    tasks = {"tasks": [{"name": "w", "replicas": 3, "template": {"spec": {"containers": [{"name": "c"}]}}}]}
    volcano = workload_of(_obj("batch.volcano.sh/v1alpha1", "Job", tasks))
    batch = workload_of(_obj("batch/v1", "Job", tasks))
    assert volcano is not None and batch is not None
    assert [(t.role, render(t.path), t.replicas) for t in volcano.templates] == [
        ("w", "spec.tasks[0].template", 3)
    ]
    assert [(t.role, render(t.path), t.replicas, t.containers) for t in batch.templates] == [
        ("Job", "spec.template", 1, ())
    ]


@pytest.mark.parametrize("api_version", ["trainer.kubeflow.org/v1alpha1", "kubeflow.org/v2alpha1"])
def test_trainjob_trainer_is_read_as_one_container(api_version: str) -> None:
    env = [{"name": "NCCL_DEBUG", "value": "WARN"}]
    resources = {"limits": {"nvidia.com/gpu": 8}}
    trainer = {"image": "i", "command": ["torchrun"], "args": ["a.py"], "env": env, "numNodes": 2,
               "numProcPerNode": 8, "resourcesPerNode": resources}  # fmt: skip
    workload = workload_of(_obj(api_version, "TrainJob", {"trainer": trainer}))
    assert workload is not None
    (template,) = workload.templates
    assert (template.role, template.path, template.replicas, template.pod_level) == (
        "trainer", ("spec", "trainer"), 2, False
    )  # fmt: skip
    assert (template.metadata, template.spec) == ({}, {})
    (container,) = template.containers
    assert (container.name, container.path) == ("trainer", ("spec", "trainer"))
    assert container.spec == {"image": "i", "command": ["torchrun"], "args": ["a.py"], "env": env,
                              "resources": resources}  # fmt: skip


@pytest.mark.parametrize(
    ("spec", "replicas", "containers"),
    [
        ({"trainer": {"image": "i"}}, 1, [{"image": "i"}]),  # numNodes defaults to 1
        ({"trainer": {}}, 1, [{}]),
        ({"trainer": {"numNodes": 0}}, 0, [{}]),
        ({"trainer": {"numNodes": "4"}}, 1, [{}]),
        ({"trainer": {"numNodes": True}}, 1, [{}]),
        ({"trainer": "oops"}, 1, []),
        ({"runtimeRef": {"name": "torch-distributed"}}, 1, []),  # everything from the runtime
        (None, 1, []),
    ],
)
def test_trainjob_defaults_and_malformed(spec: Any, replicas: int, containers: list[dict[str, Any]]) -> None:
    workload = workload_of(_obj("trainer.kubeflow.org/v1alpha1", "TrainJob", spec))
    assert workload is not None
    (template,) = workload.templates
    assert template.replicas == replicas
    assert [dict(container.spec) for container in template.containers] == containers


def _replicas(obj: Mapping[str, Any]) -> list[tuple[str, int]]:
    workload = workload_of(obj)
    assert workload is not None
    return [(template.role, template.replicas) for template in workload.templates]


def _rs(replicas: Any = None, **extra: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"template": {"spec": {"containers": [{"name": "c"}]}}, **extra}
    if replicas is not None:
        spec["replicas"] = replicas
    return spec


def _job(name: Any, replicas: Any = None, parallelism: Any = None) -> dict[str, Any]:
    job_spec: dict[str, Any] = {"template": {"spec": {"containers": []}}}
    if parallelism is not None:
        job_spec["parallelism"] = parallelism
    job: dict[str, Any] = {"name": name, "template": {"spec": job_spec}}
    if replicas is not None:
        job["replicas"] = replicas
    return job


def _lws(replicas: Any, size: Any, leader: bool) -> dict[str, Any]:
    template: dict[str, Any] = {"size": size, "workerTemplate": {}}
    if leader:
        template["leaderTemplate"] = {}
    return _obj(
        "leaderworkerset.x-k8s.io/v1",
        "LeaderWorkerSet",
        {"replicas": replicas, "leaderWorkerTemplate": template},
    )


PT = "kubeflow.org/v1"
JS = "jobset.x-k8s.io/v1alpha2"
RAY = "ray.io/v1"


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        # Job and CronJob: parallelism, default 1; 0 is a legal count
        (_obj("batch/v1", "Job", {}), [("Job", 1)]),
        (_obj("batch/v1", "Job", {"parallelism": 0}), [("Job", 0)]),
        (_obj("batch/v1", "Job", {"parallelism": -2}), [("Job", 1)]),
        (_obj("batch/v1", "Job", {"parallelism": True}), [("Job", 1)]),
        (_obj("batch/v1", "Job", {"parallelism": 2.0}), [("Job", 1)]),
        (_obj("batch/v1", "CronJob", {"jobTemplate": {"spec": {"parallelism": 5}}}), [("Job", 5)]),
        (_obj("batch/v1", "CronJob", {"jobTemplate": "nope"}), [("Job", 1)]),
        # apps/v1: replicas, default 1; DaemonSet always 1
        (_obj("apps/v1", "Deployment", {"replicas": 0}), [("Deployment", 0)]),
        (_obj("apps/v1", "StatefulSet", {"replicas": "3"}), [("StatefulSet", 1)]),
        (_obj("apps/v1", "DaemonSet", {"replicas": 7}), [("DaemonSet", 1)]),
        # Kubeflow: replicas default 1, map order kept, elastic max for Worker only
        (_obj(PT, "PyTorchJob", {"pytorchReplicaSpecs": {"Worker": _rs(), "Master": _rs()}}),
         [("Worker", 1), ("Master", 1)]),
        (_obj(PT, "PyTorchJob", {"elasticPolicy": {"maxReplicas": 8},
                                 "pytorchReplicaSpecs": {"Master": _rs(1), "Worker": _rs(2)}}),
         [("Master", 1), ("Worker", 8)]),
        (_obj(PT, "PyTorchJob", {"elasticPolicy": {"maxReplicas": 2},
                                 "pytorchReplicaSpecs": {"Worker": _rs(5)}}),
         [("Worker", 5)]),
        (_obj(PT, "PyTorchJob", {"elasticPolicy": {"maxReplicas": 4},
                                 "pytorchReplicaSpecs": {"worker": _rs(1)}}),
         [("worker", 4)]),  # the operator normalizes replica-type case
        (_obj(PT, "PyTorchJob", {"elasticPolicy": {"maxReplicas": "9"},
                                 "pytorchReplicaSpecs": {"Worker": _rs(2)}}),
         [("Worker", 2)]),
        (_obj(PT, "PyTorchJob", {"elasticPolicy": [], "pytorchReplicaSpecs": {"Worker": _rs(False)}}),
         [("Worker", 1)]),
        (_obj(PT, "TFJob", {"tfReplicaSpecs": {"PS": "x", "Worker": _rs(3), 7: _rs(2)}}), [("Worker", 3)]),
        (_obj(PT, "TFJob", {"tfReplicaSpecs": ["Worker"]}), []),
        (_obj("kubeflow.org/v2beta1", "MPIJob", {"mpiReplicaSpecs": {"Launcher": _rs(), "Worker": _rs()}}),
         [("Launcher", 1), ("Worker", 1)]),
        # JobSet: replicas * parallelism; unnamed entries get role ""
        (_obj(JS, "JobSet", {"replicatedJobs": [_job("a"), _job("b", 3, 4), _job(5, 0, 9)]}),
         [("a", 1), ("b", 12), ("", 0)]),
        (_obj(JS, "JobSet", {"replicatedJobs": [_job("a", None, -1), _job("b", "2", 2)]}),
         [("a", 1), ("b", 2)]),
        (_obj("trainer.kubeflow.org/v1alpha1", "TrainingRuntime",
              {"template": {"spec": {"replicatedJobs": [_job("node", 1, 2)]}}}), [("node", 2)]),
        (_obj(JS, "JobSet", {"replicatedJobs": {"name": "a"}}), []),
        # Volcano: replicas default 1
        (_obj("batch.volcano.sh/v1alpha1", "Job", {"tasks": [{"name": "a"}, {"name": "b", "replicas": 4}]}),
         [("a", 1), ("b", 4)]),
        # Ray: head 1; workers replicas, else minReplicas, else 1
        (_obj(RAY, "RayCluster", {"headGroupSpec": {}, "workerGroupSpecs": [
            {"groupName": "a", "replicas": 2, "minReplicas": 5}, {"groupName": "b", "minReplicas": 3},
            {"groupName": "c"}, {"groupName": "d", "replicas": "2", "minReplicas": 4},
            {"groupName": "e", "replicas": None, "minReplicas": True}]}),
         [("head", 1), ("a", 2), ("b", 3), ("c", 1), ("d", 4), ("e", 1)]),
        (_obj(RAY, "RayCluster", {}), [("head", 1)]),
        (_obj(RAY, "RayCluster", None), []),
        (_obj(RAY, "RayJob", {"clusterSelector": {"ray.io/cluster": "shared"}}), []),
        (_obj(RAY, "RayJob", {"rayClusterSpec": {"workerGroupSpecs": [{"groupName": "g", "replicas": 2}]}}),
         [("head", 1), ("g", 2)]),
        # LeaderWorkerSet: replicas * 1 leader, * (size - 1) workers; no leaderTemplate: * size workers
        (_lws(2, 4, leader=True), [("leader", 2), ("worker", 6)]),
        (_lws(2, 4, leader=False), [("worker", 8)]),
        (_lws(3, 1, leader=True), [("leader", 3), ("worker", 0)]),
        (_lws(3, 0, leader=True), [("leader", 3), ("worker", 0)]),
        (_lws(None, None, leader=False), [("worker", 1)]),
        (_lws(True, "4", leader=True), [("leader", 1), ("worker", 0)]),
        # Pod: always one
        (_obj("v1", "Pod", {"containers": [{"name": "c"}]}), [("Pod", 1)]),
        (_obj("v1", "Pod"), [("Pod", 1)]),
    ],
)  # fmt: skip
def test_replicas_defaults_and_malformed(obj: Mapping[str, Any], expected: list[tuple[str, int]]) -> None:
    assert _replicas(obj) == expected


def _only_template(obj: Mapping[str, Any]) -> PodTemplate:
    workload = workload_of(obj)
    assert workload is not None
    (template,) = workload.templates
    return template


@pytest.mark.parametrize(
    ("template", "containers"),
    [
        ({"spec": {"containers": [{"name": "a"}, {"name": "b"}]}},
         [("a", "spec.template.spec.containers[0]"), ("b", "spec.template.spec.containers[1]")]),
        # entries that are not mappings are skipped, the index still counts
        ({"spec": {"containers": [None, "x", {"name": "c"}]}}, [("c", "spec.template.spec.containers[2]")]),
        ({"spec": {"containers": [{"name": 3}, {}]}},
         [("", "spec.template.spec.containers[0]"), ("", "spec.template.spec.containers[1]")]),
        ({"spec": {"containers": {"name": "a"}}}, []),
        ({"spec": {"containers": None}}, []),
        ({"spec": {"initContainers": [{"name": "i"}]}}, []),
        ({"spec": "broken"}, []),
        ("broken", []),
        (None, []),
    ],
)  # fmt: skip
def test_containers_defaults_and_malformed(template: Any, containers: list[tuple[str, str]]) -> None:
    found = _only_template(_obj("batch/v1", "Job", {"template": template}))
    assert [(c.name, render(c.path)) for c in found.containers] == containers
    assert isinstance(found.metadata, Mapping) and isinstance(found.spec, Mapping)


def test_template_metadata_and_spec_are_the_object_s_own() -> None:
    metadata = {"annotations": {"kubegap.dev/step-time": "2s"}}
    spec = {"hostNetwork": True, "containers": [{"name": "c"}]}
    template = _only_template(
        _obj("apps/v1", "StatefulSet", {"template": {"metadata": metadata, "spec": spec}})
    )
    assert template.metadata is metadata and template.spec is spec
    assert template.containers[0].spec is template.spec["containers"][0]
    broken = _only_template(_obj("apps/v1", "StatefulSet", {"template": {"metadata": ["x"], "spec": spec}}))
    assert broken.metadata == {}


def test_pod_is_its_own_template() -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"generateName": "probe-"},
        "spec": {"containers": [{}]},
    }
    template = _only_template(pod)
    assert (template.role, template.path, template.replicas) == ("Pod", (), 1)
    assert template.metadata is pod["metadata"]
    assert [render(c.path) for c in template.containers] == ["spec.containers[0]"]


@pytest.mark.parametrize(
    "obj",
    [
        _obj("v1", "Node", {"unschedulable": True}),
        _obj("v1", "ConfigMap"),
        _obj("kubeflow.org/v1", "Notebook", {"template": {}}),
        {"kind": "Pod", "spec": {"containers": [{"name": "c"}]}},
        {"apiVersion": "v1", "spec": {}},
        {},
        "Pod",
        ["v1", "Pod"],
        None,
    ],
)
def test_unsupported_is_none(obj: Any) -> None:
    assert workload_of(obj) is None


def test_supported_kinds_table() -> None:
    keys = [(info.group, info.kind) for info in SUPPORTED_KINDS]
    assert len(keys) == len(set(keys))
    assert KindInfo("", "Node", "nodes", False, ("v1",)) in SUPPORTED_KINDS
    assert {info.kind for info in SUPPORTED_KINDS if not info.namespaced} == {
        "Node",
        "ClusterTrainingRuntime",
    }
    for info in SUPPORTED_KINDS:
        assert info.versions and all(info.versions)
        assert info.plural == info.plural.lower() and info.plural.endswith("s")


NOT_WORKLOADS = {
    ("", "Node"),
    ("resource.k8s.io", "ResourceClaim"),
    ("resource.k8s.io", "ResourceClaimTemplate"),
}


@pytest.mark.parametrize(
    "info", [info for info in SUPPORTED_KINDS if (info.group, info.kind) not in NOT_WORKLOADS], ids=str
)
def test_every_listed_kind_is_read(info: KindInfo) -> None:
    api_version = f"{info.group}/{info.versions[0]}" if info.group else info.versions[0]
    obj = _obj(api_version, info.kind, {})
    assert kind_info(obj) is info
    workload = workload_of(obj)
    assert workload is not None
    assert (workload.group, workload.kind) == (info.group, info.kind)
    serving = info.group == "apps" or info.kind == "LeaderWorkerSet"
    assert workload.serving is serving


def test_every_fixture_kind_is_listed() -> None:
    listed = {(info.group, info.kind) for info in SUPPORTED_KINDS}
    covered = {(entry["group"], entry["kind"]) for entry in GOLDEN.values()}
    # the pre-release TrainJob group, Node and the DRA claims have their own tests
    assert listed - covered == {("kubeflow.org", "TrainJob")} | NOT_WORKLOADS
