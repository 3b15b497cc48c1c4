"""Globs as resource and variable names are written (`rdma/*`, `nvidia.com/mig-*`, `NCCL_FASTRAK_*`).

One translation serves Python and both CEL runtimes: RE2 syntax, since `fnmatch` emits atomic groups
that RE2 rejects.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable


def pattern(globs: Iterable[str]) -> str:
    """One pattern matching a whole line that any glob matches: `*` any run of characters, `?` one."""
    parts = ["".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in g) for g in globs]
    return "(?m)^(?:" + "|".join(parts) + ")$" if parts else "(?!)"


@functools.lru_cache(maxsize=256)
def compiled(globs: tuple[str, ...]) -> re.Pattern[str]:
    """The pattern compiled for Python's `re`: the same meaning as in RE2 (only `.`, `.*` and escapes)."""
    return re.compile(pattern(globs))


def matches(name: str, globs: Iterable[str]) -> bool:
    return compiled(tuple(globs)).fullmatch(name) is not None
