"""Edits inside one command-line element, most often the script of `bash -c "…"`.

The element's source text is searched, not its parsed value, so that the edit lands in the file as the
author wrote it, and an edit never adds or removes a line break. In a literal (`|`) script a line break
ends a statement; in a folded (`>`) or multi-line flow scalar YAML joins lines with a space, so there only
a blank line does, and a statement is not removed from such a script (`Unsafe`).
"""

from __future__ import annotations

import bisect
import re

from yaml.nodes import ScalarNode

from kubegap.fieldpath import FieldPath
from kubegap.fix.edits import Edit
from kubegap.fix.nodes import Tree, Unsafe

_VALUE = r"""(?:"[^"\n]*"|'[^'\n]*'|[^\s;&|()"'\\]+)"""
_BOUNDARY_BEFORE = r"""(?<![^\s"'=;&|(])"""
_STATEMENT_START = r"""(?:^|(?<=[;&|(]))[ \t]*"""
_SHELL_MARK = re.compile("['\"#\n]")  # where the shell's reading of a script can change


def _span(tree: Tree, path: FieldPath) -> tuple[int, int, bool]:
    """Offsets of the element's content in the text (inside the quotes or below the block indicator),
    and whether YAML joins its lines."""
    node = tree.node(path)
    if not isinstance(node, ScalarNode):
        raise Unsafe("the command-line element is not a scalar")
    start, end = tree.start(node), tree.content_end(node)
    if node.style in ("|", ">"):
        return tree.next_line(start), end, node.style == ">"
    joined = "\n" in tree.text[start:end]
    if node.style in ('"', "'"):
        return start + 1, end - 1, joined
    return start, end, joined


def _statement_end(text: str, pos: int, end: int, joined: bool) -> int:
    """Where the shell statement that contains `pos` ends (before `;`, `&`, `|`, `)`, a comment, or a
    line break that is not continued; in joined lines only a blank line breaks), trailing blanks
    excluded."""
    quote = ""
    while pos < end:
        char = text[pos]
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "\\" and text[pos + 1 : pos + 2] == "\n":
            pos += 1
        elif char == "\n" and joined and text[pos + 1 : text.find("\n", pos + 1)].strip():
            pass
        elif char in ";&|)\n" or (char == "#" and not joined and text[pos - 1] in " \t"):
            break
        pos += 1
    while pos > 0 and text[pos - 1] in " \t":
        pos -= 1
    return pos


def _not_code(text: str, start: int, end: int, joined: bool) -> list[tuple[int, int]]:
    """The spans of text[start:end] the shell does not read as code, in order: quoted (from the opening
    quote to the closing one) and comments (to the line break, or the end where YAML joins the lines), so
    that a launcher's name inside `echo "…"` or after `#` is not taken for the launcher. Found by jumping
    from one quote, `#` or line break to the next: a walk over every character was nearly half of planning
    a script's fix."""
    spans: list[tuple[int, int]] = []
    pos = start
    while (found := _SHELL_MARK.search(text, pos, end)) is not None:
        at = pos = found.start()
        char = text[at]
        if char == "#" and (at == start or text[at - 1] in " \t\n"):
            stop = end if joined else text.find("\n", at, end)
            pos = stop = end if stop < 0 else stop  # the line break itself is code
        elif char in "'\"":
            close = text.find(char, at + 1, end)
            stop = end if close < 0 else close  # the closing quote is code again
            pos = stop + 1
        else:
            pos += 1
            continue
        spans.append((at, stop))
    return spans


def _is_code(spans: list[tuple[int, int]], pos: int) -> bool:
    """Whether `pos` lies outside the spans `_not_code` found."""
    index = bisect.bisect_right(spans, pos, key=lambda span: span[0]) - 1
    return index < 0 or pos >= spans[index][1]


def _code_matches(
    pattern: re.Pattern[str], text: str, start: int, end: int, joined: bool
) -> list[re.Match[str]]:
    spans = _not_code(text, start, end, joined)
    return [m for m in pattern.finditer(text, start, end) if m.end() <= end and _is_code(spans, m.start())]


def append_to_statement(tree: Tree, path: FieldPath, word: str, addition: str) -> Edit:
    """Add ` addition` at the end of the statement in which `word` (the launcher or trainer) appears;
    Unsafe unless the script runs it exactly once."""
    start, end, joined = _span(tree, path)
    pattern = re.compile(_BOUNDARY_BEFORE + r"(?:\S*/)?" + re.escape(word) + r"(?=[\s;&|)\"']|\Z)")
    matches = _code_matches(pattern, tree.text, start, end, joined)
    if len(matches) != 1:
        raise Unsafe(f"{word} appears {len(matches)} times in the script, not once")
    at = _statement_end(tree.text, matches[0].end(), end, joined)
    return Edit(at, at, " " + addition)


def replace_value(tree: Tree, path: FieldPath, flag: str, value: str) -> Edit:
    """Replace the value of the last `flag value` / `flag=value` / `key=value` written in the element."""
    start, end, joined = _span(tree, path)
    pattern = re.compile(
        _BOUNDARY_BEFORE + re.escape(flag) + r"(?:=|[ \t]+|[ \t]*\\\n[ \t]*)(" + _VALUE + r")"
    )
    matches = _code_matches(pattern, tree.text, start, end, joined)
    if not matches:
        raise Unsafe(f"{flag} is not written plainly in the script")
    found = matches[-1]
    return Edit(found.start(1), found.end(1), value)


def remove_assignment(tree: Tree, path: FieldPath, name: str, how: str) -> Edit:
    """Remove `export NAME=VALUE`, a leading `NAME=VALUE ` or mpirun's `-x NAME=VALUE` from a script."""
    start, end, joined = _span(tree, path)
    if joined:
        raise Unsafe("removing a statement from a script whose lines YAML joins")
    assignment = re.escape(name) + "=" + _VALUE + "?"
    if how == "export":
        pattern = _STATEMENT_START + r"export[ \t]+" + assignment + r"[ \t]*(?:;|&&)?[ \t]*"
    elif how == "prefix":
        pattern = _STATEMENT_START + assignment + r"[ \t]+"
    elif how == "mpirun -x":
        pattern = r"[ \t]+-x[ \t]+" + assignment + r"(?=[\s;&|)\"']|\Z)"
    else:
        raise Unsafe(f"a variable set by {how}")
    script = tree.text[start:end]
    spans = _not_code(script, 0, len(script), joined)
    found = [m for m in re.finditer(pattern, script, re.M) if _is_code(spans, m.start())]
    if len(found) != 1:
        raise Unsafe(f"{name} is set {len(found)} times in the script, not once")
    begin, stop = start + found[0].start(), start + found[0].end()
    line_begin, line_end = tree.line_start(begin), tree.next_line(stop)
    alone = tree.text[line_begin:begin].strip() == "" and tree.text[stop:line_end].strip() == ""
    if how == "export" and alone and line_begin >= start:  # the whole line of a block script: drop it
        return Edit(line_begin, line_end, "")
    return Edit(begin, stop, "")
