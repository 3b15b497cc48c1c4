"""Identical pod templates read once (kubegap.facts.twins) give exactly the facts and results of reading
each one (with the results identical templates share told once): on every bundled example and test
workload, and on variants of them whose templates are made twins of one another."""

from __future__ import annotations

import copy
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from kubegap import kinds
from kubegap.collapse import collapse
from kubegap.config import Settings
from kubegap.evaluate import Engine, build_engine
from kubegap.facts import Unit, twins
from kubegap.fieldpath import FieldPath
from kubegap.findings import Result
from kubegap.workloads import Container, PodTemplate
from tests.support.samples import WORKLOAD_FILES, example_objects
from tests.test_evaluate import engine_for, policy_text


def _documents() -> list[dict[str, Any]]:
    return example_objects(*WORKLOAD_FILES)


def _at(obj: Any, path: FieldPath) -> Any:
    for part in path:
        obj = obj[part]
    return obj


def _twinned(obj: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Variants of `obj` with twin templates: a listed replica (a JobSet's job, a Volcano task) appended
    again under another name, and each keyed replica type (Master, Worker) made a copy of another."""
    workload = kinds.workload_of(obj)
    if workload is None:
        return
    for template in workload.templates:
        path = template.path
        listed = next((i for i, part in enumerate(path) if isinstance(part, int)), None)
        if listed is not None:
            twin = copy.deepcopy(obj)
            entries = _at(twin, path[:listed])
            entry = copy.deepcopy(entries[path[listed]])
            if isinstance(entry, dict) and "name" in entry:
                entry["name"] = f"{entry['name']}-twin"
            entries += [entry, copy.deepcopy(entry)]
            yield twin
        elif len(path) >= 3:
            twin = copy.deepcopy(obj)
            parent = _at(twin, path[:-2]) if path[-1] == "template" else None
            if isinstance(parent, dict) and len(parent) > 1:
                for key in parent:
                    parent[key] = copy.deepcopy(_at(twin, path[:-1]))
                yield twin


CASES = [(d, v) for d in _documents() for v in (d, *_twinned(d))]


@pytest.fixture(scope="module")
def engine() -> Engine:
    engine = build_engine(Settings())
    engine.memo = None  # each evaluation below is made anew, twins read once or not
    return engine


def test_the_cases_have_twins() -> None:
    with_twins = [
        v
        for _, v in CASES
        if (w := kinds.workload_of(v)) and any(o is not None for o in twins.originals(w.templates))
    ]
    assert len(with_twins) > 50


@pytest.mark.parametrize("index", range(len(CASES)))
def test_twins_read_once_give_the_facts_and_results_of_reading_each(
    engine: Engine, index: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, obj = CASES[index]
    once_facts = kinds.gather(obj, engine.catalogue, {})
    once = engine.evaluate(obj)
    monkeypatch.setattr(twins, "READ_ONCE", False)
    assert kinds.gather(obj, engine.catalogue, {}) == once_facts
    each = engine.evaluate(obj)
    # read separately, every template has its own results: identical ones of twins are then told once
    templates = once_facts.units.get("template", ()) if once_facts else ()
    assert once.results == collapse(each.results, templates)
    assert once.cost == each.cost


def test_a_twin_differs_only_in_its_path_and_role(engine: Engine) -> None:
    obj = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "j"},
        "spec": {"replicatedJobs": []},
    }
    job = {"template": {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}}}
    obj["spec"]["replicatedJobs"] = [{"name": n, "replicas": 1, **copy.deepcopy(job)} for n in ("a", "b")]
    workload = kinds.workload_of(obj)
    assert workload is not None
    assert twins.originals(workload.templates) == [None, 0]
    gathered = kinds.gather(obj, engine.catalogue, {})
    assert gathered is not None
    first, second = gathered.units["template"]
    assert (first.role, second.role) == ("a", "b")
    assert second.bindings["template"]["path"] == "spec.replicatedJobs[1].template.spec.template"
    assert {**second.bindings["template"], "role": "a", "path": first.bindings["template"]["path"]} == (
        first.bindings["template"]
    )


def test_a_twins_declarations_are_its_originals_at_its_own_path(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Declarations on twin templates, readable or not, are read once and moved: the facts, the unreadable
    ones (each at its own template's path, in the same order) and the results are those of reading each."""
    notes = {
        "kubegap.dev/step-time": "8.4 sec",
        "kubegap.dev/checkpoint-interval": "2h",
        "kubegap.dev/checkpoint-save-time": "soon",
        "kubegap.dev/expected-runtime": "72h",
    }
    container = {
        "name": "trainer",
        "image": "nvcr.io/nvidia/pytorch:24.07-py3",
        "command": ["torchrun", "train.py", "--save_steps", "500"],
        "resources": {"limits": {"nvidia.com/gpu": 8}},
    }
    pod = {"metadata": {"annotations": notes}, "spec": {"containers": [container]}}
    obj = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "j", "annotations": {"kubegap.dev/checkpoint-save-time": "later"}},
        "spec": {
            "replicatedJobs": [
                {"name": n, "replicas": 2, "template": {"spec": {"template": copy.deepcopy(pod)}}}
                for n in ("a", "b", "c")
            ]
        },
    }
    once = kinds.gather(obj, engine.catalogue, {})
    results = engine.evaluate(obj).results
    assert once is not None
    # each template's unreadable declarations, in the order each template was read
    assert [(v.path[2], v.annotation, v.text) for v in once.invalid] == [
        (index, key, notes[key])
        for key in ("kubegap.dev/step-time", "kubegap.dev/checkpoint-save-time")
        for index in range(3)
    ]
    first = "spec.replicatedJobs[0].template.spec.template.metadata.annotations"
    assert once.facts["checkpoint"]["interval"]["path"] == f"{first}['kubegap.dev/checkpoint-interval']"
    assert once.facts["expectedRuntime"]["path"] == f"{first}['kubegap.dev/expected-runtime']"
    monkeypatch.setattr(twins, "READ_ONCE", False)
    assert kinds.gather(obj, engine.catalogue, {}) == once
    assert results == collapse(engine.evaluate(obj).results, once.units["template"])


