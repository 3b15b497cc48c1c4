"""JSON text from the standard library's C encoder, built once for a set of options.

`json.dumps` and `JSONEncoder.encode` build a new C encoder, and a closure beside it, on every call:
about 1 µs, which was a sixth of the time a finding's JSON text took, and the audit and lint write
several texts per finding (docs/speed.md, the twenty-second round). `encoder` builds that same C encoder
once, with the options `JSONEncoder` would give it, so the text is the same, byte for byte
(tests/test_jsontext.py). An interpreter without the C encoder gets `JSONEncoder.encode`.

For values made fresh by a record's `to_json`, which can hold no cycle: no check for one is made.

`scalar` and `strings` write the pieces of a record whose fields are known, as the encoder without
`ensure_ascii` would (kubegap.findings' `json_text`): a finding's JSON written so took half the time of
its dict made and encoded, since the encoder quotes every key of every dict anew (docs/speed.md, the
twenty-third round).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Sequence
from json.encoder import encode_basestring  # the C function where there is one
from typing import Any, Final

try:
    from _json import encode_basestring_ascii, make_encoder
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


def scalar(value: object) -> str:
    """A scalar's JSON text as the encoder without `ensure_ascii` writes it (a bool is an int)."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return quoted(value)
    # compiled, `str` of a number is a call in C, where `int.__repr__(value)` looks the method up by name;
    # a subclass (an IntEnum member) may have a `str` of its own, and the encoder writes its number
    if isinstance(value, int):
        return str(value) if type(value) is int else int.__repr__(value)
    if isinstance(value, float):
        if math.isfinite(value):
            return str(value) if type(value) is float else float.__repr__(value)
        return "NaN" if value != value else "Infinity" if value > 0 else "-Infinity"
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def strings(values: Sequence[str]) -> str:
    """A list of strings' JSON text, as the encoder without `ensure_ascii` writes it."""
    return f"[{', '.join(map(quoted, values))}]"


def quoted(value: str) -> str:
    """A string's JSON text, as the encoder without `ensure_ascii` writes it. The strings of findings are
    mostly the same few (a rule's message and fix, a path, a severity: 61 distinct among the 82,000 quoted
    for 2,000 objects of an audit), and quoting reads and writes each character twice, where a string
    already seen costs its hash and one comparison. Kept bounded, by count and by length (file names and
    messages with values in them vary; an object may hold a long value); any thread's entry is right."""
    if len(value) > _QUOTED_LONGEST:
        return encode_basestring(value)
    text = _QUOTED.get(value)
    if text is None:
        text = encode_basestring(value)
        if len(_QUOTED) >= _QUOTED_KEPT:
            _QUOTED.clear()
        _QUOTED[value] = text
    return text


# Final: compiled code reads a constant where it would look a module's name up each time
_QUOTED: Final[dict[str, str]] = {}
_QUOTED_KEPT: Final = 4096
_QUOTED_LONGEST: Final = 1024  # characters: a rule's fix is a few hundred


def joined(texts: Iterable[str], after: bool = False) -> list[str]:
    """`", ".join(texts)` in pieces that make that text one after another: each run of ASCII texts joined
    into one piece, every other text a piece of its own. One character beyond ASCII makes a joined string
    two or four bytes a character (a remediation's `…` made every piece of a lint run so), which a
    worker's pickle, reading it back and writing it out then take character by character, where ASCII is
    copied whole. `after`: a piece comes before these, so the first starts with the separator."""
    pieces: list[str] = []
    run: list[str] = []
    for text in texts:
        if text.isascii():  # a flag of the string: no character is read
            if not run and (pieces or after):
                run.append("")  # joined, the run starts with the separator after what came before
            run.append(text)
            continue
        if run:
            pieces.append(", ".join(run))
            run = []
        pieces.append(", " + text if pieces or after else text)
    if run:
        pieces.append(", ".join(run))
    return pieces
