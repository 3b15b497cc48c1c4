"""Extended-resource counts as Kubernetes writes them in limits, requests, capacity and allocatable."""

from __future__ import annotations

import functools
import re
from typing import Any, Final

from kubegap.integers import INT64_MAX

# ASCII only: str.isdigit() also takes full-width and Arabic-Indic digits
_DIGITS: Final = re.compile(r"[0-9]+\Z")


def count(value: Any) -> int:
    """An integer or an integer string ("8"); anything else (a bool, "1k", "x") counts 0 (RULES.md §1)."""
    if type(value) is int:  # exact types first: most values are plain ints and text
        return max(value, 0)
    if type(value) is str:
        return _known_count(value) if len(value) <= _KNOWN_LENGTH else _text_count(value)
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return max(value, 0)
    return _text_count(value) if isinstance(value, str) else 0


def _text_count(value: str) -> int:
    if not _DIGITS.match(value.strip()):
        return 0
    digits = value.strip().lstrip("0") or "0"
    # A Kubernetes quantity holds at most an int64; longer digit strings saturate there instead of
    # reaching CPython's 4,300-digit conversion limit (and a huge count still counts as GPUs).
    return min(int(digits), INT64_MAX) if len(digits) <= 19 else INT64_MAX


# Every container's limits and requests are counted three times over (its facts, its unreadable counts,
# its NICs), and a cluster writes few distinct quantities: each text is read once. Only short texts are
# kept (a quantity is at most 19 digits and a suffix), so a webhook sent long ones keeps its memory.
_KNOWN_LENGTH: Final = 32
_known_count: Final = functools.lru_cache(maxsize=1024)(_text_count)


def is_zero(value: Any) -> bool:
    """A count written as zero (or below): `count` gives 0 for it as it does for text it cannot read."""
    return (isinstance(value, int) and not isinstance(value, bool) and value <= 0) or (
        isinstance(value, str) and value.strip() == "0"
    )
