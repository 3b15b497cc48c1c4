"""A format's output for a list of findings, rendered the way every command renders it: by name, through
the report registry."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kubegap.findings import Finding, Summary
from kubegap.reports import registry
from kubegap.reports.report import Report


def rendered(name: str, results: Sequence[Finding], **fields: Any) -> str:
    """`results` as a lint run holds them: failures, errors and exemptions as findings, passes apart."""
    findings = [f for f in results if f.result.value != "pass"]
    passes = [f for f in results if f.result.value == "pass"]
    return "".join(registry.render(name, Report(findings, Summary(), passes=passes, **fields)))
