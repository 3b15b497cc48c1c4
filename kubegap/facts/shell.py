"""Shell word splitting for the scripts of `sh -c` / `bash -c`: quoting, operators, comments, and command
substitutions kept whole, as the shell reads them."""

from __future__ import annotations

import re
from typing import Final

_SPACE: Final = re.compile(r"(?:[ \t\r]|\\\n)+")  # a backslash-newline joins lines: it separates words
_OPERATOR: Final = re.compile(r"&&|\|\||;;|[;&|()]")
# a plain piece stops before `$(` and a backquote, where a command substitution starts (see _substitution)
# A piece ends only at the blanks that separate words (other blanks, such as a vertical tab or a no-break
# space, are part of a word to the shell), and a backslash that ends the script stands for itself.
# Not Final, which compiled code would read as a constant: tests/test_shell.py replaces it with a pattern
# that matches nothing, to show the scanner still ends.
_PIECE = re.compile(r"""'([^']*)'|"((?:[^"\\]|\\.)*)"|\\(.|$)|((?:[^ \t\r\n'"\\;&|()$`]|\$(?!\())+)""", re.S)
_DQ_ESCAPE: Final = re.compile(r"""\\([\\"$`])""")
# What makes a script more than blank-separated words: a quote, an escape, a substitution, a comment or
# an operator, a line break, or any character that is not printable ASCII (`str.split` also splits at
# other blanks, which the shell does not). One class of what may stay, printable ASCII but ' " \ ` # ; &
# | ( ): the same characters as that list's alternation, searched four times faster (1.5 against 0.35 µs
# for a launch line; tests/test_shell.py checks the class on every code point).
_NOT_PLAIN: Final = re.compile(r"""[^ \t\r!$%*-:<-\[\]-_a-{}~]""")


def words(script: str) -> list[str]:
    """Split a shell script into words and operators (newlines kept as "\\n"), with shell quoting.

    A regular-expression scanner rather than `shlex`: it runs on every container of every object, and
    shlex reads one character at a time. On unbalanced quotes it falls back to whitespace splitting
    rather than losing the script. A script of plain words (most launch lines: `torchrun --nnodes 4
    train.py ...`) is split in C, into the same words (tests/test_properties.py): 3 µs against 50 µs for
    a 130-character launch line (measured).
    """
    if _NOT_PLAIN.search(script) is None:
        return script.split()
    return scanned(script)


def scanned(script: str) -> list[str]:
    """`words`, read with the full scanner whatever the script holds."""
    words: list[str] = []
    pos, end = 0, len(script)
    while pos < end:
        space = _SPACE.match(script, pos)
        if space:
            pos = space.end()
            continue
        char = script[pos]
        if char == "\n":
            words.append("\n")
            pos += 1
        elif char == "#":
            newline = script.find("\n", pos)
            pos = end if newline < 0 else newline
        elif operator := _OPERATOR.match(script, pos):
            words.append(operator.group())
            pos = operator.end()
        else:
            start = pos
            word, pos = _word(script, pos)
            if word is None or pos == start:  # unbalanced; or nothing read, which must not loop forever
                return script.split()
            words.append(word)
    return words


def _substitution(script: str, pos: int) -> int | None:
    """The end of a `$(…)`, `$((…))` or backquoted substitution starting at `pos`; None if there is none
    or it never closes. It is one word to the shell: its spaces and parentheses separate nothing."""
    if script.startswith("`", pos):
        close = script.find("`", pos + 1)
        return None if close < 0 else close + 1
    if not script.startswith("$(", pos):
        return None
    depth, index, quote = 0, pos + 1, ""
    while index < len(script):
        char = script[index]
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return index + 1
        index += 1
    return None


def _word(script: str, pos: int) -> tuple[str | None, int]:
    parts: list[str] = []
    while pos < len(script):
        end = _substitution(script, pos)
        if end is not None:
            parts.append(script[pos:end])
            pos = end
            continue
        piece = _PIECE.match(script, pos)
        if piece is None:
            if script[pos] in "'\"`" or script.startswith("$(", pos):  # unbalanced quote or substitution
                return None, pos
            break
        single, double, escaped, plain = piece.groups()
        if single is not None:
            parts.append(single)
        elif double is not None:
            parts.append(_DQ_ESCAPE.sub(r"\1", double))
        elif escaped is not None:
            parts.append("" if escaped == "\n" else escaped or "\\")
        else:
            parts.append(plain)
        pos = piece.end()
    return "".join(parts), pos
