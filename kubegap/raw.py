"""Reading raw Kubernetes objects defensively: a field of the wrong type counts as absent, never a crash."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, TypeGuard

from kubegap.fieldpath import FieldPath

_EMPTY: Final[dict[Any, Any]] = {}  # what `mapping` gives for a value that is none: never changed, only read


# What parsers give besides dicts: none of them is a mapping, which exact tests tell far faster than the
# abstract one (a missing field, None, is the commonest value asked about)
_PLAIN: Final = frozenset({type(None), str, list, int, float, bool})


def is_mapping(value: Any) -> TypeGuard[Mapping[Any, Any]]:
    """Whether the value is a mapping; a dict, or another plain value, is told by its exact type."""
    kind = type(value)
    return kind is dict or (kind not in _PLAIN and isinstance(value, Mapping))


def mapping(value: Any) -> dict[Any, Any]:
    """The value if it is a mapping, else an empty one (`is_mapping`, written out: this is called
    hundreds of times per object, and a call costs more than the test). Its keys are as the parser gave
    them: YAML's may be numbers, so they are not typed as text (compiled code checks declared types).
    A dict, as parsers give: compiled code reads one directly, where it looks a Mapping's methods up by
    name. A mapping that is no dict is read as a copy, and the empty one is shared: the result is only
    read."""
    kind = type(value)
    if kind is dict:
        found: dict[Any, Any] = value
        return found
    if kind not in _PLAIN and isinstance(value, Mapping):
        return value if isinstance(value, dict) else dict(value)
    return _EMPTY


def items(value: Any) -> list[Any]:
    """The value if it is a list, else an empty one."""
    return value if isinstance(value, list) else []


def dig(obj: Any, path: FieldPath) -> Any:
    """The value at `path` (keys into mappings, indexes into lists); None where any step is missing."""
    value: Any = obj
    for part in path:
        # A dict, as parsers give, is told by its exact type, and the abstract test (a Python call, in
        # ABCMeta) is not made for the plain values, None the commonest (a missing field's parent).
        kind = type(value)
        if kind is dict and type(part) is str:
            found: dict[str, Any] = value  # typed: compiled code then reads it without a method lookup
            value = found.get(part)
        elif isinstance(part, int) and isinstance(value, list):
            if not 0 <= part < len(value):
                return None
            value = value[part]
        elif kind not in _PLAIN and isinstance(part, str) and isinstance(value, Mapping):
            value = value.get(part)
        else:
            return None
    return value
