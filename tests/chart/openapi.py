"""Validate objects against the Kubernetes OpenAPI schemas that kubernetes-validate ships (offline).

The package's own `validate` reads and parses its definitions file on every call; the chart tests check
about a hundred objects, so the validators are built once per (Kubernetes version, kind) here instead.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from importlib.resources import files
from typing import Any

import jsonschema
import referencing


class SchemaNotFound(LookupError):
    pass


def _schema_dir(version: str) -> Any:
    return files("kubernetes_validate") / "kubernetes-json-schema" / f"v{version}.0-local-strict"


@functools.cache
def _definitions(version: str) -> referencing.Resource[Any]:
    text = (_schema_dir(version) / "_definitions.json").read_text(encoding="utf-8")
    return referencing.Resource.from_contents(json.loads(text))


@functools.cache
def _validator(version: str, kind: str, api_version: str) -> jsonschema.protocols.Validator:
    # The package names files <kind>-<group prefix>-<version>.json: rbac.authorization.k8s.io/v1 -> rbac-v1.
    group_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    path = _schema_dir(version) / f"{kind.lower()}-{group_version}.json"
    if not path.is_file():
        raise SchemaNotFound(f"no {version} schema for {api_version} {kind}")
    schema = json.loads(path.read_text(encoding="utf-8"))
    registry: referencing.Registry[Any] = referencing.Resource.from_contents(schema) @ referencing.Registry()
    registry = _definitions(version) @ registry
    validator: jsonschema.protocols.Validator = jsonschema.Draft202012Validator(schema, registry=registry)
    return validator


def errors(obj: Mapping[str, Any], version: str) -> list[str]:
    """Strict (no unknown fields) schema errors of `obj` for Kubernetes `version` ("1.33"), as text."""
    validator = _validator(version, obj["kind"], obj["apiVersion"])
    return [f"{e.json_path}: {e.message[:300]}" for e in validator.iter_errors(dict(obj))]
