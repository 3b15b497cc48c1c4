"""Each finding's patch as replacements in the file as it is, for reports that offer fixes one finding at a
time (SARIF `fixes`): the same planner and the same engine check as `kubegap fix`, but every patch is
computed against the unchanged file, so each can be applied alone. Made in lint's runs
(kubegap.fix.reports)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kubegap.findings import Finding
from kubegap.fix.checked import Scope, patches
from kubegap.fix.edits import Edit
from kubegap.fix.files import Layout, Source, own_findings


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


Match = tuple[tuple[str | int | None, ...], str, str | None]
Suggested = tuple[Match, Suggestion]  # a suggestion, by what identifies its finding


def _position(text: str, offset: int, first_line: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset)
    return first_line + line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def _replacement(text: str, edit: Edit, first_line: int, newline: str) -> Replacement:
    start, end = _position(text, edit.start, first_line), _position(text, edit.end, first_line)
    return Replacement(*start, *end, edit.text.replace("\n", newline))


def suggest(parts: Layout, source: Source, scope: Scope, linted: Sequence[Finding]) -> list[Suggested]:
    """Each of a file's findings that has a safe fix, by what identifies it, with its suggestion
    (`linted`: lint's findings of the file, so that its documents are not evaluated again)."""
    newline = "\r\n" if "\r\n" in parts.original else "\n"
    out = []
    for _, docs in parts.pieces:
        doc, own = docs[0], own_findings(linted, docs, source)
        for finding, patch in patches(docs, scope, own):
            if patch.todo is None:
                changes = tuple(_replacement(doc.text, e, doc.line, newline) for e in patch.edits)
                out.append((_match(finding), Suggestion(patch.summary, changes)))
    return out


def by_finding(findings: Sequence[Finding], suggested: Sequence[Suggested]) -> dict[Finding, Suggestion]:
    """The suggestions of lint's runs for `findings`, matched by identity and file: a finding a chart
    folder renamed (kubegap.charts) names a template, not the file its fix was made in, and has none."""
    wanted = {_match(f): f for f in findings}
    return {wanted[key]: made for key, made in suggested if key in wanted}


def _match(finding: Finding) -> Match:
    return (finding.key(), finding.message, finding.file)
