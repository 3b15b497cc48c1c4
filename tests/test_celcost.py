"""The CEL cost guard: estimates refuse runaway expressions at load, budgets stop them before they run,
with both runtimes, in lint, audit (the same engine) and the webhook (onError decides)."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import pytest

from kubegap import cel, celcost, lint, manifests, policy
from kubegap.activation import expressions
from kubegap.cli import main
from kubegap.config import Settings
from kubegap.errors import PolicyError
from kubegap.evaluate import Engine, build_engine
from kubegap.findings import Result
from kubegap.webhook.app import build_reviewer
from kubegap.webhook.metrics import Metrics
from tests.support.samples import PAIRWISE, user_policy
from tests.support.samples import wide_pod as pod

ESTIMATES = [
    ("constant", "1 + 2 == 3", 0),
    ("list scan", "'a' in params.names", 1),
    ("one comprehension", "object.spec.containers.all(c, c.name != '')", 1),
    ("over a literal list: its length, not N", "['a', 'b'].all(n, n in container.env)", 1),
    ("two nested", "xs.all(a, xs.all(b, a == b))", 2),
    ("chained, not nested", "xs.filter(a, a > 1).map(a, a * 2)", 1),
    ("three nested", "xs.all(a, xs.all(b, xs.exists(c, a == c)))", 3),
    ("macro names inside strings do not count", "'.all(x, .all(y' + \"in\" == s", 0),
    ("list helper", "joined(xs) != ''", 1),
]


@pytest.mark.parametrize(("case", "source", "degree"), ESTIMATES, ids=[e[0] for e in ESTIMATES])
def test_the_estimate_grows_with_the_nesting_of_comprehensions(case: str, source: str, degree: int) -> None:
    cost = celcost.estimate(source)
    assert cost.degree == degree
    assert cost.at(10) >= cost.at(1) >= 1


def test_nested_comprehensions_multiply() -> None:
    one, two = celcost.estimate("xs.all(a, a == 1)"), celcost.estimate("xs.all(a, xs.all(b, a == b))")
    assert two.at(1_000) > 100 * one.at(1_000)
    assert two.at(celcost.ASSUMED_ITEMS) <= celcost.ESTIMATE_LIMIT  # two levels load
    three = celcost.estimate("xs.all(a, xs.all(b, xs.all(c, a == b)))")
    assert three.at(celcost.ASSUMED_ITEMS) > celcost.ESTIMATE_LIMIT  # three do not


def test_the_estimate_of_any_text_is_an_answer_not_an_error() -> None:
    """kubegap.compiled estimates an expression before it knows whether it compiles: broken bundled
    expressions and random text give an estimate, never an exception."""
    rng = random.Random(7)
    sources = [s for loaded in policy.load() for s in expressions(loaded)]
    alphabet = "()[]{},.:?!'\"\\ ab0+-*/<>=&|`\n#map all exists size"
    for _ in range(3_000):
        source = rng.choice(sources)
        cut, other = rng.randrange(len(source) + 1), rng.randrange(len(source) + 1)
        broken = source[:cut] + rng.choice(["", *"()[]{}'\".,"]) + source[other:]
        noise = "".join(rng.choice(alphabet) for _ in range(rng.randrange(40)))
        for text in (broken, noise):
            assert celcost.estimate(text).at(10) >= 0


@pytest.mark.parametrize(
    ("source", "alone"),
    [
        ("a.b(c, [d, {'e': f}]) > 0", True),
        ("'a)' + \"(b\" + '''c\\n]''' == x", True),  # brackets inside strings do not count
        ("a) || (b", False),  # compiles only inside brackets
        ("(a", False),
        ("a]", False),
        ("[a)", False),
        ("'a", False),  # a quote no string closes
        ("f(x // )", False),  # a comment may hide a bracket
        ("a / b", True),
    ],
)
def test_self_contained_tells_a_text_that_stands_on_its_own_in_brackets(source: str, alone: bool) -> None:
    assert celcost.self_contained(source) is alone


def test_every_bundled_expression_is_self_contained() -> None:
    assert all(celcost.self_contained(s) for loaded in policy.load() for s in expressions(loaded))


def test_longest_finds_the_biggest_list_or_map_anywhere() -> None:
    value = {"a": [1, 2, {"b": list(range(7))}], "c": dict.fromkeys("abcde")}
    assert celcost.longest(value) == 7
    assert celcost.longest("a string is not a list") == 0


SURVEYS = [
    ("plain", {"a": [1, "é", {"b": [None, 2.5, True]}], "c": {}}, (3, True)),
    ("an integer past int64", {"a": {"b": [2**63]}}, (1, False)),
    ("int64's least", {"a": [-(2**63)]}, (1, True)),
    ("a lone surrogate in a text", {"a": ["x", "\ud800"]}, (2, False)),
    ("a lone surrogate in a key", {"a": {"\udfff": 1}}, (1, False)),
    ("a key that is no text", {"a": {1: "x", 2: "y"}}, (2, False)),
    ("a key that is no text beside a list", {7: [1, 2], "b": "x"}, (2, False)),
    ("a tuple", {"a": (1, 2, 3, 4)}, (4, False)),
    ("a scalar", "text", (0, True)),
    ("a list at the root", [[1, 2, 3], [4]], (3, True)),
]


@pytest.mark.parametrize(("case", "value", "expected"), SURVEYS, ids=[s[0] for s in SURVEYS])
def test_a_survey_tells_the_longest_and_whether_cel_takes_the_value(
    case: str, value: Any, expected: tuple[int, bool]
) -> None:
    assert celcost.survey(value) == expected


def test_every_bundled_expression_is_well_under_the_estimate_limit() -> None:
    for loaded in policy.load():
        for source in expressions(loaded):
            estimate = celcost.estimate(source).at(celcost.ASSUMED_ITEMS)
            assert estimate * 10 < celcost.ESTIMATE_LIMIT, (loaded.id, source, estimate)


TRIPLE = "object.spec.containers.all(a, object.spec.containers.all(b, object.spec.containers.all(c, a == c)))"


@pytest.mark.parametrize("backend", cel.BACKENDS)
def test_an_expression_over_the_estimate_limit_is_refused_at_load(tmp_path: Path, backend: str) -> None:
    folder = user_policy(tmp_path / "policies", TRIPLE)
    with pytest.raises(PolicyError) as raised:
        build_engine(Settings(policy_dirs=(str(folder),), select=("unique-images",), cel_backend=backend))
    message = str(raised.value)
    assert "policy unique-images, validation pairwise" in message
    assert f"over the limit of {celcost.ESTIMATE_LIMIT:,}" in message
    assert "estimated cost " in message and TRIPLE in message


def test_the_cli_exits_2_naming_policy_validation_and_expression(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = user_policy(tmp_path / "policies", TRIPLE)
    job = tmp_path / "pod.yaml"
    job.write_text(json.dumps(pod(2)), "utf-8")
    assert main(["lint", "--policies", str(folder), str(job)]) == 2
    err = capsys.readouterr().err
    assert "unique-images" in err and "pairwise" in err and "too expensive" in err and TRIPLE in err


@pytest.fixture(scope="module", params=cel.BACKENDS)
def pairwise(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Engine:
    folder = user_policy(tmp_path_factory.mktemp("pairwise"), PAIRWISE)
    return build_engine(
        Settings(policy_dirs=(str(folder),), select=("unique-images",), cel_backend=request.param)
    )


def test_a_small_object_is_judged_normally(pairwise: Engine) -> None:
    assert [r.result for r in pairwise.evaluate(pod(3)).results] == [Result.PASS]
    assert [r.result for r in pairwise.evaluate(pod(3, shared_image=True)).results] == [Result.FAIL]


def test_thousands_of_containers_are_an_error_result_not_a_stall(pairwise: Engine) -> None:
    results = pairwise.evaluate(pod(3_000, shared_image=True)).results
    assert [r.result for r in results] == [Result.ERROR], "never a pass, and never evaluated for minutes"
    budget = pairwise.backend.cost_budget
    assert "over the CEL cost budget" in results[0].message
    assert "for lists of 3,000 items" in results[0].message and f"{budget:,}" in results[0].message


def test_lint_reports_the_budget_error_and_fails(pairwise: Engine) -> None:
    text = json.dumps(pod(3_000)).encode()
    report = lint.lint_documents(manifests.Reader().read_bytes(text, "wide.json"), pairwise)
    assert [(f.rule, f.result) for f in report.findings] == [("pairwise", Result.ERROR)]
    assert lint.exit_code(report, pairwise.compiled[0].policy.severity) == 1


REVIEW = {
    "apiVersion": "admission.k8s.io/v1",
    "kind": "AdmissionReview",
    "request": {
        "uid": "b0e5a3c4-1d2f-4e6a-9b8c-7d6e5f4a3b2c",
        "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "resource": {"group": "", "version": "v1", "resource": "pods"},
        "operation": "CREATE",
        "namespace": "ml",
        "name": "wide",
        "userInfo": {"username": "alice"},
    },
}


@pytest.mark.parametrize("backend", cel.BACKENDS)
@pytest.mark.parametrize(("on_error", "allowed"), [("allow", True), ("deny", False)])
def test_the_webhook_answers_per_on_error_in_time(
    tmp_path: Path, backend: str, on_error: str, allowed: bool
) -> None:
    folder = user_policy(tmp_path / "policies", PAIRWISE)
    settings = Settings(
        policy_dirs=(str(folder),),
        select=("unique-images",),
        cel_backend=backend,
        webhook={"preset": "enforce", "onError": on_error},
    )
    review: Any = copy.deepcopy(REVIEW)
    review["request"]["object"] = pod(3_000)
    outcome = build_reviewer(settings, Metrics()).review(review, timeout="10s")
    response = outcome.review["response"]
    assert response["uid"] == REVIEW["request"]["uid"]
    assert response["allowed"] is allowed
    assert response["auditAnnotations"]["errors"].startswith("unique-images/pairwise")


def test_units_reached_after_the_deadline_are_errors_not_evaluations(
    pairwise: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    ticks = iter([0.0])  # the engine's check before the policy sees time 0; every later look is too late
    monkeypatch.setattr("kubegap.activation.time.monotonic", lambda: next(ticks, 1e9))
    results = pairwise.evaluate(pod(3), deadline=1.0).results
    assert [r.result for r in results] == [Result.ERROR]
    assert "ran past its deadline" in results[0].message
