"""JUnit output: parses as XML, one suite per policy, one case per object/role/container/validation,
counts that add up, and failures that say what is wrong and how to fix it."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import replace
from typing import Any

import pytest

from kubegap.evaluate import Engine
from kubegap.findings import Finding, ObjectRef, Result, Severity
from tests.reports.sample import Sample
from tests.support.reports import rendered

REF = ObjectRef("batch/v1", "Job", "vision", "finetune")
COUNTS = ("tests", "failures", "errors", "skipped")


def finding(**changes: Any) -> Finding:
    base = Finding(
        "health-probes",
        "liveness-probe",
        Severity.HIGH,
        Result.FAIL,
        "no livenessProbe",
        "Add a livenessProbe.",
        REF,
        role="Job",
        container="trainer",
        path="spec.template.spec.containers[0]",
        file="deploy/job.yaml",
        document=0,
        line=12,
        column=9,
    )
    return replace(base, **changes)


def parse(results: list[Finding], engine: Engine) -> ET.Element:
    return ET.fromstring(rendered("junit", results, policies=engine.policies).encode("utf-8"))


def counts(element: ET.Element) -> dict[str, int]:
    return {key: int(element.get(key, "-1")) for key in COUNTS}


def outcome(case: ET.Element) -> str:
    children = [child.tag for child in case]
    assert len(children) <= 1, children
    return children[0] if children else "pass"


def test_sample_lint_parses_with_counts_that_add_up(sample: Sample) -> None:
    report = sample.report
    root = parse(report.findings + report.passes, sample.engine)
    assert root.tag == "testsuites"
    suites = root.findall("testsuite")
    for suite in suites:
        cases = suite.findall("testcase")
        tally = Counter(outcome(c) for c in cases)
        assert counts(suite) == {
            "tests": len(cases),
            "failures": tally["failure"],
            "errors": tally["error"],
            "skipped": tally["skipped"],
        }
    assert counts(root) == {key: sum(counts(s)[key] for s in suites) for key in COUNTS}
    # No two results of the sample share an object, role, container and validation: one case each.
    by_result = Counter(f.result for f in report.findings + report.passes)
    assert counts(root) == {
        "tests": sum(by_result.values()),
        "failures": by_result[Result.FAIL],
        "errors": by_result[Result.ERROR],
        "skipped": by_result[Result.SKIP],
    }


def test_one_suite_per_policy_then_engine_rules(sample: Sample) -> None:
    root = parse(sample.report.findings + sample.report.passes, sample.engine)
    names = [s.get("name") for s in root.findall("testsuite")]
    assert names == [*(p.id for p in sample.engine.policies), "invalid-manifest"]
    nccl = root.find("testsuite[@name='nccl-timeout']")
    assert nccl is not None
    properties = {p.get("name"): p.get("value") for p in nccl.iter("property")}
    assert properties["severity"] == "high"
    assert properties["title"] == next(p.title for p in sample.engine.policies if p.id == "nccl-timeout")


def test_a_policy_that_applied_to_nothing_is_an_empty_suite(engine: Engine) -> None:
    root = parse([finding()], engine)
    suite = root.find("testsuite[@name='gpu-node-health']")
    assert suite is not None
    assert counts(suite) == {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}


@pytest.mark.parametrize(
    ("result", "tag", "kind"),
    [
        (Result.FAIL, "failure", "high"),
        (Result.ERROR, "error", "evaluation-error"),
        (Result.SKIP, "skipped", None),
        (Result.PASS, None, None),
    ],
)
def test_each_result_becomes_the_matching_element(
    engine: Engine, result: Result, tag: str | None, kind: str | None
) -> None:
    message = "exempted: smoke test" if result is Result.SKIP else "no livenessProbe"
    root = parse([finding(result=result, message=message)], engine)
    (case,) = root.iter("testcase")
    assert case.get("classname") == "health-probes.liveness-probe"
    assert (
        case.get("name")
        == "liveness-probe Job/vision/finetune, role Job, container trainer in deploy/job.yaml"
    )
    assert case.get("file") == "deploy/job.yaml"
    if tag is None:
        assert list(case) == []
        return
    (detail,) = case
    assert detail.tag == tag
    assert detail.get("message") == message
    assert detail.get("type") == kind
    body = detail.text or ""
    assert message in body
    assert "file: deploy/job.yaml:12:9" in body
    assert "at: spec.template.spec.containers[0]" in body
    assert ("fix: Add a livenessProbe." in body) is (result is not Result.SKIP)


def test_unreadable_documents_are_errors_named_by_place(sample: Sample) -> None:
    root = parse(sample.report.findings, sample.engine)
    suite = root.find("testsuite[@name='invalid-manifest']")
    assert suite is not None
    (case,) = suite.findall("testcase")
    assert case.get("name") == "yaml-syntax document 1 in deploy/broken.yaml"
    error = case.find("error")
    assert error is not None
    assert error.get("type") == "invalid-manifest"


def test_results_of_one_case_merge_into_the_worst(engine: Engine) -> None:
    results = [
        finding(rule="invalid-declaration", message="lower bad annotation", path="a", line=4),
        finding(rule="invalid-declaration", message="upper bad annotation", path="b", line=3),
        finding(rule="invalid-declaration", result=Result.PASS, message="", path="c"),
    ]
    root = parse(results, engine)
    (case,) = root.iter("testcase")
    failure = case.find("failure")
    assert failure is not None
    assert failure.get("message") == "upper bad annotation (and 1 more)"  # in file order
    assert "lower bad annotation" in (failure.text or "")
    assert case.get("line") == "3"


def test_names_hold_identity_not_position_or_wording(engine: Engine) -> None:
    before = parse([finding()], engine)
    after = parse([finding(line=40, column=2, message="reworded")], engine)
    names = [(c.get("classname"), c.get("name")) for c in before.iter("testcase")]
    assert names == [(c.get("classname"), c.get("name")) for c in after.iter("testcase")]


def test_same_object_in_two_files_is_two_cases(engine: Engine) -> None:
    root = parse([finding(), finding(file="overlays/prod/job.yaml")], engine)
    assert len(list(root.iter("testcase"))) == 2


def test_audit_results_have_no_file(engine: Engine) -> None:
    root = parse([finding().located(None, None, None, None)], engine)
    (case,) = root.iter("testcase")
    assert case.get("file") is None
    assert case.get("line") is None
    assert case.get("name") == "liveness-probe Job/vision/finetune, role Job, container trainer"


def test_characters_xml_cannot_carry_are_escaped(engine: Engine) -> None:
    odd = finding(message="bad \x00\x07\x1b value \ud800 <&>\"'", object=replace(REF, name="a\x01b"))
    text = rendered("junit", [odd], policies=engine.policies)
    root = ET.fromstring(text.encode("utf-8"))
    failure = root.find(".//failure")
    assert failure is not None
    assert failure.get("message") == "bad \\x00\\x07\\x1b value \ufffd <&>\"'"
    case = root.find(".//testcase")
    assert case is not None
    assert "a\\x01b" in (case.get("name") or "")
