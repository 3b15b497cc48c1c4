"""Each finding's patch as replacements in the file as it is, for reports that offer fixes one finding at a
time (SARIF `fixes`): the same planner and the same engine check as `kubegap fix`, but every patch is
computed against the unchanged file, so each can be applied alone."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kubegap.evaluate import Engine
from kubegap.findings import Finding
from kubegap.fix.checked import patches
from kubegap.fix.edits import Edit
from kubegap.fix.files import Refused, by_file, layout, own_findings, readable_sources
from kubegap.forked import each_file


@dataclass(frozen=True, slots=True)
class Replacement:
    start_line: int  # 1-based, in the file
    start_column: int  # 1-based, in characters
    end_line: int
    end_column: int
    text: str  # what replaces the region (empty: a deletion; an empty region: an insertion)


@dataclass(frozen=True, slots=True)
class Suggestion:
    description: str
    replacements: tuple[Replacement, ...]


def _position(text: str, offset: int, first_line: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset)
    return first_line + line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def _replacement(text: str, edit: Edit, first_line: int, newline: str) -> Replacement:
    start, end = _position(text, edit.start, first_line), _position(text, edit.end, first_line)
    return Replacement(*start, *end, edit.text.replace("\n", newline))


def suggestions(
    findings: Sequence[Finding], paths: Sequence[str], engine: Engine, jobs: int = 1
) -> dict[Finding, Suggestion]:
    """The suggestion for each of `findings` that has a safe fix (matched by identity and file); files are
    worked on in `jobs` worker processes when there are many, as lint does."""
    wanted = {_match(f): f for f in findings}
    readable = readable_sources(findings, paths, engine)
    if readable is None:
        return {}
    found, scope = readable
    linted = by_file(findings)  # lint's findings of each file: its documents need not be evaluated again

    def suggest(index: int) -> list[tuple[Match, Suggestion]]:
        """One file's suggestions, by what identifies their findings."""
        source = found[index]
        try:
            parts = layout(source)
        except Refused:
            return []
        newline = "\r\n" if "\r\n" in parts.original else "\n"
        out = []
        for _, docs in parts.pieces:
            doc, own = docs[0], own_findings(linted.get(source.name), docs, source)
            for finding, patch in patches(docs, scope, own):
                if patch.todo is None and _match(finding) in wanted:
                    changes = tuple(_replacement(doc.text, e, doc.line, newline) for e in patch.edits)
                    out.append((_match(finding), Suggestion(patch.summary, changes)))
        return out

    return {wanted[key]: made for part in each_file(suggest, len(found), jobs) for key, made in part}


Match = tuple[tuple[str | int | None, ...], str, str | None]


def _match(finding: Finding) -> Match:
    return (finding.key(), finding.message, finding.file)
