"""Durations as declared by users: Go-style (`1h30m`, `8.4s`), `HH:MM:SS`, or numbers in a stated unit.

Every duration inside kubegap is a float of seconds: CEL compares doubles in both runtimes, while a mix of
int and double is an error in cel-python and a type error in cel-expr.
"""

from __future__ import annotations

import functools
import math
import re
from typing import Final

# ASCII digits, as in Go; Go accepts the micro sign (U+00B5) and the Greek mu (U+03BC) for microseconds
# (pkg.go.dev/time).
_GO_PART: Final = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h)")
_GO_SCALE: Final = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_HMS: Final = re.compile(r"(?:([0-9]+)\s*days?,\s*)?([0-9]+):([0-5]?[0-9]):([0-5]?[0-9](?:\.[0-9]+)?)\Z")
_UNIT_SECONDS: Final = {"s": 1.0, "min": 60.0, "h": 3600.0}


def parse_go(text: str) -> float:
    """Parse a Go `time.ParseDuration` string; raises ValueError. A bare `0` is allowed, as in Go."""
    body = text.strip()
    if body in ("0", "+0", "-0"):
        return 0.0
    if body.startswith(("-", "+")):
        # a signed zero (`-0s`, `+0h`) is 0, as Go reads it and as the bare `-0` above; any other is refused
        if body[1:2] not in ("-", "+", "") and _unsigned(body[1:], text) == 0.0:
            return 0.0
        raise ValueError(f"{text!r}: a negative or signed duration is not a sensible interval")
    return _unsigned(body, text)


def _unsigned(body: str, text: str) -> float:
    total, pos = 0.0, 0
    while pos < len(body):
        match = _GO_PART.match(body, pos)
        if match is None:
            raise ValueError(f"{text!r} is not a duration like 90s, 10m or 1h30m")
        total += float(match.group(1)) * _GO_SCALE[match.group(2)]
        pos = match.end()
    if not body:
        raise ValueError("empty duration")
    return total


def parse_hms(text: str) -> float:
    """Parse `HH:MM:SS` or Python's timedelta text `1 day, 2:00:00`; raises ValueError."""
    match = _HMS.match(text.strip())
    if match is None:
        raise ValueError(f"{text!r} is not HH:MM:SS")
    days, hours, minutes, seconds = match.groups()
    return int(days or 0) * 86400.0 + int(hours) * 3600.0 + int(minutes) * 60.0 + float(seconds)


def parse_number(text: str) -> float:
    value = float(text.strip())
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{text!r} is not a non-negative finite number")
    return value


def parse_in_unit(text: str, unit: str) -> float:
    """Seconds for a knob value in a catalogue unit: s, min, h, duration, hms, duration-or-seconds."""
    # The same short values recur in every container of a fleet's objects; a long one, which only a
    # hostile manifest writes, is not kept
    return _remembered(text, unit) if len(text) <= 64 else _parse_in_unit(text, unit)


def _parse_in_unit(text: str, unit: str) -> float:
    if unit in _UNIT_SECONDS:
        return parse_number(text) * _UNIT_SECONDS[unit]
    if unit == "duration":
        return parse_go(text)
    if unit == "hms":
        return parse_hms(text) if ":" in text else parse_go(text)
    if unit == "duration-or-seconds":
        if ":" in text:
            return parse_hms(text)
        try:
            return parse_number(text)
        except ValueError:
            return parse_go(text)
    raise ValueError(f"unknown unit {unit!r}")


_remembered: Final = functools.lru_cache(maxsize=4096)(_parse_in_unit)


# Seconds are shown to the millisecond: a value that shows as whole is written in hours and minutes, so
# float noise from unit conversions and sums (5.000000001 h) does not leak into messages as "18000s".
_SHOWN: Final = 0.0005


@functools.lru_cache(maxsize=4096, typed=True)  # a report renders the same durations for every finding
def format_seconds(seconds: float) -> str:
    """Short Go-like text: 600 -> 10m, 5400 -> 1h30m, 1.2 -> 1.2s, 0 -> 0s."""
    if seconds == 0:  # -0.0 too, which would read "-0s"; and the cache takes -0.0 and 0.0 for one key
        return "0s"
    if seconds < 0 or not math.isfinite(seconds):
        return f"{seconds}s"
    whole = round(seconds)
    if abs(seconds - whole) >= _SHOWN or whole < 60:
        text = f"{seconds:.3f}".rstrip("0").rstrip(".")
        return f"{text}s"
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{hours}h" if hours else "", f"{minutes}m" if minutes else "", f"{secs}s" if secs else ""]
    return "".join(parts)


def words(seconds: float) -> str:
    """Prose for fix texts: 1800 -> 30 minutes, 5400 -> 1 hour 30 minutes, 45 -> 45 seconds."""
    if seconds < 60 or not math.isfinite(seconds) or abs(seconds - round(seconds)) >= _SHOWN:
        return f"{format_seconds(seconds)[:-1]} second{'' if seconds == 1 else 's'}"
    hours, rest = divmod(round(seconds), 3600)
    minutes, secs = divmod(rest, 60)
    parts = [(hours, "hour"), (minutes, "minute"), (secs, "second")]
    return " ".join(f"{n} {unit}{'' if n == 1 else 's'}" for n, unit in parts if n)
