from __future__ import annotations

import textwrap
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from kubegap import cel, policy
from kubegap.compiled import Guarded, compile_policies, resolve_params, select
from kubegap.config import Settings
from kubegap.errors import PolicyError, UsageError
from kubegap.evaluate import build_engine

POLICY = """\
apiVersion: kubegap.dev/v1alpha1
kind: Policy
metadata: {name: probe}
spec:
  title: Probe
  severity: high
  scope: container
  appliesTo: "container.gpus > 0"
  params:
    limit: {type: duration, default: 10m}
    names: {type: list, default: [a, b]}
    count: {type: int, default: 3}
    strict: {type: bool, default: false}
    rails: {type: intMap, default: {"8": 8}}
  variables:
    - {name: doubled, expression: "container.gpus * 2"}
  validations:
    - name: check
      expression: "container.gpus <= params.count"
      appliesTo: "true"
      messageExpression: "'too many'"
      fieldPathExpression: "container.path"
  remediation: Fix it.
"""


def load(tmp_path: Path, text: str = POLICY) -> list[policy.Policy]:
    folder = tmp_path / "probe"
    folder.mkdir(exist_ok=True)
    (folder / "policy.yaml").write_text(textwrap.dedent(text))
    return policy.load_dir(tmp_path, "mine")


@pytest.fixture(params=cel.BACKENDS)
def backend(request: pytest.FixtureRequest) -> cel.Backend:
    name: str = request.param
    return cel.backend(name)


def test_compiles_every_expression(tmp_path: Path, backend: cel.Backend) -> None:
    (compiled,) = compile_policies(load(tmp_path), Settings(), backend)
    (validation,) = compiled.validations
    assert compiled.applies_to is not None
    assert validation.applies_to is not None
    assert validation.message_expression is not None
    assert validation.field_path is not None
    assert [v.name for v, _ in compiled.variables] == ["doubled"]
    assert validation.remediation == "Fix it."
    assert compiled.params == {
        "limit": 600.0,
        "names": ["a", "b"],
        "count": 3,
        "strict": False,
        "rails": {"8": 8},
    }
    assert compiled.params_text["rails"] == "8:8"


# (where the broken expression sits, edit to POLICY, how the error must name it)
BROKEN = [
    (
        "validation",
        ('expression: "container.gpus <= params.count"', 'expression: "container.gpus <="'),
        "validation check",
    ),
    ("policy appliesTo", ('appliesTo: "container.gpus > 0"', 'appliesTo: "container.gpus >"'), "appliesTo"),
    ("validation appliesTo", ('appliesTo: "true"', 'appliesTo: "true &&"'), "validation check appliesTo"),
    (
        "messageExpression",
        ("messageExpression: \"'too many'\"", 'messageExpression: "\'too many"'),
        "validation check messageExpression",
    ),
    (
        "fieldPathExpression",
        ('fieldPathExpression: "container.path"', 'fieldPathExpression: "container."'),
        "validation check fieldPathExpression",
    ),
    ("variable", ('expression: "container.gpus * 2"', 'expression: "container.gpus * "'), "variable doubled"),
    (  # compiles inside its batch's brackets, not alone: the batch proves nothing of it
        "validation that closes a bracket it did not open",
        (
            'expression: "container.gpus <= params.count"',
            'expression: "container.gpus <= params.count) || (true"',
        ),
        "validation check",
    ),
]


@pytest.mark.parametrize(("case", "edit", "where"), BROKEN, ids=[b[0] for b in BROKEN])
def test_compile_error_names_file_policy_validation_and_expression(
    tmp_path: Path, backend: cel.Backend, case: str, edit: tuple[str, str], where: str
) -> None:
    old, new = edit
    assert old in POLICY
    policies = load(tmp_path, POLICY.replace(old, new, 1))
    with pytest.raises(PolicyError) as caught:
        compile_policies(policies, Settings(), backend)
    message = str(caught.value)
    broken = new.split(": ", 1)[1].strip('"').replace('\\"', '"')
    assert message.startswith(f"mine/probe/policy.yaml: policy probe, {where}: CEL does not compile")
    assert f"expression: {broken}\n" in message
    assert backend.name in message


