"""What the webhook does with a finding: the config file's `webhook:` section and its resolution.

Actions mirror ValidatingAdmissionPolicy's `validationActions` (Deny, Warn, Audit) so that cluster admins
meet no new vocabulary. The default preset warns on everything: a new admission webhook that denies from
day one is how clusters lose their training pipelines, so enforcement is opted into per policy or with
the `enforce` preset.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import jsonschema

from kubegap.errors import PolicyError
from kubegap.findings import Severity
from kubegap.schema import pointer


class Action(enum.Enum):
    DENY = "Deny"
    WARN = "Warn"
    AUDIT = "Audit"


class Preset(enum.Enum):
    WARN = "warn"  # every failing rule becomes a warning
    ENFORCE = "enforce"  # findings at or above high deny, the rest warn


class OnError(enum.Enum):
    ALLOW = "allow"
    DENY = "deny"


Actions = frozenset[Action]
_WARN: Actions = frozenset({Action.WARN})
_DENY: Actions = frozenset({Action.DENY})

_ACTION_LIST: dict[str, Any] = {
    "type": "array",
    "minItems": 1,
    "uniqueItems": True,
    "items": {"enum": [a.value for a in Action]},
}
_ACTION_MAP: dict[str, Any] = {"type": "object", "additionalProperties": _ACTION_LIST}
_PARAMS: dict[str, Any] = {
    "type": "object",
    "additionalProperties": {
        "type": "object",
        "additionalProperties": {"type": ["string", "number", "boolean", "array", "object"]},
    },
}
SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "preset": {"enum": [p.value for p in Preset]},
        "onError": {"enum": [o.value for o in OnError]},
        "actions": _ACTION_MAP,
        "namespaces": {
            "type": "object",
            "propertyNames": {"pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", "maxLength": 63},
            "additionalProperties": {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "actions": _ACTION_MAP,
                    "params": _PARAMS,
                    "skip": {"type": "array", "uniqueItems": True, "items": {"type": "string"}},
                },
            },
        },
    },
}
_VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)


@dataclass(frozen=True, slots=True)
class NamespaceRules:
    """Overrides for one namespace; params and skip change what is evaluated, actions what is done."""

    actions: Mapping[str, Actions] = field(default_factory=dict)
    params: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # as the config's `params:`
    skip: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class WebhookConfig:
    preset: Preset = Preset.WARN
    on_error: OnError = OnError.ALLOW
    actions: Mapping[str, Actions] = field(default_factory=dict)
    namespaces: Mapping[str, NamespaceRules] = field(default_factory=dict)

    def actions_for(self, policy: str, severity: Severity, namespace: str | None) -> Actions:
        """Namespace override, else policy override, else the preset's answer for this severity."""
        rules = self.namespaces.get(namespace) if namespace else None
        if rules is not None and policy in rules.actions:
            return rules.actions[policy]
        if policy in self.actions:
            return self.actions[policy]
        if self.preset is Preset.ENFORCE and severity >= Severity.HIGH:
            return _DENY
        return _WARN


def parse_config(raw: Mapping[str, Any]) -> WebhookConfig:
    """Read the raw `webhook:` section; PolicyError naming the JSON pointer of every problem."""
    problems = [(pointer(["webhook", *e.absolute_path]), e.message) for e in _VALIDATOR.iter_errors(raw)]
    problems += _deny_and_warn(raw)
    if problems:
        lines = "\n".join(f"  {where}: {what}" for where, what in sorted(problems))
        raise PolicyError(f"config: invalid webhook section:\n{lines}")
    namespaces = {
        name: NamespaceRules(
            actions=_actions(section.get("actions", {})),
            params={policy: dict(values) for policy, values in section.get("params", {}).items()},
            skip=tuple(section.get("skip", ())),
        )
        for name, section in raw.get("namespaces", {}).items()
    }
    return WebhookConfig(
        preset=Preset(raw.get("preset", Preset.WARN.value)),
        on_error=OnError(raw.get("onError", OnError.ALLOW.value)),
        actions=_actions(raw.get("actions", {})),
        namespaces=namespaces,
    )


def check_policy_ids(config: WebhookConfig, known: Iterable[str]) -> None:
    """A misspelt policy id would silently keep the default action: refuse it at start-up instead."""
    ids = set(known)
    problems = [f"/webhook/actions/{p}" for p in config.actions if p not in ids]
    for name, rules in config.namespaces.items():
        base = f"/webhook/namespaces/{name}"
        problems += [f"{base}/actions/{p}" for p in rules.actions if p not in ids]
        problems += [f"{base}/params/{p}" for p in rules.params if p not in ids]
        problems += [f"{base}/skip/{i}" for i, p in enumerate(rules.skip) if p not in ids]
    if problems:
        lines = "\n".join(f"  {where}: no such policy" for where in sorted(problems))
        raise PolicyError(f"config: invalid webhook section:\n{lines}")


def _deny_and_warn(raw: Any) -> list[tuple[str, str]]:
    # As in ValidatingAdmissionPolicy: Deny already shows the message, a Warn beside it only repeats it.
    if not isinstance(raw, Mapping):
        return []
    maps: list[tuple[list[str], Any]] = [(["webhook", "actions"], raw.get("actions"))]
    namespaces = raw.get("namespaces")
    if isinstance(namespaces, Mapping):
        for name, section in namespaces.items():
            if isinstance(section, Mapping):
                maps.append((["webhook", "namespaces", str(name), "actions"], section.get("actions")))
    return [
        (pointer([*where, policy]), "Deny and Warn together only repeat the denial; choose one")
        for where, actions in maps
        if isinstance(actions, Mapping)
        for policy, listed in actions.items()
        if isinstance(listed, list) and {"Deny", "Warn"} <= set(map(str, listed))
    ]


def _actions(raw: Mapping[str, list[str]]) -> dict[str, Actions]:
    return {policy: frozenset(Action(a) for a in listed) for policy, listed in raw.items()}
