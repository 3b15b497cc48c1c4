"""A container's command line as the trainer sees it: argv tokens, script-level env and mpirun `-x`.

`command` + `args` are read as given; an argument of `sh -c` / `bash -c` (and `-lc`, `-ec`, …) is a script
and is split with shell rules too, so `bash -c "torchrun … --save-interval 500"` reveals its flags. Every
token remembers which `command[i]`/`args[i]` element it came from, so a finding can point at that element.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from kubegap import raw
from kubegap.facts import shell
from kubegap.fieldpath import FieldPath

_SHELLS: Final = frozenset({"sh", "bash", "dash", "zsh", "ash", "ksh"})
_ASSIGNMENT: Final = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=(.*)\Z", re.S)
_OVERRIDE: Final = re.compile(r"[+~]{0,2}([A-Za-z_][\w.\-/]*)=(.*)\Z", re.S)
_SEPARATORS: Final = frozenset({";", "&&", "||", "|", "&", "(", ")", ";;", "\n"})
_MPI_LAUNCHERS: Final = frozenset({"mpirun", "mpiexec", "orterun", "prterun"})
_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


@dataclass(slots=True, unsafe_hash=True, init=False)
class Token:
    text: str
    path: FieldPath  # the command/args element the token came from

    # written out, for mypyc to compile (kubegap.records)
    def __init__(self, text: str, path: FieldPath) -> None:
        self.text, self.path = text, path


@dataclass(slots=True, unsafe_hash=True)
class Assignment:
    name: str
    value: str | None  # None: `mpirun -x NAME` forwards the launcher's own value
    path: FieldPath
    how: str  # "export", "prefix" or "mpirun -x"
    position: int = 0  # index in CommandLine.tokens: `-x NAME` sees only what was exported before it


@dataclass(slots=True, unsafe_hash=True, init=False)
class CommandLine:
    tokens: tuple[Token, ...]  # every word, scripts expanded, in order
    env: tuple[Assignment, ...]  # export / NAME=VALUE cmd, in order
    forwarded: tuple[Assignment, ...]  # mpirun -x, in order
    # Indexed once: every knob lookup reads these instead of rescanning the tokens.
    flags: Mapping[str, tuple[tuple[int, str | None], ...]]  # flag -> (pos, value)
    overrides: tuple[tuple[str, str, Token], ...]
    launches_mpi: bool  # mpirun/mpiexec starts the ranks: its flags are the ranks' flags too
    sourced: tuple[str, ...]  # files a script reads with `source FILE` or `. FILE`: unseen variables

    # written out, for mypyc to compile (kubegap.records)
    def __init__(
        self,
        tokens: tuple[Token, ...],
        env: tuple[Assignment, ...] = (),
        forwarded: tuple[Assignment, ...] = (),
        flags: Mapping[str, tuple[tuple[int, str | None], ...]] | None = None,
        overrides: tuple[tuple[str, str, Token], ...] = (),
        launches_mpi: bool = False,
        sourced: tuple[str, ...] = (),
    ) -> None:
        self.tokens, self.env, self.forwarded = tokens, env, forwarded
        self.flags = {} if flags is None else flags
        self.overrides, self.launches_mpi, self.sourced = overrides, launches_mpi, sourced

    def flag_values(self, names: frozenset[str]) -> list[tuple[str, str | None, Token]]:
        """(flag, value, token) of the named flags, in command-line order."""
        flags = self.flags  # a knob names one to three flags, and most are absent: look each up
        found = [(pos, name, value) for name in names if name in flags for pos, value in flags[name]]
        if len(found) > 1:
            found.sort(key=lambda f: f[0])
        return [(name, value, self.tokens[pos]) for pos, name, value in found]


def program(word: str) -> str:
    """The word's last path component: /usr/bin/sleep is sleep. Most words hold no slash: those are
    answered without a method call, which compiled code looks up by name each time."""
    return word.rsplit("/", 1)[-1] if "/" in word else word


def is_shell(word: str) -> bool:
    return program(word) in _SHELLS


def _is_script_flag(word: str) -> bool:
    return word.startswith("-") and not word.startswith("--") and "c" in word[1:]


def _opens_script(words: Sequence[tuple[str, FieldPath]], position: int) -> bool:
    """`-c` (or `-lc`, `-ec`, …) among a shell's options: `bash -c`, `sh -xc`, `bash --login -e -c`."""
    if not _is_script_flag(words[position][0]):
        return False
    for previous, _ in reversed(words[:position]):
        if not previous.startswith("-"):
            return is_shell(previous)
    return False


def _raw_words(command: Sequence[object], args: Sequence[object]) -> list[tuple[str, FieldPath]]:
    """The words that are text or numbers, as the container runs them, each with its place."""
    words: list[tuple[str, FieldPath]] = []
    for key, items in (("command", command), ("args", args)):
        for index, item in enumerate(items):
            if type(item) is str:  # most words: told exactly, before the tests a number needs
                words.append((item, (key, index)))
            elif isinstance(item, (str, int, float)) and not isinstance(item, bool):
                words.append((str(item), (key, index)))
    return words


def tokenize(container: Mapping[str, object]) -> CommandLine:
    command = container.get("command")
    args = container.get("args")
    words = tuple(_raw_words(raw.items(command), raw.items(args)))
    if sum([len(text) for text, _ in words]) > _KEPT_TEXT:
        return _parse.__wrapped__(words)  # a long script is read each time, not kept
    return _parse(words)


# Keyed by content: the pods of one job, and the jobs of one team, share their command lines, so an audit
# tokenises each distinct command once. Bounded in entries, and in each entry's text (4,096 characters:
# the scripts a webhook is sent may be megabytes long), so memory stays flat; a CommandLine is immutable
# to its readers (its flag index is a read-only view, its tokens records), so sharing one is safe.
_KEPT_TEXT: Final = 4096


