"""Reading raw Kubernetes objects defensively: a field of the wrong type counts as absent, never a crash."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubegap.fieldpath import FieldPath

_EMPTY: Mapping[str, Any] = {}


def is_mapping(value: Any) -> bool:
    """Whether the value is a mapping: a dict, what parsers give, is tested exactly first, which is far
    cheaper than the abstract test."""
    return type(value) is dict or isinstance(value, Mapping)


def mapping(value: Any) -> Mapping[str, Any]:
    """The value if it is a mapping, else an empty one (`is_mapping`, written out: this is called
    hundreds of times per object, and a call costs more than the test)."""
    return value if type(value) is dict or isinstance(value, Mapping) else _EMPTY


def items(value: Any) -> list[Any]:
    """The value if it is a list, else an empty one."""
    return value if isinstance(value, list) else []


def dig(obj: Any, path: FieldPath) -> Any:
    """The value at `path` (keys into mappings, indexes into lists); None where any step is missing."""
    value: Any = obj
    for part in path:
        # a dict, as parsers give, is tested exactly first: far cheaper than the abstract test
        exact = type(value) is dict and type(part) is str
        if exact or (isinstance(part, str) and isinstance(value, Mapping)):
            value = value.get(part)
        elif isinstance(part, int) and isinstance(value, list) and 0 <= part < len(value):
            value = value[part]
        else:
            return None
    return value
