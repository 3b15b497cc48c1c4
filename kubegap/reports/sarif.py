"""`--format sarif`: SARIF 2.1.0 as GitHub code scanning and other SARIF viewers read it.

One reportingDescriptor per policy validation (`policy/rule`), plus one for each engine rule that shows up
(`invalid-declaration`, `exemption-reason`, `invalid-manifest/*`). Failing and errored results are listed;
exempted ones are listed as suppressed (`inSource`, with the reason), so a viewer shows them as dismissed
rather than losing them; passes are only counted, in the run's properties.

Lint results carry a physical location (file, line, column); every result also carries logical locations
(the object, and the field path inside it), so audit results have a place too.

A lint result that `kubegap fix` can settle carries that patch as a SARIF fix (`artifactChanges` with
`replacements` against the file as it is), so a code-scanning UI can offer to apply it.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from kubegap.findings import Finding, Result
from kubegap.policy import Policy
from kubegap.reports import sarifrules
from kubegap.reports.registry import writable
from kubegap.reports.report import Report
from kubegap.reports.sariflog import (
    ArtifactLocation,
    Fix,
    Location,
    Log,
    LogicalLocation,
    Region,
    Replacement,
    ReportingDescriptor,
    Run,
)
from kubegap.reports.sariflog import Result as SarifResult

if TYPE_CHECKING:
    from kubegap.fix.suggestions import Suggestion

SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
TOOL_NAME = "kubegap"
FINGERPRINT = "kubegapFinding/v1"
SOURCE_ROOT = "%SRCROOT%"
STDIN_NAME = "<stdin>"  # the name lint gives to stdin without `# Source:` lines: no file to point at

_WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:/")


def render(report: Report) -> Iterator[str]:
    """The SARIF log of one run: its findings listed, its passes counted.

    `report.base_dir` (the directory the run was started in) turns absolute file names below it into
    relative URIs, which code scanning resolves against the repository root.
    """
    results = [*report.findings, *report.passes]
    fixes = report.fixes() if report.fixes is not None else None
    yield _log(results, report.policies, report.tool_version, report.base_dir, fixes)


def _log(
    results: Sequence[Finding],
    policies: Sequence[Policy],
    tool_version: str,
    base_dir: str | None,
    fixes: Mapping[Finding, Suggestion] | None,
) -> str:
    listed = sorted((f for f in results if f.result is not Result.PASS), key=_order)
    table = sarifrules.RuleTable(policies)
    for finding in listed:
        table.note(finding)
    run: Run = {
        "tool": {
            "driver": {
                "name": TOOL_NAME,
                "version": tool_version,
                "semanticVersion": tool_version,
                "rules": table.descriptors,
            }
        },
        "columnKind": "unicodeCodePoints",
        "results": [_result(f, table.index(f), table.descriptors, base_dir, fixes or {}) for f in listed],
        "properties": {"results": _counts(results)},
    }
    files = {f.file for f in listed if f.file and f.file != STDIN_NAME}
    if base_dir and any(_uri(name, base_dir)[1] for name in files):
        run["originalUriBaseIds"] = {SOURCE_ROOT: {"uri": _directory_uri(base_dir)}}
    log: Log = {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}
    # Compact: the C encoder is ~10x faster than indented output, and SARIF is read by tools, not people.
    text = json.dumps(log, ensure_ascii=False, separators=(",", ":")) + "\n"
    # A lone surrogate (from a JSON escape) cannot be written as UTF-8: shown as U+FFFD.
    return writable(text)


def unlocated(results: Sequence[Finding]) -> int:
    """Listed results with no file to point at (stdin without `# Source:` lines): GitHub code scanning
    rejects a SARIF file whose results lack a physical location, so the CLI warns once."""
    return sum(1 for f in results if f.result is not Result.PASS and (not f.file or f.file == STDIN_NAME))


def _order(f: Finding) -> tuple[Any, ...]:
    ref = f.object
    return (
        f.file or "",
        f.document if f.document is not None else -1,
        f.line or 0,
        f.column or 0,
        ref.kind,
        ref.namespace or "",
        ref.name,
        f.role or "",
        f.container or "",
        f.policy,
        f.rule,
        f.path or "",
    )


def _counts(results: Sequence[Finding]) -> dict[str, int]:
    counted = Counter(f.result.value for f in results)
    return {r.value: counted.get(r.value, 0) for r in Result}


def _result(
    finding: Finding,
    index: int,
    rules: Sequence[ReportingDescriptor],
    base_dir: str | None,
    fixes: Mapping[Finding, Suggestion],
) -> SarifResult:
    result: SarifResult = {
        "ruleId": rules[index]["id"],
        "ruleIndex": index,
        "level": sarifrules.LEVEL[finding.severity],
        "message": {"text": _message(finding)},
        "locations": [_location(finding, base_dir)],
        "partialFingerprints": {FINGERPRINT: fingerprint(finding)},
        "properties": finding.to_json(),
    }
    if finding.result is Result.SKIP:
        result["suppressions"] = [{"kind": "inSource", "justification": _reason(finding)}]
    suggestion = fixes.get(finding)
    if suggestion is not None and _has_file(finding):
        result["fixes"] = [_fix(finding, suggestion, base_dir)]
    return result


def _fix(finding: Finding, suggestion: Suggestion, base_dir: str | None) -> Fix:
    assert finding.file is not None
    uri, relative = _uri(finding.file, base_dir)
    artifact: ArtifactLocation = {"uri": uri}
    if relative:
        artifact["uriBaseId"] = SOURCE_ROOT
    replacements: list[Replacement] = [
        {
            "deletedRegion": {
                "startLine": r.start_line,
                "startColumn": r.start_column,
                "endLine": r.end_line,
                "endColumn": r.end_column,
            },
            "insertedContent": {"text": r.text},
        }
        for r in suggestion.replacements
    ]
    return {
        "description": {"text": f"kubegap fix: {suggestion.description}"},
        "artifactChanges": [{"artifactLocation": artifact, "replacements": replacements}],
    }


def fingerprint(finding: Finding) -> str:
    """Stable across runs and line moves: the finding's identity (`Finding.key()`) and its file, if any.

    The file counts because two files may hold objects of the same name (overlays, environments): each is
    a separate thing to fix.
    """
    identity = [*finding.key(), finding.file]
    return hashlib.sha256(json.dumps(identity, ensure_ascii=False).encode("utf-8", "replace")).hexdigest()


def _message(finding: Finding) -> str:
    text = finding.message or f"{finding.policy}/{finding.rule} failed"
    if finding.result is Result.ERROR:
        text = f"evaluation error: {text}"
    subject = finding.subject()
    return f"{text} [{subject}]" if subject else text


def _reason(finding: Finding) -> str:
    # The engine reports an exemption as "exempted: <reason>"; the justification is the reason alone.
    prefix = "exempted: "
    return finding.message.removeprefix(prefix) if finding.message.startswith(prefix) else finding.message


def _has_file(finding: Finding) -> bool:
    return bool(finding.file) and finding.file != STDIN_NAME


def _location(finding: Finding, base_dir: str | None) -> Location:
    location: Location = {}
    if _has_file(finding):
        assert finding.file is not None
        uri, relative = _uri(finding.file, base_dir)
        artifact: ArtifactLocation = {"uri": uri}
        if relative:
            artifact["uriBaseId"] = SOURCE_ROOT
        # A file-level finding (an unreadable file) points at the top of the file.
        region: Region = {"startLine": finding.line if finding.line and finding.line > 0 else 1}
        if finding.line and finding.column and finding.column > 0:
            region["startColumn"] = finding.column
        location["physicalLocation"] = {"artifactLocation": artifact, "region": region}
    logical = _logical_locations(finding)
    if logical:
        location["logicalLocations"] = logical
    return location


def _logical_locations(finding: Finding) -> list[LogicalLocation]:
    ref = finding.object
    if not ref.kind:  # an unreadable document names no object
        return []
    where = {"role": finding.role, "container": finding.container}
    out: list[LogicalLocation] = [
        {
            "name": ref.name,
            "fullyQualifiedName": ref.display(),
            "kind": "resource",
            "properties": {**ref.to_json(), **{k: v for k, v in where.items() if v}},
        }
    ]
    if finding.path:
        out.append(
            {
                "name": finding.path,
                "fullyQualifiedName": f"{ref.display()}:{finding.path}",
                "kind": "property",
            }
        )
    return out


def _uri(file: str, base_dir: str | None) -> tuple[str, bool]:
    """(URI, is relative): relative to `base_dir` when the file lies below it, else as given."""
    path = file.replace("\\", "/")
    if posixpath.isabs(path) or _WINDOWS_DRIVE.match(path):
        below = _below(path, base_dir)
        if below is None:
            return _absolute_uri(path), False
        path = below
    path = posixpath.normpath(path)
    return quote(path, safe="/"), True


def _below(path: str, base_dir: str | None) -> str | None:
    if not base_dir:
        return None
    base = posixpath.normpath(base_dir.replace("\\", "/")).rstrip("/") + "/"
    normalized = posixpath.normpath(path)
    return normalized[len(base) :] if normalized.startswith(base) else None


def _absolute_uri(path: str) -> str:
    path = posixpath.normpath(path)
    return "file://" + ("/" if _WINDOWS_DRIVE.match(path) else "") + quote(path, safe="/:")


def _directory_uri(base_dir: str) -> str:
    return _absolute_uri(base_dir.replace("\\", "/")).rstrip("/") + "/"
