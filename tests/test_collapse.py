"""Identical findings are one finding that lists where they hold (RULES.md §4): across the containers of one
template, and across identical templates."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
import yaml

from kubegap.collapse import collapse
from kubegap.config import Settings
from kubegap.evaluate import Engine, build_engine
from kubegap.facts import Unit
from kubegap.findings import Finding, ObjectRef, Result, Severity
from tests.support.reports import rendered
from tests.support.samples import FAILING_PYTORCHJOB

REF = ObjectRef("kubeflow.org/v1", "PyTorchJob", "llm", "pretrain")
BASE = Finding(
    "health-probes",
    "liveness-probe",
    Severity.HIGH,
    Result.FAIL,
    "no livenessProbe",
    "Add one.",
    REF,
    "Worker",
)


def at(container: str, index: int, role: str = "Worker", **changes: Any) -> Finding:
    path = f"spec.pytorchReplicaSpecs.{role}.template.spec.containers[{index}]"
    return replace(BASE, role=role, container=container, path=path, **changes)


def test_identical_findings_of_one_template_become_one_listing_every_container() -> None:
    workload = replace(BASE, policy="restart-budget", rule="auto-restart")
    (first, whole) = collapse([at("a", 0), workload, at("b", 1), at("c", 2)])
    assert (first.container, first.path, first.containers) == ("a", at("a", 0).path, ("a", "b", "c"))
    assert whole is workload, "a finding without a container is kept as it is, in order"


@pytest.mark.parametrize(
    "other",
    [
        at("b", 1, role="Master"),  # another template
        at("b", 1, message="no livenessProbe on b"),  # another message
        at("b", 1, result=Result.ERROR),
        at("b", 1, unresolved=("Secret llm/token",)),
        replace(at("b", 1), path=at("b", 1).path + ".env[3]"),  # another field
    ],
)
def test_findings_that_differ_in_more_than_the_container_stay_apart(other: Finding) -> None:
    assert collapse([at("a", 0), other]) == (at("a", 0), other)


def test_nothing_to_collapse_returns_the_results_unchanged() -> None:
    results = (at("a", 0), replace(BASE, policy="p2"))
    assert collapse(results) == results


def wide(containers: int) -> dict[str, Any]:
    obj: Any = yaml.safe_load(FAILING_PYTORCHJOB)
    spec = obj["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]
    spec["containers"] = [dict(spec["containers"][0], name=f"trainer-{i}") for i in range(containers)]
    return dict(obj)


@pytest.fixture(scope="module")
def engine() -> Engine:
    return build_engine(Settings(cel_backend="cel-expr"))


def test_a_wide_template_gives_as_many_findings_as_a_narrow_one(engine: Engine) -> None:
    narrow, broad = engine.evaluate(wide(1)), engine.evaluate(wide(2_000))
    assert [(f.policy, f.rule) for f in broad.findings] == [(f.policy, f.rule) for f in narrow.findings]
    per_container = [f for f in broad.findings if f.container is not None]
    assert per_container, "the sample has container-level findings"
    for finding in per_container:
        assert finding.container == "trainer-0"
        assert finding.covered() == [f"trainer-{i}" for i in range(2_000)]
        assert finding.path and finding.path.endswith("containers[0]")


def test_reports_name_the_first_container_and_list_them_all(engine: Engine) -> None:
    findings = list(engine.evaluate(wide(3)).findings)
    record = json.loads(rendered("json", findings))["findings"]
    listed = [f["containers"] for f in record if f["container"]]
    assert listed and all(c == ["trainer-0", "trainer-1", "trainer-2"] for c in listed)
    assert [f["containers"] for f in record if not f["container"]] == [[]] * (len(record) - len(listed))
    assert "container trainer-0 and 2 more with the same finding" in rendered("text", findings)


def jobset(jobs: int) -> dict[str, Any]:
    """A JobSet of `jobs` identical replicated jobs, each the failing sample's worker."""
    worker: Any = yaml.safe_load(FAILING_PYTORCHJOB)["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]
    job = {"replicas": 2, "template": {"spec": {"template": worker}}}
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "pretrain", "namespace": "llm"},
        "spec": {"replicatedJobs": [{"name": f"job-{i:02d}", **job} for i in range(jobs)]},
    }


def test_identical_templates_give_as_many_findings_as_one_listing_every_role(engine: Engine) -> None:
    one, many = engine.evaluate(jobset(1)), engine.evaluate(jobset(64))
    assert [(f.policy, f.rule) for f in many.results] == [(f.policy, f.rule) for f in one.results]
    templated = [f for f in many.results if f.role]
    assert templated, "the sample has template and container results"
    for finding in templated:
        assert finding.role == "job-00"
        assert finding.roles == tuple(f"job-{i:02d}" for i in range(64))
        assert finding.path is None or finding.path.startswith("spec.replicatedJobs[0].")


def _template(role: str, index: int, original: Unit | None = None) -> Unit:
    return Unit("template", {}, role, None, ("spec", "replicatedJobs", index, "template"), (), original)


def _in(role: str, index: int, **changes: Any) -> Finding:
    path = f"spec.replicatedJobs[{index}].template.spec.template.spec.containers[0]"
    return replace(BASE, role=role, container="trainer", path=path, **changes)


FIRST = _template("a", 0)
TWINS = (FIRST, _template("b", 1, FIRST), _template("c", 2, FIRST))


def test_identical_findings_of_identical_templates_become_one() -> None:
    other = replace(BASE, policy="restart-budget")
    (first, kept) = collapse([_in("a", 0), other, _in("b", 1), _in("c", 2)], TWINS)
    assert (first.role, first.path, first.roles) == ("a", _in("a", 0).path, ("a", "b", "c"))
    assert kept is other


@pytest.mark.parametrize(
    "other",
    [
        _in("b", 1, message="no livenessProbe on b"),  # another message
        _in("b", 1, result=Result.ERROR),
        replace(_in("b", 1), path=_in("b", 1).path + ".env[3]"),  # another field of the template
    ],
)
def test_findings_of_identical_templates_that_differ_stay_apart(other: Finding) -> None:
    assert collapse([_in("a", 0), other], TWINS) == (_in("a", 0), other)


def test_templates_that_are_not_identical_keep_their_findings() -> None:
    apart = (FIRST, _template("b", 1))
    assert collapse([_in("a", 0), _in("b", 1)], apart) == (_in("a", 0), _in("b", 1))


def test_reports_name_the_first_role_and_list_them_all(engine: Engine) -> None:
    findings = list(engine.evaluate(jobset(3)).findings)
    record = json.loads(rendered("json", findings))["findings"]
    assert all(f["roles"] == ["job-00", "job-01", "job-02"] for f in record if f["role"])
    assert "role job-00 and 2 identical templates" in rendered("text", findings)
    reports = list(yaml.safe_load_all(rendered("policyreport", findings)))
    entries = [r for report in reports if report for r in report.get("results", [])]
    placed = [r["properties"] for r in entries if "role" in r.get("properties", {})]
    assert placed and all(p["roles"] == "job-00, job-01, job-02" for p in placed)
