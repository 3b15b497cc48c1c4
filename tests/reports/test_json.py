"""`--format json`'s finding texts: with the text of a finding's copies kept (kubegap.reports.json), each
is exactly one `json.dumps` of the finding, however its message is written and whatever it shares."""

from __future__ import annotations

import json

from kubegap.config import Settings
from kubegap.evaluate import build_engine
from kubegap.findings import Finding, ObjectRef, Summary, moved_to
from kubegap.records import changed
from kubegap.reports import json as json_report
from kubegap.reports.report import Report
from tests.support.samples import WORKLOAD_FILES, example_objects
from tests.test_evaluate import pytorchjob


def _priced() -> list[Finding]:
    found = [f for f in build_engine(Settings()).evaluate(pytorchjob()).findings if f.impact is not None]
    assert len(found) >= 2
    return found


def _expected(finding: Finding) -> str:
    return json.dumps(finding.to_json(), ensure_ascii=False)


def test_a_priced_finding_reads_as_one_dump_even_when_its_text_spells_the_impact_key() -> None:
    hostile = ['"object": {"kind": "X"}', '", "object": {', "\\", "é ✓ \u2028"]
    hostile += ['", "impact": null, "x": "', ', "impact": null', '", "inputs": null, "fixed": {', "null"]
    for finding in _priced():
        for text in hostile:
            tricky = changed(finding, message=text, remediation=text, unresolved=(text,), roles=(text, text))
            assert json_report.finding_text(tricky) == _expected(tricky)
            assert finding.impact is not None
            unpriced = changed(tricky, impact=changed(finding.impact, saved=None, reason=text))
            assert json_report.finding_text(unpriced) == _expected(unpriced)
            assert json.loads(json_report.finding_text(tricky))["impact"] == finding.impact.to_json()  # type: ignore[union-attr]


def test_every_example_finding_and_workload_reads_as_its_dump() -> None:
    """A finding's text is written field by field (`Finding.json_text`), not by encoding `to_json`: over
    every example's findings, passes, skips and priced failures, and its workload's cost, the two must
    not part."""
    engine = build_engine(Settings())
    evaluations = [engine.evaluate(d) for d in example_objects(*WORKLOAD_FILES)]
    costs = [e.cost for e in evaluations if e.cost is not None]
    assert len(costs) > 50
    costs.append(changed(costs[0], young_hours=None, file='a ✓ "file".yaml', document=3))
    for cost in costs:
        assert json_report.workload_text(cost) == json.dumps(cost.to_json(), ensure_ascii=False)
    findings = [f for e in evaluations for f in e.findings]
    priced = [f for f in findings if f.impact is not None]
    assert len(findings) > 1000 and len(priced) > 100
    assert any(f.impact.saved is None for f in priced) and any(f.impact.fixed is None for f in priced)  # type: ignore[union-attr]
    json_report._COPIES.clear()
    for finding in findings:
        assert json_report.finding_text(finding) == _expected(finding)


def test_findings_of_objects_in_turn_each_read_as_their_own_dump() -> None:
    """An object's findings share their inputs, whose text is made once: another object's, in between,
    has other inputs."""
    engine = build_engine(Settings())
    other = pytorchjob()
    other["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = 63  # more GPUs: other inputs
    first = [f for f in engine.evaluate(pytorchjob()).findings if f.impact is not None]
    second = [f for f in engine.evaluate(other).findings if f.impact is not None]
    assert first and second and first[0].impact.now != second[0].impact.now  # type: ignore[union-attr]
    for pair in zip(first, second, strict=False):
        for finding in (*pair, *pair):
            json_report._COPIES.clear()
            assert json_report.finding_text(finding) == _expected(finding)


def test_copies_share_a_text_and_each_names_its_own_object() -> None:
    findings = _priced()
    json_report._COPIES.clear()
    texts = [json_report.finding_text(f) for f in findings]
    kept = len(json_report._COPIES)
    for name in ("copy", "another"):
        moved = moved_to(findings, ObjectRef("kubeflow.org/v1", "PyTorchJob", "elsewhere", name))
        assert [json_report.finding_text(f) for f in moved] == [_expected(f) for f in moved]
        assert len(json_report._COPIES) == kept, "a copy's text is its original's around the object"
        assert texts != [json_report.finding_text(f) for f in moved]


def test_a_finding_that_shares_an_impact_but_differs_elsewhere_has_its_own_text() -> None:
    findings = _priced()
    json_report._COPIES.clear()
    for finding in findings:
        json_report.finding_text(finding)
        for other in (
            changed(finding, message="another message"),
            changed(finding, path="spec.other"),
            changed(finding, unresolved=("a Secret",)),
            changed(finding, roles=("Master", "Worker")),
        ):
            assert json_report.finding_text(other) == _expected(other)
            assert json_report.finding_text(finding) == _expected(finding)


def test_the_texts_kept_are_bounded() -> None:
    finding = _priced()[0]
    assert finding.impact is not None
    json_report._COPIES.clear()
    for index in range(json_report._COPIES_KEPT * 2 + 5):
        own = changed(finding, impact=changed(finding.impact, saved=float(index)))
        assert json_report.finding_text(own) == _expected(own)
        assert len(json_report._COPIES) <= json_report._COPIES_KEPT


def test_a_report_of_many_findings_is_one_dump() -> None:
    priced = _priced()
    findings = [changed(f, message=f"{f.message} #{i}") for i in range(300) for f in priced]
    assert len(findings) > 512  # across the batches the report is written in
    summary = Summary()
    summary.add(findings)
    whole = json.dumps({"findings": [f.to_json() for f in findings]}, ensure_ascii=False)
    joined = [", ".join(map(_expected, findings))]
    for report in (Report(findings, summary), Report(findings, summary, findings_json=joined)):
        text = "".join(json_report.render(report))
        assert text.startswith(whole[:-1])
        assert json.loads(text)["findings"] == [f.to_json() for f in findings]
