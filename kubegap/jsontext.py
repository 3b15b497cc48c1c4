"""JSON text from the standard library's C encoder, built once for a set of options.

`json.dumps` and `JSONEncoder.encode` build a new C encoder, and a closure beside it, on every call:
about 1 µs, which was a sixth of the time a finding's JSON text took, and the audit and lint write
several texts per finding (docs/speed.md, the twenty-second round). `encoder` builds that same C encoder
once, with the options `JSONEncoder` would give it, so the text is the same, byte for byte
(tests/test_jsontext.py). An interpreter without the C encoder gets `JSONEncoder.encode`.

For values made fresh by a record's `to_json`, which can hold no cycle: no check for one is made.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

try:
    from _json import encode_basestring, encode_basestring_ascii, make_encoder
except ImportError:  # pragma: no cover - CPython always has it
    make_encoder = None  # type: ignore[assignment, misc]


def encoder(*, ensure_ascii: bool = True, separators: tuple[str, str] = (", ", ": ")) -> Callable[[Any], str]:
    """A function that gives the JSON text of a value as `json.dumps` with these options would, without a
    check for cycles."""
    reference = json.JSONEncoder(ensure_ascii=ensure_ascii, check_circular=False, separators=separators)
    if make_encoder is None:  # pragma: no cover
        return reference.encode
    quote = encode_basestring_ascii if ensure_ascii else encode_basestring
    made = make_encoder(
        None, reference.default, quote, None, separators[1], separators[0], False, False, True
    )

    def text(value: Any) -> str:
        return "".join(made(value, 0))

    return text
