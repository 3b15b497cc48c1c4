"""`kubegap audit --print-rbac`: the least a service account needs to run the audit.

get/list on every supported kind and on nodes; configmaps only with --resolve-configmaps, and then only
`get`; never secrets. Writing PolicyReports is the one write, and only with --write-policyreports.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

import yaml

from kubegap.kinds import SUPPORTED_KINDS
from kubegap.workloads import KindInfo

NAME = "kubegap-audit"


def cluster_role(
    resolve_configmaps: bool = False,
    write_policyreports: bool = False,
    kinds: Iterable[KindInfo] = SUPPORTED_KINDS,
) -> dict[str, Any]:
    by_group: defaultdict[str, list[str]] = defaultdict(list)
    for info in kinds:
        if info.plural not in by_group[info.group]:
            by_group[info.group].append(info.plural)
    rules: list[dict[str, Any]] = [
        {"apiGroups": [group], "resources": sorted(plurals), "verbs": ["get", "list"]}
        for group, plurals in sorted(by_group.items())
    ]
    if resolve_configmaps:
        rules.append({"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]})
    if write_policyreports:
        rules.append(
            {
                "apiGroups": ["wgpolicyk8s.io"],
                "resources": ["policyreports", "clusterpolicyreports"],
                "verbs": ["get", "create", "update"],
            }
        )
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": NAME, "labels": {"app.kubernetes.io/name": "kubegap"}},
        "rules": rules,
    }


def render(resolve_configmaps: bool = False, write_policyreports: bool = False) -> str:
    header = (
        "# Read-only ClusterRole for `kubegap audit`. Bind it to the identity that runs the audit, e.g.\n"
        f"#   kubectl create clusterrolebinding {NAME} --clusterrole={NAME} "
        "--serviceaccount=<namespace>:<serviceaccount>\n"
    )
    role = cluster_role(resolve_configmaps, write_policyreports)
    return header + yaml.safe_dump(role, sort_keys=False)
