"""The audit finds DRA claims (resource.k8s.io/v1) through discovery and judges them (RULES.md v3)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubegap.audit.runner import AuditResult
from tests.support.apiserver import ApiServer


def template(name: str, constraints: list[dict[str, Any]]) -> dict[str, Any]:
    devices = {
        "requests": [
            {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}},
            {"name": "nic", "exactly": {"deviceClassName": "dranet"}},
        ],
        "constraints": constraints,
    }
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": "llm"},
        "spec": {"spec": {"devices": devices}},
    }


def test_claim_templates_are_listed_and_judged(
    apiserver: ApiServer, audit: Callable[..., AuditResult]
) -> None:
    aligned = [{"requests": ["gpu", "nic"], "matchAttribute": "resource.kubernetes.io/pcieRoot"}]
    apiserver.load([template("aligned", aligned), template("unaligned", [])])
    result = audit()
    [coverage] = [k for k in result.coverage.kinds if k.kind == "ResourceClaimTemplate"]
    assert (coverage.api_version, coverage.seen, coverage.evaluated) == ("resource.k8s.io/v1", 2, 2)
    failing = {(f.object.name, f.policy, f.rule) for f in result.spool.findings()}
    assert ("unaligned", "gpu-nic-alignment", "pcie-root-aligned") in failing
    assert not any(name == "aligned" for name, _, _ in failing)
    assert any(k.kind == "ResourceClaim" and k.seen == 0 for k in result.coverage.kinds)
