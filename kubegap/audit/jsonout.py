"""`--format json` for the audit, streamed: the same document kubegap.reports.json renders
({"findings": [...], "summary": {...}, "coverage": {...}}, byte for byte), written one finding at a time
so that a cluster with hundreds of thousands of findings never holds them all in memory.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, TextIO

from kubegap.findings import Finding, Summary


def _dump(value: Any, indent: str) -> str:
    """`value` as json.dumps(indent=2) renders it nested at `indent` (the first line left for the caller)."""
    return json.dumps(value, indent=2, ensure_ascii=False).replace("\n", "\n" + indent)


def write(
    out: TextIO, findings: Iterable[Finding], summary: Summary, extra: Mapping[str, Any] | None = None
) -> None:
    out.write('{\n  "findings": [')
    first = True
    for finding in findings:
        out.write("\n    " if first else ",\n    ")
        out.write(_dump(finding.to_json(), "    "))
        first = False
    out.write("]" if first else "\n  ]")
    for key, value in {"summary": summary.to_json(), **(extra or {})}.items():
        out.write(f",\n  {json.dumps(key, ensure_ascii=False)}: {_dump(value, '  ')}")
    out.write("\n}\n")
