"""DRA claim facts for `gpu-nic-alignment` (RULES.md v3): the device requests of a ResourceClaim or
ResourceClaimTemplate, each with the device classes it may be served from, and the claim's constraints.

resource.k8s.io/v1 (k8s.io/api resource/v1 types.go): `spec.devices.requests[]` has a `name` and either
`exactly.deviceClassName` or `firstAvailable[].deviceClassName` (sub-requests, one of which is chosen);
v1beta1 has `deviceClassName` on the request itself. `spec.devices.constraints[]` has `requests` (names;
absent or empty: every request of the claim; `request/sub-request` names one alternative) and
`matchAttribute`. A template holds the claim spec under `spec.spec`. Only constraints on
resource.kubernetes.io/pcieRoot align a GPU with a NIC (a NUMA node can span several roots).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubegap import raw
from kubegap.facts.model import ObjectFacts, Unit
from kubegap.fieldpath import FieldPath, render

GROUP = "resource.k8s.io"
# Kubernetes' standard DRA device attribute for "devices under the same PCIe root complex"
PCIE_ROOT = "resource.kubernetes.io/pcieRoot"


def _classes(request: Mapping[str, Any]) -> list[str]:
    exact = raw.mapping(request.get("exactly"))
    found = [exact.get("deviceClassName"), request.get("deviceClassName")]
    found += [raw.mapping(s).get("deviceClassName") for s in raw.items(request.get("firstAvailable"))]
    return [str(c) for c in found if isinstance(c, str) and c]


def _requests(devices: Mapping[str, Any], base: FieldPath) -> list[dict[str, Any]]:
    """Each request with its device classes and the classes of the requests held to its PCIe root (one
    per line, for `globs` params: the policy tests them in one match, not in nested loops)."""
    requests = [raw.mapping(r) for r in raw.items(devices.get("requests"))]
    names = [str(r.get("name", "")) for r in requests]
    classes = {n: _classes(r) for n, r in zip(names, requests, strict=True)}
    aligned = _aligned(devices, names)
    return [
        {
            "name": name,
            "classesText": "\n".join(classes[name]),
            "alignedClassesText": "\n".join(c for other in sorted(aligned[name]) for c in classes[other]),
            "path": render((*base, "requests", index)),
        }
        for index, name in enumerate(names)
    ]


def _aligned(devices: Mapping[str, Any], names: list[str]) -> dict[str, set[str]]:
    """Request name -> the other requests a pcieRoot matchAttribute constraint holds it together with."""
    out: dict[str, set[str]] = {n: set() for n in names}
    for constraint in raw.items(devices.get("constraints")):
        constraint = raw.mapping(constraint)
        if constraint.get("matchAttribute") != PCIE_ROOT:
            continue
        listed = {str(n).split("/", 1)[0] for n in raw.items(constraint.get("requests"))}
        covered = listed & set(names) if listed else set(names)  # no list: every request of the claim
        for name in covered:
            out[name] |= covered - {name}
    return out


def gather_claim(obj: Mapping[str, Any]) -> ObjectFacts:
    kind = str(obj.get("kind"))
    spec_path: FieldPath = ("spec", "spec") if kind == "ResourceClaimTemplate" else ("spec",)
    devices_path = (*spec_path, "devices")
    devices = raw.mapping(raw.dig(obj, devices_path))
    metadata = raw.mapping(obj.get("metadata"))
    annotations = ((("metadata", "annotations"), raw.mapping(metadata.get("annotations"))),)
    facts = {
        "kind": kind,
        "requests": _requests(devices, devices_path),
        "path": render(devices_path),
    }
    unit = Unit("claim", {"claim": facts}, None, None, devices_path, annotations)
    return ObjectFacts({"kind": kind, "group": GROUP}, {"claim": (unit,)})
