"""CEL's operators and functions over plain Python values, for the fast path (kubegap.fastcel).

Each one gives CEL's answer or raises `Unsure`; it never guesses. Python is laxer than CEL in many places
(`1 + 1.0`, `True == 1`, `'abc'[0]`, `-7 // 2`, unbounded integers, a negative list index), so every
operand's CEL type is checked, and anything whose CEL answer is an error, or whose answer could differ
between CEL runtimes (mixed-type equality, a double formatted as text), is left to the runtime.

Integers need no check on the way in: every integer a program can read fits int64 (kubegap.celcost.survey,
checked once per object), literals do (kubegap.celparse), and each arithmetic result is checked here. Nor
do types beyond the plain ones: the same check admits only dicts, lists and scalars, so a map is a `dict`.
"""

from __future__ import annotations

import functools
import re
import warnings
from collections.abc import Iterable
from typing import Any, Final

from kubegap import cel
from kubegap.integers import INT64_MAX, INT64_MIN


class Unsure(Exception):
    """The fast path cannot be certain of CEL's answer here: the runtime evaluates the program."""


_SCALARS: Final = (str, bool, float, type(None))
_NUMBERS: Final = (int, float)


def boolean(value: Any) -> bool:
    if value is True or value is False:
        return value
    raise Unsure


def negate(value: Any) -> bool:
    if value is True or value is False:
        return not value
    raise Unsure


def listed(value: Any) -> list[Any] | tuple[Any, ...]:
    """A comprehension's range: a list (a map's keys come in an order the runtimes need not share)."""
    if type(value) is list or type(value) is tuple:
        return value
    raise Unsure


def has(target: Any, name: str) -> bool:
    if type(target) is dict:
        return name in target
    raise Unsure


def index(target: Any, key: Any) -> Any:
    if type(target) is list or type(target) is tuple:
        if type(key) is int and 0 <= key < len(target):
            return target[key]
    elif type(target) is dict and type(key) is str:
        return target[key]  # a missing key is an error, as in CEL
    raise Unsure


