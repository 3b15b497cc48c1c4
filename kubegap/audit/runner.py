"""The audit itself: discover, list page by page, evaluate each object, account for everything.

Kinds are listed in table order with Pods last, so a Pod's controller has been judged (and its uid noted)
before the Pod comes up; such a Pod is skipped as owned unless owned pods are asked for.

With jobs > 1, worker processes evaluate chunks of each page (audit/workers.py) while this process lists
the next one. Everything that needs the API or the audit's state stays here: ConfigMaps are resolved
before an object is sent, and results, gaps and notes are recorded in listing order (a queue of what is in
flight), so the report is the one a single process writes. Every controller is recorded before the first
Pod is checked for an owner. Two pages at most wait in the workers' hands, so memory stays flat.

The engine remembers every workload it evaluates, not only those a controller made (kubegap.memo): a
cluster holds one chart's or pipeline's copies under many names and namespaces, each evaluated once.
"""

from __future__ import annotations

import heapq
import logging
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

from kubegap.audit import cluster
from kubegap.audit.configmaps import ConfigMapResolver
from kubegap.audit.coverage import Coverage, Gap, KindCoverage
from kubegap.audit.discovery import ServedKind, discover
from kubegap.audit.flight import Admitted, Flight
from kubegap.audit.paging import Lister, ListScope, ahead
from kubegap.audit.retry import Api
from kubegap.audit.scope import AuditScope
from kubegap.audit.spool import FINDINGS, Keep, Rows, Spool
from kubegap.audit.transport import ApiFailure, TransportError
from kubegap.audit.verdict import Offender, Unevaluated, Verdict, judge_all, verdict_of
from kubegap.audit.workers import Outcome, Workers
from kubegap.evaluate import Engine, Evaluation, Evaluator
from kubegap.findings import ObjectRef, Summary
from kubegap.kinds import SUPPORTED_KINDS
from kubegap.workloads import KindInfo

__all__ = ["AuditResult", "Auditor", "Offender", "Progress", "ordered_kinds"]  # Offender: verdict.py

log = logging.getLogger(__name__)


