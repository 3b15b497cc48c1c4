"""Field paths: a tuple of keys and indexes, rendered as `spec.containers[0].env[3]`.

Keys that are not plain identifiers (annotation names, map keys with dots or slashes) render in
brackets, `metadata.annotations['kubegap.dev/step-time']`, so that `parse(render(p)) == p`.
"""

from __future__ import annotations

import functools
import re
from typing import Final

FieldPath = tuple[str | int, ...]

_PLAIN: Final = re.compile(r"[A-Za-z_$][A-Za-z0-9_$-]*\Z")
_TOKEN: Final = re.compile(r"\.?([A-Za-z_$][A-Za-z0-9_$-]*)|\[(\d+)\]|\['((?:[^'\\]|\\.)*)'\]")


def _render(path: FieldPath) -> str:
    out: list[str] = []
    for part in path:
        if isinstance(part, int):
            out.append(f"[{part}]")
        elif _PLAIN.match(part):
            out.append(f".{part}" if out else part)
        else:
            escaped = part.replace("\\", "\\\\").replace("'", "\\'")
            out.append(f"['{escaped}']")
    return "".join(out)


# The same paths recur across objects of one shape: remembered. Final, and not a decorated function, which
# compiled callers would look up in this module's names at every call (the facts render a path per value).
render: Final = functools.lru_cache(maxsize=8192)(_render)


_CACHED_CHARACTERS: Final = 512  # longer paths (an odd key) are parsed each time: the cache stays within 2 MB


def parse(text: str) -> FieldPath:
    """Inverse of `render`; raises ValueError on text that `render` cannot produce. Lint locates every
    finding by its path, and the same paths recur across objects of one shape: they are parsed once."""
    return _parsed(text) if len(text) <= _CACHED_CHARACTERS else _parse(text)


@functools.lru_cache(maxsize=4096)
def _parsed(text: str) -> FieldPath:
    return _parse(text)


def _parse(text: str) -> FieldPath:
    parts: list[str | int] = []
    pos = 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None or match.end() == pos:
            raise ValueError(f"not a field path: {text!r} (at offset {pos})")
        name, index, quoted = match.groups()
        if name is not None:
            parts.append(name)
        elif index is not None:
            parts.append(int(index))
        else:
            parts.append(re.sub(r"\\(.)", r"\1", quoted))
        pos = match.end()
    return tuple(parts)