def mapping(pairs: Iterable[tuple[Any, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if type(key) is not str or key in out:
            raise Unsure
        out[key] = value
    return out


def equal(a: Any, b: Any, negated: bool = False) -> bool:
    """`a == b`; for `a != b` (`negated`), cel-python compares lists and maps item by item with `!=`."""
    kind = type(a)
    if kind is type(b) and (kind in _SCALARS or kind is int):
        return bool(a == b)
    if a is None or b is None:
        other = _kind(a if b is None else b)
        if other is str or (other in (list, dict) and not negated):
            return False  # text against null, or a list or map under `==`: false in both runtimes (measured)
        # a number against null is false in cel-expr, an error in cel-python; so is a list or a map under `!=`
        raise Unsure
    if _kind(a) is not _kind(b):
        raise Unsure  # mixed types: false in one runtime, an error in another
    if type(a) is dict:
        if any(type(k) is not str for k in (*a, *b)):
            raise Unsure
        return a.keys() == b.keys() and all(equal(v, b[k], negated) for k, v in a.items())
    return len(a) == len(b) and all(equal(x, y, negated) for x, y in zip(a, b, strict=True))


def not_equal(a: Any, b: Any) -> bool:
    return not equal(a, b, negated=True)


def _kind(value: Any) -> type:
    kind = type(value)
    if kind in _SCALARS or kind is int:
        return kind
    if kind is list or kind is tuple:
        return list
    if type(value) is dict:
        return dict
    raise Unsure


def contained(item: Any, container: Any) -> bool:
    """`item in container`."""
    if type(container) is list or type(container) is tuple:
        if type(item) is str:
            if item in container:
                return True
            if all(type(e) is str for e in container):
                return False
        return any(equal(item, e) for e in container)
    if type(container) is dict and type(item) is str:
        return item in container
    raise Unsure


def _ordered(a: Any, b: Any) -> None:
    kind = type(a)
    if kind is not type(b) or kind not in (int, float, str, bool):
        raise Unsure


def less(a: Any, b: Any) -> bool:
    _ordered(a, b)
    return bool(a < b)


def less_equal(a: Any, b: Any) -> bool:
    _ordered(a, b)
    return bool(a <= b)


def greater(a: Any, b: Any) -> bool:
    _ordered(a, b)
    return bool(a > b)


def greater_equal(a: Any, b: Any) -> bool:
    _ordered(a, b)
    return bool(a >= b)


def _int64(value: int) -> int:
    if INT64_MIN <= value <= INT64_MAX:
        return value
    raise Unsure  # overflow is an error in CEL


def add(a: Any, b: Any) -> Any:
    kind = type(a)
    if kind is type(b):
        if kind is str or kind is float:
            return a + b
        if kind is int:
            return _int64(a + b)
    if _kind(a) is list and _kind(b) is list:
        return [*a, *b]
    raise Unsure


def subtract(a: Any, b: Any) -> Any:
    kind = type(a)
    if kind is type(b) and kind in _NUMBERS:
        return _int64(a - b) if kind is int else a - b
    raise Unsure


def multiply(a: Any, b: Any) -> Any:
    kind = type(a)
    if kind is type(b) and kind in _NUMBERS:
        return _int64(a * b) if kind is int else a * b
    raise Unsure


def divide(a: Any, b: Any) -> Any:
    kind = type(a)
    if kind is not type(b) or kind not in _NUMBERS or not b:
        raise Unsure  # a double over zero is infinite or NaN in CEL, which the runtime gives
    if kind is float:
        return a / b
    quotient = abs(a) // abs(b)  # CEL truncates toward zero, Python floors
    return _int64(quotient if (a < 0) == (b < 0) else -quotient)


def modulo(a: Any, b: Any) -> int:
    if type(a) is not int or type(b) is not int or not b or (a == INT64_MIN and b == -1):
        raise Unsure
    remainder = abs(a) % abs(b)  # the sign of the dividend, as in C++ and Go
    return -remainder if a < 0 else remainder


def minus(a: Any) -> Any:
    if type(a) is float or (type(a) is int and a != INT64_MIN):
        return -a
    raise Unsure


def size(value: Any) -> int:
    if type(value) is str or type(value) is list or type(value) is tuple or type(value) is dict:
        return len(value)  # a string's size counts code points in CEL, as len() does
    raise Unsure


def string(value: Any) -> str:
    kind = type(value)
    if kind is str or kind is int:
        return str(value)
    raise Unsure  # a double's text differs between runtimes, and a bool's (cel-python writes `True`)


def integer(value: Any) -> int:
    kind = type(value)
    if kind is int:
        return int(value)
    if kind is float and -(2.0**63) < value < 2.0**63:  # NaN fails both tests
        return int(value)  # truncated toward zero, as in CEL
    if kind is str and _WHOLE.fullmatch(value):
        return int(value)
    raise Unsure


def double(value: Any) -> float:
    kind = type(value)
    if kind is float or kind is int:
        return float(value)
    if kind is str and _DECIMAL.fullmatch(value):
        return float(value)  # both parse to the nearest double; short decimals leave no doubt
    raise Unsure


# Text both runtimes read as a number alike; anything else (spaces, signs, exponents, inf) is theirs.
_WHOLE: Final = re.compile(r"-?[0-9]{1,18}")
_DECIMAL: Final = re.compile(r"-?[0-9]{1,15}(?:\.[0-9]{1,15})?")


def _text(*values: Any) -> None:
    if any(type(v) is not str for v in values):
        raise Unsure


def starts_with(text: Any, prefix: Any) -> bool:
    _text(text, prefix)
    return bool(text.startswith(prefix))


def ends_with(text: Any, suffix: Any) -> bool:
    _text(text, suffix)
    return bool(text.endswith(suffix))


def contains(text: Any, part: Any) -> bool:
    _text(text, part)
    return part in text


def matches(text: Any, pattern: Any) -> bool:
    _text(text, pattern)
    compiled, folds, longest = _regex(pattern)
    if compiled is None or len(text) > longest or (folds and not text.isascii()):
        raise Unsure  # RE2 folds case by Unicode's simple rules, Python's re by its own
    return compiled.search(text) is not None


def duration_text(seconds: Any) -> str:
    if type(seconds) is not float:
        raise Unsure  # declared over doubles
    return cel.duration_text(seconds)


def matches_any(name: Any, patterns: Any) -> bool:
    if type(name) is not str or any(type(p) is not str for p in listed(patterns)):
        raise Unsure
    return cel.matches_any(name, patterns)


def joined(items: Any) -> str:
    if any(type(i) is not str and type(i) is not int for i in listed(items)):
        raise Unsure
    return cel.joined(items)


# RE2 syntax that Python's re reads the same way, once rewritten: a leading group of the flags i, m, s;
# escaped punctuation; \d, \w and \s as RE2 defines them (ASCII; \s without \v); `$` at the very end of
# the text unless `m` is set (Python's also matches before a final newline). Anything else (back
# references, look-around, \b, \A, \z, \pN, named or flagged groups, POSIX classes, possessive or large
# repeats) is left to the runtime.
#
# RE2 runs in linear time and Python's re backtracks, so a pattern is only taken where backtracking stays
# small on the text it gets: no repeated group, at most two unbounded repeats (`*`, `+`, `{n,}`), and with
# any, anchored at a line's start; the text is then held to a length at which the worst case is cheap.
_FLAGS: Final = re.compile(r"\(\?([ims]+)\)")
_CLASS_ESCAPES: Final = {"d": "0-9", "w": "0-9A-Za-z_", "s": r"\t\n\f\r "}
_REPEAT: Final = re.compile(r"\{(\d+)(,(\d*))?\}")
_RANGE_AFTER: Final = re.compile(r"-[^\]]")
_LONGEST: Final = {0: 1 << 62, 1: 100_000, 2: 2_000}  # text length by the number of unbounded repeats
_UNSURE: Final[tuple[None, bool, int]] = (None, False, 0)


@functools.lru_cache(maxsize=256)
def _regex(pattern: str) -> tuple[re.Pattern[str] | None, bool, int]:
    """The pattern for Python's re with RE2's meaning, whether it folds case, and the longest text it may
    search; None where unsure."""
    if pattern == r"\b\B":  # kubegap.globs' pattern for no globs: matches nothing in either engine
        return re.compile(r"(?!)"), False, _LONGEST[0]
    flags = _FLAGS.match(pattern)
    names = flags.group(1) if flags else ""
    at = flags.end() if flags else 0
    out = [f"(?{names})" if names else ""]
    anchored = pattern.startswith("^", at)
    unbounded = 0
    in_class = False
    after = ""  # what the last piece was: "atom", "group" (a closing parenthesis), "repeat" or ""
    while at < len(pattern):
        c = pattern[at]
        at += 1
        if c == "\\":
            if at == len(pattern):
                return _UNSURE
            e = pattern[at]
            at += 1
            if e in _CLASS_ESCAPES:
                if in_class and (pattern[at - 3] == "-" or _RANGE_AFTER.match(pattern, at)):
                    return _UNSURE  # a range to or from a class: an error in RE2, characters to Python
                out.append(_CLASS_ESCAPES[e] if in_class else f"[{_CLASS_ESCAPES[e]}]")
            elif e.isascii() and not e.isalnum() and not e.isspace():
                out.append("\\" + e)
            else:
                return _UNSURE
            after = "atom"
        elif in_class:
            if c == "[" or pattern.startswith(("--", "&&", "~~", "||"), at - 1):
                return _UNSURE  # a POSIX class in RE2; a nested set or set operation to Python
            in_class = c != "]"
            out.append(c)
            after = "atom"
        elif c == "[":
            in_class = True
            # a `]` right after `[` or `[^` is itself in both engines
            lead = "^]" if pattern.startswith("^]", at) else "]" if pattern.startswith("]", at) else ""
            at += len(lead)
            out.append("[" + lead)
            after = "atom"
        elif c in "*+?{":
            repeat = _REPEAT.match(pattern, at - 1) if c == "{" else None
            if c == "{" and repeat is None:
                if pattern.startswith(",", at):
                    return _UNSURE  # `{,n}`: a repeat to Python 3.11, text to RE2
                out.append("\\{")
                after = "atom"
                continue
            if after == "repeat" and c == "?":
                out.append("?")  # lazy
                after = ""
                continue
            if after != "atom":
                return _UNSURE  # a repeated group, a possessive or doubled repeat, or nothing to repeat
            if repeat is not None:
                low, comma, high = repeat.groups()
                if any(n and n[0] == "0" and len(n) > 1 for n in (low, high)):
                    return _UNSURE  # RE2 reads a count with a leading zero as text, Python as a count
                if int(low) > 1000 or (high and int(high) > 1000):
                    return _UNSURE  # RE2 refuses repeats past 1,000
                unbounded += bool(comma) and not high
                at = repeat.end()
                out.append(repeat.group())
            else:
                unbounded += c != "?"
                out.append(c)
            after = "repeat"
        elif c == "$":
            out.append("$" if "m" in names else r"\Z")
            after = ""
        elif c == "(":
            group = "(?:" if pattern.startswith("?:", at) else "("
            if group == "(" and pattern.startswith("?", at):
                return _UNSURE  # `(?` other than `(?:`: look-around, named or flagged groups
            at += len(group) - 1
            out.append(group)
            after = ""
        elif c == ")":
            out.append(c)
            after = "group"
        else:
            out.append(c)
            after = "atom" if c not in "|^" else ""
    if in_class or unbounded > 2 or (unbounded and not anchored):
        return _UNSURE
    folds = "i" in names
    if folds and not pattern.isascii():
        return _UNSURE
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            return re.compile("".join(out)), folds, _LONGEST[unbounded]
    except (re.error, Warning):
        return _UNSURE
