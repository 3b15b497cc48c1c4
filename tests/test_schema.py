"""kubegap's own schemas are checked against their metaschema here, and the files it ships against their
schemas, not at every start (kubegap.schema)."""

from __future__ import annotations

import copy
from importlib.resources import files

import jsonschema
import pytest

from kubegap import policy, schema
from kubegap.errors import PolicyError

# every schema kubegap ships, so that one added later is checked too
NAMES = sorted(
    f.name.removesuffix(".schema.json")
    for f in files("kubegap").joinpath("schemas").iterdir()
    if f.name.endswith(".schema.json")
)


@pytest.mark.parametrize("name", NAMES)
def test_each_bundled_schema_is_valid_for_its_metaschema(name: str) -> None:
    validator = schema._validator(name)  # as kubegap uses it: the knobs' setting names filled in
    type(validator).check_schema(validator.schema)


# every file kubegap ships and reads without checking it at start: each bundled policy, the knob catalogue
POLICIES = files("kubegap.policies")
SHIPPED = [(name, "policy") for name, _ in policy._policy_files(POLICIES)] + [("knobs.yaml", "knobs")]


@pytest.mark.parametrize(("name", "kind"), SHIPPED)
def test_each_shipped_file_is_valid_for_its_schema(name: str, kind: str) -> None:
    document = schema.parse(POLICIES.joinpath(name).read_text("utf-8"), kind, name, checked=False)
    assert schema.check(document, kind, name) is document


def test_a_shipped_file_that_is_not_a_mapping_is_an_error_not_a_crash() -> None:
    with pytest.raises(PolicyError, match=r"knobs.yaml: not a knobs file"):
        schema.parse("- a list\n", "knobs", "knobs.yaml", checked=False)


def test_the_shipped_files_are_all_there() -> None:
    assert len(SHIPPED) == len(policy.load()) + 1 >= 15


def test_a_broken_schema_fails_the_check() -> None:
    broken = copy.deepcopy(schema._validator("policy").schema)
    broken["type"] = "no-such-type"
    with pytest.raises(jsonschema.SchemaError):
        type(schema._validator("policy")).check_schema(broken)


def test_a_document_against_the_schema_still_fails_with_its_pointer() -> None:
    with pytest.raises(PolicyError, match=r"/spec"):
        schema.check({"apiVersion": "kubegap.dev/v1alpha1", "kind": "Policy", "spec": 3}, "policy", "x")
