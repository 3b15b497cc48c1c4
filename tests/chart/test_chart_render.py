"""Real Helm lints and installs the chart (into the sink API server); the objects pass the OpenAPI schemas."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from chart.conftest import BAD_VALUES
from chart.helm import Job, scenario_names

pytest.importorskip(
    "kubernetes_validate", reason="kubernetes-validate (offline OpenAPI schemas) is not installed"
)

from chart import openapi

_HELM_LINT_WARNING = 2  # helm's support severities: 1 info (e.g. "icon is recommended"), 2 warning, 3 error
_NOT_IN_OPENAPI = {"cert-manager.io/v1"}  # CRDs: checked field by field in test_chart_certificates


def test_helm_lint_reports_no_warning_or_error(helm_answer: Mapping[str, Any]) -> None:
    lint = helm_answer["lint"]
    assert "error" not in lint, lint
    messages = lint["result"]["Messages"] or []
    worst = [m for m in messages if m["Severity"] >= _HELM_LINT_WARNING]
    assert worst == [], worst
    assert lint["result"]["TotalChartsLinted"] == 1


@pytest.mark.parametrize("name", scenario_names())
def test_scenario_installs(jobs: Mapping[str, Job], name: str) -> None:
    step = jobs[f"scenario:{name}"].last
    assert step.error is None, step.error
    assert step.objects, "nothing rendered"
    assert "installed in namespace kubegap" in step.notes


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


def test_older_kubernetes_is_refused(jobs: Mapping[str, Job]) -> None:
    error = jobs["kube-1.27"].last.error
    assert error is not None and "kubeVersion" in error and "1.27" in error


def test_cert_manager_without_its_api_fails_with_a_hint(jobs: Mapping[str, Job]) -> None:
    error = jobs["cert-manager-missing"].last.error
    assert error is not None
    assert "install cert-manager first" in error


@pytest.mark.parametrize("name", sorted(BAD_VALUES))
def test_helm_rejects_bad_values_naming_the_field(jobs: Mapping[str, Job], name: str) -> None:
    error = jobs[f"bad:{name}"].last.error
    assert error is not None, "bad values were accepted"
    assert "values don't meet the specifications of the schema" in error or "schema" in error
    assert BAD_VALUES[name][1] in error


def test_uninstall_removes_the_webhook_configuration_first(jobs: Mapping[str, Job]) -> None:
    # Removed first, the API server stops calling the webhook before its pods and Service go away.
    job = jobs["uninstall"]
    assert [(s.action, s.error) for s in job.steps] == [("install", None), ("uninstall", None)]
    deleted = [r["path"].split("/")[-2] for r in job.requests if r["method"] == "DELETE"]
    assert deleted[0] == "validatingwebhookconfigurations"
    assert {"deployments", "services", "clusterroles", "cronjobs"} <= set(deleted)
    assert all("/sh.helm.release" in p or "/kube-root" in p for p in job.objects), sorted(job.objects)


def test_install_creates_the_webhook_configuration_last(jobs: Mapping[str, Job]) -> None:
    # The API server must never call a webhook whose Service and Deployment do not exist yet.
    job = jobs["scenario:defaults"]
    created = [r["path"].rsplit("/", 1)[-1] for r in job.requests if r["method"] == "POST"]
    kinds = [c for c in created if c != "secrets"]
    assert kinds[-1] == "validatingwebhookconfigurations"
    assert {"deployments", "services", "configmaps"} <= set(kinds[:-1])
