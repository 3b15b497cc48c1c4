"""`--format codequality`: the Code Climate JSON subset GitLab reads as a Code Quality report.

Each issue has `description`, `check_name`, `fingerprint`, `severity` (info, minor, major, critical,
blocker) and `location.path` / `location.lines.begin` (GitLab "Code Quality", report format). Exempted
results are left out (GitLab has no suppressed state). The fingerprint is SARIF's: stable across line moves.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from kubegap.findings import Finding, Result, Severity
from kubegap.reports.github import NO_FILE, relative
from kubegap.reports.report import Report
from kubegap.reports.sarif import fingerprint

SEVERITY = {
    Severity.CRITICAL: "blocker",
    Severity.HIGH: "critical",
    Severity.MEDIUM: "major",
    Severity.LOW: "minor",
    Severity.INFO: "info",
}


def render(report: Report) -> Iterator[str]:
    issues = [_issue(f, report.base_dir) for f in report.findings if f.result is not Result.SKIP]
    yield json.dumps(issues, indent=2, ensure_ascii=False) + "\n"


def _issue(finding: Finding, base_dir: str | None) -> dict[str, Any]:
    where = f"{finding.object.display()}{f', {finding.where()}' if finding.where() else ''}"
    description = f"{finding.policy}/{finding.rule}: {finding.message} ({where})"
    if finding.remediation:
        description += f" Fix: {finding.remediation}"
    path = relative(finding.file, base_dir) if finding.file and finding.file != NO_FILE else NO_FILE
    return {
        "description": description,
        "check_name": f"kubegap/{finding.policy}/{finding.rule}",
        "fingerprint": fingerprint(finding),
        "severity": SEVERITY[finding.severity],
        "location": {"path": path, "lines": {"begin": finding.line or 1}},
    }
