from __future__ import annotations

from typing import Any

import pytest

from kubegap import kinds as lifecycle
from kubegap.fieldpath import render

KUBEFLOW = ["PyTorchJob", "TFJob", "XGBoostJob", "PaddleJob", "JAXJob", "MPIJob"]

# (group, kind, spec, enabled, deciding path): RULES.md §2 `restart-budget`.
RESTART: list[tuple[str, str, dict[str, Any], bool, str]] = [
    ("batch", "Job", {}, True, "spec"),
    ("batch", "Job", {"backoffLimit": 6}, True, "spec"),
    ("batch", "Job", {"backoffLimit": 0}, False, "spec.backoffLimit"),
    ("batch", "Job", {"backoffLimit": -1}, False, "spec.backoffLimit"),
    ("batch", "Job", {"backoffLimitPerIndex": 0}, False, "spec.backoffLimitPerIndex"),
    ("batch", "Job", {"backoffLimit": 3, "backoffLimitPerIndex": 0}, False, "spec.backoffLimitPerIndex"),
    ("batch", "Job", {"backoffLimit": "0"}, True, "spec"),  # not an int: the default (6) applies
    ("batch", "Job", {"backoffLimit": False}, True, "spec"),
    (
        "batch",
        "CronJob",
        {"jobTemplate": {"spec": {"backoffLimit": 0}}},
        False,
        "spec.jobTemplate.spec.backoffLimit",
    ),
    ("batch", "CronJob", {"jobTemplate": {"spec": {}}}, True, "spec.jobTemplate.spec"),
    (
        "batch",
        "CronJob",
        {"backoffLimit": 0},
        True,
        "spec.jobTemplate.spec",
    ),  # the CronJob's own field is not read
    ("jobset.x-k8s.io", "JobSet", {}, False, "spec.failurePolicy"),
    (
        "jobset.x-k8s.io",
        "JobSet",
        {"failurePolicy": {"maxRestarts": 3}},
        True,
        "spec.failurePolicy.maxRestarts",
    ),
    (
        "jobset.x-k8s.io",
        "JobSet",
        {"failurePolicy": {"maxRestarts": 0}},
        False,
        "spec.failurePolicy.maxRestarts",
    ),
    ("batch.volcano.sh", "Job", {}, True, "spec"),
    ("batch.volcano.sh", "Job", {"maxRetry": 5}, True, "spec.maxRetry"),
    ("batch.volcano.sh", "Job", {"maxRetry": 0}, False, "spec.maxRetry"),
    ("ray.io", "RayJob", {}, False, "spec"),
    ("ray.io", "RayJob", {"backoffLimit": 2}, True, "spec.backoffLimit"),
    ("ray.io", "RayJob", {"backoffLimit": 0}, False, "spec.backoffLimit"),
]
for kind in KUBEFLOW:
    RESTART += [
        ("kubeflow.org", kind, {}, False, "spec.runPolicy"),
        ("kubeflow.org", kind, {"runPolicy": {"backoffLimit": 3}}, True, "spec.runPolicy.backoffLimit"),
        ("kubeflow.org", kind, {"runPolicy": {"backoffLimit": 0}}, False, "spec.runPolicy.backoffLimit"),
    ]
RESTART += [
    ("kubeflow.org", "PyTorchJob", {"elasticPolicy": {"maxRestarts": 2}}, True,
     "spec.elasticPolicy.maxRestarts"),
    (
        "kubeflow.org",
        "PyTorchJob",
        {"runPolicy": {"backoffLimit": 0}, "elasticPolicy": {"maxRestarts": 4}},
        True,
        "spec.elasticPolicy.maxRestarts",
    ),
    # elasticPolicy is PyTorchJob's alone: another kind's is not read
    ("kubeflow.org", "TFJob", {"runPolicy": {"backoffLimit": 0}, "elasticPolicy": {"maxRestarts": 4}}, False,
     "spec.runPolicy.backoffLimit"),
]  # fmt: skip


def _replicas(kind: str, **policies: Any) -> dict[str, Any]:
    key = {"PyTorchJob": "pytorchReplicaSpecs", "TFJob": "tfReplicaSpecs", "MPIJob": "mpiReplicaSpecs"}[kind]
    backoff = policies.pop("backoff", None)
    spec: dict[str, Any] = {key: {role: ({"restartPolicy": p} if p else {}) for role, p in policies.items()}}
    return {**spec, "runPolicy": {"backoffLimit": backoff}} if backoff is not None else spec


