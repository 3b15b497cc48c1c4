"""SARIF output: valid against the official SARIF 2.1.0 schema, and carrying what code scanning needs."""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from kubegap.evaluate import Engine
from kubegap.findings import Finding, ObjectRef, Result, Severity
from kubegap.reports import sarif
from tests.reports.sample import Sample
from tests.support.reports import rendered

SCHEMA_FILE = Path(__file__).resolve().parents[1] / "data" / "sarif" / "sarif-schema-2.1.0.json"
REF = ObjectRef("kubeflow.org/v1", "PyTorchJob", "llm", "pretrain")
# RFC 3986 URI-reference characters: the vendored schema's `format` is not checked by jsonschema alone.
URI_CHARS = re.compile(r"^[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]+$")


def finding(**changes: Any) -> Finding:
    base = Finding(
        "nccl-timeout",
        "timeout-bounded",
        Severity.HIGH,
        Result.FAIL,
        "collective timeout 2h exceeds 30m",
        "Lower the collective timeout.",
        REF,
        role="Worker",
        container="trainer",
        path="spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].args[3]",
    )
    return replace(base, **changes)


@pytest.fixture(scope="module")
def validator() -> jsonschema.protocols.Validator:
    schema = json.loads(SCHEMA_FILE.read_text("utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    assert cls is jsonschema.Draft202012Validator  # as the schema's own `$schema` says
    # No check_schema: upstream misplaces `region`'s anyOf under `properties`, which the metaschema
    # rejects; validators (GitHub's among them) apply the rest of the schema all the same.
    validator: jsonschema.protocols.Validator = cls(schema)
    return validator


def log_of(results: list[Finding], engine: Engine, **options: Any) -> dict[str, Any]:
    text = rendered("sarif", results, policies=engine.policies, tool_version="9.9.9", **options)
    document: dict[str, Any] = json.loads(text)
    return document


def assert_valid(validator: jsonschema.protocols.Validator, document: dict[str, Any]) -> None:
    errors = sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:5])
    for result in document["runs"][0]["results"]:
        for location in result["locations"]:
            if "physicalLocation" in location:
                assert URI_CHARS.match(location["physicalLocation"]["artifactLocation"]["uri"])


def test_the_vendored_schema_is_the_official_one() -> None:
    schema = json.loads(SCHEMA_FILE.read_text("utf-8"))
    assert schema["title"] == "Static Analysis Results Format (SARIF) Version 2.1.0 JSON Schema"
    assert schema["properties"]["version"]["enum"] == ["2.1.0"]
    assert (SCHEMA_FILE.parent / "LICENSE.md").is_file()


def test_lint_results_validate_against_the_sarif_schema(sample: Sample, validator: Any) -> None:
    report = sample.report
    document = log_of(report.findings + report.passes, sample.engine, base_dir=str(sample.root))
    assert_valid(validator, document)
    run = document["runs"][0]
    assert document["version"] == "2.1.0"
    assert run["tool"]["driver"]["name"] == "kubegap"
    assert run["tool"]["driver"]["version"] == "9.9.9"
    assert len(run["results"]) == len(report.findings)  # every fail, error and skip; no pass


def test_audit_results_validate_and_have_only_logical_locations(sample: Sample, validator: Any) -> None:
    audit = [f.located(None, None, None, None) for f in sample.report.findings if f.object.kind]
    document = log_of(audit, sample.engine)
    assert_valid(validator, document)
    for result, source in zip(document["runs"][0]["results"], sorted(audit, key=sarif._order), strict=True):
        (location,) = result["locations"]
        assert "physicalLocation" not in location
        resource = location["logicalLocations"][0]
        assert resource["kind"] == "resource"
        assert resource["fullyQualifiedName"] == source.object.display()
        assert resource["properties"]["namespace"] == source.object.namespace
        if source.container:
            assert resource["properties"]["container"] == source.container


def test_an_empty_run_is_valid(engine: Engine, validator: Any) -> None:
    document = log_of([], engine)
    assert_valid(validator, document)
    assert document["runs"][0]["results"] == []


