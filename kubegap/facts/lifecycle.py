"""How a kind bounds its run time and restarts failed runs (RULES.md §2 `checkpoint-interval`,
`restart-budget`): the readers each row of the kinds table (`kubegap.kinds`) names."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from kubegap import raw
from kubegap.fieldpath import FieldPath, render

# A replica's restartPolicy when unset: the training operator's *JobDefaultRestartPolicy constants
# (pkg/apis/kubeflow.org/v1/*_types.go): PyTorchJob OnFailure; TFJob, JAXJob and MPIJob Never. XGBoostJob
# and PaddleJob are not verified and count as Never, which never hides a missing restart.
_DEFAULT_RESTART_POLICY: Final = {"PyTorchJob": "OnFailure"}
# restart policies under which the training operator restarts a failed replica's pods (ExitCode: for
# retryable exit codes); core.PastBackoffLimit counts their restarts only when backoffLimit is set
RESTARTING: Final = frozenset({"OnFailure", "Always", "ExitCode"})


@dataclass(slots=True, unsafe_hash=True, init=False)
class Restart:
    enabled: bool
    detail: str  # what was read, for the message
    path: FieldPath  # the deciding field, or its parent when unset

    # written out, for mypyc to compile (kubegap.records)
    def __init__(self, enabled: bool, detail: str, path: FieldPath) -> None:
        self.enabled, self.detail, self.path = enabled, detail, path


@dataclass(slots=True, unsafe_hash=True)
class RestartReader:
    """How one kind restarts failed runs: `read` decides, `text` says how for docs/kinds.md."""

    read: Callable[[Mapping[str, Any]], Restart]
    text: str

    def __call__(self, obj: Mapping[str, Any]) -> Restart:
        return self.read(obj)


def _length(value: Any) -> int:
    return len(value) if isinstance(value, list) else 0  # a malformed list is a finding, not a crash


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def job(base: FieldPath) -> RestartReader:
    """batch/v1 Job: `backoffLimit` (default 6) or `backoffLimitPerIndex` at 0 or less turns retries off."""

    def read(obj: Mapping[str, Any]) -> Restart:
        for field in ("backoffLimit", "backoffLimitPerIndex"):
            value = _int(raw.dig(obj, (*base, field)))
            if value is not None and value <= 0:
                return Restart(False, f"{render((*base, field))} is {value}", (*base, field))
        return Restart(True, "backoffLimit allows retries", base)

    limits = " or ".join(f"`{render((*base, f))}`" for f in ("backoffLimit", "backoffLimitPerIndex"))
    return RestartReader(read, f"retries unless {limits} is 0 or less (default 6 retries)")


def positive(*fields: FieldPath, unset_ok: bool = False) -> RestartReader:
    """Restarts when the first of `fields` that is set is above 0 (or, `unset_ok`, when it is unset)."""

    def read(obj: Mapping[str, Any]) -> Restart:
        seen = []
        for field in fields:
            value = _int(raw.dig(obj, field))
            if value is None and unset_ok:
                return Restart(True, f"{render(field)} is unset (retries by default)", field[:-1])
            if value is not None and value > 0:
                return Restart(True, f"{render(field)} is {value}", field)
            seen.append(f"{render(field)} is {'unset' if value is None else value}")
        deciding = next((f for f in fields if raw.dig(obj, f) is not None), fields[0][:-1])
        return Restart(False, " and ".join(seen), deciding)

    named = " or ".join(f"`{render(f)}`" for f in fields)
    return RestartReader(read, f"{named} above 0" + (", or unset" if unset_ok else ""))


_BACKOFF: Final = ("spec", "runPolicy", "backoffLimit")
_MAX_RESTARTS: Final = ("spec", "elasticPolicy", "maxRestarts")


def kubeflow(kind: str, replica_specs: str) -> RestartReader:
    """training-operator: only replicas whose restartPolicy restarts them (OnFailure, Always, ExitCode)
    are restarted, and runPolicy.backoffLimit counts only their restarts (core.PastBackoffLimit: it returns
    false for nil and skips other replicas). A torchrun elastic agent (PyTorchJob elasticPolicy) restarts
    workers inside their pods whatever the pod's restartPolicy."""
    replicas_key = ("spec", replica_specs)
    # elasticPolicy exists on PyTorchJob only (training-operator v1 PyTorchJobSpec)
    set_limits = positive(_BACKOFF, _MAX_RESTARTS) if kind == "PyTorchJob" else positive(_BACKOFF)

    def read(obj: Mapping[str, Any]) -> Restart:
        elastic = _int(raw.dig(obj, _MAX_RESTARTS)) if kind == "PyTorchJob" else None
        if elastic is not None and elastic > 0:
            return Restart(True, f"spec.elasticPolicy.maxRestarts is {elastic}", _MAX_RESTARTS)
        replicas = raw.mapping(raw.dig(obj, replicas_key))
        for role, spec in replicas.items():
            written = raw.mapping(spec).get("restartPolicy")  # a malformed value reads as unset
            policy = written if isinstance(written, str) and written else default_restart_policy(kind)
            if policy not in RESTARTING:
                path = (*replicas_key, str(role), "restartPolicy")
                detail = f"replica {role} has restartPolicy {policy}, which the operator never restarts"
                return Restart(False, detail, path)
        if not replicas or raw.dig(obj, _BACKOFF) is not None:  # nothing runs, or the limit decides
            return set_limits(obj)
        detail = "runPolicy.backoffLimit is unset: the operator restarts failed pods without limit"
        return Restart(True, detail, _BACKOFF[:-1])

    elastic = ", or `spec.elasticPolicy.maxRestarts` above 0" if kind == "PyTorchJob" else ""
    text = (
        f"every replica's `restartPolicy` (unset: {default_restart_policy(kind)}) is OnFailure, Always or "
        f"ExitCode, within `spec.runPolicy.backoffLimit` (unset: no limit){elastic}"
    )
    return RestartReader(read, text)


