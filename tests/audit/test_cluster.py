"""The cluster validations (hot-spares, link-monitor) over the test API server: pass, fail and not
applicable from realistic Node and Pod lists, and never a pass when the lists are limited or incomplete."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kubegap.audit import output
from kubegap.audit.reader import connect
from kubegap.audit.retry import Api
from kubegap.audit.runner import Auditor, AuditResult
from kubegap.audit.scope import AuditScope
from kubegap.config import Settings
from kubegap.evaluate import build_engine
from kubegap.findings import Finding, Result
from kubegap.reports import registry
from tests.audit.objects import bound, monitor, node, pod
from tests.support.apiserver import ApiServer, Fault

Audit = Callable[..., AuditResult]
POOL = "node.kubernetes.io/instance-type"


def gpu_node(
    name: str, pool: str = "p5.48xlarge", allocatable: int | None = None, **spec: Any
) -> dict[str, Any]:
    obj = node(name, allocatable=allocatable)
    obj["metadata"]["labels"] = {POOL: pool, "cloud.google.com/gke-nodepool": f"np-{pool}"}
    obj["spec"] = dict(spec)
    return obj


def worker(job: str, index: int, on: str, phase: str = "Running") -> dict[str, Any]:
    """A JobSet worker pod with 8 GPUs, bound to a node."""
    labels = {"jobset.sigs.k8s.io/jobset-name": job, "jobset.sigs.k8s.io/replicatedjob-name": "workers"}
    obj = pod(f"{job}-workers-0-{index}", "llm", gpus=8, labels=labels)
    return bound(obj, on, phase)


def pool_cluster(nodes: int, gang: int, monitored: bool = True) -> list[dict[str, Any]]:
    """`nodes` GPU nodes of one pool, the first `gang` of them running one JobSet's workers."""
    names = [f"p5-{i:03d}" for i in range(nodes)]
    objects = [gpu_node(n) for n in names] + [worker("pretrain", i, names[i]) for i in range(gang)]
    return objects + ([monitor(n) for n in names] if monitored else [])


def cluster_findings(result: AuditResult, policy: str) -> list[Finding]:
    return [f for f in result.spool.findings() if f.policy == policy]


def test_one_spare_per_sixteen_nodes_of_the_largest_gang_passes(apiserver: ApiServer, audit: Audit) -> None:
    apiserver.load(pool_cluster(17, 16))
    result = audit()
    assert cluster_findings(result, "hot-spares") == []
    assert result.cluster is not None and result.cluster.status == "evaluated"
    (pool,) = result.cluster.pools
    assert (pool["name"], pool["spares"], pool["largestGang"]) == (f"{POOL}=p5.48xlarge", 1, 16)
    assert pool["largestGangName"] == "llm/pretrain"


def test_a_gang_past_sixteen_nodes_needs_a_second_spare(apiserver: ApiServer, audit: Audit) -> None:
    apiserver.load(pool_cluster(18, 17))
    (finding,) = cluster_findings(audit(), "hot-spares")
    assert (finding.rule, finding.result, finding.scope) == ("spares-available", Result.FAIL, "cluster")
    assert (finding.object.kind, finding.object.name) == ("NodePool", f"{POOL}=p5.48xlarge")
    assert "1 idle healthy spare node(s) for a largest gang of 17 nodes (llm/pretrain)" in finding.message
    assert "1 per 16 needs 2" in finding.message
    assert "at most" not in finding.remediation and "16 nodes" in finding.remediation


def test_the_only_idle_node_is_no_spare_when_it_is_degraded_or_cordoned(
    apiserver: ApiServer, audit: Audit
) -> None:
    objects = pool_cluster(17, 16)
    objects[16] = gpu_node("p5-016", allocatable=7)  # lost a GPU: gpu-node-health fails on it
    apiserver.load([*objects, gpu_node("p5-017", unschedulable=True), monitor("p5-017")])
    (finding,) = cluster_findings(audit(), "hot-spares")
    assert "0 idle healthy spare node(s)" in finding.message
    assert (
        "(18 GPU nodes: 16 running GPU pods, 2 unschedulable or failing gpu-node-health)" in finding.message
    )


def test_finished_pods_free_their_node_and_cpu_pods_do_not_take_it(
    apiserver: ApiServer, audit: Audit
) -> None:
    objects = pool_cluster(16, 15)
    objects.append(worker("old-run", 0, "p5-015", phase="Succeeded"))
    objects.append(bound(pod("log-shipper", "ops", gpus=0), "p5-015"))
    apiserver.load(objects)
    result = audit()
    assert cluster_findings(result, "hot-spares") == []
    assert result.cluster is not None and result.cluster.pools[0]["spareNodes"] == ["p5-015"]


def test_pools_follow_the_label_the_user_names(apiserver: ApiServer, kubeconfig: Path) -> None:
    apiserver.load(pool_cluster(2, 2))  # a 2-node gang with no spare in its pool
    engine = build_engine(Settings(params={"hot-spares": {"poolLabel": "cloud.google.com/gke-nodepool"}}))
    result = Auditor(Api(connect(str(kubeconfig), None)), engine, AuditScope()).run()
    (finding,) = cluster_findings(result, "hot-spares")
    assert finding.object.name == "cloud.google.com/gke-nodepool=np-p5.48xlarge"
    result.spool.close()


