"""Every rendered object passes the Kubernetes OpenAPI schema (strict: no unknown fields) of its versions."""

from __future__ import annotations

import copy
from collections.abc import Mapping

import pytest

from chart.helm import Job, scenario_names

pytest.importorskip(
    "kubernetes_validate", reason="kubernetes-validate (offline OpenAPI schemas) is not installed"
)

from chart import openapi

_NOT_IN_OPENAPI = {"cert-manager.io/v1"}  # CRDs: checked field by field in test_chart_certificates


@pytest.mark.parametrize("kube", ["1.33", "1.37"])  # rendered for 1.33 (see conftest); still valid later
@pytest.mark.parametrize("name", [*scenario_names(), "extras"])
def test_objects_match_kubernetes_openapi_schema(jobs: Mapping[str, Job], name: str, kube: str) -> None:
    job = jobs.get(f"scenario:{name}") or jobs[name]
    checked = 0
    for obj in job.last.objects:
        if obj["apiVersion"] in _NOT_IN_OPENAPI:
            continue
        # strict: an unknown field (a typo, a field of a newer release) is an error, like --validate=strict
        assert openapi.errors(obj, kube) == [], f"{obj['kind']} {obj['metadata']['name']}"
        checked += 1
    assert checked >= 3


def test_oldest_supported_kubernetes_accepts_every_object(jobs: Mapping[str, Job]) -> None:
    for obj in jobs["kube-1.28"].last.objects:
        assert openapi.errors(obj, "1.28") == [], f"{obj['kind']} {obj['metadata']['name']}"


def test_the_check_catches_a_misspelt_field(jobs: Mapping[str, Job]) -> None:
    deployment = copy.deepcopy(jobs["scenario:defaults"].last.one("Deployment"))
    assert openapi.errors(deployment, "1.33") == []
    deployment["spec"]["template"]["spec"]["containers"][0]["readinesProbe"] = {}
    assert openapi.errors(deployment, "1.33") != []
