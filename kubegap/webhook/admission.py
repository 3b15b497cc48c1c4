"""The admission decision: an AdmissionReview in, the answer out. No HTTP here, so it is tested by tables.

The engine is the one `kubegap lint` uses, given the object exactly as the API server sent it, so the
webhook can only differ from lint in what it does with the findings (the actions of the config).
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubegap.durations import parse_go
from kubegap.enginerules import INVALID_MANIFEST
from kubegap.evaluate import DeadlineExceeded, Evaluation
from kubegap.findings import Finding, ObjectRef, Result
from kubegap.webhook import messages
from kubegap.webhook.actions import Action, OnError, WebhookConfig
from kubegap.webhook.engines import EngineSet
from kubegap.webhook.metrics import DURATION, ERRORS, REQUESTS, RESULTS, Metrics, kind_label
from kubegap.webhook.review import AdmissionRequest, AdmissionResponse, AdmissionReview, BadReview, answer

log = logging.getLogger(__name__)

EVALUATED_OPERATIONS = frozenset({"CREATE", "UPDATE"})
DEFAULT_TIMEOUT = 10.0  # what the API server uses when timeoutSeconds is not set
MAX_TIMEOUT = 30.0  # the largest timeoutSeconds the API server accepts


def request_timeout(timeout: str | None) -> float:
    """Seconds the API server waits for this answer: its `?timeout=` parameter, default 10 s.

    An unreadable value falls back to the default rather than failing the request: the parameter is
    advisory, and refusing the review over it would turn a formatting quirk into an outage.
    """
    if timeout:
        try:
            return min(max(parse_go(timeout), 0.0), MAX_TIMEOUT) or DEFAULT_TIMEOUT
        except ValueError:
            log.debug("ignoring unreadable timeout parameter %r", timeout[:40])
    return DEFAULT_TIMEOUT


def evaluation_budget(timeout: str | None) -> float:
    """Seconds an evaluation may take: the request's timeout, less time for the answer's way back."""
    seconds = request_timeout(timeout)
    return seconds - max(0.25, seconds * 0.1)


@dataclass(frozen=True, slots=True)
class Outcome:
    review: AdmissionReview  # the body to send back
    decision: str  # allowed | warned | denied | skipped (not evaluated)
    record: Mapping[str, Any] = field(default_factory=dict)  # the structured log line


@dataclass(slots=True)
class _Sorted:
    denied: list[Finding] = field(default_factory=list)
    warned: list[Finding] = field(default_factory=list)
    audited: list[Finding] = field(default_factory=list)
    errors: list[Finding] = field(default_factory=list)
    exempted: list[Finding] = field(default_factory=list)

    def annotations(self) -> dict[str, str]:
        """Finding ids by what was done with them, and the failing findings in full, for the API server's
        audit log."""
        found = {"denied": self.denied, "warned": self.warned, "audited": self.audited}
        found |= {"errors": self.errors, "exempted": self.exempted}
        out = {
            key: messages.annotation_value(messages.finding_id(f) for f in findings)
            for key, findings in found.items()
            if findings
        }
        failing = [*self.denied, *self.warned, *self.audited, *self.errors]
        unique = list({id(f): f for f in failing}.values())  # a finding both denied and warned: once
        if unique:
            out["findings"] = messages.details(unique)
        return out


class Reviewer:
    def __init__(
        self,
        engines: EngineSet,
        config: WebhookConfig,
        kinds: Iterable[tuple[str, str]],
        metrics: Metrics | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._engines, self._config = engines, config
        self._kinds = frozenset(kinds)
        self.metrics = metrics or Metrics()  # what reviews count into; the app serves it
        self._clock = clock

    def review(
        self, review: AdmissionReview, timeout: str | None = None, started: float | None = None
    ) -> Outcome:
        """Answer one review (already checked by review.decode); BadReview if the object is missing.

        Whatever goes wrong after the review was read becomes a valid answer per onError: the API server
        must never see a stack trace or a 500 it would treat by its own failurePolicy instead of ours.
        """
        started = self._clock() if started is None else started
        request = review["request"]
        try:
            return self._review(request, timeout, started)
        except BadReview:
            raise
        except DeadlineExceeded:
            return self._on_error(
                request, started, "deadline", "evaluation did not finish before its deadline"
            )
        except Exception:
            log.exception("internal error reviewing uid %s", request["uid"])
            return self._on_error(request, started, "internal", "internal error while evaluating")

    def _review(self, request: AdmissionRequest, timeout: str | None, started: float) -> Outcome:
        if not self._evaluates(request):
            outcome = Outcome(answer({"uid": request["uid"], "allowed": True}), "skipped")
            return self._finish(request, outcome, started, cause=None, failing=())
        obj = request.get("object")
        if obj is None:
            raise BadReview(f"request.object is null on {request['operation']}")
        namespace = request.get("namespace") or None
        deadline = started + evaluation_budget(timeout)
        evaluation = self._engines.for_namespace(namespace).evaluate(obj, None, deadline)
        unreadable = [f for f in evaluation.findings if f.policy == INVALID_MANIFEST]
        if unreadable:  # e.g. nested past the engine's depth limit: no Kubernetes object looks like that
            raise BadReview(f"request.object cannot be judged: {unreadable[0].message}")
        return self._decide(request, evaluation, started)

    def _evaluates(self, request: AdmissionRequest) -> bool:
        gvk = request["kind"]
        if request["operation"] not in EVALUATED_OPERATIONS or request.get("subResource"):
            return False  # status, scale and exec subresources carry no pod template to judge
        if (gvk["group"], gvk["kind"]) not in self._kinds:
            return False
        obj = request.get("object") or {}
        metadata = obj.get("metadata") if isinstance(obj, Mapping) else None
        # An object being deleted only loses finalizers: denying that update would block its deletion.
        return not (isinstance(metadata, Mapping) and metadata.get("deletionTimestamp"))

    def _decide(self, request: AdmissionRequest, evaluation: Evaluation, started: float) -> Outcome:
        namespace = request.get("namespace") or None
        split = self._split(evaluation.findings, namespace)
        # one increment per series, not per result: a 64-job JobSet gives 1,160 results (passes included),
        # and each increment takes a lock (and writes a file under gunicorn's multiprocess mode)
        counted = Counter((r.policy, r.rule, r.result._value_) for r in evaluation.results)
        for labels, count in counted.items():
            self.metrics.inc(RESULTS, labels, count)
        deny_errors = bool(split.errors) and self._config.on_error is OnError.DENY
        response: AdmissionResponse = {"uid": request["uid"], "allowed": not (split.denied or deny_errors)}
        ref = _ref(evaluation.ref, request)
        if not response["allowed"]:
            reasons = [_error_item(f) for f in split.errors] if deny_errors else []
            response["status"] = _forbidden(messages.denial(ref, split.denied, reasons))
        lines = [messages.warning_line(f) for f in split.warned]
        if not deny_errors:
            lines += [_error_warning(f) for f in split.errors]
        if lines:
            response["warnings"] = messages.warnings(lines)
        if annotations := split.annotations():
            response["auditAnnotations"] = annotations
        if split.errors:
            self.metrics.inc(ERRORS, ("error", "denied" if deny_errors else "allowed"))
        decision = "denied" if not response["allowed"] else "warned" if lines else "allowed"
        failing = [
            messages.finding_id(f) for f in (*split.denied, *split.warned, *split.audited, *split.errors)
        ]
        cause = "error" if split.errors else None
        return self._finish(request, Outcome(answer(response), decision), started, cause, failing)

    def _split(self, findings: Iterable[Finding], namespace: str | None) -> _Sorted:
        split = _Sorted()
        for finding in sorted(findings, key=messages.sort_key):
            if finding.result is Result.SKIP:
                split.exempted.append(finding)
            elif finding.result is Result.ERROR:
                split.errors.append(finding)
            elif finding.result is Result.FAIL:
                actions = self._config.actions_for(finding.policy, finding.severity, namespace)
                if Action.DENY in actions:
                    split.denied.append(finding)
                if Action.WARN in actions:
                    split.warned.append(finding)
                if Action.AUDIT in actions:
                    split.audited.append(finding)
        return split

    def _on_error(self, request: AdmissionRequest, started: float, cause: str, what: str) -> Outcome:
        """An evaluation that could not finish: allowed with a warning, or denied, as onError says."""
        deny = self._config.on_error is OnError.DENY
        response: AdmissionResponse = {"uid": request["uid"], "allowed": not deny}
        if deny:
            display = _ref(None, request).display()
            response["status"] = _forbidden(f"kubegap: {display}: {what}; denied (webhook onError: deny)")
        else:
            response["warnings"] = [f"kubegap: {what}; allowed (webhook onError: allow)"]
        response["auditAnnotations"] = {"error": cause}
        self.metrics.inc(ERRORS, (cause, "denied" if deny else "allowed"))
        outcome = Outcome(answer(response), "denied" if deny else "warned")
        return self._finish(request, outcome, started, cause, failing=())

    def _finish(
        self,
        request: AdmissionRequest,
        outcome: Outcome,
        started: float,
        cause: str | None,
        failing: Iterable[str],
    ) -> Outcome:
        elapsed = self._clock() - started
        gvk = request["kind"]
        kind = kind_label(gvk["group"], gvk["kind"])
        self.metrics.inc(REQUESTS, (outcome.decision, kind, request["operation"]))
        self.metrics.observe(DURATION, elapsed)
        record = {
            "uid": request["uid"],
            "kind": f"{gvk['group']}/{gvk['version']}/{gvk['kind']}".lstrip("/"),
            "namespace": request.get("namespace") or None,
            "name": request.get("name") or _object_name(request),
            "operation": request["operation"],
            "dryRun": bool(request.get("dryRun")),
            "decision": outcome.decision,
            "failing": sorted(set(failing)),
            "error": cause,
            "duration_ms": round(elapsed * 1000, 3),
        }
        # The object itself is never logged: env values may hold credentials.
        if log.isEnabledFor(logging.INFO):
            log.info("review %s", _JsonText(record), extra={"fields": record})
        return Outcome(outcome.review, outcome.decision, record)


class _JsonText:
    """Rendered only if a text handler formats the record; the JSON handler reads `fields` directly."""

    def __init__(self, fields: Mapping[str, Any]) -> None:
        self.fields = fields

    def __str__(self) -> str:
        return json.dumps(self.fields, separators=(",", ":"))


def _forbidden(message: str) -> Any:
    return {"status": "Failure", "code": 403, "reason": "Forbidden", "message": message}


def _error_item(finding: Finding) -> str:
    at = messages.where(finding)
    return (
        f"[error] {messages.finding_id(finding)}{f' ({at})' if at else ''}: not evaluated: {finding.message}"
    )


def _error_warning(finding: Finding) -> str:
    at = messages.where(finding)
    return (
        f"{messages.finding_id(finding)}{f' [{at}]' if at else ''}: not evaluated, allowed: {finding.message}"
    )


def _object_name(request: AdmissionRequest) -> str | None:
    obj = request.get("object") or request.get("oldObject") or {}
    metadata = obj.get("metadata") if isinstance(obj, Mapping) else None
    if not isinstance(metadata, Mapping):
        return None
    name = metadata.get("name") or metadata.get("generateName")
    return str(name) if name else None


def _ref(ref: ObjectRef | None, request: AdmissionRequest) -> ObjectRef:
    """The evaluated object's identity, completed from the request where the object leaves it out."""
    gvk = request["kind"]
    api_version = f"{gvk['group']}/{gvk['version']}" if gvk["group"] else gvk["version"]
    if ref is None:
        ref = ObjectRef(api_version, gvk["kind"], None, _object_name(request) or request.get("name") or "")
    namespace = ref.namespace or request.get("namespace") or None
    return ObjectRef(ref.api_version or api_version, ref.kind or gvk["kind"], namespace, ref.name or "")
