"""The shapes of a workload (its pod templates and containers) and the readers that find the pod templates
in each kind (RULES.md §1); which kind uses which reader is a row of the kinds table, `kubegap.kinds`.

The readers never raise on malformed input, because a bad manifest must become a finding, not a crash:

- a value that is not a mapping where a mapping is expected counts as absent;
- a replica-like count that is not a non-negative int (`true` is not an int here) takes the default;
- a fixed template slot (a Job's `spec.template`, a RayCluster's head) always yields its template, empty
  when absent, except that a Ray kind without its cluster spec yields none;
- entries of replica maps and lists that are not mappings are skipped, but a skipped list item keeps its
  index, so the paths of the items after it stay right; replica-map keys that are not strings are
  skipped (JSON object keys are strings, so only hand-written YAML can produce them);
- a container entry that is not a mapping is skipped (its index still counts); a container's name is its
  `name` when that is a string, else "". Role names read from the object follow the same rule.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, Final

from kubegap import raw
from kubegap.fieldpath import FieldPath

if TYPE_CHECKING:
    from kubegap.facts.disruption import DisruptionReader
    from kubegap.facts.lifecycle import RestartReader


# Each record below is made several times per object: its constructor is written out (kubegap.records).
@dataclass(slots=True, unsafe_hash=True, init=False)
class Container:
    name: str
    path: FieldPath  # absolute path of the container mapping inside the object
    # dicts (`raw.mapping`), which compiled code reads without looking `get` up by name
    spec: dict[str, Any]  # the container mapping (TrainJob: built from spec.trainer)

    def __init__(self, name: str, path: FieldPath, spec: dict[str, Any]) -> None:
        self.name, self.path, self.spec = name, path, spec


@dataclass(slots=True, unsafe_hash=True, init=False)
class PodTemplate:
    role: str
    path: FieldPath  # absolute path of the pod template ({metadata, spec}); () for a Pod
    replicas: int
    metadata: dict[str, Any]  # the template's metadata, {} when absent (a dict, as Container's spec)
    spec: dict[str, Any]  # the pod spec, {} when absent
    containers: tuple[Container, ...]  # spec.containers; init containers excluded
    pod_level: bool  # False for TrainJob's trainer: pod-level validations do not apply

    def __init__(
        self,
        role: str,
        path: FieldPath,
        replicas: int,
        metadata: dict[str, Any],
        spec: dict[str, Any],
        containers: tuple[Container, ...],
        pod_level: bool = True,
    ) -> None:
        self.role, self.path, self.replicas, self.metadata = role, path, replicas, metadata
        self.spec, self.containers, self.pod_level = spec, containers, pod_level


@dataclass(slots=True, unsafe_hash=True, init=False)
class Workload:
    group: str  # API group, "" for the core group
    kind: str
    serving: bool  # apps/v1 kinds and LeaderWorkerSet: not training unless labelled so
    templates: tuple[PodTemplate, ...]
    restart: RestartReader | None  # how failed runs restart; None: the kind has no such setting
    deadline: tuple[FieldPath, ...]  # where its run-time bound is (`*`: every item of a list)
    disruptions: DisruptionReader | None  # whether disrupted pods spare the restart budget

    def __init__(
        self,
        group: str,
        kind: str,
        serving: bool,
        templates: tuple[PodTemplate, ...],
        restart: RestartReader | None = None,
        deadline: tuple[FieldPath, ...] = (),
        disruptions: DisruptionReader | None = None,
    ) -> None:
        self.group, self.kind, self.serving, self.templates = group, kind, serving, templates
        self.restart, self.deadline, self.disruptions = restart, deadline, disruptions


@dataclass(slots=True, unsafe_hash=True)
class KindInfo:
    """How to find a kind in a cluster: audit lists `plural` at the first of `versions` the server serves."""

    group: str  # "" for core
    kind: str
    plural: str  # resource name for the API, e.g. "pytorchjobs"
    namespaced: bool
    versions: tuple[str, ...]  # API versions verified against upstream types, preferred first


Extract = Callable[[Mapping[str, Any]], tuple[PodTemplate, ...]]


def _count(value: Any, default: int) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return default


def _name(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _entries(value: Any) -> list[tuple[int, dict[str, Any]]]:
    """(index, item) for the mapping items of a list; other items are skipped but keep their index. Each
    a dict (`raw.mapping`), which compiled code reads without looking `get` up by name."""
    if not isinstance(value, list):
        return []
    return [(index, raw.mapping(item)) for index, item in enumerate(value) if raw.is_mapping(item)]


def _template(role: str, path: FieldPath, replicas: int, template: Any) -> PodTemplate:
    found = raw.mapping(template)
    spec = raw.mapping(found.get("spec"))
    containers = tuple(
        Container(_name(item.get("name")), (*path, "spec", "containers", index), item)
        for index, item in _entries(spec.get("containers"))
    )
    return PodTemplate(role, path, replicas, raw.mapping(found.get("metadata")), spec, containers)


def pod(obj: Mapping[str, Any]) -> tuple[PodTemplate, ...]:
    return (_template("Pod", (), 1, obj),)


def single(
    role: str, path: FieldPath, replicas_path: FieldPath | None, obj: Mapping[str, Any]
) -> tuple[PodTemplate, ...]:
    replicas = 1 if replicas_path is None else _count(raw.dig(obj, replicas_path), 1)
    return (_template(role, path, replicas, raw.dig(obj, path)),)


def replica_map(field: str, obj: Mapping[str, Any]) -> tuple[PodTemplate, ...]:
    # The elastic autoscaler scales the Worker replica spec only (the CRDs' scale subresource points at
    # it), up to maxReplicas; counting that bound keeps GPU totals from understating what the job may
    # grow to. The operator matches replica types case-insensitively ("worker" becomes "Worker").
    max_replicas = _count(raw.dig(obj, ("spec", "elasticPolicy", "maxReplicas")), 0)
    templates = []
    for role, replica_spec in raw.mapping(raw.dig(obj, ("spec", field))).items():
        if not isinstance(role, str) or not isinstance(replica_spec, Mapping):
            continue
        replicas = _count(replica_spec.get("replicas"), 1)
        if role.casefold() == "worker":
            replicas = max(replicas, max_replicas)
        path = ("spec", field, role, "template")
        templates.append(_template(role, path, replicas, replica_spec.get("template")))
    return tuple(templates)


def replicated_jobs(base: FieldPath, obj: Mapping[str, Any]) -> tuple[PodTemplate, ...]:
    templates = []
    for index, job in _entries(raw.dig(obj, base)):
        job_spec = raw.mapping(raw.dig(job, ("template", "spec")))
        replicas = _count(job.get("replicas"), 1) * _count(job_spec.get("parallelism"), 1)
        path = (*base, index, "template", "spec", "template")
        templates.append(_template(_name(job.get("name")), path, replicas, job_spec.get("template")))
    return tuple(templates)


def volcano(obj: Mapping[str, Any]) -> tuple[PodTemplate, ...]:
    return tuple(
        _template(
            _name(task.get("name")),
            ("spec", "tasks", index, "template"),
            _count(task.get("replicas"), 1),
            task.get("template"),
        )
        for index, task in _entries(raw.dig(obj, ("spec", "tasks")))
    )


def ray(base: FieldPath, obj: Mapping[str, Any]) -> tuple[PodTemplate, ...]:
    if not isinstance(raw.dig(obj, base), Mapping):
        return ()  # a RayJob that runs on an existing cluster (clusterSelector) brings no pods of its own
    head_path = (*base, "headGroupSpec", "template")
    templates = [_template("head", head_path, 1, raw.dig(obj, head_path))]
    for index, group in _entries(raw.dig(obj, (*base, "workerGroupSpecs"))):
        replicas = _count(group.get("replicas"), _count(group.get("minReplicas"), 1))
        path = (*base, "workerGroupSpecs", index, "template")
        templates.append(_template(_name(group.get("groupName")), path, replicas, group.get("template")))
    return tuple(templates)


def leader_worker_set(obj: Mapping[str, Any]) -> tuple[PodTemplate, ...]:
    groups = _count(raw.dig(obj, ("spec", "replicas")), 1)
    size = _count(raw.dig(obj, ("spec", "leaderWorkerTemplate", "size")), 1)
    base = ("spec", "leaderWorkerTemplate")
    leader = raw.dig(obj, (*base, "leaderTemplate"))
    templates = []
    # Without a leaderTemplate the leader pod is made from the workerTemplate, so all `size` pods are workers.
    workers_per_group = size
    if isinstance(leader, Mapping):
        templates.append(_template("leader", (*base, "leaderTemplate"), groups, leader))
        workers_per_group = max(size - 1, 0)
    worker_path = (*base, "workerTemplate")
    templates.append(_template("worker", worker_path, groups * workers_per_group, raw.dig(obj, worker_path)))
    return tuple(templates)


_TRAINER_FIELDS: Final = (
    ("image", "image"),
    ("command", "command"),
    ("args", "args"),
    ("env", "env"),
    ("resourcesPerNode", "resources"),
)


def train_job(obj: Mapping[str, Any]) -> tuple[PodTemplate, ...]:
    # A TrainJob has no pod template: the runtime supplies it. spec.trainer overrides the trainer
    # container, so it is read as that container; pod-level validations belong to the runtime objects.
    path = ("spec", "trainer")
    trainer = raw.dig(obj, path)
    containers: tuple[Container, ...] = ()
    if isinstance(trainer, Mapping):
        spec = {ours: trainer[theirs] for theirs, ours in _TRAINER_FIELDS if theirs in trainer}
        containers = (Container("trainer", path, spec),)
    replicas = _count(raw.dig(obj, (*path, "numNodes")), 1)
    return (
        PodTemplate(
            "trainer", path, replicas, raw.mapping(None), raw.mapping(None), containers, pod_level=False
        ),
    )


def spec_template(role: str, replicas_path: FieldPath | None) -> Extract:
    return partial(single, role, ("spec", "template"), replicas_path)


# Kubeflow kind -> the map of its replica specs (training-operator v1 types; MPIJob also mpi-operator v2beta1)
KUBEFLOW_REPLICA_SPECS: Final[Mapping[str, str]] = {
    "PyTorchJob": "pytorchReplicaSpecs",
    "TFJob": "tfReplicaSpecs",
    "XGBoostJob": "xgbReplicaSpecs",
    "PaddleJob": "paddleReplicaSpecs",
    "JAXJob": "jaxReplicaSpecs",
    "MPIJob": "mpiReplicaSpecs",
}
