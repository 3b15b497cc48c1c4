"""`--format text` for the audit: what fails where, the worst offenders, every finding, then coverage."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator

from kubegap.audit.coverage import Coverage
from kubegap.audit.runner import AuditResult, Offender
from kubegap.findings import Finding, Result, Severity
from kubegap.impact import gpu_hours_text
from kubegap.reports.text import printable, summary_line

_RANKS = {s.value: s.rank for s in Severity}


def lines(result: AuditResult, cluster: str = "") -> Iterator[str]:
    """The report in pieces, one finding at a time; control characters from cluster data (names, env
    values) are escaped on their way to a terminal."""
    for piece in _pieces(result, cluster):
        yield printable(piece)


def _pieces(result: AuditResult, cluster: str) -> Iterator[str]:
    yield f"kubegap audit{f' of {cluster}' if cluster else ''}\n\n"
    yield from _rules(result)
    yield from _offenders(result.offenders)
    yield from _findings(f for f in result.spool.findings("worst") if f.scope == "workload")
    yield from _cluster(result)
    yield from _coverage(result.coverage)
    yield "\n" + summary_line(result.summary) + "\n"


def _rules(result: AuditResult) -> Iterator[str]:
    yield "Failing rules by namespace (worst first)\n"
    if not result.by_rule:
        yield "  none\n\n"
        return
    by_namespace: defaultdict[str, list[tuple[str, str, str, int]]] = defaultdict(list)
    for (namespace, policy, rule, severity), count in result.by_rule.items():
        by_namespace[namespace].append((policy, rule, severity, count))

    def weight(rows: list[tuple[str, str, str, int]]) -> tuple[int, int]:
        return max(_RANKS[r[2]] for r in rows), sum(r[3] for r in rows)

    for namespace, rows in sorted(by_namespace.items(), key=lambda item: weight(item[1]), reverse=True):
        yield f"  {namespace or '(cluster-scoped)'}\n"
        for policy, rule, severity, count in sorted(rows, key=lambda r: (-_RANKS[r[2]], -r[3], r[0], r[1])):
            yield f"    {severity:<8} {count:>6}  {policy}/{rule}\n"
    yield "\n"


def _offenders(offenders: list[Offender]) -> Iterator[str]:
    yield "Worst offenders (expected GPU-hours lost a month, docs/cost-model.md)\n"
    if not offenders:
        yield "  none\n\n"
        return
    yield f"  {'GPU-H/MO':>8} {'SEVERITY':<8} {'FAILS':>5} {'GPUS':>6}  OBJECT  (roles; best fix)\n"
    for o in offenders:
        notes = list(o.roles)
        best = o.cost.savings[0] if o.cost and o.cost.savings and o.cost.savings[0][1] > 0 else None
        if best:
            (policy, rule), saved = best
            notes.append(f"fixing {policy}/{rule} saves ≈ {gpu_hours_text(saved)}")
        lost = f"≈ {gpu_hours_text(o.lost)}" if o.cost else "-"
        extra = f"  ({'; '.join(notes)})" if notes else ""
        yield f"  {lost:>8} {o.severity.value:<8} {o.failures:>5} {o.gpus:>6}  {o.ref.display()}{extra}\n"
    yield "\n"


def _findings(findings: Iterable[Finding], title: str = "Findings") -> Iterator[str]:
    yield f"{title}\n"
    count = 0
    for f in findings:
        count += 1
        label = f.severity.value if f.result is Result.FAIL else f.result.value
        where = f.where()
        yield f"  {label:<8} {f.policy}/{f.rule}  {f.object.display()}{f'  ({where})' if where else ''}\n"
        yield f"           {f.message}\n"
        if f.path:
            yield f"           at {f.path}\n"
        if f.unresolved:
            yield f"           unresolved: {', '.join(f.unresolved)}\n"
        if f.result is not Result.SKIP and f.remediation:
            yield f"           fix: {f.remediation}\n"
    yield "" if count else "  none\n"
    yield "\n"


def _cluster(result: AuditResult) -> Iterator[str]:
    """GPU nodes and node pools: the per-node rules and those judged over the cluster's lists."""
    yield "Cluster validations (GPU nodes and node pools)\n"
    section = result.cluster
    if section is not None and section.status != "evaluated":
        yield f"  pools and monitors {section.status}: {section.reason}\n"
    if section is not None and section.pools:
        header = f"{'SPARES':>6} {'GANG':>5} {'NODES':>5}  POOL"
        yield f"  {header}  (idle healthy spare nodes; nodes the largest gang holds; GPU nodes)\n"
        for pool in section.pools:
            gang = f"  (largest gang {pool['largestGangName']})" if pool["largestGangName"] else ""
            yield f"  {pool['spares']:>6} {pool['largestGang']:>5} {pool['nodes']:>5}  {pool['name']}{gang}\n"
    yield from _findings((f for f in result.spool.findings("worst") if f.scope != "workload"), "  findings")


def _coverage(coverage: Coverage) -> Iterator[str]:
    totals = coverage.totals()
    verdict = "complete" if coverage.complete else "INCOMPLETE: not everything could be evaluated"
    yield f"Coverage: {verdict}\n"
    counts = [
        ("kinds listed", "kindsListed"), ("objects seen", "seen"), ("evaluated", "evaluated"),
        ("exempted", "exempted"), ("skipped as owned", "skippedOwned"), ("excluded", "excluded"),
        ("not evaluated", "notEvaluated"),
    ]  # fmt: skip
    yield "  " + ", ".join(f"{label} {totals[key]}" for label, key in counts) + "\n"
    for kind, gap in coverage.gaps():
        what = f"{kind.kind} ({kind.resource})" if kind else "audit"
        yield f"  not evaluated: {what}: {gap.reason}\n"
    missing = [k.kind for k in coverage.kinds if not k.installed]
    if missing:
        yield f"  not installed: {', '.join(missing)}\n"
    for kind in coverage.kinds:
        for note in ([kind.out_of_scope] if kind.out_of_scope else []) + kind.notes:
            yield f"  note: {kind.kind}: {note}\n"
    stats = coverage.requests
    yield (
        f"  requests {stats.requests}, retries {stats.retries}, throttled {stats.throttled}, "
        f"waited {stats.waited:.1f}s\n"
    )
