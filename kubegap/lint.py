"""`kubegap lint`: manifests in, findings with file:line:col out.

ConfigMaps in the same input are read first, so `configMapKeyRef` and `envFrom` resolve as they would in
the cluster. Positions are computed only for documents that have findings.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

from kubegap import fieldpath, manifests
from kubegap.evaluate import Context, Engine
from kubegap.findings import Finding, ObjectRef, Result, Severity, Summary

INVALID_MANIFEST = "invalid-manifest"


@dataclass(slots=True)
class LintReport:
    findings: list[Finding] = field(default_factory=list)  # fail, error and skip results
    summary: Summary = field(default_factory=Summary)
    unreadable: int = 0  # documents reported as invalid-manifest


def configmaps_of(documents: Iterable[manifests.Document]) -> dict[tuple[str, str], dict[str, str]]:
    out: dict[tuple[str, str], dict[str, str]] = {}
    for doc in documents:
        obj = doc.obj
        if obj is None or obj.get("kind") != "ConfigMap" or obj.get("apiVersion") != "v1":
            continue
        meta, data = obj.get("metadata"), obj.get("data")
        meta = meta if isinstance(meta, Mapping) else {}
        data = data if isinstance(data, Mapping) else {}
        out[(str(meta.get("namespace") or "default"), str(meta.get("name", "")))] = {
            str(k): str(v) for k, v in data.items()
        }
    return out


def _invalid(doc: manifests.Document) -> Finding:
    assert doc.error is not None
    error = doc.error
    return Finding(
        policy=INVALID_MANIFEST,
        rule=error.rule,
        severity=Severity.HIGH,
        result=Result.ERROR,
        message=error.message,
        remediation="Fix the document so that it parses as a Kubernetes object; "
        "the other documents of the file were still checked.",
        object=ObjectRef("", "", None, ""),
        file=doc.file,
        document=doc.index,
        line=error.line if error.line is not None else doc.line,
        column=error.column,
    )


def _locate(doc: manifests.Document, finding: Finding) -> Finding:
    line, column = doc.line, 1
    if finding.path is not None:
        with contextlib.suppress(ValueError):  # a path a custom policy built by hand: point at the document
            line, column = manifests.locate(doc, fieldpath.parse(finding.path))
    return finding.located(doc.file, doc.index, line, column)


def lint_documents(documents: Sequence[manifests.Document], engine: Engine) -> LintReport:
    report = LintReport()
    context = Context(configmaps=configmaps_of(documents))
    for doc in documents:
        if doc.error is not None:
            report.unreadable += 1
            report.summary.invalid += 1
            report.findings.append(_invalid(doc))
            continue
        assert doc.obj is not None
        evaluation = engine.evaluate(doc.obj, context)
        if not evaluation.supported:
            report.summary.not_applicable += 1
            continue
        report.summary.objects += 1
        report.summary.add(evaluation.results)
        report.findings.extend(_locate(doc, f) for f in evaluation.findings)
    return report


def lint(paths: Sequence[str], engine: Engine, stdin: IO[bytes] | None = None) -> LintReport:
    reader = manifests.Reader()
    documents = list(reader.read(paths, stdin))
    report = lint_documents(documents, engine)
    report.summary.not_applicable += reader.skipped
    return report


def exit_code(report: LintReport, fail_on: Severity) -> int:
    """2 when input could not be read (after reporting everything else), 1 for findings >= fail_on."""
    if report.unreadable:
        return 2
    failing: list[Any] = [
        f for f in report.findings if f.result in (Result.FAIL, Result.ERROR) and f.severity >= fail_on
    ]
    return 1 if failing else 0
