from __future__ import annotations

import itertools
from typing import Any

import pytest

from kubegap.enginerules import UNRESOLVED_COUNT
from kubegap.findings import Counts, Finding, ObjectRef, Result, Severity, Summary, worst
from tests.support.samples import RECORD_FIELDS

REF = ObjectRef("batch/v1", "Job", "team-a", "train")


def finding(result: Result = Result.FAIL, severity: Severity = Severity.HIGH, **extra: Any) -> Finding:
    return Finding("nccl-timeout", "timeout-declared", severity, result, "msg", "fix it", REF, **extra)


def test_severity_order_from_info_to_critical() -> None:
    order = [Severity.INFO, Severity.LOW, Severity.MEDIUM, Severity.HIGH, Severity.CRITICAL]
    assert sorted([Severity.HIGH, Severity.INFO, Severity.CRITICAL, Severity.LOW, Severity.MEDIUM]) == order
    for lower, higher in itertools.pairwise(order):
        assert lower < higher
        assert higher >= lower
        assert not lower >= higher
    assert Severity.HIGH >= Severity.HIGH


def test_severity_does_not_compare_with_other_types() -> None:
    with pytest.raises(TypeError):
        _ = Severity.HIGH < "high"


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}},
            ObjectRef("v1", "Pod", "ns", "p"),
        ),
        (
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}},
            ObjectRef("v1", "Node", None, "n1"),
        ),
        (
            {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"generateName": "train-"}},
            ObjectRef("batch/v1", "Job", None, "train-"),
        ),
        (
            {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "a", "generateName": "b-"}},
            ObjectRef("batch/v1", "Job", None, "a"),
        ),
        (
            {"apiVersion": "v1", "kind": "Pod", "metadata": ["not", "a", "map"]},
            ObjectRef("v1", "Pod", None, ""),
        ),
        ({"kind": "Pod"}, ObjectRef("", "Pod", None, "")),
        (
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": 7, "namespace": ""}},
            ObjectRef("v1", "Pod", None, "7"),
        ),
    ],
)
def test_object_ref_of(obj: dict[str, Any], expected: ObjectRef) -> None:
    assert ObjectRef.of(obj) == expected


def test_object_ref_display_and_json() -> None:
    assert REF.display() == "Job/team-a/train"
    assert ObjectRef("v1", "Node", None, "n1").display() == "Node/n1"
    assert ObjectRef("v1", "Node", None, "n1").to_json() == {
        "apiVersion": "v1",
        "kind": "Node",
        "namespace": None,
        "name": "n1",
    }


def test_to_json_has_exactly_the_record_fields() -> None:
    record = finding(role="Worker", container="trainer", path="spec.x", unresolved=("Secret s",)).to_json()
    assert set(record) == RECORD_FIELDS
    assert record["severity"] == "high"
    assert record["result"] == "fail"
    assert record["object"] == {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "namespace": "team-a",
        "name": "train",
    }
    assert record["unresolved"] == ["Secret s"]
    assert (record["file"], record["document"], record["line"], record["column"]) == (None, None, None, None)


def test_located_sets_the_position_only() -> None:
    base = finding(path="spec.template")
    moved = base.located("job.yaml", 2, 14, 9)
    assert (moved.file, moved.document, moved.line, moved.column) == ("job.yaml", 2, 14, 9)
    assert moved.key() == base.key()
    assert moved.to_json()["line"] == 14


def test_key_ignores_message_and_position_but_not_container() -> None:
    a = finding(container="a", path="p")
    assert (
        a.key()
        == Finding(
            "nccl-timeout",
            "timeout-declared",
            Severity.LOW,
            Result.FAIL,
            "other",
            "other",
            REF,
            container="a",
            path="p",
        ).key()
    )
    assert a.key() != finding(container="b", path="p").key()


def test_summary_counts_results_and_failing_severities() -> None:
    summary = Summary(objects=2, not_applicable=1, invalid=1)
    summary.add(
        [
            finding(Result.PASS),
            finding(Result.FAIL, Severity.HIGH),
            finding(Result.FAIL, Severity.MEDIUM),
            finding(Result.ERROR, Severity.HIGH),
            finding(Result.SKIP, Severity.CRITICAL),
        ]
    )
    assert summary.to_json() == {
        "objects": 2,
        "notApplicable": 1,
        "invalid": 1,
        "unsized": 0,
        "results": {"pass": 1, "fail": 2, "error": 1, "skip": 1},
        "failuresBySeverity": {"critical": 0, "high": 1, "medium": 1, "low": 0, "info": 0},
        "unresolved": {},
    }


def test_summary_lists_unresolved_sources_per_object_once() -> None:
    summary = Summary()
    pod = ObjectRef("v1", "Pod", "ns", "a")
    job = ObjectRef("batch/v1", "Job", "ns", "b")
    unseen = ("env X from Secret s (never read)",)
    summary.add(
        [
            Finding("p", "r1", Severity.HIGH, Result.PASS, "", "", pod, unresolved=unseen),
            Finding("p", "r2", Severity.HIGH, Result.FAIL, "m", "f", pod, unresolved=unseen),
            Finding("p", "r1", Severity.HIGH, Result.PASS, "", "", job),
        ]
    )
    assert summary.unresolved == {"Pod/ns/a": list(unseen)}


@pytest.mark.parametrize(
    ("findings", "expected"),
    [
        ([], None),
        ([finding(Result.PASS, Severity.CRITICAL)], None),
        ([finding(Result.SKIP, Severity.CRITICAL)], None),
        ([finding(Result.FAIL, Severity.LOW), finding(Result.FAIL, Severity.MEDIUM)], Severity.MEDIUM),
        ([finding(Result.ERROR, Severity.HIGH), finding(Result.FAIL, Severity.LOW)], Severity.HIGH),
    ],
)
def test_worst_ignores_passes_and_skips(findings: list[Finding], expected: Severity | None) -> None:
    assert worst(findings) == expected


def test_merge_joins_unresolved_like_add() -> None:
    first, second, both = Summary(), Summary(), Summary()
    a = finding(unresolved=("Secret a",))
    b = finding(unresolved=("Secret b",))
    first.add([a])
    second.add([b])
    both.add([a, b])
    first.merge(second)
    assert first.unresolved == both.unresolved


def test_counts_added_one_object_at_a_time_are_what_adding_the_results_gives() -> None:
    job = ObjectRef("batch/v1", "Job", "ns", "b")
    objects = [
        [
            finding(Result.PASS),
            finding(Result.FAIL, Severity.LOW, unresolved=("Secret a",)),
            finding(Result.FAIL, Severity.HIGH, unresolved=("Secret b", "Secret a")),
        ],
        [finding(Result.ERROR, Severity.MEDIUM), finding(Result.SKIP)],
        [],
        [
            Finding("p", "r", Severity.LOW, Result.FAIL, "m", "f", job, unresolved=("Secret j",)),
            Finding(UNRESOLVED_COUNT, "r", Severity.INFO, Result.SKIP, "", "", job),
        ],
        [finding(Result.PASS, unresolved=("Secret c",))],
    ]
    added, counted = Summary(), Summary()
    for results in objects:
        added.add(results)
        counted.add_counts(Counts.of(results))
    assert counted == added and added.unsized == 1
    assert counted.unresolved == {
        REF.display(): ["Secret a", "Secret b", "Secret c"],
        job.display(): ["Secret j"],
    }
