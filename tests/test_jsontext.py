"""kubegap.jsontext: the encoder built once gives the text `json.dumps` gives, with the same options."""

from __future__ import annotations

import enum
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubegap import jsontext

VALUES: list[Any] = [
    {"policy": "nccl-timeout", "line": 30, "column": None, "roles": ["worker", "launcher"], "ok": True},
    {"saved": 530.0, "hours": 0.166667, "tiny": 1e-05, "big": 2**80, "negative": -3, "off": False},
    {"message": "fixing saves ≈ 1.2k GPU-h/month", "quote": 'a "quoted" \\ path\n\ttab', "emoji": "🚀"},
    {"lone": "\ud800 surrogate", "control": "\x00\x1f", "nested": {"a": [{"b": [[], {}]}]}},
    {"nan": float("nan"), "inf": float("inf"), "-inf": float("-inf")},
    ["top", "level", 1, 2.5, None],
    "a top-level string ≈",
    7,
    None,
]


@pytest.mark.parametrize("ensure_ascii", [True, False])
@pytest.mark.parametrize("separators", [(", ", ": "), (",", ":")])
@pytest.mark.parametrize("value", VALUES, ids=range(len(VALUES)))
def test_the_same_text_as_json_dumps(value: Any, ensure_ascii: bool, separators: tuple[str, str]) -> None:
    text = jsontext.encoder(ensure_ascii=ensure_ascii, separators=separators)
    expected = json.dumps(value, ensure_ascii=ensure_ascii, separators=separators)
    assert text(value) == expected
    assert text(value) == expected  # built once, used again


def test_what_json_cannot_encode_is_refused_as_json_dumps_refuses_it() -> None:
    text = jsontext.encoder()
    with pytest.raises(TypeError, match="not JSON serializable"):
        text({"when": object()})
    assert text({"after": "an error"}) == '{"after": "an error"}'


SCALARS: list[Any] = [None, True, False, 0, -3, 2**80, 0.1, -0.0, 1e-05, 1e22, 530.0, 0.166667]
SCALARS += [float("nan"), float("inf"), float("-inf"), 2.5e-7]
SCALARS += ["", 'a "quoted" \\ path\n\ttab', "≈ 🚀", "\ud800", "\x00\x1f"]


class _Level(enum.IntEnum):  # numbers of a subclass: their own str() is not the number's
    HIGH = 3

    def __str__(self) -> str:
        return "level high"


class _Hours(float):
    def __str__(self) -> str:
        return "some hours"

    __repr__ = __str__


SCALARS += [_Level.HIGH, _Hours(1.5)]


@pytest.mark.parametrize("value", SCALARS, ids=repr)
def test_a_scalar_is_written_as_json_dumps_writes_it(value: Any) -> None:
    assert jsontext.scalar(value) == json.dumps(value, ensure_ascii=False)


def test_a_list_of_strings_is_written_as_json_dumps_writes_it() -> None:
    for values in ([], ["one"], ["é ✓", '"', "\\", "\ud800", ""], ("a", "tuple")):
        assert jsontext.strings(values) == json.dumps(list(values), ensure_ascii=False)


def test_a_string_seen_before_is_written_the_same_and_few_are_kept() -> None:
    values = [f'line {i} "quoted" \\ é\n' for i in range(jsontext._QUOTED_KEPT + 10)]
    expected = [json.dumps(v, ensure_ascii=False) for v in values]
    for _ in range(2):  # the second time, from what was kept
        assert [jsontext.scalar(v) for v in values] == expected
        assert jsontext.strings(values[:3]) == f"[{', '.join(expected[:3])}]"
    assert 0 < len(jsontext._QUOTED) <= jsontext._QUOTED_KEPT
    long = "é" * (jsontext._QUOTED_LONGEST + 1)
    assert jsontext.scalar(long) == json.dumps(long, ensure_ascii=False)
    assert long not in jsontext._QUOTED  # a long value is quoted, not kept


def test_what_is_not_a_scalar_is_refused_as_json_dumps_refuses_it() -> None:
    for value in ([1], {"a": 1}, object()):
        with pytest.raises(TypeError, match="not JSON serializable"):
            jsontext.scalar(value)


TEXTS = st.lists(st.sampled_from(['{"a": 1}', "ascii", "", "\u00d7", "mlx5_0,…", "🚀", '"≈"']), max_size=12)


@settings(max_examples=300, deadline=None)
@given(texts=TEXTS, after=st.booleans())
def test_texts_joined_in_pieces_make_the_joined_text(texts: list[str], after: bool) -> None:
    pieces = jsontext.joined(texts, after)
    assert "".join(pieces) == (", " if after and texts else "") + ", ".join(texts)
    # what one character beyond ASCII would widen stays in a piece of its own
    assert all(piece.isascii() or piece.removeprefix(", ") in texts for piece in pieces)
    assert len(pieces) <= len(texts)


def test_a_run_of_ascii_texts_is_one_piece() -> None:
    assert jsontext.joined(["a", "b", "ü", "c", "d"]) == ["a, b", ", ü", ", c, d"]
    assert jsontext.joined(["ü", "a"], after=True) == [", ü", ", a"]
    assert jsontext.joined([], after=True) == []