def test_one_descriptor_per_policy_validation_then_engine_rules_seen(sample: Sample) -> None:
    document = log_of(sample.report.findings, sample.engine)
    rules = document["runs"][0]["tool"]["driver"]["rules"]
    expected = [f"{p.id}/{v.name}" for p in sample.engine.policies for v in p.validations]
    ids = [r["id"] for r in rules]
    assert ids[: len(expected)] == expected
    assert ids[len(expected) :] == ["invalid-manifest/yaml-syntax", "restart-budget/exemption-reason"]
    for result in document["runs"][0]["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]


def test_validation_descriptor_carries_description_help_and_reference(engine: Engine) -> None:
    rules = {r["id"]: r for r in log_of([], engine)["runs"][0]["tool"]["driver"]["rules"]}
    policy = next(p for p in engine.policies if p.id == "nccl-timeout")
    validation = next(v for v in policy.validations if v.name == "timeout-bounded")
    rule = rules["nccl-timeout/timeout-bounded"]
    assert rule["name"] == "NcclTimeout/TimeoutBounded"
    assert rule["shortDescription"]["text"] == " ".join(validation.description.split())
    assert policy.title in rule["fullDescription"]["text"]
    assert "\n" not in rule["fullDescription"]["text"]
    assert validation.remediation is not None
    for text in (rule["help"]["text"], rule["help"]["markdown"]):
        assert " ".join(validation.remediation.split()) in text
        assert "IL-0421" in text  # the incident behind the rule
        assert "ignore.kubegap.dev/nccl-timeout" in text
        assert "maxCollectiveTimeout = 30m" in text
    urls = [r.url for r in policy.references if r.url]
    assert all(f"]({url})" in rule["help"]["markdown"] for url in urls)
    assert {"kubernetes", "nccl-timeout"} <= set(rule["properties"]["tags"])


@pytest.mark.parametrize(
    ("severity", "level", "score"),
    [
        (Severity.CRITICAL, "error", "9.0"),
        (Severity.HIGH, "error", "7.0"),
        (Severity.MEDIUM, "warning", "5.0"),
        (Severity.LOW, "note", "3.0"),
        (Severity.INFO, "note", None),
    ],
)
def test_severity_sets_level_and_security_severity(
    engine: Engine, severity: Severity, level: str, score: str | None
) -> None:
    odd = finding(policy="in-house", rule="custom-check", severity=severity)
    run = log_of([odd], engine)["runs"][0]
    (result,) = run["results"]
    rule = run["tool"]["driver"]["rules"][result["ruleIndex"]]
    assert result["level"] == level
    assert rule["defaultConfiguration"]["level"] == level
    assert rule["properties"].get("security-severity") == score


def test_bundled_descriptor_levels_follow_validation_severity(engine: Engine) -> None:
    rules = {r["id"]: r for r in log_of([], engine)["runs"][0]["tool"]["driver"]["rules"]}
    assert rules["nccl-timeout/no-placebo-timeout"]["defaultConfiguration"]["level"] == "note"  # low
    assert rules["nccl-timeout/watchdog-enabled"]["defaultConfiguration"]["level"] == "warning"  # medium
    assert rules["nccl-timeout/timeout-declared"]["defaultConfiguration"]["level"] == "error"  # high


def test_exempted_results_are_suppressed_with_their_reason(sample: Sample) -> None:
    results = log_of(sample.report.findings, sample.engine)["runs"][0]["results"]
    suppressed = [r for r in results if "suppressions" in r]
    assert [r["ruleId"] for r in suppressed] == ["health-probes/liveness-probe"]
    assert suppressed[0]["suppressions"] == [
        {"kind": "inSource", "justification": "probes are added by the platform's mutating webhook"}
    ]
    assert all("suppressions" not in r for r in results if r["properties"]["result"] != "skip")


def test_passes_are_counted_not_listed(sample: Sample) -> None:
    report = sample.report
    run = log_of(report.findings + report.passes, sample.engine)["runs"][0]
    assert all(r["properties"]["result"] != "pass" for r in run["results"])
    counted = Counter(f.result.value for f in report.findings + report.passes)
    assert run["properties"]["results"] == {r.value: counted[r.value] for r in Result}
    assert run["properties"]["results"]["pass"] == len(report.passes) > 0


def test_physical_location_is_the_lint_position(sample: Sample) -> None:
    results = log_of(sample.report.findings, sample.engine)["runs"][0]["results"]
    by_key = {(r["properties"]["file"], r["properties"]["line"], r["ruleId"]): r for r in results}
    for f in sample.report.findings:
        result = by_key[(f.file, f.line, f"{f.policy}/{f.rule}")]
        physical = result["locations"][0]["physicalLocation"]
        assert physical["artifactLocation"] == {"uri": f.file, "uriBaseId": "%SRCROOT%"}
        expected = {"startLine": f.line} | ({"startColumn": f.column} if f.column else {})
        assert physical["region"] == expected


def test_properties_carry_the_finding_record(sample: Sample) -> None:
    results = log_of(sample.report.findings, sample.engine)["runs"][0]["results"]
    records = sorted((f.to_json() for f in sample.report.findings), key=json.dumps)
    assert sorted((r["properties"] for r in results), key=json.dumps) == records


@pytest.mark.parametrize(
    ("file", "base_dir", "uri", "relative"),
    [
        ("deploy/job.yaml", None, "deploy/job.yaml", True),
        ("./deploy/../deploy/job.yaml", None, "deploy/job.yaml", True),
        ("deploy\\win\\job.yaml", None, "deploy/win/job.yaml", True),
        ("my charts/x y.yaml", None, "my%20charts/x%20y.yaml", True),
        ("a:b/job.yaml", None, "a%3Ab/job.yaml", True),  # a colon would read as a URI scheme
        ("/work/repo/deploy/job.yaml", "/work/repo", "deploy/job.yaml", True),
        ("/work/repo/deploy/job.yaml", "/work/repo/", "deploy/job.yaml", True),
        ("/work/repository/job.yaml", "/work/repo", "file:///work/repository/job.yaml", False),
        ("/elsewhere/job.yaml", None, "file:///elsewhere/job.yaml", False),
        ("C:\\repo\\deploy\\job.yaml", "C:\\repo", "deploy/job.yaml", True),
        ("D:\\job.yaml", "C:\\repo", "file:///D:/job.yaml", False),
        ("mychart/templates/jöb.yaml", None, "mychart/templates/j%C3%B6b.yaml", True),
    ],
)
def test_artifact_uris(
    engine: Engine, validator: Any, file: str, base_dir: str | None, uri: str, relative: bool
) -> None:
    document = log_of([finding(file=file, line=3, column=5)], engine, base_dir=base_dir)
    assert_valid(validator, document)
    run = document["runs"][0]
    artifact = run["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert artifact["uri"] == uri
    assert ("uriBaseId" in artifact) is relative
    assert ("originalUriBaseIds" in run) is (relative and base_dir is not None)


def test_source_root_names_the_base_directory(engine: Engine) -> None:
    run = log_of([finding(file="/work/repo/a.yaml", line=1)], engine, base_dir="/work/repo")["runs"][0]
    assert run["originalUriBaseIds"] == {"%SRCROOT%": {"uri": "file:///work/repo/"}}


@pytest.mark.parametrize(
    ("file", "line", "column", "physical"),
    [
        ("<stdin>", 4, 2, None),  # nothing on disk to point at
        (None, None, None, None),  # audit
        ("deploy/unreadable.yaml", None, None, {"startLine": 1}),  # a file-level error: the top of the file
        ("deploy/job.yaml", 7, None, {"startLine": 7}),
    ],
)
def test_regions(
    engine: Engine, file: str | None, line: int | None, column: int | None, physical: dict[str, int] | None
) -> None:
    result = log_of([finding(file=file, line=line, column=column)], engine)["runs"][0]["results"][0]
    location = result["locations"][0]
    if physical is None:
        assert "physicalLocation" not in location
    else:
        assert location["physicalLocation"]["region"] == physical
    assert location["logicalLocations"][1] == {
        "name": finding().path,
        "fullyQualifiedName": f"PyTorchJob/llm/pretrain:{finding().path}",
        "kind": "property",
    }


def test_fingerprints_follow_identity_not_position() -> None:
    base = finding(file="deploy/job.yaml", line=10, column=3)
    same = [base.located("deploy/job.yaml", 2, 40, 9), replace(base, message="another wording")]
    different = [
        replace(base, file="deploy/other.yaml"),
        replace(base, rule="timeout-declared"),
        replace(base, container="sidecar"),
        replace(base, object=replace(REF, namespace="llm-dev")),
        replace(base, path="spec.runPolicy"),
    ]
    assert {sarif.fingerprint(f) for f in same} == {sarif.fingerprint(base)}
    assert len({sarif.fingerprint(f) for f in [base, *different]}) == 1 + len(different)


def test_messages_name_the_object_and_mark_evaluation_errors(engine: Engine) -> None:
    results = log_of([finding(), finding(result=Result.ERROR, message="no such key: x")], engine)["runs"][0]
    texts = sorted(r["message"]["text"] for r in results["results"])
    assert texts == [
        "collective timeout 2h exceeds 30m [PyTorchJob/llm/pretrain, role Worker, container trainer]",
        "evaluation error: no such key: x [PyTorchJob/llm/pretrain, role Worker, container trainer]",
    ]


def test_output_does_not_depend_on_input_order(sample: Sample) -> None:
    results = sample.report.findings + sample.report.passes
    shuffled = results[:]
    random.Random(7).shuffle(shuffled)
    policies = sample.engine.policies
    assert rendered("sarif", shuffled, policies=policies) == rendered("sarif", results, policies=policies)


def test_control_characters_and_lone_surrogates_stay_writable(engine: Engine, validator: Any) -> None:
    odd = finding(message="value \x07\x1b[31m\ud800 seen", object=replace(REF, name="bad\udcffname"))
    text = rendered("sarif", [odd], policies=engine.policies)
    text.encode("utf-8")  # would raise on a lone surrogate
    document = json.loads(text)
    assert_valid(validator, document)
    assert document["runs"][0]["results"][0]["message"]["text"].startswith("value \x07\x1b[31m\ufffd seen")
