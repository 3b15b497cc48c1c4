"""The audit against the test API server, clean and under each fault: nothing lost, nothing counted twice,
and coverage plus completeness telling the truth."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kubegap.audit.coverage import KindCoverage
from kubegap.audit.reader import connect
from kubegap.audit.retry import Api
from kubegap.audit.runner import Auditor, AuditResult
from kubegap.audit.scope import AuditScope
from kubegap.audit.transport import Reply
from kubegap.config import Settings
from kubegap.evaluate import Engine, build_engine
from kubegap.findings import Result
from tests.audit.conftest import Sleeps
from tests.audit.objects import configmap, node, pod, pytorchjob, secret
from tests.support.apiserver import ApiServer, Fault
from tests.support.samples import PAIRWISE, user_policy, wide_pod

Audit = Callable[..., AuditResult]
JOBS = 7  # over three namespaces; with page size 2 the cluster-wide list takes four pages


@pytest.fixture
def cluster(apiserver: ApiServer) -> dict[str, Any]:
    jobs = [apiserver.store.add(pytorchjob(f"job-{i}", namespace=f"ns-{i % 3}")) for i in range(JOBS)]
    owner = jobs[0]["metadata"]["uid"]
    apiserver.load(
        [
            pod("owned-0", "ns-0", owner_uid=owner),
            pod("owned-1", "ns-0", owner_uid=owner),
            pod("bare", "ns-1"),
            pod("other-owner", "ns-2", owner_uid="not-audited"),
        ]
    )
    apiserver.load([node("gpu-0"), node("gpu-1", allocatable=7), secret("token", "ns-0")])
    return {"jobs": jobs}


def kind(result: AuditResult, name: str) -> KindCoverage:
    return next(
        k for k in result.coverage.kinds if k.kind == name and k.api_version in ("v1", "kubeflow.org/v1")
    )


def keys(result: AuditResult) -> list[tuple[Any, ...]]:
    return sorted(f.key() for f in result.spool.findings())


def test_every_object_once_and_owned_pods_skipped(cluster: dict[str, Any], audit: Audit) -> None:
    result = audit(page_size=2)
    jobs, pods, nodes = kind(result, "PyTorchJob"), kind(result, "Pod"), kind(result, "Node")
    assert (jobs.seen, jobs.evaluated, jobs.status) == (JOBS, JOBS, "complete")
    assert (pods.seen, pods.owned, pods.evaluated) == (4, 2, 2), "a pod whose owner was not audited is judged"
    assert (nodes.seen, nodes.evaluated) == (2, 2)
    assert result.summary.objects == JOBS + 2 + 2
    assert len(keys(result)) == len(set(keys(result))), "no finding twice"
    assert result.coverage.complete
    assert any(f.object.name == "gpu-1" and f.rule == "gpus-healthy" for f in result.spool.findings())


def test_include_owned_pods_judges_them_too(cluster: dict[str, Any], audit: Audit) -> None:
    pods = kind(audit(include_owned_pods=True), "Pod")
    assert (pods.seen, pods.owned, pods.evaluated) == (4, 0, 4)


def test_forbidden_kind_is_not_evaluated_and_named(
    cluster: dict[str, Any], apiserver: ApiServer, audit: Audit
) -> None:
    apiserver.inject(Fault("forbidden", plural="pytorchjobs", times=None))
    result = audit(page_size=2)
    jobs = kind(result, "PyTorchJob")
    assert jobs.status == "not-evaluated" and jobs.evaluated == 0
    assert [g.reason for g in jobs.gaps] == [
        "forbidden: cannot list pytorchjobs.kubeflow.org at the cluster scope"
    ]
    assert not result.coverage.complete
    assert kind(result, "Pod").evaluated == 4, "with the owner unjudged, its pods are judged instead"


def test_forbidden_namespace_leaves_the_others_evaluated(
    cluster: dict[str, Any], apiserver: ApiServer, audit: Audit
) -> None:
    apiserver.inject(Fault("forbidden", namespace="ns-1", times=None))
    result = audit(page_size=2, namespaces=("ns-0", "ns-1"))
    jobs = kind(result, "PyTorchJob")
    assert jobs.evaluated == 3 and jobs.status == "partial"  # job-0, job-3, job-6 live in ns-0
    assert [(g.namespace, g.reason) for g in jobs.gaps] == [
        ("ns-1", "forbidden: cannot list pytorchjobs.kubeflow.org in namespace ns-1")
    ]
    assert kind(result, "Node").status == "out-of-scope" and kind(result, "Node").seen == 0
    assert not result.coverage.complete


def test_missing_crd_is_not_installed_and_not_a_gap(
    cluster: dict[str, Any], apiserver: ApiServer, audit: Audit
) -> None:
    apiserver.store.remove_group("ray.io")
    result = audit()
    statuses = {k.kind: k.status for k in result.coverage.kinds}
    assert statuses["RayCluster"] == statuses["RayJob"] == "not-installed"
    assert result.coverage.complete
    assert not any(r.path.startswith("/apis/ray.io/v1/") for r in apiserver.requests)


def test_failed_discovery_of_a_group_is_a_gap(
    cluster: dict[str, Any], apiserver: ApiServer, audit: Audit
) -> None:
    apiserver.inject(Fault("error", path="/apis/ray.io/v1", status=503, times=None))
    result = audit()
    ray = (
        kind(result, "RayCluster")
        if False
        else next(k for k in result.coverage.kinds if k.kind == "RayCluster")
    )
    assert ray.status == "not-evaluated" and "discovery failed" in ray.gaps[0].reason
    assert kind(result, "PyTorchJob").evaluated == JOBS
    assert not result.coverage.complete


def test_expired_continue_restarts_the_list_once(
    cluster: dict[str, Any], apiserver: ApiServer, audit: Audit
) -> None:
    baseline = keys(audit(page_size=2))
    apiserver.inject(Fault("expire", plural="pytorchjobs", on_continue=2))
    apiserver.state.continues.clear()
    result = audit(page_size=2)
    jobs = kind(result, "PyTorchJob")
    assert (jobs.seen, jobs.evaluated, jobs.status) == (JOBS, JOBS, "complete")
    assert keys(result) == baseline
    assert any("restarted" in note for note in jobs.notes)
    firsts = [
        r
        for r in apiserver.requests
        if r.path == "/apis/kubeflow.org/v1/pytorchjobs" and "continue" not in r.query
    ]
    assert len(firsts) == 3, "baseline list, first list, one restart"


def test_expired_twice_is_incomplete(cluster: dict[str, Any], apiserver: ApiServer, audit: Audit) -> None:
    apiserver.inject(Fault("expire", plural="pytorchjobs", on_continue=1))
    apiserver.inject(Fault("expire", plural="pytorchjobs", on_continue=2))
    result = audit(page_size=2)
    jobs = kind(result, "PyTorchJob")
    assert jobs.seen == 2 and jobs.evaluated == 2 and jobs.status == "partial"
    assert "expired again" in jobs.gaps[0].reason
    assert not result.coverage.complete


def test_throttling_waits_as_told(
    cluster: dict[str, Any], apiserver: ApiServer, audit: Audit, sleeps: Sleeps
) -> None:
    apiserver.inject(Fault("throttle", plural="pytorchjobs", retry_after=3, times=2))
    apiserver.inject(Fault("throttle", plural="pods", status=503, retry_after=1, times=1))
    result = audit(page_size=2)
    assert sleeps == [3, 3, 1]
    assert kind(result, "PyTorchJob").evaluated == JOBS and result.coverage.complete
    assert result.coverage.requests.throttled == 3


def test_endless_throttling_stops_at_the_budget(
    cluster: dict[str, Any], apiserver: ApiServer, audit: Audit, sleeps: Sleeps
) -> None:
    apiserver.inject(Fault("throttle", plural="pytorchjobs", retry_after=30, times=None))
    result = audit(page_size=2)
    assert sleeps == [30, 30, 30, 30], "four waits of 30 s fill the 120 s budget"
    jobs = kind(result, "PyTorchJob")
    assert jobs.status == "not-evaluated" and jobs.gaps[0].reason.startswith("throttled")
    assert kind(result, "Pod").evaluated == 4, "the rest of the cluster is still audited"


@pytest.mark.parametrize(
    ("times", "complete", "requests"),
    [(3, True, 4 + 3), (None, False, 4)],  # four tries of page one; then three more pages after recovery
)
def test_server_errors_are_retried_a_bounded_number_of_times(
    cluster: dict[str, Any],
    apiserver: ApiServer,
    audit: Audit,
    sleeps: Sleeps,
    times: int | None,
    complete: bool,
    requests: int,
) -> None:
    apiserver.inject(Fault("error", plural="pytorchjobs", times=times))
    result = audit(page_size=2)
    jobs = kind(result, "PyTorchJob")
    assert result.coverage.complete is complete
    assert sleeps == [0.25, 0.5, 1.0], "capped exponential backoff (no jitter in tests)"
    assert len([r for r in apiserver.requests if r.path == "/apis/kubeflow.org/v1/pytorchjobs"]) == requests
    if complete:
        assert (jobs.seen, jobs.evaluated) == (JOBS, JOBS)
    else:
        assert jobs.seen == 0 and "500" in jobs.gaps[0].reason


def test_dropped_connection_is_retried(cluster: dict[str, Any], apiserver: ApiServer, audit: Audit) -> None:
    apiserver.inject(Fault("drop", plural="pytorchjobs", on_continue=2))
    result = audit(page_size=2)
    assert (kind(result, "PyTorchJob").seen, result.coverage.complete) == (JOBS, True)
    assert result.coverage.requests.retries == 1


def test_slow_page_times_out_and_is_fetched_again(
    cluster: dict[str, Any], apiserver: ApiServer, audit: Audit
) -> None:
    held = threading.Event()  # never set: the first reply of page two only comes when the server stops
    apiserver.inject(Fault("slow", plural="pytorchjobs", on_continue=1, gate=held))
    result = audit(page_size=2, timeout=0.3)
    assert (kind(result, "PyTorchJob").seen, result.coverage.complete) == (JOBS, True)
    assert result.coverage.requests.retries == 1


class _StopAt:
    """Presses Ctrl-C once `kind` has listed `count` objects."""

    def __init__(self, kind: str, count: int) -> None:
        self.kind, self.count = kind, count
        self.finished = False

    def update(self, kind: str, namespace: str | None, kind_count: int, total: int) -> None:
        if kind == self.kind and kind_count >= self.count:
            raise KeyboardInterrupt

    def done(self) -> None:
        self.finished = True


def test_interrupt_stops_cleanly_and_reports_coverage(cluster: dict[str, Any], audit: Audit) -> None:
    stop = _StopAt("PyTorchJob", 4)
    result = audit(page_size=2, progress=stop)
    jobs = kind(result, "PyTorchJob")
    assert result.coverage.interrupted and not result.coverage.complete and stop.finished
    assert jobs.evaluated == 4 and [g.reason for g in jobs.gaps] == ["interrupted while listing"]
    assert kind(result, "Pod").gaps[0].reason == "not listed: interrupted"


def test_never_reads_secrets_never_writes_and_reads_configmaps_by_name(
    apiserver: ApiServer, audit: Audit
) -> None:
    job = pytorchjob("cm-job", namespace="ns-0")
    container = job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    container["env"] = [
        {
            "name": "TORCH_NCCL_ASYNC_ERROR_HANDLING",
            "valueFrom": {"configMapKeyRef": {"name": "nccl", "key": "async"}},
        },
        {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "token", "key": "token"}}},
    ]
    apiserver.load([job, configmap("nccl", "ns-0", {"async": "0"}), secret("token", "ns-0")])
    unresolved = audit()
    resolved = audit(resolve_configmaps=True)
    rule = ("nccl-timeout", "async-error-handling")
    assert not any((f.policy, f.rule) == rule for f in unresolved.spool.findings())
    assert any((f.policy, f.rule) == rule and f.result.value == "fail" for f in resolved.spool.findings())
    paths = [r.path for r in apiserver.requests]
    assert not any("secrets" in p for p in paths)
    assert [p for p in paths if "configmaps" in p] == ["/api/v1/namespaces/ns-0/configmaps/nccl"]
    assert apiserver.writes() == []


def test_selector_and_excluded_namespaces(
    cluster: dict[str, Any], apiserver: ApiServer, audit: Audit
) -> None:
    apiserver.load([pytorchjob("labelled", namespace="ns-0", labels={"team": "ml"})])
    only = kind(audit(selector="team=ml"), "PyTorchJob")
    assert (only.seen, only.evaluated) == (1, 1)
    excluded = kind(audit(exclude_namespaces=("ns-0",)), "PyTorchJob")
    assert excluded.seen == JOBS + 1 - 4, "ns-0 filtered by the server"
    query = [r.query for r in apiserver.requests if r.path == "/apis/kubeflow.org/v1/pytorchjobs"][-1]
    assert query["fieldSelector"] == "metadata.namespace!=ns-0"


class _Tampered:
    """The real transport, with one marker string in replies swapped for raw JSON the store cannot hold."""

    def __init__(self, inner: Any, marker: bytes, raw: bytes) -> None:
        self.inner, self.marker, self.raw = inner, marker, raw

    def request(self, *args: Any, **kwargs: Any) -> Reply:
        reply: Reply = self.inner.request(*args, **kwargs)
        return Reply(reply.status, reply.headers, reply.body.replace(self.marker, self.raw))


def test_a_page_holding_a_100000_digit_integer_is_not_evaluated_and_the_rest_is(
    apiserver: ApiServer, kubeconfig: Path, engine: Engine
) -> None:
    apiserver.load([pytorchjob("ok", namespace="ns-0"), pod("bare", "ns-1")])
    bad = pytorchjob("huge", namespace="ns-2")
    bad["metadata"]["labels"] = {"n": "HUGE-NUMBER"}
    apiserver.load([bad])
    transport = _Tampered(connect(str(kubeconfig), None), b'"HUGE-NUMBER"', b"9" * 100_000)
    result = Auditor(Api(transport, sleep=lambda _: None), engine, AuditScope(), None).run()
    jobs = kind(result, "PyTorchJob")
    assert jobs.status == "not-evaluated" and jobs.evaluated == 0
    assert "integer of 100,000 characters" in jobs.gaps[0].reason
    assert kind(result, "Pod").evaluated == 1, "the other kinds are still audited"
    assert not result.coverage.complete
    assert result.internal_errors == 0
    result.spool.close()


def test_a_policy_over_its_cost_budget_is_an_error_finding_and_the_audit_goes_on(
    apiserver: ApiServer, kubeconfig: Path, tmp_path: Path
) -> None:
    wide = wide_pod(3_000)
    wide["metadata"]["namespace"] = "ml"
    apiserver.load([wide, pod_in("narrow", wide_pod(3))])
    folder = user_policy(tmp_path / "policies", PAIRWISE)
    engine = build_engine(Settings(policy_dirs=(str(folder),), select=("unique-images",)))
    result = Auditor(
        Api(connect(str(kubeconfig), None), sleep=lambda _: None), engine, AuditScope(), None
    ).run()
    pods = kind(result, "Pod")
    assert (pods.evaluated, pods.not_evaluated, result.internal_errors) == (2, 0, 0)
    findings = list(result.spool.findings())
    assert [(f.object.name, f.result) for f in findings] == [("wide", Result.ERROR)]
    assert "over the CEL cost budget" in findings[0].message
    result.spool.close()


def pod_in(name: str, obj: dict[str, Any]) -> dict[str, Any]:
    obj["metadata"] = {"name": name, "namespace": "ml"}
    return obj


def test_copies_of_one_workload_across_namespaces_are_evaluated_once(
    cluster: dict[str, Any], kubeconfig: Path
) -> None:
    engine = build_engine(Settings())
    result = Auditor(Api(connect(str(kubeconfig), None)), engine, AuditScope()).run()
    assert engine.memo is not None and engine.memo.hits >= JOBS - 1, "seven equal jobs in three namespaces"
    fresh = build_engine(Settings())
    fresh.memo = None
    for job in cluster["jobs"]:
        mine = sorted(f.key() for f in result.spool.findings() if f.object.name == job["metadata"]["name"])
        assert mine == sorted(f.key() for f in fresh.evaluate(job).results if f.result is not Result.PASS)
    result.spool.close()
