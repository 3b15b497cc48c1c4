"""`--format json`: one object, {"findings": [...], "summary": {...}}, as RULES.md §4 fixes it.

Then the audit's "coverage", "workloads": training workloads with their cost (lint's costliest first,
the audit's worst offenders), and the audit's "cluster" section (the cluster validations' status and
pools). Written one finding at a time, so that a cluster with hundreds of thousands of findings is never
held in memory; the bytes are those of one `json.dumps` call.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import islice
from typing import Any, Final

from kubegap import jsontext
from kubegap.findings import Finding, Impact, ObjectRef, WorkloadCost
from kubegap.impact import Inputs
from kubegap.records import fields_of
from kubegap.reports.report import Report

# No indent: the C encoder only runs without one, and this output is for machines (pipe to `jq`). One
# encoder, built once (kubegap.jsontext), for what the records do not write themselves (`json_text`: a
# finding, its impact, a workload): objects' references, the summary, the coverage. What it encodes is
# built by the records' `to_json`, never a cycle, so it checks for none.
_dump: Final = jsontext.encoder(ensure_ascii=False)

# A priced finding's text by the id of its impact: the copies of a finding the audit tells of other
# objects (kubegap.memo) share every field but the object, and writing it anew was most of an audit
# worker's time once those copies were remembered (0.62 s for 19,000 findings of 6,000 objects, 0.41 s of
# it the impacts). The entry holds the first finding written with the impact, so the id is not reused
# while it is kept, and its text; the text around its object, with the fields beside it, is cut out when a
# copy first asks (`_Around`): lint's findings each have an impact of their own, and cutting every text
# up front was an eighth of a finding's text.
_Around = tuple[tuple[Any, ...], tuple[Any, ...], str, str]  # fields before and after, text before and after
# Final: compiled, a constant is read where a module's name is looked up each time
_COPIES: Final[dict[int, tuple[Finding, str, _Around | None]]] = {}
_COPIES_KEPT: Final = 1024
_NAMES: Final = fields_of(Finding)[0]
_VALUES: Final = fields_of(Finding)[1]
_AT: Final = _NAMES.index("object")
# Before the object come only strings, and a `"` inside a string is escaped: the first of these is the key.
_OBJECT_KEY: Final = '"object": '


def finding_text(finding: Finding) -> str:
    """One finding's JSON, as the report lists it."""
    impact = finding.impact
    if impact is None:
        return finding.json_text(_object_text(finding.object), "null")
    found = _COPIES.get(id(impact))
    if found is not None:
        first, text, around = found
        if around is None:
            around = _around(first, text)
            _COPIES[id(impact)] = (first, text, around)
        values = _VALUES(finding)
        if around[0] == values[:_AT] and around[1] == values[_AT + 1 :]:  # all but the object: same text
            return around[2] + _object_text(finding.object) + around[3]
    text = finding.json_text(_object_text(finding.object), _impact_text(impact))
    if len(_COPIES) >= _COPIES_KEPT:
        _COPIES.clear()
    _COPIES[id(impact)] = (finding, text, None)
    return text


def _around(finding: Finding, text: str) -> _Around:
    values = _VALUES(finding)
    start = text.index(_OBJECT_KEY) + len(_OBJECT_KEY)
    end = start + len(_object_text(finding.object))
    return values[:_AT], values[_AT + 1 :], text[:start], text[end:]


def _impact_text(impact: Impact) -> str:
    """A priced finding's impact is most of its text, and the findings of one object share their inputs
    (the workload as it stands, kubegap.pricing): the inputs' text is made once per object."""
    global _last_inputs
    last = _last_inputs  # one read: another thread may replace it
    if last[0] is not impact.now:
        last = _last_inputs = (impact.now, impact.now.json_text())
    return impact.json_text(last[1])


_last_object: tuple[ObjectRef | None, str] = (None, "")  # an object's findings come one after another
_last_inputs: tuple[Inputs | None, str] = (None, "")  # the last inputs written, with their text


def _object_text(ref: ObjectRef) -> str:
    global _last_object
    last = _last_object  # one read: another thread may replace it
    if last[0] is not ref:
        last = _last_object = (ref, _dump(ref.to_json()))
    return last[1]


def render(report: Report) -> Iterator[str]:
    yield '{"findings": ['
    if report.findings_json is not None:
        yield from report.findings_json
    else:
        yield from _joined(map(finding_text, report.findings))
    yield "]"
    yield f', "summary": {_dump(report.summary.to_json())}'
    if report.audit is not None:
        yield f', "coverage": {_dump(report.audit.coverage.to_json())}'
    workloads = report.workloads_json
    if workloads is None:
        workloads = list(map(workload_text, report.workloads))
    yield ', "workloads": ['
    yield from jsontext.joined(workloads)
    yield "]"
    if report.audit is not None and report.audit.cluster is not None:  # RULES.md §2 v3: status and pools
        yield f', "cluster": {_dump(report.audit.cluster.to_json())}'
    yield "}\n"


def workload_text(workload: WorkloadCost) -> str:
    """One training workload's JSON, as the report lists it (joined by `, `, as `json.dumps` joins a
    list's items)."""
    return workload.json_text(_object_text(workload.ref))


def _joined(texts: Iterator[str]) -> Iterator[str]:
    """Texts separated by ", ", 256 at a time (one write per finding was 0.3 s of a 50,000-object audit's
    last second), ASCII apart from the rest (kubegap.jsontext.joined)."""
    after = False
    while batch := list(islice(texts, 256)):
        yield from jsontext.joined(batch, after)
        after = True
