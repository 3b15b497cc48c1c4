"""Pod-template facts: GPUs per pod, annotations, resource names and the pod's reach to the fabric."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kubegap import raw
from kubegap.facts import nics, tolerations
from kubegap.fieldpath import render
from kubegap.workloads import PodTemplate

_FABRIC_DEVICES: Final = "/dev/infiniband"  # the RDMA character devices (uverbs, rdma_cm) of the host


def _fabric_devices(template: PodTemplate) -> bool:
    """A privileged container that mounts the host's /dev/infiniband reaches the fabric without an
    extended resource (a common pattern on clusters without an RDMA device plugin)."""
    volumes = {
        str(v.get("name")): str(raw.mapping(v.get("hostPath")).get("path", ""))
        for v in raw.items(template.spec.get("volumes"))
        if raw.is_mapping(v)
    }
    privileged = (
        c for c in template.containers if raw.mapping(c.spec.get("securityContext")).get("privileged") is True
    )
    for container in privileged:
        for mount in raw.items(container.spec.get("volumeMounts")):
            path = volumes.get(str(raw.mapping(mount).get("name")), "")
            if path.rstrip("/") == _FABRIC_DEVICES or path.startswith(_FABRIC_DEVICES + "/"):
                return True
    return False


def pinned_labels(spec: Mapping[str, Any]) -> dict[str, str]:
    """Node labels the pod can only run with one value of: its nodeSelector, and a label that every
    required nodeAffinity term pins with `In` and the same single value (terms are ORed)."""
    affinity = raw.mapping(raw.mapping(spec.get("affinity")).get("nodeAffinity"))
    required = raw.mapping(affinity.get("requiredDuringSchedulingIgnoredDuringExecution"))
    terms = [_term_pins(t) for t in raw.items(required.get("nodeSelectorTerms"))]
    pinned = {k: v for k, v in terms[0].items() if all(t.get(k) == v for t in terms)} if terms else {}
    selector = raw.mapping(spec.get("nodeSelector"))
    pinned.update({str(k): v for k, v in selector.items() if isinstance(v, str)})
    return pinned


def _term_pins(term: Any) -> dict[str, str]:
    pins = {}
    for expression in raw.items(raw.mapping(term).get("matchExpressions")):
        expression = raw.mapping(expression)
        values = raw.items(expression.get("values"))
        if expression.get("operator") == "In" and len(values) == 1 and isinstance(values[0], str):
            pins[str(expression.get("key"))] = values[0]
    return pins


def gather(
    template: PodTemplate, containers: list[dict[str, Any]], counts: Mapping[int, Mapping[str, int]]
) -> dict[str, Any]:
    """Facts of one pod template, from its containers' facts and resource counts (keyed by `id`)."""
    spec, metadata = template.spec, template.metadata
    claims = spec.get("resourceClaims")
    names = sorted({r for c in template.containers for r in counts[id(c)]})
    annotations = {str(k): str(v) for k, v in raw.mapping(metadata.get("annotations")).items()}
    return {
        "role": template.role,
        "path": render(template.path),
        "replicas": template.replicas,
        "podLevel": template.pod_level,
        "gpusPerPod": sum(c["gpus"] for c in containers),
        "acceleratorsPerPod": sum(c["accelerators"] for c in containers),
        "annotations": annotations,
        "resourceNames": names,
        "resourceNamesText": "\n".join(names),  # one per line, for `globs` params
        "resources": nics.resource_counts(template.containers, counts),
        "unreadableResources": nics.unreadable_resources(template.containers),
        "nics": nics.attached(annotations),
        "pinnedLabels": pinned_labels(spec),
        "ibHcaCounted": any("ibHca" in c for c in containers),
        "hostNetwork": spec.get("hostNetwork") is True,
        "fabricDevices": _fabric_devices(template),
        "resourceClaims": len(claims) if isinstance(claims, list) else 0,
        **tolerations.gather(spec, template.path),
    }
