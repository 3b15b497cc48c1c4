"""Discovery for the sink API server: the API groups, versions and resources a kubegap release uses.

Helm maps each rendered kind to its REST path through these documents (legacy /api, /apis, and one
APIResourceList per group version), and reads the Kubernetes version from /version.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Resource:
    group: str  # "" for the core group
    version: str
    kind: str
    plural: str
    namespaced: bool

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


# The kinds a kubegap release can contain, plus the Secrets Helm keeps its release records in.
BUILTIN_RESOURCES: tuple[Resource, ...] = (
    Resource("", "v1", "Namespace", "namespaces", False),
    Resource("", "v1", "Secret", "secrets", True),
    Resource("", "v1", "ConfigMap", "configmaps", True),
    Resource("", "v1", "Service", "services", True),
    Resource("", "v1", "ServiceAccount", "serviceaccounts", True),
    Resource("", "v1", "ResourceQuota", "resourcequotas", True),
    Resource("apps", "v1", "Deployment", "deployments", True),
    Resource("batch", "v1", "CronJob", "cronjobs", True),
    Resource("batch", "v1", "Job", "jobs", True),
    Resource("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", True),
    Resource("networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies", True),
    Resource("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", False),
    Resource("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", False),
    Resource("rbac.authorization.k8s.io", "v1", "Role", "roles", True),
    Resource("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", True),
    Resource(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingWebhookConfiguration",
        "validatingwebhookconfigurations",
        False,
    ),
)
CERT_MANAGER_RESOURCES: tuple[Resource, ...] = (
    Resource("cert-manager.io", "v1", "Issuer", "issuers", True),
    Resource("cert-manager.io", "v1", "Certificate", "certificates", True),
)
PROMETHEUS_OPERATOR_RESOURCES: tuple[Resource, ...] = (
    Resource("monitoring.coreos.com", "v1", "ServiceMonitor", "servicemonitors", True),
)

_VERBS = ["create", "delete", "get", "list", "patch", "update", "watch"]


def document(resources: tuple[Resource, ...], git_version: str, path: str) -> Any:
    if path == "/version":
        major, minor = git_version.lstrip("v").split(".")[:2]
        return {"major": major, "minor": minor, "gitVersion": git_version, "platform": "linux/amd64"}
    if path == "/api":
        return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}
    if path == "/apis":
        groups: dict[str, list[str]] = {}
        for res in resources:
            if res.group and res.version not in groups.setdefault(res.group, []):
                groups[res.group].append(res.version)
        return {
            "kind": "APIGroupList",
            "apiVersion": "v1",
            "groups": [_group(g, v) for g, v in groups.items()],
        }
    for gv in {res.group_version for res in resources}:
        prefix = "/api/" if "/" not in gv else "/apis/"
        if path == prefix + gv:
            listed = [_resource_entry(r) for r in resources if r.group_version == gv]
            return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": listed}
    return None


def _group(name: str, versions: list[str]) -> dict[str, Any]:
    entries = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": entries, "preferredVersion": entries[0]}


def _resource_entry(res: Resource) -> dict[str, Any]:
    return {"name": res.plural, "singularName": res.kind.lower(), "namespaced": res.namespaced} | {
        "kind": res.kind,
        "verbs": _VERBS,
    }
