"""The engine check every patch passes: its finding settled (not just moved), nothing new brought in."""

from __future__ import annotations

import pytest

from kubegap.fix.checked import Key, _check
from kubegap.fix.edits import Edit
from kubegap.fix.nodes import Unsafe
from kubegap.fix.target import Patch


def key(rule: str, path: str, message: str = "m", policy: str = "nccl-timeout") -> Key:
    return ((), (policy, rule, "Job", "ns", "j", "Job", "c", path, message))


PATCH = Patch((Edit(0, 0, ""),), "removed env X")
TODO = Patch((Edit(0, 0, ""),), "added TODO", todo=("metadata", "annotations", "kubegap.dev/step-time"))


def test_a_settled_finding_passes() -> None:
    target = key("no-placebo-timeout", "env[0]")
    _check(
        PATCH,
        target,
        {target, key("async-error-handling", "env[1]")},
        {key("async-error-handling", "env[1]")},
    )


def test_a_finding_that_only_moved_is_not_settled() -> None:
    target = key("no-placebo-timeout", "env[1]")
    with pytest.raises(Unsafe, match="did not settle"):
        _check(PATCH, target, {target}, {key("no-placebo-timeout", "env[0]")})


def test_another_finding_that_moved_is_not_new() -> None:
    target = key("no-placebo-timeout", "env[0]")
    other = key("async-error-handling", "env[1]")
    _check(PATCH, target, {target, other}, {key("async-error-handling", "env[0]")})


def test_a_new_finding_rejects_the_patch() -> None:
    target = key("no-placebo-timeout", "env[0]")
    with pytest.raises(Unsafe, match="new finding"):
        _check(PATCH, target, {target}, {key("timeout-declared", "")})


def test_the_next_offender_of_the_same_rule_is_allowed() -> None:
    target = key("interval-bounded", "args[3]", "50m", policy="checkpoint-interval")
    _check(PATCH, target, {target}, {key("interval-bounded", "args[7]", "20m", policy="checkpoint-interval")})


def test_a_todo_may_bring_only_its_own_invalid_declaration() -> None:
    target = key("interval-declared", "args[3]", policy="checkpoint-interval")
    own = key(
        "invalid-declaration", "metadata.annotations['kubegap.dev/step-time']", policy="checkpoint-interval"
    )
    _check(TODO, target, {target}, {target, own})
    elsewhere = key(
        "invalid-declaration", "metadata.annotations['kubegap.dev/other']", policy="checkpoint-interval"
    )
    with pytest.raises(Unsafe, match="new finding"):
        _check(TODO, target, {target}, {target, elsewhere})
