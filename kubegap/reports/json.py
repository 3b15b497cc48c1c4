"""`--format json`: one object, {"findings": [...], "summary": {...}}, as RULES.md §4 fixes it.

Then the audit's "coverage", "workloads": training workloads with their cost (lint's costliest first,
the audit's worst offenders), and the audit's "cluster" section (the cluster validations' status and
pools). Written one finding at a time, so that a cluster with hundreds of thousands of findings is never
held in memory; the bytes are those of one `json.dumps` call.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from kubegap.findings import Finding
from kubegap.reports.report import Report

# No indent: the C encoder only runs without one, and this output is for machines (pipe to `jq`). One
# encoder for every finding: `json.dumps` with an option builds a new one per call.
_dump = json.JSONEncoder(ensure_ascii=False).encode


def finding_text(finding: Finding) -> str:
    """One finding's JSON, as the report lists it."""
    return _dump(finding.to_json())


def render(report: Report) -> Iterator[str]:
    yield '{"findings": ['
    texts = report.texts if report.texts is not None else map(finding_text, report.findings)
    for index, text in enumerate(texts):
        yield (", " if index else "") + text
    yield "]"
    extra: dict[str, Any] = {"summary": report.summary.to_json()}
    if report.audit is not None:
        extra["coverage"] = report.audit.coverage.to_json()
    extra["workloads"] = [w.to_json() for w in report.workloads]
    if report.audit is not None and report.audit.cluster is not None:  # RULES.md §2 v3: status and pools
        extra["cluster"] = report.audit.cluster.to_json()
    for key, value in extra.items():
        yield f", {_dump(key)}: {_dump(value)}"
    yield "}\n"
