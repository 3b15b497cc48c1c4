"""Where pod templates live in each supported kind (RULES.md §1): a table, not `if` chains."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubegap.fieldpath import FieldPath


@dataclass(frozen=True, slots=True)
class Container:
    name: str
    path: FieldPath  # absolute path of the container mapping inside the object
    spec: Mapping[str, Any]  # the container mapping (TrainJob: built from spec.trainer)


@dataclass(frozen=True, slots=True)
class PodTemplate:
    role: str
    path: FieldPath  # absolute path of the pod template ({metadata, spec}); () for a Pod
    replicas: int
    metadata: Mapping[str, Any]  # the template's metadata, {} when absent
    spec: Mapping[str, Any]  # the pod spec, {} when absent
    containers: tuple[Container, ...]  # spec.containers; init containers excluded
    pod_level: bool = True  # False for TrainJob's trainer: pod-level validations do not apply


@dataclass(frozen=True, slots=True)
class Workload:
    group: str  # API group, "" for the core group
    kind: str
    serving: bool  # apps/v1 kinds and LeaderWorkerSet: not training unless labelled so
    templates: tuple[PodTemplate, ...]


def workload_of(obj: Mapping[str, Any]) -> Workload | None:
    """The workload view of a supported object; None for unsupported kinds (and Nodes)."""
    raise NotImplementedError  # being written
