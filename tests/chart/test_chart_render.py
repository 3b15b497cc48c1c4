"""Real Helm lints, installs, upgrades and uninstalls the chart (with the sink API server)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from chart.conftest import BAD_VALUES
from chart.helm import Job, scenario_names

_HELM_LINT_WARNING = 2  # helm's support severities: 1 info (e.g. "icon is recommended"), 2 warning, 3 error


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
