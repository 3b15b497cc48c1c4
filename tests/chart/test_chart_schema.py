"""values.schema.json accepts the documented values and rejects wrong ones by field name (no Helm needed)."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from chart.conftest import BAD_VALUES, EXTRAS
from chart.helm import CHART, scenario_names, scenario_values

SCHEMA = json.loads((CHART / "values.schema.json").read_text(encoding="utf-8"))
DEFAULTS = yaml.safe_load((CHART / "values.yaml").read_text(encoding="utf-8"))


def _merged(override: Mapping[str, Any], base: Mapping[str, Any] = DEFAULTS) -> dict[str, Any]:
    """Helm's coalescing of a values file over the chart's values.yaml (maps merge, the rest replaces)."""
    result = copy.deepcopy(dict(base))
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(result.get(key), Mapping):
            result[key] = _merged(value, result[key])
        else:
            result[key] = copy.deepcopy(value)
    return result


def _errors(values: Mapping[str, Any]) -> list[jsonschema.ValidationError]:
    validator = jsonschema.Draft7Validator(SCHEMA)
    return list(validator.iter_errors(values))


def test_schema_is_valid_draft_7() -> None:
    jsonschema.Draft7Validator.check_schema(SCHEMA)


@pytest.mark.parametrize("name", [*scenario_names(), "extras"])
def test_documented_values_are_accepted(name: str) -> None:
    override = EXTRAS if name == "extras" else scenario_values(name)
    assert [e.message for e in _errors(_merged(override))] == []


@pytest.mark.parametrize("name", sorted(BAD_VALUES))
def test_wrong_values_are_rejected_naming_the_field(name: str) -> None:
    override, field = BAD_VALUES[name]
    errors = _errors(_merged(override))
    assert errors, "accepted"
    assert any(field in e.json_path or field in e.message for e in errors), [e.json_path for e in errors]


def _leaves(node: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    if isinstance(node, Mapping) and node:
        for key, value in node.items():
            yield from _leaves(value, (*path, key))
    else:
        yield path


def _schema_paths(schema: Mapping[str, Any], path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    properties = schema.get("properties")
    if schema.get("type") == "object" and properties:
        for key, sub in properties.items():
            yield from _schema_paths(sub, (*path, key))
    else:
        yield path


def test_every_value_is_described_and_every_described_value_has_a_default() -> None:
    described = set(_schema_paths(SCHEMA))
    documented = set(_leaves(DEFAULTS))

    def covered(path: tuple[str, ...], by: set[tuple[str, ...]]) -> bool:
        return any(path[: len(p)] == p or p[: len(path)] == path for p in by)

    assert [p for p in documented if not covered(p, described)] == []
    assert [p for p in described if not covered(p, documented)] == []


def test_unknown_top_level_key_is_rejected() -> None:
    assert _errors(_merged({"webhok": {"enabled": False}}))


def test_the_values_comment_grants_what_the_rbac_template_grants() -> None:
    """The comment on audit.resolveConfigMaps says the verbs the audit ClusterRole gets for ConfigMaps."""
    root = Path(__file__).resolve().parents[2] / "charts" / "kubegap"
    values = (root / "values.yaml").read_text("utf-8")
    rbac = (root / "templates" / "audit-rbac.yaml").read_text("utf-8")
    block = rbac[rbac.index("if $a.resolveConfigMaps") :]
    verbs = block[block.index("verbs: [") + len("verbs: [") : block.index("]", block.index("verbs: ["))]
    comment = values[: values.index("resolveConfigMaps:")].rsplit("# --", 1)[1]
    assert verbs == "get" and "adds get (only) on configmaps" in comment and "watch" not in comment
