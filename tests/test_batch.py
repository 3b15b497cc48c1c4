"""One CEL program per scope (kubegap.batch) gives exactly the results of each validation run alone, and an
error in one validation is still reported for that validation only."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubegap import batch, cel, testing
from kubegap.config import Settings
from kubegap.evaluate import Engine, build_engine
from kubegap.findings import Result
from tests.support.samples import example_objects
from tests.test_evaluate import engine_for, policy_text, pytorchjob

EXAMPLES = list(testing.discover(Path(str(files("kubegap.policies")))))


def _alone(engine: Engine) -> Engine:
    """An engine like `engine` with no scope programs: every validation runs alone, as before batching."""
    alone = Engine(engine.compiled, engine.catalogue, engine.backend, engine.impact)
    alone.known_annotations = engine.known_annotations  # the policies loaded but not run are not given
    alone.scope_programs = {}
    alone.memo = None  # evaluated anew, not remembered from the engine it copies
    return alone


@pytest.mark.parametrize("backend", cel.BACKENDS)
def test_batched_results_equal_each_validation_alone_on_every_example(backend: str) -> None:
    engine = build_engine(Settings(cel_backend=backend))
    assert {scope for _, scope in engine.scope_programs} >= {"workload", "template", "container", "node"}
    alone = _alone(engine)
    objects = example_objects()
    assert len(objects) > 100
    for obj in objects:
        batched, single = engine.evaluate(obj), alone.evaluate(obj)
        assert batched.results == single.results, obj.get("metadata", {}).get("name")


@pytest.mark.parametrize("backend", cel.BACKENDS)
def test_batched_results_equal_each_validation_alone_under_examples_params(backend: str) -> None:
    """Rules a cluster must declare first (`# params:`) run only with their examples' parameters."""
    with_params = [e for e in EXAMPLES if e.params]
    assert with_params
    for example in with_params:
        engine = testing.build(example, Settings(cel_backend=backend))
        alone = _alone(engine)
        for obj in (d for d in yaml.safe_load_all(example.path.read_text()) if isinstance(d, dict)):
            assert engine.evaluate(obj).results == alone.evaluate(obj).results, example.path.name


def test_a_unit_costs_one_call_per_scope_not_one_per_validation(monkeypatch: pytest.MonkeyPatch) -> None:
    engine = build_engine(Settings(cel_backend="cel-expr"))
    obj = pytorchjob()
    calls = {"n": 0}
    for compiled in engine.compiled:
        for validation in compiled.validations:
            for name in ("expression", "applies_to", "message_expression", "field_path"):
                program = getattr(validation, name)
                if program is not None and not _reads_sized_variables(validation, name):
                    object.__setattr__(validation, name, _counting(program, calls))
    results = engine.evaluate(obj).results
    assert any(r.result is Result.PASS for r in results)
    assert any(r.result is Result.FAIL and r.message for r in results)
    assert calls["n"] == 0  # every verdict, message and path came from the scope programs


def _reads_sized_variables(validation: Any, name: str) -> bool:
    """A message whose budget depends on the variables' sizes is evaluated alone, by design."""
    spec = validation.validation
    source = {"message_expression": spec.message_expression, "field_path": spec.field_path_expression}.get(
        name
    )
    return bool(source and "variables." in source and ".map(" in source)


def _counting(program: Any, calls: dict[str, int]) -> Any:
    def run(activation: Any) -> Any:
        calls["n"] += 1
        return program(activation)

    return run


ERRING = """\
- name: fine
  expression: "size(object.spec.pytorchReplicaSpecs) > 0"
- name: broken
  expression: "object.spec.noSuchField == 1"
- name: failing
  expression: "size(object.spec.pytorchReplicaSpecs) > 5"
  message: too few replica specs
"""


def test_an_error_in_one_validation_is_reported_for_it_and_its_siblings_keep_their_verdicts(
    tmp_path: Path, backend: str
) -> None:
    engine = engine_for(tmp_path, backend, policy_text("erring", "workload", ERRING))
    assert engine.scope_programs  # the batch exists; it errs at run time and each validation runs alone
    results = {r.rule: r for r in engine.evaluate(pytorchjob()).results}
    assert results["fine"].result is Result.PASS
    assert results["broken"].result is Result.ERROR
    assert results["failing"].result is Result.FAIL
    assert results["failing"].message == "too few replica specs"


NON_BOOL = """\
- name: gives-a-string
  expression: "'yes'"
- name: fine
  expression: "true"
- name: odd-applies
  appliesTo: "'sometimes'"
  expression: "false"
"""


def test_a_non_bool_verdict_is_an_error_and_a_non_bool_applies_to_does_not_apply(
    tmp_path: Path, backend: str
) -> None:
    engine = engine_for(tmp_path, backend, policy_text("nonbool", "workload", NON_BOOL))
    results = {r.rule: r for r in engine.evaluate(pytorchjob()).results}
    assert results["gives-a-string"].result is Result.ERROR
    assert "not a bool" in results["gives-a-string"].message
    assert results["fine"].result is Result.PASS
    assert "odd-applies" not in results


def test_a_policy_that_does_not_apply_gives_nothing_batched(tmp_path: Path, backend: str) -> None:
    text = policy_text("never", "container", '- {name: always, expression: "false"}', applies_to="false")
    engine = engine_for(tmp_path, backend, text)
    assert engine.scope_programs
    assert engine.evaluate(pytorchjob()).results == ()


@pytest.fixture(params=cel.BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


def test_every_scope_has_a_declared_units_variable() -> None:
    """Each scope's program reads its units from its own variable, which both runtimes must declare."""
    assert {batch.units_variable(scope) for scope in batch.SCOPE_BINDINGS} <= set(cel.VARIABLES)


def test_a_program_answer_of_any_other_shape_is_no_answer() -> None:
    """The outcomes are read from the program's lists only where each is the shape the program makes
    (per unit, per policy, per validation: [], [verdict] or [false, message, path]); else no answer, and
    each validation runs alone."""
    from kubegap.facts.model import Unit

    engine = build_engine(Settings())
    (_, scope), program = next((k, p) for k, p in engine.scope_programs.items() if len(p.policies) > 1)
    policies = program.policies
    names = [p.batches[scope].names for p in policies]
    units = [Unit(scope, {}), Unit(scope, {})]

    def answer(verdict: list[Any]) -> list[Any]:
        return [[[verdict for _ in own] for own in names] for _ in units]

    good = answer([True])
    found = batch._outcomes(good, policies, scope, units)
    assert found is not None and len(found) == len(units) * len(policies)
    first = found[(id(policies[0]), id(units[1]))]
    assert list(first) == list(names[0]) and set(first.values()) == {(True,)}
    failing = answer([False, "why", "spec.x"])
    assert batch._outcomes(failing, policies, scope, units) is not None
    absent = [[[] for _ in names] for _ in units]  # no policy applies: an empty mapping each
    assert set(map(len, batch._outcomes(absent, policies, scope, units).values())) == {0}  # type: ignore[union-attr]
    bad: list[Any] = [
        "text",
        good[:1],  # a unit short
        [good[0], "text"],  # a unit that is no list
        [good[0][:-1], good[1]],  # a policy short
        [[*good[0][:-1], "text"], good[1]],  # a policy that is no list
        [[good[0][0][:-1], *good[0][1:]], good[1]],  # a validation short
        [[["text", *good[0][0][1:]], *good[0][1:]], good[1]],  # a verdict that is no list
        [[[[True, False], *good[0][0][1:]], *good[0][1:]], good[1]],  # of two items
    ]
    for values in bad:
        assert batch._outcomes(values, policies, scope, units) is None, values