def test_single_node_jobs_leave_the_pool_unjudged(apiserver: ApiServer, audit: Audit) -> None:
    apiserver.load([gpu_node("a"), gpu_node("b"), worker("sft", 0, "a"), worker("eval", 0, "b")])
    apiserver.load([monitor("a"), monitor("b")])
    result = audit()
    assert cluster_findings(result, "hot-spares") == []
    assert result.cluster is not None and result.cluster.pools[0]["largestGang"] == 1


def test_a_gpu_node_without_a_running_monitor_fails(apiserver: ApiServer, audit: Audit) -> None:
    apiserver.load(pool_cluster(3, 0, monitored=False))
    crashed = monitor("p5-001")
    crashed["status"] = {"phase": "Failed"}
    apiserver.load([monitor("p5-000"), crashed, monitor("cpu-0"), node("cpu-0", gpus=0)])
    failing = cluster_findings(audit(), "link-monitor")
    assert sorted(f.object.name for f in failing) == ["p5-001", "p5-002"]
    assert all(f.rule == "monitor-running" and f.scope == "cluster" for f in failing)
    assert all(f.object.kind == "Node" and f.path is None for f in failing)


@pytest.mark.parametrize(
    "image",
    [
        "registry.k8s.io/node-problem-detector/node-problem-detector:v0.8.20",
        "ghcr.io/nvidia/nvsentinel/gpu-health-monitor:v1.25.0-dcgm-4.x",
        "quay.io/autopilot/autopilot:v1.8.0",
        "nvcr.io/nvidia/k8s/dcgm-exporter@sha256:0123abcd",
    ],
)
def test_known_monitors_count(apiserver: ApiServer, audit: Audit, image: str) -> None:
    apiserver.load([gpu_node("p5-000"), monitor("p5-000", image=image)])
    assert cluster_findings(audit(), "link-monitor") == []


def test_cordoned_nodes_need_no_monitor_and_an_exemption_skips(apiserver: ApiServer, audit: Audit) -> None:
    exempt = gpu_node("p5-001")
    exempt["metadata"]["annotations"] = {"ignore.kubegap.dev/link-monitor": "monitored out of band (BMC)"}
    apiserver.load([gpu_node("p5-000", unschedulable=True), exempt])
    (finding,) = cluster_findings(audit(), "link-monitor")
    assert (finding.object.name, finding.result, finding.message) == (
        "p5-001",
        Result.SKIP,
        "exempted: monitored out of band (BMC)",
    )


def test_a_blank_exemption_exempts_no_node_and_is_reported(apiserver: ApiServer, audit: Audit) -> None:
    blank = gpu_node("p5-000")
    blank["metadata"]["annotations"] = {"ignore.kubegap.dev/link-monitor": " "}
    apiserver.load([blank])
    findings = cluster_findings(audit(), "link-monitor")
    found = {(f.rule, f.result) for f in findings}
    assert found == {("monitor-running", Result.FAIL), ("exemption-reason", Result.FAIL)}
    # reported with the cluster validations, not as a finding of the Node object
    assert {f.scope for f in findings} == {"cluster"}


@pytest.mark.parametrize(
    ("scope", "why"),
    [
        ({"namespaces": ("llm",)}, "limited to namespaces"),
        ({"exclude_namespaces": ("gpu-operator",)}, "namespaces are excluded"),
        ({"selector": "team=ml"}, "label selector"),
    ],
)
def test_a_limited_audit_judges_no_pool_and_no_monitor(
    apiserver: ApiServer, audit: Audit, scope: dict[str, Any], why: str
) -> None:
    apiserver.load(pool_cluster(18, 17, monitored=False))
    result = audit(**scope)
    assert cluster_findings(result, "hot-spares") == cluster_findings(result, "link-monitor") == []
    assert result.cluster is not None and result.cluster.status == "out-of-scope"
    assert why in result.cluster.reason
    assert result.coverage.complete, "a scope the user chose is not a gap"


def test_a_pod_list_that_failed_is_not_evaluated_never_a_pass(apiserver: ApiServer, audit: Audit) -> None:
    apiserver.load(pool_cluster(18, 17, monitored=False))
    apiserver.inject(Fault("forbidden", plural="pods", times=None))
    result = audit()
    assert cluster_findings(result, "hot-spares") == cluster_findings(result, "link-monitor") == []
    assert result.cluster is not None and result.cluster.status == "incomplete"
    assert not result.coverage.complete
    assert any("cluster validations not evaluated: the Pod list" in p for p in result.coverage.problems)


def test_cluster_failures_count_in_the_summary_and_exit_code(apiserver: ApiServer, audit: Audit) -> None:
    apiserver.load(pool_cluster(18, 17, monitored=False))
    result = audit()
    rules = {(p, r) for (_ns, p, r, _s) in result.by_rule}
    assert {("hot-spares", "spares-available"), ("link-monitor", "monitor-running")} <= rules
    assert result.summary.to_json()["failuresBySeverity"]["high"] >= 18  # one link-monitor failure a node
    report = json.loads("".join(registry.render("json", output.report(result))))
    assert report["cluster"]["status"] == "evaluated" and report["cluster"]["gpuNodes"] == 18
    pool = next(f for f in report["findings"] if f["policy"] == "hot-spares")
    assert (pool["scope"], pool["object"]["kind"], pool["impact"]) == ("cluster", "NodePool", None)
