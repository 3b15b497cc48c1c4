"""Markdown pages read as a reader follows them: their links, their headings' anchors, and the `kubegap`
commands their code shows, checked against the files and the command-line parser that exist.

A page is split into prose and fenced blocks first, so a `# comment` in a shell block is not a heading
and a link inside code is not a link.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from kubegap import cli, completion

FENCE = re.compile(r"^\s*(`{3,}|~{3,})\s*([\w+-]*)")
INLINE_CODE = re.compile(r"(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.S)
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)", re.M)
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$", re.M)
HTML_ANCHOR = re.compile(r"<a\s+(?:id|name)=\"([^\"]+)\"")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
# `kubegap WORD` where a shell would run it: at the start of a line or code span, after a prompt, a
# pipe, `;`, `&&`, `$(`, `-- ` (an agent's `mcp add … -- kubegap mcp`) or a YAML key or list item.
COMMAND = re.compile(
    r"(?:^|(?<=[|;&(])|(?<=\$ )|(?<=-- )|(?<=: )|(?<=^- ))[ \t]*(?:[\w.~-]*/)*"
    r"kubegap[ \t]+([a-z][a-z-]*)(?![\w:.-])(.*)$",
    re.M,
)
FLAG = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)(?:[ =]([a-z][a-z|-]*)\b)?")
OUTPUT_BLOCKS = {"text"}  # what a program printed, not what a person types


@dataclass(frozen=True, slots=True)
class Page:
    path: Path
    prose: str  # the text outside fenced blocks; fenced lines are blanked, so line numbers hold
    blocks: tuple[tuple[str, str], ...]  # (info string, body) of every fenced block


def read(path: Path) -> Page:
    prose: list[str] = []
    blocks: list[tuple[str, str]] = []
    fence: tuple[str, str] | None = None  # (marker, info string) of the open block
    body: list[str] = []
    for line in path.read_text("utf-8").splitlines():
        opened = FENCE.match(line)
        if fence is None and opened:
            fence, body = (opened.group(1), opened.group(2)), []
        elif fence is not None and line.strip().startswith(fence[0]) and not line.strip().strip(fence[0][0]):
            blocks.append((fence[1], "\n".join(body)))
            fence = None
        elif fence is not None:
            body.append(line)
        else:
            prose.append(line)
            continue
        prose.append("")
    return Page(path, "\n".join(prose), tuple(blocks))


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: its text lower-cased, punctuation dropped, spaces made hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link reads as its text
    text = re.sub(r"<[^>]+>", "", text).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


@functools.cache
def anchors(path: Path) -> frozenset[str]:
    page = read(path)
    seen: dict[str, int] = {}
    found = set(HTML_ANCHOR.findall(page.prose))
    for _, text in HEADING.findall(page.prose):
        base = slug(text)
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")  # GitHub numbers repeated headings
    return frozenset(found)


def _without_code(prose: str) -> str:
    return INLINE_CODE.sub(lambda m: " " * len(m.group(0)), prose)


def links(path: Path) -> list[str]:
    """The page's relative link targets (inline and reference links outside code), as written."""
    text = _without_code(read(path).prose)
    return [t for t in [*LINK.findall(text), *REFERENCE.findall(text)] if not SCHEME.match(t)]


def link_problems(path: Path, coming: frozenset[Path] = frozenset()) -> Iterator[str]:
    """Every relative link of the page that names no file, or a heading its target does not have.

    `coming`: files known to be on their way, allowed to be missing (not their anchors, once present).
    """
    for target in links(path):
        file, _, anchor = target.partition("#")
        resolved = (path.parent / file).resolve() if file else path.resolve()
        if not resolved.exists():
            if resolved not in coming:
                yield f"{path.name}: link {target!r}: no file {file}"
            continue
        if anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            yield f"{path.name}: link {target!r}: {resolved.name} has no heading #{anchor}"


@functools.cache
def options() -> Mapping[str, tuple[completion.Option, ...]]:
    """Every subcommand's options, from the parser `kubegap` runs with (as `kubegap --help` shows them)."""
    return {name: tuple(found) for name, found in completion.commands(lambda n: cli._parser([n])).items()}


def _command_text(rest: str) -> str:
    """The command up to where the shell line goes on to something else: a pipe, `;`, `&&`, `$(`, a
    comment.

    A `|` inside `[…]` or between words (`text|json`) is a synopsis's "or", not a pipe.
    """
    depth = 0
    for i, char in enumerate(rest):
        depth += {"[": 1, "]": -1 if depth else 0}.get(char, 0)
        spaced = i == 0 or rest[i - 1].isspace()
        if depth == 0 and (char in ";)`" or rest.startswith(("&&", "$("), i) or (char in "|#" and spaced)):
            return rest[:i]
    return rest


def commands(page: Page) -> Iterator[str]:
    """The `kubegap …` commands the page shows: in fenced blocks (lines continued with `\\` or, in a
    synopsis, by an indented `[`, joined) and in inline code spans."""
    for info, body in page.blocks:
        if info in OUTPUT_BLOCKS:
            continue
        lines: list[str] = []
        for line in body.splitlines():
            if lines and (lines[-1].endswith("\\") or re.match(r"\s+\[", line)):
                lines[-1] = lines[-1].rstrip("\\") + " " + line.strip()
            else:
                lines.append(line)
        yield from (_shown(word, rest) for line in lines for word, rest in COMMAND.findall(line))
    for span in INLINE_CODE.finditer(page.prose):
        spoken = " ".join(span.group(2).split())
        yield from (_shown(word, rest) for word, rest in COMMAND.findall(spoken))


def _shown(word: str, rest: str) -> str:
    return " ".join(["kubegap", word, *_command_text(rest).split()])


def command_problems(command: str) -> list[str]:
    """What in `kubegap WORD …` the parser does not know: the subcommand, a flag, or a flag's value or
    a fixed word (`policies show`) outside its choices."""
    word, _, rest = command.removeprefix("kubegap ").partition(" ")
    if word not in options():
        return [f"`{command}`: no subcommand {word!r}"]
    known = {flag: option for option in options()[word] for flag in option.flags}
    words = {choice for option in options()[word] if not option.flags for choice in option.choices}
    problems = []
    rest = _command_text(rest)
    first = rest.split(maxsplit=1)[0] if rest.strip() else ""
    if words and re.fullmatch(r"[a-z]+", first) and first not in words:
        problems.append(f"`{command}`: {word} takes {', '.join(sorted(words))}, not {first!r}")
    for flag, value in FLAG.findall(rest):
        option = known.get(flag)
        if option is None:
            problems.append(f"`{command}`: kubegap {word} has no {flag}")
            continue
        wrong = [v for v in value.split("|") if v] if option.choices and option.takes_value else []
        wrong = [v for v in wrong if v not in option.choices]
        if wrong:
            problems.append(f"`{command}`: {flag} takes {', '.join(option.choices)}, not {', '.join(wrong)}")
    return problems
