"""What an audit reads: the config file's `audit:` section, overridden by command-line flags."""

from __future__ import annotations

import argparse
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import jsonschema

from kubegap.audit import selector
from kubegap.errors import UsageError

_NAME = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"  # a namespace name (RFC 1123 label)

SCHEMA: Mapping[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "kubegap config: audit section",
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "namespaces": {"type": "array", "items": {"type": "string", "pattern": _NAME}, "uniqueItems": True},
        "excludeNamespaces": {
            "type": "array",
            "items": {"type": "string", "pattern": _NAME},
            "uniqueItems": True,
        },
        "selector": {"type": "string"},
        "includeOwnedPods": {"type": "boolean"},
        "resolveConfigMaps": {"type": "boolean"},
        "pageSize": {"type": "integer", "minimum": 1, "maximum": 10000},
    },
}

DEFAULT_PAGE_SIZE = 500  # the chunk size other cluster auditors settled on after OOMs with unpaged lists


@dataclass(frozen=True, slots=True)
class AuditScope:
    namespaces: tuple[str, ...] = ()  # empty: all
    exclude_namespaces: tuple[str, ...] = ()
    selector: str = ""
    include_owned_pods: bool = False
    resolve_configmaps: bool = False
    page_size: int = DEFAULT_PAGE_SIZE

    def field_selector(self) -> str:
        """Excluded namespaces, filtered by the server too (every resource supports metadata.namespace)."""
        return ",".join(f"metadata.namespace!={ns}" for ns in self.exclude_namespaces)

    def to_json(self) -> dict[str, Any]:
        return {
            "namespaces": list(self.namespaces),
            "excludeNamespaces": list(self.exclude_namespaces),
            "selector": self.selector or None,
            "includeOwnedPods": self.include_owned_pods,
            "resolveConfigMaps": self.resolve_configmaps,
            "pageSize": self.page_size,
        }


def validate_section(section: Mapping[str, Any]) -> None:
    errors = sorted(jsonschema.Draft202012Validator(SCHEMA).iter_errors(section), key=lambda e: list(e.path))
    if errors:
        first = errors[0]
        where = "audit" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first.path)
        raise UsageError(f"config: {where}: {first.message}")


def scope_from(section: Mapping[str, Any], args: argparse.Namespace) -> AuditScope:
    """The config section, validated, with every flag given on the command line taking precedence."""
    validate_section(section)

    def pick(flag: Any, key: str, default: Any) -> Any:
        return flag if flag not in (None, []) else section.get(key, default)

    scope = AuditScope(
        namespaces=tuple(pick(args.namespace, "namespaces", ())),
        exclude_namespaces=tuple(pick(args.exclude_namespace, "excludeNamespaces", ())),
        selector=str(pick(args.selector, "selector", "")),
        include_owned_pods=bool(pick(args.include_owned_pods, "includeOwnedPods", False)),
        resolve_configmaps=bool(pick(args.resolve_configmaps, "resolveConfigMaps", False)),
        page_size=int(pick(args.page_size, "pageSize", DEFAULT_PAGE_SIZE)),
    )
    _check(scope)
    return scope


def check_namespace(name: str) -> None:
    """A namespace goes into request paths: anything but an RFC 1123 label is refused before a request."""
    if not re.match(_NAME, name) or len(name) > 63:
        raise UsageError(f"{name!r} is not a namespace name")


def _check(scope: AuditScope) -> None:
    selector.check(scope.selector)
    for ns in (*scope.namespaces, *scope.exclude_namespaces):
        check_namespace(ns)
    if overlap := set(scope.namespaces) & set(scope.exclude_namespaces):
        raise UsageError(f"namespaces both included and excluded: {', '.join(sorted(overlap))}")
    if not 1 <= scope.page_size <= 10000:
        raise UsageError(f"--page-size must be between 1 and 10000, not {scope.page_size}")
