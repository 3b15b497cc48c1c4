"""A container's command line as the trainer sees it: argv tokens, script-level env and mpirun `-x`.

`command` + `args` are read as given; an argument of `sh -c` / `bash -c` (and `-lc`, `-ec`, …) is a script
and is split with shell rules too, so `bash -c "torchrun … --save-interval 500"` reveals its flags. Every
token remembers which `command[i]`/`args[i]` element it came from, so a finding can point at that element.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from kubegap.fieldpath import FieldPath

_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ash", "ksh"})
_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=(.*)\Z", re.S)
_OVERRIDE = re.compile(r"[+~]{0,2}([A-Za-z_][\w.\-/]*)=(.*)\Z", re.S)
_SEPARATORS = frozenset({";", "&&", "||", "|", "&", "(", ")", ";;", "\n"})
_MPI_LAUNCHERS = frozenset({"mpirun", "mpiexec", "orterun", "prterun"})


@dataclass(frozen=True, slots=True)
class Token:
    text: str
    path: FieldPath  # the command/args element the token came from


@dataclass(frozen=True, slots=True)
class Assignment:
    name: str
    value: str | None  # None: `mpirun -x NAME` forwards the launcher's own value
    path: FieldPath
    how: str  # "export", "prefix" or "mpirun -x"


@dataclass(frozen=True, slots=True)
class CommandLine:
    tokens: tuple[Token, ...]  # every word, scripts expanded, in order
    env: tuple[Assignment, ...] = field(default=())  # export / NAME=VALUE cmd, in order
    forwarded: tuple[Assignment, ...] = field(default=())  # mpirun -x, in order


def _is_shell(word: str) -> bool:
    return word.rsplit("/", 1)[-1] in _SHELLS


def _is_script_flag(word: str) -> bool:
    return word.startswith("-") and not word.startswith("--") and "c" in word[1:]


def _shell_words(script: str) -> list[str]:
    words: list[str] = []
    try:
        for line in script.splitlines() or [script]:
            lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|()")
            lexer.whitespace_split = True
            words.extend(lexer)
            words.append("\n")
    except ValueError:  # unbalanced quotes: fall back to whitespace splitting rather than losing the script
        return script.split()
    return words


def _raw_words(command: Sequence[object], args: Sequence[object]) -> Iterator[tuple[str, FieldPath]]:
    for key, items in (("command", command), ("args", args)):
        for index, item in enumerate(items):
            if isinstance(item, str | int | float) and not isinstance(item, bool):
                yield str(item), (key, index)


def tokenize(container: Mapping[str, object]) -> CommandLine:
    command = container.get("command")
    args = container.get("args")
    words = list(
        _raw_words(command if isinstance(command, list) else [], args if isinstance(args, list) else [])
    )
    tokens: list[Token] = []
    scripts: list[tuple[list[str], FieldPath]] = []
    script_next = False
    for position, (word, path) in enumerate(words):
        if script_next:
            script_words = _shell_words(word)
            scripts.append((script_words, path))
            tokens.extend(Token(w, path) for w in script_words if w not in _SEPARATORS)
            script_next = False
            continue
        tokens.append(Token(word, path))
        previous = words[position - 1][0] if position else ""
        if _is_script_flag(word) and (_is_shell(previous) or _is_script_flag(previous)):
            script_next = True
    env: list[Assignment] = []
    for script_words, path in scripts:
        env.extend(_script_assignments(script_words, path))
    return CommandLine(tuple(tokens), tuple(env), tuple(_mpirun_forwards(tokens)))


def _script_assignments(words: list[str], path: FieldPath) -> Iterator[Assignment]:
    at_start = True
    exporting = False
    for word in words:
        if word in _SEPARATORS:
            at_start, exporting = True, False
            continue
        match = _ASSIGNMENT.match(word)
        if exporting and match:
            yield Assignment(match.group(1), match.group(2), path, "export")
        elif at_start and word == "export":
            exporting = True
        elif at_start and match:
            yield Assignment(match.group(1), match.group(2), path, "prefix")
        else:
            at_start = exporting and word.startswith("-")  # `export -n`: keep reading names
            if not exporting:
                at_start = False


def _mpirun_forwards(tokens: Sequence[Token]) -> Iterator[Assignment]:
    in_mpirun = False
    for index, token in enumerate(tokens):
        base = token.text.rsplit("/", 1)[-1]
        if base in _MPI_LAUNCHERS:
            in_mpirun = True
        elif in_mpirun and token.text == "-x" and index + 1 < len(tokens):
            spec = tokens[index + 1].text
            name, sep, value = spec.partition("=")
            if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                yield Assignment(name, value if sep else None, token.path, "mpirun -x")


def flag_values(tokens: Sequence[Token], names: frozenset[str]) -> Iterator[tuple[str, str | None, Token]]:
    """(flag, value, token) for `--flag value` and `--flag=value`; value None when the flag has none."""
    for index, token in enumerate(tokens):
        text = token.text
        if not text.startswith("-"):
            continue
        name, sep, value = text.partition("=")
        if name not in names:
            continue
        if sep:
            yield name, value, token
        elif index + 1 < len(tokens) and not tokens[index + 1].text.startswith("--"):
            yield name, tokens[index + 1].text, token
        else:
            yield name, None, token


def overrides(tokens: Sequence[Token]) -> Iterator[tuple[str, str, Token]]:
    """(key, value, token) for Hydra-style overrides: `a.b.c=10`, `+x=1`, `checkpoint_period=5`."""
    for token in tokens:
        if token.text.startswith("-"):
            continue
        match = _OVERRIDE.match(token.text)
        if match:
            yield match.group(1), match.group(2), token
