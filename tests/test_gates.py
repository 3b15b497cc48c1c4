"""A policy whose appliesTo requires a workload fact that is false is skipped whole (kubegap.compiled.gates):
the results are those of evaluating it, since CEL's `&&` is false whenever one term is."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kubegap import kinds, raw
from kubegap.compiled import gates
from kubegap.config import Settings
from kubegap.evaluate import build_engine
from kubegap.findings import Result
from tests.support.samples import WORKLOAD_FILES, example_objects
from tests.test_evaluate import container, engine_for, policy_text, pytorchjob


@pytest.mark.parametrize(
    ("applies_to", "expected"),
    [
        (None, ()),
        ("node.gpuCapacity > 0", ()),
        ("facts.gpuWork", ("gpuWork",)),
        ("facts.training && facts.distributed && container.gpus > 0", ("training", "distributed")),
        ("facts.a && (facts.b && template.podLevel) && facts.c", ("a", "b", "c")),
        ("facts.a || facts.b", ()),  # either may hold
        ("!facts.a && facts.b", ("b",)),  # `!facts.a` is no requirement that a fact hold
        ("(facts.a || facts.b) && facts.c == true", ()),  # a comparison is not the fact itself
        ("facts.a && 'unclosed", ()),  # what the fast path's parser cannot read has no gate
    ],
)
def test_gates_are_the_facts_every_term_of_the_top_level_and_requires(
    applies_to: str | None, expected: tuple[str, ...]
) -> None:
    assert gates(applies_to) == expected


def _objects() -> list[dict[str, Any]]:
    return [d for d in example_objects(*WORKLOAD_FILES) if kinds.row_of(d) is not None]


@pytest.mark.parametrize("backend", ["cel-expr", "cel-python"])
def test_every_example_has_the_results_it_has_with_no_policy_skipped(backend: str) -> None:
    gated = build_engine(Settings(cel_backend=backend))
    whole = build_engine(Settings(cel_backend=backend))
    for compiled in whole.compiled:
        compiled.gates = ()
    skipped = 0
    for obj in _objects():
        facts = kinds.gather(obj, gated.catalogue, {})
        if facts is not None:
            skipped += sum(any(facts.facts.get(g) is False for g in p.gates) for p in gated.compiled)
        assert gated.evaluate(obj).results == whole.evaluate(obj).results, obj.get("metadata")
    assert skipped > 50  # the examples hold inference, single-GPU and single-node work: gates are taken
    assert raw.mapping(None) == {}  # the empty mapping every fact shares was read, never changed


@pytest.mark.parametrize("backend", ["cel-expr", "cel-python"])
def test_a_gate_skips_terms_that_would_fail_and_only_where_its_fact_is_false(
    tmp_path: Path, backend: str
) -> None:
    # `object.spec.nothing` does not exist: evaluated, the term is an error
    text = policy_text(
        "gated",
        "workload",
        "- {name: always, expression: 'true'}\n",
        applies_to="facts.training && object.spec.nothing == 1",
    )
    engine = engine_for(tmp_path, backend, text)
    serving = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "serve", "namespace": "ml"},
        "spec": {"template": {"spec": {"containers": [container("server", gpus=1)]}}},
    }
    assert engine.evaluate(serving).results == ()  # not training: the policy does not apply
    training = engine.evaluate(pytorchjob()).results
    assert [(f.rule, f.result) for f in training] == [("always", Result.ERROR)]
    assert "appliesTo failed" in training[0].message