def test_templates_differing_in_a_container_are_not_twins() -> None:
    job = {"template": {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}}}
    other = copy.deepcopy(job)
    other["template"]["spec"]["template"]["spec"]["containers"][0]["image"] = "j"
    jobs = [{"name": n, **j} for n, j in (("a", job), ("b", other), ("c", copy.deepcopy(job)))]
    obj = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "spec": {"replicatedJobs": jobs}}
    workload = kinds.workload_of(obj)
    assert workload is not None
    assert twins.originals(workload.templates) == [None, None, 0]

    # a container read from outside the pod spec (a TrainJob's trainer) is compared on its own
    def trainer(index: int, image: str) -> PodTemplate:
        path = ("spec", "trainers", index)
        return PodTemplate("t", path, 1, {}, {}, (Container("t", (*path, "trainer"), {"image": image}),))

    assert twins.originals([trainer(0, "i"), trainer(1, "j"), trainer(2, "i")]) == [None, None, 0]


def test_a_path_under_another_template_or_a_longer_name_is_not_moved() -> None:
    def pod(path: FieldPath) -> PodTemplate:
        return PodTemplate("r", path, 1, {}, {}, ())

    facts = {"a": ["spec.tasks[1].template.spec", "spec.tasks[1].templates", "x"], "n": 3, "b": {"c": "y"}}
    original = twins.Original(pod(("spec", "tasks", 1, "template")), facts)
    twin = pod(("spec", "tasks", 2, "template"))
    assert original.moved(("spec", "tasks", 0, "template", "spec"), twin) == (
        "spec",
        "tasks",
        0,
        "template",
        "spec",
    )
    assert original.moved(("spec", "tasks", 1, "template", "spec"), twin) == (
        "spec",
        "tasks",
        2,
        "template",
        "spec",
    )
    moved = original.facts(twin)
    assert moved == {
        "a": ["spec.tasks[2].template.spec", "spec.tasks[1].templates", "x"],
        "n": 3,
        "b": {"c": "y"},
    }
    assert moved["b"] is facts["b"]  # what names no path is shared, not copied
    assert facts["a"][0] == "spec.tasks[1].template.spec"  # the original's facts are left as they were


def test_distinct_templates_are_compared_with_a_bounded_number_of_others() -> None:
    def pod(index: int) -> PodTemplate:
        return PodTemplate("r", ("spec", "tasks", index, "template"), 1, {}, {"n": index % 20}, ())

    found = twins.originals([pod(i) for i in range(40)])
    assert found[:20] == [None] * 20
    assert found[20:28] == list(range(8))  # twins of the first eight distinct templates are found
    assert found[28:40] == [None] * 12  # later ones are read again, as any other template


