"""`kubegap fix` on every bundled example of its policy: the fix is exactly the golden diff (each one read
by a person), re-linting shows the fixed findings gone and nothing new, and a second run changes nothing.

Set KUBEGAP_UPDATE_GOLDEN=1 to write the golden diffs again, then read every changed one before committing.
"""

from __future__ import annotations

import os
from importlib.resources import files
from pathlib import Path

import pytest

from kubegap import testing
from kubegap.enginerules import INVALID_DECLARATION
from kubegap.evaluate import Engine
from tests.fix.support import engine, failing, fix, identity

ROOT = Path(str(files("kubegap.policies")))
GOLDEN = Path(__file__).parent.parent / "data" / "fix"
EXAMPLES = [e for e in testing.discover(ROOT) if e.policy != "gpu-node-health"]  # Nodes are not manifests
FAILING = [e for e in EXAMPLES if e.path.name.startswith("fail-")]


def _id(example: testing.Example) -> str:
    return f"{example.policy}/{example.path.name}"


def _engine(example: testing.Example) -> Engine:
    """The engine `kubegap test` judges the example with: its policy, with its `# params:`."""
    return engine(example.policy, params={example.policy: example.params})


def _golden(example: testing.Example) -> Path:
    return GOLDEN / example.policy / example.path.name.replace(".yaml", ".diff")


@pytest.mark.parametrize("example", FAILING, ids=_id)
def test_fix_matches_the_golden_diff(example: testing.Example) -> None:
    fixed = fix(example.path.read_bytes(), _engine(example), name=_id(example))
    golden = _golden(example)
    if os.environ.get("KUBEGAP_UPDATE_GOLDEN"):
        if fixed.changed:
            golden.parent.mkdir(parents=True, exist_ok=True)
            golden.write_text(fixed.diff(), "utf-8")
        else:
            golden.unlink(missing_ok=True)
    if golden.exists():
        assert fixed.diff() == golden.read_text("utf-8")
    else:
        assert not fixed.changed, fixed.diff()


@pytest.mark.parametrize("example", FAILING, ids=_id)
def test_fixed_findings_are_gone_and_none_is_new(example: testing.Example) -> None:
    the_engine = _engine(example)
    text = example.path.read_text("utf-8")
    fixed = fix(text, the_engine)
    before = {identity(f) for f in failing(text, the_engine)}
    after = failing(fixed.text, the_engine)
    settled = [o for o in fixed.outcomes if o.fixed and not o.todo]
    assert not {identity(o.finding) for o in settled} & {identity(f) for f in after}
    todo_paths = {o.note for o in fixed.outcomes if o.todo}
    for finding in after:
        if identity(finding) in before:
            continue
        # The only findings a fix may bring are the TODO values it leaves for a person to fill in.
        assert finding.rule == INVALID_DECLARATION and "TODO" in finding.message, finding
        assert any(finding.message.split(":")[0].split()[-1] in note for note in todo_paths)
    # Every finding is accounted for: fixed, left as TODO, or reported with the reason it has no safe fix.
    assert {identity(o.finding) for o in fixed.outcomes} >= before
    assert all(o.note for o in fixed.outcomes)


@pytest.mark.parametrize("example", EXAMPLES, ids=_id)
def test_a_second_run_changes_nothing(example: testing.Example) -> None:
    the_engine = _engine(example)
    once = fix(example.path.read_bytes(), the_engine).text
    assert fix(once, the_engine).text == once


@pytest.mark.parametrize("example", [e for e in EXAMPLES if e not in FAILING], ids=_id)
def test_passing_and_skipped_examples_are_left_alone(example: testing.Example) -> None:
    fixed = fix(example.path.read_bytes(), _engine(example))
    assert not fixed.changed


def test_every_fixable_rule_is_exercised_by_an_example() -> None:
    fixed_rules = set()
    for example in FAILING:
        for outcome in fix(example.path.read_bytes(), _engine(example)).outcomes:
            if outcome.fixed:
                fixed_rules.add((outcome.finding.policy, outcome.finding.rule, outcome.todo))
    assert {
        ("nccl-timeout", "timeout-declared", True),
        ("nccl-timeout", "timeout-bounded", False),
        ("nccl-timeout", "async-error-handling", False),
        ("nccl-timeout", "watchdog-enabled", False),
        ("nccl-timeout", "no-placebo-timeout", False),
        ("checkpoint-interval", "interval-declared", True),
        ("checkpoint-interval", "interval-bounded", False),
        ("health-probes", "liveness-probe", False),
        ("health-probes", "probe-window", False),
        ("restart-budget", "auto-restart", False),
        ("gpu-nic-topology", "no-transport-fallback", False),
    } <= fixed_rules
