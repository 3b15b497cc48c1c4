"""`--format text`: findings grouped by file with `file:line:col`, the object, role and container, the
rule, the message and the fix; then one summary line."""

from __future__ import annotations

import re
from collections.abc import Sequence
from itertools import groupby

from kubegap.findings import Finding, Result, Severity, Summary

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
    return lines


def _order(finding: Finding) -> tuple[str, int, int, str, str]:
    return (finding.file or "", finding.document or 0, finding.line or 0, finding.policy, finding.rule)


def render(findings: Sequence[Finding], summary: Summary, fixable: str | None = None) -> str:
    """The report; `fixable` (what `kubegap fix` could do) goes just above the summary line."""
    out: list[str] = []
    for file, group in groupby(sorted(findings, key=_order), key=lambda f: f.file or ""):
        out.append(printable(file) or "(no file)")
        for finding in group:
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
    if fixable:
        out.append(fixable)
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
        f"{summary.not_applicable} not applicable" if summary.not_applicable else "",
    ]
    return text + "".join(f", {e}" for e in extras if e)