@pytest.mark.parametrize(
    ("kind", "policies", "enabled", "path"),
    [
        # unset backoffLimit: the training operator applies no limit (core.PastBackoffLimit)
        ("PyTorchJob", {"Master": "OnFailure", "Worker": "ExitCode"}, True, "spec.runPolicy"),
        ("PyTorchJob", {"Worker": None}, True, "spec.runPolicy"),  # PyTorchJob defaults to OnFailure
        ("PyTorchJob", {"Master": "OnFailure", "Worker": "Never"}, False,
         "spec.pytorchReplicaSpecs.Worker.restartPolicy"),
        ("TFJob", {"Worker": None}, False, "spec.tfReplicaSpecs.Worker.restartPolicy"),  # TFJob: Never
        ("PyTorchJob", {"Worker": [None]}, True, "spec.runPolicy"),  # malformed: PyTorchJob's default
        ("MPIJob", {"Launcher": "OnFailure", "Worker": "Always"}, True, "spec.runPolicy"),
        # backoffLimit counts only replicas that restart: a Never replica is never restarted
        ("PyTorchJob", {"Master": "OnFailure", "Worker": "Never", "backoff": 3}, False,
         "spec.pytorchReplicaSpecs.Worker.restartPolicy"),
    ],
)  # fmt: skip
def test_kubeflow_restart_follows_the_replicas_restart_policy(
    kind: str, policies: dict[str, Any], enabled: bool, path: str
) -> None:
    found = lifecycle.restart("kubeflow.org", kind, {"spec": _replicas(kind, **policies)})
    assert found is not None
    assert (found.enabled, render(found.path)) == (enabled, path)


@pytest.mark.parametrize(
    ("run_policy", "enabled", "detail"),
    [
        ({}, True, "the launcher Job retries 6 times by default"),
        ({"backoffLimit": 2}, True, "spec.runPolicy.backoffLimit is 2"),
        ({"backoffLimit": 0}, False, "spec.runPolicy.backoffLimit is 0"),
    ],
)
def test_mpijob_v2beta1_launcher_is_a_job(run_policy: dict[str, int], enabled: bool, detail: str) -> None:
    obj = {
        "apiVersion": "kubeflow.org/v2beta1",
        "spec": {"runPolicy": run_policy, **_replicas("MPIJob", Worker="Never")},
    }
    found = lifecycle.restart("kubeflow.org", "MPIJob", obj)
    assert found is not None
    assert (found.enabled, found.detail) == (enabled, detail)
    assert "elasticPolicy" not in found.detail


@pytest.mark.parametrize(
    ("spec", "enabled", "path"),
    [
        ({"replicatedJobs": [{"template": {"spec": {}}}]}, True, "spec"),  # child Jobs retry (default 6)
        ({"replicatedJobs": [{"template": {"spec": {"backoffLimit": 2}}}]}, True, "spec"),
        ({"replicatedJobs": [{"template": {"spec": {}}}, {"template": {"spec": {"backoffLimit": 0}}}]}, False,
         "spec.replicatedJobs[1].template.spec.backoffLimit"),
        ({"failurePolicy": {"maxRestarts": 2},
          "replicatedJobs": [{"template": {"spec": {"backoffLimit": 0}}}]},
         True, "spec.failurePolicy.maxRestarts"),
    ],
)  # fmt: skip
def test_jobset_child_jobs_retry_pods(spec: dict[str, Any], enabled: bool, path: str) -> None:
    found = lifecycle.restart("jobset.x-k8s.io", "JobSet", {"spec": spec})
    assert found is not None
    assert (found.enabled, render(found.path)) == (enabled, path)


@pytest.mark.parametrize(("group", "kind", "spec", "enabled", "path"), RESTART)
def test_restart(group: str, kind: str, spec: dict[str, Any], enabled: bool, path: str) -> None:
    found = lifecycle.restart(group, kind, {"spec": spec})
    assert found is not None
    assert found.enabled is enabled
    assert render(found.path) == path
    assert found.detail


