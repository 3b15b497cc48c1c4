"""`--format text` for the audit: what fails where, the worst offenders, every finding, then coverage."""

from __future__ import annotations

import io
from collections import defaultdict
from collections.abc import Iterable
from typing import TextIO, cast

from kubegap.audit.coverage import Coverage
from kubegap.audit.runner import AuditResult, Offender
from kubegap.findings import Finding, Result, Severity
from kubegap.impact import gpu_hours_text
from kubegap.reports.text import printable, summary_line

_RANKS = {s.value: s.rank for s in Severity}


class _Printable(io.TextIOBase):
    """Escapes control characters from cluster data (names, env values) on their way to a terminal."""

    def __init__(self, out: TextIO) -> None:
        self._out = out

    def write(self, text: str) -> int:
        return self._out.write(printable(text))


def write(out: TextIO, result: AuditResult, cluster: str = "") -> None:
    out = cast(TextIO, _Printable(out))
    out.write(f"kubegap audit{f' of {cluster}' if cluster else ''}\n\n")
    _rules(out, result)
    _offenders(out, result.offenders)
    _findings(out, (f for f in result.spool.findings("worst") if f.scope == "workload"))
    _cluster(out, result)
    _coverage(out, result.coverage)
    out.write("\n" + summary_line(result.summary) + "\n")


def _rules(out: TextIO, result: AuditResult) -> None:
    out.write("Failing rules by namespace (worst first)\n")
    if not result.by_rule:
        out.write("  none\n\n")
        return
    by_namespace: defaultdict[str, list[tuple[str, str, str, int]]] = defaultdict(list)
    for (namespace, policy, rule, severity), count in result.by_rule.items():
        by_namespace[namespace].append((policy, rule, severity, count))

    def weight(rows: list[tuple[str, str, str, int]]) -> tuple[int, int]:
        return max(_RANKS[r[2]] for r in rows), sum(r[3] for r in rows)

    for namespace, rows in sorted(by_namespace.items(), key=lambda item: weight(item[1]), reverse=True):
        out.write(f"  {namespace or '(cluster-scoped)'}\n")
        for policy, rule, severity, count in sorted(rows, key=lambda r: (-_RANKS[r[2]], -r[3], r[0], r[1])):
            out.write(f"    {severity:<8} {count:>6}  {policy}/{rule}\n")
    out.write("\n")


def _offenders(out: TextIO, offenders: list[Offender]) -> None:
    out.write("Worst offenders (expected GPU-hours lost a month, docs/cost-model.md)\n")
    if not offenders:
        out.write("  none\n\n")
        return
    out.write(f"  {'GPU-H/MO':>8} {'SEVERITY':<8} {'FAILS':>5} {'GPUS':>6}  OBJECT  (roles; best fix)\n")
    for o in offenders:
        notes = list(o.roles)
        best = o.cost.savings[0] if o.cost and o.cost.savings and o.cost.savings[0][1] > 0 else None
        if best:
            (policy, rule), saved = best
            notes.append(f"fixing {policy}/{rule} saves ≈ {gpu_hours_text(saved)}")
        lost = f"≈ {gpu_hours_text(o.lost)}" if o.cost else "-"
        extra = f"  ({'; '.join(notes)})" if notes else ""
        out.write(
            f"  {lost:>8} {o.severity.value:<8} {o.failures:>5} {o.gpus:>6}  {o.ref.display()}{extra}\n"
        )
    out.write("\n")


def _findings(out: TextIO, findings: Iterable[Finding], title: str = "Findings") -> None:
    out.write(f"{title}\n")
    count = 0
    for f in findings:
        count += 1
        _finding(out, f)
    out.write("" if count else "  none\n")
    out.write("\n")


def _finding(out: TextIO, f: Finding) -> None:
    label = f.severity.value if f.result is Result.FAIL else f.result.value
    where = f.where()
    out.write(f"  {label:<8} {f.policy}/{f.rule}  {f.object.display()}{f'  ({where})' if where else ''}\n")
    out.write(f"           {f.message}\n")
    if f.path:
        out.write(f"           at {f.path}\n")
    if f.unresolved:
        out.write(f"           unresolved: {', '.join(f.unresolved)}\n")
    if f.result is not Result.SKIP and f.remediation:
        out.write(f"           fix: {f.remediation}\n")


def _cluster(out: TextIO, result: AuditResult) -> None:
    """Nodes and node pools: the per-node rules and the rules judged over the cluster's lists."""
    out.write("Cluster validations (GPU nodes and node pools)\n")
    section = result.cluster
    if section is not None and section.status != "evaluated":
        out.write(f"  pools and monitors {section.status}: {section.reason}\n")
    if section is not None and section.pools:
        header = f"{'SPARES':>6} {'GANG':>5} {'NODES':>5}  POOL"
        out.write(f"  {header}  (idle healthy spare nodes; nodes the largest gang holds; GPU nodes)\n")
        for pool in section.pools:
            gang = f"  (largest gang {pool['largestGangName']})" if pool["largestGangName"] else ""
            out.write(
                f"  {pool['spares']:>6} {pool['largestGang']:>5} {pool['nodes']:>5}  {pool['name']}{gang}\n"
            )
    _findings(out, (f for f in result.spool.findings("worst") if f.scope != "workload"), "  findings")


def _coverage(out: TextIO, coverage: Coverage) -> None:
    totals = coverage.totals()
    verdict = "complete" if coverage.complete else "INCOMPLETE: not everything could be evaluated"
    out.write(f"Coverage: {verdict}\n")
    counts = [
        ("kinds listed", "kindsListed"), ("objects seen", "seen"), ("evaluated", "evaluated"),
        ("exempted", "exempted"), ("skipped as owned", "skippedOwned"), ("excluded", "excluded"),
        ("not evaluated", "notEvaluated"),
    ]  # fmt: skip
    out.write("  " + ", ".join(f"{label} {totals[key]}" for label, key in counts) + "\n")
    for kind, gap in coverage.gaps():
        what = f"{kind.kind} ({kind.resource})" if kind else "audit"
        out.write(f"  not evaluated: {what}: {gap.reason}\n")
    missing = [k.kind for k in coverage.kinds if not k.installed]
    if missing:
        out.write(f"  not installed: {', '.join(missing)}\n")
    for kind in coverage.kinds:
        for note in ([kind.out_of_scope] if kind.out_of_scope else []) + kind.notes:
            out.write(f"  note: {kind.kind}: {note}\n")
    stats = coverage.requests
    out.write(
        f"  requests {stats.requests}, retries {stats.retries}, throttled {stats.throttled}, "
        f"waited {stats.waited:.1f}s\n"
    )
