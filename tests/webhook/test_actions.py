"""The `webhook:` config section: schema errors by JSON pointer, and how actions resolve."""

from __future__ import annotations

from typing import Any

import pytest

from kubegap.errors import PolicyError
from kubegap.findings import Severity
from kubegap.webhook.actions import (
    Action,
    NamespaceRules,
    OnError,
    Preset,
    WebhookConfig,
    check_policy_ids,
    parse_config,
)

DENY, WARN, AUDIT = Action.DENY, Action.WARN, Action.AUDIT

EXAMPLE = {
    "preset": "warn",
    "onError": "allow",
    "actions": {"nccl-timeout": ["Deny"]},
    "namespaces": {
        "research": {
            "actions": {"checkpoint-interval": ["Warn"]},
            "params": {"nccl-timeout": {"maxCollectiveTimeout": "45m"}},
            "skip": ["health-probes"],
        }
    },
}


def test_the_documented_example_parses() -> None:
    config = parse_config(EXAMPLE)
    assert config.preset is Preset.WARN
    assert config.on_error is OnError.ALLOW
    assert config.actions == {"nccl-timeout": frozenset({DENY})}
    assert config.namespaces["research"] == NamespaceRules(
        actions={"checkpoint-interval": frozenset({WARN})},
        params={"nccl-timeout": {"maxCollectiveTimeout": "45m"}},
        skip=("health-probes",),
    )


def test_an_empty_section_is_the_safe_default() -> None:
    assert parse_config({}) == WebhookConfig()
    assert WebhookConfig().preset is Preset.WARN and WebhookConfig().on_error is OnError.ALLOW


def test_parameter_values_are_kept_as_the_top_level_params_are() -> None:
    config = parse_config(
        {"namespaces": {"a": {"params": {"p": {"n": 3, "b": True, "l": ["x"], "s": "1m", "m": {"8": 8}}}}}}
    )
    assert config.namespaces["a"].params == {"p": {"n": 3, "b": True, "l": ["x"], "s": "1m", "m": {"8": 8}}}


INVALID: list[tuple[str, Any, str]] = [
    ("unknown key", {"mode": "enforce"}, "/webhook: Additional properties"),
    ("bad preset", {"preset": "strict"}, "/webhook/preset: 'strict' is not one of"),
    ("bad onError", {"onError": "ignore"}, "/webhook/onError:"),
    ("unknown action", {"actions": {"p": ["Block"]}}, "/webhook/actions/p/0: 'Block' is not one of"),
    ("empty action list", {"actions": {"p": []}}, "/webhook/actions/p: [] should be non-empty"),
    ("action not a list", {"actions": {"p": "Deny"}}, "/webhook/actions/p: 'Deny' is not of type 'array'"),
    (
        "duplicate action",
        {"actions": {"p": ["Warn", "Warn"]}},
        "/webhook/actions/p: ['Warn', 'Warn'] has non-unique",
    ),
    ("deny and warn", {"actions": {"p": ["Deny", "Warn"]}}, "/webhook/actions/p: Deny and Warn together"),
    (
        "deny and warn in a namespace",
        {"namespaces": {"ns": {"actions": {"p": ["Warn", "Deny", "Audit"]}}}},
        "/webhook/namespaces/ns/actions/p: Deny and Warn",
    ),
    (
        "bad namespace name",
        {"namespaces": {"Research_1": {}}},
        "/webhook/namespaces: 'Research_1' does not match",
    ),
    ("unknown namespace key", {"namespaces": {"a": {"preset": "warn"}}}, "/webhook/namespaces/a: Additional"),
    (
        "param null",
        {"namespaces": {"a": {"params": {"p": {"x": None}}}}},
        "/webhook/namespaces/a/params/p/x",
    ),
    ("skip not list", {"namespaces": {"a": {"skip": "p"}}}, "/webhook/namespaces/a/skip: 'p' is not of type"),
    ("not a mapping", ["warn"], "/webhook: ['warn'] is not of type 'object'"),
]


@pytest.mark.parametrize(("case", "raw", "expected"), INVALID, ids=[c[0] for c in INVALID])
def test_invalid_sections_name_the_json_pointer(case: str, raw: Any, expected: str) -> None:
    with pytest.raises(PolicyError) as caught:
        parse_config(raw)
    assert expected in str(caught.value)


def test_every_problem_is_reported_at_once() -> None:
    with pytest.raises(PolicyError) as caught:
        parse_config({"preset": "x", "onError": "y"})
    assert "/webhook/preset" in str(caught.value) and "/webhook/onError" in str(caught.value)


def test_unknown_policy_ids_are_refused_with_their_pointer() -> None:
    config = parse_config(
        {
            "actions": {"nccl-timout": ["Deny"]},
            "namespaces": {
                "a": {"actions": {"x": ["Warn"]}, "params": {"y": {"k": "v"}}, "skip": ["ok", "z"]}
            },
        }
    )
    with pytest.raises(PolicyError) as caught:
        check_policy_ids(config, ["ok"])
    text = str(caught.value)
    for pointer in ("/webhook/actions/nccl-timout", "/webhook/namespaces/a/actions/x",
                    "/webhook/namespaces/a/params/y", "/webhook/namespaces/a/skip/1"):  # fmt: skip
        assert pointer in text
    assert "/skip/0" not in text
    check_policy_ids(parse_config(EXAMPLE), ["nccl-timeout", "checkpoint-interval", "health-probes"])


ENFORCE = parse_config({"preset": "enforce"})
CONFIGURED = parse_config(EXAMPLE)
RESOLUTION = [
    ("warn preset, critical", WebhookConfig(), "p", Severity.CRITICAL, None, {WARN}),
    ("warn preset, info", WebhookConfig(), "p", Severity.INFO, None, {WARN}),
    ("enforce, critical", ENFORCE, "p", Severity.CRITICAL, "ns", {DENY}),
    ("enforce, high", ENFORCE, "p", Severity.HIGH, None, {DENY}),
    ("enforce, medium", ENFORCE, "p", Severity.MEDIUM, None, {WARN}),
    ("policy override", CONFIGURED, "nccl-timeout", Severity.LOW, None, {DENY}),
    ("policy override in another namespace", CONFIGURED, "nccl-timeout", Severity.LOW, "prod", {DENY}),
    ("namespace override", CONFIGURED, "checkpoint-interval", Severity.HIGH, "research", {WARN}),
    ("namespace without that policy", CONFIGURED, "nccl-timeout", Severity.HIGH, "research", {DENY}),
    ("preset where nothing overrides", CONFIGURED, "health-probes", Severity.HIGH, "research", {WARN}),
    (
        "namespace beats policy",
        parse_config({"actions": {"p": ["Deny"]}, "namespaces": {"a": {"actions": {"p": ["Audit"]}}}}),
        "p",
        Severity.HIGH,
        "a",
        {AUDIT},
    ),
    (
        "deny and audit",
        parse_config({"actions": {"p": ["Deny", "Audit"]}}),
        "p",
        Severity.LOW,
        None,
        {DENY, AUDIT},
    ),
]


@pytest.mark.parametrize(
    ("case", "config", "policy", "severity", "namespace", "expected"),
    RESOLUTION,
    ids=[c[0] for c in RESOLUTION],
)
def test_actions_resolve_namespace_then_policy_then_preset(
    case: str,
    config: WebhookConfig,
    policy: str,
    severity: Severity,
    namespace: str | None,
    expected: set[Action],
) -> None:
    assert config.actions_for(policy, severity, namespace) == expected
