"""Fixes of the pod and the workload: the liveness probe (health-probes) and the restart budget
(restart-budget)."""

from __future__ import annotations

import math

from kubegap import raw
from kubegap.facts import lifecycle
from kubegap.fix import edits
from kubegap.fix.nodes import Unsafe
from kubegap.fix.target import FieldPath, Patch, Target
from kubegap.kinds import kind_info
from kubegap.workloads import KUBEFLOW_REPLICA_SPECS

HEARTBEAT_FILE = "/tmp/kubegap-heartbeat"
# The value restart-budget's remediation names; the policy has no parameter for it.
RESTARTS = 3


def liveness_probe(target: Target) -> Patch:
    _, container = target.container()
    window = math.ceil(target.params["minLivenessWindow"])
    period, timeout = 30, 10
    failures = max(1, math.ceil((window - timeout) / period))
    probe = {
        "exec": {
            "command": [
                "sh",
                "-c",
                f"test $(( $(date +%s) - $(stat -c %Y {HEARTBEAT_FILE}) )) -lt {window}",
            ]
        },
        "periodSeconds": period,
        "timeoutSeconds": timeout,
        "failureThreshold": failures,
    }
    comment = f"kubegap fix: the training loop must touch {HEARTBEAT_FILE} at least every {window}s"
    edit = edits.insert_key(target.tree, target.at(container.path), "livenessProbe", probe, comment=comment)
    return Patch((edit,), f"added an exec heartbeat liveness probe ({HEARTBEAT_FILE}, window ≥ {window}s)")


def _number(probe: object, key: str, default: int) -> int:
    value = raw.mapping(probe).get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else default


def probe_window(target: Target) -> Patch:
    path = target.path
    probe = raw.dig(target.obj, path)
    window = target.params["minLivenessWindow"]
    period, timeout = _number(probe, "periodSeconds", 10), _number(probe, "timeoutSeconds", 1)
    failures = max(1, math.ceil((window - timeout) / period))
    if "failureThreshold" in raw.mapping(probe):
        edit = edits.set_scalar(target.tree, target.at((*path, "failureThreshold")), failures)
    else:
        edit = edits.insert_key(target.tree, target.at(path), "failureThreshold", failures)
    return Patch((edit,), f"set failureThreshold to {failures} (window {period * failures + timeout}s)")


# --- restart-budget ----------------------------------------------------------------------------------
_RESTART_FIELD: dict[tuple[str, str], FieldPath] = {
    ("batch", "Job"): ("spec", "backoffLimit"),
    ("batch", "CronJob"): ("spec", "jobTemplate", "spec", "backoffLimit"),
    ("jobset.x-k8s.io", "JobSet"): ("spec", "failurePolicy", "maxRestarts"),
    ("batch.volcano.sh", "Job"): ("spec", "maxRetry"),
    ("ray.io", "RayJob"): ("spec", "backoffLimit"),
    **{("kubeflow.org", kind): ("spec", "runPolicy", "backoffLimit") for kind in KUBEFLOW_REPLICA_SPECS},
}


def auto_restart(target: Target) -> Patch:
    info = kind_info(target.obj)
    field = _RESTART_FIELD.get((info.group, info.kind)) if info else None
    if field is None:
        raise Unsafe("kubegap does not know this kind's restart setting")
    if target.path[-1:] == ("restartPolicy",) and info is not None:
        return _restarting_replicas(target, info.kind)
    if target.path[-1:] == ("backoffLimitPerIndex",):
        field = target.path
    if raw.dig(target.obj, field) is not None:
        edit = edits.set_scalar(target.tree, target.at(field), RESTARTS)
    else:
        edit = edits.insert_key(target.tree, target.at(field[:-1]), str(field[-1]), RESTARTS)
    summary = f"set {'.'.join(map(str, field))} to {RESTARTS}"
    if info is not None and _counts_disruptions(target, (info.group, info.kind), field[:-1]):
        rule = edits.insert_key(target.tree, target.at(field[:-1]), "podFailurePolicy", _DISRUPTIONS_IGNORED)
        return Patch((edit, rule), f"{summary}, with a podFailurePolicy rule that counts no disruption")
    return Patch((edit,), summary)


# A pod failed by a node drain, a preemption or an eviction carries the condition DisruptionTarget; Ignore
# retries it without counting it against backoffLimit (kubernetes.io/docs/tasks/job/pod-failure-policy/).
_DISRUPTIONS_IGNORED = {"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]}


def _counts_disruptions(target: Target, kind: tuple[str, str], job: FieldPath) -> bool:
    """Whether a Job's new restart budget needs the rule that keeps disruptions out of it: where kubegap
    also checks that (disruption-budget, which did not apply while the budget was 0), the pods'
    restartPolicy is Never (the rule needs it) and the Job has no podFailurePolicy. Otherwise (OnFailure,
    or a policy of the author's own) the fix brings the disruption finding and is refused, as before."""
    return (
        "disruption-budget" in target.policies
        and kind in (("batch", "Job"), ("batch", "CronJob"))
        and raw.dig(target.obj, (*job, "template", "spec", "restartPolicy")) == "Never"
        and raw.dig(target.obj, (*job, "podFailurePolicy")) is None
    )


def _restarting_replicas(target: Target, kind: str) -> Patch:
    """A Kubeflow replica whose restartPolicy the operator never restarts (Never, or a kind's default of
    Never) gets OnFailure: every such replica at once, since one left behind keeps the finding."""
    replicas_key = ("spec", KUBEFLOW_REPLICA_SPECS[kind])
    changes = []
    for role, spec in raw.mapping(raw.dig(target.obj, replicas_key)).items():
        written = raw.mapping(spec).get("restartPolicy")
        policy = written if isinstance(written, str) and written else lifecycle.default_restart_policy(kind)
        if policy in lifecycle.RESTARTING:
            continue
        at = (*replicas_key, str(role))
        if written is None:
            changes.append(edits.insert_key(target.tree, target.at(at), "restartPolicy", "OnFailure"))
        else:
            changes.append(edits.set_scalar(target.tree, target.at((*at, "restartPolicy")), "OnFailure"))
    if not changes:
        raise Unsafe("no replica's restartPolicy to change")
    summary = "set restartPolicy to OnFailure where the operator would not restart"
    backoff = ("spec", "runPolicy", "backoffLimit")
    if raw.dig(target.obj, backoff) is None:  # unset, the operator restarts without limit: bound the loop
        changes.append(edits.insert_key(target.tree, target.at(backoff[:-1]), backoff[-1], RESTARTS))
        summary += f", and runPolicy.backoffLimit to {RESTARTS}"
    return Patch(tuple(changes), summary)
