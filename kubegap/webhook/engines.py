"""One compiled engine per distinct set of namespace overrides, all built at start-up.

Per-namespace parameters change what the CEL programs are given, so a namespace with its own `params` or
`skip` gets its own Engine; namespaces with the same overrides share one, and namespaces without any use
the default. Compiling here, never per request, keeps a review's cost to evaluation alone.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from kubegap.config import Settings
from kubegap.evaluate import Evaluator, build_engine
from kubegap.webhook.actions import NamespaceRules, WebhookConfig


@dataclass(frozen=True, slots=True)
class EngineSet:
    default: Evaluator
    by_namespace: Mapping[str, Evaluator]
    policies: int  # loaded into the default engine
    rules: tuple[tuple[str, str], ...] = ()  # (policy id, validation name) of the default engine, for metrics

    def for_namespace(self, namespace: str | None) -> Evaluator:
        return self.by_namespace.get(namespace, self.default) if namespace else self.default

    @property
    def distinct(self) -> int:
        """How many engines were compiled (for the start-up log)."""
        return len({id(e) for e in (self.default, *self.by_namespace.values())})


def namespace_settings(settings: Settings, rules: NamespaceRules) -> Settings:
    """The default settings with one namespace's parameters laid over them and its skips added."""
    skip = tuple(dict.fromkeys((*settings.skip, *rules.skip)))
    return replace(settings.with_params(rules.params), skip=skip)


def build_engines(
    settings: Settings, config: WebhookConfig, build: Callable[[Settings], Any] = build_engine
) -> EngineSet:
    """Compile the default engine and one per distinct override set; PolicyError as build_engine raises it."""
    default = build(settings)
    engines: dict[str, Any] = {}
    by_namespace: dict[str, Any] = {}
    for namespace, rules in config.namespaces.items():
        if not rules.params and not rules.skip:
            continue
        derived = namespace_settings(settings, rules)
        key = _key(derived)
        if key not in engines:
            engines[key] = build(derived)
        by_namespace[namespace] = engines[key]
    loaded = tuple((p.id, v.name) for p in default.policies for v in p.validations)
    return EngineSet(default, by_namespace, policies=len(default.policies), rules=loaded)


def _key(settings: Settings) -> str:
    # Parameter values may be lists (resource name globs): a canonical JSON text is hashable and exact.
    return json.dumps([settings.params, sorted(settings.skip)], sort_keys=True, default=str)
