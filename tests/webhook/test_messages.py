"""Denial messages, warnings and audit annotations stay within what the API server passes on."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest

from kubegap.findings import Finding, Impact, ObjectRef, Result, Severity
from kubegap.impact import Inputs, Term
from kubegap.webhook import messages

REF = ObjectRef("kubeflow.org/v1", "PyTorchJob", "research", "llama")


def _finding(
    rule: str = "timeout-declared",
    severity: Severity = Severity.HIGH,
    message: str = "no collective timeout is set; PyTorch waits 10m",
    remediation: str = "Pass --ddp_timeout 1800 or set kubegap.dev/collective-timeout.",
    role: str | None = "Worker",
    container: str | None = "trainer",
    policy: str = "nccl-timeout",
) -> Finding:
    return Finding(policy, rule, severity, Result.FAIL, message, remediation, REF, role, container)


def test_a_denial_names_object_role_container_rule_and_fix() -> None:
    text = messages.denial(REF, [_finding()])
    assert text.startswith("kubegap: PyTorchJob/research/llama has 1 blocking finding: ")
    assert (
        "[high] nccl-timeout/timeout-declared (role Worker, container trainer): no collective timeout" in text
    )
    assert "Fix: Pass --ddp_timeout 1800" in text
    assert "more" not in text


def test_denials_list_the_worst_first() -> None:
    low = _finding(rule="no-placebo-timeout", severity=Severity.LOW)
    critical = _finding(rule="z-rule", severity=Severity.CRITICAL)
    text = messages.denial(REF, [low, _finding(), critical])
    assert text.index("z-rule") < text.index("timeout-declared") < text.index("no-placebo-timeout")


@pytest.mark.parametrize("count", [2, 5, 30, 300])
def test_long_denials_stay_under_1_kib_and_count_the_rest(count: int) -> None:
    found = [_finding(rule=f"rule-{i:03d}", message="x" * 150) for i in range(count)]
    text = messages.denial(REF, found)
    assert len(text.encode()) <= messages.MAX_MESSAGE_BYTES
    listed = len(re.findall(r"rule-\d{3}", text))
    more = re.search(r"; and (\d+) more \(kubegap lint lists all\)$", text)
    assert listed >= 1
    assert listed + (int(more.group(1)) if more else 0) == count


def test_one_huge_finding_is_cut_not_dropped() -> None:
    text = messages.denial(REF, [_finding(message="é" * 5000, remediation="r" * 5000)])
    assert len(text.encode()) <= messages.MAX_MESSAGE_BYTES
    assert "nccl-timeout/timeout-declared" in text and text.endswith("...")
    text.encode().decode()  # a multi-byte character is never split


def test_reasons_are_listed_after_findings() -> None:
    text = messages.denial(REF, [_finding()], ["[error] p/r: not evaluated"])
    assert "2 blocking findings" in text and text.endswith("[error] p/r: not evaluated")


def test_warning_lines_name_rule_and_place() -> None:
    assert messages.warning_line(_finding()) == (
        "nccl-timeout/timeout-declared [Worker/trainer]: no collective timeout is set; PyTorch waits 10m"
    )
    assert messages.warning_line(_finding(role=None, container=None, message="a\n  b")) == (
        "nccl-timeout/timeout-declared: a b"
    )


@pytest.mark.parametrize(("count", "expected_lines"), [(0, 0), (1, 1), (20, 20), (21, 21), (100, 21)])
def test_at_most_twenty_warnings_then_a_summary(count: int, expected_lines: int) -> None:
    lines = messages.warnings([f"w{i} " + "y" * 150 for i in range(count)])
    assert len(lines) == expected_lines
    assert all(len(line) <= messages.MAX_WARNING_CHARS for line in lines)
    assert all(line.isascii() for line in lines)
    if count > messages.MAX_WARNINGS:
        assert lines[-1] == f"kubegap: {count - 20} more findings not shown; kubegap lint lists all"
        assert lines[-2].startswith("w19 ")


def test_annotation_values_are_unique_and_bounded() -> None:
    assert messages.annotation_value(["a/b", "c/d", "a/b"]) == "a/b,c/d"
    many = [f"policy-{i}/rule-{i}" for i in range(200)]
    value = messages.annotation_value(many)
    assert len(value) <= messages.MAX_ANNOTATION_CHARS
    shown = value.split(",")[:-1]
    rest = int(re.fullmatch(r"\+(\d+) more", value.split(",")[-1]).group(1))  # type: ignore[union-attr]
    assert shown == many[: len(shown)] and len(shown) + rest == 200


def test_a_priced_finding_says_what_its_fix_is_worth_in_ascii() -> None:
    base = Inputs(4096, 2e-5, Term(0.5, "d"), Term(1, "r"), None, Term(72, "t"), Term(0.01, "s"))
    priced = replace(_finding("interval-bounded"), impact=Impact(298_400.0, None, base, base))
    line = messages.warning_line(priced)
    assert line.startswith("nccl-timeout/interval-bounded (fix saves ~298k GPU-h/mo) [Worker/trainer]: ")
    assert line.isascii()
    assert "(fix saves" not in messages.warning_line(_finding("interval-bounded"))
    assert "[high] nccl-timeout/interval-bounded (fix saves ~298k GPU-h/mo) (role Worker" in messages.denial(
        REF, [priced]
    )


def test_warnings_fit_the_api_server_limits_and_cut_between_words() -> None:
    long = " ".join(["collective timeout 45m (--distributed-timeout-minutes 45) exceeds 30m"] * 8)
    lines = messages.warnings([f"w{i} {long}" for i in range(30)])
    assert all(len(line) <= 256 for line in lines)
    assert sum(len(line) for line in lines) <= 4096  # the API server drops warnings past 4,096 characters
    assert re.fullmatch(r"kubegap: (\d+) more findings not shown; kubegap lint lists all", lines[-1])
    shown = lines[:-1]
    assert len(shown) + int(lines[-1].split()[1]) == 30
    for line in shown:
        assert line.endswith("...")
        kept = line[: -len("...")]
        assert long.startswith(kept.split(" ", 1)[1])  # a prefix of the text...
        assert kept.split()[-1] in long.split()  # ...ending on a whole word


def test_a_real_warning_keeps_rule_value_and_limit() -> None:
    finding = _finding(
        rule="timeout-bounded",
        message="collective timeout 45m (--distributed-timeout-minutes 45 (Megatron-LM)) exceeds 30m",
    )
    line = messages.warnings([messages.warning_line(finding)])[0]
    assert line == (
        "nccl-timeout/timeout-bounded [Worker/trainer]: collective timeout 45m "
        "(--distributed-timeout-minutes 45 (Megatron-LM)) exceeds 30m"
    )


def test_the_denial_fix_is_cut_between_words() -> None:
    fix = (
        "Lower the collective timeout to at most 30 minutes; e.g. " + "--distributed-timeout-minutes 20 " * 12
    )
    text = messages.denial(REF, [_finding(remediation=fix)])
    assert "Fix: Lower the collective timeout to at most 30 minutes" in text
    item = text.split(": ", 1)[1]
    assert item.endswith("...") and item[:-3].split()[-1] in fix.split()


def test_the_audit_annotation_holds_the_findings_in_full() -> None:
    found = [_finding(rule=f"rule-{i}", message="m" * 30) for i in range(3)]
    records = json.loads(messages.details(found))
    assert records[0] == {
        "id": "nccl-timeout/rule-0",
        "severity": "high",
        "result": "fail",
        "role": "Worker",
        "container": "trainer",
        "message": "m" * 30,
        "fix": "Pass --ddp_timeout 1800 or set kubegap.dev/collective-timeout.",
    }
    many = [_finding(rule=f"rule-{i}", message="m" * 300) for i in range(100)]
    text = messages.details(many)
    assert len(text) <= messages.MAX_DETAILS_CHARS
    records = json.loads(text)
    assert len(records) - 1 + records[-1]["more"] == 100
    assert all(r["message"] == "m" * 300 for r in records[:-1])  # whole records, never cut
