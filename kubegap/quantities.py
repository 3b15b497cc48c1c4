"""Extended-resource counts as Kubernetes writes them in limits, requests, capacity and allocatable."""

from __future__ import annotations

import re
from typing import Any

_DIGITS = re.compile(r"[0-9]+\Z")  # ASCII only: str.isdigit() also takes full-width and Arabic-Indic digits


def count(value: Any) -> int:
    """An integer or an integer string ("8"); anything else (a bool, "1k", "x") counts 0 (RULES.md §1)."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return max(value, 0)
    if isinstance(value, str) and _DIGITS.match(value.strip()):
        return int(value.strip())
    return 0
