"""The audit CronJob, its read-only RBAC, and the configuration file both parts read."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
import yaml

from chart.helm import Job, Step, pod_specs, scenario_names, scenario_values
from kubegap.audit import rbac
from kubegap.kinds import SUPPORTED_KINDS

READ = {"get", "list", "watch"}
WRITE = {"create", "update", "patch", "delete", "deletecollection", "bind", "escalate", "impersonate"}


def _config(step: Step) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(step.one("ConfigMap")["data"]["config.yaml"])
    return loaded


def _rules(step: Step) -> list[dict[str, Any]]:
    rules: list[dict[str, Any]] = []
    for role in step.find("ClusterRole") + step.find("Role"):
        rules += role["rules"]
    return rules


def _granted(rules: list[dict[str, Any]], verbs: set[str]) -> set[tuple[str, str]]:
    return {
        (group, resource)
        for rule in rules
        if set(rule["verbs"]) & verbs
        for group in rule["apiGroups"]
        for resource in rule["resources"]
    }


@pytest.mark.parametrize("job", [*(f"scenario:{n}" for n in scenario_names()), "extras", "elsewhere"])
def test_rbac_never_reaches_secrets_or_wildcards(jobs: Mapping[str, Job], job: str) -> None:
    for rule in _rules(jobs[job].last):
        assert "secrets" not in rule["resources"]
        assert "*" not in rule["resources"] + rule["apiGroups"] + rule["verbs"], rule
        assert "nonResourceURLs" not in rule and "resourceNames" not in rule


def test_audit_reads_exactly_the_supported_kinds_and_nodes(jobs: Mapping[str, Job]) -> None:
    rules = _rules(jobs["scenario:defaults"].last)
    assert all(set(rule["verbs"]) <= READ for rule in rules)
    expected = {(k.group, k.plural) for k in SUPPORTED_KINDS}
    assert ("", "nodes") in expected
    assert _granted(rules, READ) == expected


def test_configmaps_and_report_writes_only_when_enabled(jobs: Mapping[str, Job]) -> None:
    rules = _rules(jobs["scenario:audit-only"].last)
    expected = {(k.group, k.plural) for k in SUPPORTED_KINDS} | {("", "configmaps")}
    reports = {("wgpolicyk8s.io", "policyreports"), ("wgpolicyk8s.io", "clusterpolicyreports")}
    assert _granted(rules, READ) == expected | reports
    assert _granted(rules, WRITE) == reports
    (report_rule,) = [r for r in rules if r["apiGroups"] == ["wgpolicyk8s.io"]]
    assert set(report_rule["verbs"]) - READ == {"create", "update"}


def _permissions(rules: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    return {
        (group, resource, verb)
        for rule in rules
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


@pytest.mark.parametrize(
    ("scenario", "resolve", "write"), [("defaults", False, False), ("audit-only", True, True)]
)
def test_audit_role_grants_what_the_audit_asks_for(
    jobs: Mapping[str, Job], scenario: str, resolve: bool, write: bool
) -> None:
    # `kubegap audit --print-rbac` states what the audit needs; the chart must grant that and nothing more.
    asked = rbac.cluster_role(resolve_configmaps=resolve, write_policyreports=write)["rules"]
    assert _permissions(_rules(jobs[f"scenario:{scenario}"].last)) == _permissions(asked)


def test_binding_gives_the_role_to_the_audit_account_only(jobs: Mapping[str, Job]) -> None:
    step = jobs["elsewhere"].last
    binding = step.one("ClusterRoleBinding")
    role = step.one("ClusterRole")
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": role["metadata"]["name"],
    }
    cron = step.one("CronJob")
    account = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["serviceAccountName"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": account, "namespace": "gpu-guard"}]
    assert step.one("ServiceAccount", "-audit")["metadata"]["name"] == account


@pytest.mark.parametrize(
    ("scenario", "schedule", "extra_args"),
    [
        ("defaults", "30 * * * *", ["--jobs=1"]),
        ("audit-only", "@daily", ["--jobs=2", "--resolve-configmaps", "--write-policyreports"]),
    ],
)
def test_cronjob_runs_the_documented_audit(
    jobs: Mapping[str, Job], scenario: str, schedule: str, extra_args: list[str]
) -> None:
    cron = jobs[f"scenario:{scenario}"].last.one("CronJob")["spec"]
    assert cron["schedule"] == schedule
    assert cron["concurrencyPolicy"] == "Forbid"
    pod = cron["jobTemplate"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["command"] == ["kubegap"]
    assert container["args"] == ["audit", "--config=/etc/kubegap/config.yaml", "--format=json", *extra_args]
    assert pod["automountServiceAccountToken"] is True  # the audit reads the cluster in-cluster


def test_cronjob_never_retries_findings_or_incomplete_runs(jobs: Mapping[str, Job]) -> None:
    job = jobs["scenario:defaults"].last.one("CronJob")["spec"]["jobTemplate"]["spec"]
    assert job["template"]["spec"]["restartPolicy"] == "Never"  # podFailurePolicy requires it
    assert job["backoffLimit"] == 1
    assert job["activeDeadlineSeconds"] == 3600
    fail, ignore = job["podFailurePolicy"]["rules"]
    assert fail["action"] == "FailJob"
    assert fail["onExitCodes"] == {"containerName": "audit", "operator": "In", "values": [1, 2, 4]}
    assert ignore["action"] == "Ignore"
    assert ignore["onPodConditions"] == [{"type": "DisruptionTarget", "status": "True"}]


def test_default_config_file(jobs: Mapping[str, Job]) -> None:
    assert _config(jobs["scenario:defaults"].last) == {
        "apiVersion": "kubegap.dev/v1alpha1",
        "kind": "Config",
        "policies": [],
        "skip": [],
        "params": {},
        "failOn": "high",
        "webhook": {"preset": "warn", "onError": "allow", "actions": {}, "namespaces": {}},
        "audit": {
            "namespaces": [],
            "excludeNamespaces": [],
            "includeOwnedPods": False,
            "resolveConfigMaps": False,
            "pageSize": 500,
        },
    }


def test_webhook_section_carries_the_values(jobs: Mapping[str, Job]) -> None:
    webhook = scenario_values("enforce")["webhook"]
    config = _config(jobs["scenario:enforce"].last)
    assert config["webhook"] == {k: webhook[k] for k in ("preset", "onError", "actions", "namespaces")}
    assert config["params"] == {"nccl-timeout": {"maxCollectiveTimeout": "30m"}}


def test_extra_policies_and_knobs_are_mounted_where_the_config_points(jobs: Mapping[str, Job]) -> None:
    step = jobs["scenario:audit-only"].last
    values = scenario_values("audit-only")
    config = _config(step)
    assert config["policyDirs"] == ["policies"]  # relative to config.yaml
    assert config["knobFiles"] == ["knobs/inhouse.yaml"]
    assert config["skip"] == ["gpu-node-health"]
    assert config["audit"]["namespaces"] == ["research", "training"]
    data = step.one("ConfigMap")["data"]
    (_, spec) = next(pod_specs(step.objects))
    (volume,) = [v for v in spec["volumes"] if "projected" in v]
    (source,) = volume["projected"]["sources"]
    files = {"/etc/kubegap/" + i["path"]: data[i["key"]] for i in source["configMap"]["items"]}
    policy = yaml.safe_load(files["/etc/kubegap/policies/site-checkpoint-dir/policy.yaml"])
    assert policy == values["config"]["extraPolicies"]["site-checkpoint-dir"]
    assert files["/etc/kubegap/knobs/inhouse.yaml"] == values["config"]["extraKnobs"]["inhouse"]
    assert yaml.safe_load(files["/etc/kubegap/config.yaml"]) == config
