"""kubegap.records: `changed` builds what `dataclasses.replace` builds, for every shape of dataclass."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from kubegap.findings import Finding, Impact, ObjectRef, Result, Severity, WorkloadCost
from kubegap.impact import Inputs, Term
from kubegap.records import changed, fields_of

REF = ObjectRef("v1", "Pod", "team", "trainer")
FINDING = Finding("p", "r", Severity.LOW, Result.FAIL, "message", "fix", REF, role="Worker", path="spec")
INPUTS = Inputs(8, 2e-5, Term(0.5, "d"), Term(0.2, "r"), None, Term(72.0, "t"), Term(0.01, "s"))


@dataclasses.dataclass(slots=True, unsafe_hash=True)
class _One:
    only: int


@dataclasses.dataclass(slots=True, unsafe_hash=True)
class _None:
    pass


@dataclasses.dataclass
class _Derived:
    given: int
    derived: int = dataclasses.field(init=False, default=0)


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"impact": Impact(None, "why", INPUTS, None)},
        {"roles": ("Worker", "Launcher")},
        {"severity": Severity.CRITICAL, "message": "other"},
        {"policy": "first", "roles": ("last",)},  # the first and last fields
    ],
)
def test_a_changed_finding_equals_what_dataclasses_replace_builds(changes: dict[str, object]) -> None:
    out = changed(FINDING, **changes)
    assert out == dataclasses.replace(FINDING, **changes)
    assert out is not FINDING
    assert FINDING.roles == () and FINDING.impact is None  # the original is left as it was


def test_a_priced_finding_is_the_finding_with_its_impact_and_severity() -> None:
    # every field set to a value other than its default, so a field `priced` left out or moved shows
    values: dict[str, object] = {
        "policy": "p", "rule": "r", "severity": Severity.LOW, "result": Result.ERROR, "message": "m",
        "remediation": "fix", "object": REF, "role": "Worker", "container": "c", "path": "spec",
        "file": "f.yaml", "document": 3, "line": 4, "column": 5, "unresolved": ("u",), "impact": None,
        "containers": ("a", "b"), "scope": "node", "roles": ("Worker", "Launcher"),
    }  # fmt: skip
    assert set(values) == {f.name for f in dataclasses.fields(Finding)}
    whole = Finding(**values)  # type: ignore[arg-type]
    impact = Impact(12.5, None, INPUTS, INPUTS)
    out = whole.priced(impact, Severity.CRITICAL)
    assert out == dataclasses.replace(whole, impact=impact, severity=Severity.CRITICAL)
    assert whole.impact is None and whole.severity is Severity.LOW  # the original is left as it was


def test_classes_of_one_field_and_of_none_are_read_as_tuples() -> None:
    assert fields_of(_One)[1](_One(3)) == (3,)
    assert changed(_One(3), only=4) == _One(4)
    assert fields_of(_None)[1](_None()) == ()


def test_a_field_the_constructor_does_not_take_is_refused() -> None:
    with pytest.raises(TypeError, match="_Derived"):
        fields_of(_Derived)


def test_a_name_that_is_no_field_is_refused() -> None:
    with pytest.raises(ValueError):
        changed(FINDING, colour="red")


def test_a_finding_pickles_to_an_equal_one() -> None:
    """Lint's and fix's worker processes send findings back pickled (the compiled Finding is made by its
    own constructor, kubegap.findings.Finding.__reduce__)."""
    finding = changed(FINDING, impact=Impact(12.5, None, INPUTS, None), roles=("Worker", "Launcher"))
    assert pickle.loads(pickle.dumps(finding)) == finding


@pytest.mark.parametrize(
    "record",
    [
        REF,
        Term(0.5, "d"),
        INPUTS,
        Impact(3.5, None, INPUTS, dataclasses.replace(INPUTS, interval=Term(1.0, "i"))),
        WorkloadCost(REF, 8, 120.0, INPUTS, 2.5, ((("p", "r"), 3.5),), "a.yaml", 2),
    ],
    ids=lambda r: type(r).__name__,
)
def test_each_record_a_finding_or_a_verdict_holds_pickles_to_an_equal_one(record: object) -> None:
    """Compiled, each is made by its own constructor (kubegap.records.reduced); an audit's verdict carries
    the workload's cost, a finding its impact."""
    again = pickle.loads(pickle.dumps(record))
    assert again == record
    assert type(again) is type(record)
