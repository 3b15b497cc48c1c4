"""One Helm subprocess per test session renders every scenario and sequence the chart tests look at."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from chart.helm import HelmUnavailable, Job, run_render, scenario_names, scenario_values, skip_or_fail

NAMESPACE = "kubegap"
TLS_SECRET = f"/api/v1/namespaces/{NAMESPACE}/secrets/kubegap-webhook-tls"

# Values that the schema must reject, with a fragment the error must contain so that users see what is wrong.
BAD_VALUES: dict[str, tuple[dict[str, Any], str]] = {
    "failure-policy": ({"webhook": {"failurePolicy": "Sometimes"}}, "failurePolicy"),
    "timeout-too-long": ({"webhook": {"timeoutSeconds": 31}}, "timeoutSeconds"),
    "typo": ({"webhook": {"replica": 3}}, "replica"),
    "preset": ({"webhook": {"preset": "block"}}, "preset"),
    "action": ({"webhook": {"actions": {"nccl-timeout": ["Reject"]}}}, "actions"),
    "schedule": ({"audit": {"schedule": "hourly"}}, "schedule"),
    "digest": ({"image": {"digest": "latest"}}, "digest"),
    "metrics-port-is-the-webhook-s": ({"metrics": {"port": 8443}}, "port"),
    "metrics-port-privileged": ({"metrics": {"port": 80}}, "port"),
    "scrape-interval": ({"metrics": {"serviceMonitor": {"interval": "often"}}}, "interval"),
}

# A ServiceMonitor picked up by a Prometheus that selects on a `release` label, scraping every 15 s.
SERVICE_MONITOR: dict[str, Any] = {
    "metrics": {"serviceMonitor": {"enabled": True, "interval": "15s", "labels": {"release": "prom"}}}
}

# Everything optional switched on at once, to check the parts the scenario files leave off.
EXTRAS: dict[str, Any] = {
    "webhook": {
        "excludeNamespaces": ["monitoring"],
        "namespaceSelectorExpressions": [{"key": "team", "operator": "Exists"}],
        "skipControllerOwned": False,
        "networkPolicy": {"enabled": True, "denyEgress": False},
    },
    "metrics": {
        "networkPolicyFrom": [
            {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}
        ]
    },
    "certificates": {
        "certManager": {"enabled": True, "issuerRef": {"name": "corp-ca", "kind": "ClusterIssuer"}}
    },
    "audit": {"timeZone": "Etc/UTC", "selector": "team=ml", "includeOwnedPods": True},
}


def _jobs() -> list[dict[str, Any]]:
    jobs: list[dict[str, Any]] = [
        {
            "name": f"scenario:{name}",
            "certManager": name == "cert-manager",
            "steps": [{"action": "install", "values": scenario_values(name)}],
        }
        for name in scenario_names()
    ]
    defaults = scenario_values("defaults")
    jobs += [
        {"name": "kube-1.28", "kubeVersion": "v1.28.0", "steps": [{"action": "install", "values": defaults}]},
        {"name": "uninstall", "steps": [{"action": "install", "values": defaults}, {"action": "uninstall"}]},
        {"name": "kube-1.27", "kubeVersion": "v1.27.9", "steps": [{"action": "install", "values": defaults}]},
        {"name": "extras", "certManager": True, "steps": [{"action": "install", "values": EXTRAS}]},
        {
            "name": "service-monitor",
            "prometheusOperator": True,
            "steps": [{"action": "install", "values": SERVICE_MONITOR}],
        },
        {"name": "service-monitor-without-crd", "steps": [{"action": "install", "values": SERVICE_MONITOR}]},
        {
            "name": "service-monitor-without-port",
            "prometheusOperator": True,
            "steps": [
                {"action": "install", "values": {"metrics": {"port": 0, "serviceMonitor": {"enabled": True}}}}
            ],
        },
        {"name": "metrics-port-off", "steps": [{"action": "install", "values": {"metrics": {"port": 0}}}]},
        # Nothing may assume the release is called kubegap or lives in namespace kubegap.
        {"name": "elsewhere", "namespace": "gpu-guard", "release": "guard", "steps": [{"action": "install"}]},
        {
            "name": "cert-manager-missing",
            "steps": [{"action": "install", "values": scenario_values("cert-manager")}],
        },
        {
            "name": "upgrades",
            "steps": [
                {"action": "install", "values": defaults},
                {"action": "upgrade", "values": defaults},
                # The serving certificate enters its renewal window (as if a year had passed).
                {
                    "action": "patch",
                    "path": TLS_SECRET,
                    "merge": {"metadata": {"annotations": {"kubegap.dev/not-after": "1000"}}},
                },
                {"action": "upgrade", "values": defaults},
                {"action": "upgrade", "values": {"certificates": {"selfSigned": {"caGeneration": "2"}}}},
                {"action": "upgrade", "values": {"certificates": {"selfSigned": {"caGeneration": "2"}}}},
            ],
        },
    ]
    jobs += [
        {"name": f"bad:{name}", "steps": [{"action": "install", "values": v}]}
        for name, (v, _) in BAD_VALUES.items()
    ]
    return jobs


@pytest.fixture(scope="session")
def helm_answer() -> Mapping[str, Any]:
    try:
        return run_render({"lint": True, "jobs": _jobs()})
    except HelmUnavailable as exc:
        skip_or_fail(str(exc))
        raise AssertionError("unreachable") from exc


@pytest.fixture(scope="session")
def jobs(helm_answer: Mapping[str, Any]) -> dict[str, Job]:
    return {raw["name"]: Job.of(raw) for raw in helm_answer["jobs"]}


@pytest.fixture(scope="session")
def scenarios(jobs: Mapping[str, Job]) -> dict[str, list[dict[str, Any]]]:
    """Scenario name -> the objects its install rendered."""
    return {
        name.split(":", 1)[1]: job.last.objects for name, job in jobs.items() if name.startswith("scenario:")
    }
