"""Scalars the fixers write (kubegap.fix.edits.scalar): each reads back as the value it was made from."""

from __future__ import annotations

import json
import random
import string

import pytest
import yaml

from kubegap.fix.edits import scalar

# YAML 1.1 reads each of these plain as something other than the string: a number, a bool, a null, a date
NOT_STRINGS = [
    "1800", "-1", "+1", "0x1F", "017", "0b101", "1_000", "0x_", "1.5", "-.5e3", "190:20:30",
    "2001-12-14", "2001-12-14t21:59:43.10-05:00", "true", "False", "NO", "on", "Off", "y", "n",
    "null", "Null", "~", ".inf", "-.Inf", ".NaN",
]  # fmt: skip
STRINGS = ["abc", "--foo", "a=b", "/bin/sh", "1e3", "0o17", "1e3.0", "v1.2.3", "-x", "0x", "ß"]


@pytest.mark.parametrize("value", NOT_STRINGS + STRINGS)
def test_a_scalar_reads_back_as_the_string(value: str) -> None:
    assert yaml.safe_load(scalar(value)) == value
    quoted = scalar(value) != value
    assert quoted == (value in NOT_STRINGS)


def test_plain_exactly_where_yaml_reads_the_string_back() -> None:
    # the rule stated by loading each candidate as a document, over strings built to hit YAML 1.1's forms
    rng = random.Random(7)
    pieces = [*string.digits, *"._-+=/xobeEtTnNyY:", "0x", "1_", ".inf", "true", "2001-12-14", "ä"]
    for _ in range(4000):
        value = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 6)))
        written = scalar(value)
        assert yaml.safe_load(written) == value, value
        try:
            plain_reads = yaml.safe_load(value) == value
        except (yaml.YAMLError, ValueError):  # `0x_` resolves as an int that int() then refuses
            plain_reads = False
        if written == value:
            assert plain_reads, value
        else:
            assert written == json.dumps(value)


@pytest.mark.parametrize("value", [True, 1.5, None, ["a"]])
def test_only_ints_and_strings_are_written(value: object) -> None:
    with pytest.raises(TypeError):
        scalar(value)


def test_ints_are_plain() -> None:
    assert scalar(1800) == "1800"
