"""Where a path inside a container lives: the volume mounted at the longest mountPath that contains it.

A path on no volume is the container's own filesystem, gone with the container. A volume's kind is its
source field in the pod spec (`persistentVolumeClaim`, `emptyDir`, `hostPath`, `nfs`, `csi`, ...).
"""

from __future__ import annotations

import functools
import posixpath
from collections.abc import Mapping
from typing import Any, Final

from kubegap import raw
from kubegap.fieldpath import FieldPath, render

# Volume kinds that do not outlive the pod, and read-only projections nothing can be written to.
POD_LIFETIME: Final = frozenset({"emptyDir", "ephemeral"})
READ_ONLY: Final = frozenset({"configMap", "secret", "downwardAPI", "projected"})


# posixpath's functions are interpreted Python (1.4% of a typical object's time, measured), and a fleet's
# containers name the same few paths: remembered, up to a length only a hostile manifest passes.
_NORMAL: Final = functools.lru_cache(maxsize=1024)(posixpath.normpath)
_PARENT: Final = functools.lru_cache(maxsize=1024)(posixpath.dirname)
_KEPT: Final = 256


def normal(path: str) -> str:
    """`posixpath.normpath(path)`."""
    return _NORMAL(path) if len(path) <= _KEPT else posixpath.normpath(path)


def parent(path: str) -> str:
    """`posixpath.dirname(path)`."""
    return _PARENT(path) if len(path) <= _KEPT else posixpath.dirname(path)


def _kind(volume: Mapping[Any, Any]) -> str:  # its keys as the parser gave them
    return next((str(k) for k in volume if k != "name"), "")


def volume_at(
    pod_spec: Mapping[str, Any], container: Mapping[str, Any], base: FieldPath, path: str
) -> dict[str, Any]:
    """`{volume, kind, mountPath, readOnly, path}` of the mount holding the absolute `path`; `{}` when the
    path is on the container's filesystem. `base` is the container's field path."""
    target = normal(path)
    best: tuple[int, int, Mapping[str, Any]] | None = None
    for index, mount in enumerate(raw.items(container.get("volumeMounts"))):
        mount_path = raw.mapping(mount).get("mountPath")
        if not isinstance(mount_path, str) or not mount_path.startswith("/"):
            continue
        root = normal(mount_path)
        inside = target == root or target.startswith(root.rstrip("/") + "/")
        if inside and (best is None or len(root) > best[0]):
            best = (len(root), index, raw.mapping(mount))
    if best is None:
        return {}
    _, index, mount = best
    name = str(mount.get("name", ""))
    volumes = (raw.mapping(v) for v in raw.items(pod_spec.get("volumes")))
    volume = next((v for v in volumes if v.get("name") == name), {})
    return {
        "volume": name,
        "kind": _kind(volume) if volume else "",
        "mountPath": str(mount.get("mountPath")),
        "readOnly": mount.get("readOnly") is True,
        "path": render((*base, "volumeMounts", index)),
    }


def kept(found: Mapping[str, Any]) -> bool:
    """A writable volume that outlives the pod (a PVC, a CSI or network volume, a hostPath on the node).
    Checkpoints judge more strictly (facts/persistence.py): a hostPath stays behind when the pod moves."""
    kind = found.get("kind", "")
    return bool(kind) and kind not in POD_LIFETIME | READ_ONLY and not found.get("readOnly")