def test_cel_expr_reports_unknown_function_at_start_up(tmp_path: Path) -> None:
    policies = load(tmp_path, POLICY.replace("container.gpus <= params.count", "durationTxt(1.0) == ''"))
    with pytest.raises(PolicyError, match="validation check: CEL does not compile"):
        compile_policies(policies, Settings(), cel.backend("cel-expr"))


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({}, {"limit": 600.0, "names": ["a", "b"], "count": 3, "strict": False, "rails": {"8": 8}}),
        ({"limit": "20m"}, {"limit": 1200.0}),
        ({"limit": "1h30m"}, {"limit": 5400.0}),
        ({"names": "x, y"}, {"names": ["x", "y"]}),
        ({"names": ["x"]}, {"names": ["x"]}),
        ({"count": "7"}, {"count": 7}),
        ({"count": 7}, {"count": 7}),
        ({"strict": "true"}, {"strict": True}),
        ({"strict": True}, {"strict": True}),
        ({"rails": "p5.48xlarge:32,8:8"}, {"rails": {"p5.48xlarge": 32, "8": 8}}),
        ({"rails": {"a3-megagpu-8g": 8}}, {"rails": {"a3-megagpu-8g": 8}}),
        ({"rails": ""}, {"rails": {}}),
    ],
)
def test_resolve_params(tmp_path: Path, overrides: dict[str, Any], expected: dict[str, Any]) -> None:
    (loaded,) = load(tmp_path)
    params = resolve_params(loaded, overrides)
    for name, value in expected.items():
        assert params[name] == value
        assert type(params[name]) is type(value)
    assert set(params) == {"limit", "names", "count", "strict", "rails"}


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"limit": "20"}, r"parameter probe\.limit \(duration\)"),
        ({"count": "many"}, r"parameter probe\.count \(int\)"),
        ({"strict": "yes"}, r"parameter probe\.strict \(bool\)"),
        ({"rails": "p5.48xlarge=32"}, r"parameter probe\.rails \(intMap\): .* NAME:COUNT pairs"),
        ({"rails": {"p5.48xlarge": "0"}}, r"parameter probe\.rails \(intMap\): p5\.48xlarge: '0' is not"),
        ({"nope": "1"}, "no parameter 'nope'"),
    ],
)
def test_bad_overrides_are_usage_errors(tmp_path: Path, overrides: dict[str, Any], message: str) -> None:
    (loaded,) = load(tmp_path)
    with pytest.raises(UsageError, match=message):
        resolve_params(loaded, overrides)


def test_overrides_reach_the_compiled_policy(tmp_path: Path) -> None:
    settings = Settings(params={"probe": {"limit": "20m"}})
    (compiled,) = compile_policies(load(tmp_path), settings, cel.backend("cel-python"))
    assert compiled.params["limit"] == 1200.0
    assert compiled.params["count"] == 3


@pytest.fixture(scope="module")
def bundled() -> list[policy.Policy]:
    return policy.load()


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        (Settings(), None),
        (Settings(select=("nccl-timeout",)), {"nccl-timeout"}),
        (Settings(select=("nccl-timeout", "restart-budget")), {"nccl-timeout", "restart-budget"}),
        (Settings(skip=("gpu-node-health",)), "all but gpu-node-health"),
        (Settings(select=("nccl-timeout",), skip=("nccl-timeout",)), set()),
    ],
)
def test_select_and_skip(bundled: list[policy.Policy], settings: Settings, expected: Any) -> None:
    everything = {p.id for p in bundled}
    chosen = {p.id for p in select(bundled, settings)}
    if expected is None:
        assert chosen == everything
    elif expected == "all but gpu-node-health":
        assert chosen == everything - {"gpu-node-health"}
    else:
        assert chosen == expected


@pytest.mark.parametrize(
    "settings",
    [
        Settings(select=("ncl-timeout",)),
        Settings(skip=("nope",)),
        Settings(params={"no-such-policy": {"x": "1"}}),
    ],
)
def test_unknown_policy_ids_are_usage_errors(bundled: list[policy.Policy], settings: Settings) -> None:
    with pytest.raises(UsageError, match=r"unknown policy .*known policies: checkpoint-interval"):
        select(bundled, settings)


