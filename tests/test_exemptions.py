"""Exemptions per rule and with an end date; one that exempts nothing is reported, never silently ignored."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from kubegap import exemptions
from kubegap.config import Settings
from kubegap.evaluate import build_engine
from kubegap.findings import Result

RULES = ["timeout-declared", "timeout-bounded", "async-error-handling"]
KEY = "ignore.kubegap.dev/nccl-timeout"
TODAY = datetime.date(2026, 6, 1)


@pytest.mark.parametrize(
    ("value", "reason", "rules"),
    [
        ("smoke test", "smoke test", None),
        ("timeout-bounded: long warm-up", "long warm-up", {"timeout-bounded"}),
        ("timeout-bounded , async-error-handling: why", "why", {"timeout-bounded", "async-error-handling"}),
        ("until 2026-06-01: last day counts", "last day counts", None),
        ("timeout-bounded: until 2027-03-01: warm-up", "warm-up", {"timeout-bounded"}),
        ("smoke-test: not a rule list", "smoke-test: not a rule list", None),
    ],
)  # fmt: skip
def test_forms_that_exempt(value: str, reason: str, rules: set[str] | None) -> None:
    parsed = exemptions.parse(KEY, value, RULES, TODAY)
    assert parsed.problem is None and parsed.reason == reason
    assert parsed.rules == (frozenset(rules) if rules is not None else None)


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("  ", f"exemption {KEY} has no reason, so it exempts nothing"),
        (None, f"exemption {KEY} has no reason, so it exempts nothing"),
        ("until 2026-05-31: warm-up", f"exemption {KEY} expired on 2026-05-31, so it exempts nothing"),
        ("until 2026-07-01:", f"exemption {KEY} has no reason, so it exempts nothing"),
        (
            "until 1 March: warm-up",
            f"exemption {KEY}: '1 March' is not a date (YYYY-MM-DD), so it exempts nothing",
        ),
        (
            "timeout-bounded,timeout-bnded: why",
            f"exemption {KEY} names no rule 'timeout-bnded' of its policy (did you mean timeout-bounded?), "
            "so it exempts nothing",
        ),
    ],
)
def test_forms_that_exempt_nothing(value: Any, problem: str) -> None:
    parsed = exemptions.parse(KEY, value, RULES, TODAY)
    assert parsed.problem == problem and parsed.fix
    assert not parsed.covers("timeout-bounded")


def _job(annotation: str) -> dict[str, Any]:
    container = {
        "name": "pytorch",
        "image": "img",
        "command": ["torchrun", "train.py", "--ddp-timeout", "7200"],
        "resources": {"limits": {"nvidia.com/gpu": 8}},
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "ml", "annotations": {KEY: annotation}},
        "spec": {"parallelism": 2, "template": {"spec": {"containers": [container]}}},
    }


def _results(annotation: str) -> dict[str, Result]:
    engine = build_engine(Settings(select=("nccl-timeout",)))
    return {f.rule: f.result for f in engine.evaluate(_job(annotation)).results}


def test_a_rule_exemption_skips_that_rule_only() -> None:
    results = _results("timeout-bounded: until 2999-01-01: warm-up")
    assert results["timeout-bounded"] is Result.SKIP
    assert results["timeout-declared"] is Result.PASS
    assert "exemption-reason" not in results


def test_an_expired_exemption_is_reported_and_exempts_nothing() -> None:
    results = _results("until 2020-01-01: warm-up")
    assert results["timeout-bounded"] is Result.FAIL
    assert results["exemption-reason"] is Result.FAIL
    assert Result.SKIP not in results.values()