def default_restart_policy(kind: str) -> str:
    return _DEFAULT_RESTART_POLICY.get(kind, "Never")


def _mpijob(obj: Mapping[str, Any]) -> Restart:
    """mpi-operator v2beta1 runs the launcher as a batch Job that takes runPolicy.backoffLimit (release
    v0.3.0): unset, the Job's own default of 6 retries applies. kubeflow.org/v1 MPIJobs are the training
    operator's and read like the other Kubeflow jobs."""
    if str(obj.get("apiVersion", "")).endswith("/v2beta1"):
        value = _int(raw.dig(obj, _BACKOFF))
        if value is not None and value <= 0:
            return Restart(False, f"spec.runPolicy.backoffLimit is {value}", _BACKOFF)
        detail = (
            f"spec.runPolicy.backoffLimit is {value}"
            if value
            else "the launcher Job retries 6 times by default"
        )
        return Restart(True, detail, _BACKOFF if value else _BACKOFF[:-1])
    return _MPI_V1(obj)


_MPI_V1 = kubeflow("MPIJob", "mpiReplicaSpecs")
MPIJOB = RestartReader(
    _mpijob,
    "v2beta1: the launcher Job retries unless `spec.runPolicy.backoffLimit` is 0 or less (default 6); "
    "v1: as the other Kubeflow jobs",
)


def _jobset(obj: Mapping[str, Any]) -> Restart:
    """JobSet restarts itself only with failurePolicy.maxRestarts; without it, each child Job still
    retries its own failed pods up to its backoffLimit (batch/v1 default 6)."""
    field = ("spec", "failurePolicy", "maxRestarts")
    restarts = _int(raw.dig(obj, field))
    if restarts is not None and restarts > 0:
        return Restart(True, f"spec.failurePolicy.maxRestarts is {restarts}", field)
    jobs = raw.items(raw.dig(obj, ("spec", "replicatedJobs")))
    if not jobs:  # nothing that runs, nothing that restarts
        return Restart(False, "no replicated job restarts", field if restarts is not None else field[:-1])
    for index, job in enumerate(jobs):
        limit = _int(raw.dig(job, ("template", "spec", "backoffLimit")))
        if limit is not None and limit <= 0:
            path = ("spec", "replicatedJobs", index, "template", "spec", "backoffLimit")
            unset = "unset" if restarts is None else str(restarts)
            return Restart(
                False, f"spec.failurePolicy.maxRestarts is {unset} and {render(path)} is {limit}", path
            )
    return Restart(True, "the child Jobs retry failed pods (backoffLimit unset or > 0)", ("spec",))


JOBSET = RestartReader(
    _jobset,
    "`spec.failurePolicy.maxRestarts` above 0; without it, unless a child Job's `backoffLimit` is 0 or less",
)


def deadline(paths: tuple[FieldPath, ...], obj: Mapping[str, Any]) -> float | None:
    """The longest `activeDeadlineSeconds` at `paths` (a `*` stands for every item of a list), in seconds;
    None when any of them is unset or not above 0, or there are none."""
    found = [p for path in paths for p in _expand(path, obj)]
    values = [_int(raw.dig(obj, p)) for p in found]
    if not values or any(v is None or v <= 0 for v in values):
        return None
    return float(max(v for v in values if v is not None))


def _expand(path: FieldPath, obj: Mapping[str, Any]) -> list[FieldPath]:
    if "*" not in path:
        return [path]
    star = path.index("*")
    items = _length(raw.dig(obj, path[:star]))
    return [p for i in range(items) for p in _expand((*path[:star], i, *path[star + 1 :]), obj)]
