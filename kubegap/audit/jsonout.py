"""`--format json` for the audit, streamed: the same document kubegap.reports.json renders
({"findings": [...], "summary": {...}, "coverage": {...}}, byte for byte), written one finding at a time
so that a cluster with hundreds of thousands of findings never holds them all in memory.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, TextIO

from kubegap.findings import Finding, Summary


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def write(
    out: TextIO, findings: Iterable[Finding], summary: Summary, extra: Mapping[str, Any] | None = None
) -> None:
    out.write('{"findings": [')
    for index, finding in enumerate(findings):
        out.write(", " if index else "")
        out.write(_dump(finding.to_json()))
    out.write("]")
    for key, value in {"summary": summary.to_json(), **(extra or {})}.items():
        out.write(f", {_dump(key)}: {_dump(value)}")
    out.write("}\n")
