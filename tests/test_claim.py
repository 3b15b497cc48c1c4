"""DRA claim facts: requests, their classes, and the classes held to the same PCIe root (RULES.md v3)."""

from __future__ import annotations

from typing import Any

from kubegap.config import Settings
from kubegap.evaluate import build_engine
from kubegap.facts.claim import gather_claim
from kubegap.findings import Result
from kubegap.kinds import kind_info, workload_of


def claim(devices: dict[str, Any], kind: str = "ResourceClaim", version: str = "v1") -> dict[str, Any]:
    spec = {"spec": {"devices": devices}} if kind == "ResourceClaimTemplate" else {"devices": devices}
    return {"apiVersion": f"resource.k8s.io/{version}", "kind": kind, "metadata": {"name": "c"}, "spec": spec}


def requests(obj: dict[str, Any]) -> dict[str, tuple[str, str]]:
    [unit] = gather_claim(obj).units["claim"]
    return {
        r["name"]: (r["classesText"], r["alignedClassesText"]) for r in unit.bindings["claim"]["requests"]
    }


GPU = {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}
NIC = {"name": "nic", "firstAvailable": [{"name": "a", "deviceClassName": "dranet"},
                                         {"name": "b", "deviceClassName": "sriov"}]}  # fmt: skip
PCIE = "resource.kubernetes.io/pcieRoot"


def test_claims_are_known_kinds_but_not_workloads() -> None:
    for kind in ("ResourceClaim", "ResourceClaimTemplate"):
        for version in ("v1", "v1beta2", "v1beta1"):
            obj = claim({}, kind, version)
            assert kind_info(obj) is not None and workload_of(obj) is None


def test_classes_come_from_exactly_first_available_and_v1beta1() -> None:
    beta = {"name": "old", "deviceClassName": "gpu.amd.com"}
    found = requests(claim({"requests": [GPU, NIC, beta]}))
    assert {n: c for n, (c, _) in found.items()} == {
        "gpu": "gpu.nvidia.com",
        "nic": "dranet\nsriov",
        "old": "gpu.amd.com",
    }


def test_only_pcie_root_constraints_align_and_sub_requests_count_for_their_request() -> None:
    constraints = [
        {"requests": ["gpu", "nic/a"], "matchAttribute": PCIE},
        {"requests": ["gpu", "other"], "matchAttribute": "resource.kubernetes.io/numaNode"},
    ]
    other = {"name": "other", "exactly": {"deviceClassName": "dranet"}}
    found = requests(
        claim({"requests": [GPU, NIC, other], "constraints": constraints}, "ResourceClaimTemplate")
    )
    assert found["gpu"][1] == "dranet\nsriov"
    assert found["nic"][1] == "gpu.nvidia.com"
    assert found["other"][1] == ""


def test_a_constraint_without_requests_holds_every_request() -> None:
    found = requests(claim({"requests": [GPU, NIC], "constraints": [{"matchAttribute": PCIE}]}))
    assert found["gpu"][1] == "dranet\nsriov" and found["nic"][1] == "gpu.nvidia.com"


def test_malformed_claims_give_no_requests_and_no_error() -> None:
    assert requests(claim({"requests": "x", "constraints": [1]})) == {}
    engine = build_engine(Settings(select=("gpu-nic-alignment",)))
    results = engine.evaluate(claim({"requests": [1, {"name": 3}]})).results
    assert all(r.result is not Result.ERROR for r in results)
