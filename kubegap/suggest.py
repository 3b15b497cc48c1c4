"""'Did you mean …?' for names people mistype: rules, annotations."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """` (did you mean x?)`, or `` when nothing is close enough to be a likely typo."""
    close = difflib.get_close_matches(word, list(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""
