"""`kubegap audit` as a user runs it: flags, config section, formats, exit codes, RBAC, the one write."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest
import yaml

from kubegap.findings import Finding, ObjectRef, Result, Severity, Summary
from kubegap.reports import json as json_report
from kubegap.reports.report import Report
from tests.audit.invoke import run
from tests.audit.objects import monitor, node, pod, pytorchjob
from tests.support.apiserver import ApiServer, Fault


@pytest.fixture
def healthy(apiserver: ApiServer) -> ApiServer:
    apiserver.load([node("gpu-0"), pod("cpu-only", namespace="default", gpus=0), monitor("gpu-0")])
    return apiserver


@pytest.fixture
def failing(apiserver: ApiServer) -> ApiServer:
    apiserver.load(
        [
            pytorchjob("job", namespace="ml"),
            node("gpu-0", allocatable=7),
            pod("cpu-only", namespace="default", gpus=0),
        ]
    )
    return apiserver


def test_exit_codes(capsys: pytest.CaptureFixture[str], failing: ApiServer, kubeconfig: Path) -> None:
    k = ("--kubeconfig", str(kubeconfig))
    assert run(capsys, *k)[0] == 1
    assert run(capsys, *k, "--fail-on", "critical")[0] == 0
    assert run(capsys, *k, "--page-size", "0")[0] == 2
    assert run(capsys, "--kubeconfig", str(kubeconfig.parent / "missing"))[0] == 2
    failing.inject(Fault("forbidden", plural="pods", times=None))
    assert run(capsys, *k, "--fail-on", "critical")[0] == 4
    assert run(capsys, *k, "--fail-on", "critical", "--allow-incomplete")[0] == 0
    assert run(capsys, *k, "--allow-incomplete")[0] == 1


OFFENDERS = "Worst offenders (expected GPU-hours lost a month, docs/cost-model.md)"


def test_clean_cluster_exits_zero(
    capsys: pytest.CaptureFixture[str], healthy: ApiServer, kubeconfig: Path
) -> None:
    code, out, _ = run(capsys, "--kubeconfig", str(kubeconfig))
    assert code == 0
    assert "Coverage: complete" in out and f"{OFFENDERS}\n  none" in out


def test_json_carries_findings_summary_and_coverage(
    capsys: pytest.CaptureFixture[str], failing: ApiServer, kubeconfig: Path
) -> None:
    _, out, _ = run(capsys, "--kubeconfig", str(kubeconfig), "--format", "json")
    doc = json.loads(out)
    assert list(doc) == ["findings", "summary", "coverage", "workloads", "cluster"]
    assert doc["cluster"]["status"] == "evaluated" and doc["cluster"]["gpuNodes"] == 1
    [workload] = doc["workloads"]  # the training workload, priced (the Node is not a workload)
    assert workload["object"]["name"] == "job" and workload["totalGpus"] == 16
    assert workload["lostGpuHoursPerMonth"] > 0
    assert {f["object"]["kind"] for f in doc["findings"]} == {"PyTorchJob", "Node"}
    assert all(f["file"] is None and f["line"] is None for f in doc["findings"])
    assert doc["summary"]["objects"] == 3 and doc["coverage"]["complete"] is True
    assert doc["coverage"]["totals"]["evaluated"] == 3


def test_text_lists_offenders_with_gpus_and_roles(
    capsys: pytest.CaptureFixture[str], failing: ApiServer, kubeconfig: Path
) -> None:
    _, out, _ = run(capsys, "--kubeconfig", str(kubeconfig))
    offenders = out.split(f"{OFFENDERS}\n")[1].split("\n\n")[0].splitlines()
    # no runPolicy.backoffLimit and OnFailure pods: the training operator restarts them (RULES.md v2)
    assert offenders[1].split()[:7] == ["≈", "535", "high", "5", "16", "PyTorchJob/ml/job", "(Worker;"]
    assert offenders[1].endswith("fixing gpu-nic-topology/nic-attached saves ≈ 400)")
    assert offenders[2].split() == ["-", "high", "1", "8", "Node/gpu-0"]
    assert out.index("Failing rules by namespace") < out.index("Worst offenders") < out.index("Findings")
    assert out.index("Findings") < out.index("Coverage: complete")


def test_policyreports_apply_shape(
    capsys: pytest.CaptureFixture[str], failing: ApiServer, kubeconfig: Path
) -> None:
    _, out, _ = run(capsys, "--kubeconfig", str(kubeconfig), "--format", "policyreport")
    docs = [d for d in yaml.safe_load_all(out) if d]
    assert [(d["kind"], d["metadata"].get("namespace")) for d in docs] == [
        ("ClusterPolicyReport", None),
        ("PolicyReport", "default"),
        ("PolicyReport", "ml"),
    ]
    ml = docs[2]
    assert ml["apiVersion"] == "wgpolicyk8s.io/v1alpha2"
    assert ml["summary"]["fail"] == len(ml["results"]) == 5 and ml["summary"]["pass"] > 0
    assert ml["results"][0]["resources"][0]["uid"], "results point at the live object"
    assert docs[1]["summary"]["fail"] == 0 and docs[1]["results"] == []
    assert out.startswith("# kubegap audit coverage:")


def test_write_policyreports_is_the_only_write(
    capsys: pytest.CaptureFixture[str], failing: ApiServer, kubeconfig: Path
) -> None:
    run(capsys, "--kubeconfig", str(kubeconfig), "--format", "json")
    assert failing.writes() == [], "read-only unless asked"
    code, _, err = run(capsys, "--kubeconfig", str(kubeconfig), "--write-policyreports")
    assert code == 1 and "3 PolicyReport(s) written" in err
    assert [r.method for r in failing.writes()] == ["POST"] * 3
    run(capsys, "--kubeconfig", str(kubeconfig), "--write-policyreports")
    assert [r.method for r in failing.writes()][3:] == ["PUT"] * 3, "a second run replaces its reports"
    resource = failing.store.resource_for("wgpolicyk8s.io/v1alpha2", "PolicyReport")
    assert resource is not None
    assert {o["metadata"]["namespace"] for o in failing.store.objects(resource)} == {"default", "ml"}


def test_write_without_the_crds_makes_the_run_incomplete(
    capsys: pytest.CaptureFixture[str], failing: ApiServer, kubeconfig: Path
) -> None:
    failing.store.remove_group("wgpolicyk8s.io")
    code, out, _ = run(capsys, "--kubeconfig", str(kubeconfig), "--write-policyreports", "--format", "json")
    assert code == 4
    assert "CRDs are not installed" in json.dumps(json.loads(out)["coverage"]["notEvaluated"])


def test_print_rbac_is_read_only_and_never_secrets(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--print-rbac")
    role = yaml.safe_load(out)
    verbs = {v for rule in role["rules"] for v in rule["verbs"]}
    resources = {r for rule in role["rules"] for r in rule["resources"]}
    assert code == 0 and role["kind"] == "ClusterRole" and verbs == {"get", "list"}
    assert {"pods", "nodes", "pytorchjobs", "jobsets"} <= resources
    assert "secrets" not in resources and "configmaps" not in resources
    with_cm = yaml.safe_load(run(capsys, "--print-rbac", "--resolve-configmaps")[1])
    assert {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]} in with_cm["rules"]
    assert "kubectl create clusterrolebinding" in out


AUDIT_SECTIONS: list[tuple[dict[str, Any], list[str], str | None]] = [
    ({"pageSize": 0}, [], "pageSize"),
    ({"namespaces": ["Bad_NS"]}, [], "namespaces[0]"),
    ({"unknown": True}, [], "unknown"),
    ({"includeOwnedPods": "yes"}, [], "includeOwnedPods"),
    ({"namespaces": ["a"], "excludeNamespaces": ["a"]}, [], "both included and excluded"),
    ({"namespaces": ["ml"], "pageSize": 1}, [], None),
    ({"namespaces": ["other"]}, ["-n", "ml"], None),  # the flag wins
]


@pytest.mark.parametrize(("section", "flags", "error"), AUDIT_SECTIONS)
def test_config_audit_section(
    capsys: pytest.CaptureFixture[str],
    failing: ApiServer,
    kubeconfig: Path,
    tmp_path: Path,
    section: dict[str, Any],
    flags: list[str],
    error: str | None,
) -> None:
    config = tmp_path / "kubegap.yaml"
    config.write_text(
        yaml.safe_dump({"apiVersion": "kubegap.dev/v1alpha1", "kind": "Config", "audit": section})
    )
    code, out, err = run(
        capsys, "--kubeconfig", str(kubeconfig), "--config", str(config), "--format", "json", *flags
    )
    if error is not None:
        assert code == 2 and error in err
        return
    doc = json.loads(out)
    assert code == 1 and {f["object"]["namespace"] for f in doc["findings"]} == {"ml"}
    lists = [r for r in failing.requests if r.path.endswith("/pytorchjobs")]
    assert lists[0].path == "/apis/kubeflow.org/v1/namespaces/ml/pytorchjobs"


def _finding(i: int) -> Finding:
    ref = ObjectRef("v1", "Pod", "ns", f"p{i}")
    return Finding(
        "p", "r", Severity.HIGH, Result.FAIL, f"message ü {i}", "fix", ref, role="Pod", path="spec"
    )


@pytest.mark.parametrize("count", [0, 1, 3])
def test_streamed_json_is_byte_identical_to_one_dump(count: int) -> None:
    findings = [_finding(i) for i in range(count)]
    summary = Summary(objects=count)
    summary.add(findings)
    streamed = "".join(json_report.render(Report(findings, summary)))
    document = {"findings": [f.to_json() for f in findings], "summary": summary.to_json(), "workloads": []}
    assert streamed == json.dumps(document, ensure_ascii=False) + "\n"


def test_sarif_and_junit_carry_the_same_findings_as_json(
    capsys: pytest.CaptureFixture[str], failing: ApiServer, kubeconfig: Path
) -> None:
    k = ("--kubeconfig", str(kubeconfig))
    _, out, _ = run(capsys, *k, "--format", "json")
    expected = sorted((f["policy"], f["rule"], f["object"]["name"]) for f in json.loads(out)["findings"])
    code, out, _ = run(capsys, *k, "--format", "sarif")
    assert code == 1
    (sarif_run,) = json.loads(out)["runs"]
    listed = sorted(
        (
            r["properties"]["policy"],
            r["properties"]["rule"],
            r["properties"]["object"]["name"],
        )
        for r in sarif_run["results"]
    )
    assert listed == expected and expected
    assert all("physicalLocation" not in loc for r in sarif_run["results"] for loc in r["locations"])
    code, out, _ = run(capsys, *k, "--format", "junit")
    assert code == 1
    failures = ElementTree.fromstring(out).iter("failure")
    assert len(list(failures)) == len(expected)
