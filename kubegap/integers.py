"""Integers read the way the API server reads them, so no input can hand the engine a number it chokes on.

Kubernetes decodes a JSON integer as int64 when it fits and falls back to float64 otherwise
(sigs.k8s.io/json, `UnmarshalCaseSensitivePreserveInts`); a number beyond float64 fails to decode. kubegap
does the same for JSON (webhook bodies, audit pages) and YAML (manifests): an integer outside int64 becomes
a float, and one beyond float64 is a `NumberError`. Without this, CPython refuses to convert integer text
past 4,300 digits (a `ValueError` deep in a parser) and cel-python overflows on anything past int64.
"""

from __future__ import annotations

import json
import math
from typing import Any, Final

# Final: compiled code reads a constant where it would look a module's name up each time
INT64_MIN: Final = -(2**63)
INT64_MAX: Final = 2**63 - 1
# float64 ends near 1.8e308: an integer written with more characters than this cannot be in range, and
# refusing it before conversion keeps a megabyte of digits from costing quadratic time.
MAX_CHARACTERS: Final = 400
_SHORT: Final = 18  # decimal text this short always fits int64


class NumberError(ValueError):
    """An integer no Kubernetes number can hold."""


def too_long(text: str) -> NumberError:
    return NumberError(f"integer of {len(text):,} characters is beyond the range of a Kubernetes number")


def in_range(value: int) -> int | float:
    """`value` if it fits int64, else as float64 (as the API server stores it); NumberError beyond that."""
    if INT64_MIN <= value <= INT64_MAX:
        return value
    try:
        as_float = float(value)
    except OverflowError:
        as_float = math.inf
    if math.isinf(as_float):
        raise NumberError(f"integer of {len(str(value)):,} digits is beyond the range of a Kubernetes number")
    return as_float


def parse(text: str) -> int | float:
    """A JSON integer literal, as Kubernetes decodes it (the `parse_int` hook of `json.loads`)."""
    if len(text) <= _SHORT:
        return int(text)
    if len(text) > MAX_CHARACTERS:
        raise too_long(text)
    return in_range(int(text))


def loads(data: str | bytes) -> Any:
    """`json.loads` with Kubernetes' integers; ValueError (NumberError for a number) on bad input."""
    return json.loads(data, parse_int=parse)
