"""A pod template's tolerations, as the scheduler matches them against taints (RULES.md `health-taints`).

kubernetes core/v1 Toleration: an empty key with operator Exists matches every taint; an empty effect
matches every effect. A toleration of PreferNoSchedule only tolerates what never keeps a pod away, so it
bypasses nothing. The scheduler's NodeUnschedulable plugin lets a pod that tolerates
`node.kubernetes.io/unschedulable:NoSchedule` onto a cordoned node (kubernetes/kubernetes
pkg/scheduler/framework/plugins/nodeunschedulable).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubegap import raw
from kubegap.fieldpath import FieldPath, render


def gather(spec: Mapping[str, Any], base: FieldPath) -> dict[str, Any]:
    """`blanketToleration` (path of the first toleration of every taint, '' if none), and the keys
    tolerated with an effect that keeps pods away, one per line (`toleratedKeysText`) and with the path of
    each (`toleratedKeyPaths`); `toleratedKeys` lists them."""
    blanket, paths = "", dict[str, str]()
    for index, item in enumerate(raw.items(spec.get("tolerations"))):
        toleration = raw.mapping(item)
        if toleration.get("effect") == "PreferNoSchedule":
            continue
        key = str(toleration.get("key") or "")
        path = render((*base, "spec", "tolerations", index))
        if not key and toleration.get("operator") == "Exists":
            blanket = blanket or path
        elif key:
            paths.setdefault(key, path)
    return {
        "blanketToleration": blanket,
        "toleratedKeys": sorted(paths),
        "toleratedKeysText": "\n".join(sorted(paths)),
        "toleratedKeyPaths": paths,
    }
