"""The NICs a pod asks for (RULES.md v3 `gpu-nic-rails/nic-per-rail`), read three ways:

- **Per-device resources.** The pod's count of every extended resource (a name with a `/`), summed over
  its containers (`resources`, largest first); a policy's globs parameter chooses the NIC resources.
  `vpc.amazonaws.com/efa: 32` is 32 EFA devices
  (docs.aws.amazon.com/eks/latest/userguide/device-management-efa.html). A count kubegap cannot read
  (`${EFA}`) is listed in `unreadableResources`, never counted as 0.
- **Multus** `k8s.v1.cni.cncf.io/networks`: as Multus parses it (k8snetworkplumbingwg/multus-cni
  pkg/k8sclient/k8sclient.go, parsePodNetworkAnnotation): JSON when the value holds `[`, `{` or `"`, a
  list of objects that each name a network; otherwise a comma list of `[namespace/]name[@interface]` whose
  names are DNS-1123 labels. One entry is one interface.
- **GKE multi-network** `networking.gke.io/interfaces`: a JSON list of `{interfaceName, network}`; the
  pod's default interface (network `default`, or the interface `networking.gke.io/default-interface`
  names, `eth0` when unset) is not a data NIC (GoogleCloudPlatform/container-engine-accelerators,
  gpudirect-tcpxo/nccl-test-latest-autopilot.yaml: eth0 on `default`, eth1-eth8 on vpc1-vpc8).

An annotation that cannot be read this way (malformed, or a template placeholder) is `unresolved`, with why.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from kubegap import integers
from kubegap.facts.container import unreadable_quantities
from kubegap.workloads import Container

MULTUS: Final = "k8s.v1.cni.cncf.io/networks"
GKE: Final = "networking.gke.io/interfaces"
GKE_DEFAULT: Final = "networking.gke.io/default-interface"
_LABEL: Final = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z")  # DNS-1123 label, as Multus checks names
_PLACEHOLDER: Final = re.compile(r"\$\{|\$\(|\{\{")  # ${VAR}, $(VAR), {{ .Values }}: filled in later


def resource_counts(
    containers: Sequence[Container], counts: Mapping[int, Mapping[str, int]]
) -> list[dict[str, Any]]:
    """`{name, count}` of each extended resource (a name with a `/`) the pod requests, summed over its
    containers, largest count first (then by name), so that a policy reads a chosen resource's largest count
    as `[0]` of a filter, without iterating a policy variable (which would keep its validations out of the
    scope program, kubegap.batch). An unreadable count is 0 here and listed by `unreadable_resources`."""
    totals: dict[str, int] = {}
    for each in containers:
        for name, n in counts[id(each)].items():
            if "/" in name:
                totals[name] = totals.get(name, 0) + n
    ranked = sorted(((n, name) for name, n in totals.items() if n > 0), key=lambda x: (-x[0], x[1]))
    return [{"name": name, "count": n} for n, name in ranked]


def unreadable_resources(containers: Sequence[Container]) -> list[str]:
    """Extended resources whose limit or request is not a whole number (a placeholder, `1.5`, `x`)."""
    return sorted({name for each in containers for name, _, _ in unreadable_quantities(each) if "/" in name})


def attached(annotations: Mapping[str, str]) -> dict[str, Any]:
    """{multus, gke: interfaces each annotation attaches (absent without it), unresolved: [why, ...]}."""
    out: dict[str, Any] = {"unresolved": []}
    readers = ((MULTUS, "multus", _multus), (GKE, "gke", _gke))
    for key, fact, read in readers:
        text = annotations.get(key)
        if text is None:
            continue
        try:
            if _PLACEHOLDER.search(text):
                raise ValueError("it holds a template placeholder")
            out[fact] = read(text, annotations)
        except (ValueError, RecursionError) as err:
            out["unresolved"].append(f"annotation {key} cannot be read: {err}")
    return out


def _multus(text: str, annotations: Mapping[str, str]) -> int:
    if any(c in text for c in '[{"'):
        entries = _json_list(text)
        if not all(isinstance(e, Mapping) and isinstance(e.get("name"), str) and e["name"] for e in entries):
            raise ValueError("a JSON list must hold objects that each name a network")
        return len(entries)
    items = [item.strip() for item in text.split(",")]
    for item in items:
        namespace, _, name = item.rpartition("/")
        name = name.partition("@")[0].strip()
        if not _LABEL.match(name) or (namespace and not _LABEL.match(namespace.strip())):
            raise ValueError(f"{item!r} is not [namespace/]name[@interface]")
    return len(items)


def _gke(text: str, annotations: Mapping[str, str]) -> int:
    default = annotations.get(GKE_DEFAULT, "eth0")
    data = 0
    for entry in _json_list(text):
        if not isinstance(entry, Mapping) or not all(
            isinstance(entry.get(k), str) for k in ("interfaceName", "network")
        ):
            raise ValueError("each interface needs an interfaceName and a network")
        data += entry["network"] != "default" and entry["interfaceName"] != default
    return data


def _json_list(text: str) -> list[Any]:
    try:
        value = integers.loads(text)
    except ValueError as err:
        raise ValueError(f"not JSON ({err})") from None
    if not isinstance(value, list):
        raise ValueError("not a JSON list")
    return value
