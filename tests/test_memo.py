"""Identical workloads evaluated once (kubegap.memo): what the digest leaves out is never read, a hit is
exactly a fresh evaluation of the new object, and anything read makes a miss."""

from __future__ import annotations

import copy
import dataclasses
import datetime
import time
from pathlib import Path
from typing import Any

import pytest

from kubegap import kinds, memo
from kubegap.audit import configmaps
from kubegap.config import Settings
from kubegap.evaluate import Context, DeadlineExceeded, Engine, build_engine
from kubegap.findings import Finding, Impact, ObjectRef, Result, Severity, moved_to
from kubegap.impact import Inputs, Term
from tests.support.samples import WORKLOAD_FILES, example_objects
from tests.test_evaluate import engine_for, policy_text, pytorchjob


def _workloads() -> list[dict[str, Any]]:
    docs = example_objects(*WORKLOAD_FILES)
    return [d for d in docs if (row := kinds.row_of(d)) is not None and row.templates is not None]


WORKLOADS = _workloads()


def _names_configmap(obj: dict[str, Any]) -> bool:
    return bool(configmaps.referenced(obj))


def _elsewhere(obj: dict[str, Any]) -> dict[str, Any]:
    """Another copy of `obj` as a cluster holds it: every field the digest leaves out changed, the namespace
    too where no environment names a ConfigMap."""
    other = copy.deepcopy(obj)
    meta = other.setdefault("metadata", {})
    if not _names_configmap(obj):
        meta["namespace"] = "elsewhere"
    meta.update(
        name=f"{meta.get('name', 'x')}-7f9c2",
        generateName="copy-",
        uid="0c1d2e3f",
        resourceVersion="99",
        creationTimestamp="2026-01-01T00:00:00Z",
        generation=4,
        managedFields=[{"manager": "kubectl", "operation": "Update"}],
        ownerReferences=[{"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "u"}],
    )
    other["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}]}
    if other.get("kind") == "Pod" and isinstance(other.get("spec"), dict):
        other["spec"].update(nodeName="gpu-0042", hostname="trainer-3")
    return other


def _owned(obj: dict[str, Any]) -> dict[str, Any]:
    obj["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "X", "name": "x", "uid": "1"}]
    return obj


@pytest.fixture(scope="module")
def fresh() -> Engine:
    engine = build_engine(Settings())
    engine.memo = None
    return engine


def test_the_workloads_include_pods_and_configmap_readers() -> None:
    assert len(WORKLOADS) > 150
    assert any(w["kind"] == "Pod" for w in WORKLOADS)
    assert sum(map(_names_configmap, WORKLOADS)) >= 3, "the namespace is kept for these: test some"


@pytest.mark.parametrize("index", range(len(WORKLOADS)))
def test_nothing_the_digest_leaves_out_changes_an_evaluation(fresh: Engine, index: int) -> None:
    obj = WORKLOADS[index]
    other = _elsewhere(obj)
    mine, theirs = fresh.evaluate(obj), fresh.evaluate(other)
    assert theirs.ref != mine.ref
    assert moved_to(mine.results, theirs.ref) == theirs.results
    assert (mine.cost is None) == (theirs.cost is None)
    if mine.cost is not None and theirs.cost is not None:
        assert dataclasses.replace(mine.cost, ref=theirs.ref) == theirs.cost
    assert memo.Memo().key(_owned(copy.deepcopy(obj)), {}) == memo.Memo().key(other, {})


def test_an_identical_workload_is_remembered_and_told_of_its_own_reference(fresh: Engine) -> None:
    engine = build_engine(Settings())
    assert engine.memo is not None
    first = _owned(pytorchjob())
    copies = [_elsewhere(first) for _ in range(3)]
    engine.evaluate(first)
    for other in copies:
        found = engine.evaluate(other)
        assert found == fresh.evaluate(other)
        assert all(f.object == ObjectRef.of(other) for f in found.results)
    assert engine.memo.hits == 3


def test_a_change_to_anything_read_is_evaluated_anew() -> None:
    engine = build_engine(Settings())
    assert engine.memo is not None
    first = _owned(pytorchjob())
    _env(first).append({"name": "NCCL_IB_HCA", "valueFrom": {"configMapKeyRef": {"name": "n", "key": "k"}}})
    engine.evaluate(first)
    changed = [copy.deepcopy(first) for _ in range(4)]
    changed[0]["metadata"]["annotations"] = {"kubegap.dev/step-time": "2s"}
    changed[1]["metadata"]["namespace"] = "other"  # it names a ConfigMap, so its namespace is read
    changed[2]["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = 3
    changed[3]["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["hostNetwork"] = True
    for other in changed:
        engine.evaluate(other)
    assert engine.memo.hits == 0


def test_the_date_and_the_configmaps_read_are_part_of_the_digest(monkeypatch: pytest.MonkeyPatch) -> None:
    kept = memo.Memo()
    obj = _owned(pytorchjob())
    key = kept.key(obj, {})
    assert kept.key(obj, {("ml", "nccl"): {"NCCL_DEBUG": "INFO"}}) != key
    monkeypatch.setattr(time, "time", lambda: 4_102_444_800.0)  # 2100-01-01: memo.today() reads the clock
    assert kept.key(obj, {}) != key


def test_the_date_is_made_again_when_the_utc_day_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    midnight = 20_000 * 86_400  # 2024-10-04T00:00:00Z
    for now in (
        midnight - 0.5,
        midnight - 0.5,
        midnight,
        midnight + 86_399.9,
        midnight - 1,
        midnight + 86_400,
    ):
        monkeypatch.setattr(time, "time", lambda now=now: now)
        assert memo.today() == datetime.datetime.fromtimestamp(now, datetime.UTC).date().isoformat()
    assert memo.today() == "2024-10-05"


def test_what_is_remembered_is_bounded() -> None:
    kept = memo.Memo(capacity=2)
    engine = build_engine(Settings())
    evaluations = []
    for replicas in (1, 2, 3):
        obj = _owned(pytorchjob())
        obj["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = replicas
        key = kept.key(obj, {})
        assert key is not None
        kept.put(key, engine.evaluate(obj))
        evaluations.append((key, ObjectRef.of(obj)))
    assert kept.get(evaluations[0][0], evaluations[0][1]) is None
    assert kept.get(evaluations[2][0], evaluations[2][1]) is not None


def test_an_engine_whose_policies_read_the_object_remembers_nothing(tmp_path: Path) -> None:
    validation = "- name: named\n  expression: \"object.metadata.name != 'b'\"\n  message: m\n"
    engine = engine_for(tmp_path, "cel-expr", policy_text("reader", "workload", validation))
    assert engine.memo is None
    first = pytorchjob()
    other = copy.deepcopy(first)
    other["metadata"]["name"] = "b"
    assert [f.result for f in engine.evaluate(first).results] == [Result.PASS]
    assert [f.result for f in engine.evaluate(other).results] == [Result.FAIL]


def test_many_configmaps_are_not_worth_a_digest() -> None:
    many = {("ml", f"cm{i}"): {"K": "V"} for i in range(20)}
    assert memo.Memo().key(_owned(pytorchjob()), many) is None
    engine = build_engine(Settings())
    engine.evaluate(_owned(pytorchjob()), Context(many))
    engine.evaluate(_owned(pytorchjob()), Context(many))
    assert engine.memo is not None and engine.memo.hits == 0


def test_moved_to_located_and_priced_keep_every_field_but_the_ones_they_set() -> None:
    # every field a value of its type that no default has, so that a field one of them forgets is told
    inputs = Inputs(8, 2e-5, Term(0.5, "d"), Term(0.2, "r"), None, Term(72.0, "t"), Term(0.01, "s"))
    typed: dict[str, Any] = {
        "severity": Severity.CRITICAL,
        "result": Result.SKIP,
        "object": ObjectRef("v1", "Pod", "a", "b"),
        "impact": Impact(12.5, None, inputs, None),
        "document": 7,
        "line": 8,
        "column": 9,
        "unresolved": ("value of unresolved",),
        "containers": ("value of containers",),
        "roles": ("value of roles",),
    }
    values = {f.name: typed.get(f.name, f"value of {f.name}") for f in dataclasses.fields(Finding)}
    finding = Finding(**values)
    ref = ObjectRef("v1", "Pod", "a", "c")
    assert moved_to([finding], ref) == (dataclasses.replace(finding, object=ref),)
    placed = dataclasses.replace(finding, file="f.yaml", document=1, line=2, column=3)
    assert finding.located("f.yaml", 1, 2, 3) == placed
    priced = dataclasses.replace(finding, impact=Impact(1.5, None, inputs, None), severity=Severity.LOW)
    assert finding.priced(Impact(1.5, None, inputs, None), Severity.LOW) == priced


def test_a_remembered_evaluation_past_its_deadline_is_not_given() -> None:
    engine = build_engine(Settings())
    engine.evaluate(_owned(pytorchjob()))
    with pytest.raises(DeadlineExceeded):
        engine.evaluate(_elsewhere(pytorchjob()), deadline=time.monotonic() - 1)
    assert engine.memo is not None and engine.memo.hits == 1


def test_an_object_written_by_hand_is_not_remembered() -> None:
    engine = build_engine(Settings())
    first = pytorchjob()
    assert engine.memo is not None and engine.memo.key(first, {}) is None
    engine.evaluate(first)
    engine.evaluate(_elsewhere(first))
    assert engine.memo.hits == 0


def _env(obj: dict[str, Any]) -> list[dict[str, Any]]:
    container = obj["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]
    return container.setdefault("env", [])  # type: ignore[no-any-return]


def test_the_namespace_is_read_only_where_a_configmap_is_named(fresh: Engine) -> None:
    here = _owned(pytorchjob())
    there = copy.deepcopy(here)
    there["metadata"]["namespace"] = "elsewhere"
    assert memo.Memo().key(here, {}) == memo.Memo().key(there, {})
    for obj in (here, there):
        _env(obj).append({"name": "NCCL_DEBUG", "valueFrom": {"configMapKeyRef": {"name": "n", "key": "k"}}})
    assert memo.Memo().key(here, {}) != memo.Memo().key(there, {})
    # where the ConfigMap cannot be read, the finding names it with the namespace: a hit would misreport
    texts = [" ".join(u for f in fresh.evaluate(o).results for u in f.unresolved) for o in (here, there)]
    assert "elsewhere/n" in texts[1] and "elsewhere/n" not in texts[0]


def test_an_unowned_object_is_remembered_where_asked() -> None:
    engine = build_engine(Settings())
    assert engine.memo is not None
    engine.memo.unowned = True
    first = pytorchjob()
    assert engine.memo.key(first, {}) is not None
    other = _elsewhere(first)
    del other["metadata"]["ownerReferences"]
    engine.evaluate(first)
    found = engine.evaluate(other)
    assert engine.memo.hits == 1
    fresh = build_engine(Settings())
    fresh.memo = None
    assert found == fresh.evaluate(other)


def test_equal_content_gives_one_digest_however_it_was_built() -> None:
    import json

    text = json.dumps(_owned(pytorchjob()))
    first, second = json.loads(text), json.loads(text)
    shared = json.loads(text)  # the replicas' equal trainers as one dict referenced twice
    specs = [t["template"]["spec"]["containers"] for t in shared["spec"]["pytorchReplicaSpecs"].values()]
    assert specs[0][0] == specs[1][0]
    specs[1][0] = specs[0][0]
    kept = memo.Memo()
    assert kept.key(first, {}) == kept.key(second, {}) == kept.key(shared, {})
    second["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = 2.0  # a float is not the integer 2
    assert kept.key(second, {}) != kept.key(first, {})


def test_a_value_no_digest_can_hold_is_evaluated_not_remembered() -> None:
    obj = _owned(pytorchjob())
    obj["spec"]["note"] = object()
    assert memo.Memo().key(obj, {}) is None
