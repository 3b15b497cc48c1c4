"""The admission decision, table by table: what is evaluated, what each action does, and onError."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from kubegap.config import Settings
from kubegap.evaluate import DeadlineExceeded, Evaluation, build_engine
from kubegap.findings import Finding, ObjectRef, Result, Severity
from kubegap.webhook.actions import parse_config
from kubegap.webhook.admission import Reviewer, evaluation_budget
from kubegap.webhook.app import build_reviewer
from kubegap.webhook.engines import EngineSet
from kubegap.webhook.metrics import ERRORS, REQUESTS, RESULTS, Metrics
from kubegap.webhook.review import API_VERSION, KIND, BadReview

from .conftest import PAYLOADS, PRICED_HIGH, payload

MakeReviewer = Callable[..., Reviewer]
ANNOTATION_KEY = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
ENGINE = build_engine(Settings(impact=PRICED_HIGH))
KINDS = [
    ("", "Pod"),
    ("batch", "Job"),
    ("kubeflow.org", "PyTorchJob"),
    ("jobset.x-k8s.io", "JobSet"),
    ("", "Node"),
]


class FakeEngine:
    """Records what it was asked and answers with a preset evaluation or exception."""

    def __init__(self, answer: Evaluation | Exception | None = None) -> None:
        self.answer = answer
        self.calls: list[tuple[Mapping[str, Any], float | None]] = []

    def evaluate(
        self, obj: Mapping[str, Any], context: Any = None, deadline: float | None = None
    ) -> Evaluation:
        self.calls.append((obj, deadline))
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer or Evaluation(ObjectRef.of(obj), True, ())


def _fake_reviewer(engine: FakeEngine, section: dict[str, Any] | None = None, **kwargs: Any) -> Reviewer:
    engines = EngineSet(default=engine, by_namespace={}, policies=1)
    return Reviewer(engines, parse_config(section or {}), KINDS, **kwargs)


def _check_contract(reply: Mapping[str, Any], uid: str) -> Mapping[str, Any]:
    """What the API server verifies of every answer (admissionreview.go), plus our own bounds."""
    assert reply["apiVersion"] == API_VERSION and reply["kind"] == KIND
    response = reply["response"]
    assert response["uid"] == uid
    assert "patch" not in response and "patchType" not in response
    if not response["allowed"]:
        assert response["status"]["code"] >= 400
        assert len(response["status"]["message"].encode()) <= 1024
    # A warning over 256 characters may be cut by the API server; past 4,096 in all they are dropped.
    assert all(len(w) <= 256 for w in response.get("warnings", []))
    assert sum(len(w) for w in response.get("warnings", [])) <= 4096
    assert len(response.get("warnings", [])) <= 21
    for key, value in response.get("auditAnnotations", {}).items():
        assert ANNOTATION_KEY.fullmatch(key) and len(key) <= 63, key  # prefixed with the webhook name
        assert 0 < len(value) <= (4096 if key == "findings" else 512)
    return response


def _failing_ids(name: str, **params: Any) -> set[str]:
    obj = payload(name)["request"]["object"]
    return {f"{f.policy}/{f.rule}" for f in ENGINE.evaluate(obj).findings if f.result is Result.FAIL}


SKIPPED = [
    ("delete", {"operation": "DELETE", "object": None}),
    ("connect", {"operation": "CONNECT"}),
    ("status subresource", {"operation": "UPDATE", "subResource": "status"}),
    ("ephemeral containers", {"operation": "UPDATE", "subResource": "ephemeralcontainers"}),
    ("unsupported kind", {"kind": {"group": "", "version": "v1", "kind": "ConfigMap"}}),
    (
        "batch.volcano.sh Job is not batch Job",
        {"kind": {"group": "batch.volcano.sh", "version": "v1", "kind": "Pod"}},
    ),
    ("object being deleted", {"operation": "UPDATE", "_deleting": True}),
]


@pytest.mark.parametrize(("case", "change"), SKIPPED, ids=[c[0] for c in SKIPPED])
def test_only_create_and_update_of_supported_kinds_are_evaluated(case: str, change: dict[str, Any]) -> None:
    review = payload("pod-create.json")
    request = review["request"]
    if change.pop("_deleting", False):
        request["object"]["metadata"]["deletionTimestamp"] = "2026-11-30T10:00:00Z"
    request.update(change)
    engine = FakeEngine()
    outcome = _fake_reviewer(engine, {"preset": "enforce"}).review(review)
    assert _check_contract(outcome.review, request["uid"]) == {"uid": request["uid"], "allowed": True}
    assert outcome.decision == "skipped" and engine.calls == []


@pytest.mark.parametrize("name", PAYLOADS)
def test_warn_preset_allows_and_warns_once_per_failing_finding(name: str, reviewer: MakeReviewer) -> None:
    review = payload(name)
    outcome = reviewer().review(review)
    response = _check_contract(outcome.review, review["request"]["uid"])
    failing = [f for f in ENGINE.evaluate(review["request"]["object"]).findings if f.result is Result.FAIL]
    assert response["allowed"] is True
    assert len(response.get("warnings", [])) == len(failing)
    for finding in failing:
        assert any(w.startswith(f"{finding.policy}/{finding.rule}") for w in response["warnings"])
    warned = response.get("auditAnnotations", {}).get("warned", "")
    assert set(filter(None, warned.split(","))) == {f"{f.policy}/{f.rule}" for f in failing}
    assert outcome.decision == ("warned" if failing else "allowed")


@pytest.mark.parametrize("name", PAYLOADS)
def test_enforce_preset_denies_exactly_when_a_finding_is_high(name: str, reviewer: MakeReviewer) -> None:
    review = payload(name)
    response = _check_contract(
        reviewer({"preset": "enforce"}).review(review).review, review["request"]["uid"]
    )
    findings = ENGINE.evaluate(review["request"]["object"]).findings
    high = [f for f in findings if f.result is Result.FAIL and f.severity >= Severity.HIGH]
    assert response["allowed"] is (not high)
    if high:
        assert response["status"]["reason"] == "Forbidden" and response["status"]["code"] == 403
        for finding in high[:2]:
            assert f"{finding.policy}/{finding.rule}" in response["status"]["message"]
        medium = [f for f in findings if f.result is Result.FAIL and not f.severity >= Severity.HIGH]
        assert len(response.get("warnings", [])) == len(medium)


@pytest.mark.parametrize("name", PAYLOADS)
def test_the_audit_annotation_carries_each_failing_finding_with_its_fix(
    name: str, reviewer: MakeReviewer
) -> None:
    review = payload(name)
    response = reviewer({"preset": "enforce"}).review(review).review["response"]
    failing = [f for f in ENGINE.evaluate(review["request"]["object"]).findings if f.result is Result.FAIL]
    if not failing:
        assert "findings" not in response.get("auditAnnotations", {})
        return
    records = json.loads(response["auditAnnotations"]["findings"])
    listed = [r for r in records if "id" in r]
    assert len(listed) + sum(r.get("more", 0) for r in records) == len(failing)
    for record in listed:
        match = [
            f for f in failing if f"{f.policy}/{f.rule}" == record["id"] and f.message == record["message"]
        ]
        assert match and record["fix"] == match[0].remediation.strip()


def test_the_fixtures_cover_denials_and_a_clean_workload() -> None:
    assert _failing_ids("pytorchjob-create-dryrun.json") == set()
    assert "health-probes/liveness-probe" in _failing_ids("pod-create.json")
    assert "gpu-nic-topology/no-transport-fallback" in _failing_ids("job-update.json")


def test_a_dry_run_is_decided_the_same_way(reviewer: MakeReviewer) -> None:
    review = payload("pod-create.json")
    wet = reviewer({"preset": "enforce"}).review(review).review
    review["request"]["dryRun"] = True
    assert reviewer({"preset": "enforce"}).review(review).review == wet


def test_policy_actions_audit_only(reviewer: MakeReviewer) -> None:
    review = payload("job-update.json")
    section = {"preset": "enforce", "actions": {"restart-budget": ["Audit"], "checkpoint-interval": ["Warn"]}}
    response = reviewer(section).review(review).review["response"]
    annotations = response["auditAnnotations"]
    assert annotations["audited"] == "restart-budget/auto-restart"
    assert "restart-budget" not in annotations["denied"] + annotations["warned"]
    assert not any(w.startswith("restart-budget/") for w in response["warnings"])
    # --save-interval without --save saves nothing (RULES.md v2)
    assert any(w.startswith("checkpoint-interval/checkpointing-enabled") for w in response["warnings"])
    assert "checkpoint-interval" not in response["status"]["message"]
    assert "gpu-nic-topology/no-transport-fallback" in response["status"]["message"]


def test_namespace_params_skip_and_actions(reviewer: MakeReviewer) -> None:
    section = {
        "preset": "enforce",
        "namespaces": {
            "research": {
                "params": {"nccl-timeout": {"maxCollectiveTimeout": "15m"}},
                "skip": ["health-probes"],
            },
            "quiet": {"actions": {"nccl-timeout": ["Audit"], "checkpoint-interval": ["Audit"]}},
        },
    }
    review = reviewer(section)
    ptj = payload("pytorchjob-create-dryrun.json")  # --ddp_timeout 1200: 20 minutes
    assert review.review(ptj).review["response"]["allowed"] is False
    assert "nccl-timeout/timeout-bounded" in review.review(ptj).review["response"]["status"]["message"]
    ptj["request"]["namespace"] = ptj["request"]["object"]["metadata"]["namespace"] = "prod"
    assert review.review(ptj).review["response"] == {"uid": ptj["request"]["uid"], "allowed": True}
    pod = payload("pod-create.json")
    assert "health-probes" not in json.dumps(review.review(pod).review)
    pod["request"]["namespace"] = pod["request"]["object"]["metadata"]["namespace"] = "quiet"
    quiet = review.review(pod).review["response"]
    assert quiet["allowed"] is False  # health-probes still denies there
    # torchrun's 10-minute default counts (RULES.md v2), so only the checkpoint rule is left to audit
    assert quiet["auditAnnotations"]["audited"].split(",") == ["checkpoint-interval/interval-declared"]


def test_an_object_the_engine_cannot_read_is_a_bad_review() -> None:
    # The engine refuses objects nested past its limit when a policy reads the raw object.
    ref = ObjectRef("v1", "Pod", "research", "finetune-7b")
    too_deep = Finding(
        "invalid-manifest", "too-deep", Severity.HIGH, Result.ERROR,
        "the object is nested deeper than 100 levels; no policy was evaluated", "Check the object.", ref,
    )  # fmt: skip
    reviewer = _fake_reviewer(FakeEngine(Evaluation(ref, True, (too_deep,))), {"onError": "allow"})
    with pytest.raises(BadReview, match=r"request\.object cannot be judged: the object is nested deeper"):
        reviewer.review(payload("pod-create.json"))


def test_a_null_object_on_create_is_a_bad_review() -> None:
    review = payload("pod-create.json")
    review["request"]["object"] = None
    with pytest.raises(BadReview, match=r"request\.object is null on CREATE"):
        _fake_reviewer(FakeEngine()).review(review)


ERROR_RESULT = Finding(
    "nccl-timeout", "timeout-bounded", Severity.HIGH, Result.ERROR, "evaluation failed: no such key",
    "fix it", ObjectRef("v1", "Pod", "research", "finetune-7b"), "Pod", "trainer",
)  # fmt: skip
ON_ERROR = [
    ("deadline, allow", DeadlineExceeded("late"), "allow", True, "deadline"),
    ("deadline, deny", DeadlineExceeded("late"), "deny", False, "deadline"),
    ("internal, allow", ZeroDivisionError("bug"), "allow", True, "internal"),
    ("internal, deny", KeyError("bug"), "deny", False, "internal"),
    ("error result, allow", Evaluation(ERROR_RESULT.object, True, (ERROR_RESULT,)), "allow", True, "error"),
    ("error result, deny", Evaluation(ERROR_RESULT.object, True, (ERROR_RESULT,)), "deny", False, "error"),
]


@pytest.mark.parametrize(
    ("case", "answer", "on_error", "allowed", "cause"), ON_ERROR, ids=[c[0] for c in ON_ERROR]
)
def test_on_error_decides_when_evaluation_fails(
    case: str, answer: Any, on_error: str, allowed: bool, cause: str
) -> None:
    metrics = Metrics()
    review = payload("pod-create.json")
    outcome = _fake_reviewer(FakeEngine(answer), {"onError": on_error}, metrics=metrics).review(review)
    response = _check_contract(outcome.review, review["request"]["uid"])
    assert response["allowed"] is allowed
    text = json.dumps(response)
    assert "Traceback" not in text and "bug" not in text
    assert metrics.value(ERRORS, (cause, "allowed" if allowed else "denied")) == 1
    annotations = response["auditAnnotations"]
    if cause == "error":
        assert annotations["errors"] == "nccl-timeout/timeout-bounded"
    else:
        assert annotations == {"error": cause}
    if allowed:
        assert response["warnings"] and "allowed" in response["warnings"][0]
    else:
        assert "denied" in response["status"]["message"] or "not evaluated" in response["status"]["message"]


BUDGETS = [
    (None, 9.0), ("10s", 9.0), ("2s", 1.75), ("1s", 0.75), ("500ms", 0.25), ("30s", 27.0),
    ("1m0s", 27.0), ("0s", 9.0), ("soon", 9.0), ("-5s", 9.0),
]  # fmt: skip


@pytest.mark.parametrize(("timeout", "budget"), BUDGETS)
def test_evaluation_budget_leaves_a_margin_of_the_api_servers_timeout(
    timeout: str | None, budget: float
) -> None:
    assert evaluation_budget(timeout) == pytest.approx(budget)


def test_the_deadline_counts_from_the_request_start() -> None:
    engine = FakeEngine()
    _fake_reviewer(engine, clock=lambda: 1000.5).review(payload("pod-create.json"), "2s", started=1000.0)
    assert engine.calls[0][1] == pytest.approx(1001.75)


@pytest.mark.parametrize(
    "damage",
    [
        lambda o: o.update(metadata=["not", "a", "map"]),
        lambda o: o["spec"].update(containers=None),
        lambda o: o["spec"].update(containers="trainer"),
        lambda o: o["spec"]["containers"][0].update(env={"A": "b"}),
        lambda o: o["metadata"].update(ownerReferences="x", annotations=[1]),
        lambda o: o.update(spec=7),
    ],
)
def test_malformed_objects_get_a_valid_answer(damage: Callable[[Any], None], reviewer: MakeReviewer) -> None:
    review = payload("pod-create.json")
    damage(review["request"]["object"])
    for section in ({}, {"preset": "enforce", "onError": "deny"}):
        _check_contract(reviewer(section).review(review).review, review["request"]["uid"])


def test_one_log_line_per_review_without_the_object(reviewer: MakeReviewer, caplog: Any) -> None:
    review = payload("job-update.json")
    with caplog.at_level(logging.INFO, logger="kubegap.webhook.admission"):
        reviewer().review(review)
    records = [r for r in caplog.records if r.name == "kubegap.webhook.admission"]
    assert len(records) == 1
    fields = records[0].fields  # type: ignore[attr-defined]
    assert fields["uid"] == review["request"]["uid"]
    assert fields["kind"] == "batch/v1/Job" and fields["operation"] == "UPDATE"
    assert (fields["namespace"], fields["name"]) == ("research", "pretrain-13b")
    assert fields["decision"] == "warned" and fields["dryRun"] is False
    assert "gpu-nic-topology/no-transport-fallback" in fields["failing"]
    assert fields["duration_ms"] >= 0
    line = records[0].getMessage()
    assert json.loads(line.split(" ", 1)[1]) == fields
    for secret_ish in ("eth0", "NCCL_SOCKET_IFNAME", "megatron", "alice"):
        assert secret_ish not in line


def test_metrics_count_decisions_and_results(reviewer: MakeReviewer) -> None:
    metrics = Metrics()
    checker = reviewer({"preset": "enforce"}, metrics=metrics)
    for name in ("pod-create.json", "pytorchjob-create-dryrun.json", "pytorchjob-create-dryrun.json"):
        checker.review(payload(name))
    assert metrics.value(REQUESTS, ("denied", "Pod", "CREATE")) == 1
    assert metrics.value(REQUESTS, ("allowed", "PyTorchJob.kubeflow.org", "CREATE")) == 2
    assert metrics.value(RESULTS, ("health-probes", "liveness-probe", "fail")) == 1
    assert metrics.value(RESULTS, ("health-probes", "liveness-probe", "pass")) == 2 * 2  # two roles per job


def test_the_kind_label_tells_a_batch_job_from_a_volcano_job(reviewer: MakeReviewer) -> None:
    metrics = Metrics()
    checker = reviewer({"preset": "warn"}, metrics=metrics)
    batch = payload("job-update.json")
    volcano = payload("job-update.json")
    volcano["request"]["kind"].update(group="batch.volcano.sh", version="v1alpha1")
    for review in (batch, volcano, volcano):
        checker.review(review)
    decisions = ("allowed", "warned", "denied", "skipped")
    counted = {
        kind: sum(metrics.value(REQUESTS, (d, kind, "UPDATE")) for d in decisions)
        for kind in ("Job.batch", "Job.batch.volcano.sh", "Job")
    }
    assert counted == {"Job.batch": 1, "Job.batch.volcano.sh": 2, "Job": 0}


def test_the_real_engine_stops_at_a_deadline_already_past(reviewer: MakeReviewer) -> None:
    review = payload("pytorchjob-create-dryrun.json")
    for section, allowed in (({}, True), ({"onError": "deny"}, False)):
        outcome = reviewer(section).review(review, timeout="1ms")  # nothing is left after the margin
        response = _check_contract(outcome.review, review["request"]["uid"])
        assert response["allowed"] is allowed
        assert response["auditAnnotations"] == {"error": "deadline"}
        assert outcome.record["error"] == "deadline"


def test_the_denial_fix_follows_the_parameters_in_force() -> None:
    review = payload("pytorchjob-create-dryrun.json")
    container = {
        "name": "trainer",
        "image": "i",
        "command": ["torchrun", "train.py", "--distributed-timeout-minutes", "25"],
        "resources": {"limits": {"nvidia.com/gpu": 8}},
    }
    review["request"]["object"]["spec"]["pytorchReplicaSpecs"] = {
        "Worker": {"replicas": 2, "template": {"spec": {"containers": [container]}}}
    }
    settings = Settings(
        select=("nccl-timeout/timeout-bounded",),
        params={"nccl-timeout": {"maxCollectiveTimeout": "20m"}},
        webhook={"preset": "enforce"},
        impact=PRICED_HIGH,  # a 16-GPU job: its fix is priced low, and this test is about the words
    )
    response = build_reviewer(settings, Metrics()).review(review).review["response"]
    message = response["status"]["message"]
    assert "collective timeout 25m" in message and "exceeds 20m" in message
    assert "Fix: Lower the collective timeout to at most 20 minutes" in message
