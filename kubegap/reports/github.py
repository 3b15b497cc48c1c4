"""`--format github`: GitHub Actions workflow commands, one annotation per finding on the changed file.

`::error file=F,line=L,col=C,title=T::message` (GitHub "Workflow commands": `error`, `warning`, `notice`).
Severity critical/high is an error, medium a warning, low/info a notice. Exempted results are left out.
Values are escaped as the runner expects: `%`, CR and LF in the message; also `:` and `,` in properties.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from kubegap.findings import Finding, Result, Severity
from kubegap.reports.report import Report

COMMAND = {
    Severity.CRITICAL: "error",
    Severity.HIGH: "error",
    Severity.MEDIUM: "warning",
    Severity.LOW: "notice",
    Severity.INFO: "notice",
}
NO_FILE = "<stdin>"


def render(report: Report) -> Iterator[str]:
    for finding in report.findings:
        if finding.result is not Result.SKIP:
            yield _line(finding, report.base_dir) + "\n"


def _line(finding: Finding, base_dir: str | None) -> str:
    props = {}
    if finding.file and finding.file != NO_FILE:
        props["file"] = relative(finding.file, base_dir)
        if finding.line:
            props["line"] = str(finding.line)
        if finding.column:
            props["col"] = str(finding.column)
    label = finding.severity.value if finding.result is Result.FAIL else finding.result.value
    props["title"] = f"kubegap {finding.policy}/{finding.rule} ({label})"
    where = f"{finding.object.display()}{f', {finding.where()}' if finding.where() else ''}"
    text = f"{where}: {finding.message}"
    if finding.path:
        text += f"\nat {finding.path}"
    if finding.remediation:
        text += f"\nfix: {finding.remediation}"
    listed = ",".join(f"{key}={_property(value)}" for key, value in props.items())
    return f"::{COMMAND[finding.severity]} {listed}::{_data(text)}"


def relative(file: str, base_dir: str | None) -> str:
    """A path below the run's directory as a relative POSIX path, which CI resolves in the checkout."""
    if base_dir and Path(file).is_absolute():
        rel = os.path.relpath(file, base_dir)
        if not rel.startswith(".."):
            file = rel
    return file.replace(os.sep, "/").removeprefix("./")


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")
