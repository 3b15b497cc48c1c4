"""`--format json`: one object, {"findings": [...], "summary": {...}}, as RULES.md §4 fixes it."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from kubegap.findings import Finding, Summary


def render(findings: Iterable[Finding], summary: Summary, extra: Mapping[str, Any] | None = None) -> str:
    document: dict[str, Any] = {"findings": [f.to_json() for f in findings], "summary": summary.to_json()}
    document.update(extra or {})
    # No indent: the C encoder only runs without one, and this output is for machines (pipe to `jq`).
    return json.dumps(document, ensure_ascii=False) + "\n"
