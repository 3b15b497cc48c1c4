"""Whether infrastructure disruptions use up a run's restart budget (RULES.md `disruption-budget`).

A pod evicted by a drain, preempted, or deleted by the taint manager gets the condition DisruptionTarget
(kubernetes batch/v1 and core/v1 types). Unless a rule says otherwise, its failure counts against the Job's
backoffLimit like a crash of the program. Sources: kubernetes/api batch/v1 types.go PodFailurePolicyRule
(action Ignore: "the counter towards the .backoffLimit is not incremented"; podFailurePolicy requires the
template's restartPolicy Never); kubernetes-sigs/jobset api/jobset/v1alpha2/jobset_types.go
FailurePolicyRule (actions FailJobSet, RestartJobSet, RestartJobSetAndIgnoreMaxRestarts, RestartJob,
RestartJobAndIgnoreMaxRestarts; onJobFailureReasons, an empty list matching any reason; rules evaluated in
order, the first match wins, and with no match RestartJobSet applies), and its documented pattern
site/static/examples/failure-policy/host-maintenance-event-model.yaml.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from kubegap import raw
from kubegap.fieldpath import FieldPath, render

DISRUPTION: Final = "DisruptionTarget"
IGNORING: Final = frozenset({"RestartJobSetAndIgnoreMaxRestarts", "RestartJobAndIgnoreMaxRestarts"})


def _on_disruption(rule: Mapping[str, Any]) -> bool:
    conditions = (raw.mapping(c) for c in raw.items(rule.get("onPodConditions")))
    return any(c.get("type") == DISRUPTION and c.get("status", "True") == "True" for c in conditions)


def _pod_rule(job_spec: Mapping[str, Any], action: str) -> bool:
    """The Job's podFailurePolicy has a rule with `action` on DisruptionTarget, and can have one at all."""
    if raw.dig(job_spec, ("template", "spec", "restartPolicy")) != "Never":
        return False
    rules = (raw.mapping(r) for r in raw.items(raw.dig(job_spec, ("podFailurePolicy", "rules"))))
    return any(r.get("action") == action and _on_disruption(r) for r in rules)


def _job(obj: Mapping[str, Any], base: FieldPath) -> dict[str, Any]:
    spec = raw.mapping(raw.dig(obj, base))
    if _pod_rule(spec, "Ignore"):
        return {"ignored": True, "detail": "podFailurePolicy ignores DisruptionTarget", "path": render(base)}
    policy = render((*base, "template", "spec", "restartPolicy"))
    never = raw.dig(spec, ("template", "spec", "restartPolicy")) == "Never"
    detail = (
        "no podFailurePolicy rule ignores pods with the condition DisruptionTarget"
        if never
        else f"{policy} is not Never, so no podFailurePolicy can apply"
    )
    return {
        "ignored": False,
        "detail": detail,
        "path": render((*base, "podFailurePolicy")) if never else policy,
    }


def _first_rule(rules: Sequence[Mapping[str, Any]], job: str, reason: str) -> Mapping[str, Any] | None:
    """The JobSet rule that handles a failure of replicated job `job` with `reason`. A rule that also
    matches on the failure message is not counted: kubegap cannot know the message."""
    for rule in rules:
        reasons, targets = (
            raw.items(rule.get("onJobFailureReasons")),
            raw.items(rule.get("targetReplicatedJobs")),
        )
        if raw.items(rule.get("onJobFailureMessagePatterns")):
            continue
        if (not reasons or reason in reasons) and (not targets or job in targets):
            return rule
    return None


def _jobset(obj: Mapping[str, Any]) -> dict[str, Any]:
    """Each replicated job either ignores disrupted pods itself, or fails with reason PodFailurePolicy (a
    FailJob rule on DisruptionTarget; else BackoffLimitExceeded) into a rule that ignores maxRestarts."""
    rules = [raw.mapping(r) for r in raw.items(raw.dig(obj, ("spec", "failurePolicy", "rules")))]
    for index, replicated in enumerate(raw.items(raw.dig(obj, ("spec", "replicatedJobs")))):
        name = str(raw.mapping(replicated).get("name", ""))
        spec = raw.mapping(raw.dig(replicated, ("template", "spec")))
        if _pod_rule(spec, "Ignore"):
            continue
        reason = "PodFailurePolicy" if _pod_rule(spec, "FailJob") else "BackoffLimitExceeded"
        rule = _first_rule(rules, name, reason)
        action = rule.get("action") if rule else "RestartJobSet (no rule matches)"
        if not isinstance(action, str) or action not in IGNORING:  # a list there cannot be looked up
            detail = f"a disrupted pod fails replicated job {name} with reason {reason}, handled by {action}"
            return {"ignored": False, "detail": detail, "path": render(("spec", "replicatedJobs", index))}
    return {
        "ignored": True,
        "detail": "disruptions do not count against maxRestarts",
        "path": "spec.failurePolicy",
    }


# How a kind's failures spare disruptions: its row in the kinds table (`kubegap.kinds`) holds the reader.
DisruptionReader = Callable[[Mapping[str, Any]], dict[str, Any]]


def job(fields: FieldPath) -> DisruptionReader:
    """The reader of a batch Job whose spec is at `fields` (a CronJob's `spec.jobTemplate.spec`)."""
    return lambda obj: _job(obj, fields)


JOBSET: DisruptionReader = _jobset
