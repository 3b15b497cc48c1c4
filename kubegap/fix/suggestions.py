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
from kubegap.fix.files import Refused, layout, readable_sources


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
    findings: Sequence[Finding], paths: Sequence[str], engine: Engine
) -> dict[Finding, Suggestion]:
    """The suggestion for each of `findings` that has a safe fix (matched by identity and file)."""
    wanted = {(f.key(), f.message, f.file): f for f in findings}
    out: dict[Finding, Suggestion] = {}
    readable = readable_sources(findings, paths, engine)
    if readable is None:
        return out
    found, scope = readable
    for source in found:
        try:
            parts = layout(source)
        except Refused:
            continue
        newline = "\r\n" if "\r\n" in parts.original else "\n"
        for _, docs in parts.pieces:
            doc = docs[0]
            for finding, patch in patches(doc.text, scope, doc.file, doc.line, docs):
                match = wanted.get((finding.key(), finding.message, finding.file))
                if match is not None and patch.todo is None:
                    changes = tuple(_replacement(doc.text, e, doc.line, newline) for e in patch.edits)
                    out[match] = Suggestion(patch.summary, changes)
    return out
