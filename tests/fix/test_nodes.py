"""Offsets in a document's text, as the fixers' edits use them (kubegap.fix.nodes)."""

from __future__ import annotations

import pytest

from kubegap.fix.nodes import Tree, line_starts


@pytest.mark.parametrize(
    "text",
    ["", "a", "\n", "a\nb", "a\nb\n", "\n\nx", "a\r\nb\r\n", "a\u2028b\x0bc\x1cd\n", "é\nß\n"],
)
def test_a_line_starts_after_each_newline_and_only_there(text: str) -> None:
    # other line separators (\r, U+2028, \v, \x1c) start no line: YAML and the edits count only \n
    assert line_starts(text) == [0] + [i + 1 for i, c in enumerate(text) if c == "\n"]


def test_offsets_of_a_node_come_from_its_line_and_column() -> None:
    tree = Tree("a: 1\nb:\n  c: 2\n")
    _, value = tree.root.value[1]
    ((key, _),) = value.value
    assert tree.text[tree.start(key) : tree.end(key)] == "c"
