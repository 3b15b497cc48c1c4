"""`--format text`: findings grouped by file with `file:line:col`, the object, role and container, the
rule, the message and the fix; then one summary line. An audit has its own layout (kubegap.audit.text)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from itertools import groupby

from kubegap.durations import format_seconds
from kubegap.findings import Finding, Result, Severity, Summary, WorkloadCost
from kubegap.reports.report import Report

_CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]")  # all but the newline


def printable(text: str) -> str:
    """Manifest text made safe for a terminal: control characters (an ESC sequence in an object name or an
    env value) are shown escaped instead of being obeyed."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def _where(finding: Finding) -> str:
    if finding.line is None:
        return ""
    return f"{finding.line}:{finding.column or 1}"


def _block(finding: Finding) -> list[str]:
    label = finding.severity.value if finding.result is Result.FAIL else finding.result.value
    head = f"  {_where(finding):>8}  {label:<8} {finding.policy}/{finding.rule}"
    subject = finding.subject()
    lines = [head + (f"  {subject}" if subject else ""), f"            {finding.message}"]
    if finding.path:
        lines.append(f"            at {finding.path}")
    lines = [printable(line) for line in lines]
    if finding.result is not Result.SKIP and finding.remediation:
        lines.append(f"            fix: {finding.remediation}")
    if finding.impact is not None and finding.impact.saved is not None:
        lines.append(f"            impact: {finding.impact.text()}")
    return lines


Costs = Mapping[tuple[str, int], WorkloadCost]


def costs_by_document(workloads: Sequence[WorkloadCost]) -> dict[tuple[str, int], WorkloadCost]:
    return {(w.file or "", w.document or 0): w for w in workloads}


def cost_line(cost: WorkloadCost) -> str:
    """The object, what it is expected to lose, the best fix, and Young's interval as advice."""
    line = f"{cost.ref.display()}: {cost.text()}"
    if cost.young_hours is not None:
        line += f"; Young's optimal checkpoint interval ≈ {format_seconds(round(cost.young_hours * 60) * 60)}"
    return line


def render(report: Report) -> Iterator[str]:
    if report.audit is not None:
        from kubegap.audit import text as audit_text

        yield from audit_text.lines(report.audit, report.cluster)
        return
    yield _document(list(report.findings), report.summary, report.workloads, report.fixable)


def _document(
    findings: Sequence[Finding],
    summary: Summary,
    workloads: Sequence[WorkloadCost] = (),
    fixable: tuple[int, int] | None = None,
) -> str:
    """Files, then objects, most expensive first (expected GPU-hours lost a month), then by position;
    `fixable` (what `kubegap fix` could do: fixed, left as TODO) goes just above the summary line."""
    costs = costs_by_document(workloads)

    def loss(f: Finding) -> float:
        cost = costs.get((f.file or "", f.document or 0))
        return cost.lost if cost else 0.0

    file_loss: dict[str, float] = {}
    for f in findings:
        file_loss[f.file or ""] = max(file_loss.get(f.file or "", 0.0), loss(f))

    def order(f: Finding) -> tuple[float, str, float, int, int, str, str]:
        file = f.file or ""
        return (-file_loss[file], file, -loss(f), f.document or 0, f.line or 0, f.policy, f.rule)

    out: list[str] = []
    for file, group in groupby(sorted(findings, key=order), key=lambda f: f.file or ""):
        out.append(printable(file) or "(no file)")
        for document, in_document in groupby(group, key=lambda f: f.document or 0):
            cost = costs.get((file, document))
            if cost is not None:
                out.append(printable(f"  {cost_line(cost)}"))
            for finding in in_document:
                out.extend(_block(finding))
        out.append("")
    if summary.unresolved:
        out.append(
            "values kubegap could not see (a rule that needs one fails; a rule that forbids one passes):"
        )
        out += [
            printable(f"  {name}: {'; '.join(sources)}")
            for name, sources in sorted(summary.unresolved.items())
        ]
        out.append("")
    if fixable is not None and any(fixable):
        fixed, todo = fixable
        extra = f", {todo} more get a TODO value to fill in" if todo else ""
        out.append(
            f"kubegap fix can fix {fixed} of these finding(s){extra}: run `kubegap fix PATH…` to see the diff"
        )
    out.append(summary_line(summary))
    return "\n".join(out) + "\n"


def summary_line(summary: Summary) -> str:
    failing = sum(summary.severities.values())
    by_severity = ", ".join(
        f"{summary.severities[s.value]} {s.value}" for s in Severity if summary.severities[s.value]
    )
    text = f"{summary.objects} object(s) checked: {failing} finding(s)"
    text += f" ({by_severity})" if by_severity else ""
    extras = [
        f"{summary.results['error']} error(s)" if summary.results["error"] else "",
        f"{summary.results['skip']} exempted" if summary.results["skip"] else "",
        f"{summary.invalid} unreadable document(s)" if summary.invalid else "",
        f"{summary.unsized} object(s) could not be sized" if summary.unsized else "",
        f"{summary.not_applicable} not applicable" if summary.not_applicable else "",
    ]
    return text + "".join(f", {e}" for e in extras if e)