def test_a_compiled_validation_tells_its_scope_and_its_name_as_its_source_does(
    bundled: list[policy.Policy],
) -> None:
    policies = compile_policies(bundled, Settings(), cel.backend("cel-expr"))
    compiled = [v for c in policies for v in c.validations]
    assert len(compiled) > 30
    assert {v.validation.scope for v in compiled} >= {"workload", "template", "container", "node"}
    for each in compiled:
        assert (each.scope, each.check.rule) == (each.validation.scope, each.validation.name)


def test_skipped_policy_is_not_compiled(tmp_path: Path) -> None:
    """A broken policy the user skips does not stop the run."""
    policies = load(tmp_path, POLICY.replace("container.gpus <= params.count", "container.gpus <="))
    assert compile_policies(policies, Settings(skip=("probe",)), cel.backend("cel-python")) == []


def test_an_int_map_reaches_cel_as_a_map_in_both_runtimes(tmp_path: Path, backend: cel.Backend) -> None:
    from tests.test_evaluate import engine_for, policy_text, pytorchjob

    text = policy_text(
        "rails",
        "container",
        """\
        - name: enough
          expression: "string(container.gpus) in params.rails && params.rails[string(container.gpus)] >= 8"
        """,
        applies_to="container.gpus > 0",
        extra='params: {rails: {type: intMap, default: {"8": 8}}}',
    )
    engine = engine_for(tmp_path, backend.name, text)
    assert {f.result.value for f in engine.evaluate(pytorchjob()).results} == {"pass"}
    settings = Settings(policy_dirs=(str(tmp_path),), select=("rails",), cel_backend=backend.name)
    lowered = build_engine(settings.with_params({"rails": {"rails": "8:4"}}))
    assert {f.result.value for f in lowered.evaluate(pytorchjob()).results} == {"fail"}


class Counting:
    """A backend that counts what it is asked to compile."""

    def __init__(self, inner: cel.Backend) -> None:
        self.inner, self.compiled = inner, Counter[str]()
        self.name, self.cost_budget = inner.name, inner.cost_budget

    def compile(self, source: str) -> cel.Program:
        self.compiled[source] += 1
        return self.inner.compile(source)

    def convert(self, value: Any) -> Any:
        return self.inner.convert(value)

    def activation(self, bindings: Mapping[str, Any]) -> Any:
        return self.inner.activation(bindings)


def test_an_expression_its_batch_proved_is_compiled_when_it_first_runs_alone(
    tmp_path: Path, backend: cel.Backend
) -> None:
    counting = Counting(backend)
    (compiled,) = compile_policies(load(tmp_path), Settings(), counting)
    assert list(counting.compiled) == [compiled.batches["container"].source]  # one compile, the batch
    (validation,) = compiled.validations
    assert isinstance(validation.expression, cel.Deferred)
    bindings = {"container": backend.convert({"gpus": 2}), "params": backend.convert(compiled.cel_params)}
    for _ in range(2):
        assert validation.expression(backend.activation(bindings)) is True
    assert counting.compiled["container.gpus <= params.count"] == 1  # once, when first run


def test_an_expression_no_batch_holds_is_compiled_at_load(tmp_path: Path, backend: cel.Backend) -> None:
    """A message that walks a variable's list is left out of the batch (its cost depends on the list):
    it is compiled at load, so a broken one fails the load as any other."""
    listed = POLICY.replace(
        '- {name: doubled, expression: "container.gpus * 2"}', '- {name: names, expression: "params.names"}'
    )
    walks = "messageExpression: \"joined(variables.names.map(n, n + '!'))\""
    text = listed.replace("messageExpression: \"'too many'\"", walks)
    (compiled,) = compile_policies(load(tmp_path, text), Settings(), backend)
    (validation,) = compiled.validations
    message = validation.message_expression
    assert isinstance(message, Guarded) and not isinstance(message.program, cel.Deferred)
    assert isinstance(validation.expression, cel.Deferred)  # the verdict is still in the batch
    broken = text.replace("n + '!'))", "n + ))")
    with pytest.raises(PolicyError, match="validation check messageExpression: CEL does not compile"):
        compile_policies(load(tmp_path, broken), Settings(), backend)


def test_a_deferred_program_that_does_not_compile_raises_when_run() -> None:
    program = cel.Deferred(cel.backend("cel-expr"), "1 +")
    with pytest.raises(cel.CelError):
        program(cel.backend("cel-expr").activation({}))
