"""Whether disruptions use up the restart budget (kubegap/facts/disruption.py; RULES.md v3)."""

from __future__ import annotations

from typing import Any

import pytest

from kubegap import kinds

IGNORE = {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}
FAIL_JOB = {"action": "FailJob", "onPodConditions": [{"type": "DisruptionTarget"}]}


def batch_job(rules: list[dict[str, Any]] | None, restart: str = "Never") -> dict[str, Any]:
    spec: dict[str, Any] = {"template": {"spec": {"restartPolicy": restart, "containers": []}}}
    if rules is not None:
        spec["podFailurePolicy"] = {"rules": rules}
    return {"apiVersion": "batch/v1", "kind": "Job", "spec": spec}


@pytest.mark.parametrize(
    ("rules", "restart", "ignored"),
    [
        ([IGNORE], "Never", True),
        (
            [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}],
            "Never",
            True,
        ),
        (
            [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "False"}]}],
            "Never",
            False,
        ),
        ([FAIL_JOB], "Never", False),  # fails the Job instead: the budget is not what it protects
        ([IGNORE], "OnFailure", False),  # the API server accepts a podFailurePolicy only with Never
        (None, "Never", False),
        ([{"action": "Ignore", "onExitCodes": {"operator": "In", "values": [137]}}], "Never", False),
    ],
)
def test_job(rules: list[dict[str, Any]] | None, restart: str, ignored: bool) -> None:
    found = kinds.disruptions("batch", "Job", batch_job(rules, restart))
    assert found is not None and found["ignored"] is ignored


@pytest.mark.parametrize(
    ("restart", "path"),
    [
        ("Never", "spec.podFailurePolicy"),  # where the rule that ignores disruptions would go
        ("OnFailure", "spec.template.spec.restartPolicy"),  # what must change before any rule can apply
    ],
)
def test_the_path_is_the_field_to_change(restart: str, path: str) -> None:
    found = kinds.disruptions("batch", "Job", batch_job(None, restart))
    assert found is not None and found["path"] == path


def jobset(rules: list[dict[str, Any]], pod_rules: list[dict[str, Any]] | None) -> dict[str, Any]:
    job = batch_job(pod_rules)["spec"]
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "spec": {
            "failurePolicy": {"maxRestarts": 3, "rules": rules},
            "replicatedJobs": [{"name": "node", "template": {"spec": job}}],
        },
    }


IGNORING = {"action": "RestartJobSetAndIgnoreMaxRestarts", "onJobFailureReasons": ["PodFailurePolicy"]}


@pytest.mark.parametrize(
    ("rules", "pod_rules", "ignored"),
    [
        ([IGNORING], [FAIL_JOB], True),  # the documented host-maintenance pattern
        (
            [IGNORING],
            None,
            False,
        ),  # the child Job fails with BackoffLimitExceeded, which the rule does not match
        ([], [IGNORE], True),  # the child Job ignores disrupted pods itself
        ([], None, False),  # no rule: RestartJobSet counts
        ([{"action": "RestartJobSet"}, IGNORING], [FAIL_JOB], False),  # the first match wins
        ([{**IGNORING, "targetReplicatedJobs": ["other"]}], [FAIL_JOB], False),
        ([{"action": "RestartJobAndIgnoreMaxRestarts"}], None, True),  # every reason, without counting
        (
            [{**IGNORING, "onJobFailureMessagePatterns": ["evict"]}],
            [FAIL_JOB],
            False,
        ),  # the message is unknown
    ],
)
def test_jobset(rules: list[dict[str, Any]], pod_rules: list[dict[str, Any]] | None, ignored: bool) -> None:
    found = kinds.disruptions("jobset.x-k8s.io", "JobSet", jobset(rules, pod_rules))
    assert found is not None and found["ignored"] is ignored


def test_other_kinds_have_no_such_fact() -> None:
    assert kinds.disruptions("kubeflow.org", "PyTorchJob", {}) is None
    assert kinds.disruptions("batch.volcano.sh", "Job", {}) is None