def test_restart_detail_names_what_was_read() -> None:
    found = lifecycle.restart("kubeflow.org", "PyTorchJob", {"spec": {"runPolicy": {"backoffLimit": 0}}})
    assert found is not None
    assert found.detail == "spec.runPolicy.backoffLimit is 0 and spec.elasticPolicy.maxRestarts is unset"


@pytest.mark.parametrize(
    ("group", "kind"),
    [
        ("", "Pod"),
        ("trainer.kubeflow.org", "TrainJob"),
        ("trainer.kubeflow.org", "TrainingRuntime"),
        ("trainer.kubeflow.org", "ClusterTrainingRuntime"),
        ("ray.io", "RayCluster"),
        ("apps", "Deployment"),
        ("apps", "StatefulSet"),
        ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"),
        ("example.com", "Job"),  # a Job of another group is not batch Job
    ],
)
def test_restart_not_applicable(group: str, kind: str) -> None:
    assert lifecycle.restart(group, kind, {"spec": {"backoffLimit": 0}}) is None


@pytest.mark.parametrize("spec", [None, [], "x", {"runPolicy": "x"}, {"runPolicy": {"backoffLimit": None}}])
def test_restart_on_malformed_specs_never_raises(spec: Any) -> None:
    found = lifecycle.restart("kubeflow.org", "PyTorchJob", {"spec": spec})
    assert found is not None
    assert found.enabled is False


def jobset(*deadlines: Any) -> dict[str, Any]:
    return {
        "spec": {
            "replicatedJobs": [
                {"name": f"r{i}", "template": {"spec": {} if d is None else {"activeDeadlineSeconds": d}}}
                for i, d in enumerate(deadlines)
            ]
        }
    }


# (group, kind, object, seconds): RULES.md §2 `checkpoint-interval` run-time bound.
DEADLINE: list[tuple[str, str, dict[str, Any], float | None]] = [
    ("batch", "Job", {"spec": {"activeDeadlineSeconds": 300}}, 300.0),
    ("batch", "Job", {"spec": {}}, None),
    ("batch", "Job", {"spec": {"activeDeadlineSeconds": 0}}, None),
    ("batch", "Job", {"spec": {"activeDeadlineSeconds": "300"}}, None),
    ("batch", "Job", {"spec": {"activeDeadlineSeconds": True}}, None),
    ("batch", "CronJob", {"spec": {"jobTemplate": {"spec": {"activeDeadlineSeconds": 60}}}}, 60.0),
    ("trainer.kubeflow.org", "TrainJob", {"spec": {"activeDeadlineSeconds": 120}}, 120.0),
    ("kubeflow.org", "TrainJob", {"spec": {"activeDeadlineSeconds": 120}}, 120.0),
    ("ray.io", "RayJob", {"spec": {"activeDeadlineSeconds": 90}}, 90.0),
    ("jobset.x-k8s.io", "JobSet", jobset(100, 500), 500.0),  # the longest part bounds the run
    ("jobset.x-k8s.io", "JobSet", jobset(100, None), None),  # one unbounded part: unbounded
    ("jobset.x-k8s.io", "JobSet", jobset(), None),
    ("jobset.x-k8s.io", "JobSet", {"spec": {"replicatedJobs": "x"}}, None),
    ("jobset.x-k8s.io", "JobSet", {"spec": {"replicatedJobs": 3}}, None),
    ("jobset.x-k8s.io", "JobSet", {"spec": {"replicatedJobs": True}}, None),
    ("jobset.x-k8s.io", "JobSet", {"spec": {"replicatedJobs": {"a": 1}}}, None),
    ("ray.io", "RayCluster", {"spec": {"activeDeadlineSeconds": 90}}, None),
    ("apps", "Deployment", {"spec": {"activeDeadlineSeconds": 90}}, None),
    ("", "Pod", {"spec": {"activeDeadlineSeconds": 90}}, None),
]
DEADLINE += [
    ("kubeflow.org", k, {"spec": {"runPolicy": {"activeDeadlineSeconds": 240}}}, 240.0) for k in KUBEFLOW
]


@pytest.mark.parametrize(("group", "kind", "obj", "seconds"), DEADLINE)
def test_deadline(group: str, kind: str, obj: dict[str, Any], seconds: float | None) -> None:
    value = lifecycle.deadline(group, kind, obj)
    assert value == seconds
    if value is not None:
        assert isinstance(value, float)
