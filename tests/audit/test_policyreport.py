"""PolicyReport rendering (kubegap.reports.policyreport): counts, listed results, splitting, YAML."""

from __future__ import annotations

import io

import yaml

from kubegap.evaluate import Evaluation
from kubegap.findings import Finding, ObjectRef, Result, Severity
from kubegap.reports import policyreport


def _finding(name: str, result: Result, namespace: str | None = "ml", kind: str = "PyTorchJob") -> Finding:
    ref = ObjectRef("kubeflow.org/v1" if kind != "Node" else "v1", kind, namespace, name)
    return Finding(
        "nccl-timeout",
        "timeout-declared",
        Severity.HIGH,
        result,
        f"{name}: {result.value}",
        "fix it",
        ref,
        role="Worker",
        container="trainer",
        path="spec.x",
        unresolved=("secret s/k",),
    )


def test_results_list_failures_and_count_passes() -> None:
    evaluations = [
        Evaluation(
            ObjectRef("kubeflow.org/v1", "PyTorchJob", "ml", "a"),
            True,
            (_finding("a", Result.PASS), _finding("a", Result.FAIL), _finding("a", Result.SKIP)),
        ),
        Evaluation(
            ObjectRef("kubeflow.org/v1", "PyTorchJob", "ml", "b"), True, (_finding("b", Result.PASS),)
        ),
        Evaluation(ObjectRef("v1", "Node", None, "n"), True, (_finding("n", Result.ERROR, None, "Node"),)),
        Evaluation(ObjectRef("v1", "Pod", "empty", "p"), True, ()),
    ]
    reports = policyreport.from_evaluations(evaluations, timestamp=1700000000)
    assert [(r["kind"], r["metadata"].get("namespace")) for r in reports] == [
        ("ClusterPolicyReport", None),
        ("PolicyReport", "ml"),
    ]
    ml = reports[1]
    assert ml["summary"] == {"pass": 2, "fail": 1, "warn": 0, "error": 0, "skip": 1}
    assert [r["result"] for r in ml["results"]] == ["fail", "skip"]
    entry = ml["results"][0]
    assert entry["resources"] == [
        {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "a", "namespace": "ml"}
    ]
    assert entry["properties"] == {
        "role": "Worker",
        "container": "trainer",
        "path": "spec.x",
        "remediation": "fix it",
        "unresolved": "secret s/k",
    }
    assert entry["timestamp"] == {"seconds": 1700000000, "nanos": 0} and entry["source"] == "kubegap"
    assert reports[0]["summary"]["error"] == 1


def test_large_reports_are_split_and_passes_go_to_the_first_part() -> None:
    entries = [policyreport.result_entry(_finding(f"job-{i}", Result.FAIL), 0) for i in range(10)]
    size = len(str(entries[0])) * 3
    parts = list(policyreport.build("ml", entries, passes=5, max_bytes=size))
    assert len(parts) > 1
    assert [p["metadata"]["name"] for p in parts] == ["kubegap"] + [
        f"kubegap-{i}" for i in range(2, len(parts) + 1)
    ]
    assert sum(len(p["results"]) for p in parts) == 10
    assert [p["summary"]["pass"] for p in parts] == [5] + [0] * (len(parts) - 1)
    assert all(p["summary"]["fail"] == len(p["results"]) for p in parts)


def test_an_empty_namespace_still_gets_a_report() -> None:
    (report,) = policyreport.build("quiet", iter(()), passes=3)
    assert report["summary"]["pass"] == 3 and report["results"] == []


def test_yaml_documents_round_trip() -> None:
    reports = list(policyreport.build("ml", [policyreport.result_entry(_finding("a", Result.FAIL), 0)]))
    out = io.StringIO()
    policyreport.write_yaml(reports, out)
    assert out.getvalue().startswith("---\napiVersion: wgpolicyk8s.io/v1alpha2\nkind: PolicyReport\n")
    assert [d for d in yaml.safe_load_all(out.getvalue()) if d] == reports
