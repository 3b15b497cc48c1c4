"""`kubegap audit --jobs`: worker processes evaluate, the report is the one a single process writes, and
whatever goes wrong in a worker is a gap, never a pass."""

from __future__ import annotations

import json
import multiprocessing
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from kubegap.audit import demo, workers
from kubegap.audit.command import exit_code
from kubegap.audit.coverage import KindCoverage
from kubegap.audit.reader import connect
from kubegap.audit.retry import Api
from kubegap.audit.runner import Auditor, AuditResult
from kubegap.audit.scope import AuditScope
from kubegap.audit.spool import FINDINGS, Keep
from kubegap.config import Settings
from kubegap.evaluate import Context, DeadlineExceeded, Engine, Evaluation
from kubegap.reports.json import finding_text
from tests.audit.invoke import run
from tests.audit.objects import configmap, node, pod, pytorchjob
from tests.audit.test_runner import _Tampered
from tests.support.apiserver import ApiServer, Fault

PARENT = os.getpid()


def _secret_env_job(name: str, namespace: str) -> dict[str, Any]:
    """A job whose NCCL setting comes from a Secret (never read: unresolved) and one from a ConfigMap."""
    job = pytorchjob(name, namespace=namespace)
    container = job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    container["env"] = [
        {"name": "NCCL_TIMEOUT", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
        {
            "name": "TORCH_NCCL_ASYNC_ERROR_HANDLING",
            "valueFrom": {"configMapKeyRef": {"name": "nccl", "key": "async"}},
        },
    ]
    return job


@pytest.fixture
def served(apiserver: ApiServer) -> ApiServer:
    """The bundled examples (every kind, findings, exemptions), a node pool, owned pods, unresolved env."""
    demo.load(apiserver)
    owner = apiserver.store.add(pytorchjob("owner", namespace="ml"))["metadata"]["uid"]
    apiserver.load([pod(f"owned-{i}", "ml", owner_uid=owner) for i in range(5)])
    apiserver.load([_secret_env_job(f"env-{i}", "ml") for i in range(3)])
    apiserver.load([configmap("nccl", "ml", {"async": "0"})])
    # Mirror pods, owned by the last Node listed: their owner is still in a worker's hands when the
    # Node list ends, so this checks that every controller is recorded before a Pod is checked.
    static = apiserver.store.add(node("zz-static"))["metadata"]["uid"]
    for i in range(3):
        mirror = pod(f"mirror-{i}", "kube-system", owner_uid=static)
        mirror["metadata"]["ownerReferences"][0].update(apiVersion="v1", kind="Node", name="zz-static")
        apiserver.load([mirror])
    return apiserver


def test_the_json_report_is_the_same_with_one_job_and_two(
    capsys: pytest.CaptureFixture[str], served: ApiServer, kubeconfig: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chunks: list[int] = []
    submit = workers.Workers.submit

    def counted(self: workers.Workers, chunk: workers.Chunk) -> workers.Ticket:
        chunks.append(len(chunk))
        return submit(self, chunk)

    monkeypatch.setattr(workers.Workers, "submit", counted)
    argv = ("--kubeconfig", str(kubeconfig), "--format", "json", "--page-size", "7", "--resolve-configmaps")
    one = run(capsys, *argv, "--jobs", "1")
    assert not chunks
    two = run(capsys, *argv, "--jobs", "2")
    assert len(chunks) > 20 and max(chunks) <= 4, "pages of 7 sent as a chunk per worker"
    assert two == one
    report = json.loads(one[1])
    totals = report["coverage"]["totals"]
    assert totals["skippedOwned"] >= 5 + 3 and totals["exempted"] > 0 and totals["evaluated"] > 100
    assert len({k["kind"] for k in report["coverage"]["kinds"] if k["evaluated"]}) > 10
    assert report["summary"]["unresolved"] and report["summary"]["results"]["pass"] > 0
    assert any(f["result"] == "fail" for f in report["findings"])
    assert report["cluster"]["status"] == "evaluated"


def test_the_json_report_is_the_same_however_the_spool_keeps_its_findings(
    capsys: pytest.CaptureFixture[str], served: ApiServer, kubeconfig: Path, engine: Engine, tmp_path: Path
) -> None:
    """JSON alone keeps only each finding's text, made in the workers; JSON beside another format keeps the
    findings too; the texts are what encoding the findings gives."""
    argv = ("--kubeconfig", str(kubeconfig), "--page-size", "7", "--resolve-configmaps")
    code, alone, _ = run(capsys, *argv, "--format", "json", "--jobs", "2")
    beside = tmp_path / "audit.json"
    text = run(capsys, *argv, "--format", "text", "--output", f"json={beside}", "--jobs", "1")
    assert text[0] == code and "findings" in text[1]
    assert beside.read_text() == alone
    result = _audit(kubeconfig, engine, jobs=1, page_size=7, resolve_configmaps=True)
    findings = [f.to_json() for f in result.spool.findings()]
    result.spool.close()
    assert len(findings) > 100 and json.loads(alone)["findings"] == findings


class _Rigged:
    """The real engine, except that the objects named in `acts` do something else in a worker process (in
    every process with `anywhere`)."""

    def __init__(
        self, engine: Engine, acts: Mapping[str, Callable[[], Evaluation]], anywhere: bool = False
    ) -> None:
        self.engine, self.acts, self.anywhere = engine, acts, anywhere

    def evaluate(
        self, obj: Mapping[str, Any], context: Context | None = None, deadline: float | None = None
    ) -> Evaluation:
        act = self.acts.get(obj["metadata"]["name"])
        if act is not None and (self.anywhere or os.getpid() != PARENT):
            return act()
        return self.engine.evaluate(obj, context, deadline)


def _raise(exc: Exception) -> Callable[[], Evaluation]:
    def act() -> Evaluation:
        raise exc

    return act


def _die() -> Evaluation:
    os._exit(7)


def _audit(kubeconfig: Path, engine: Any, jobs: int = 2, keep: Keep = FINDINGS, **scope: Any) -> AuditResult:
    api = Api(connect(str(kubeconfig), None), sleep=lambda _: None)
    return Auditor(api, engine, AuditScope(**scope), None, jobs=jobs, keep=keep).run()


def _kind(result: AuditResult, name: str) -> KindCoverage:
    return next(
        k for k in result.coverage.kinds if k.kind == name and k.api_version in ("v1", "kubeflow.org/v1")
    )


def test_an_error_in_a_worker_is_an_internal_error_and_a_deadline_is_not_evaluated(
    apiserver: ApiServer, kubeconfig: Path, engine: Engine
) -> None:
    apiserver.load([pytorchjob(f"job-{i}", namespace="ml") for i in range(6)])
    apiserver.load([pytorchjob("boom", namespace="ml"), pytorchjob("late", namespace="ml")])
    acts = {
        "boom": _raise(RuntimeError("a bug")),
        "late": _raise(DeadlineExceeded("evaluation of ml/late ran past its deadline")),
    }
    result = _audit(kubeconfig, _Rigged(engine, acts), page_size=3)
    jobs = _kind(result, "PyTorchJob")
    assert (jobs.seen, jobs.evaluated, jobs.not_evaluated) == (8, 6, 2)
    assert sorted(g.reason for g in jobs.gaps) == [
        "internal error evaluating PyTorchJob/ml/boom: a bug",
        "not evaluated: evaluation of ml/late ran past its deadline",
    ]
    assert result.internal_errors == 1
    assert exit_code(result, Settings(), allow_incomplete=True) == 3
    assert {f.object.name for f in result.spool.findings()} == {f"job-{i}" for i in range(6)}
    result.spool.close()


def test_a_worker_that_dies_loses_only_what_it_held_and_the_audit_goes_on(
    apiserver: ApiServer, kubeconfig: Path, engine: Engine
) -> None:
    names = [f"job-{i:02d}" for i in range(12)]
    apiserver.load([pytorchjob(n, namespace="ml") for n in names[:5]])
    apiserver.load([pytorchjob("poison", namespace="ml")])
    apiserver.load([pytorchjob(n, namespace="ml") for n in names[5:]])
    apiserver.load([pod(f"pod-{i}", "ml") for i in range(4)])
    result = _audit(kubeconfig, _Rigged(engine, {"poison": _die}), keep=Keep(json=True), page_size=2)
    jobs, pods = _kind(result, "PyTorchJob"), _kind(result, "Pod")
    assert jobs.seen == 13 and jobs.evaluated + jobs.not_evaluated == 13
    assert 1 <= jobs.not_evaluated <= 6, "two pages in flight, and the page being sent"
    gap = jobs.gaps[0].reason
    assert len(jobs.gaps) == 1 and "the worker process evaluating them died (exit code 7)" in gap
    assert "ml/poison" in gap or jobs.not_evaluated > 1
    evaluated = {f.object.name for f in result.spool.findings() if f.object.kind == "PyTorchJob"}
    assert "poison" not in evaluated and len(evaluated) == jobs.evaluated, "no pass for what was lost"
    assert result.summary.objects == jobs.evaluated + pods.evaluated
    assert (pods.seen, pods.evaluated) == (4, 4), "a new worker took the dead one's place"
    assert result.internal_errors == 0 and not result.coverage.complete
    # the JSON texts the workers wrote, the dead one's included, are those of the findings recorded
    assert "".join(result.spool.joined()) == ", ".join(map(finding_text, result.spool.findings()))
    result.spool.close()


def test_gaps_and_notes_read_in_listing_order_with_workers(
    apiserver: ApiServer, kubeconfig: Path, engine: Engine
) -> None:
    apiserver.load([pytorchjob("a-late", namespace="ml"), *(pytorchjob(f"job-{i}", "ml") for i in range(6))])
    late = DeadlineExceeded("evaluation of ml/a-late ran past its deadline")
    rigged = _Rigged(engine, {"a-late": _raise(late)}, anywhere=True)
    coverages = []
    for jobs in (1, 2):
        apiserver.state.continues.clear()
        apiserver.inject(Fault("expire", plural="pytorchjobs", on_continue=1))
        apiserver.inject(Fault("expire", plural="pytorchjobs", on_continue=2))
        result = _audit(kubeconfig, rigged, jobs, page_size=2)
        coverages.append(result.coverage.to_json())
        result.spool.close()
    assert coverages[0] == coverages[1]
    (jobs,) = [k for k in coverages[1]["kinds"] if k["kind"] == "PyTorchJob"]
    assert [g["reason"] for g in jobs["gaps"]] == [
        "not evaluated: evaluation of ml/a-late ran past its deadline",
        "continue token expired again after 1 restart(s); the list is incomplete",
    ]
    assert jobs["notes"] and (jobs["seen"], jobs["evaluated"]) == (2, 1)


def test_an_object_too_deep_to_pickle_is_evaluated_by_the_audit_itself(
    apiserver: ApiServer, kubeconfig: Path, engine: Engine
) -> None:
    deep = pytorchjob("deep", namespace="ml")
    deep["spec"]["extra"] = "DEEP-MARKER"
    apiserver.load([deep, *(pytorchjob(f"job-{i}", "ml") for i in range(3))])
    nested = b'{"a":' * 800 + b"1" + b"}" * 800  # JSON reads it; pickle gives up at about 500 levels
    found = []
    for jobs in (1, 2):
        transport = _Tampered(connect(str(kubeconfig), None), b'"DEEP-MARKER"', nested)
        result = Auditor(Api(transport, sleep=lambda _: None), engine, AuditScope(), None, jobs=jobs).run()
        assert (_kind(result, "PyTorchJob").evaluated, result.internal_errors) == (4, 0)
        found.append(sorted(f.key() for f in result.spool.findings()))
        result.spool.close()
    assert found[0] == found[1] and any("deep" in str(key) for key in found[0])


class _StopAfter:
    """Presses Ctrl-C once `count` objects are listed."""

    def __init__(self, count: int) -> None:
        self.count = count

    def update(self, kind: str, namespace: str | None, kind_count: int, total: int) -> None:
        if total >= self.count:
            raise KeyboardInterrupt

    def done(self) -> None:
        pass


def test_ctrl_c_reports_what_was_covered_and_leaves_no_worker(
    apiserver: ApiServer, kubeconfig: Path, engine: Engine
) -> None:
    apiserver.load([pytorchjob(f"job-{i}", namespace="ml") for i in range(12)])
    api = Api(connect(str(kubeconfig), None), sleep=lambda _: None)
    result = Auditor(api, engine, AuditScope(page_size=4), _StopAfter(8), jobs=2).run()
    assert multiprocessing.active_children() == []
    jobs = _kind(result, "PyTorchJob")
    assert result.coverage.interrupted and not result.coverage.complete
    assert jobs.seen == 8 and jobs.evaluated + jobs.not_evaluated == 8
    reasons = [g.reason for g in jobs.gaps]
    assert reasons[-1] == "interrupted while listing"
    if jobs.not_evaluated:
        assert reasons[0] == f"interrupted before {jobs.not_evaluated} listed object(s) were evaluated"
    result.spool.close()


def test_without_fork_the_audit_evaluates_every_object_itself(
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    served: ApiServer,
    kubeconfig: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    argv = ("--kubeconfig", str(kubeconfig), "--format", "json", "--page-size", "7")
    one = run(capsys, *argv, "--jobs", "1")
    monkeypatch.setattr(workers, "_CONTEXT", None)  # as on Windows
    code, out, _ = run(capsys, *argv, "--jobs", "2")
    assert (code, out) == one[:2]
    assert "cannot start 2 audit workers (this platform cannot fork worker processes)" in caplog.text
    assert multiprocessing.active_children() == []


@pytest.mark.parametrize("jobs", ["0", "x", "-1"])
def test_jobs_must_be_a_positive_number_or_auto(
    capsys: pytest.CaptureFixture[str], kubeconfig: Path, jobs: str
) -> None:
    code, out, err = run(capsys, "--kubeconfig", str(kubeconfig), "--jobs", jobs)
    assert (code, out) == (2, "")
    assert f"--jobs takes a positive number or auto, not {jobs!r}" in err


class _CtrlCAt:
    """The engine, with Ctrl-C pressed during its `at`-th evaluation."""

    def __init__(self, engine: Engine, at: int) -> None:
        self.engine, self.at, self.calls = engine, at, 0

    def evaluate(
        self, obj: Mapping[str, Any], context: Context | None = None, deadline: float | None = None
    ) -> Evaluation:
        self.calls += 1
        if self.calls == self.at:
            raise KeyboardInterrupt
        return self.engine.evaluate(obj, context, deadline)


def test_ctrl_c_in_one_process_counts_the_page_it_was_judging_as_not_evaluated(
    apiserver: ApiServer, kubeconfig: Path, engine: Engine
) -> None:
    """In one process the audit judges a page a step at a time, as a worker judges its chunk: Ctrl-C while
    the page is evaluated leaves every object listed and not recorded counted as not evaluated."""
    apiserver.load([pytorchjob(f"job-{i}", namespace="ml") for i in range(6)])
    api = Api(connect(str(kubeconfig), None), sleep=lambda _: None)
    result = Auditor(api, _CtrlCAt(engine, 3), AuditScope(page_size=4), None, jobs=1).run()
    jobs = _kind(result, "PyTorchJob")
    assert result.coverage.interrupted and not result.coverage.complete
    assert (jobs.seen, jobs.evaluated, jobs.not_evaluated) == (4, 0, 4)
    assert [g.reason for g in jobs.gaps] == [
        "interrupted before 4 listed object(s) were evaluated",
        "interrupted while listing",
    ]
    result.spool.close()
