"""`--format junit`: JUnit XML for CI test dashboards (GitLab, Jenkins, Azure DevOps).

One testsuite per policy (engine rules such as `invalid-manifest` get their own), one testcase per evaluated
object, template role, container and validation. A failing result is a `<failure>`, an evaluation error an
`<error>`, an exemption `<skipped>` with the reason; each carries the message, where it is and how to fix it.
Passes are testcases too, so dashboards show what was checked and not only what failed.

Dashboards key test history on the suite, class and test names, so names hold identities only (policy,
rule, object, role, container, file), never line numbers or messages.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubegap.enginerules import INVALID_MANIFEST
from kubegap.findings import Finding, Result
from kubegap.policy import Policy
from kubegap.reports.report import Report

# Worst first: a testcase holding several results (rare: two bad declarations) reports the worst outcome.
_OUTCOME = {Result.ERROR: 3, Result.FAIL: 2, Result.SKIP: 1, Result.PASS: 0}
_ELEMENT = {Result.ERROR: "error", Result.FAIL: "failure", Result.SKIP: "skipped"}
# XML 1.0 cannot carry these at all, not even escaped; manifests can (YAML "\a", JSON "\u0001").
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


@dataclass(slots=True)
class _Case:
    policy: str
    rule: str
    results: list[Finding] = field(default_factory=list)

    @property
    def outcome(self) -> Result:
        return max((f.result for f in self.results), key=_OUTCOME.__getitem__)


@dataclass(slots=True)
class _Suite:
    name: str
    properties: dict[str, str]
    cases: dict[tuple[Any, ...], _Case] = field(default_factory=dict)

    def count(self, outcome: Result) -> int:
        return sum(c.outcome is outcome for c in self.cases.values())


def render(report: Report) -> Iterator[str]:
    """The JUnit XML document; passes are testcases too, where the run kept them."""
    suites = _suites([*report.findings, *report.passes], report.policies)
    root = ET.Element("testsuites", {"name": "kubegap"})
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for suite in suites:
        element = _suite_element(suite)
        root.append(element)
        for key in totals:
            totals[key] += int(element.get(key, "0"))
    root.attrib.update({key: str(value) for key, value in totals.items()})
    root.set("time", "0")
    ET.indent(root)
    yield '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _suites(results: Iterable[Finding], policies: Sequence[Policy]) -> list[_Suite]:
    suites = {
        p.id: _Suite(p.id, {"title": p.title, "severity": p.severity.value, "source": p.source})
        for p in policies
    }
    for finding in sorted(results, key=_order):
        suite = suites.get(finding.policy)
        if suite is None:  # engine rules (invalid-manifest) and policies not passed in
            suite = suites[finding.policy] = _Suite(finding.policy, {})
        key = _case_key(finding)
        case = suite.cases.get(key)
        if case is None:
            case = suite.cases[key] = _Case(finding.policy, finding.rule)
        case.results.append(finding)
    return list(suites.values())


def _case_key(finding: Finding) -> tuple[Any, ...]:
    ref = finding.object
    document = finding.document if not ref.kind else None  # unreadable documents have no object to name
    identity = (ref.api_version, ref.kind, ref.namespace, ref.name, finding.role, finding.container)
    return (finding.file, document, *identity, finding.rule)


def _order(f: Finding) -> tuple[Any, ...]:
    ref = f.object
    return (
        f.policy,
        f.file or "",
        f.document if f.document is not None else -1,
        ref.kind,
        ref.namespace or "",
        ref.name,
        f.role or "",
        f.container or "",
        f.rule,
        f.line or 0,
        f.path or "",
    )


def _suite_element(suite: _Suite) -> ET.Element:
    failures, errors, skipped = (suite.count(r) for r in (Result.FAIL, Result.ERROR, Result.SKIP))
    element = ET.Element(
        "testsuite",
        {
            "name": _clean(suite.name),
            "tests": str(len(suite.cases)),
            "failures": str(failures),
            "errors": str(errors),
            "skipped": str(skipped),
            "time": "0",
        },
    )
    if suite.properties:
        properties = ET.SubElement(element, "properties")
        for name, value in suite.properties.items():
            ET.SubElement(properties, "property", {"name": name, "value": _clean(value)})
    for case in suite.cases.values():
        element.append(_case_element(case))
    return element


def _case_element(case: _Case) -> ET.Element:
    first = case.results[0]
    attributes = {"name": _clean(_case_name(first)), "classname": _clean(f"{case.policy}.{case.rule}")}
    if first.file:
        attributes["file"] = _clean(first.file)
    located = [f.line for f in case.results if f.line]
    if located:
        attributes["line"] = str(min(located))
    attributes["time"] = "0"
    element = ET.Element("testcase", attributes)
    outcome = case.outcome
    if outcome is Result.PASS:
        return element
    worst = [f for f in case.results if f.result is outcome]
    message = worst[0].message + (f" (and {len(worst) - 1} more)" if len(worst) > 1 else "")
    detail = ET.SubElement(element, _ELEMENT[outcome], {"message": _clean(message)})
    if outcome is not Result.SKIP:
        detail.set("type", _error_type(worst[0]))
    detail.text = _clean("\n\n".join(_body(f) for f in worst))
    return element


def _error_type(finding: Finding) -> str:
    if finding.result is Result.FAIL:
        return finding.severity.value
    return INVALID_MANIFEST if finding.policy == INVALID_MANIFEST else "evaluation-error"


def _case_name(finding: Finding) -> str:
    ref = finding.object
    if not ref.kind:  # an unreadable document: named by its place in the file
        return f"{finding.rule} document {finding.document if finding.document is not None else 0}" + (
            f" in {finding.file}" if finding.file else ""
        )
    name = f"{finding.rule} {finding.subject()}"
    return name + (f" in {finding.file}" if finding.file else "")


def _body(finding: Finding) -> str:
    lines = [finding.message]
    if finding.object.kind:
        lines.append(f"object: {finding.object.display()} ({finding.object.api_version})")
    if finding.path:
        lines.append(f"at: {finding.path}")
    if finding.file:
        position = ":".join(str(p) for p in (finding.line, finding.column) if p)
        lines.append(f"file: {finding.file}" + (f":{position}" if position else ""))
    if finding.unresolved:
        lines.append(f"unresolved: {', '.join(finding.unresolved)}")
    if finding.result is not Result.SKIP and finding.remediation:
        lines.append(f"fix: {finding.remediation}")
    return "\n".join(lines)


def _clean(text: str) -> str:
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else "\ufffd", text)