class Progress(Protocol):
    def update(self, kind: str, namespace: str | None, kind_count: int, total: int) -> None: ...

    def done(self) -> None: ...


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
        jobs: int = 1,
        keep: Keep = FINDINGS,  # what the spool keeps of each finding: what the report's formats read
    ) -> None:
        self.api, self.engine, self.scope, self.progress = api, engine, scope, progress
        if isinstance(engine, Engine) and engine.memo is not None:
            engine.memo.unowned = True  # a cluster holds one chart's copies in many namespaces (kubegap.memo)
        self.kinds = tuple(kinds)  # a subset when the caller asks about some kinds only
        self.evaluation_timeout, self.top = evaluation_timeout, top
        self.coverage = Coverage(requests=api.stats, scope=scope.to_json())
        self.result = AuditResult(Spool(keep), Summary(), self.coverage, {}, Counter(), [])
        self.configmaps = ConfigMapResolver(api) if scope.resolve_configmaps else None
        self._audited: set[str] = set()  # uids of evaluated controllers
        self._heap: list[Offender] = []
        self._total = 0
        self._pending: list[tuple[KindCoverage, ServedKind | None]] = []
        self.jobs = jobs  # worker processes; 1: every object is evaluated in this process
        self._flight: Flight | None = None
        self._rows = Rows(keep)
        limits = (scope.namespaces, scope.exclude_namespaces, scope.selector, {k.kind for k in self.kinds})
        self.cluster = cluster.ClusterChecks(engine, cluster.out_of_scope(*limits))

    def run(self) -> AuditResult:
        try:
            workers = None
            if self.jobs > 1:
                workers = _start(self.engine, self.jobs, self.evaluation_timeout, self.result.spool)
            if workers is not None:
                self._flight = Flight(workers, self._judge, self._settle, 2 * self.scope.page_size)
            self._discover()
            while self._pending:
                entry, served = self._pending[0]
                if served is not None:
                    self._list_kind(entry, served)
                self._pending.pop(0)
            self._drain()
        except KeyboardInterrupt:
            self._interrupted()
        finally:
            if self._flight is not None:
                self._flight.workers.close()
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
        if _is_pod(served.info):
            self._drain()  # the owned-pod rule: every controller recorded before a Pod is checked
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
                    self._page(entry, page)
                    self._report_progress(entry, namespace)
            except ApiFailure as failure:
                gap = Gap(namespace, _reason(failure, served, namespace, lister.restarts))
                self._then(partial(entry.gaps.append, gap))
            except TransportError as exc:
                self._then(partial(entry.gaps.append, Gap(namespace, f"failed: {exc}")))
            else:
                self._then(partial(setattr, entry, "listed", True))
            if lister.restarts:
                where = f" in namespace {namespace}" if namespace else ""
                note = (
                    f"continue token expired{where}; the list was restarted from the start "
                    "and objects already evaluated were not counted twice"
                )
                self._then(partial(entry.notes.append, note))

    def _report_progress(self, entry: KindCoverage, namespace: str | None) -> None:
        if self.progress is not None:
            self.progress.update(entry.kind, namespace, entry.seen, self._total)

    def _page(self, entry: KindCoverage, page: list[dict[str, Any]]) -> None:
        work = (a for obj in page if (a := self._admit(entry, obj)) is not None)
        if self._flight is not None and len(self._flight.workers):
            self._flight.send(entry, list(work))
            return
        self._drain()  # workers that could not be replaced: what they held is recorded first
        # A step at a time over the page, as a worker judges its chunk: every evaluation, then every
        # verdict (verdict.judge_all), then each recorded.
        admitted, settled = list(work), 0
        try:
            for each, outcome in zip(admitted, self._judge_all(admitted), strict=True):
                self._settle(entry, each, outcome)
                settled += 1
        except KeyboardInterrupt:  # what was listed and not recorded is not evaluated, never a pass
            if left := len(admitted) - settled:
                entry.not_evaluated += left
                entry.gaps.append(Gap(None, f"interrupted before {left} listed object(s) were evaluated"))
            raise

    def _judge(self, admitted: Admitted) -> Outcome:
        return self._judge_all([admitted])[0]

    def _judge_all(self, admitted: list[Admitted]) -> list[Outcome]:
        chunk = [(a.obj, a.context) for a in admitted]
        return judge_all(self.engine, chunk, self.evaluation_timeout, self._rows)

    def _admit(self, entry: KindCoverage, obj: dict[str, Any]) -> Admitted | None:
        """Count the object and say whether to evaluate it (with its ConfigMaps resolved, here)."""
        entry.seen += 1
        self._total += 1
        self.cluster.observe(entry.kind, entry.api_version, obj)
        meta = obj.get("metadata")
        meta = meta if isinstance(meta, Mapping) else {}
        if meta.get("namespace") in self.scope.exclude_namespaces:
            entry.excluded += 1
            return None
        is_pod = entry.kind == "Pod" and entry.api_version == "v1"
        if is_pod and not self.scope.include_owned_pods and self._owned(meta):
            entry.owned += 1
            return None
        context = self.configmaps.context_for(obj) if self.configmaps is not None else None
        return Admitted(obj, meta.get("uid"), meta.get("namespace"), is_pod, context)

    def _settle(self, entry: KindCoverage, admitted: Admitted, outcome: Outcome) -> None:
        if isinstance(outcome, Unevaluated):
            if outcome.internal:  # a bug must not hide the rest of the cluster; exit code 3 tells of it
                log.error(
                    "internal error evaluating %s\n%s", ObjectRef.of(admitted.obj).display(), outcome.trace
                )
                self.result.internal_errors += 1
            entry.not_evaluated += 1
            entry.gaps.append(Gap(admitted.namespace, outcome.reason))
            return
        if not admitted.is_pod and isinstance(admitted.uid, str):
            self._audited.add(admitted.uid)
        self._record(entry, outcome, admitted.uid)
        self.cluster.judged(admitted.obj, outcome.ref, bool(outcome.failing))

    def _then(self, effect: Callable[[], None]) -> None:
        """A coverage effect, in listing order: after the results still in flight."""
        if self._flight is not None:
            self._flight.then(effect)
        else:
            effect()

    def _drain(self) -> None:
        if self._flight is not None:
            self._flight.drain()

    def _owned(self, meta: Mapping[str, Any]) -> bool:
        owners = meta.get("ownerReferences")
        return isinstance(owners, list) and any(
            isinstance(o, Mapping) and o.get("controller") is True and o.get("uid") in self._audited
            for o in owners
        )

    def _record(self, entry: KindCoverage, verdict: Verdict, uid: Any) -> None:
        entry.evaluated += 1
        self.result.summary.objects += 1
        if not verdict.tally.results:
            self.result.summary.not_applicable += 1
        self.tally(verdict, uid)
        if verdict.exempted:
            entry.exempted += 1
        offender = verdict.offender
        if offender is None:
            return
        if len(self._heap) < self.top:
            heapq.heappush(self._heap, offender)
        elif offender > self._heap[0]:
            heapq.heapreplace(self._heap, offender)

    def tally(self, verdict: Verdict, uid: Any = None) -> None:
        """What every judged object or cluster unit adds to the report: its results counted, its findings
        spooled, its failing rules."""
        result = self.result
        result.summary.add_counts(verdict.tally)
        namespace = result.by_namespace.get(verdict.ref.namespace)
        if namespace is None:
            namespace = result.by_namespace[verdict.ref.namespace] = Counter()
        for value, count in verdict.tally.results:
            namespace[value] += count
        result.spool.add_rows(verdict.rows, uid if isinstance(uid, str) else None, verdict.span)
        result.by_rule.update(verdict.failing)

    def tally_evaluation(self, evaluation: Evaluation) -> None:
        """A cluster unit's evaluation (audit/cluster.py): no kind was listed for it, no offender ranked."""
        self.tally(verdict_of(evaluation, self._rows))

    def _interrupted(self) -> None:
        self.coverage.interrupted = True
        if self._flight is not None:
            self._flight.workers.kill()  # at once: what they held is reported as not evaluated
            self._flight.abandon()
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


def _start(engine: Evaluator, jobs: int, timeout: float, spool: Spool) -> Workers | None:
    try:
        return Workers(engine, jobs, timeout, spool.keep, spool.text_file if spool.keep.json else None)
    except OSError as exc:  # no process to fork (a pid limit): the audit is the same, only slower
        log.warning("cannot start %d audit workers (%s); evaluating in this process", jobs, exc)
        return None