def _jobset(names: Sequence[str]) -> dict[str, Any]:
    pod = {
        "spec": {"containers": [{"name": "c", "image": "i", "resources": {"limits": {"nvidia.com/gpu": 8}}}]}
    }
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "j"},
        "spec": {
            "replicatedJobs": [
                {"name": n, "replicas": 1, "template": {"spec": {"template": copy.deepcopy(pod)}}}
                for n in names
            ]
        },
    }


@pytest.mark.parametrize(
    ("scope", "expression"),
    [
        ("template", "template.role != 'b'"),
        ("container", "!container.path.startsWith('spec.replicatedJobs[1]')"),
        ("template", "!template.exists(k, k == 'pa' + 'th' && template[k].contains('[1]'))"),
    ],
)
def test_a_verdict_that_reads_a_units_place_is_judged_on_each_twin(
    tmp_path: Path, scope: str, expression: str
) -> None:
    policy = policy_text("placed", scope, f"- name: here\n  expression: {expression!r}\n  message: m\n")
    engine = engine_for(tmp_path, "cel-expr", policy)
    verdicts = [(f.roles, f.result) for f in engine.evaluate(_jobset(["a", "b", "c"])).results]
    assert verdicts == [(("a", "c"), Result.PASS), ((), Result.FAIL)]  # a's and c's pass told once


def test_a_verdict_that_reads_no_place_is_taken_from_the_first_twin_and_a_failure_keeps_its_own_message(
    tmp_path: Path,
) -> None:
    validation = """\
        - name: here
          expression: template.gpusPerPod < 8
          messageExpression: "'role ' + template.role + ' at ' + template.path"
        """
    engine = engine_for(tmp_path, "cel-expr", policy_text("placeless", "template", validation))
    assert all(g.twins for g in engine.group_of.values())
    found = [(f.role, f.result, f.message) for f in engine.evaluate(_jobset(["a", "b"])).results]
    assert found == [
        ("a", Result.FAIL, "role a at spec.replicatedJobs[0].template.spec.template"),
        ("b", Result.FAIL, "role b at spec.replicatedJobs[1].template.spec.template"),
    ]


def test_no_bundled_verdict_reads_a_units_place(engine: Engine) -> None:
    """Every bundled policy's verdicts on a twin template are taken from the first twin's."""
    assert all(group.twins for group in engine.group_of.values())


def test_a_twins_facts_are_moved_only_when_read(engine: Engine) -> None:
    """A twin whose results are told with its original's never reads its own facts: none are copied."""
    obj = _jobset([f"j{i}" for i in range(8)])
    gathered = kinds.gather(obj, engine.catalogue, {})
    assert gathered is not None
    engine.evaluate_facts(obj, gathered)
    moved = [u for u in gathered.units["container"] if _moved(u)]
    assert moved == [] and len(gathered.units["container"]) == 8
    last = gathered.units["container"][-1]
    assert (
        last.bindings["container"]["path"]
        == "spec.replicatedJobs[7].template.spec.template.spec.containers[0]"
    )
    assert last.bindings["template"]["role"] == "j7"
    assert [u for u in gathered.units["container"] if _moved(u)] == [last]


def _moved(unit: Unit) -> bool:
    """Whether a twin unit's facts have been moved from its original's (kubegap.facts.twins.Deferred)."""
    bindings = unit.bindings
    return type(bindings) is twins.Bindings and bindings._facts._facts is not None


def test_what_a_twin_could_not_see_is_what_its_own_facts_say(engine: Engine) -> None:
    """A twin's unresolved sources, listed for the object and the checkpoint without reading its facts,
    are those its facts hold once moved: here a ConfigMap and a flag whose text spells a template's path
    (kubegap.facts.twins moves such text with the path)."""
    first = "spec.replicatedJobs[0].template.spec.template"
    obj = _jobset(["a", "b", "c"])
    for job in obj["spec"]["replicatedJobs"]:
        trainer = job["template"]["spec"]["template"]["spec"]["containers"][0]
        trainer["command"] = ["torchrun", "train.py", "--save_steps", first]
        trainer["env"] = [{"name": "S", "valueFrom": {"configMapKeyRef": {"name": first, "key": "k"}}}]
    gathered = kinds.gather(obj, engine.catalogue, {})
    assert gathered is not None
    texts = [u for unit in gathered.units["container"] for u in unit.bindings["container"]["unresolved"]]
    assert len(texts) == 6 and "spec.replicatedJobs[2]" in texts[-1]
    assert gathered.unresolved == tuple(dict.fromkeys(texts))
    assert gathered.facts["checkpoint"]["unresolvedText"] == "; ".join(dict.fromkeys(texts))
