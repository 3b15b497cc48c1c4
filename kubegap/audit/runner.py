"""The audit itself: discover, list page by page, evaluate each object, account for everything.

Kinds are listed in table order with Pods last, so a Pod's controller has been judged (and its uid noted)
before the Pod comes up; such a Pod is skipped as owned unless owned pods are asked for.
"""

from __future__ import annotations

import heapq
import logging
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from kubegap.audit import cluster
from kubegap.audit.configmaps import ConfigMapResolver
from kubegap.audit.coverage import Coverage, Gap, KindCoverage
from kubegap.audit.discovery import ServedKind, discover
from kubegap.audit.paging import Lister, ListScope, ahead
from kubegap.audit.retry import Api
from kubegap.audit.scope import AuditScope
from kubegap.audit.spool import Spool
from kubegap.audit.transport import ApiFailure, TransportError
from kubegap.evaluate import DeadlineExceeded, Evaluation, Evaluator
from kubegap.findings import ObjectRef, Result, Severity, Summary, WorkloadCost
from kubegap.kinds import SUPPORTED_KINDS
from kubegap.workloads import KindInfo

log = logging.getLogger(__name__)


class Progress(Protocol):
    def update(self, kind: str, namespace: str | None, kind_count: int, total: int) -> None: ...

    def done(self) -> None: ...


@dataclass(frozen=True, slots=True, order=True)
class Offender:
    lost: float  # expected GPU-hours lost a month (docs/cost-model.md); 0 where the model prices nothing
    rank: int  # worst severity's rank
    failures: int
    gpus: int
    ref: ObjectRef = field(compare=False)
    roles: tuple[str, ...] = field(compare=False)
    cost: WorkloadCost | None = field(default=None, compare=False)

    @property
    def severity(self) -> Severity:
        return next(s for s in Severity if s.rank == self.rank)


@dataclass(slots=True)
class AuditResult:
    spool: Spool
    summary: Summary
    coverage: Coverage
    by_namespace: dict[str | None, Counter[str]]  # namespace -> result value -> count (passes included)
    by_rule: Counter[tuple[str, str, str, str]]  # (namespace, policy, rule, severity) -> fail/error count
    offenders: list[Offender]  # worst first
    internal_errors: int = 0
    cluster: cluster.ClusterSection | None = None  # the cluster validations' section (audit/cluster.py)


def ordered_kinds(kinds: Iterable[KindInfo] = SUPPORTED_KINDS) -> list[KindInfo]:
    """Pods last: their controllers must be judged first for the owned-pod rule."""
    kinds = list(kinds)
    return [k for k in kinds if not _is_pod(k)] + [k for k in kinds if _is_pod(k)]


def _is_pod(info: KindInfo) -> bool:
    return info.group == "" and info.kind == "Pod"


