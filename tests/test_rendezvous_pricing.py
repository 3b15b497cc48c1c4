"""The rendezvous join timeout in the cost model, and unpriced rules that say why (RULES.md v3)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubegap import manifests, policy
from kubegap.config import Settings
from kubegap.errors import PolicyError
from kubegap.evaluate import Engine, build_engine
from kubegap.findings import Finding, Result
from tests.test_policy import MINIMAL, write_policy

POLICIES = Path(__file__).resolve().parent.parent / "policies"


@pytest.fixture(scope="module")
def engine() -> Engine:
    return build_engine(Settings())


def failing(engine: Engine, example: str) -> dict[tuple[str, str], Finding]:
    [doc] = [d for d in manifests.read([str(POLICIES / example)]) if d.obj is not None]
    assert doc.obj is not None
    return {(f.policy, f.rule): f for f in engine.evaluate(doc.obj).results if f.result is Result.FAIL}


def test_the_join_timeout_adds_to_the_restart_time_and_its_fix_is_priced(engine: Engine) -> None:
    found = failing(engine, "restart-budget/examples/fail-elastic-join-timeout-one-hour.yaml")
    impact = found[("restart-budget", "rendezvous-bounded")].impact
    assert impact is not None and impact.fixed is not None and impact.saved is not None
    # impact.restartMinutes (10) + join_timeout 3600 s, and after the fix + the 10-minute maximum
    assert impact.now.restart.hours == pytest.approx(10 / 60 + 1.0)
    assert impact.fixed.restart.hours == pytest.approx(20 / 60)
    assert "join_timeout=3600" in impact.now.restart.source
    assert impact.saved > 0


def test_a_relaxed_maximum_saves_less(engine: Engine) -> None:
    example = "restart-budget/examples/fail-elastic-join-timeout-one-hour.yaml"
    relaxed = build_engine(Settings().with_params({"restart-budget": {"maxRendezvousTimeout": "30m"}}))
    strict = failing(engine, example)[("restart-budget", "rendezvous-bounded")].impact
    loose = failing(relaxed, example)[("restart-budget", "rendezvous-bounded")].impact
    assert strict is not None and loose is not None and strict.saved is not None and loose.saved is not None
    assert 0 < loose.saved < strict.saved


def test_an_elastic_size_range_adds_no_wait(engine: Engine) -> None:
    """A rendezvous with fewer nodes than the maximum completes without the lost one: no join wait in R."""
    found = failing(engine, "restart-budget/examples/pass-elastic-max-restarts.yaml")
    [any_priced] = [f for f in found.values() if f.impact and f.impact.saved is not None][:1]
    assert any_priced.impact is not None
    assert "join timeout" not in any_priced.impact.now.restart.source


@pytest.mark.parametrize(
    ("example", "rule", "because"),
    [
        ("nccl-transport/examples/fail-mpirun-ib-timeout-too-low.yaml", "ib-timeout-bounded", "link flaps"),
        ("nccl-flight-recorder/examples/fail-recorder-not-set.yaml", "recorder-on", "finding the cause"),
        (
            "disruption-budget/examples/fail-job-no-pod-failure-policy.yaml",
            "disruptions-not-counted",
            "drains",
        ),
        ("health-taints/examples/fail-blanket-toleration.yaml", "no-blanket-toleration", "flagged node"),
    ],
)
def test_an_unpriced_rule_says_why(engine: Engine, example: str, rule: str, because: str) -> None:
    found = failing(engine, example)
    [finding] = [f for (p, r), f in found.items() if r == rule and example.startswith(p)]
    assert finding.impact is not None and finding.impact.saved is None
    reason = finding.to_json()["impact"]["reason"]
    assert reason.startswith("the cost model does not price this rule: ") and because in reason


@pytest.mark.parametrize(
    ("impact", "loads"),
    [
        ("{unpriced: no rate of this event}", True),
        ("{term: autoRestart}", True),
        ("{term: autoRestart, unpriced: both}", False),  # a term and a reason contradict each other
        ("{unpriced: ''}", False),
        ("{param: maxX, unpriced: why}", False),
        ("{term: rendezvousTimeout}", False),  # the term sets a parameter's value: it must name one
    ],
)
def test_an_impact_is_a_term_or_a_reason(tmp_path: Path, impact: str, loads: bool) -> None:
    text = MINIMAL.replace(
        '{name: always, expression: "true"}', f'{{name: always, expression: "true", impact: {impact}}}'
    )
    write_policy(tmp_path, "p", text)
    if loads:
        assert [p.id for p in policy.load([str(tmp_path)]) if p.id == "p"] == ["p"]
    else:
        with pytest.raises(PolicyError):
            policy.load([str(tmp_path)])
