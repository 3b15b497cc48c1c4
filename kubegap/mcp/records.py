"""Engine results turned into the tools' records: redacted, short, and counted by rule."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import replace
from typing import Literal

from kubegap.audit.runner import AuditResult, Offender
from kubegap.findings import Finding, Result, Severity, Summary, WorkloadCost
from kubegap.fix.checked import Outcome
from kubegap.mcp.models import (
    FindingRecord,
    FixOutcome,
    ObjectRecord,
    OffenderRecord,
    RuleCount,
    Saving,
    SummaryRecord,
    WorkloadCostRecord,
)
from kubegap.mcp.redact import redact

MAX_MESSAGE = 600  # a message is an excerpt: enough to act on, never a whole object or script
UNRESOLVED_SHOWN = 20
_RANK = {s.value: s.rank for s in Severity}


def excerpt(text: str, limit: int = MAX_MESSAGE) -> str:
    text = redact(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def finding_record(finding: Finding) -> FindingRecord:
    clean = replace(
        finding,
        message=excerpt(finding.message),
        remediation=excerpt(finding.remediation),
        unresolved=tuple(excerpt(u, 200) for u in finding.unresolved),
    )
    return FindingRecord.model_validate(clean.to_json())


def cost_record(cost: WorkloadCost) -> WorkloadCostRecord:
    savings = [Saving(policy=p, rule=r, savedGpuHoursPerMonth=round(s, 1)) for (p, r), s in cost.savings]
    return WorkloadCostRecord.model_validate({**cost.to_json(), "savings": savings})


def fix_outcome(outcome: Outcome) -> FixOutcome:
    f = outcome.finding
    result: Literal["fixed", "todo", "not fixed"] = (
        "todo" if outcome.todo else "fixed" if outcome.fixed else "not fixed"
    )
    return FixOutcome(
        policy=f.policy,
        rule=f.rule,
        object=ObjectRecord.model_validate(f.object.to_json()),
        container=f.container,
        line=f.line,
        result=result,
        note=excerpt(outcome.note),
    )


def summary_record(summary: Summary) -> SummaryRecord:
    data = summary.to_json()
    shown = dict(list(summary.unresolved.items())[:UNRESOLVED_SHOWN])
    return SummaryRecord(
        objects=data["objects"],
        notApplicable=data["notApplicable"],
        invalid=data["invalid"],
        unsized=data["unsized"],
        results=data["results"],
        failuresBySeverity=data["failuresBySeverity"],
        unresolvedObjects=len(summary.unresolved),
        unresolved={name: [excerpt(s, 200) for s in sources] for name, sources in shown.items()},
    )


def _ordered(counts: Counter[tuple[str, str, str]]) -> list[RuleCount]:
    rows = sorted(counts.items(), key=lambda item: (-_RANK[item[0][2]], -item[1], item[0][0], item[0][1]))
    return [
        RuleCount(policy=policy, rule=rule, severity=severity, count=count)  # type: ignore[arg-type]
        for (policy, rule, severity), count in rows
    ]


def rule_counts(findings: Iterable[Finding]) -> list[RuleCount]:
    """Failing and errored findings per policy/rule, worst severity and largest count first."""
    counts: Counter[tuple[str, str, str]] = Counter(
        (f.policy, f.rule, f.severity.value) for f in findings if f.result in (Result.FAIL, Result.ERROR)
    )
    return _ordered(counts)


def audit_rule_counts(result: AuditResult) -> list[RuleCount]:
    counts: Counter[tuple[str, str, str]] = Counter()
    for (_namespace, policy, rule, severity), count in result.by_rule.items():
        counts[(policy, rule, severity)] += count
    return _ordered(counts)


def offender_record(offender: Offender) -> OffenderRecord:
    ref = offender.ref
    return OffenderRecord(
        object=ObjectRecord(
            apiVersion=ref.api_version, kind=ref.kind, namespace=ref.namespace, name=ref.name
        ),
        severity=offender.severity.value,
        failures=offender.failures,
        gpus=offender.gpus,
        roles=list(offender.roles),
    )
