from __future__ import annotations

import pytest

from kubegap import durations

GO_VALID = [
    ("90s", 90.0),
    ("10m", 600.0),
    ("1h30m", 5400.0),
    ("8.4s", 8.4),
    ("0", 0.0),
    ("0s", 0.0),
    (" 10m ", 600.0),
    ("1.5h", 5400.0),
    (".5s", 0.5),
    ("500ms", 0.5),
    ("1m30s500ms", 90.5),
    ("30m1h", 5400.0),  # Go accepts the units in any order and adds them
    ("2h45m30s", 9930.0),
    ("100us", 1e-4),
    ("100µs", 1e-4),
    ("1000000ns", 1e-3),
]

GO_INVALID = [
    "",
    "   ",
    "10",  # a bare number other than 0 has no unit
    "10 m",
    "1h 30m",
    "10min",
    "1d",
    "-5m",
    "+5m",
    "ten minutes",
    "m",
    "5m!",
    "00:10:00",
    "1e3s",
    "1.5.5s",
    "\u0661\u0660m",  # Arabic-Indic digits: Go reads ASCII digits only
]


@pytest.mark.parametrize(("text", "seconds"), GO_VALID)
def test_parse_go_valid(text: str, seconds: float) -> None:
    assert durations.parse_go(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", GO_INVALID)
def test_parse_go_invalid(text: str) -> None:
    with pytest.raises(ValueError):
        durations.parse_go(text)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("00:10:00", 600.0),
        ("0:10:00", 600.0),
        ("01:30:00", 5400.0),
        ("26:00:00", 93600.0),  # hours are not capped at 24
        ("00:00:30.5", 30.5),
        ("1 day, 2:00:00", 93600.0),
        ("2 days, 0:00:01", 172801.0),
    ],
)
def test_parse_hms_valid(text: str, seconds: float) -> None:
    assert durations.parse_hms(text) == pytest.approx(seconds)


@pytest.mark.parametrize(
    "text", ["10:00", "00:60:00", "00:00:60", "a:b:c", "10m", "", "1:2:3:4", "\uff11:00:00"]
)
def test_parse_hms_invalid(text: str) -> None:
    with pytest.raises(ValueError):
        durations.parse_hms(text)


@pytest.mark.parametrize(
    ("text", "unit", "seconds"),
    [
        ("20", "min", 1200.0),
        ("1.5", "min", 90.0),
        ("1800", "s", 1800.0),
        ("2", "h", 7200.0),
        ("1e3", "s", 1000.0),
        ("10m", "duration", 600.0),
        ("00:10:00", "hms", 600.0),
        ("10m", "hms", 600.0),  # an hms knob also takes a Go duration
        ("1800", "duration-or-seconds", 1800.0),
        ("30m", "duration-or-seconds", 1800.0),
        ("0:30:00", "duration-or-seconds", 1800.0),
    ],
)
def test_parse_in_unit(text: str, unit: str, seconds: float) -> None:
    assert durations.parse_in_unit(text, unit) == pytest.approx(seconds)


@pytest.mark.parametrize(
    ("text", "unit"),
    [
        ("-1", "s"),
        ("inf", "s"),
        ("nan", "min"),
        ("10m", "s"),  # a seconds knob does not take a duration
        ("abc", "min"),
        ("600", "duration"),
        ("600", "hms"),
        ("ten", "duration-or-seconds"),
        ("10", "fortnights"),
    ],
)
def test_parse_in_unit_invalid(text: str, unit: str) -> None:
    with pytest.raises(ValueError):
        durations.parse_in_unit(text, unit)


def test_parse_in_unit_remembers_short_values_only() -> None:
    # read again from the cache, the same answer and the same error; a long text (a hostile manifest's)
    # is read but not kept, so no manifest can fill the cache with large values
    for _ in range(2):
        assert durations.parse_in_unit("45m", "duration") == 2700.0
        with pytest.raises(ValueError):
            durations.parse_in_unit("45", "duration")
    kept = durations._remembered.cache_info().currsize
    long = " " * 100 + "1800"
    assert durations.parse_in_unit(long, "s") == 1800.0
    assert durations._remembered.cache_info().currsize == kept


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0s"),
        (1.2, "1.2s"),
        (8.4, "8.4s"),
        (59, "59s"),
        (60, "1m"),
        (90, "1m30s"),
        (90.5, "90.5s"),
        (600, "10m"),
        (3600, "1h"),
        (5400, "1h30m"),
        (3661, "1h1m1s"),
        (86400, "24h"),
        (1800.0000000001, "30m"),  # float noise from unit conversions does not leak into messages
        (5.000000001 * 3600, "5h"),  # nor from sums of hours
        (90.0004, "1m30s"),  # what shows as whole to the millisecond is whole
        (90.0006, "90.001s"),
    ],
)
def test_format_seconds(seconds: float, text: str) -> None:
    assert durations.format_seconds(seconds) == text


@pytest.mark.parametrize("seconds", [0.0, 0.5, 1.2, 8.4, 59.0, 60.0, 90.5, 600.0, 3661.0, 5400.0, 86400.0])
def test_format_seconds_round_trips_through_parse_go(seconds: float) -> None:
    assert durations.parse_go(durations.format_seconds(seconds)) == pytest.approx(seconds)


def test_negative_zero_reads_as_zero_and_leaves_zero_as_it_was() -> None:
    durations.format_seconds.cache_clear()
    assert durations.format_seconds(-0.0) == "0s"
    assert durations.format_seconds(0.0) == "0s"  # one cache key for both: -0.0 == 0.0


@pytest.mark.parametrize("text", ["45s", "1m30s", "10m", "1h30m", "8.4s", "2h45m30s"])
def test_parse_go_round_trips_through_format_seconds(text: str) -> None:
    seconds = durations.parse_go(text)
    assert durations.format_seconds(seconds) == text