@functools.lru_cache(maxsize=2048)
def _parse(words: tuple[tuple[str, FieldPath], ...]) -> CommandLine:
    tokens: list[Token] = []
    scripts: list[tuple[list[str], FieldPath, int]] = []
    script_next = False
    for position, (word, path) in enumerate(words):
        if script_next:
            script_words = shell.words(word)
            scripts.append((script_words, path, len(tokens)))
            for each in script_words:  # a loop: a compiled generator costs more than its few words
                if each not in _SEPARATORS:
                    tokens.append(Token(each, path))
            script_next = False
            continue
        tokens.append(Token(word, path))
        script_next = _opens_script(words, position)
    env: list[Assignment] = []
    sourced: list[str] = []
    for script_words, path, first in scripts:
        env.extend(_script_assignments(script_words, path, first))
        sourced.extend(_sourced(script_words))
    index: dict[str, list[tuple[int, str | None]]] = {}
    for position, flag, value in _flags(tokens):
        index.setdefault(flag, []).append((position, value))
    launches_mpi = any(program(t.text) in _MPI_LAUNCHERS for t in tokens)
    return CommandLine(
        tuple(tokens),
        tuple(env),
        tuple(_mpirun_forwards(tokens)) if launches_mpi else (),
        MappingProxyType({k: tuple(v) for k, v in index.items()}),
        tuple(_overrides(tokens)),
        launches_mpi,
        tuple(sourced),
    )


def _sourced(words: list[str]) -> list[str]:
    """Files a script reads into its own shell (GKE's `source /usr/local/gib/scripts/set_nccl_env.sh`)."""
    found: list[str] = []
    at_start = True
    for index, word in enumerate(words):
        if word in _SEPARATORS:
            at_start = True
            continue
        if at_start and word in (".", "source") and index + 1 < len(words):
            following = words[index + 1]
            if following not in _SEPARATORS:
                found.append(following)
        at_start = False
    return found


def _script_assignments(words: list[str], path: FieldPath, first: int) -> list[Assignment]:
    """Assignments of one script whose first word is token `first`."""
    found: list[Assignment] = []
    at_start = True
    exporting = False
    position = first - 1
    for word in words:
        if word in _SEPARATORS:
            at_start, exporting = True, False
            continue
        position += 1
        match = _ASSIGNMENT.match(word) if "=" in word else None  # most words: no expression needed
        if exporting and match:
            found.append(Assignment(match.group(1), match.group(2), path, "export", position))
        elif at_start and word == "export":
            exporting = True
        elif at_start and match:
            found.append(Assignment(match.group(1), match.group(2), path, "prefix", position))
        elif not exporting:
            at_start = False
    return found


# mpirun options that take two arguments; every other option takes one unless it is a known switch.
_MPI_TWO_ARGS: Final = frozenset({"--mca", "-mca", "--gmca", "-gmca"})
_MPI_SWITCHES: Final = frozenset(
    {
        "--allow-run-as-root",
        "--oversubscribe",
        "-oversubscribe",
        "--report-bindings",
        "-report-bindings",
        "--tag-output",
        "-tag-output",
        "--timestamp-output",
        "-q",
        "--quiet",
        "-v",
        "--verbose",
        "-display-map",
        "--display-map",
        "--display-allocation",
        "-nooversubscribe",
        "--nooversubscribe",
        "-prefix-output",
    }
)


# The readers of the words (the three below, `_sourced` and `_script_assignments`) return lists: a compiled
# generator costs more than the few items it yields (a script's two were a tenth of its reading, measured).


def _mpirun_forwards(tokens: Sequence[Token]) -> list[Assignment]:
    """`-x` options of mpirun/mpiexec, up to the program it starts (a later `-x` is the program's)."""
    found: list[Assignment] = []
    index = 0
    while index < len(tokens):
        if program(tokens[index].text) not in _MPI_LAUNCHERS:
            index += 1
            continue
        index += 1
        while index < len(tokens) and tokens[index].text.startswith("-"):
            option = tokens[index].text
            if option == "-x" and index + 1 < len(tokens):
                name, sep, value = tokens[index + 1].text.partition("=")
                if _NAME.match(name):
                    found.append(
                        Assignment(name, value if sep else None, tokens[index].path, "mpirun -x", index)
                    )
            arity = 0 if option in _MPI_SWITCHES or "=" in option else 2 if option in _MPI_TWO_ARGS else 1
            index += 1 + arity
    return found


def _flags(tokens: Sequence[Token]) -> list[tuple[int, str, str | None]]:
    """(position, flag, value) for `--flag value` and `--flag=value`; value None when the flag has none."""
    found: list[tuple[int, str, str | None]] = []
    for index, token in enumerate(tokens):
        text = token.text
        if not text.startswith("-") or text in ("-", "--"):
            continue
        name, sep, value = text.partition("=")
        if sep:
            found.append((index, name, value))
        elif index + 1 < len(tokens) and not tokens[index + 1].text.startswith("--"):
            found.append((index, name, tokens[index + 1].text))
        else:
            found.append((index, name, None))
    return found


def _overrides(tokens: Sequence[Token]) -> list[tuple[str, str, Token]]:
    """(key, value, token) for Hydra-style overrides: `a.b.c=10`, `+x=1`, `checkpoint_period=5`."""
    found: list[tuple[str, str, Token]] = []
    for token in tokens:
        if token.text.startswith("-") or "=" not in token.text:  # most words: no expression needed
            continue
        match = _OVERRIDE.match(token.text)
        if match:
            found.append((match.group(1), match.group(2), token))
    return found
