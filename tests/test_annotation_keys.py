"""An annotation under kubegap.dev/ or ignore.kubegap.dev/ that kubegap does not read is a finding."""

from __future__ import annotations

from typing import Any

import pytest

from kubegap.config import Settings
from kubegap.evaluate import build_engine
from kubegap.findings import Finding, Result, Severity


def _job(workload: dict[str, str], template: dict[str, str]) -> dict[str, Any]:
    container = {"name": "c", "image": "i", "resources": {"limits": {"nvidia.com/gpu": 1}}}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "annotations": workload},
        "spec": {"template": {"metadata": {"annotations": template}, "spec": {"containers": [container]}}},
    }


def _unknown(obj: dict[str, Any], settings: Settings | None = None) -> list[Finding]:
    findings = build_engine(settings or Settings()).evaluate(obj).findings
    return [f for f in findings if f.policy == "annotations"]


def test_typos_are_findings_with_the_nearest_known_key() -> None:
    found = _unknown(_job({"ignore.kubegap.dev/health-probe": "debug"}, {"kubegap.dev/step-tme": "8s"}))
    by_path = {f.path: f for f in found}
    exemption = by_path["metadata.annotations['ignore.kubegap.dev/health-probe']"]
    assert exemption.message == (
        "annotation ignore.kubegap.dev/health-probe is not one kubegap reads, so it exempts nothing "
        "(did you mean ignore.kubegap.dev/health-probes?)"
    )
    declaration = by_path["spec.template.metadata.annotations['kubegap.dev/step-tme']"]
    assert declaration.message.endswith("so it declares nothing (did you mean kubegap.dev/step-time?)")
    assert {(f.rule, f.severity, f.result) for f in found} == {("unknown-key", Severity.MEDIUM, Result.FAIL)}
    assert "kubegap.dev/collective-timeout" in declaration.remediation


@pytest.mark.parametrize(
    "notes",
    [
        {"kubegap.dev/step-time": "8s", "kubegap.dev/collective-timeout": "20m"},
        {"kubegap.dev/checkpoint-interval": "5m", "ignore.kubegap.dev/nccl-timeout": "why"},
        {"example.com/kubegap.dev-like": "x", "prometheus.io/scrape": "true"},
    ],
)
def test_known_and_foreign_keys_are_left_alone(notes: dict[str, str]) -> None:
    assert _unknown(_job(notes, notes)) == []


def test_an_exemption_for_a_policy_not_run_is_still_known() -> None:
    obj = _job({"ignore.kubegap.dev/health-probes": "debug"}, {})
    assert _unknown(obj, Settings(skip=("health-probes",))) == []


def test_no_suggestion_when_nothing_is_close() -> None:
    (found,) = _unknown(_job({"kubegap.dev/owner": "ml-platform"}, {}))
    assert found.message == "annotation kubegap.dev/owner is not one kubegap reads, so it declares nothing"


def test_one_map_shared_by_two_templates_is_reported_at_each() -> None:
    # a YAML alias (`annotations: *notes`) gives two templates one map: each place is told of its key
    notes = {"kubegap.dev/step-tme": "8s"}
    container = {"name": "c", "image": "i", "resources": {"limits": {"nvidia.com/gpu": 1}}}
    jobs = [
        {
            "name": name,
            "replicas": 1,
            "template": {
                "spec": {
                    "template": {"metadata": {"annotations": notes}, "spec": {"containers": [container]}}
                }
            },
        }
        for name in ("a", "b")
    ]
    obj = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "js"},
        "spec": {"replicatedJobs": jobs},
    }
    paths = sorted(f.path for f in _unknown(obj))
    assert paths == [
        f"spec.replicatedJobs[{i}].template.spec.template.metadata.annotations['kubegap.dev/step-tme']"
        for i in (0, 1)
    ]
