"""Where the shell reads a script as code (kubegap.fix.scripts): quotes and comments found by jumping
between the characters that change it, against a walk over every character as the specification."""

from __future__ import annotations

import random

import pytest

from kubegap.fix.scripts import _is_code, _not_code


def _walk(text: str, start: int, end: int, joined: bool) -> list[bool]:
    """For each position of text[start:end], whether it is code: a character at a time."""
    code: list[bool] = []
    quote, comment = "", False
    for pos in range(start, end):
        char = text[pos]
        if comment:
            comment = char != "\n" or joined
        elif quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (pos == start or text[pos - 1] in " \t\n"):
            comment = True
        code.append(not quote and not comment)
    return code


def _found(text: str, start: int, end: int, joined: bool) -> list[bool]:
    spans = _not_code(text, start, end, joined)
    return [_is_code(spans, pos) for pos in range(start, end)]


@pytest.mark.parametrize(
    ("script", "code"),
    [
        ('torchrun train.py # torchrun "x"', "torchrun train.py "),
        # from the opening quote to the closing one, which is code again
        ("echo 'torchrun' && torchrun a.py", "echo ' && torchrun a.py"),
        ('echo "it\'s" ; python a.py', 'echo " ; python a.py'),
        ("a#b c", "a#b c"),  # `#` inside a word starts no comment
        ("x # note\ny", "x \ny"),  # the line break ends the comment
        ("'never closed", ""),
    ],
)
def test_quotes_and_comments_are_not_code(script: str, code: str) -> None:
    code_at = _found(script, 0, len(script), False)
    read = "".join(char for char, is_code in zip(script, code_at, strict=True) if is_code)
    assert read == code


def test_a_comment_runs_to_the_end_where_yaml_joins_the_lines() -> None:
    script = "x # note\ny"
    assert _found(script, 0, len(script), True) == [True, True] + [False] * 8


def test_the_same_as_a_walk_over_every_character() -> None:
    rng = random.Random(7)
    alphabet = "ab #'\"\n\t=;"
    for _ in range(5000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        start = rng.randint(0, len(text))
        end = rng.randint(start, len(text))
        joined = rng.random() < 0.5
        assert _found(text, start, end, joined) == _walk(text, start, end, joined), (text, start, end)