class Auditor:
    def __init__(
        self,
        api: Api,
        engine: Evaluator,
        scope: AuditScope,
        progress: Progress | None = None,
        evaluation_timeout: float = 10.0,
        top: int = 10,
        kinds: Iterable[KindInfo] = SUPPORTED_KINDS,
    ) -> None:
        self.api, self.engine, self.scope, self.progress = api, engine, scope, progress
        self.kinds = tuple(kinds)  # a subset when the caller asks about some kinds only
        self.evaluation_timeout, self.top = evaluation_timeout, top
        self.coverage = Coverage(requests=api.stats, scope=scope.to_json())
        self.result = AuditResult(Spool(), Summary(), self.coverage, {}, Counter(), [])
        self.configmaps = ConfigMapResolver(api) if scope.resolve_configmaps else None
        self._audited: set[str] = set()  # uids of evaluated controllers
        self._heap: list[Offender] = []
        self._total = 0
        self._pending: list[tuple[KindCoverage, ServedKind | None]] = []
        limits = (scope.namespaces, scope.exclude_namespaces, scope.selector, {k.kind for k in self.kinds})
        self.cluster = cluster.ClusterChecks(engine, cluster.out_of_scope(*limits))

    def run(self) -> AuditResult:
        try:
            self._discover()
            while self._pending:
                entry, served = self._pending[0]
                if served is not None:
                    self._list_kind(entry, served)
                self._pending.pop(0)
        except KeyboardInterrupt:
            self._interrupted()
        finally:
            if self.progress is not None:
                self.progress.done()
        self.cluster.finish(self)
        if self.configmaps is not None:
            self.coverage.problems.extend(self.configmaps.problems)
        self.result.offenders = sorted(
            self._heap, key=lambda o: (-o.lost, -o.rank, -o.failures, -o.gpus, o.ref.display())
        )
        return self.result

    def _discover(self) -> None:
        kinds = ordered_kinds(self.kinds)
        served, unserved = discover(self.api, kinds)
        by_info = {s.info: s for s in served}
        missing = {u.info: u for u in unserved}
        for info in kinds:
            listed_as = by_info.get(info) or ServedKind(info, info.versions[0])
            entry = self.coverage.add_kind(listed_as.api_version, info.kind, listed_as.resource)
            if info in missing:
                entry.installed = missing[info].installed
                if missing[info].installed:
                    entry.gaps.append(Gap(None, missing[info].reason))
            elif self.scope.namespaces and not info.namespaced:
                entry.out_of_scope = "cluster-scoped: not read when --namespace limits the audit"
            self._pending.append((entry, by_info.get(info)))

    def _list_kind(self, entry: KindCoverage, served: ServedKind) -> None:
        namespaces: tuple[str | None, ...] = (None,)
        if served.info.namespaced and self.scope.namespaces:
            namespaces = self.scope.namespaces
        elif not served.info.namespaced and self.scope.namespaces:
            return
        field_selector = self.scope.field_selector() if served.info.namespaced else ""
        for namespace in namespaces:
            scope = ListScope(namespace, self.scope.selector, field_selector)
            lister = Lister(self.api, served, scope, self.scope.page_size)
            try:
                for page in ahead(lister.pages()):
                    for obj in page:
                        self._one(entry, obj)
                    self._report_progress(entry, namespace)
            except ApiFailure as failure:
                entry.gaps.append(Gap(namespace, _reason(failure, served, namespace, lister.restarts)))
            except TransportError as exc:
                entry.gaps.append(Gap(namespace, f"failed: {exc}"))
            else:
                entry.listed = True
            if lister.restarts:
                where = f" in namespace {namespace}" if namespace else ""
                entry.notes.append(
                    f"continue token expired{where}; the list was restarted from the start "
                    "and objects already evaluated were not counted twice"
                )

    def _report_progress(self, entry: KindCoverage, namespace: str | None) -> None:
        if self.progress is not None:
            self.progress.update(entry.kind, namespace, entry.seen, self._total)

    def _one(self, entry: KindCoverage, obj: dict[str, Any]) -> None:
        entry.seen += 1
        self._total += 1
        self.cluster.observe(entry.kind, entry.api_version, obj)
        meta = obj.get("metadata")
        meta = meta if isinstance(meta, Mapping) else {}
        if meta.get("namespace") in self.scope.exclude_namespaces:
            entry.excluded += 1
            return
        is_pod = entry.kind == "Pod" and entry.api_version == "v1"
        if is_pod and not self.scope.include_owned_pods and self._owned(meta):
            entry.owned += 1
            return
        context = self.configmaps.context_for(obj) if self.configmaps is not None else None
        try:
            evaluation = self.engine.evaluate(obj, context, time.monotonic() + self.evaluation_timeout)
        except DeadlineExceeded as exc:
            entry.not_evaluated += 1
            entry.gaps.append(Gap(meta.get("namespace"), f"not evaluated: {exc}"))
            return
        except Exception as exc:  # a bug must not hide the rest of the cluster; exit code 3 tells of it
            log.exception("internal error evaluating %s", ObjectRef.of(obj).display())
            entry.not_evaluated += 1
            self.result.internal_errors += 1
            entry.gaps.append(
                Gap(meta.get("namespace"), f"internal error evaluating {ObjectRef.of(obj).display()}: {exc}")
            )
            return
        if not is_pod and isinstance(meta.get("uid"), str):
            self._audited.add(meta["uid"])
        self._record(entry, obj, evaluation, meta.get("uid"))
        self.cluster.judged(obj, evaluation)

    def _owned(self, meta: Mapping[str, Any]) -> bool:
        owners = meta.get("ownerReferences")
        return isinstance(owners, list) and any(
            isinstance(o, Mapping) and o.get("controller") is True and o.get("uid") in self._audited
            for o in owners
        )

    def _record(self, entry: KindCoverage, obj: Mapping[str, Any], evaluation: Evaluation, uid: Any) -> None:
        result, results = self.result, evaluation.results
        entry.evaluated += 1
        result.summary.objects += 1
        if not results:
            result.summary.not_applicable += 1
        result.summary.add(results)
        counts = result.by_namespace.setdefault(evaluation.ref.namespace, Counter())
        counts.update(r.result.value for r in results)
        findings = evaluation.findings
        result.spool.add(findings, uid if isinstance(uid, str) else None)
        failing = [f for f in findings if f.result in (Result.FAIL, Result.ERROR)]
        if len(failing) < len(findings):
            entry.exempted += 1
        for f in failing:
            result.by_rule[(f.object.namespace or "", f.policy, f.rule, f.severity.value)] += 1
        if failing:
            roles = tuple(sorted({f.role for f in failing if f.role}))
            worst = max(f.severity.rank for f in failing)
            cost = evaluation.cost
            lost, gpus = (cost.lost, cost.gpus) if cost else (0.0, evaluation.gpus)
            offender = Offender(lost, worst, len(failing), gpus, evaluation.ref, roles, cost)
            if len(self._heap) < self.top:
                heapq.heappush(self._heap, offender)
            elif offender > self._heap[0]:
                heapq.heapreplace(self._heap, offender)

    def _interrupted(self) -> None:
        self.coverage.interrupted = True
        for position, (entry, served) in enumerate(self._pending):
            if served is None or entry.out_of_scope:
                continue
            what = "interrupted while listing" if position == 0 else "not listed: interrupted"
            entry.gaps.append(Gap(None, what))


def _reason(failure: ApiFailure, served: ServedKind, namespace: str | None, restarts: int) -> str:
    where = (
        f"in namespace {namespace}" if namespace else "at the cluster scope" if served.info.namespaced else ""
    )
    if failure.code == 403:
        return f"forbidden: cannot list {served.resource} {where}".rstrip()
    if failure.code == 410:
        return f"continue token expired again after {restarts} restart(s); the list is incomplete"
    if failure.code in (429, 503):
        return f"throttled: {failure.code} {failure.reason}; retry budget spent"
    return f"failed: {failure.code} {failure.reason}: {failure.detail}"
